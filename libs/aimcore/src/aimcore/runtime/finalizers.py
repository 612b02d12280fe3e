"""Finalizers, added and removed with guarded JSON patches, and the namespace check that keeps them
from blocking namespace deletion. Shared by every controller that cleans up on delete (template
caches, services), so each does it the same safe way: the patch tests the object's uid (a
re-created object of the same name is never touched) and the finalizer's index (a concurrent change
makes the patch fail instead of removing the wrong entry). What the AIM controllers clean up on
delete is :mod:`aimcore.domain.cleanup`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aimcore.api.kinds import NAMESPACE, KindRef
from aimcore.api.types import Obj
from aimcore.runtime.kube import ApiException, Kube


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


async def add_finalizer(kube: Kube, ref: KindRef, obj: Mapping[str, Any], finalizer: str) -> None:
    meta = obj["metadata"]
    ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": meta["uid"]}]
    if meta.get("finalizers"):
        ops.append({"op": "add", "path": "/metadata/finalizers/-", "value": finalizer})
    else:
        ops.append({"op": "add", "path": "/metadata/finalizers", "value": [finalizer]})
    await kube.patch_json(ref, meta.get("namespace"), meta["name"], ops)


async def remove_finalizer(kube: Kube, ref: KindRef, obj: Mapping[str, Any], finalizer: str) -> None:
    """Remove ``finalizer``; an object already gone or changed meanwhile is left to the next
    reconcile (it sees the new state)."""
    meta = obj["metadata"]
    finalizers = list(meta.get("finalizers") or [])
    if finalizer not in finalizers:
        return
    index = finalizers.index(finalizer)
    try:
        await kube.patch_json(
            ref,
            meta.get("namespace"),
            meta["name"],
            [
                {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizer},
                {"op": "remove", "path": f"/metadata/finalizers/{index}"},
            ],
        )
    except ApiException as exc:
        if exc.status not in (404, 409, 422):
            raise


async def namespace_terminating(kube: Kube, namespace: str | None) -> bool:
    """Whether ``namespace`` is being deleted (a deletionTimestamp), already gone (NotFound) or
    unreadable (Forbidden, as the released original assumes: a namespace torn down with its role
    bindings): cleanup is skipped then and the finalizer dropped at once, so no finalizer of the
    operator ever holds a namespace Terminating. Any other error is raised (the reconcile retries)."""
    if not namespace:
        return False
    try:
        ns = await kube.get(NAMESPACE, None, namespace)
    except ApiException as exc:
        if exc.status == 403:
            return True
        raise
    return ns is None or bool(ns["metadata"].get("deletionTimestamp"))
