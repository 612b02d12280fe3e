"""How a service's status report becomes the object's next ``.status``, whatever the kind: the
:class:`Composer` the status service writes with and every reporter checks a report against before
sending it (one composition, so a reporter skips exactly the reports that would change nothing).
What a kind derives from its conditions is not the runtime's to know: the composer is given the
kinds' rules (:class:`KindRules`; the AIM kinds' are :mod:`aimcore.domain.status`).

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
- Then the kind's rules (:meth:`KindRules.aggregate`) derive the top-level state and the ``Ready``
  condition from the component conditions, when there are any; ``Ready`` keeps its
  ``lastTransitionTime`` relative to the status *before* the report, so a reporter's own ``Ready``
  that the rule overrides does not reset it.
- :meth:`Composer.status_patch` answers ``None`` when nothing changes, so no write is made, and
  :meth:`Composer.is_current` (what reporters check before publishing) runs the very same
  composition.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Protocol, get_args

from pydantic import BaseModel

from aimcore.api.bus.messages import ConditionReport, StatusReport
from aimcore.api.bus.mirror import PAUSE_ANNOTATION
from aimcore.api.crds.registry import resource_class
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj


def is_paused(obj: Obj) -> bool:
    """Whether the user froze ``obj`` (docs/design.md#paused-objects): it is neither reconciled nor
    has its status written."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PAUSE_ANNOTATION, "")).lower() == "true"


class KindRules(Protocol):
    """What a kind derives from its conditions, as the composition asks it."""

    def aggregate(self, group: str, kind: str, status: Obj, *, now: datetime, previous: Obj) -> Obj:
        """``status`` with what the kind derives (its top-level state, ``Ready``), a new dict;
        ``previous`` is the status before the report (see the module docstring)."""
        ...

    def state_field(self, group: str, kind: str) -> str:
        """The top-level status field that names the object's state (``status``, ``phase``...)."""
        ...


class NoRules:
    """Kinds that derive nothing: the reports' conditions and fields are the status."""

    def aggregate(self, group: str, kind: str, status: Obj, *, now: datetime, previous: Obj) -> Obj:
        return status

    def state_field(self, group: str, kind: str) -> str:
        return "status"


_last_stamp: tuple[datetime, str] | None = None


def rfc3339(when: datetime) -> str:
    # one composition asks for the same instant once per condition it touches: remember the last
    global _last_stamp  # noqa: PLW0603 - a one-entry cache of a pure function
    last = _last_stamp
    if last is not None and last[0] == when and last[0].tzinfo is when.tzinfo:
        return last[1]
    text = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_stamp = (when, text)
    return text


@cache
def status_field_names(group: str, kind: str) -> frozenset[str] | None:
    """The top-level status fields (wire names) the kind's schema keeps, or ``None`` if unknown."""
    try:
        cls = resource_class(group, kind)
    except KeyError:
        return None
    field_info = cls.model_fields.get("status")
    if field_info is None:
        return frozenset()
    models = [a for a in (field_info.annotation, *get_args(field_info.annotation)) if _is_model(a)]
    if not models:
        return None
    return frozenset(f.alias or name for name, f in models[0].model_fields.items())


def _is_model(candidate: object) -> bool:
    return isinstance(candidate, type) and issubclass(candidate, BaseModel)


def has_status_field(group: str, kind: str, name: str) -> bool:
    """Whether the kind's status keeps ``name`` (unknown kinds: assume it does)."""
    names = status_field_names(group, kind)
    return names is None or name in names


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


@dataclass(frozen=True)
class Composer:
    """The composition with the kinds' ``rules`` (default: none, every kind derives nothing)."""

    rules: KindRules = field(default_factory=NoRules)

    def state_field(self, ref: KindRef) -> str:
        """The top-level status field that names ``ref``'s state (the runtime's own verdicts,
        ``InvalidSpec``, set it)."""
        return self.rules.state_field(ref.group, ref.kind)

    def compose(self, status: Obj | None, report: StatusReport, now: datetime) -> Obj:
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
        target = report.object
        if report.observed_generation is not None and has_status_field(
            target.group, target.kind, "observedGeneration"
        ):
            before = out.get("observedGeneration")
            newest = max(before, report.observed_generation) if isinstance(before, int) else None
            out["observedGeneration"] = newest or report.observed_generation
        return self.rules.aggregate(target.group, target.kind, out, now=now, previous=status or {})

    def is_current(self, obj: Obj, report: StatusReport) -> bool:
        """True when applying ``report`` would not change the object's status (ignoring
        timestamps)."""
        status = obj.get("status") or {}
        generation = _generation(obj)
        if from_the_future(report, generation):
            return True  # it would change nothing
        now = datetime.now(UTC)
        return _without_times(self.compose(_sane(status, generation), report, now)) == _without_times(status)

    def compose_all(self, status: Obj | None, reports: Iterable[StatusReport], now: datetime) -> Obj:
        """``reports`` applied one after another, in order (a coalesced burst, then what follows
        it)."""
        out: Obj | None = None
        for report in reports:  # compose copies what it is given and never modifies it
            out = self.compose(out if out is not None else status, report, now)
        return out if out is not None else copy.deepcopy(status or {})

    def status_patch(
        self, obj: Obj, report: StatusReport | Sequence[StatusReport], now: datetime
    ) -> Obj | None:
        """A conditional merge patch for the status subresource, or ``None`` if nothing changes.
        ``report`` may be several reports for the object, applied in order in one write."""
        change = self.status_change(obj, report, now)
        return change[1] if change is not None else None

    def status_change(
        self, obj: Obj, report: StatusReport | Sequence[StatusReport], now: datetime
    ) -> tuple[Obj, Obj] | None:
        """The composed status and the :meth:`status_patch` that writes it, or ``None`` if nothing
        changes: for a writer that also needs the new status (its audit record), composed once."""
        old = obj.get("status") or {}
        generation = _generation(obj)
        reports = (report,) if isinstance(report, StatusReport) else tuple(report)
        live = (r for r in reports if not from_the_future(r, generation))
        new = self.compose_all(_sane(old, generation), live, now)
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
