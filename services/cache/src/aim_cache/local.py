"""The local executor: with no kubelet (docs/design.md#the-embedded-default) the cache service runs
the same downloader itself, into a local cache directory, instead of a download Job.

It mirrors what a Job gives the Job path: a record per model cache (attempt, outcome, finish time)
that the level-triggered reconcile reads, progress published to NATS exactly as the pod publishes
it (the status service coalesces), and a requeue when a run ends so the reconcile looks at the
outcome at once. A completed download is recognised by the downloader's manifest on disk, so a
restarted service does not download again; an interrupted one resumes from its partial files.

Runs are per process: the executor is meant for a single cache replica (the embedded stack). A
bounded number of downloads run at once; the others wait for a slot (``WaitingForDownloadSlot``).
The runs are kept in the one registry of this process's downloads (:mod:`aim_cache.inprocess`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from aim_cache.download_metrics import DownloadMeter
from aim_cache.inprocess import Run, Runs
from aim_cache_jobs.downloader import Progress, progress_report, protocols
from aim_cache_jobs.downloader.downloadstate import Attempt
from aim_cache_jobs.downloader.filters import NONE, DownloadFilter
from aim_cache_jobs.downloader.sequence import download_in_sequence
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.domain.outbound import STRICT, OutboundPolicy

DOWNLOADS = DownloadMeter("local")

Publish = Callable[[StatusReport], Coroutine[Any, Any, None]]
Wake = Callable[[KindRef, Obj], Awaitable[None]]

PROGRESS_INTERVAL = 2.0


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
        self.runs = Runs(concurrency=concurrency, what="downloader")

    def dest(self, cache: Mapping[str, Any]) -> Path:
        meta = cache["metadata"]
        return self.root / str(meta["namespace"]) / str(meta["name"])

    def run_of(self, uid: str) -> Run | None:
        return self.runs.get(uid)

    def forget(self, uid: str) -> None:
        self.runs.forget(uid)

    def start(
        self,
        ref: KindRef,
        cache: Obj,
        env: Mapping[str, str],
        sequence: tuple[str, ...],
        *,
        attempt: int,
        spec_hash: str,
        keep: DownloadFilter = NONE,
    ) -> Run:
        """Download ``cache``'s source into its directory, trying the protocols of ``sequence`` in
        turn (:func:`~aim_cache_jobs.downloader.sequence.download_in_sequence`), the files ``keep``
        keeps, with ``env`` (its credentials, its outbound policy) as the Job's container would
        have it."""
        uid = str(cache["metadata"]["uid"])
        self.forget(uid)
        meta = cache["metadata"]

        async def work(run: Run) -> None:
            await self._download(ref, cache, dict(env), sequence, run, keep)

        async def ended(run: Run) -> None:
            await self.wake(ref, cache)

        label = f"download of {meta['namespace']}/{meta['name']}"
        return self.runs.start(Run(uid, spec_hash, attempt), work, ended, label=label)

    async def close(self) -> None:
        await self.runs.close()

    async def _download(  # noqa: PLR0917 - one run's inputs
        self,
        ref: KindRef,
        cache: Obj,
        env: dict[str, str],
        sequence: tuple[str, ...],
        run: Run,
        keep: DownloadFilter,
    ) -> None:
        meta = cache["metadata"]
        target = ObjectRef.of(ref, meta.get("namespace"), meta["name"])
        last_sent = 0.0
        pending: set[asyncio.Task[None]] = set()

        def on_progress(progress: Progress) -> None:
            nonlocal last_sent
            now = run.progressed(progress, DOWNLOADS)
            if progress.phase != "done" and now - last_sent < PROGRESS_INTERVAL:
                return
            last_sent = now
            attempt = run.protocol or protocols.first_attempt(sequence)
            report = progress_report(target, run.key, progress, run.meter, now=now, attempt=attempt)
            task: asyncio.Task[None] = asyncio.create_task(self.publish(report))
            pending.add(task)
            task.add_done_callback(pending.discard)

        def on_attempt(attempt: Attempt) -> None:
            run.protocol = attempt

        try:
            run.manifest, run.protocol = await download_in_sequence(
                str(cache["spec"]["sourceUri"]),
                self.dest(cache),
                sequence=sequence,
                env=env,
                on_attempt=on_attempt,
                on_progress=on_progress,
                stall_timeout=self.stall_timeout,
                policy=self.outbound,
                keep=keep,
            )
        finally:
            # every progress report is on the bus before the run counts as finished: a reconcile
            # that sees it finished reports the outcome after them, so no late progress report can
            # follow (and override) the outcome
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
