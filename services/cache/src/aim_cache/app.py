"""The cache service. It owns template caches, model caches and LLMKube Model downloads.

Skeleton stage: it consumes its kinds' change events and validates every spec (reporting
``InvalidSpec`` where the 1.20 API server cannot enforce CEL); its controllers come next."""

from __future__ import annotations

import asyncio

from aimcore.kinds import KindRef
from aimcore.runtime.reconciler import Controller, kinds_of, run_controller, validate_only
from aimcore.service import ServiceContext, run_service


def kinds() -> tuple[KindRef, ...]:
    return (
        *kinds_of("aim.eai.amd.com", "AIMTemplateCache", "AIMModelCache"),
        *kinds_of("aim.silogen.ai", "AIMTemplateCache", "AIMModelCache"),
        *kinds_of("inference.llmkube.dev", "Model"),
    )


async def main(ctx: ServiceContext) -> None:
    await run_controller(ctx, Controller(ctx.name, kinds(), validate_only))


def run() -> None:
    asyncio.run(run_service("cache", main, needs_kube=False))
