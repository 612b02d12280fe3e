"""The LLMKube ``Model`` reconciler (``inference.llmkube.dev/v1alpha1``), run by the cache service:
the source and the hardware checked here, then a claim's verify rounds (:mod:`.claims`) or a staged
copy (:mod:`.staging`), each reported through :mod:`.reporting`.

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
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any, cast

from aim_cache.llmkube import fetch, hardware, state
from aim_cache.llmkube.claims import ClaimVerification
from aim_cache.llmkube.reporting import ModelReports
from aim_cache.llmkube.runs import Fetches
from aim_cache.llmkube.settings import ModelSettings
from aim_cache.llmkube.sources import (
    SourceError,
    SourceUnreachable,
    check_source,
    source_of,
)
from aim_cache.llmkube.staging import StagedCopies
from aim_cache.memo import remember
from aimcore.api.crds.base import Resource
from aimcore.api.crds.llmkube import Model
from aimcore.api.kinds import GROUP_LLMKUBE, NODE, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.runtime import (
    Informer,
    Kube,
    Request,
    ResourceIndexer,
    Result,
    resource_indexer,
)

GROUP = GROUP_LLMKUBE
MODEL = LLMKubeModel.kind(GROUP)

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
        self.settings = settings
        self.requeue = requeue
        self.clock = clock
        self.informer: Informer | None = None
        runs.wake = self._wake
        self.reports = ModelReports(settings)
        self._policy_failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # uid → (n, when)
        self.claims = ClaimVerification(kube, settings, self.reports, clock)
        guard = fetch.guard_for(settings.policy)
        self.staged = StagedCopies(runs, settings, guard, self.reports, clock)

    async def _wake(self, key: str) -> None:
        if self.informer is None:
            return
        for obj in list(self.informer.by_index(KEY_INDEX, key)):
            await self.requeue(obj)

    async def reconcile(self, request: Request[Model]) -> Result | None:
        self.informer = request.informer
        obj = request.obj
        model = LLMKubeModel(request.ref, request.obj, request.resource)
        uid = model.uid or ""
        nodes = request.informer.list(NODE, None)
        ready, accel_message = hardware.accelerator_ready(model, nodes)
        base = state.Observed(accelerator=(ready, accel_message))
        try:
            source = source_of(model)
        except SourceError as exc:
            return await self._failed(request, base, exc.reason, exc.message)
        base = replace(base, cache_key=source.cache_key, staged_files=tuple(source.staged_files))
        problems = hardware.validate(model)
        if problems:
            return await self._failed(request, base, hardware.INVALID_HARDWARE, "; ".join(problems))
        if source.kind == "pvc":
            return await self.claims.reconcile(request, model, base, source)
        try:
            local_paths = await asyncio.to_thread(check_source, source, self.settings.policy)
        except SourceError as exc:
            return await self._failed(request, base, exc.reason, exc.message)
        except SourceUnreachable as exc:
            n, _ = self._policy_failures.get(uid, (0, 0.0))
            remember(self._policy_failures, uid, (n + 1, self.clock()))
            delay = self.reports.backoff(n + 1, "SourceUnreachable", obj)
            obs = replace(base, failure=state.Failure("SourceUnreachable", str(exc), delay))
            await self.reports.report(request, obs, ("fetch-failed", "SourceUnreachable", str(exc)))
            return Result(requeue_after=delay)
        self._policy_failures.pop(uid, None)
        return await self.staged.reconcile(request, model, base, source, local_paths)

    async def _failed(
        self, request: Request[Model], base: state.Observed, reason: str, message: str
    ) -> Result | None:
        failed = replace(base, failure=state.Failure(reason, message))
        await self.reports.report(request, failed, ("reject", reason, message))
        return None
