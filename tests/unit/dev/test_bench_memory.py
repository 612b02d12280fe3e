"""The memory benchmark's own parts: what it creates (paused objects of the informer-held kinds,
uniquely named) and how it reads a process's memory from ``/proc``."""

from __future__ import annotations

import os

from aim_dev.bench.memory import KINDS, memory, objects
from aimcore.api.bus.mirror import PAUSE_ANNOTATION


def test_objects_are_paused_unique_and_spread_over_the_kinds() -> None:
    made = list(objects(10))
    assert len({body["metadata"]["name"] for _, body in made}) == 10
    assert all(body["metadata"]["annotations"] == {PAUSE_ANNOTATION: "true"} for _, body in made)
    assert [ref.kind for ref, _ in made[: len(KINDS)]] == [ref.kind for ref, _ in KINDS]
    counts = {ref.kind: sum(1 for r, _ in made if r.kind == ref.kind) for ref, _ in KINDS}
    assert max(counts.values()) - min(counts.values()) <= 1
    assert all(body["kind"] == ref.kind and body["apiVersion"] == ref.api_version for ref, body in made)


def test_memory_reads_this_process() -> None:
    before, _ = memory(os.getpid())
    ballast = bytearray(64 * 2**20)  # touched: resident
    ballast[::4096] = b"x" * len(range(0, len(ballast), 4096))
    rss, peak = memory(os.getpid())
    assert rss >= before + 60 * 2**20
    assert peak >= rss > 0
    del ballast
