"""The ports test servers are given are never ones the kernel could hand to a client connection."""

from __future__ import annotations

import socket

import pytest

from aim_dev.local import processes


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    low = processes._ephemeral_low()
    for _ in range(20):
        port = processes.free_port()
        assert processes._LOWEST_PORT <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free when handed out


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        held.listen()
        # a window of two ports below a pretend ephemeral range, one of them held
        monkeypatch.setattr(processes, "_LOWEST_PORT", taken)
        monkeypatch.setattr(processes, "_ephemeral_low", lambda: taken + 2)
        assert {processes.free_port() for _ in range(20)} == {taken + 1}
