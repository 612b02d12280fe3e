"""The deployer: AIMService (both API groups) from model reference to KServe InferenceService.

Walking-skeleton stage: a valid AIMService is acknowledged with ``status: Pending`` and a
``Ready=False`` condition for the generation it saw; invalid ones get ``InvalidSpec`` from the
shared harness. Model resolution, template selection and the InferenceService come next.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aimcore.bus.messages import ConditionReport
from aimcore.crds.base import Resource
from aimcore.kinds import KindRef, by_kind
from aimcore.runtime.reconciler import run_reconciler
from aimcore.runtime.report import Reporter
from aimcore.service import ServiceContext, run_service

SERVICE_KINDS = (by_kind("aim.eai.amd.com", "AIMService"), by_kind("aim.silogen.ai", "AIMService"))

PENDING = "Pending"


def pending_conditions() -> list[ConditionReport]:
    return [
        ConditionReport(
            type="Ready",
            status="False",
            reason="Reconciling",
            message="Waiting for model and template resolution",
        ),
        ConditionReport(type="ConfigValid", status="True", reason="ConfigurationValid", message=""),
    ]


async def main(ctx: ServiceContext) -> None:
    reporter = Reporter(ctx.js, ctx.name)

    async def reconcile(ref: KindRef, resource: Resource, obj: dict[str, Any]) -> None:
        await reporter.report(ref, obj, pending_conditions(), {"status": PENDING})

    await run_reconciler(ctx, SERVICE_KINDS, reconcile, reporter)


def run() -> None:
    asyncio.run(run_service("deployer", main, needs_kube=False))
