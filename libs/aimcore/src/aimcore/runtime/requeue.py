"""Asking a service to reconcile an object again, now or later, through the bus: a requeue event
on the service's own subject (level-triggered, like any change), and a timer JetStream keeps
(a scheduled message) for time-based work, which outlives the replica that set it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from nats.js import JetStreamContext

from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime import tracing


def _requeue_event(ref: KindRef, obj: Obj) -> ChangeEvent:
    meta = obj["metadata"]
    return ChangeEvent(
        object=ObjectRef.of(ref, meta.get("namespace"), meta["name"]),
        uid=meta.get("uid", ""),
        resource_version=str(meta.get("resourceVersion", "")),
        generation=meta.get("generation"),
        change=ChangeType.REQUEUE,
    )


async def publish_requeue(js: JetStreamContext, service: str, ref: KindRef, obj: Obj) -> None:
    """Ask ``service`` to reconcile ``obj`` again now: for work that finishes outside a reconcile
    (a background download) and must be looked at level-triggered, like any other change."""
    meta = obj["metadata"]
    event = _requeue_event(ref, obj)
    subject = subjects.requeue_subject(service, ref, meta.get("namespace"), meta["name"])
    headers = {"Nats-Msg-Id": f"requeue:{event.uid}:{event.resource_version}:{time.time_ns()}"}
    await js.publish(subject, event.encode(), headers=tracing.inject(headers))


async def schedule_requeue(js: JetStreamContext, service: str, ref: KindRef, obj: Obj, delay: float) -> None:
    """Ask ``service`` to reconcile ``obj`` again after ``delay`` seconds (time-based work: a retry's
    backoff, a progress poll, a periodic sync).

    The timer is JetStream's, not this process's: a scheduled message (``Nats-Schedule: @at …``) on
    the object's schedule subject, which the server publishes as a requeue when it is due. It
    survives the replica that set it (a timer in memory died with a killed replica, and the object
    waited for the periodic resync), and one object has one timer per service: a newer schedule on
    the subject replaces the older, from whichever replica."""
    meta = obj["metadata"]
    namespace, name = meta.get("namespace"), meta["name"]
    due = datetime.now(UTC) + timedelta(seconds=max(0.0, delay))
    headers = {
        "Nats-Schedule": "@at " + due.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "Nats-Schedule-Target": subjects.requeue_subject(service, ref, namespace, name),
    }
    subject = subjects.schedule_subject(service, ref, namespace, name)
    await js.publish(subject, _requeue_event(ref, obj).encode(), headers=tracing.inject(headers))
