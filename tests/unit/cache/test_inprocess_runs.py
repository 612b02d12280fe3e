"""The one registry of the downloads the cache service runs itself (``aim_cache.inprocess``): a
bounded number work at once, whatever the work raises becomes the run's error, and whoever waits is
told once the run has finished."""

from __future__ import annotations

import asyncio

from aim_cache.inprocess import Run, Runs
from aim_cache_jobs.downloader import DownloadError


async def test_runs_wait_for_a_slot_and_end_with_their_outcome() -> None:
    runs = Runs(concurrency=1, what="fetch")
    release = asyncio.Event()
    ended: list[tuple[str, bool, str | None]] = []

    async def hold(run: Run) -> None:
        await release.wait()

    async def fail(run: Run) -> None:
        raise DownloadError("SourceNotFound", "no such file")

    async def crash(run: Run) -> None:
        raise KeyError("bug")

    async def told(run: Run) -> None:
        ended.append((run.key, run.running, run.error.reason if run.error else None))

    first = runs.start(Run("a", "h", 1), hold, told, label="fetch a")
    second = runs.start(Run("b", "h", 1), fail, told, label="fetch b")
    third = runs.start(Run("c", "h", 2), crash, told, label="fetch c")
    await asyncio.sleep(0)
    assert (first.waiting, second.waiting, third.waiting) == (False, True, True)
    assert runs.get("b") is second and first.running
    release.set()
    await asyncio.gather(*(r.task for r in (first, second, third) if r.task is not None))
    assert ended == [("a", False, None), ("b", False, "SourceNotFound"), ("c", False, "DownloadFailed")]
    assert third.error is not None and third.error.message == "fetch error: KeyError: 'bug'"
    assert first.finished_at is not None and first.error is None


async def test_a_forgotten_run_is_cancelled_and_gone() -> None:
    runs = Runs(concurrency=2, what="downloader")
    run = runs.start(Run("uid", "h", 1), lambda run: asyncio.Event().wait(), label="download")
    await asyncio.sleep(0)
    runs.forget("uid")
    assert runs.get("uid") is None
    assert run.task is not None
    await asyncio.gather(run.task, return_exceptions=True)
    assert run.task.cancelled()
