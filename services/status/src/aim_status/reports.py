"""How the status service takes the status reports of every service: one durable consumer shared
by its replicas (:data:`CONSUMER`); each report is believed only from the service its subject
names and only for the kinds that service owns (:mod:`aim_status.authority`), cut to what newer
reports from its source do not say (:mod:`aim_status.ordering`), coalesced when it is progress
(:mod:`aim_status.coalesce`) and written with the composer the service is given
(:mod:`aim_status.writer`); every write is audited (:mod:`aim_status.audit`) and its condition
transitions recorded as Kubernetes Events (:mod:`aim_status.events`, written best effort by
:mod:`aim_status.recorder`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

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
from aim_status.settings import StatusSettings
from aim_status.writer import StatusWriter, Written
from aimcore.api.bus import topology
from aimcore.api.bus.messages import StatusReport
from aimcore.api.bus.topology import ConsumerSpec
from aimcore.api.errors import PermanentError
from aimcore.runtime import Consuming, ServiceContext
from aimcore.runtime.composer import Composer

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


@contextlib.asynccontextmanager
async def serve(
    ctx: ServiceContext, settings: StatusSettings, composer: Composer
) -> AsyncIterator[Consuming]:
    """What handles the reports while the consumer runs (set up once the status stream exists),
    and its tear-down: the last coalesced reports written, the Events queue drained."""
    assert ctx.kube is not None
    auditor = Auditor(ctx.js)
    events = EventRecorder(ctx.kube, rate=RateLimit(settings.events_qps, settings.events_burst))

    async def on_write(written: Written) -> None:
        events.record(written)  # queued: never waits for the API server
        await auditor(written)

    ordering = Ordering(ctx.js, topology.STATUS_STREAM)
    writer = StatusWriter(
        ctx.kube, on_write=on_write, mirror=await _mirror(ctx), composer=composer, ordering=ordering
    )
    coalescer = Coalescer(
        writer.apply_all,
        settings.coalesce_seconds,
        superseded=StreamGuard(ctx.js, topology.STATUS_STREAM),
    )

    async def handle(msg: Msg) -> None:
        seq = msg.metadata.sequence.stream
        report = await ordering.latest_part(msg.subject, seq, authentic(msg.subject, parse(msg)))
        if report is None:
            return  # newer reports from its source say everything it says
        await coalescer.submit(msg.subject, report, seq)

    event_writer = asyncio.create_task(events.run(), name="events")
    try:
        yield Consuming(CONSUMER, handle)
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
