"""The cache service. It owns template caches and model caches of both AIM API groups and
LLMKube ``Model``s: one controller per family (:mod:`aim_cache.templatecaches`,
:mod:`aim_cache.modelcaches`, :mod:`aim_cache.llmkube.controller`) behind one consumer, and the
downloader (:mod:`aim_cache.downloader`) that runs in download Jobs or, with no kubelet, in this
process (:mod:`aim_cache.local`); LLMKube Models are always fetched in this process, into the
service's model volume (:mod:`aim_cache.llmkube.runs`).

Dependencies, mapped back to the objects that depend on them:

- a model cache → the template caches that created or list it;
- a template → the template caches naming it (a cluster template: in every namespace);
- a runtime config → the caches resolving that name;
- a PVC or download Job (owned by a model cache) and a download Pod (owned by its Job) → the
  model cache;
- a node → the LLMKube Models that want a GPU (``acceleratorReady``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from aim_cache import plan
from aim_cache.llmkube.controller import KEY_INDEX, ModelController, cache_keys, gpu_models
from aim_cache.llmkube.runs import Runs
from aim_cache.llmkube.settings import ModelSettings
from aim_cache.local import LocalExecutor
from aim_cache.modelcaches import ModelCacheController
from aim_cache.relay import ProgressRelay
from aim_cache.settings import CacheSettings
from aim_cache.templatecaches import (
    TemplateCacheController,
    model_cache_names,
    template_names,
)
from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ChangeEvent, StatusReport
from aimcore.api.kinds import (
    GROUP_LLMKUBE,
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
    by_kind,
)
from aimcore.api.types import Obj
from aimcore.domain.naming import label_value
from aimcore.domain.runtimeconfig import config_name
from aimcore.runtime.informer import Informer
from aimcore.runtime.mappers import Mapper, Target
from aimcore.runtime.reconciler import (
    Controller,
    Request,
    Result,
    Watch,
    publish_requeue,
    run_controller,
)
from aimcore.runtime.service import ServiceContext, run_service

LLMKUBE = GROUP_LLMKUBE
TEMPLATE_INDEX = "template-name"
MODEL_CACHE_INDEX = "model-cache"
RUNTIME_CONFIG_INDEX = "runtime-config"


def kinds() -> tuple[KindRef, ...]:
    return (*TEMPLATE_CACHE_KINDS, *MODEL_CACHE_KINDS, LLMKUBE_MODEL)


def _group(obj: Obj) -> str:
    return str(obj.get("apiVersion", "")).partition("/")[0]


def _ref_of(event: ChangeEvent) -> KindRef:
    return by_kind(event.object.group, event.object.kind)


def model_cache_to_template_caches(
    event: ChangeEvent, obj: Obj | None, informer: Informer
) -> Iterable[Target]:
    ref = _ref_of(event)
    tc_kind = by_kind(ref.group, "AIMTemplateCache")
    ns = event.object.namespace
    targets: list[Target] = []
    creator = ((obj or {}).get("metadata", {}).get("labels") or {}).get(plan.LABEL_TEMPLATE_CACHE)
    for tc in informer.list(tc_kind, ns):
        name = tc["metadata"]["name"]
        if creator and label_value(name) == creator:
            targets.append((tc_kind, ns, name))
    for tc in informer.by_index(MODEL_CACHE_INDEX, event.object.name):
        if _group(tc) == ref.group and tc["metadata"].get("namespace") == ns:
            targets.append((tc_kind, ns, tc["metadata"]["name"]))
    return targets


def _users(index: str) -> Mapper:
    """A mapper to the objects whose ``index`` value is the changed object's name: of its API
    group and, for a namespaced dependency, of its namespace (templates → template caches, runtime
    configs → caches)."""

    def mapper(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        ref = _ref_of(event)
        for user in informer.by_index(index, event.object.name):
            ns = user["metadata"].get("namespace")
            if _group(user) == ref.group and not (ref.namespaced and ns != event.object.namespace):
                yield by_kind(ref.group, user["kind"]), ns, user["metadata"]["name"]

    return mapper


template_to_template_caches = _users(TEMPLATE_INDEX)
config_to_caches = _users(RUNTIME_CONFIG_INDEX)


def child_to_owner(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """A PVC or Job owned by a model cache or an LLMKube Model (its verify Jobs), or a Pod owned by
    such a Job."""
    if obj is None:
        return []
    owners = obj["metadata"].get("ownerReferences") or []
    ns = event.object.namespace
    for owner in owners:
        kind = owner.get("kind")
        group = str(owner.get("apiVersion", "")).partition("/")[0]
        if kind == "AIMModelCache" or (kind == "Model" and group == LLMKUBE):
            return [(by_kind(group, str(kind)), ns, str(owner.get("name")))]
        if kind == "Job" and event.object.kind == "Pod":
            job = informer.get(JOB, ns, str(owner.get("name")))
            if job is not None:
                return list(child_to_owner(event, job, informer))
    return []


def node_to_models(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    for model in gpu_models(informer):
        meta = model["metadata"]
        yield by_kind(LLMKUBE, "Model"), meta.get("namespace"), meta["name"]


def _runtime_config(obj: Obj) -> Iterable[str]:
    if obj.get("kind") not in ("AIMTemplateCache", "AIMModelCache"):
        return []
    return [config_name(obj.get("spec"))]


class Cache:
    """Dispatches each object to its family's controller."""

    def __init__(
        self, templates: TemplateCacheController, models: ModelCacheController, llmkube: ModelController
    ) -> None:
        self.templates = templates
        self.models = models
        self.llmkube = llmkube

    async def reconcile(self, request: Request) -> Result | None:
        if request.ref.kind == "AIMTemplateCache":
            return await self.templates.reconcile(request)
        if request.ref.kind == "AIMModelCache":
            return await self.models.reconcile(request)
        return await self.llmkube.reconcile(request)


def controller(
    ctx: ServiceContext,
    settings: CacheSettings,
    local: LocalExecutor | None,
    runs: Runs,
    model_settings: ModelSettings,
) -> Controller:
    assert ctx.kube is not None, "the cache service needs a Kubernetes client (PVCs, Jobs, secrets, logs)"

    async def requeue(obj: Obj) -> None:
        await publish_requeue(ctx.js, ctx.name, by_kind(LLMKUBE, "Model"), obj)

    llmkube = ModelController(ctx.kube, model_settings, runs, requeue)
    cache = Cache(TemplateCacheController(ctx.kube), ModelCacheController(ctx.kube, settings, local), llmkube)
    watches = [
        *(Watch(k, model_cache_to_template_caches) for k in MODEL_CACHE_KINDS),
        *(Watch(k, template_to_template_caches) for k in TEMPLATE_KINDS),
        *(Watch(k, config_to_caches) for k in RUNTIME_CONFIG_KINDS),
        Watch(PVC, child_to_owner),
        Watch(JOB, child_to_owner),
        Watch(POD, child_to_owner),
        Watch(NODE, node_to_models),
    ]
    return Controller(
        ctx.name,
        kinds(),
        cache.reconcile,
        watches=watches,
        indexers={
            TEMPLATE_INDEX: template_names,
            MODEL_CACHE_INDEX: model_cache_names,
            RUNTIME_CONFIG_INDEX: _runtime_config,
            KEY_INDEX: cache_keys,
        },
    )


async def main(ctx: ServiceContext) -> None:
    settings = CacheSettings.from_env(ctx.settings)
    local: LocalExecutor | None = None
    if settings.executor == "local":

        async def publish(report: StatusReport) -> None:
            ref = by_kind(report.object.group, report.object.kind)
            subject = subjects.status_subject(ref, report.object.namespace, report.object.name)
            await ctx.js.publish(subject, report.encode(), headers={"Nats-Msg-Id": report.msg_id})

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
    model_settings = ModelSettings.from_env(settings.cache_dir)
    runs = Runs(
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
    asyncio.run(run_service("cache", main, needs_kube=True))
