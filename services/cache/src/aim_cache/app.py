"""The cache service. It owns template caches and model caches of both AIM API groups and
LLMKube ``Model``s: one reconciler per family (:mod:`aim_cache.templatecaches`,
:mod:`aim_cache.modelcaches`, :mod:`aim_cache.llmkube.reconciler`) behind one consumer, and the
downloader (:mod:`aim_cache_jobs.downloader`) that runs in download Jobs or, with no kubelet, in this
process (:mod:`aim_cache.local`); LLMKube Models are always fetched in this process, into the
service's model volume (:mod:`aim_cache.llmkube.runs`). What each dependency's change wakes is
said in :mod:`aim_cache.dependencies`."""

from __future__ import annotations

import asyncio
import contextlib

from nats.js.kv import KeyValue

from aim_cache import dependencies as deps
from aim_cache.llmkube.own_image import with_own_image
from aim_cache.llmkube.reconciler import KEY_INDEX, LLMKubeModelReconciler, cache_keys
from aim_cache.llmkube.runs import Fetches
from aim_cache.llmkube.settings import ModelSettings
from aim_cache.local import LocalExecutor
from aim_cache.modelcaches import ModelCacheReconciler
from aim_cache.relay import ProgressRelay
from aim_cache.settings import SETTINGS, CacheSettings
from aim_cache.templatecaches import TemplateCacheReconciler, model_cache_names, template_names
from aimcore.api.bus.messages import StatusReport
from aimcore.api.bus.topology import leases_bucket
from aimcore.api.kinds import (
    JOB,
    LLMKUBE_MODEL,
    MODEL_CACHE_KINDS,
    NODE,
    POD,
    PVC,
    RUNTIME_CONFIG_KINDS,
    TEMPLATE_CACHE_KINDS,
    TEMPLATE_KINDS,
    KindRef,
)
from aimcore.api.types import Obj
from aimcore.domain.status.compose import AIM_STATUS
from aimcore.runtime import (
    Controller,
    ServiceContext,
    Watch,
    any_of,
    by_index,
    dispatch,
    every,
    publish_report,
    publish_requeue,
    run_controller,
    run_service,
    through_job_to_owner,
    to_owners,
)

OWNERS = (*MODEL_CACHE_KINDS, LLMKUBE_MODEL)  # of PVCs and Jobs (an LLMKube Model's verify Jobs)
model_cache_users = any_of(
    deps.creating_template_caches, by_index(deps.MODEL_CACHE_INDEX, kinds=TEMPLATE_CACHE_KINDS)
)


def controller(
    ctx: ServiceContext,
    settings: CacheSettings,
    local: LocalExecutor | None,
    runs: Fetches,
    model_settings: ModelSettings,
) -> Controller:
    assert ctx.kube is not None, "the cache service needs a Kubernetes client (PVCs, Jobs, secrets, logs)"

    async def requeue(obj: Obj) -> None:
        await publish_requeue(ctx.js, ctx.name, LLMKUBE_MODEL, obj)

    async def leases() -> KeyValue:  # the storage quota's lock (aim_cache.admission)
        return await leases_bucket(ctx.js)

    return Controller(
        ctx.name,
        (*TEMPLATE_CACHE_KINDS, *MODEL_CACHE_KINDS, LLMKUBE_MODEL),
        dispatch(
            (
                TEMPLATE_CACHE_KINDS,
                TemplateCacheReconciler(ctx.kube, settings.download_image, ctx.settings.behaviour).reconcile,
            ),
            (
                MODEL_CACHE_KINDS,
                ModelCacheReconciler(
                    ctx.kube, settings, local, leases=leases, verify_image=model_settings.verify_image
                ).reconcile,
            ),
            ((LLMKUBE_MODEL,), LLMKubeModelReconciler(ctx.kube, model_settings, runs, requeue).reconcile),
        ),
        watches=[
            *Watch.each(MODEL_CACHE_KINDS, model_cache_users),
            *Watch.each(TEMPLATE_KINDS, by_index(deps.TEMPLATE_INDEX)),
            *Watch.each(RUNTIME_CONFIG_KINDS, by_index(deps.RUNTIME_CONFIG_INDEX)),
            Watch(PVC, to_owners(*OWNERS)),
            Watch(JOB, to_owners(*OWNERS)),
            Watch(POD, through_job_to_owner(*OWNERS)),
            Watch(NODE, every(LLMKUBE_MODEL, where=deps.wants_gpu)),
        ],
        indexers={
            deps.TEMPLATE_INDEX: template_names,
            deps.MODEL_CACHE_INDEX: model_cache_names,
            deps.RUNTIME_CONFIG_INDEX: deps.runtime_config,
            KEY_INDEX: cache_keys,
        },
        composer=AIM_STATUS,
    )


async def main(ctx: ServiceContext) -> None:
    assert ctx.kube is not None
    settings = CacheSettings.of(ctx.settings)
    local: LocalExecutor | None = None
    if settings.executor == "local":

        async def publish(report: StatusReport) -> None:
            await publish_report(ctx.js, report)

        async def wake(ref: KindRef, obj: Obj) -> None:
            await publish_requeue(ctx.js, ctx.name, ref, obj)

        local = LocalExecutor(
            settings.cache_dir,
            publish,
            wake,
            stall_timeout=settings.stall_timeout,
            concurrency=settings.local_downloads,
            outbound=settings.outbound,
        )
    model_settings = await with_own_image(
        ModelSettings.of(ctx.settings, settings.cache_dir), ctx.kube, ctx.settings.system_namespace
    )
    runs = Fetches(
        model_settings.cache_dir, concurrency=model_settings.downloads, stall_timeout=settings.stall_timeout
    )
    relay = ProgressRelay(ctx.nc, ctx.js, settings.progress_key)
    await relay.start()
    try:
        await run_controller(ctx, controller(ctx, settings, local, runs, model_settings))
    finally:
        with contextlib.suppress(Exception):
            await relay.stop()
        with contextlib.suppress(Exception):
            await runs.close()
        if local is not None:
            with contextlib.suppress(Exception):
                await local.close()


def run() -> None:
    asyncio.run(run_service("cache", main, needs_kube=True, concerns=SETTINGS))
