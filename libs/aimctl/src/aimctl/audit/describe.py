"""``aimctl describe``: one object's current conditions (from the API server) next to its history
(from the audit streams) — the condition changes the status service wrote, the other services'
decisions, and the change events the watcher saw.

Condition history comes from the status service's ``write-status`` decisions: after every status
write it records the conditions that changed (``details.conditions``), the status fields that
changed (``details.fields``) and the resulting ``resourceVersion``.

History is kept per object *name*: an object deleted and re-created under the same name shows
the history of both (the change events' ``uid`` tells them apart).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from nats.js import JetStreamContext

from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimctl.audit.history import History, Record
from aimctl.audit.query import Query
from aimctl.audit.render import format_table, iso, message, one_line, what

STATUS_SOURCE = "status"
WRITE_STATUS = "write-status"


@dataclass
class ObjectHistory:
    """The last ``limit`` entries of each kind of history, oldest first."""

    condition_writes: list[Record] = field(default_factory=list)
    decisions: list[Record] = field(default_factory=list)
    changes: list[Record] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.condition_writes or self.decisions or self.changes)


def is_status_write(record: Record) -> bool:
    d = record.decision
    return d is not None and d.source == STATUS_SOURCE and d.action == WRITE_STATUS


async def object_history(
    js: JetStreamContext, ref: KindRef, namespace: str | None, name: str, *, limit: int = 20
) -> ObjectHistory:
    """Replay one object's change events and decisions (status reports are left out: what they
    led to is in the status writes), keeping the last ``limit`` of each."""
    writes: deque[Record] = deque(maxlen=limit)
    decisions: deque[Record] = deque(maxlen=limit)
    changes: deque[Record] = deque(maxlen=limit)
    query = Query(
        kind=ref,
        namespace=namespace if ref.namespaced else None,
        name=name,
        types=frozenset({"change", "decision"}),
    )
    async with History(js, query) as history:
        async for record in history.records():
            if record.type == "change":
                changes.append(record)
            elif is_status_write(record):
                writes.append(record)
            else:
                decisions.append(record)
    return ObjectHistory(list(writes), list(decisions), list(changes))


def condition_rows(record: Record) -> list[tuple[str, str, str, str, str]]:
    """TIME, TYPE, STATUS, REASON, MESSAGE rows for one status write: one per changed condition,
    or one summarising the write when only status fields changed."""
    d = record.decision
    assert d is not None
    when = iso(record.time, precise=False)
    rows: list[tuple[str, str, str, str, str]] = []
    conditions = d.details.get("conditions")
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, dict):
            rows.append(
                (
                    when,
                    str(c.get("type", "?")),
                    str(c.get("status", "")),
                    str(c.get("reason", "")),
                    str(c.get("message", "")),
                )
            )
    if not rows:
        rows.append((when, "-", "-", d.reason, d.message))
    return rows


def _header(ref: KindRef, namespace: str | None, name: str, obj: Obj | None) -> list[str]:
    meta: Obj = (obj or {}).get("metadata") or {}
    status: Obj = (obj or {}).get("status") or {}
    lines = [f"Name:                {name}"]
    if ref.namespaced:
        lines.append(f"Namespace:           {namespace}")
    lines.append(f"Kind:                {ref.kind} ({ref.api_version})")
    if obj is None:
        return lines
    lines += [
        f"UID:                 {meta.get('uid', '')}",
        f"Created:             {meta.get('creationTimestamp', '')}",
        f"Generation:          {meta.get('generation', '<unset>')}",
        f"ObservedGeneration:  {status.get('observedGeneration', '<unset>')}",
        f"Status:              {status.get('status', '<unset>')}",
    ]
    return lines


def render_text(
    ref: KindRef,
    namespace: str | None,
    name: str,
    obj: Obj | None,
    history: ObjectHistory,
    *,
    api_error: str | None = None,
    width: int | None = None,
) -> str:
    lines = _header(ref, namespace, name, obj)
    if api_error:
        lines.append(f"Object:              (could not read it from the API server: {api_error})")
    elif obj is None:
        lines.append("Object:              (not found: deleted, or never created; history follows)")
    lines.append("")
    lines.append("Conditions:")
    conditions = [c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    if conditions:
        lines += format_table(
            ("TYPE", "STATUS", "REASON", "LAST TRANSITION", "GEN", "MESSAGE"),
            (
                (
                    str(c.get("type", "?")),
                    str(c.get("status", "")),
                    str(c.get("reason", "")),
                    str(c.get("lastTransitionTime", "")),
                    str(c.get("observedGeneration", "")),
                    str(c.get("message", "")),
                )
                for c in conditions
            ),
            width,
        )
    else:
        lines.append("  <none>")
    lines.append("")
    lines.append("Condition history (status writes, oldest first):")
    if history.condition_writes:
        rows = [row for record in history.condition_writes for row in condition_rows(record)]
        lines += format_table(("TIME", "TYPE", "STATUS", "REASON", "MESSAGE"), rows, width)
    else:
        lines.append("  <none>")
    lines.append("")
    lines.append("Recent decisions:")
    if history.decisions:
        lines += format_table(
            ("TIME", "SOURCE", "DECISION", "MESSAGE"),
            ((iso(r.time, precise=False), r.source, what(r), message(r)) for r in history.decisions),
            width,
        )
    else:
        lines.append("  <none>")
    lines.append("")
    lines.append("Recent change events:")
    if history.changes:
        lines += format_table(
            ("TIME", "CHANGE", "UID", "DETAILS"),
            (
                (iso(r.time, precise=False), what(r), r.change.uid if r.change else "?", message(r))
                for r in history.changes
            ),
            width,
        )
    else:
        lines.append("  <none>")
    return "\n".join(lines) + "\n"


def _record_brief(record: Record) -> Obj:
    return {
        "time": iso(record.time),
        "source": record.source,
        "what": what(record),
        "message": message(record),
        "record": record.payload,
    }


def render_json(
    ref: KindRef,
    namespace: str | None,
    name: str,
    obj: Obj | None,
    history: ObjectHistory,
    *,
    api_error: str | None = None,
) -> Obj:
    """The describe view as one JSON document (keys fixed; the object reduced to its header and
    conditions — its spec is not part of the view)."""
    meta: Obj = (obj or {}).get("metadata") or {}
    status: Obj = (obj or {}).get("status") or {}
    return {
        "object": {
            "group": ref.group,
            "version": ref.version,
            "kind": ref.kind,
            "namespace": namespace if ref.namespaced else None,
            "name": name,
            "found": obj is not None,
            "error": api_error,
            "uid": meta.get("uid"),
            "generation": meta.get("generation"),
            "observedGeneration": status.get("observedGeneration"),
            "status": status.get("status"),
        },
        "conditions": status.get("conditions") or [],
        "conditionHistory": [
            {
                "time": iso(r.time),
                "reason": r.decision.reason if r.decision else None,
                "message": one_line(r.decision.message) if r.decision else None,
                "conditions": (r.decision.details.get("conditions") or []) if r.decision else [],
                "fields": (r.decision.details.get("fields") or {}) if r.decision else {},
                "resourceVersion": r.decision.details.get("resourceVersion") if r.decision else None,
            }
            for r in history.condition_writes
        ],
        "decisions": [_record_brief(r) for r in history.decisions],
        "changes": [_record_brief(r) for r in history.changes],
    }
