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


def _held_below_the_ephemeral_range() -> socket.socket:
    """A listening socket on a port below the ephemeral range whose next port is free too: ports
    there are taken only by an explicit bind (a port in the range may be any client connection's
    local end on a busy machine, which made this test pick its window badly)."""
    for port in range(processes._LOWEST_PORT, processes._ephemeral_low() - 1):
        held = socket.socket()
        try:
            held.bind(("127.0.0.1", port))
            with socket.socket() as neighbour:
                neighbour.bind(("127.0.0.1", port + 1))
        except OSError:
            held.close()
            continue
        held.listen()
        return held
    raise AssertionError("no two free ports below the ephemeral range")


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with _held_below_the_ephemeral_range() as held:
        taken = held.getsockname()[1]
        # a window of two ports below a pretend ephemeral range, one of them held
        monkeypatch.setattr(processes, "_LOWEST_PORT", taken)
        monkeypatch.setattr(processes, "_ephemeral_low", lambda: taken + 2)
        assert {processes.free_port() for _ in range(20)} == {taken + 1}
