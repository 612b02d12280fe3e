"""The status service: the only writer of ``.status`` (DESIGN §3). It consumes status reports from
every service through one durable consumer shared by its replicas, believes each only from the
service its subject names and only for the kinds that service owns (:mod:`aim_status.authority`),
applies them with the kinds'
aggregation rules (:mod:`aimcore.domain.status.rules`) in the order their sources published them
(:mod:`aim_status.ordering`), coalesces progress bursts (:mod:`aim_status.coalesce`), publishes an
audit record per write (:mod:`aim_status.audit`) and records a Kubernetes Event per condition
transition (:mod:`aim_status.events`, written best effort by :mod:`aim_status.recorder`).

Settings: :mod:`aim_status.settings` (``AIM_STATUS_COALESCE_SECONDS``, ``AIM_STATUS_EVENTS_QPS``,
``AIM_STATUS_EVENTS_BURST``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue
from pydantic import ValidationError

from aim_status.audit import Auditor
from aim_status.authority import authentic
from aim_status.coalesce import Coalescer, StreamGuard
from aim_status.events import RateLimit
from aim_status.ordering import Ordering
from aim_status.recorder import EventRecorder
from aim_status.settings import SETTINGS, StatusSettings
from aim_status.writer import StatusWriter, Written
from aimcore.api.bus import topology
from aimcore.api.bus.messages import StatusReport
from aimcore.api.bus.topology import ConsumerSpec
from aimcore.api.errors import PermanentError
from aimcore.domain.status.compose import AIM_STATUS
from aimcore.runtime.consumer import Consumer
from aimcore.runtime.probes import READINESS
from aimcore.runtime.service import ServiceContext, run_service

log = logging.getLogger(__name__)

CONSUMER = ConsumerSpec(
    durable="aim-status",
    stream=topology.STATUS_STREAM,
    filter_subjects=["aim.status.>"],
    deliver_policy=DeliverPolicy.ALL,
)


def parse(msg: Msg) -> StatusReport:
    try:
        return StatusReport.model_validate_json(msg.data)
    except ValidationError as exc:  # a malformed report will not get better by redelivery
        raise PermanentError("InvalidReport", f"unreadable status report on {msg.subject}: {exc}") from exc


async def main(ctx: ServiceContext) -> None:
    assert ctx.kube is not None
    READINESS.waiting(f"consumer {CONSUMER.durable}", f"waiting for the {topology.STATUS_STREAM} stream")
    if not await topology.wait_for_stream(ctx.js, topology.STATUS_STREAM, ctx.stop):
        return
    auditor = Auditor(ctx.js)
    settings = ctx.settings.get(StatusSettings)
    events = EventRecorder(ctx.kube, rate=RateLimit(settings.events_qps, settings.events_burst))

    async def on_write(written: Written) -> None:
        events.record(written)  # queued: never waits for the API server
        await auditor(written)

    writer = StatusWriter(ctx.kube, on_write=on_write, mirror=await _mirror(ctx), composer=AIM_STATUS)
    coalescer = Coalescer(
        writer.apply_all,
        settings.coalesce_seconds,
        superseded=StreamGuard(ctx.js, topology.STATUS_STREAM),
    )

    ordering = Ordering(ctx.js, topology.STATUS_STREAM)

    async def handle(msg: Msg) -> None:
        seq = msg.metadata.sequence.stream
        report = await ordering.latest_part(msg.subject, seq, authentic(msg.subject, parse(msg)))
        if report is None:
            return  # newer reports from its source say everything it says
        await coalescer.submit(msg.subject, report, seq)

    event_writer = asyncio.create_task(events.run(), name="events")
    try:
        await Consumer(ctx.js, CONSUMER, handle).run(ctx.stop)
    finally:
        await coalescer.close()
        await events.close()
        event_writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await event_writer


async def _mirror(ctx: ServiceContext) -> KeyValue | None:
    """The watcher's object mirror, if it exists yet (it is declared with the topology)."""
    try:
        return await topology.objects_bucket(ctx.js)
    except NotFoundError:
        log.info("no object mirror yet: every status write reads from the API server")
        return None


def run() -> None:
    asyncio.run(run_service("status", main, needs_kube=True, concerns=SETTINGS))
