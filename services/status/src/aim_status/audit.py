"""The audit record of every status write (docs/design.md#audit-history): a
:class:`~aimcore.api.bus.messages.Decision` with ``source="status"``, ``action="write-status"``,
``reason`` = the new top-level status (or ``Updated``), ``message`` = a one-line summary of what
changed, and ``details = {"conditions": [changed conditions], "fields": {changed top-level fields},
"resourceVersion": new resourceVersion}``, published on ``aim.decisions.status.{g}.{k}.{ns}.{name}``
with the trace context. ``aimctl events``/``describe`` replay this shape; keep it stable.

Status never holds credentials (services report conditions and status fields only), so nothing
here can leak a Secret.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from nats.js import JetStreamContext

from aim_status.writer import Written
from aimcore.api.bus import subjects
from aimcore.api.bus.messages import Decision
from aimcore.api.types import Obj
from aimcore.runtime import BUS_RETRY, tracing

log = logging.getLogger(__name__)


SOURCE = "status"
ACTION = "write-status"
UPDATED = "Updated"
FIRST_KEYS = ("status", "phase")
MAX_VALUE_CHARS = 60
MAX_MESSAGE_CHARS = 1000


def changed_conditions(old: Obj, new: Obj) -> list[Obj]:
    """The conditions of ``new`` that are new or differ from ``old`` (``Ready`` first)."""
    before = {c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, dict)}
    changed = [
        c for c in new.get("conditions") or [] if isinstance(c, dict) and before.get(c.get("type")) != c
    ]
    return sorted(changed, key=lambda c: c.get("type") != "Ready")


def changed_fields(old: Obj, new: Obj) -> Obj:
    """Top-level status fields other than conditions whose value changed (``None``: removed)."""
    keys = [k for k in (*new, *(k for k in old if k not in new)) if k != "conditions"]
    return {k: new.get(k) for k in keys if old.get(k) != new.get(k)}


def _scalar(value: Any) -> str:
    if value is None:
        return "unset"
    text = str(value).replace("\n", " ")
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _condition_change(before: Obj | None, cond: Obj) -> str:
    kind, status, reason = cond.get("type"), cond.get("status"), cond.get("reason")
    if before is None:
        return f"{kind}={status} ({reason})"
    if before.get("status") != status:
        return f"{kind} {before.get('status')}→{status} ({reason})"
    if before.get("reason") != reason:
        return f"{kind} {status} ({before.get('reason')}→{reason})"
    if before.get("message") != cond.get("message"):
        return f"{kind} {status} ({reason}): message updated"
    old_gen, new_gen = before.get("observedGeneration"), cond.get("observedGeneration")
    return f"{kind} {status} ({reason}): generation {old_gen}→{new_gen}"


def summary(old: Obj, new: Obj) -> str:
    """One line, e.g. ``Ready False→True (AllComponentsReady); status Pending→Running``."""
    before = {c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, dict)}
    conds = changed_conditions(old, new)
    fields = changed_fields(old, new)
    parts: list[str] = []
    if conds and conds[0].get("type") == "Ready":
        parts.append(_condition_change(before.get("Ready"), conds.pop(0)))
    for key in (k for k in FIRST_KEYS if k in fields):
        parts.append(f"{key} {_scalar(old.get(key))}→{_scalar(fields[key])}")
    parts.extend(_condition_change(before.get(c.get("type")), c) for c in conds)
    for key in (k for k in fields if k not in FIRST_KEYS):
        if _is_scalar(old.get(key)) and _is_scalar(fields[key]):
            parts.append(f"{key} {_scalar(old.get(key))}→{_scalar(fields[key])}")
        else:
            parts.append(f"{key} {'removed' if fields[key] is None else 'updated'}")
    line = "; ".join(parts) or "no visible change"
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 1] + "…"


def top_level_status(status: Obj) -> str:
    for key in FIRST_KEYS:
        value = status.get(key)
        if isinstance(value, str) and value:
            return value
    return UPDATED


def decision_for(written: Written) -> Decision:
    return Decision(
        object=written.object,
        source=SOURCE,
        action=ACTION,
        reason=top_level_status(written.new),
        message=summary(written.old, written.new),
        details={
            "conditions": changed_conditions(written.old, written.new),
            "fields": changed_fields(written.old, written.new),
            "resourceVersion": written.resource_version,
        },
    )


PATIENCE = 100.0
"""How long a record is retried while the bus cannot store it (a stream electing a new leader after
a NATS server died: seconds; the whole bus restarting: longer). Within the streams' duplicate window
(120 s), so a retry of a publish that was stored but whose answer was lost is stored once."""


class Auditor:
    """Publishes a ``write-status`` decision per write, retried (same ``Nats-Msg-Id``) while the bus
    cannot store it, up to :data:`PATIENCE`. A record still not stored then is logged, never
    raised: the write has happened, and failing the report would only make its redelivery a no-op."""

    def __init__(self, js: JetStreamContext, patience: float = PATIENCE) -> None:
        self.js = js
        self.patience = patience
        self.published = 0
        self.failed = 0

    async def __call__(self, written: Written) -> None:
        decision = decision_for(written)
        obj = written.object
        subject = subjects.decision_subject(SOURCE, written.ref, obj.namespace, obj.name)
        # One record per write even if publishing is retried (JetStream deduplicates by id).
        headers = tracing.inject({"Nats-Msg-Id": f"status:write:{written.uid}:{written.resource_version}"})
        deadline = time.monotonic() + self.patience
        attempt = 0
        while True:
            try:
                await self.js.publish(subject, decision.encode(), headers=headers)
                self.published += 1
                return
            except Exception as exc:
                attempt += 1
                delay = BUS_RETRY.delay(attempt)
                if time.monotonic() + delay > deadline:
                    self.failed += 1
                    log.warning("audit record for %s not published: %s", obj.display, exc)
                    return
                log.info("audit record for %s: %r; retrying in %.1fs", obj.display, exc, delay)
                await asyncio.sleep(delay)
