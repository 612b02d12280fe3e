"""docs/backbone.md's streams and buckets table is what the watcher declares: generated from
aimcore.api.bus.topology, and stale the moment a stream or bucket changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimcore.api.bus import topology
from aimctl import topologydoc

REPO = Path(__file__).resolve().parents[3]


def test_the_committed_table_matches_the_code() -> None:
    assert not topologydoc.stale(REPO / topologydoc.PAGE), "run `aimctl bus topology`"


def test_every_stream_and_bucket_has_its_row() -> None:
    page = (REPO / topologydoc.PAGE).read_text()
    for name in [s.name for s in topology.stream_configs()] + [kv.bucket for kv in topology.bucket_configs()]:
        assert f"| `{name}` |" in page, name


def test_a_changed_bucket_makes_the_table_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "backbone.md"
    page.write_text(f"# x\n\n{topologydoc.BEGIN}\n{topologydoc.END}\n")
    topologydoc.write(page)
    assert not topologydoc.stale(page)
    monkeypatch.setattr(topology, "LEASE_TTL", 30.0)  # the leases' TTL changed in the code
    assert topologydoc.stale(page)
    assert "a key expires 30 s after its last write" in topologydoc.render(page.read_text())


def test_a_page_without_the_markers_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "backbone.md"
    page.write_text("# no table here\n")
    with pytest.raises(ValueError, match="markers"):
        topologydoc.write(page)
