"""The downloads this process runs itself, in one registry: a model cache's download by the local
executor (:mod:`aim_cache.local`, keyed by the cache's uid) and an LLMKube Model's fetch
(:mod:`aim_cache.llmkube.runs`, keyed by its cache key).

A :class:`Run` is one attempt, and the level-triggered reconciles read it as they read a Job: is it
waiting for a slot, running (with its progress summary), or finished with a manifest or an error,
and when. :class:`Runs` keeps one run per key, lets a bounded number work at once (the others wait
for a slot), turns whatever a run's work raises into its error (an unexpected exception too: a
clear failure, never a dead task), and calls back when a run has ended so the reconcile looks at
the outcome at once. Runs are per process: a restarted service starts none again by itself (the
reconcile does, and the downloader resumes from its partial files).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aim_cache.download_metrics import DownloadMeter
from aim_cache_jobs.downloader import DOWNLOAD_FAILED, DownloadError, Manifest, Progress, RateMeter, summary
from aim_cache_jobs.downloader.downloadstate import Attempt

log = logging.getLogger(__name__)


@dataclass
class Run:
    """One attempt at filling one destination in this process."""

    key: str
    spec_hash: str
    attempt: int
    kind: Literal["download", "copy"] = "download"
    task: asyncio.Task[None] | None = None
    waiting: bool = True  # for a slot
    manifest: Manifest | None = None
    error: DownloadError | None = None
    finished_at: float | None = None  # wall clock
    summary: str = ""
    gguf: dict[str, Any] | None = None  # an LLMKube Model's header, read while it downloads
    meter: RateMeter = field(default_factory=RateMeter)
    protocol: Attempt | None = None  # the protocol attempt under way, or the one that ended it

    @property
    def running(self) -> bool:
        return self.finished_at is None

    def progressed(self, progress: Progress, downloads: DownloadMeter) -> float:
        """Take up a progress callback: the rate, the byte counter and the summary; returns the
        monotonic time it was taken at."""
        now = time.monotonic()
        self.meter.add(now, progress.downloaded_bytes)
        downloads.observe(self.key, progress.downloaded_bytes)
        self.summary = summary(progress, self.meter, now=now)
        return now


Work = Callable[[Run], Awaitable[None]]
Ended = Callable[[Run], Awaitable[None]]


async def _nothing(run: Run) -> None:
    return None


class Runs:
    """One :class:`Run` per key, at most ``concurrency`` working at once. ``what`` names the runs in
    logs and in the error of one that crashed (``"<what> error: ..."``)."""

    def __init__(self, *, concurrency: int, what: str) -> None:
        self.slots = asyncio.Semaphore(concurrency)
        self.what = what
        self.runs: dict[str, Run] = {}

    def get(self, key: str) -> Run | None:
        return self.runs.get(key)

    def start(self, run: Run, work: Work, ended: Ended = _nothing, *, label: str) -> Run:
        """Start ``work(run)`` once a slot is free (a run under the same key is replaced, the
        caller cancels or refuses one still running first); ``ended(run)`` is awaited once the run
        has finished. ``label`` names the run in logs."""
        self.runs[run.key] = run
        run.task = asyncio.create_task(self._run(run, work, ended, label), name=f"{self.what}-{run.key}")
        return run

    def forget(self, key: str) -> None:
        """Drop the run of ``key``, cancelling it if it still runs."""
        run = self.runs.pop(key, None)
        if run is not None and run.task is not None and not run.task.done():
            run.task.cancel()

    async def close(self) -> None:
        tasks = [r.task for r in self.runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, run: Run, work: Work, ended: Ended, label: str) -> None:
        try:
            async with self.slots:
                run.waiting = False
                await work(run)
        except DownloadError as exc:
            run.error = exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug or an unexpected library error: a clear failure, not a dead task
            log.exception("%s crashed", label)
            run.error = DownloadError(DOWNLOAD_FAILED, f"{self.what} error: {type(exc).__name__}: {exc}")
        finally:
            run.finished_at = time.time()
        if run.error is not None:
            log.warning("%s failed: %s: %s", label, run.error.reason, run.error.message)
        try:
            await ended(run)
        except Exception:  # the periodic resync will look at it
            log.exception("could not requeue what waits for %s", label)
