"""The LLMKube ``Model`` reconciler (``inference.llmkube.dev/v1alpha1``), run by the cache service.

One reconcile, level-triggered (every step reads what is, none remembers what it did):

1. Parse the source and the file set (``InvalidSource``/``InvalidFileSet``) and validate hardware
   and resources (``InvalidHardware``); echo ``acceleratorReady`` from the nodes' allocatable.
2. ``pvc://``: the claim must exist (``PVCNotFound``, checked again in 15 s) and be bound
   (``PVCNotBound``, Pending, 10 s). Nothing is copied: a verify Job mounts the claim read-only and
   reports the file's size, mtime, sha256 and GGUF header (:mod:`.verify`); the Model is Ready at
   ``/model-source/<path>`` once a round succeeded and its sha256 equals ``spec.sha256`` when given
   (``IntegrityCheckFailed`` otherwise). Rounds repeat every ``AIM_LLMKUBE_REVALIDATE_SECONDS``
   (an unchanged file is not re-read; a changed one is re-hashed and flagged ``SourceDrifted``); a
   failed round is retried with the same backoff as a fetch. (User claims carry no label the
   watcher mirrors, so they are polled, not watched; the verify Jobs and their pods are watched.)
3. Apply the policy: local paths under the allowed roots, remote hosts (an ``oci://`` source's
   registry) not link-local/metadata (``SourceNotAllowed``; waits for a spec change, no retry loop).
4. A complete copy in ``<cache>/<cacheKey>/`` (the downloader's manifest, every file at its size,
   the primary's sha256 equal to ``spec.sha256`` when given) is Ready. Otherwise a fetch is started
   (Downloading for URLs, Copying for local files) or, after a failure, retried with backoff
   (``AIM_LLMKUBE_RETRY_SECONDS`` doubling to ``AIM_LLMKUBE_RETRY_MAX_SECONDS``; failures only a
   user can fix wait the maximum).
5. A Ready copy is revalidated every ``AIM_LLMKUBE_REVALIDATE_SECONDS``: the upstream fingerprint
   (ETag/length by HEAD, size/mtime by ``stat``) is compared with the one recorded when the bytes
   were fetched. Drift sets ``SourceDrifted``; under ``OnChange`` it also starts a re-fetch that
   replaces the files only once the new bytes are verified (the old copy serves meanwhile). An
   indeterminate probe changes nothing and is retried after the retry delay.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from aim_cache.inprocess import Run
from aim_cache.joblog import JobLogs
from aim_cache.llmkube import drift, fetch, hardware, state, verify
from aim_cache.llmkube.runs import Fetches, Order, Recorded, read_sidecar, write_sidecar
from aim_cache.llmkube.settings import ModelSettings
from aim_cache.llmkube.sources import (
    Source,
    SourceError,
    SourceUnreachable,
    check_source,
    source_of,
)
from aim_cache.memo import remember
from aim_cache_jobs.contract import Known
from aim_cache_jobs.downloader import DownloadError, Manifest, read_manifest
from aim_cache_jobs.downloader.errors import PERMANENT_REASONS
from aimcore.api.backoff import Backoff, jitter_key
from aimcore.api.crds.base import Resource
from aimcore.api.crds.llmkube import Model
from aimcore.api.kinds import GROUP_LLMKUBE, JOB, NODE, POD, PVC, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain import jobs
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.runtime.children import owned_by
from aimcore.runtime.composer import rfc3339
from aimcore.runtime.conditions import refused_message, refused_reason
from aimcore.runtime.informer import Informer, ResourceIndexer, resource_indexer
from aimcore.runtime.kube import ApiException, Kube, describe_error
from aimcore.runtime.reconciler import Request, Result
from aimcore.runtime.refusals import Refusal
from aimcore.runtime.writes import Children, How

log = logging.getLogger(__name__)

GROUP = GROUP_LLMKUBE
MODEL = by_kind(GROUP, "Model")

PVC_NOT_FOUND = "PVCNotFound"
PVC_NOT_BOUND = "PVCNotBound"
PVC_MOUNT = verify.MOUNT
PVC_NOT_FOUND_SECONDS = 15.0
PROGRESS_SECONDS = 3.0
# Reasons only a user can fix: retrying at the short delay would only repeat the failure.
USER_FIXES = PERMANENT_REASONS | {state.INTEGRITY_CHECK_FAILED, "SourceNotAllowed"}


def _parse_time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _stamp(when: float) -> str:
    return rfc3339(datetime.fromtimestamp(when, UTC))


def spec_hash(model: LLMKubeModel) -> str:
    """What a fetch depends on: the source, the file set and the expected digest, as written."""
    relevant = model.fetch_inputs
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def _reason(reason: str) -> str:
    return state.INTEGRITY_CHECK_FAILED if reason == "ChecksumMismatch" else reason


KEY_INDEX = "llmkube-cache-key"
Requeue = Callable[[Obj], Awaitable[None]]


def _cache_keys(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    try:
        return [source_of(LLMKubeModel(ref, obj, cast(Model, resource))).cache_key]
    except SourceError:
        return []


cache_keys: ResourceIndexer = resource_indexer(_cache_keys, (MODEL,))
"""Index: a Model's cache key (so a finished fetch wakes every Model sharing it)."""


class LLMKubeModelReconciler:
    def __init__(
        self, kube: Kube, settings: ModelSettings, runs: Fetches, requeue: Requeue, *, clock: Any = time.time
    ) -> None:
        self.kube = kube
        self.settings = settings
        self.runs = runs
        self.requeue = requeue
        self.clock = clock
        self.informer: Informer | None = None
        runs.wake = self._wake
        self.guard = fetch.guard_for(settings.policy)
        self.outbound = settings.policy.outbound  # applied again when connecting
        self._probed: OrderedDict[str, float] = OrderedDict()  # uid → last probe attempt (wall)
        self._revalidated: OrderedDict[str, float] = OrderedDict()  # uid → last conclusive probe
        self._policy_failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # uid → (n, when)
        self.logs = JobLogs(kube)
        self.children = Children(kube)  # writes the verify Jobs; keeps those refused
        self._headers: OrderedDict[str, tuple[tuple[int, int], dict[str, Any] | None]] = OrderedDict()

    # -- the reconcile ---------------------------------------------------------------------------

    async def _wake(self, key: str) -> None:
        if self.informer is None:
            return
        for obj in list(self.informer.by_index(KEY_INDEX, key)):
            await self.requeue(obj)

    async def reconcile(self, request: Request[Model]) -> Result | None:
        self.informer = request.informer
        obj = request.obj
        model = _model(request)
        uid = model.uid or ""
        nodes = request.informer.list(NODE, None)
        ready, accel_message = hardware.accelerator_ready(model, nodes)
        base = state.Observed(accelerator=(ready, accel_message))
        try:
            source = source_of(model)
        except SourceError as exc:
            return await self._failed(request, base, exc.reason, exc.message)
        base = _with(base, cache_key=source.cache_key, staged_files=tuple(source.staged_files))
        problems = hardware.validate(model)
        if problems:
            return await self._failed(request, base, hardware.INVALID_HARDWARE, "; ".join(problems))
        if source.kind == "pvc":
            return await self._pvc(request, base, source)
        try:
            local_paths = await asyncio.to_thread(check_source, source, self.settings.policy)
        except SourceError as exc:
            return await self._failed(request, base, exc.reason, exc.message)
        except SourceUnreachable as exc:
            n, _ = self._policy_failures.get(uid, (0, 0.0))
            remember(self._policy_failures, uid, (n + 1, self.clock()))
            delay = self._backoff(n + 1, "SourceUnreachable", obj)
            obs = _with(base, failure=state.Failure("SourceUnreachable", str(exc), delay))
            await self._report(request, obs, ("fetch-failed", "SourceUnreachable", str(exc)))
            return Result(requeue_after=delay)
        self._policy_failures.pop(uid, None)
        return await self._staged(request, base, source, local_paths)

    # -- pvc:// ----------------------------------------------------------------------------------

    async def _pvc(self, request: Request[Model], base: state.Observed, source: Source) -> Result | None:
        assert source.claim is not None and source.path is not None
        try:
            pvc = await self.kube.get(PVC, request.namespace, source.claim)
        except ApiException as exc:
            if exc.status != 404:
                message = f"cannot read claim {source.claim}: {describe_error(exc)}"
                await self._report(request, _with(base, pending=(PVC_NOT_BOUND, message)))
                return Result(requeue_after=10.0)
            pvc = None
        if pvc is None:
            message = f"PersistentVolumeClaim {source.claim} does not exist in {request.namespace}"
            obs = _with(base, failure=state.Failure(PVC_NOT_FOUND, message, PVC_NOT_FOUND_SECONDS))
            await self._report(request, obs, ("reject", PVC_NOT_FOUND, message))
            return Result(requeue_after=PVC_NOT_FOUND_SECONDS)
        phase = (pvc.get("status") or {}).get("phase")
        if phase != "Bound":
            message = f"PersistentVolumeClaim {source.claim} is {phase or 'not bound yet'}"
            await self._report(request, _with(base, pending=(PVC_NOT_BOUND, message)))
            return Result(requeue_after=10.0)
        return await self._verify(request, base, source, str(pvc["metadata"].get("uid", "")))

    async def _verify(
        self, request: Request[Model], base: state.Observed, source: Source, claim_uid: str
    ) -> Result | None:
        """Rounds of verify Jobs that read the claim's file in place (:mod:`.verify`)."""
        assert source.claim is not None and source.path is not None
        model = _model(request)
        ns = str(request.namespace)
        uid = model.uid or ""
        expected = model.expected_sha256
        digest = spec_hash(model)
        path = f"{PVC_MOUNT}/{source.path}"
        now = self.clock()

        owned = verify.verify_jobs(request.informer.list(JOB, ns), uid)
        current, stale = verify.split(owned, digest, claim_uid)
        latest = current[-1] if current else None
        record: Obj | None = None  # the newest round that described the file
        verdict: verify.Verdict | None = None
        for job in reversed(current):
            if jobs.job_state(job) == jobs.STATE_SUCCEEDED:
                found = await self._verdict(ns, job)
                if isinstance(found, verify.Verdict):
                    record, verdict = job, found
                    break
        for job in [*stale, *(j for j in current if j is not latest and j is not record)]:
            await self._delete_job(ns, job)

        obs = base
        next_round = now
        if record is not None and verdict is not None:
            verified_at = _finished(record, now)
            next_round = verified_at + self.settings.revalidate_seconds
            fingerprint = drift.Fingerprint(length=verdict.size, mtime=verdict.mtime)
            obs = _with(
                obs,
                gguf=verdict.gguf,
                fingerprint=fingerprint,
                last_revalidated=_stamp(verified_at),
                drift=_pvc_drift(verify.known_of(record), verdict),
            )
            if expected is not None and verdict.sha256 != expected:
                message = (
                    f"sha256 of {path} in claim {source.claim} is {verdict.sha256}, spec.sha256 is "
                    f"{expected}; the file is the claim owner's and was left as it is"
                )
                obs = _with(
                    obs, failure=state.Failure(state.INTEGRITY_CHECK_FAILED, message, next_round - now)
                )
            else:
                cached = state.Cached(
                    path=path,
                    size=verdict.size,
                    sha256=verdict.sha256,
                    verified=expected is not None,
                    completed_at=_stamp(verified_at),
                    mounted=f"claim {source.claim} is mounted read-only at {PVC_MOUNT} by the workload",
                )
                obs = _with(obs, cached=cached)
        known = verdict.known if verdict is not None else None

        if latest is None:
            return await self._new_round(request, obs, source, claim_uid, digest, 1, 1, known)
        name = latest["metadata"]["name"]
        phase = jobs.job_state(latest)
        if phase == jobs.STATE_ACTIVE:
            progress = jobs.pod_progress(self._pods(ns, latest), what="verify", container=verify.CONTAINER)
            summary = progress[1] if progress else f"verify Job {name} reads {path}"
            fetching = state.Fetching("verify", False, summary, verify.attempt_of(latest))
            await self._report(request, _with(obs, fetching=fetching))
            return None
        if latest is record:
            if now >= next_round:
                return await self._new_round(
                    request, obs, source, claim_uid, digest, verify.round_of(latest) + 1, 1, known
                )
            decision = None
            if obs.failure is not None:
                decision = ("verify-failed", obs.failure.reason, obs.failure.message)
            await self._report(request, obs, decision)
            return Result(requeue_after=max(1.0, next_round - now))

        # the newest round failed (or left no verdict)
        pods = self._pods(ns, latest)
        outcome = await self.logs.outcome(ns, latest, pods, verify.CONTAINER)
        found = verify.read_verdict(outcome)
        if isinstance(found, verify.Refusal):  # the tool ran and says what is wrong with the file
            reason, message = found.reason, f"{found.message} (claim {source.claim})"
            obs = _with(obs, cached=None)  # the last verification no longer describes the file
        elif phase == jobs.STATE_SUCCEEDED:
            reason, message = "VerifyFailed", f"verify Job {name} succeeded but left no verdict in its log"
        else:
            reason, message = jobs.classify_failure(
                latest, pods, outcome.get("_log"), what="verify", container=verify.CONTAINER
            )
        attempt = verify.attempt_of(latest)
        due = _finished(latest, now) + self._backoff(attempt, reason, request.obj)
        if now >= due:
            return await self._new_round(
                request, obs, source, claim_uid, digest, verify.round_of(latest) + 1, attempt + 1, known
            )
        obs = _with(obs, failure=state.Failure(reason, message, due - now))
        await self._report(request, obs, ("verify-failed", reason, message))
        return Result(requeue_after=due - now)

    async def _new_round(  # noqa: PLR0917
        self,
        request: Request[Model],
        obs: state.Observed,
        source: Source,
        claim_uid: str,
        digest: str,
        round_: int,
        attempt: int,
        known: Known | None,
    ) -> Result | None:
        assert source.claim is not None and source.path is not None
        body = verify.job_body(
            MODEL,
            request.obj,
            claim=source.claim,
            claim_uid=claim_uid,
            path=source.path,
            spec_digest=digest,
            round_=round_,
            attempt=attempt,
            known=known,
            image=self.settings.verify_image,
        )
        # one already there was made by an earlier run whose event has not reached the cache yet;
        # not recorded: the Job is read back from the cache
        written = await self.children.write(request, JOB, body, how=How.CREATE, record=False)
        if isinstance(written, Refusal):
            reason = refused_reason("VerifyJob", written)
            message = refused_message(JOB, body, written, update=False)
            retry = self._backoff(attempt, reason, request.obj) if written.forbidden else None
            failure = state.Failure(reason, message, retry)
            await self._report(request, _with(obs, failure=failure), ("verify-failed", reason, message))
            return None if retry is None else Result(requeue_after=retry)
        name = body["metadata"]["name"]
        what = "re-verifies" if known is not None else "verifies"
        summary = f"verify Job {name} {what} {PVC_MOUNT}/{source.path} (attempt {attempt})"
        decision = ("verify", state.VERIFYING, summary) if known is None or attempt > 1 else None
        await self._report(
            request,
            _with(obs, failure=None, fetching=state.Fetching("verify", False, summary, attempt)),
            decision,
        )
        return None

    async def _verdict(self, namespace: str, job: Obj) -> verify.Verdict | verify.Refusal | None:
        outcome = await self.logs.outcome(namespace, job, self._pods(namespace, job), verify.CONTAINER)
        return verify.read_verdict(outcome)

    def _pods(self, namespace: str, job: Obj) -> list[Obj]:
        assert self.informer is not None
        job_uid = str(job["metadata"].get("uid", ""))
        return [p for p in self.informer.list(POD, namespace) if owned_by(p, job_uid)]

    async def _delete_job(self, namespace: str, job: Obj) -> None:
        await self.kube.delete(JOB, namespace, job["metadata"]["name"])

    # -- staged sources (http, file) ---------------------------------------------------------------

    async def _staged(
        self, request: Request[Model], base: state.Observed, source: Source, local_paths: tuple[str, ...]
    ) -> Result | None:
        model = _model(request)
        uid = model.uid or ""
        raw = model.source
        expected = model.expected_sha256
        digest = spec_hash(model)
        dest = self.runs.dest(source.cache_key)
        manifest = await asyncio.to_thread(read_manifest, dest)
        cached = await asyncio.to_thread(_cached, dest, manifest, source, raw, expected)
        run = self.runs.get(source.cache_key)
        mine = run is not None and run.spec_hash == digest
        read_header = model.reads_gguf_header
        order = Order(
            source, raw, local_paths, expected, read_header, self.guard, self.settings.policy.outbound
        )

        if cached is not None and manifest is not None and source.kind == "oci":
            base = _with(base, staged_files=staged_paths(source, manifest))
        gguf: dict[str, Any] | None = None
        if cached is not None and read_header:
            gguf = await asyncio.to_thread(self._local_header, cached.path)
        elif run is not None and mine:
            gguf = run.gguf
        base = _with(base, gguf=gguf)

        if cached is None:
            return await self._fetch(request, base, order, run, digest)

        # A complete copy: report it Ready, unless a refresh is running or has just failed.
        recorded = await asyncio.to_thread(read_sidecar, dest)
        now = self.clock()
        status = model.status  # the status as the status service wrote it
        last = max(
            _parse_time(model.last_revalidated) or 0.0,
            self._revalidated.get(uid, 0.0),
            recorded.recorded_at if recorded is not None else 0.0,
        )
        obs = _with(
            base,
            cached=cached,
            fingerprint=recorded.fingerprint if recorded is not None else drift.from_status(status),
            last_revalidated=_stamp(last) if last else None,
        )
        if recorded is not None and last == recorded.recorded_at:
            obs = _with(
                obs,
                drift=(
                    "False",
                    drift.REASON_IN_SYNC,
                    f"fetched {_describe(recorded.fingerprint)} at {_stamp(recorded.recorded_at)}",
                ),
            )
        if run is not None and mine and run.running:
            obs = _with(obs, fetching=state.Fetching(run.kind, run.waiting, run.summary, run.attempt))
            await self._report(request, obs)
            return Result(requeue_after=PROGRESS_SECONDS)
        if run is not None and mine and run.error is not None and run.finished_at is not None:
            delay = self._backoff(run.attempt, _reason(run.error.reason), request.obj)
            due = run.finished_at + delay
            if now < due and run.finished_at > last - 1:
                failure = state.Failure(
                    _reason(run.error.reason), f"refresh failed: {run.error.message}", due - now
                )
                await self._report(request, _with(obs, failure=failure))
                return Result(requeue_after=due - now)

        interval = self.settings.revalidate_seconds
        retry_at = self._probed.get(uid, 0.0) + self.settings.retry_seconds
        gate = datetime.fromtimestamp(last, UTC) if last else None
        if drift.due(gate, datetime.fromtimestamp(now, UTC), timedelta(seconds=interval)) and now >= retry_at:
            remember(self._probed, uid, now)
            try:
                probed = await fetch.probe(
                    source, local_paths, self.guard, outbound=self.settings.policy.outbound
                )
            except (SourceError, SourceUnreachable) as exc:
                log.info("probe of %s refused: %s", raw, exc)
                probed = None
            recorded_fp = recorded.fingerprint if recorded is not None else None
            outcome = drift.compare(recorded_fp, probed)
            detail = drift.describe(recorded_fp, probed)
            if outcome == "baseline" and probed is not None:
                await asyncio.to_thread(write_sidecar, dest, Recorded(probed, now))
                obs = _with(obs, fingerprint=probed)
            if drift.advances_last_revalidated(outcome):
                remember(self._revalidated, uid, now)
                obs = _with(obs, last_revalidated=_stamp(now))
                last = now
            condition = drift.drift_condition(outcome, detail)
            if condition is not None:
                obs = _with(obs, drift=condition)
            if drift.action(outcome, model.refresh_policy) == "refetch":
                attempt = run.attempt + 1 if (run is not None and mine and run.error is not None) else 1
                new = self.runs.start(order, spec_hash=digest, attempt=attempt)
                obs = _with(obs, fetching=state.Fetching(new.kind, new.waiting, "", new.attempt))
                await self._report(request, obs, ("refetch", drift.REASON_DRIFTED, detail))
                return Result(requeue_after=PROGRESS_SECONDS)
            if outcome == "drifted":
                await self._report(request, obs, ("drift", drift.REASON_DRIFTED, detail))
                return Result(requeue_after=interval)
        await self._report(request, obs)
        probed_at = self._probed.get(uid, 0.0)
        if last < probed_at:  # the last probe was indeterminate: retry sooner
            next_probe = probed_at + min(self.settings.retry_seconds, interval)
        else:
            next_probe = max(last + interval, probed_at + self.settings.retry_seconds)
        return Result(requeue_after=max(1.0, next_probe - now))

    async def _fetch(
        self, request: Request[Model], base: state.Observed, order: Order, run: Run | None, digest: str
    ) -> Result | None:
        now = self.clock()
        mine = run is not None and run.spec_hash == digest
        if run is not None and run.running:
            if mine:
                fetching = state.Fetching(run.kind, run.waiting, run.summary, run.attempt)
            else:
                fetching = state.Fetching(run.kind, True, "", run.attempt)
            await self._report(request, _with(base, fetching=fetching))
            return Result(requeue_after=PROGRESS_SECONDS)
        attempt = 1
        if run is not None and mine and run.finished_at is not None:
            error = run.error
            if error is None:  # finished, yet no complete copy: the files changed underneath
                error = DownloadError(
                    "DownloadFailed", "the fetch completed but the staged files are missing"
                )
            reason = _reason(error.reason)
            delay = self._backoff(run.attempt, reason, request.obj)
            due = run.finished_at + delay
            if now < due:
                failure = state.Failure(reason, error.message, due - now)
                await self._report(
                    request, _with(base, failure=failure), ("fetch-failed", reason, error.message)
                )
                return Result(requeue_after=due - now)
            attempt = run.attempt + 1
        new = self.runs.start(order, spec_hash=digest, attempt=attempt)
        verb = "download" if new.kind == "download" else "copy"
        await self._report(
            request,
            _with(base, fetching=state.Fetching(new.kind, new.waiting, "", new.attempt)),
            (verb, "Started", f"{verb} attempt {attempt} of {order.raw} into cache {order.source.cache_key}"),
        )
        return Result(requeue_after=PROGRESS_SECONDS)

    # -- helpers ---------------------------------------------------------------------------------

    def _backoff(self, attempt: int, reason: str, obj: Obj) -> float:
        """``AIM_LLMKUBE_RETRY_SECONDS`` doubling to ``..._RETRY_MAX_SECONDS`` (jitter keyed by the
        Model, so a deadline recomputed from a recorded failure stays put); a failure only a user can
        fix waits the maximum."""
        top = self.settings.retry_max_seconds
        if reason in USER_FIXES:
            return top
        schedule = Backoff(base=self.settings.retry_seconds, cap=top)
        return schedule.delay(max(attempt, 1), jitter=jitter_key(obj))

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

    async def _failed(
        self, request: Request[Model], base: state.Observed, reason: str, message: str
    ) -> Result | None:
        await self._report(
            request, _with(base, failure=state.Failure(reason, message)), ("reject", reason, message)
        )
        return None

    async def _report(
        self, request: Request[Model], obs: state.Observed, decision: tuple[str, str, str] | None = None
    ) -> None:
        fields, conditions = state.compose(obs)
        sent = await request.reporter.report(request.ref, request.obj, conditions, fields)
        if sent and decision is not None:
            await request.reporter.decide(request.ref, request.obj, *decision)


def _model(request: Request[Model]) -> LLMKubeModel:
    return LLMKubeModel(request.ref, request.obj, request.resource)


def _finished(job: Obj, default: float) -> float:
    ended = jobs.finished_at(job)
    return ended.timestamp() if ended is not None else default


def _pvc_drift(known: Known | None, verdict: verify.Verdict) -> tuple[str, str, str]:
    """``SourceDrifted`` for a claim's file: compared with the round before (whose result the
    newest round was given as ``--known``)."""
    now = drift.Fingerprint(length=verdict.size, mtime=verdict.mtime)
    if known is None:
        return ("False", drift.REASON_IN_SYNC, f"verified {_describe(now)}")
    before = drift.Fingerprint(length=known.size, mtime=known.mtime)
    if drift.compare(before, now) == "drifted":
        detail = drift.describe(before, now)
        return (
            "True",
            drift.REASON_DRIFTED,
            f"the file in the claim changed since the previous verification ({detail}); sha256 is now "
            f"{verdict.sha256}",
        )
    return ("False", drift.REASON_IN_SYNC, f"unchanged since the previous verification ({_describe(now)})")


def _with(obs: state.Observed, **changes: Any) -> state.Observed:
    return replace(obs, **changes)


def _describe(fp: drift.Fingerprint) -> str:
    return drift.describe(None, fp).removeprefix("recorded ")


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
        completed_at=_stamp(manifest.completed_at) if manifest.completed_at else None,
    )
