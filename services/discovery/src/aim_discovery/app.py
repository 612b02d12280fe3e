"""The discovery service. It owns models (and legacy images), service templates and runtime configs
of both AIM API groups: one reconciler per family (:mod:`aim_discovery.model_reconciler`,
:mod:`aim_discovery.templates`, :mod:`aim_discovery.runtimeconfigs`) behind one consumer. What
each dependency's change wakes is said in :mod:`aim_discovery.dependencies`."""

from __future__ import annotations

import asyncio
import functools

from aim_discovery import dependencies as deps
from aim_discovery import runtimeconfigs
from aim_discovery.model_reconciler import ModelReconciler
from aim_discovery.settings import SETTINGS
from aim_discovery.slots import Slots
from aim_discovery.templates import TemplateReconciler
from aimcore.api.bus import topology
from aimcore.api.kinds import (
    JOB,
    MODEL_KINDS,
    NODE,
    POD,
    RUNTIME_CONFIG_KINDS,
    TEMPLATE_CACHE_KINDS,
    TEMPLATE_KINDS,
)
from aimcore.domain.oci import RegistryClient
from aimcore.domain.outbound import OutboundPolicy
from aimcore.domain.status.compose import AIM_STATUS
from aimcore.runtime import (
    Controller,
    ServiceContext,
    Watch,
    any_of,
    by_index,
    dispatch,
    filed,
    run_controller,
    run_service,
    through,
    to_owners,
)
from aimcore.runtime.settings.outbound import OutboundSettings

template_models = any_of(
    to_owners(*MODEL_KINDS, same_group=True),
    deps.named_model,
    by_index(deps.DEFAULT_TEMPLATE_INDEX, kinds=MODEL_KINDS),
)
config_users = any_of(
    by_index(deps.RUNTIME_CONFIG_INDEX, kinds=(*MODEL_KINDS, *TEMPLATE_KINDS)),
    deps.namespace_configs_named_alike,
)


def controller(ctx: ServiceContext, slots: Slots) -> Controller:
    assert ctx.kube is not None, "discovery needs a Kubernetes client (secrets, templates, jobs, logs)"
    policy = OutboundPolicy.configured(ctx.settings)
    registry = functools.partial(
        RegistryClient, policy=policy, plain_http=ctx.settings.get(OutboundSettings).plain_http_registries
    )
    models = ModelReconciler(
        ctx.kube,
        ctx.settings.system_namespace,
        client_factory=registry,
        policy=policy,
        behaviour=ctx.settings.behaviour,
    )
    templates = TemplateReconciler(ctx.kube, ctx.settings.system_namespace, slots, policy=policy)
    return Controller(
        ctx.name,
        (*MODEL_KINDS, *TEMPLATE_KINDS, *RUNTIME_CONFIG_KINDS),
        dispatch(
            (MODEL_KINDS, models.reconcile),
            (TEMPLATE_KINDS, templates.reconcile),
            (RUNTIME_CONFIG_KINDS, runtimeconfigs.reconcile),
        ),
        watches=[
            *Watch.each(TEMPLATE_KINDS, template_models),
            *Watch.each(MODEL_KINDS, by_index(deps.MODEL_NAME_INDEX)),
            *Watch.each(RUNTIME_CONFIG_KINDS, config_users),
            Watch(NODE, deps.GpuChanges(filed(deps.GPU_INDEX, deps.NEEDS_GPU, *TEMPLATE_KINDS))),
            Watch(JOB, deps.job_template_of),
            Watch(POD, through(to_owners(JOB), deps.job_template_of)),
            *Watch.each(
                TEMPLATE_CACHE_KINDS, to_owners(*(k for k in TEMPLATE_KINDS if k.namespaced), same_group=True)
            ),
        ],
        indexers={
            deps.MODEL_NAME_INDEX: deps.model_name,
            deps.RUNTIME_CONFIG_INDEX: deps.runtime_config,
            deps.DEFAULT_TEMPLATE_INDEX: deps.default_template,
            deps.GPU_INDEX: deps.needs_gpu,
        },
        composer=AIM_STATUS,
    )


async def main(ctx: ServiceContext) -> None:
    async def build() -> Controller:  # once the topology exists: the Job slots are one of its buckets
        return controller(ctx, Slots(await ctx.js.key_value(topology.DISCOVERY_BUCKET)))

    await run_controller(ctx, build)


def run() -> None:
    asyncio.run(run_service("discovery", main, needs_kube=True, concerns=SETTINGS))
