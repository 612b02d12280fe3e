"""Spec fields that are immutable once set, checked by the service that reconciles the object:
an AIMService's ``spec.caching`` and ``spec.template`` (the deployer), a model cache's
``spec.downloadFilter`` (the cache service).

Why: the CRDs say so with the released original's CEL rules (``self == oldSelf``: "caching is
immutable", "downloadFilter is immutable"...), but an API server without CEL (the 1.20 one this
project tests against) stores the change, and a service whose cache mode or template changed under
a running InferenceService would silently switch caches or models (a cache whose filter changed,
its files). A rule about the *old* value cannot be checked by parsing the object
(docs/status.md#validation, place 2), so the service checks it: it records the values it accepted
in the annotation :data:`ANNOTATION` and refuses a later change with :data:`REASON` (``Failed``),
naming the field, the accepted value and the new one, and touches nothing until the field is set
back (or the object is made again). As with CEL transition rules, a field set for the first time,
or removed, is accepted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ANNOTATION = "aim.eai.amd.com/immutable-spec"
REASON = "ImmutableFieldChanged"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def written(obj: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """The immutable ``fields`` the object's spec sets, as stored."""
    spec = obj.get("spec") or {}
    return {f: spec[f] for f in fields if spec.get(f) is not None}


def recorded(obj: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """The values accepted before (empty when there is no record, or it does not read)."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {f: found[f] for f in fields if isinstance(found, dict) and found.get(f) is not None}


@dataclass(frozen=True)
class Check:
    """What the reconciling service does about the immutable fields of one object."""

    refused: str | None = None  # the refusal's message: a recorded field changed
    record: str | None = None  # the annotation to write (what is accepted now differs from the record)


def check(obj: Mapping[str, Any], fields: Sequence[str]) -> Check:
    """A change of a recorded field of ``fields`` is refused; otherwise what the spec sets now is
    the record."""
    before, now = recorded(obj, fields), written(obj, fields)
    changed = [f for f in fields if f in before and f in now and _canonical(before[f]) != _canonical(now[f])]
    if changed:
        parts = [
            f"spec.{f} is immutable once set (was {_canonical(before[f])}, now {_canonical(now[f])})"
            for f in changed
        ]
        message = "; ".join(parts) + ": set it back, or delete the object and create it again"
        return Check(refused=message)
    if now == before:
        return Check()
    return Check(record=_canonical(now))
