"""The objects a service creates for an AIM resource ("children": templates, Jobs, PVCs) carry the
same labels and owner references and are compared with what is in the cluster the same way, whichever
service applies them; this module is that one description.

Every child is labelled ``app.kubernetes.io/part-of: aim-engine`` (the watcher selects children by
it, see :data:`aimcore.api.kinds.CHILD_SELECTOR`) and ``app.kubernetes.io/managed-by: <controller>``
(:func:`child_labels`), and names its owner (:func:`owner_reference`) so Kubernetes collects it
with the owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aimcore.api.kinds import PART_OF_LABEL, PART_OF_VALUE, KindRef

__all__ = [
    "MANAGED_BY",
    "PART_OF_LABEL",
    "PART_OF_VALUE",
    "child_labels",
    "contains",
    "differs",
    "owned_by",
    "owner_reference",
    "without_owner",
]

MANAGED_BY = "app.kubernetes.io/managed-by"
"""Label key naming the controller that manages a child."""


def child_labels(managed_by: str) -> dict[str, str]:
    """The labels every child carries: managed by ``managed_by``, part of the AIM engine."""
    return {MANAGED_BY: managed_by, PART_OF_LABEL: PART_OF_VALUE}


def owner_reference(ref: KindRef, obj: Mapping[str, Any], *, controller: bool = True) -> dict[str, Any]:
    """The ownerReferences entry naming ``obj`` (of kind ``ref``) as owner; ``controller=False``
    for one of several owners of a shared child."""
    meta = obj["metadata"]
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def _owner_references(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [o for o in refs if isinstance(o, Mapping)]


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    """Whether one of ``obj``'s ownerReferences has ``uid``."""
    return any(o.get("uid") == uid for o in _owner_references(obj))


def controlled_by(obj: Mapping[str, Any], uid: str | None) -> bool:
    """Whether the owner with ``uid`` is ``obj``'s controller (its ownerReference says so)."""
    return bool(uid) and any(o.get("uid") == uid and o.get("controller") for o in _owner_references(obj))


def without_owner(obj: Mapping[str, Any], uid: str) -> list[dict[str, Any]]:
    """``obj``'s ownerReferences (copies) less those with ``uid``, in order."""
    return [dict(o) for o in _owner_references(obj) if o.get("uid") != uid]


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def differs(existing: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Whether applying ``body`` would change ``existing``: any spec field, label or annotation we
    set differs, or an owner we name is missing (fields we do not set are left alone by server-side
    apply, so they do not count). Annotations count since a child's behaviour may hang on one alone
    (an InferenceService's autoscaler class moves between ``none`` and ``keda`` with the same
    replica bounds)."""
    if not contains(_spec(existing), _spec(body)):
        return True
    for part in ("labels", "annotations"):
        have = (existing.get("metadata") or {}).get(part) or {}
        want = (body.get("metadata") or {}).get(part) or {}
        if any(have.get(k) != v for k, v in want.items()):
            return True
    owners = {o.get("uid") for o in _owner_references(body)}
    return not all(owned_by(existing, uid) for uid in owners if uid)


def contains(have: Any, want: Any) -> bool:
    """``want`` is a subset of ``have``: objects key-wise (server defaults may add keys), lists
    element-wise with equal length, scalars equal."""
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(contains(have.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(have) == len(want) and all(map(contains, have, want))
    return bool(have == want)
