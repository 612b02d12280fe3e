"""The registry-sync service. It owns AIMClusterModelSource: it lists registries, matches the
source's filters (wildcards, exact tags, full URIs, excludes, semver ranges) and creates the
missing AIMClusterModels up to ``maxModels``, never deleting any (see ``docs/model-sources.md``).

AIMClusterModels are watched only to keep them in the informer cache (the models a source already
has); their changes do not trigger a sync."""

from __future__ import annotations

import asyncio

from aim_registry_sync.sync import AIMCLUSTERMODEL, SourceController
from aimcore.kinds import KindRef
from aimcore.runtime.reconciler import Controller, Watch, kinds_of, run_controller
from aimcore.service import ServiceContext, run_service


def kinds() -> tuple[KindRef, ...]:
    return kinds_of("aim.eai.amd.com", "AIMClusterModelSource")


def controller(ctx: ServiceContext) -> Controller:
    assert ctx.kube is not None, "registry-sync needs a Kubernetes client"
    sources = SourceController(ctx.kube, ctx.settings.system_namespace)
    return Controller(
        ctx.name,
        kinds(),
        sources.reconcile,
        watches=[Watch(AIMCLUSTERMODEL, lambda event, obj, informer: ())],
    )


async def main(ctx: ServiceContext) -> None:
    await run_controller(ctx, controller(ctx))


def run() -> None:
    asyncio.run(run_service("registry-sync", main, needs_kube=True))
