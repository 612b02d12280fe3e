"""``read_remote`` against a real local HTTP server (``http.server`` in a thread, HTTP/1.1 keep-alive):
with Range support and ETags it fetches about one block however big the file is; without ranges it
streams and hangs up once the header is parsed; it sends credentials only to the origin it was
given, follows redirects, and turns 401/404/timeouts/changed files into ``GGUFError``."""

from __future__ import annotations

import queue
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from aim_cache_jobs.gguf import GGUFError, read_local, read_remote, status_fields
from tests.helpers import LOOPBACK
from tests.unit.llmkube.test_gguf_reader import EXPECTED_STATUS, write_gguf

BIG_TENSOR = 8 << 20
CHUNK = 64 << 10
TOKEN = "s3cret-token-value"


@dataclass
class Site:
    data: bytes = b""
    tail: int = 0  # virtual zero bytes served after ``data``
    ranges: bool = True
    token: str | None = None
    etag: str = '"v1"'
    etag_after_first: str | None = None  # simulate an upload replacing the file mid-read
    redirects: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None  # each request waits for it (30 s at most) before an answer
    answered: int = 0  # requests whose answer has begun
    # how each body ended: "sent" whole, or "cut" (the client hung up)
    ends: queue.Queue[str] = field(default_factory=queue.Queue)
    bytes_sent: int = 0
    requests: list[dict[str, str]] = field(default_factory=list)
    peers: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def size(self) -> int:
        return len(self.data) + self.tail

    def piece(self, start: int, end: int) -> bytes:
        head = self.data[start:end]
        return head + b"\0" * (end - start - len(head))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _empty(self, status: int, headers: dict[str, str] | None = None) -> None:
        body = f"status {status}\n".encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        site = self.server.site
        with site.lock:
            site.requests.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            site.peers.add(self.client_address[1])
            first = len(site.requests) == 1
        if site.hold is not None:
            site.hold.wait(30)
        with site.lock:
            site.answered += 1
        if self.path in site.redirects:
            return self._empty(302, {"Location": site.redirects[self.path]})
        if site.token is not None and self.headers.get("Authorization") != f"Bearer {site.token}":
            return self._empty(401)
        if self.path.split("?")[0] != "/model.gguf":
            return self._empty(404)
        etag = site.etag if first or site.etag_after_first is None else site.etag_after_first
        start, end, status = 0, site.size, 200
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if site.ranges and match:
            start = int(match.group(1))
            if start >= site.size:
                return self._empty(416, {"Content-Range": f"bytes */{site.size}"})
            end = min(int(match.group(2)) + 1 if match.group(2) else site.size, site.size)
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", etag)
        if site.ranges:
            self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{site.size}")
        self.end_headers()
        try:
            for at in range(start, end, CHUNK):
                chunk = site.piece(at, min(at + CHUNK, end))
                self.wfile.write(chunk)
                with site.lock:
                    site.bytes_sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            site.ends.put("cut")
        else:
            site.ends.put("sent")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: Site) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.site = site

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up mid-body (the no-range stream, on purpose) are not test failures.
        if not isinstance(sys.exception(), ConnectionError):
            super().handle_error(request, client_address)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = write_gguf(tmp_path_factory.mktemp("gguf") / "big.gguf", big_tensor_bytes=BIG_TENSOR)
    assert status_fields(read_local(path)) == EXPECTED_STATUS
    return Path(path).read_bytes()


Serve = Callable[..., tuple["Server", Site]]


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[Server] = []

    def start(**kwargs: Any) -> tuple[Server, Site]:
        site = Site(**kwargs)
        server = Server(site)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server, site

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_ranges_fetch_about_one_block(model: bytes, serve: Serve) -> None:
    server, site = serve(data=model)
    assert len(model) > BIG_TENSOR
    header = read_remote(f"{server.base}/model.gguf", policy=LOOPBACK)
    assert status_fields(header) == EXPECTED_STATUS
    assert site.bytes_sent <= 1 << 20
    assert site.bytes_sent * 8 < len(model)
    assert len(site.requests) == 1
    assert site.requests[0]["range"] == f"bytes=0-{(1 << 20) - 1}"


def test_small_blocks_reuse_one_connection(model: bytes, serve: Serve) -> None:
    server, site = serve(data=model)
    header = read_remote(f"{server.base}/model.gguf", block=8192, policy=LOOPBACK)
    assert status_fields(header) == EXPECTED_STATUS
    assert len(site.requests) > 5  # the tokenizer arrays span many 8 KiB blocks
    assert all(r["range"].startswith("bytes=") for r in site.requests)
    assert len(site.peers) == 1  # keep-alive
    assert site.bytes_sent <= len(site.requests) * 8192
    assert site.bytes_sent < 256 << 10


def test_without_ranges_the_stream_is_cut_short(model: bytes, serve: Serve) -> None:
    server, site = serve(data=model, tail=1 << 30, ranges=False)
    header = read_remote(f"{server.base}/model.gguf", timeout=20, policy=LOOPBACK)
    assert status_fields(header) == EXPECTED_STATUS
    assert len(site.requests) == 1
    # The reader hung up once it had the header: the server's write failed, and whatever the socket
    # buffers absorbed by then, nowhere near the 1 GiB body went out.
    assert site.ends.get(timeout=30) == "cut"
    assert site.bytes_sent < 128 << 20


def test_not_found(serve: Serve) -> None:
    server, _ = serve(data=b"")
    with pytest.raises(GGUFError, match="404") as info:
        read_remote(f"{server.base}/missing.gguf?sig=abc", policy=LOOPBACK)
    assert info.value.status == 404
    assert "sig=abc" not in str(info.value)


def test_authorization(model: bytes, serve: Serve) -> None:
    server, site = serve(data=model, token=TOKEN)
    url = f"{server.base}/model.gguf"
    with pytest.raises(GGUFError, match="401") as info:
        read_remote(url, policy=LOOPBACK)
    assert info.value.status == 401
    with pytest.raises(GGUFError, match="401") as info:
        read_remote(url, headers={"Authorization": "Bearer wrong-token-value"}, policy=LOOPBACK)
    assert "wrong-token-value" not in str(info.value)
    header = read_remote(url, headers={"Authorization": f"Bearer {TOKEN}"}, policy=LOOPBACK)
    assert status_fields(header) == EXPECTED_STATUS
    assert site.requests[-1]["authorization"] == f"Bearer {TOKEN}"


def test_same_origin_redirect_keeps_credentials(model: bytes, serve: Serve) -> None:
    server, site = serve(data=model, token=TOKEN, redirects={"/resolve/main/m.gguf": "/model.gguf"})
    header = read_remote(
        f"{server.base}/resolve/main/m.gguf",
        headers={"Authorization": f"Bearer {TOKEN}"},
        block=8192,
        policy=LOOPBACK,
    )
    assert status_fields(header) == EXPECTED_STATUS
    assert [r["path"] for r in site.requests[:2]] == ["/resolve/main/m.gguf", "/model.gguf"]
    # Later blocks go straight to the resolved URL.
    assert all(r["path"] == "/model.gguf" for r in site.requests[1:])
    assert len(site.requests) > 3


def test_cross_origin_redirect_drops_credentials(model: bytes, serve: Serve) -> None:
    cdn, cdn_site = serve(data=model)
    hub, hub_site = serve(
        token=TOKEN, redirects={"/org/repo/resolve/main/m.gguf": f"{cdn.base}/model.gguf?X-Sig=abc"}
    )
    header = read_remote(
        f"{hub.base}/org/repo/resolve/main/m.gguf",
        headers={"Authorization": f"Bearer {TOKEN}", "X-Trace": "t1"},
        block=8192,
        policy=LOOPBACK,
    )
    assert status_fields(header) == EXPECTED_STATUS
    assert hub_site.requests[0]["authorization"] == f"Bearer {TOKEN}"
    assert len(hub_site.requests) == 1
    assert len(cdn_site.requests) > 1
    assert all("authorization" not in r for r in cdn_site.requests)
    assert all(r["x-trace"] == "t1" for r in cdn_site.requests)


def test_redirect_loop(serve: Serve) -> None:
    server, _ = serve(redirects={"/a": "/b", "/b": "/a"})
    with pytest.raises(GGUFError, match="redirects"):
        read_remote(f"{server.base}/a", policy=LOOPBACK)


def test_file_replaced_mid_read(model: bytes, serve: Serve) -> None:
    server, _ = serve(data=model, etag_after_first='"v2"')
    with pytest.raises(GGUFError, match="changed"):
        read_remote(f"{server.base}/model.gguf", block=8192, policy=LOOPBACK)


def test_not_gguf_and_empty(serve: Serve) -> None:
    server, _ = serve(data=b"<html>hello</html>")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_remote(f"{server.base}/model.gguf", policy=LOOPBACK)
    empty, _ = serve(data=b"")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_remote(f"{empty.base}/model.gguf", policy=LOOPBACK)


def test_truncated_remote(model: bytes, serve: Serve) -> None:
    server, _ = serve(data=model[:20_000])
    with pytest.raises(GGUFError, match="truncated"):
        read_remote(f"{server.base}/model.gguf", block=4096, policy=LOOPBACK)


def test_timeout(model: bytes, serve: Serve) -> None:
    answer = threading.Event()
    server, site = serve(data=model, hold=answer)
    try:
        with pytest.raises(GGUFError, match=r"(?i)time"):
            read_remote(f"{server.base}/model.gguf", timeout=0.5, policy=LOOPBACK)
        # the read gave up on its own timeout: the server had not begun to answer
        assert (len(site.requests), site.answered) == (1, 0)
    finally:
        answer.set()
