"""The downloader's write path (``O_DIRECT`` or the page cache): the choice a probe's figures call
for, the probe itself on a real filesystem (it leaves nothing behind), the per-filesystem verdict
cache, and the page-cache path's write-behind (only bytes the hash is done with are dropped)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aim_cache_jobs.downloader import disk, writepath
from aim_cache_jobs.downloader.filejob import PlannedFile, new_hasher
from aim_cache_jobs.downloader.listing import RemoteFile
from aim_cache_jobs.downloader.ranges import RangeSet
from aim_cache_jobs.downloader.transfer import Transfer
from aim_cache_jobs.downloader.writepath import ProbeResult, choose

MIB = 1 << 20


@pytest.fixture(autouse=True)
def fresh_verdicts() -> Iterator[None]:
    writepath._verdicts.clear()
    writepath._last.clear()
    yield
    writepath._verdicts.clear()
    writepath._last.clear()


@pytest.mark.parametrize(
    ("direct_s", "buffered_s", "path"),
    [
        (0.010, 0.020, "direct"),  # direct faster
        (0.020, 0.010, "buffered"),  # page cache clearly faster
        (0.0105, 0.010, "direct"),  # within the margin: direct saves CPU and memory
        (0.020, 0.0185, "direct"),
        (0.012, 0.010, "direct"),  # 1.2x: within a busy machine's noise
        (None, 0.010, "buffered"),  # no O_DIRECT on this filesystem
        (0.010, None, "direct"),
        (None, None, "direct"),  # could not write at all: direct where it works, not remembered
    ],
)
def test_choice_follows_the_probe(direct_s: float | None, buffered_s: float | None, path: str) -> None:
    choice = choose(ProbeResult(16 * MIB, direct_s, buffered_s))
    assert choice.path == path
    described = choice.describe()
    assert described["write_path"] == path
    assert described["probe_direct_bytes_per_s"] == (round(16 * MIB / direct_s) if direct_s else None)


def test_probe_measures_both_ways_and_leaves_nothing(tmp_path: Path) -> None:
    result = writepath.probe(tmp_path, size=2 * MIB, rounds=2)
    assert result.size == 2 * MIB
    assert result.buffered_s is not None and result.buffered_s > 0
    (tmp_path / "x").write_bytes(b"")
    fd = disk.open_direct(tmp_path / "x")
    if fd is not None:  # the filesystem has O_DIRECT
        os.close(fd)
        assert result.direct_s is not None and result.direct_s > 0
    assert list(tmp_path.iterdir()) == [tmp_path / "x"]


def test_verdict_is_measured_once_per_filesystem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probes: list[Path] = []

    def probe(directory: Path) -> ProbeResult:
        probes.append(directory)
        return ProbeResult(MIB, 0.02, 0.01)

    monkeypatch.setattr(writepath, "probe", probe)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert writepath.resolve(tmp_path / "a").path == "buffered"
    assert writepath.resolve(tmp_path / "b").path == "buffered"  # same filesystem: not probed again
    assert probes == [tmp_path / "a"]
    assert writepath.chosen(tmp_path / "b") == writepath.resolve(tmp_path / "a")
    # a path asked for is used as it is, and reported
    assert writepath.resolve(tmp_path / "a", "direct").path == "direct"
    assert writepath.chosen(tmp_path / "a") == writepath.Choice("direct", "requested")
    assert probes == [tmp_path / "a"]


def test_warm_measures_the_filesystem_dest_will_be_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes: list[Path] = []

    def probe(directory: Path) -> ProbeResult:
        probes.append(directory)
        return ProbeResult(MIB, 0.02, 0.01) if len(probes) > 1 else ProbeResult(MIB, None, None)

    monkeypatch.setattr(writepath, "probe", probe)
    writepath.warm(tmp_path / "not" / "yet")
    assert probes == [tmp_path]
    # nothing could be written: no verdict kept, the next download measures again
    assert writepath.resolve(tmp_path).path == "buffered"
    assert probes == [tmp_path, tmp_path]
    writepath.warm(tmp_path / "other")
    assert len(probes) == 2


def test_small_downloads_are_not_probed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def probe(directory: Path) -> ProbeResult:
        raise AssertionError("probed")

    monkeypatch.setattr(writepath, "probe", probe)
    choice = writepath.resolve(tmp_path, small=True)
    assert choice.path == "direct" and choice.probe is None


def _prepared(tmp_path: Path, size: int) -> Transfer:
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(size))
    remote = RemoteFile("model.bin", size, f"file://{src}", digests=())
    dest = tmp_path / "dest"
    dest.mkdir()
    engine = Transfer([PlannedFile(remote, dest / "model.bin", dest)], direct_io=False)
    engine.prepare()
    return engine


def test_page_cache_path_drops_only_what_the_hash_is_done_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk, "DROP_BEHIND", MIB)
    dropped: list[tuple[int, int]] = []
    monkeypatch.setattr(disk, "wait_and_drop", lambda fd, start, end: dropped.append((start, end)))
    engine = _prepared(tmp_path, 8 * MIB)
    try:
        assert engine.write_path == writepath.Choice("buffered", "requested")
        job = engine._jobs[0]
        job.hashers = {"sha256": new_hasher("sha256", 8 * MIB)}
        job.done = RangeSet([(0, 6 * MIB)])
        job.hashed = int(2.5 * MIB)  # the hash is behind the written prefix
        engine.durability.write_back(job)
        assert dropped == [(0, MIB)]  # one window behind the hash position, in whole steps
        job.hashed = 6 * MIB
        job.done = RangeSet([(0, 7 * MIB)])
        engine.durability.write_back(job)
        assert dropped == [(0, MIB), (MIB, 5 * MIB)]
        job.direct_fd = 99  # a direct-path file: its bytes never were in the cache
        job.done = RangeSet([(0, 8 * MIB)])
        job.hashed = 8 * MIB
        engine.durability.write_back(job)
        assert dropped == [(0, MIB), (MIB, 5 * MIB)]
        job.direct_fd = None
    finally:
        engine.close()


def test_dropped_ranges_keep_their_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f"
    data = os.urandom(4 * MIB)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, data, 0)
        disk.wait_and_drop(fd, 0, 3 * MIB)
        assert os.pread(fd, 4 * MIB, 0) == data
    finally:
        os.close(fd)
