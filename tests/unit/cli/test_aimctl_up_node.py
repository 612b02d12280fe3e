"""``aimctl up --node`` refuses to start without root, with a message that says why and what to do."""

from __future__ import annotations

import pytest

from aimctl import main


def test_up_node_needs_root(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main.main(["up", "--node"]) == 2
    out = capsys.readouterr().out
    assert "aimctl up --node needs root" in out
    assert "leave out --node" in out
