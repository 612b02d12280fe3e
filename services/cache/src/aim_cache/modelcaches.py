"""The model-cache reconciler (AIMModelCache, both API groups): one model source downloaded,
verified and kept in storage, with progress users can watch.

One reconcile:

1. Runtime config (``RuntimeConfigReady``): storage defaults (class, PVC headroom).
2. Source (``SourceReady``): the URI must parse and a set ``downloadFilter`` must not have changed
   (:mod:`aimcore.domain.immutability`); in Job mode its size comes from ``spec.size`` or from
   listing the source (the Hub's file list, an S3 listing) with the cache's env, secrets resolved
   and its download filter applied (:func:`aim_cache.plan.download_filter`), so the PVC can be
   sized before anything is downloaded.
3. Storage (``StorageReady``): Job mode creates the PVC once (never mutated: size with headroom,
   storage class from the cache, the runtime config, or the cluster default), once its storage
   quota admits it (``StorageQuotaExceeded``/``StorageQuotaReady``, :mod:`aim_cache.admission`),
   and follows its phase; the local executor uses a directory. A ``pvc://`` source imports the
   user's claim instead, checked in place by a Job (:mod:`aim_cache.imports`).
4. Download (``DownloadReady``): a Job running the downloader (Job mode) or the local executor.
   Running → ``Downloading`` with progress published by the downloader itself (rate, ETA);
   success → ``Verified`` with what was checked; failure → the downloader's reason
   (``AuthError``, ``SourceNotFound``, ``StorageFull``, ``DownloadStalled``, ``ChecksumMismatch``,
   ``SourceUnreachable``...). Attempts back off ``60 s·2^(n-1)`` up to an hour (with jitter); a failure only a
   user can fix (credentials, a missing source) waits the full hour, so nothing storms. Deleting the
   failed Job retries at once; a change of the download-relevant spec starts again at attempt 1.

The Job is the record of an attempt (name and annotations carry attempt and spec hash); a
succeeded Job is kept, so Ready survives restarts without a second download.

An ``AIMArtifact`` (the released name of the model cache, served here alike) also gets the
released original's ``DownloadComplete`` and ``status.download``
(:mod:`aim_cache_jobs.downloader.downloadstate`): the download's own offers say Downloading and
Verifying; this reconcile says how it ended (Verified, or why it failed, progress ``N/A``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from nats.js.kv import KeyValue

from aim_cache import imports, plan, quota
from aim_cache.admission import BLOCK_REQUEUE, BUSY_REQUEUE, EVICT_REQUEUE, QuotaBusy, StorageQuota
from aim_cache.envvars import SECRET_NOT_FOUND, EnvReferenceMissing, resolve_env
from aim_cache.joblog import JobLogs
from aim_cache.llmkube.settings import DEFAULT_VERIFY_IMAGE
from aim_cache.local import LocalExecutor
from aim_cache.memo import remember
from aim_cache.settings import CacheSettings
from aim_cache_jobs.downloader import (
    INVALID_SOURCE,
    SOURCE_UNREACHABLE,
    DownloadError,
    Manifest,
    Progress,
    parse_source,
    probe_size,
    progress_fields,
    protocols,
    read_manifest,
)
from aim_cache_jobs.downloader.downloadstate import (
    DOWNLOAD_COMPLETE,
    NOT_AVAILABLE,
    VERIFICATION_FAILED,
    Attempt,
    Phase,
    download_complete,
    download_fields,
    reports_download,
)
from aim_cache_jobs.downloader.errors import CHECKSUM_MISMATCH, PERMANENT_REASONS
from aim_cache_jobs.downloader.filters import DownloadFilter
from aim_cache_jobs.downloader.sequence import SequenceFailed
from aimcore.api.backoff import Jitter, jitter_key
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import GROUP_LEGACY, JOB, POD, PVC, KindRef
from aimcore.api.quantities import amount
from aimcore.api.types import Obj
from aimcore.domain import immutability, jobs
from aimcore.domain.families.base import StatusCondition
from aimcore.domain.families.caches import AnyModelCache, ModelCache
from aimcore.domain.gpu import parse_quantity
from aimcore.domain.runtimeconfig import ConfigNotFound, resolution_conditions, resolve_live
from aimcore.domain.units import format_bytes, format_duration
from aimcore.runtime import Children, How, Kube, Refusal, Request, Result, owned_by, refused_condition
from aimcore.runtime import condition as cond

log = logging.getLogger(__name__)


SOURCE_READY = "SourceReady"
STORAGE_READY = "StorageReady"
DOWNLOAD_READY = "DownloadReady"
LEGACY = GROUP_LEGACY
IMMUTABLE = ("downloadFilter",)
"""A model cache's spec fields that are immutable once set (``sourceUri`` too, by the seeds' CRD)."""

IMPORT_RECHECK = 30.0
"""How soon an import looks again at a claim that is missing or not bound (a user's claim is not watched)."""

# failures only a user can fix (credentials, a missing source or Secret): retried at the cap
NON_RETRYABLE = PERMANENT_REASONS | {SECRET_NOT_FOUND}
# failures that are about the source rather than the transfer
SOURCE_REASONS = NON_RETRYABLE | {SOURCE_UNREACHABLE}
# failures of the verification itself: every byte was in
VERIFY_REASONS = frozenset({CHECKSUM_MISMATCH, "IntegrityCheckFailed"})


def backoff(attempts: int, reason: str, *, jitter: Jitter) -> float:
    """:data:`aimcore.domain.jobs.JOB_RETRY`; a failure only a user can fix waits its cap (an hour,
    no jitter: it is a poll for the user's change, not a retry)."""
    return jobs.JOB_RETRY.cap if reason in NON_RETRYABLE else jobs.JOB_RETRY.delay(attempts, jitter=jitter)


def done_progress(ref: KindRef, total: int) -> dict[str, Any]:
    if ref.group == LEGACY:
        return {}
    done = Progress(downloaded_bytes=total, total_bytes=total, files_done=0, files_total=0, phase="done")
    return {"progress": progress_fields(done, None, now=time.monotonic())}


def describe_outcome(outcome: Mapping[str, Any]) -> str:
    size = format_bytes(int(outcome.get("bytes") or 0))
    files = int(outcome.get("files") or 0)
    verified = ", ".join(outcome.get("verified") or []) or "nothing"
    text = f"{size} in {files} file{'s' if files != 1 else ''}; verified: {verified}"
    if outcome.get("revision"):
        text += f"; revision {str(outcome['revision'])[:12]}"
    if outcome.get("seconds") is not None:
        text += f"; took {format_duration(float(outcome['seconds']))}"
    return text


class ModelCacheReconciler:
    def __init__(
        self,
        kube: Kube,
        settings: CacheSettings,
        local: LocalExecutor | None,
        *,
        clock: Any = time.time,
        leases: Callable[[], Awaitable[KeyValue]] | None = None,
        verify_image: str = DEFAULT_VERIFY_IMAGE,
    ) -> None:
        self.kube = kube
        self.verify_image = verify_image  # of import Jobs: the cache service's own (aim-model-inspect)
        self.quota = StorageQuota(kube, leases, clock=clock)
        self.settings = settings
        self.local = local
        self.clock = clock
        self._sizes: OrderedDict[str, int] = OrderedDict()  # uid → probed size (until the PVC exists)
        self._probe_failures: dict[str, tuple[int, float]] = {}  # uid → (failures, when)
        self.logs = JobLogs(kube)
        self.children = Children(kube)  # writes the PVC and the download Jobs; keeps those refused

    # -- the reconcile ---------------------------------------------------------------------------

    async def reconcile(self, request: Request[AnyModelCache]) -> Result | None:
        cache = ModelCache(request.ref, request.obj, request.resource)
        config, conditions = resolution_conditions(
            request.informer.get, request.ref.group, request.namespace, _config_ref(cache)
        )
        fields: dict[str, Any] = {}
        if request.ref.group != LEGACY:
            fields["mode"] = cache.mode
        if config is None:
            await self._report(request, conditions, fields)
            return None
        if request.ref.group != LEGACY and (refused := await self._immutable(request)) is not None:
            conditions.append(cond(SOURCE_READY, False, immutability.REASON, refused))
            await self._report(request, conditions, fields, ("reject", immutability.REASON, refused))
            return None
        if imports.imports(cache.source_uri):
            return await self._reconcile_import(request, cache, conditions, fields)
        try:
            parse_source(cache.source_uri)
        except DownloadError as exc:
            conditions.append(cond(SOURCE_READY, False, exc.reason, exc.message))
            await self._report(request, conditions, fields, ("reject", exc.reason, exc.message))
            return None
        try:
            sequence = protocol_sequence(cache, config.spec)
        except DownloadError as exc:
            conditions.append(cond(DOWNLOAD_READY, False, exc.reason, exc.message))
            await self._report(request, conditions, fields, ("reject", exc.reason, exc.message))
            return None
        try:
            keep = plan.download_filter(cache, config.spec, self._image(cache))
        except DownloadError as exc:
            conditions.append(cond(SOURCE_READY, False, exc.reason, exc.message))
            await self._report(request, conditions, fields, ("reject", exc.reason, exc.message))
            return None
        if self.local is not None:
            local = self.local
            return await self._reconcile_local(
                request, cache, local, conditions, fields, sequence=sequence, keep=keep
            )
        return await self._reconcile_job(
            request, cache, config.spec, conditions, fields, sequence=sequence, keep=keep
        )

    async def _immutable(self, request: Request[AnyModelCache]) -> str | None:
        """Why a changed ``spec.downloadFilter`` is refused (:mod:`aimcore.domain.immutability`:
        the CRD's CEL rule, checked here for API servers without CEL); else ``None``, what is set
        now recorded."""
        found = immutability.check(request.obj, IMMUTABLE)
        if found.record is not None:
            annotations = {immutability.ANNOTATION: found.record}
            await self.kube.patch(
                request.ref, request.namespace, request.name, {"metadata": {"annotations": annotations}}
            )
        return found.refused

    async def _report(
        self,
        request: Request,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
        decision: tuple[str, str, str] | None = None,
    ) -> None:
        fields = {k: v for k, v in fields.items() if v is not None or k == "progress"}
        sent = await request.reporter.report(request.ref, request.obj, conditions, fields)
        if sent and decision is not None:
            await request.reporter.decide(request.ref, request.obj, *decision)

    # -- import (pvc://) ----------------------------------------------------------------------------

    async def _reconcile_import(
        self,
        request: Request,
        cache: ModelCache,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        """A ``pvc://`` cache (:mod:`aim_cache.imports`): the claim found in the cache's namespace and
        bound, then checked in place by a Job; never written, resized or deleted."""
        claim = imports.parse(cache.source_uri)
        namespace = str(cache.namespace)
        if self.local is not None:
            message = (
                "a pvc:// source is checked by a Job that mounts the claim: the local executor has no kubelet"
            )
            conditions.append(cond(SOURCE_READY, False, INVALID_SOURCE, message))
            await self._report(request, conditions, fields, ("reject", INVALID_SOURCE, message))
            return None
        pvc = await self.kube.get(PVC, namespace, claim.name)
        if pvc is None:
            elsewhere = sorted(
                str(p["metadata"].get("namespace"))
                for p in (await self.kube.list(PVC, None))[0]
                if p["metadata"].get("name") == claim.name
            )
            if elsewhere:
                reason = imports.CLAIM_IN_OTHER_NAMESPACE
                message = (
                    f"PersistentVolumeClaim {claim.name} is in namespace {', '.join(elsewhere)}, not "
                    f"{namespace}: a model cache imports a claim of its own namespace"
                )
            else:
                reason = imports.CLAIM_NOT_FOUND
                message = f"no PersistentVolumeClaim {claim.name} in namespace {namespace}"
            conditions.append(cond(SOURCE_READY, False, reason, message))
            conditions.append(cond(STORAGE_READY, False, reason, message))
            await self._report(request, conditions, fields, ("import-claim", reason, message))
            return Result(requeue_after=IMPORT_RECHECK)  # a user's claim is not watched
        conditions.append(cond(SOURCE_READY, True, "SourceResolved", cache.source_uri))
        fields["persistentVolumeClaim"] = claim.name
        held = binary_quantity(imports.capacity(pvc))
        if held is not None:
            fields["allocatedSize"] = held
        phase = (pvc.get("status") or {}).get("phase") or "Pending"
        if phase != "Bound":
            message = f"PersistentVolumeClaim {claim.name} is {phase}: it is imported once bound"
            conditions.append(cond(STORAGE_READY, False, imports.CLAIM_NOT_BOUND, message))
            await self._report(request, conditions, fields)
            return Result(requeue_after=IMPORT_RECHECK)
        message = (
            f"imported PersistentVolumeClaim {claim.name}, read-only (never written, resized or deleted)"
        )
        conditions.append(cond(STORAGE_READY, True, imports.CLAIM_BOUND, message))
        return await self._import_job(request, cache, claim, conditions, fields)

    async def _import_job(
        self,
        request: Request,
        cache: ModelCache,
        claim: imports.Claim,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        """The Job that checks the claim in place: made, followed, read, retried with back-off."""
        latest = await self._latest_job(request, cache)
        if latest is None:
            return await self._create_import_job(request, cache, claim, conditions, fields, 1)
        state = jobs.job_state(latest)
        if state == jobs.STATE_ACTIVE:
            what = f"import Job {latest['metadata']['name']} checks {cache.source_uri} in place"
            conditions.append(cond(DOWNLOAD_READY, False, "Verifying", what))
            await self._report(request, conditions, fields)
            return None
        outcome = await self._outcome(request, latest, self._pods(request, latest))
        if state == jobs.STATE_SUCCEEDED and outcome.get("result") == "ok":
            message = "imported in place: " + describe_outcome(outcome)
            conditions.append(cond(DOWNLOAD_READY, True, imports.IMPORTED, message))
            fields.update(done_progress(request.ref, int(outcome.get("bytes") or 0)))
            await self._report(request, conditions, fields, ("import", imports.IMPORTED, message))
            return None
        reason, message = failure_of(latest, self._pods(request, latest), outcome, "import")
        attempt = _attempt(latest)
        due = self._retry_due(request, latest, reason)
        now = self.clock()
        if now < due:
            conditions.append(
                cond(DOWNLOAD_READY, False, reason, f"{message} ({jobs.retry_note(attempt, due)})")
            )
            await self._report(request, conditions, fields, ("import-failed", reason, message))
            return Result(requeue_after=due - now)
        await self.kube.delete(JOB, request.namespace, latest["metadata"]["name"])
        return await self._create_import_job(request, cache, claim, conditions, fields, attempt + 1)

    async def _create_import_job(  # noqa: PLR0917 - one Job's inputs, named at the call
        self,
        request: Request,
        cache: ModelCache,
        claim: imports.Claim,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
        attempt: int,
    ) -> Result | None:
        body = imports.job_body(cache, claim, attempt=attempt, image=self.verify_image)
        written = await self.children.write(request, JOB, body, how=How.CREATE, record=False)
        if isinstance(written, Refusal):
            return await self._write_refused(
                request, DOWNLOAD_READY, "ImportJob", JOB, body, written, conditions, fields
            )
        name = body["metadata"]["name"]
        what = f"import Job {name} (attempt {attempt}) checks {cache.source_uri} in place"
        conditions.append(cond(DOWNLOAD_READY, False, "Verifying", what))
        await self._report(request, conditions, fields, ("create-job", "Verifying", what))
        return None

    # -- local executor --------------------------------------------------------------------------

    async def _reconcile_local(
        self,
        request: Request,
        cache: ModelCache,
        local: LocalExecutor,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
        *,
        sequence: tuple[str, ...],
        keep: DownloadFilter,
    ) -> Result | None:
        obj = request.obj
        uid = str(cache.uid)
        source = cache.source_uri
        dest = local.dest(obj)
        digest = plan.spec_hash(cache)
        conditions.append(cond(STORAGE_READY, True, "LocalStorage", f"local cache directory {dest}"))
        manifest = read_manifest(dest)
        run = local.run_of(uid)
        if manifest is not None and manifest.source == source and (run is None or not run.running):
            made_by = (run.protocol if run is not None else None) or protocols.first_attempt(sequence)
            await self._report(
                request, conditions, fields, verified_locally(request, manifest, conditions, fields, made_by)
            )
            return None
        if run is not None and run.spec_hash != digest:
            local.forget(uid)
            run = None
        if run is not None and run.running:
            reason = "WaitingForDownloadSlot" if run.waiting else "Downloading"
            message = (
                "waiting for a free download slot" if run.waiting else (run.summary or "download started")
            )
            conditions.append(cond(SOURCE_READY, True, "SourceResolved", source))
            conditions.append(cond(DOWNLOAD_READY, False, reason, message))
            await self._report(request, conditions, fields)
            return None
        attempt = 1
        if run is not None and run.error is not None:
            delay = backoff(run.attempt, run.error.reason, jitter=uid)
            due = (run.finished_at or 0.0) + delay
            now = self.clock()
            if now < due:
                failure_conditions(conditions, run.error.reason, run.error.message, run.attempt, due)
                ended_on = (
                    run.error.attempt
                    if isinstance(run.error, SequenceFailed)
                    else protocols.last_attempt(sequence)
                )
                verified = await bytes_were_in(self.kube, request, run.error.reason)
                download_failed(request, verified, conditions, fields, ended_on)
                await self._report(
                    request, conditions, fields, ("download-failed", run.error.reason, run.error.message)
                )
                return Result(requeue_after=due - now)
            attempt = run.attempt + 1
        try:
            env = await resolve_env(self.kube, str(request.namespace), plan.download_env(cache))
        except EnvReferenceMissing as exc:
            conditions.append(cond(SOURCE_READY, False, exc.reason, str(exc)))
            conditions.append(cond(DOWNLOAD_READY, False, exc.reason, str(exc)))
            await self._report(request, conditions, fields, ("reject", exc.reason, str(exc)))
            return Result(requeue_after=jobs.JOB_RETRY.delay(1, jitter=uid))
        env = {**self.settings.local_env, **env}
        run = local.start(request.ref, obj, env, sequence, attempt=attempt, spec_hash=digest, keep=keep)
        conditions.append(cond(SOURCE_READY, True, "SourceResolved", source))
        conditions.append(
            cond(DOWNLOAD_READY, False, "Downloading", f"attempt {attempt} started in the local executor")
        )
        download_state(request, Phase.DOWNLOADING, conditions, fields, protocols.first_attempt(sequence))
        await self._report(
            request,
            conditions,
            fields,
            ("download", "Downloading", f"local download attempt {attempt} of {source}"),
        )
        return None

    # -- Job mode --------------------------------------------------------------------------------

    async def _reconcile_job(
        self,
        request: Request,
        cache: ModelCache,
        config: Mapping[str, Any],
        conditions: list[ConditionReport],
        fields: dict[str, Any],
        *,
        sequence: tuple[str, ...],
        keep: DownloadFilter,
    ) -> Result | None:
        namespace = str(cache.namespace)
        claim = plan.pvc_name(cache.name, str(cache.uid))
        pvc = request.informer.get(PVC, namespace, claim)
        if pvc is None:
            sized = await self._size(request, cache, conditions, keep)
            if isinstance(sized, Result):
                await self._report(request, conditions, fields)
                return sized
            # a PVC is never changed once made: take its class and size from the configs as the API
            # server has them, not from a cache that may not have seen one created a moment ago
            with contextlib.suppress(ConfigNotFound):
                config = (
                    await resolve_live(self.kube, request.ref.group, namespace, _config_ref(cache))
                ).spec
            klass = plan.storage_class(cache.storage_class, config)
            size = plan.pvc_size_bytes(sized, plan.headroom_percent(config))
            body = plan.pvc_body(cache, size, klass, plan.headroom_percent(config))
            if cache.size is None:
                fields["discoveredSizeBytes"] = sized
            try:
                async with self.quota.held():
                    gate = await self._admit(request, cache, sized, config, conditions, fields)
                    if gate is not None:
                        return gate
                    written = await self.children.write(request, PVC, body)
            except QuotaBusy as busy:
                log.info("%s/%s waits for the storage quota lock: %s", namespace, cache.name, busy)
                return Result(requeue_after=BUSY_REQUEUE)
            if isinstance(written, Refusal):
                return await self._write_refused(
                    request, STORAGE_READY, "Pvc", PVC, body, written, conditions, fields
                )
            assert written.obj is not None  # an apply returns what it wrote
            pvc = written.obj
            await request.reporter.decide(
                request.ref,
                request.obj,
                "create-pvc",
                "PvcCreated",
                f"PVC {claim}: {format_bytes(size)} ({format_bytes(sized)} + "
                f"{plan.headroom_percent(config)}% headroom), "
                + (f"storage class {klass}" if klass else "cluster default storage class"),
            )
        else:
            conditions.append(cond(SOURCE_READY, True, "SourceResolved", cache.source_uri))
        fields["persistentVolumeClaim"] = claim
        fields.update(allocated(pvc))
        storage_condition(pvc, conditions)
        return await self._download_job(request, cache, conditions, fields, sequence=sequence, keep=keep)

    async def _admit(  # noqa: PLR0917 - one admission's inputs, named at the call
        self,
        request: Request,
        cache: ModelCache,
        sized: int,
        config: Mapping[str, Any],
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        """The storage quota's word on the volume (:mod:`aim_cache.admission`; under its lock):
        ``None`` to create it (its conditions added when a quota applies), else what to report and
        when to decide again: evicting (victims deleted), waiting for them, or blocked."""
        decision = await self.quota.decide(cache, sized, config)
        if decision is None:
            return None
        conditions.extend(cond(*c) for c in decision.conditions())
        if decision.admitted:
            return None
        if decision.action is quota.Action.EVICT:
            await self.quota.evict(cache, decision.victims)
        conditions.append(
            cond(STORAGE_READY, False, decision.reason, "no volume until the storage quota has room")
        )
        await self._report(
            request,
            conditions,
            fields,
            (f"quota-{decision.action.lower()}", decision.reason, decision.message),
        )
        wait = BLOCK_REQUEUE if decision.action is quota.Action.BLOCK else EVICT_REQUEUE
        return Result(requeue_after=wait)

    async def _size(
        self, request: Request, cache: ModelCache, conditions: list[ConditionReport], keep: DownloadFilter
    ) -> int | Result:
        uid = str(cache.uid)
        if cache.size is not None:
            try:
                size = parse_quantity(cache.size)
            except ValueError as exc:
                conditions.append(cond(SOURCE_READY, False, INVALID_SOURCE, f"spec.size: {exc}"))
                return Result()
            conditions.append(
                cond(SOURCE_READY, True, "SizeFromSpec", f"size {format_bytes(size)} from spec.size")
            )
            return size
        if uid in self._sizes:
            conditions.append(
                cond(SOURCE_READY, True, "SourceResolved", f"listed: {format_bytes(self._sizes[uid])}")
            )
            return self._sizes[uid]
        failures, when = self._probe_failures.get(uid, (0, 0.0))
        if failures:
            wait = when + jobs.JOB_RETRY.delay(failures, jitter=uid) - self.clock()
            if wait > 0:
                return Result(requeue_after=wait)
        try:
            env = await resolve_env(self.kube, str(request.namespace), plan.download_env(cache))
            size = await probe_size(cache.source_uri, env, policy=self.settings.outbound, keep=keep)
        except (DownloadError, EnvReferenceMissing) as exc:
            reason = exc.reason
            message = exc.message if isinstance(exc, DownloadError) else str(exc)
            failures += 1
            self._probe_failures[uid] = (failures, self.clock())
            conditions.append(cond(SOURCE_READY, False, reason, message))
            conditions.append(cond(DOWNLOAD_READY, False, reason, "the source could not be sized"))
            return Result(requeue_after=backoff(failures, reason, jitter=uid))
        self._probe_failures.pop(uid, None)
        remember(self._sizes, uid, size)
        conditions.append(cond(SOURCE_READY, True, "SourceResolved", f"listed: {format_bytes(size)}"))
        return size

    @staticmethod
    def _jobs(request: Request, cache: ModelCache) -> list[Obj]:
        uid = str(cache.uid)
        return [j for j in request.informer.list(JOB, request.namespace) if owned_by(j, uid)]

    async def _download_job(
        self,
        request: Request,
        cache: ModelCache,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
        *,
        sequence: tuple[str, ...],
        keep: DownloadFilter,
    ) -> Result | None:
        latest = await self._latest_job(request, cache)
        if latest is None:
            return await self._create_job(request, cache, conditions, fields, 1, sequence=sequence, keep=keep)
        attempt = _attempt(latest)
        state = jobs.job_state(latest)
        pods = self._pods(request, latest)
        if state == jobs.STATE_ACTIVE:
            found = jobs.pod_progress(pods, what="download", container=plan.CONTAINER)
            reason, message = (
                found if found else ("Downloading", f"download Job {latest['metadata']['name']} started")
            )
            if reason == jobs.REASON_JOB_RUNNING:
                reason = "Downloading"
            conditions.append(cond(DOWNLOAD_READY, False, reason, message))
            # DownloadComplete was said at the Job's creation; while it runs only the download's own
            # offers change it: this view may predate the offer that said Verifying (even the
            # creation's report), and must not take it back
            await self._report(request, conditions, fields)
            return None
        outcome = await self._outcome(request, latest, pods)
        ended_on = Attempt.from_record(outcome.get("download"))
        if state == jobs.STATE_SUCCEEDED:
            made_by = ended_on or protocols.first_attempt(sequence)
            image = self._image(cache)
            message = job_succeeded(request, cache, outcome, conditions, fields, made_by, image)
            await self._report(
                request, conditions, fields, ("download", "Verified", f"download finished: {message}")
            )
            return None
        # failed
        reason, message = failure_of(latest, pods, outcome, "download")
        due = self._retry_due(request, latest, reason)
        now = self.clock()
        if now < due:
            failure_conditions(conditions, reason, message, attempt, due)
            if request.ref.group != LEGACY:
                fields["progress"] = None
            verified = await bytes_were_in(self.kube, request, reason)
            last = ended_on or protocols.last_attempt(sequence)
            download_failed(request, verified, conditions, fields, last)
            await self._report(request, conditions, fields, ("download-failed", reason, message))
            return Result(requeue_after=due - now)
        await self.kube.delete(JOB, request.namespace, latest["metadata"]["name"])
        return await self._create_job(
            request, cache, conditions, fields, attempt + 1, sequence=sequence, keep=keep
        )

    async def _latest_job(self, request: Request, cache: ModelCache) -> Obj | None:
        """The cache's newest Job (download or import) made for its current spec; Jobs of an
        earlier spec, and older attempts, are deleted."""
        digest = plan.spec_hash(cache)
        owned = self._jobs(request, cache)
        current = [j for j in owned if _annotation(j, plan.ANNOTATION_SPEC_HASH) == digest]
        latest = max(current, key=_attempt, default=None)
        for old in (j for j in owned if j is not latest):
            await self.kube.delete(JOB, request.namespace, old["metadata"]["name"])
        return latest

    def _retry_due(self, request: Request, job: Obj, reason: str) -> float:
        """When the attempt after the failed ``job`` may start (:func:`backoff` from its end)."""
        finished = jobs.finished_at(job)
        ended = finished.timestamp() if finished is not None else self.clock()
        return ended + backoff(_attempt(job), reason, jitter=jitter_key(request.obj))

    def _image(self, cache: ModelCache) -> str:
        return plan.download_image(cache, self.settings.download_image, self.settings.behaviour)

    async def _create_job(
        self,
        request: Request,
        cache: ModelCache,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
        attempt: int,
        *,
        sequence: tuple[str, ...],
        keep: DownloadFilter,
    ) -> Result | None:
        body = plan.job_body(
            cache,
            attempt=attempt,
            image=self._image(cache),
            protocol_sequence=sequence,
            keep=keep,
            bus=self.settings.job_bus(),
            stall_timeout=self.settings.stall_timeout,
            outbound=self.settings.outbound.env(),
            log_format=self.settings.log_format,
        )
        # one already there was created by an earlier run whose event has not reached the cache
        # yet; not recorded: the Job is read back from the cache
        written = await self.children.write(request, JOB, body, how=How.CREATE, record=False)
        if isinstance(written, Refusal):
            return await self._write_refused(
                request, DOWNLOAD_READY, "DownloadJob", JOB, body, written, conditions, fields
            )
        name = body["metadata"]["name"]
        conditions.append(
            cond(DOWNLOAD_READY, False, "Downloading", f"download Job {name} (attempt {attempt}) created")
        )
        download_state(request, Phase.DOWNLOADING, conditions, fields, protocols.first_attempt(sequence))
        await self._report(
            request,
            conditions,
            fields,
            ("create-job", "Downloading", f"download Job {name}, attempt {attempt}"),
        )
        return None

    async def _write_refused(  # noqa: PLR0917 - one step's refusal, every argument named at the call
        self,
        request: Request,
        type_: str,
        child: str,
        kind: KindRef,
        body: Obj,
        found: Refusal,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        """The API server will not write the PVC or the download Job: the step's condition says
        why (its message names the field, e.g. an invalid storage class name). A body refused for
        its content is not sent again until the spec changes; a permission problem is retried."""
        refused = refused_condition(type_, child, kind, body, found, update=False)
        conditions.append(refused)
        await self._report(
            request, conditions, fields, (f"create-{child.lower()}-failed", refused.reason, refused.message)
        )
        if not found.forbidden:
            return None
        return Result(requeue_after=jobs.JOB_RETRY.delay(1, jitter=jitter_key(request.obj)))

    def _pods(self, request: Request, job: Mapping[str, Any]) -> list[Obj]:
        uid = job["metadata"].get("uid")
        return [p for p in request.informer.list(POD, request.namespace) if uid and owned_by(p, str(uid))]

    async def _outcome(self, request: Request, job: Obj, pods: list[Obj]) -> dict[str, Any]:
        """The downloader's last JSON line of the Job's newest pod (cached per Job)."""
        return await self.logs.outcome(str(request.namespace), job, pods, plan.CONTAINER)


def failure_of(job: Obj, pods: list[Obj], outcome: Mapping[str, Any], what: str) -> tuple[str, str]:
    """Why a Job (``what``: ``download`` or ``import``) failed: the reason and message of its
    result line, else what the Job and its pods say."""
    if outcome.get("result") == "error" and outcome.get("reason"):
        return str(outcome["reason"]), jobs.redact(str(outcome.get("message", "")))
    return jobs.classify_failure(job, pods, outcome.get("_log"), what=what, container=plan.CONTAINER)


def job_succeeded(  # noqa: PLR0917 - one outcome's inputs, every one named at the call
    request: Request,
    cache: ModelCache,
    outcome: Mapping[str, Any],
    conditions: list[ConditionReport],
    fields: dict[str, Any],
    attempt: Attempt,
    image: str,
) -> str:
    """The conditions and fields of a download Job that succeeded (made by ``attempt``, running
    ``image``), from its result line; the message that says how it ended."""
    if outcome.get("result") == "ok":
        message = describe_outcome(outcome)
        total = int(outcome.get("bytes") or 0)
    else:
        message = (
            "downloaded by the KServe storage initializer, which verifies nothing (the "
            "aim-engine downloader image verifies every file)"
            if plan.uses_kserve_initializer(image)
            else "download Job succeeded"
        )
        total = 0
    reason = "Verified" if outcome.get("result") == "ok" else "Downloaded"
    conditions.append(cond(DOWNLOAD_READY, True, reason, message))
    if total:
        fields.update(done_progress(request.ref, total))
    download_state(request, Phase.SUCCEEDED, conditions, fields, attempt)
    return message


def verified_locally(
    request: Request,
    manifest: Manifest,
    conditions: list[ConditionReport],
    fields: dict[str, Any],
    attempt: Attempt,
) -> tuple[str, str, str]:
    """The conditions and fields of a local download whose manifest says it is complete and
    verified (by ``attempt``); the decision to record."""
    outcome = {
        "bytes": manifest.total_bytes,
        "files": len(manifest.files),
        "verified": list(manifest.verified),
        "revision": manifest.revision,
    }
    message = describe_outcome(outcome)
    source = manifest.source
    conditions.append(cond(SOURCE_READY, True, "SourceResolved", f"{source} ({len(manifest.files)} files)"))
    conditions.append(cond(DOWNLOAD_READY, True, "Verified", message))
    fields.update(done_progress(request.ref, manifest.total_bytes))
    download_state(request, Phase.SUCCEEDED, conditions, fields, attempt)
    return ("download", "Verified", f"download finished: {message}")


def binary_quantity(value: str | None) -> str | None:
    """A whole number of bytes as the original writes ``allocatedSize`` (``1Gi``; the API server
    keeps a PVC's request as written, e.g. ``1073741824``); ``None`` for no or no whole value."""
    try:
        exact = amount(value) if value is not None else None
    except ValueError:
        return None
    return quota.format_quantity(int(exact)) if exact is not None and exact.denominator == 1 else None


def allocated(pvc: Mapping[str, Any]) -> dict[str, Any]:
    """``status.allocatedSize`` (the PVC's request: what the cache takes of a storage quota) and
    the ``headroomPercent`` it was sized with (the PVC's annotation)."""
    request = ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
    out: dict[str, Any] = {}
    size = binary_quantity(request)
    if size is not None:
        out["allocatedSize"] = size
    headroom = ((pvc.get("metadata") or {}).get("annotations") or {}).get(plan.ANNOTATION_HEADROOM)
    if headroom is not None and str(headroom).isdigit():
        out["headroomPercent"] = int(headroom)
    return out


def storage_condition(pvc: Mapping[str, Any], conditions: list[ConditionReport]) -> bool:
    """``StorageReady`` of the cache's PVC as its phase says; whether it is bound."""
    name = pvc["metadata"]["name"]
    phase = (pvc.get("status") or {}).get("phase")
    if phase == "Bound":
        conditions.append(cond(STORAGE_READY, True, "PvcBound", f"PVC {name} is bound"))
        return True
    if phase == "Lost":
        conditions.append(cond(STORAGE_READY, False, "PvcLost", f"PVC {name} lost its volume"))
        return False
    conditions.append(
        cond(
            STORAGE_READY,
            False,
            "PvcPending",
            f"PVC {name} is waiting for a volume (WaitForFirstConsumer classes bind it when the "
            "download pod is scheduled)",
        )
    )
    return False


def failure_conditions(
    conditions: list[ConditionReport], reason: str, message: str, attempt: int, due: float
) -> None:
    """A failed download's conditions while it waits for its next attempt at ``due``."""
    retry = jobs.retry_note(attempt, due)
    if reason in SOURCE_REASONS:
        conditions.append(cond(SOURCE_READY, False, reason, message))
    else:
        conditions.append(cond(SOURCE_READY, True, "SourceResolved", "the source was listed"))
    conditions.append(cond(DOWNLOAD_READY, False, reason, f"{message} ({retry})"))


def download_state(
    request: Request,
    phase: Phase,
    conditions: list[ConditionReport],
    fields: dict[str, Any],
    attempt: Attempt,
) -> None:
    """An ``AIMArtifact``'s ``DownloadComplete`` and ``status.download`` for ``phase`` of ``attempt``
    (nothing for an ``AIMModelCache``)."""
    if not reports_download(request.ref.group, request.ref.kind):
        return
    conditions.append(download_complete(phase))
    fields["download"] = download_fields(phase, attempt)


def download_failed(
    request: Request,
    bytes_were_in: bool,
    conditions: list[ConditionReport],
    fields: dict[str, Any],
    attempt: Attempt,
) -> None:
    """A failed download of an ``AIMArtifact``: ``VerificationFailed`` when every byte was in
    (:func:`bytes_were_in`), else failed before completion; its progress shows ``N/A``."""
    if not reports_download(request.ref.group, request.ref.kind):
        return
    conditions.append(download_complete(Phase.FAILED, bytes_in=bytes_were_in))
    fields["download"] = download_fields(Phase.FAILED, attempt)
    fields["progress"] = {"displayPercentage": NOT_AVAILABLE}


async def bytes_were_in(kube: Kube, request: Request, reason: str) -> bool:
    """Whether every byte of a failed download was in: verification itself failed, or the status
    said Verifying. The download's offer (relayed to the status) and its end (the Job, the run)
    reach this service by different paths, so a view that does not say Verifying yet is checked
    against the stored object before the failure is called one before completion."""
    if reason in VERIFY_REASONS or said_bytes_in(request.obj):
        return True
    if not reports_download(request.ref.group, request.ref.kind):
        return False
    return said_bytes_in(await kube.get(request.ref, request.namespace, request.name))


def said_bytes_in(obj: Obj | None) -> bool:
    """Whether ``obj``'s status says every byte was in: ``DownloadComplete=True`` (Verifying), or
    the verdict this judgement already gave (``False/VerificationFailed``: the next reconcile of
    the same failure must say it again, not call it a failure before completion)."""
    said = StatusCondition.find(obj, DOWNLOAD_COMPLETE) if obj is not None else None
    return said is not None and (said.status == "True" or said.reason == VERIFICATION_FAILED)


def protocol_sequence(cache: ModelCache, config: Mapping[str, Any]) -> tuple[str, ...]:
    """The download's protocol sequence (:mod:`aim_cache_jobs.downloader.protocols`): the model
    cache's ``AIM_DOWNLOADER_PROTOCOL``, else its runtime config's, else the default (a value
    written as ``valueFrom`` is not read); :class:`DownloadError` when it names no sequence."""
    layers = (
        {e.name: e.value for e in cache.env},
        {e.get("name"): e.get("value") for e in config.get("env") or () if isinstance(e, Mapping)},
    )
    written_value = next((layer[protocols.ENV] for layer in layers if layer.get(protocols.ENV)), None)
    return protocols.parse(written_value)


def _config_ref(cache: ModelCache) -> Obj:
    """What runtime-config resolution reads of the cache (:mod:`aimcore.domain.runtimeconfig`)."""
    return {"runtimeConfigName": cache.runtime_config_name}


def _annotation(obj: Mapping[str, Any], key: str) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None


def _attempt(job: Mapping[str, Any]) -> int:
    try:
        return int(_annotation(job, plan.ANNOTATION_ATTEMPT) or 1)
    except ValueError:
        return 1


__all__ = ["DOWNLOAD_READY", "SOURCE_READY", "STORAGE_READY", "ModelCacheReconciler"]
