"""The client ``huggingface_hub`` talks through under the outbound policy
(``aim_cache_jobs.downloader.hubclient``) keeps what the library's own client does to every request:
refused in offline mode, a request id on each."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from huggingface_hub import constants, get_session
from huggingface_hub.errors import OfflineModeIsEnabled

from aim_cache_jobs.downloader.hubclient import guarded
from tests.helpers import LOOPBACK


@pytest.fixture
def one_answer() -> Iterator[tuple[str, list[bytes]]]:
    """A URL whose server answers one request (``{}``) and keeps the request's head."""
    listener = socket.create_server(("127.0.0.1", 0))
    heads: list[bytes] = []

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head and (chunk := conn.recv(4096)):
                head += chunk
            heads.append(head)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/api/models/org/model", heads
    finally:
        listener.close()
        thread.join(timeout=5)


def test_requests_carry_a_request_id_and_offline_mode_refuses_them(
    one_answer: tuple[str, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, heads = one_answer
    with guarded(LOOPBACK):
        assert get_session().get(url).json() == {}
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        with pytest.raises(OfflineModeIsEnabled):
            get_session().get(url)
    assert len(heads) == 1 and b"\r\nx-amzn-trace-id: " in heads[0].lower()
