"""Publishing status reports and decision records (docs/design.md#status-ownership,
docs/design.md#audit-history). Services never write ``.status`` themselves; they say what they own,
and the status service writes it. Every report goes out one way, with the trace context in its
headers: :func:`publish_report` (a service's own), and :func:`offer_progress` (a download Job's
progress, which the cache service relays as its own)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aimcore.api.bus import progress, subjects
from aimcore.api.bus.messages import ConditionReport, Decision, ObjectRef, StatusReport
from aimcore.api.kinds import KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.runtime import logs, tracing
from aimcore.runtime.composer import Composer

log = logging.getLogger(__name__)


async def publish_report(js: JetStreamContext, report: StatusReport) -> None:
    """Publish ``report`` on its source's status subject (the only one the source's bus role may
    publish on, and only for the kinds it owns: :data:`aimcore.api.kinds.STATUS_OWNERS`)."""
    target = report.object
    subject = subjects.status_subject(
        report.source, by_kind(target.group, target.kind), target.namespace, target.name
    )
    await js.publish(subject, report.encode(), headers=tracing.inject({"Nats-Msg-Id": report.msg_id}))


async def offer_progress(nc: NatsClient, report: StatusReport, token: str) -> None:
    """Offer a download Job's progress ``report`` on its object's progress subject, with the Job's
    ``token`` (:mod:`aimcore.api.bus.progress`: the only thing the Job's bus role may publish; the
    cache service checks it and publishes it as its own, :func:`publish_report`)."""
    headers = tracing.inject({progress.TOKEN_HEADER: token})
    await nc.publish(progress.subject(report.object), report.encode(), headers=headers)


class Reporter:
    """Publishes ``source``'s status reports and decisions. A report the object's status already
    says is not sent: ``composer`` (the kinds' rules, as the status service composes; default:
    none) says what a report would change."""

    def __init__(self, js: JetStreamContext, source: str, composer: Composer | None = None) -> None:
        self.js = js
        self.source = source
        self.composer = composer if composer is not None else Composer()
        self.sent = 0
        self.skipped = 0

    def build(
        self,
        ref: KindRef,
        obj: Obj,
        conditions: Sequence[ConditionReport] = (),
        fields: dict[str, Any] | None = None,
        *,
        progress: bool = False,
    ) -> StatusReport:
        meta = obj["metadata"]
        return StatusReport(
            object=ObjectRef.of(ref, meta.get("namespace"), meta["name"]),
            uid=meta.get("uid"),
            source=self.source,
            observed_generation=meta.get("generation"),
            based_on=str(meta.get("resourceVersion", "")) or None,
            conditions=tuple(conditions),
            fields=fields or {},
            progress=progress,
        )

    async def report(
        self,
        ref: KindRef,
        obj: Obj,
        conditions: Sequence[ConditionReport] = (),
        fields: dict[str, Any] | None = None,
        *,
        progress: bool = False,
    ) -> bool:
        """Publish unless the object's status already says exactly this. Returns True if sent."""
        report = self.build(ref, obj, conditions, fields, progress=progress)
        if self.composer.is_current(obj, report):
            log.debug("%s: the status already says what this report would", report.object.display)
            self.skipped += 1
            return False
        await publish_report(self.js, report)
        self.sent += 1
        return True

    async def decide(
        self, ref: KindRef, obj: Obj, action: str, reason: str, message: str, **details: Any
    ) -> None:
        meta = obj["metadata"]
        decision = Decision(
            object=ObjectRef.of(ref, meta.get("namespace"), meta["name"]),
            source=self.source,
            action=action,
            reason=reason,
            message=message,
            details=details,
        )
        subject = subjects.decision_subject(self.source, ref, meta.get("namespace"), meta["name"])
        log.info(
            "decided %s (%s): %s",
            action,
            reason,
            message,
            extra=logs.fields(decision.object, decision),
        )
        await self.js.publish(subject, decision.encode(), headers=tracing.inject())
