"""Finalizers, added and removed with guarded JSON patches, and the namespace check that keeps them
from blocking namespace deletion. Shared by every controller that cleans up on delete (template
caches, services), so each does it the same safe way: the patch tests the object's uid (a
re-created object of the same name is never touched) and the finalizer's index (a concurrent change
makes the patch fail instead of removing the wrong entry).

The cleanup those controllers run on delete is the same too (:class:`NotReadyCleanup`): the
children the deleted object created and that never became ready go with it, the ready ones stay
for whoever else uses them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.kinds import NAMESPACE, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.naming import label_value
from aimcore.runtime.kube import ApiException, Kube
from aimcore.runtime.reconciler import Request

CLEANUP_NOT_READY = "CleanupNotReady"


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
    """Whether ``namespace`` is being deleted (or already gone): cleanup is skipped then, so a
    finalizer never blocks namespace termination."""
    if not namespace:
        return False
    ns = await kube.get(NAMESPACE, None, namespace)
    return ns is None or bool(ns["metadata"].get("deletionTimestamp"))


@dataclass(frozen=True)
class NotReadyCleanup:
    """What a controller does when an object carrying ``finalizer`` is deleted: delete the children
    of ``child_kind`` (the twin in the object's API group) it created, found by ``creator_label``
    naming it, that are not ``ready``, each with a ``CleanupNotReady`` decision; then remove the
    finalizer. In a namespace being deleted nothing is deleted (the namespace takes everything)."""

    finalizer: str
    child_kind: str  # "AIMTemplateCache"
    creator_label: str  # the children's label whose value is label_value(creator's name)
    ready: Callable[[Obj], bool]
    state: Callable[[Obj], str]  # said in the decision's message
    noun: str  # "template cache": the decision's action is "delete-template-cache"
    along: str  # the message's "with ...": "the service"

    async def finalize(self, kube: Kube, request: Request) -> None:
        if not has_finalizer(request.obj, self.finalizer):
            return
        if not await namespace_terminating(kube, request.namespace):
            kind = by_kind(request.ref.group, self.child_kind)
            label = label_value(request.name)
            for child in request.informer.list(kind, request.namespace):
                labels = child["metadata"].get("labels") or {}
                if labels.get(self.creator_label) != label or self.ready(child):
                    continue
                name = child["metadata"]["name"]
                await kube.delete(kind, request.namespace, name)
                await request.reporter.decide(
                    request.ref,
                    request.obj,
                    "delete-" + self.noun.replace(" ", "-"),
                    CLEANUP_NOT_READY,
                    f"deleted {self.noun} {name} ({self.state(child)}) with {self.along}",
                )
        await remove_finalizer(kube, request.ref, request.obj, self.finalizer)
