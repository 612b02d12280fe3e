"""The deployer: AIMService (both API groups) from model reference to KServe InferenceService.

Walking-skeleton stage: a valid AIMService is acknowledged with ``status: Pending`` and a
``Ready=False`` condition for the generation it saw; invalid ones get ``InvalidSpec`` from the
shared harness. Model resolution, template selection and the InferenceService come next.
"""

from __future__ import annotations

import asyncio

from aimcore.bus.messages import ConditionReport
from aimcore.kinds import by_kind
from aimcore.runtime.reconciler import Controller, Request, Result, run_controller
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


async def reconcile(request: Request) -> Result | None:
    await request.reporter.report(request.ref, request.obj, pending_conditions(), {"status": PENDING})
    return None


async def main(ctx: ServiceContext) -> None:
    await run_controller(ctx, Controller(ctx.name, SERVICE_KINDS, reconcile))


def run() -> None:
    asyncio.run(run_service("deployer", main, needs_kube=False))
