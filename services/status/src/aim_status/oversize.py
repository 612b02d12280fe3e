"""A status the API server cannot store still says why (issue 24, defect 4).

An object's status lives in the same etcd entry as its spec, and etcd refuses requests over
1.5 MiB by default ("etcdserver: request is too large"; the API server's gRPC client refuses still
larger ones, and bodies over 3 MiB are ``413``). A large spec can therefore leave no room for a
status that repeats part of it: discovery copies ``spec.imageMetadata`` into
``status.imageMetadata`` (as the original does), so an AIMModel of about 0.9 MB doubles past the
limit. Before, every such write failed until ``max_deliver`` and the user saw no condition at all.

When the API server refuses a status write for its size, the status is written without its largest
fields (largest first, each over :data:`SMALL`), with a condition saying which and why::

    StatusComplete=False  reason StatusTooLarge
    "status.imageMetadata (921,654 bytes) is left out: with it the object would be too large for
     the API server (etcdserver: request is too large) ..."

``StatusComplete`` is no component condition (its type does not end in ``Ready``), so the object's
state is still derived from what its services report. The fields left out are remembered for the
object's generation, so later reports do not send a write that is known to fail (no retry storm);
a new generation tries the full status again, and a status written whole drops the condition.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from datetime import UTC, datetime

from aimcore.api.types import Obj
from aimcore.runtime import ApiException, describe_error
from aimcore.runtime.composer import rfc3339

CONDITION = "StatusComplete"
REASON = "StatusTooLarge"
SMALL = 1024
"""Fields this small are never left out: they are not what makes an object too large."""
MAX_DROPS = 4
REMEMBERED = 1024

_TOO_LARGE = ("request is too large", "larger than max", "request entity too large")


def too_large(exc: ApiException) -> bool:
    """True when the API server refused a write for the size of the object it would store."""
    if exc.status == 413:
        return True
    return any(marker in describe_error(exc).lower() for marker in _TOO_LARGE)


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str))


def _without_condition(status: Obj) -> Obj:
    conditions = status.get("conditions")
    if not isinstance(conditions, list) or not any(_is_ours(c) for c in conditions):
        return status
    return {**status, "conditions": [c for c in conditions if not _is_ours(c)]}


def _is_ours(condition: object) -> bool:
    return isinstance(condition, dict) and condition.get("type") == CONDITION


class Oversize:
    """What was left out of which object's status, and the statuses to write instead."""

    def __init__(self) -> None:
        # (uid, generation) -> the fields left out (with their sizes) and the API server's refusal
        self._left_out: OrderedDict[tuple[str, int | None], tuple[dict[str, int], str]] = OrderedDict()

    @staticmethod
    def _key(obj: Obj) -> tuple[str, int | None]:
        meta = obj.get("metadata") or {}
        generation = meta.get("generation")
        return str(meta.get("uid", "")), generation if isinstance(generation, int) else None

    def known(self, obj: Obj, new: Obj) -> Obj:
        """``new`` as it can be written: without the fields left out of this generation before
        (with the condition), or, when nothing is left out, without a condition an earlier
        generation needed."""
        known = self._left_out.get(self._key(obj))
        if known is None:
            return _without_condition(new)
        left_out, why = known
        fitted = {k: v for k, v in new.items() if k not in left_out}
        return self._with_condition(obj, fitted, left_out, why)

    def shrink(self, obj: Obj, new: Obj, exc: ApiException) -> Obj | None:
        """``new`` without its largest field (and the condition saying so) after the API server
        refused it for its size; ``None`` if nothing large is left to leave out."""
        key = self._key(obj)
        left_out, _ = self._left_out.setdefault(key, ({}, ""))
        why = describe_error(exc)
        self._left_out[key] = (left_out, why)
        self._left_out.move_to_end(key)
        while len(self._left_out) > REMEMBERED:
            self._left_out.popitem(last=False)
        candidates = {
            k: _size(v)
            for k, v in new.items()
            if k not in ("conditions", "status", "phase") and k not in left_out
        }
        large = {k: n for k, n in candidates.items() if n > SMALL}
        if not large or len(left_out) >= MAX_DROPS:
            return None
        field = max(large, key=lambda k: large[k])
        left_out[field] = large[field]
        fitted = {k: v for k, v in new.items() if k not in left_out}
        return self._with_condition(obj, fitted, left_out, why)

    @staticmethod
    def _with_condition(obj: Obj, status: Obj, left_out: dict[str, int], why: str) -> Obj:
        fields = ", ".join(f"status.{k} ({n:,} bytes)" for k, n in left_out.items())
        verb = "is" if len(left_out) == 1 else "are"
        message = (
            f"{fields} {verb} left out: with it the object (a spec of {_size(obj.get('spec')):,} bytes) "
            f"would be too large for the API server ({why}). The rest of the status is written; a "
            "smaller spec gets the full status again."
        )
        generation = (obj.get("metadata") or {}).get("generation")
        old = next((c for c in (obj.get("status") or {}).get("conditions") or [] if _is_ours(c)), None)
        condition: Obj = {"type": CONDITION, "status": "False", "reason": REASON, "message": message}
        if isinstance(generation, int):
            condition["observedGeneration"] = generation
        same = isinstance(old, dict) and old.get("status") == "False" and old.get("lastTransitionTime")
        condition["lastTransitionTime"] = (
            old["lastTransitionTime"] if same and old else rfc3339(datetime.now(UTC))
        )
        conditions = [c for c in status.get("conditions") or [] if not _is_ours(c)]
        return {**status, "conditions": [*conditions, condition]}
