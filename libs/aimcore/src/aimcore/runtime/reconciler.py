"""The part of every controller that is the same everywhere: turn a change event into the current
object (from the KV mirror, never older than the event), skip deleted and paused objects, validate
the spec by parsing it, and report ``InvalidSpec`` instead of retrying invalid input. What remains
for a service is one ``reconcile(ref, resource, obj)`` function.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from nats.aio.msg import Msg
from pydantic import ValidationError

from aimcore.bus import subjects, topology
from aimcore.bus.messages import ChangeEvent, ChangeType, ConditionReport
from aimcore.bus.topology import ConsumerSpec
from aimcore.crds.base import Resource
from aimcore.crds.validation import INVALID_SPEC, describe, parse
from aimcore.kinds import KindRef, by_kind
from aimcore.runtime.consumer import Consumer
from aimcore.runtime.mirror import Mirror
from aimcore.runtime.report import Reporter
from aimcore.service import ServiceContext
from aimcore.status.compose import is_paused

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Reconcile = Callable[[KindRef, Resource, Obj], Awaitable[None]]

FAILED = "Failed"


def failed_fields(ref: KindRef) -> dict[str, Any]:
    """The top-level status field that says "failed" for a kind (LLMKube uses ``phase``)."""
    return {"phase": FAILED} if ref.group == "inference.llmkube.dev" else {"status": FAILED}


def event_consumer(service: str, kinds: Sequence[KindRef]) -> ConsumerSpec:
    return ConsumerSpec(
        durable=f"aim-{service}",
        stream=topology.EVENTS_STREAM,
        filter_subjects=[subjects.kind_filter(subjects.EVENTS_PREFIX, k) for k in kinds],
    )


def invalid_spec_conditions(message: str) -> list[ConditionReport]:
    return [
        ConditionReport(type="ConfigValid", status="False", reason=INVALID_SPEC, message=message),
        ConditionReport(type="Ready", status="False", reason=INVALID_SPEC, message=message),
    ]


class EventHandler:
    """Callable for :class:`~aimcore.runtime.consumer.Consumer`: event in, reconcile out."""

    def __init__(self, mirror: Mirror, reporter: Reporter, reconcile: Reconcile) -> None:
        self.mirror = mirror
        self.reporter = reporter
        self.reconcile = reconcile

    async def __call__(self, msg: Msg) -> None:
        event = ChangeEvent.model_validate_json(msg.data)
        if event.change is ChangeType.DELETED:
            return
        ref = by_kind(event.object.group, event.object.kind)
        obj = await self.mirror.get(
            ref, event.object.namespace, event.object.name, at_least=event.resource_version
        )
        if obj is None or is_paused(obj):
            return
        try:
            resource = parse(obj)
        except ValidationError as exc:
            message = describe(exc)
            if await self.reporter.report(ref, obj, invalid_spec_conditions(message), failed_fields(ref)):
                await self.reporter.decide(ref, obj, "reject", INVALID_SPEC, message)
            return
        await self.reconcile(ref, resource, obj)


async def run_reconciler(
    ctx: ServiceContext, kinds: Sequence[KindRef], reconcile: Reconcile, reporter: Reporter | None = None
) -> None:
    """Consume change events for ``kinds`` with this service's durable consumer until stopped."""
    if not await topology.wait_for_stream(ctx.js, topology.EVENTS_STREAM, ctx.stop):
        return
    mirror = Mirror(await topology.objects_bucket(ctx.js))
    handler = EventHandler(mirror, reporter or Reporter(ctx.js, ctx.name), reconcile)
    await Consumer(ctx.js, event_consumer(ctx.name, kinds), handler).run(ctx.stop)


def validate_only() -> Reconcile:
    """A reconcile for kinds whose controller is not built yet: validation (done by the harness)
    is all that happens, and nothing else is claimed."""

    async def reconcile(ref: KindRef, resource: Resource, obj: Obj) -> None:
        log.debug("%s %s is valid; no controller for it yet", ref.short, obj["metadata"]["name"])

    return reconcile


def kinds_of(group: str, *names: str) -> tuple[KindRef, ...]:
    return tuple(by_kind(group, n) for n in names)
