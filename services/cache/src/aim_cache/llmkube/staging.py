"""Staged Models (``http(s)://``, ``file://``, ``oci://``): the copy in ``<cache>/<cacheKey>/``.

A complete copy (the downloader's manifest, every file at its size, the primary's sha256 equal to
``spec.sha256`` when given) is Ready. Otherwise a fetch is started in this process
(:mod:`.runs`: Downloading for URLs, Copying for local files) or, after a failure, retried with the
reconciler's backoff. A Ready copy is revalidated every ``AIM_LLMKUBE_REVALIDATE_SECONDS``: the
upstream fingerprint (ETag/length by HEAD, size/mtime by ``stat``, an ``oci://`` manifest's digest)
is compared with the one recorded when the bytes were fetched. Drift sets ``SourceDrifted``; under
``OnChange`` it also starts a re-fetch that replaces the files only once the new bytes are verified
(the old copy serves meanwhile). An indeterminate probe changes nothing and is retried after the
retry delay.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aim_cache.inprocess import Run
from aim_cache.llmkube import drift, fetch, state
from aim_cache.llmkube.reporting import ModelReports
from aim_cache.llmkube.runs import Fetches, Order, Recorded, read_sidecar, spec_hash, write_sidecar
from aim_cache.llmkube.settings import ModelSettings
from aim_cache.llmkube.sources import Source, SourceError, SourceUnreachable
from aim_cache.memo import remember
from aim_cache_jobs.downloader import DownloadError, Manifest, read_manifest
from aimcore.api.crds.llmkube import Model
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.runtime import Request, Result

log = logging.getLogger(__name__)

PROGRESS_SECONDS = 3.0


@dataclass(frozen=True)
class _Copy:
    """What one reconcile of a staged Model works with."""

    request: Request[Model]
    model: LLMKubeModel
    digest: str  # the spec's: a run for another spec is not this Model's
    order: Order
    dest: Path
    run: Run | None

    @property
    def mine(self) -> bool:
        return self.run is not None and self.run.spec_hash == self.digest


class StagedCopies:
    def __init__(
        self,
        runs: Fetches,
        settings: ModelSettings,
        guard: fetch.Guard,
        reports: ModelReports,
        clock: Callable[[], float],
    ) -> None:
        self.runs, self.settings, self.guard = runs, settings, guard
        self.reports, self.clock = reports, clock
        self._probed: OrderedDict[str, float] = OrderedDict()  # uid → last probe attempt (wall)
        self._revalidated: OrderedDict[str, float] = OrderedDict()  # uid → last conclusive probe
        self._headers: OrderedDict[str, tuple[tuple[int, int], dict[str, Any] | None]] = OrderedDict()

    async def reconcile(
        self,
        request: Request[Model],
        model: LLMKubeModel,
        base: state.Observed,
        source: Source,
        local_paths: tuple[str, ...],
    ) -> Result | None:
        raw, expected = model.source, model.expected_sha256
        dest = self.runs.dest(source.cache_key)
        manifest = await asyncio.to_thread(read_manifest, dest)
        cached = await asyncio.to_thread(_cached, dest, manifest, source, raw, expected)
        read_header = model.reads_gguf_header
        order = Order(
            source, raw, local_paths, expected, read_header, self.guard, self.settings.policy.outbound
        )
        copy = _Copy(request, model, spec_hash(model), order, dest, self.runs.get(source.cache_key))

        if cached is not None and manifest is not None and source.kind == "oci":
            base = replace(base, staged_files=staged_paths(source, manifest))
        gguf: dict[str, Any] | None = None
        if cached is not None and read_header:
            gguf = await asyncio.to_thread(self._local_header, cached.path)
        elif copy.run is not None and copy.mine:
            gguf = copy.run.gguf
        base = replace(base, gguf=gguf)
        if cached is None:
            return await self._fetch(copy, base)
        return await self._ready(copy, base, cached)

    async def _ready(self, copy: _Copy, base: state.Observed, cached: state.Cached) -> Result | None:
        """A complete copy: Ready, unless a refresh is running or has just failed; revalidated when
        due."""
        request, model, run, uid = copy.request, copy.model, copy.run, copy.model.uid or ""
        recorded = await asyncio.to_thread(read_sidecar, copy.dest)
        now = self.clock()
        last = max(
            _parse_time(model.last_revalidated) or 0.0,
            self._revalidated.get(uid, 0.0),
            recorded.recorded_at if recorded is not None else 0.0,
        )
        obs = replace(
            base,
            cached=cached,
            # the status as the status service wrote it, when nothing was recorded
            fingerprint=recorded.fingerprint if recorded is not None else drift.from_status(model.status),
            last_revalidated=state.stamp(last) if last else None,
        )
        if recorded is not None and last == recorded.recorded_at:
            fetched = f"fetched {drift.shown(recorded.fingerprint)} at {state.stamp(recorded.recorded_at)}"
            obs = replace(obs, drift=("False", drift.REASON_IN_SYNC, fetched))
        if run is not None and copy.mine and run.running:
            obs = replace(obs, fetching=state.Fetching(run.kind, run.waiting, run.summary, run.attempt))
            await self.reports.report(request, obs)
            return Result(requeue_after=PROGRESS_SECONDS)
        if run is not None and copy.mine and run.error is not None and run.finished_at is not None:
            reason = failure_reason(run.error.reason)
            due = run.finished_at + self.reports.backoff(run.attempt, reason, request.obj)
            if now < due and run.finished_at > last - 1:
                failure = state.Failure(reason, f"refresh failed: {run.error.message}", due - now)
                await self.reports.report(request, replace(obs, failure=failure))
                return Result(requeue_after=due - now)
        interval = self.settings.revalidate_seconds
        retry_at = self._probed.get(uid, 0.0) + self.settings.retry_seconds
        gate = datetime.fromtimestamp(last, UTC) if last else None
        if drift.due(gate, datetime.fromtimestamp(now, UTC), timedelta(seconds=interval)) and now >= retry_at:
            obs, last, done = await self._revalidate(copy, obs, recorded, last, now)
            if done is not None:
                return done
        await self.reports.report(request, obs)
        probed_at = self._probed.get(uid, 0.0)
        if last < probed_at:  # the last probe was indeterminate: retry sooner
            next_probe = probed_at + min(self.settings.retry_seconds, interval)
        else:
            next_probe = max(last + interval, probed_at + self.settings.retry_seconds)
        return Result(requeue_after=max(1.0, next_probe - now))

    async def _revalidate(
        self, copy: _Copy, obs: state.Observed, recorded: Recorded | None, last: float, now: float
    ) -> tuple[state.Observed, float, Result | None]:
        """Probe the upstream and compare it with what the copy was fetched from: the observation,
        the last conclusive revalidation, and the result when this reconcile ends here (a drift
        reported, a re-fetch started)."""
        request, model, run, uid = copy.request, copy.model, copy.run, copy.model.uid or ""
        order = copy.order
        remember(self._probed, uid, now)
        try:
            probed = await fetch.probe(
                order.source, order.local_paths, self.guard, outbound=self.settings.policy.outbound
            )
        except (SourceError, SourceUnreachable) as exc:
            log.info("probe of %s refused: %s", order.raw, exc)
            probed = None
        recorded_fp = recorded.fingerprint if recorded is not None else None
        outcome = drift.compare(recorded_fp, probed)
        detail = drift.describe(recorded_fp, probed)
        if outcome == "baseline" and probed is not None:
            await asyncio.to_thread(write_sidecar, copy.dest, Recorded(probed, now))
            obs = replace(obs, fingerprint=probed)
        if drift.advances_last_revalidated(outcome):
            remember(self._revalidated, uid, now)
            obs = replace(obs, last_revalidated=state.stamp(now))
            last = now
        condition = drift.drift_condition(outcome, detail)
        if condition is not None:
            obs = replace(obs, drift=condition)
        if drift.action(outcome, model.refresh_policy) == "refetch":
            attempt = run.attempt + 1 if (run is not None and copy.mine and run.error is not None) else 1
            new = self.runs.start(order, spec_hash=copy.digest, attempt=attempt)
            obs = replace(obs, fetching=state.Fetching(new.kind, new.waiting, "", new.attempt))
            await self.reports.report(request, obs, ("refetch", drift.REASON_DRIFTED, detail))
            return obs, last, Result(requeue_after=PROGRESS_SECONDS)
        if outcome == "drifted":
            await self.reports.report(request, obs, ("drift", drift.REASON_DRIFTED, detail))
            return obs, last, Result(requeue_after=self.settings.revalidate_seconds)
        return obs, last, None

    async def _fetch(self, copy: _Copy, base: state.Observed) -> Result | None:
        """No complete copy: the running fetch, a failed one's backoff, or a new fetch."""
        request, run, order = copy.request, copy.run, copy.order
        now = self.clock()
        if run is not None and run.running:
            if copy.mine:
                fetching = state.Fetching(run.kind, run.waiting, run.summary, run.attempt)
            else:
                fetching = state.Fetching(run.kind, True, "", run.attempt)
            await self.reports.report(request, replace(base, fetching=fetching))
            return Result(requeue_after=PROGRESS_SECONDS)
        attempt = 1
        if run is not None and copy.mine and run.finished_at is not None:
            error = run.error
            if error is None:  # finished, yet no complete copy: the files changed underneath
                error = DownloadError(
                    "DownloadFailed", "the fetch completed but the staged files are missing"
                )
            reason = failure_reason(error.reason)
            due = run.finished_at + self.reports.backoff(run.attempt, reason, request.obj)
            if now < due:
                failure = state.Failure(reason, error.message, due - now)
                decision = ("fetch-failed", reason, error.message)
                await self.reports.report(request, replace(base, failure=failure), decision)
                return Result(requeue_after=due - now)
            attempt = run.attempt + 1
        new = self.runs.start(order, spec_hash=copy.digest, attempt=attempt)
        verb = "download" if new.kind == "download" else "copy"
        await self.reports.report(
            request,
            replace(base, fetching=state.Fetching(new.kind, new.waiting, "", new.attempt)),
            (verb, "Started", f"{verb} attempt {attempt} of {order.raw} into cache {order.source.cache_key}"),
        )
        return Result(requeue_after=PROGRESS_SECONDS)

    def _local_header(self, path: str) -> dict[str, Any] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        identity = (st.st_size, st.st_mtime_ns)
        known = self._headers.get(path)
        if known is not None and known[0] == identity:
            return known[1]
        header = fetch.local_header(path)
        remember(self._headers, path, (identity, header))
        return header


def failure_reason(reason: str) -> str:
    """A fetch's failure as the Model reports it: a checksum mismatch is an integrity failure."""
    return state.INTEGRITY_CHECK_FAILED if reason == "ChecksumMismatch" else reason


def _parse_time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def staged_paths(source: Source, manifest: Manifest) -> tuple[str, ...]:
    """The staged files, primary first: the spec's, or an ``oci://`` artifact's from its manifest."""
    if source.kind != "oci":
        return tuple(source.staged_files)
    paths = [f.path for f in manifest.files]
    primary = fetch.primary_of(paths)
    return (primary, *(p for p in paths if p != primary))


def _cached(
    dest: Path, manifest: Manifest | None, source: Source, raw: str, expected: str | None
) -> state.Cached | None:
    """The complete copy of this source in ``dest`` (every staged file present at its recorded
    size, the primary's sha256 equal to ``expected`` when given), or None."""
    if manifest is None or manifest.source != fetch.source_identity(source, raw) or not manifest.files:
        return None
    recorded = {f.path: f for f in manifest.files}
    if source.kind != "oci" and set(recorded) != set(source.staged_files):
        return None
    for f in manifest.files:
        try:
            if os.stat(dest / f.path).st_size != f.size:
                return None
        except OSError:
            return None
    primary = recorded[staged_paths(source, manifest)[0]]
    sha = primary.digest("sha256")
    if expected is not None and sha != expected:
        return None
    return state.Cached(
        path=str(dest / primary.path),
        size=manifest.total_bytes,
        sha256=sha,
        verified=expected is not None,
        completed_at=state.stamp(manifest.completed_at) if manifest.completed_at else None,
    )
