"""The registry-sync service. It owns AIMClusterModelSource: it lists registries, matches the
source's filters (wildcards, exact tags, full URIs, excludes, semver ranges) and creates the
missing AIMClusterModels up to ``maxModels``, never deleting any (see ``docs/model-sources.md``).

AIMClusterModels are watched only to keep them in the informer cache (the models a source already
has); their changes do not trigger a sync."""

from __future__ import annotations

import asyncio
import functools

from aim_registry_sync.settings import SETTINGS
from aim_registry_sync.sync import AIMCLUSTERMODEL, SourceReconciler
from aimcore.api.kinds import MODEL_SOURCE_KINDS
from aimcore.domain.oci import RegistryClient
from aimcore.domain.outbound import OutboundPolicy
from aimcore.domain.status.compose import AIM_STATUS
from aimcore.runtime import Controller, ServiceContext, Watch, keep_cached, run_controller, run_service
from aimcore.runtime.settings.outbound import OutboundSettings


def controller(ctx: ServiceContext) -> Controller:
    assert ctx.kube is not None, "registry-sync needs a Kubernetes client"
    # the operator-wide outbound address policy (AIM_OUTBOUND_*), read at start-up
    registry = functools.partial(
        RegistryClient,
        policy=OutboundPolicy.configured(ctx.settings),
        plain_http=ctx.settings.get(OutboundSettings).plain_http_registries,
    )
    sources = SourceReconciler(ctx.kube, ctx.settings.system_namespace, client_factory=registry)
    return Controller(
        ctx.name,
        MODEL_SOURCE_KINDS,
        sources.reconcile,
        watches=[Watch(AIMCLUSTERMODEL, keep_cached)],
        composer=AIM_STATUS,
    )


async def main(ctx: ServiceContext) -> None:
    await run_controller(ctx, controller(ctx))


def run() -> None:
    asyncio.run(run_service("registry-sync", main, needs_kube=True, concerns=SETTINGS))
