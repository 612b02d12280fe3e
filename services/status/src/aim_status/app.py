"""The status service: the only writer of ``.status`` (DESIGN §3). It consumes status reports from
every service through one durable consumer shared by its replicas."""

from __future__ import annotations

import asyncio

from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from aim_status.writer import StatusWriter
from aimcore.bus import topology
from aimcore.bus.messages import StatusReport
from aimcore.bus.topology import ConsumerSpec
from aimcore.runtime.consumer import Consumer
from aimcore.service import ServiceContext, run_service

CONSUMER = ConsumerSpec(
    durable="aim-status",
    stream=topology.STATUS_STREAM,
    filter_subjects=["aim.status.>"],
    deliver_policy=DeliverPolicy.ALL,
)


async def main(ctx: ServiceContext) -> None:
    assert ctx.kube is not None
    writer = StatusWriter(ctx.kube)

    async def handle(msg: Msg) -> None:
        await writer.apply(StatusReport.model_validate_json(msg.data))

    if not await topology.wait_for_stream(ctx.js, topology.STATUS_STREAM, ctx.stop):
        return
    await Consumer(ctx.js, CONSUMER, handle).run(ctx.stop)


def run() -> None:
    asyncio.run(run_service("status", main, needs_kube=True))
