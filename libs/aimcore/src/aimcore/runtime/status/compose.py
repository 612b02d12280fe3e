"""Pure functions that turn a service's status report into the object's next ``.status``.

- A reported condition replaces the condition of the same type; ``lastTransitionTime`` is kept
  unless its status flips. Conditions no report mentions are left alone (another service owns them).
- ``observedGeneration`` is set on the object's status (unless the kind's status schema has no such
  field, as LLMKube's ``Model``: the API server would prune it and every report would look like a
  change) and on every reported condition. It never goes backwards.
- A report older than the status (:func:`is_stale`: a condition it reports already carries a newer
  ``observedGeneration``, i.e. its owner has since reported on a newer spec; or progress on work its
  source has since reported complete) changes nothing: a late or redelivered report never
  overwrites status derived from a newer generation or a later outcome. (Newer
  observations of the same generation are ordered by the status service from the stream:
  :mod:`aim_status.ordering`.)
- A report claiming a generation above the object's ``metadata.generation`` (:func:`from_the_future`:
  no service can have seen it; a forged or corrupt report) changes nothing, and an
  ``observedGeneration`` above it already in the status is dropped (:func:`_sane`), so "never goes
  backwards" can never be used to lock an object's status.
- Reported fields are merged key-wise at the top level of ``.status``; ``None`` removes a field.
- Then the kind's aggregation rule (:mod:`aimcore.runtime.status.rules`) derives the top-level state and
  the ``Ready`` condition from the component conditions, when there are any; ``Ready`` keeps its
  ``lastTransitionTime`` relative to the status *before* the report, so a reporter's own ``Ready``
  that the rule overrides does not reset it.
- :func:`status_patch` answers ``None`` when nothing changes, so no write is made, and
  :func:`is_current` (what reporters check before publishing) runs the very same composition.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from aimcore.api.bus.messages import ConditionReport, StatusReport
from aimcore.api.types import Obj
from aimcore.runtime.status import rules

PAUSE_ANNOTATION = "aim.eai.amd.com/reconciliation-paused"


def is_paused(obj: Obj) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PAUSE_ANNOTATION, "")).lower() == "true"


rfc3339 = rules.rfc3339


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


def is_stale(status: Obj, report: StatusReport) -> bool:
    """True when ``report`` was computed from an older generation than one already recorded for a
    condition it reports (each condition has one owner, so the owner has reported since), or when
    it is progress arriving after the work it reports on completed (a progress report would turn a
    condition its source has since set ``True`` back to ``False``)."""
    if report.progress:
        done = {
            c.get("type")
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("status") == "True"
        }
        if any(c.type in done and c.status != "True" for c in report.conditions):
            return True
    if report.observed_generation is None:
        return False
    reported = {c.type for c in report.conditions}
    for cond in status.get("conditions") or []:
        if not isinstance(cond, dict) or cond.get("type") not in reported:
            continue
        seen = cond.get("observedGeneration")
        if isinstance(seen, int) and seen > report.observed_generation:
            return True
    return False


def compose(status: Obj | None, report: StatusReport, now: datetime) -> Obj:
    """The status after applying ``report`` to ``status`` (which is not modified)."""
    out: Obj = copy.deepcopy(status or {})
    if is_stale(out, report):
        return out
    for key, value in report.fields.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    if report.conditions:
        out["conditions"] = merge_conditions(
            out.get("conditions") or [], report.conditions, report.observed_generation, now
        )
    if report.observed_generation is not None and rules.has_status_field(
        report.object.group, report.object.kind, "observedGeneration"
    ):
        before = out.get("observedGeneration")
        newest = max(before, report.observed_generation) if isinstance(before, int) else None
        out["observedGeneration"] = newest or report.observed_generation
    rule = rules.rule_for(report.object.group, report.object.kind)
    if rule is not None:
        out = rules.aggregate(rule, out, now=now, previous=status or {})
    return out


def _without_times(status: Obj) -> Obj:
    out = dict(status)
    if "conditions" in out:
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in out["conditions"]
        ]
    return out


def _generation(obj: Obj) -> int | None:
    generation = (obj.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) else None


def from_the_future(report: StatusReport, generation: int | None) -> bool:
    """True when ``report`` claims a generation the object has never had: no service can have
    reconciled it (generations only grow), so it is forged or corrupt and changes nothing."""
    seen = report.observed_generation
    return generation is not None and seen is not None and seen > generation


def _sane(status: Obj, generation: int | None) -> Obj:
    """``status`` without the ``observedGeneration`` values above the object's generation (written by
    a forged report before they were refused): kept, they would make every real report look stale,
    and ``observedGeneration`` never goes backwards."""
    if generation is None:
        return status

    def future(value: object) -> bool:
        return isinstance(value, int) and value > generation

    conditions = status.get("conditions")
    bad_conditions = isinstance(conditions, list) and any(
        isinstance(c, dict) and future(c.get("observedGeneration")) for c in conditions
    )
    if not future(status.get("observedGeneration")) and not bad_conditions:
        return status
    out = dict(status)
    if future(out.get("observedGeneration")):
        out.pop("observedGeneration")
    if bad_conditions and isinstance(conditions, list):
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "observedGeneration"}
            if isinstance(c, dict) and future(c.get("observedGeneration"))
            else c
            for c in conditions
        ]
    return out


def is_current(obj: Obj, report: StatusReport) -> bool:
    """True when applying ``report`` would not change the object's status (ignoring timestamps)."""
    status = obj.get("status") or {}
    generation = _generation(obj)
    if from_the_future(report, generation):
        return True  # it would change nothing
    now = datetime.now(UTC)
    return _without_times(compose(_sane(status, generation), report, now)) == _without_times(status)


def compose_all(status: Obj | None, reports: Iterable[StatusReport], now: datetime) -> Obj:
    """``reports`` applied one after another, in order (a coalesced burst, then what follows it)."""
    out: Obj | None = None
    for report in reports:  # compose copies what it is given and never modifies it
        out = compose(out if out is not None else status, report, now)
    return out if out is not None else copy.deepcopy(status or {})


def status_patch(obj: Obj, report: StatusReport | Sequence[StatusReport], now: datetime) -> Obj | None:
    """A conditional merge patch for the status subresource, or ``None`` if nothing changes.
    ``report`` may be several reports for the object, applied in order in one write."""
    change = status_change(obj, report, now)
    return change[1] if change is not None else None


def status_change(
    obj: Obj, report: StatusReport | Sequence[StatusReport], now: datetime
) -> tuple[Obj, Obj] | None:
    """The composed status and the :func:`status_patch` that writes it, or ``None`` if nothing
    changes: for a writer that also needs the new status (its audit record), composed once."""
    old = obj.get("status") or {}
    generation = _generation(obj)
    reports = (report,) if isinstance(report, StatusReport) else tuple(report)
    new = compose_all(_sane(old, generation), (r for r in reports if not from_the_future(r, generation)), now)
    if new == old:
        return None
    return new, patch_for(obj, new)


def patch_for(obj: Obj, new: Obj) -> Obj:
    """The conditional merge patch that makes ``obj``'s status ``new``."""
    return {
        "metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
        "status": _with_removals(obj.get("status") or {}, new),
    }


def _with_removals(old: Obj, new: Obj) -> Obj:
    """``new`` as a JSON merge patch over ``old``: every key ``new`` lacks, at any depth of nested
    objects, is sent as ``null`` (a merge patch would otherwise keep it)."""
    out: Obj = {}
    for key, value in new.items():
        before = old.get(key)
        out[key] = (
            _with_removals(before, value) if isinstance(before, dict) and isinstance(value, dict) else value
        )
    for key in old:
        if key not in new:
            out[key] = None
    return out
