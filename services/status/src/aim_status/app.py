"""The status service: the only writer of ``.status`` (docs/design.md#status-ownership). It consumes
the status reports of every service (:mod:`aim_status.reports`: authenticated, ordered, coalesced,
written, audited, recorded as Events) and writes them with the AIM kinds' status rules
(:mod:`aimcore.domain.status`).

Settings: :mod:`aim_status.settings` (``AIM_STATUS_COALESCE_SECONDS``, ``AIM_STATUS_EVENTS_QPS``,
``AIM_STATUS_EVENTS_BURST``).
"""

from __future__ import annotations

import asyncio

from aim_status import reports
from aim_status.reports import CONSUMER
from aim_status.settings import SETTINGS, StatusSettings
from aimcore.domain.status.compose import AIM_STATUS
from aimcore.runtime import ServiceContext, run_consumer, run_service


async def main(ctx: ServiceContext) -> None:
    settings = ctx.settings.get(StatusSettings)
    await run_consumer(
        ctx, CONSUMER.stream, CONSUMER.durable, lambda: reports.serve(ctx, settings, AIM_STATUS)
    )


def run() -> None:
    asyncio.run(run_service("status", main, needs_kube=True, concerns=SETTINGS))
