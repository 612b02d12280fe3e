"""The local executor: with no kubelet (the embedded default, DESIGN §7) the cache service runs the
same downloader itself, into a local cache directory, instead of a download Job.

It mirrors what a Job gives the Job path: a record per model cache (attempt, outcome, finish time)
that the level-triggered reconcile reads, progress published to NATS exactly as the pod publishes
it (the status service coalesces), and a requeue when a run ends so the reconcile looks at the
outcome at once. A completed download is recognised by the downloader's manifest on disk, so a
restarted service does not download again; an interrupted one resumes from its partial files.

Runs are per process: the executor is meant for a single cache replica (the embedded stack). A
bounded number of downloads run at once; the others wait for a slot (``WaitingForDownloadSlot``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_cache.download_metrics import DownloadMeter
from aim_cache_jobs.downloader import (
    DOWNLOAD_FAILED,
    DownloadError,
    Manifest,
    Progress,
    RateMeter,
    download,
    progress_report,
    summary,
)
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.domain.outbound import STRICT, OutboundPolicy

log = logging.getLogger(__name__)
DOWNLOADS = DownloadMeter("local")

Publish = Callable[[StatusReport], Coroutine[Any, Any, None]]
Wake = Callable[[KindRef, Obj], Awaitable[None]]

PROGRESS_INTERVAL = 2.0


@dataclass
class LocalRun:
    """One attempt at downloading one model cache in this process."""

    uid: str
    attempt: int
    spec_hash: str
    task: asyncio.Task[None] | None = None
    waiting: bool = True  # for a download slot
    manifest: Manifest | None = None
    error: DownloadError | None = None
    finished_at: float | None = None  # wall clock
    summary: str = ""
    meter: RateMeter = field(default_factory=RateMeter)

    @property
    def running(self) -> bool:
        return self.finished_at is None


class LocalExecutor:
    def __init__(
        self,
        root: Path,
        publish: Publish,
        wake: Wake,
        *,
        stall_timeout: float = 60.0,
        concurrency: int = 2,
        outbound: OutboundPolicy = STRICT,
    ) -> None:
        self.root = root
        self.outbound = outbound
        self.publish = publish
        self.wake = wake
        self.stall_timeout = stall_timeout
        self.slots = asyncio.Semaphore(concurrency)
        self.runs: dict[str, LocalRun] = {}

    def dest(self, cache: Mapping[str, Any]) -> Path:
        meta = cache["metadata"]
        return self.root / str(meta["namespace"]) / str(meta["name"])

    def run_of(self, uid: str) -> LocalRun | None:
        return self.runs.get(uid)

    def forget(self, uid: str) -> None:
        run = self.runs.pop(uid, None)
        if run is not None and run.task is not None and not run.task.done():
            run.task.cancel()

    def start(
        self, ref: KindRef, cache: Obj, env: Mapping[str, str], *, attempt: int, spec_hash: str
    ) -> LocalRun:
        uid = str(cache["metadata"]["uid"])
        self.forget(uid)
        run = LocalRun(uid=uid, attempt=attempt, spec_hash=spec_hash)
        self.runs[uid] = run
        run.task = asyncio.create_task(self._run(ref, cache, dict(env), run), name=f"download-{uid}")
        return run

    async def close(self) -> None:
        tasks = [r.task for r in self.runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, ref: KindRef, cache: Obj, env: dict[str, str], run: LocalRun) -> None:
        meta = cache["metadata"]
        target = ObjectRef.of(ref, meta.get("namespace"), meta["name"])
        source = str(cache["spec"]["sourceUri"])
        last_sent = 0.0
        pending: set[asyncio.Task[None]] = set()

        def on_progress(progress: Progress) -> None:
            nonlocal last_sent
            now = time.monotonic()
            run.meter.add(now, progress.downloaded_bytes)
            DOWNLOADS.observe(run.uid, progress.downloaded_bytes)
            run.summary = summary(progress, run.meter, now=now)
            if progress.phase != "done" and now - last_sent < PROGRESS_INTERVAL:
                return
            last_sent = now
            report = progress_report(target, run.uid, progress, run.meter, now=now)
            task: asyncio.Task[None] = asyncio.create_task(self.publish(report))
            pending.add(task)
            task.add_done_callback(pending.discard)

        try:
            async with self.slots:
                run.waiting = False
                run.manifest = await download(
                    source,
                    self.dest(cache),
                    env=env,
                    on_progress=on_progress,
                    stall_timeout=self.stall_timeout,
                    policy=self.outbound,
                )
        except DownloadError as exc:
            run.error = exc
            log.warning(
                "download of %s/%s failed: %s: %s", meta["namespace"], meta["name"], exc.reason, exc.message
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug or an unexpected library error: a clear failure, not a dead task
            log.exception("download of %s/%s crashed", meta["namespace"], meta["name"])
            run.error = DownloadError(DOWNLOAD_FAILED, f"downloader error: {type(exc).__name__}: {exc}")
        finally:
            # every progress report is on the bus before the run counts as finished: a reconcile
            # that sees it finished reports the outcome after them, so no late progress report can
            # follow (and override) the outcome
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            run.finished_at = time.time()
        try:
            await self.wake(ref, cache)
        except Exception:  # the periodic resync will look at it
            log.exception("could not requeue %s/%s after its download", meta["namespace"], meta["name"])
