"""Pure functions that turn a service's status report into the object's next ``.status``.

- A reported condition replaces the condition of the same type; ``lastTransitionTime`` is kept
  unless its status flips. Conditions no report mentions are left alone (another service owns them).
- ``observedGeneration`` is set on the object's status and on every reported condition.
- Reported fields are merged key-wise at the top level of ``.status``; ``None`` removes a field.
- :func:`status_patch` answers ``None`` when nothing changes, so no write is made.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from aimcore.bus.messages import ConditionReport, StatusReport

Obj = dict[str, Any]

PAUSE_ANNOTATION = "aim.eai.amd.com/reconciliation-paused"


def is_paused(obj: Obj) -> bool:
    annotations = obj.get("metadata", {}).get("annotations") or {}
    return str(annotations.get(PAUSE_ANNOTATION, "")).lower() == "true"


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_conditions(
    existing: Iterable[Obj], reported: Iterable[ConditionReport], generation: int | None, now: datetime
) -> list[Obj]:
    merged = [dict(c) for c in existing]
    index = {c.get("type"): i for i, c in enumerate(merged)}
    for rep in reported:
        cond: Obj = {"type": rep.type, "status": rep.status, "reason": rep.reason}
        if rep.message:  # an empty message is left out, as Kubernetes' own omitempty does
            cond["message"] = rep.message
        if generation is not None:
            cond["observedGeneration"] = generation
        i = index.get(rep.type)
        if i is None:
            cond["lastTransitionTime"] = rfc3339(now)
            index[rep.type] = len(merged)
            merged.append(cond)
            continue
        old = merged[i]
        same_status = old.get("status") == rep.status and old.get("lastTransitionTime")
        cond["lastTransitionTime"] = old["lastTransitionTime"] if same_status else rfc3339(now)
        merged[i] = cond
    return merged


def compose(status: Obj | None, report: StatusReport, now: datetime) -> Obj:
    """The status after applying ``report`` to ``status`` (which is not modified)."""
    out: Obj = copy.deepcopy(status or {})
    for key, value in report.fields.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    if report.conditions:
        out["conditions"] = merge_conditions(
            out.get("conditions") or [], report.conditions, report.observed_generation, now
        )
    if report.observed_generation is not None:
        out["observedGeneration"] = report.observed_generation
    return out


def _without_times(status: Obj) -> Obj:
    out = dict(status)
    if "conditions" in out:
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in out["conditions"]
        ]
    return out


def is_current(obj: Obj, report: StatusReport) -> bool:
    """True when applying ``report`` would not change the object's status (ignoring timestamps)."""
    status = obj.get("status") or {}
    now = datetime.now(UTC)
    return _without_times(compose(status, report, now)) == _without_times(status)


def status_patch(obj: Obj, report: StatusReport, now: datetime) -> Obj | None:
    """A conditional merge patch for the status subresource, or ``None`` if nothing changes."""
    old = obj.get("status") or {}
    new = compose(old, report, now)
    if new == old:
        return None
    patch: Obj = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, "status": new}
    removed = {k: None for k in old if k not in new}
    patch["status"].update(removed)
    return patch
