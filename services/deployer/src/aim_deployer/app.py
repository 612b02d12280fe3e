"""The deployer service: AIMService (both API groups) from model reference to KServe
InferenceService and HTTPRoute (:mod:`aim_deployer.services`). What each dependency's change
wakes is said in :mod:`aim_deployer.dependencies`."""

from __future__ import annotations

import asyncio

from aim_deployer import dependencies as deps
from aim_deployer.services import PODS_INDEX, ServiceReconciler, pod_isvc
from aim_deployer.settings import SETTINGS, DeployerSettings
from aimcore.api.kinds import (
    DEPLOYMENT,
    HPA,
    HTTP_ROUTE,
    INFERENCE_SERVICE,
    MODEL_CACHE_KINDS,
    MODEL_KINDS,
    NODE,
    POD,
    RUNTIME_CONFIG_KINDS,
    SCALED_OBJECT,
    SERVICE_KINDS,
    TEMPLATE_CACHE_KINDS,
    TEMPLATE_KINDS,
)
from aimcore.domain.status.compose import AIM_STATUS
from aimcore.runtime import (
    Controller,
    ServiceContext,
    Watch,
    any_of,
    by_index,
    filed,
    run_controller,
    run_service,
    through,
    to_owners,
)

owners = to_owners(*SERVICE_KINDS)
co_owners = to_owners(*SERVICE_KINDS, same_group=True)
model_users = any_of(by_index(deps.BY_MODEL, key=deps.name_and_image), co_owners)
template_users = any_of(by_index(deps.BY_TEMPLATE), deps.template_model_users, co_owners)
template_cache_users = by_index(deps.BY_TEMPLATE, key=deps.cached_template)


def controller(ctx: ServiceContext, settings: DeployerSettings) -> Controller:
    assert ctx.kube is not None, "the deployer needs a Kubernetes client (it applies InferenceServices)"
    return Controller(
        ctx.name,
        SERVICE_KINDS,
        ServiceReconciler(ctx.kube, settings, ctx.settings.behaviour).reconcile,
        watches=[
            *Watch.each(MODEL_KINDS, model_users),
            *Watch.each(TEMPLATE_KINDS, template_users),
            *Watch.each(RUNTIME_CONFIG_KINDS, by_index(deps.BY_CONFIG)),
            *Watch.each(TEMPLATE_CACHE_KINDS, template_cache_users),
            *Watch.each(MODEL_CACHE_KINDS, through(deps.creating_template_cache, template_cache_users)),
            Watch(INFERENCE_SERVICE, owners),
            Watch(HTTP_ROUTE, owners),
            Watch(SCALED_OBJECT, owners),  # a service's own (scale to zero), restored if changed
            Watch(POD, through(deps.predictor_isvc, owners)),
            Watch(DEPLOYMENT, through(deps.predictor_isvc, owners)),
            Watch(HPA, through(deps.scaled_isvc, owners)),
            Watch(NODE, filed(deps.AWAITING_TEMPLATE, deps.AWAITING, *SERVICE_KINDS)),
        ],
        # every decision reads the informer's dependencies, not the service's own status (the
        # sticky references and the retry counter are read on the next dependency change)
        ignore_own_status=True,
        composer=AIM_STATUS,
        indexers={
            deps.BY_MODEL: deps.service_models,
            deps.BY_TEMPLATE: deps.service_templates,
            deps.BY_CONFIG: deps.service_config,
            PODS_INDEX: pod_isvc,
            deps.AWAITING_TEMPLATE: deps.awaiting_template_index,
        },
    )


async def main(ctx: ServiceContext) -> None:
    await run_controller(ctx, controller(ctx, ctx.settings.get(DeployerSettings)))


def run() -> None:
    asyncio.run(run_service("deployer", main, needs_kube=True, concerns=SETTINGS))
