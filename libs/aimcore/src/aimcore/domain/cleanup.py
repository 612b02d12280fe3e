"""What the AIM controllers that create shared children (template caches, services) do when an
object carrying their finalizer is deleted (:class:`NotReadyCleanup`): the children the deleted
object created and that never became ready go with it, the ready ones stay for whoever else uses
them. The finalizer itself is the runtime's (:mod:`aimcore.runtime.finalizers`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.domain.naming import label_value
from aimcore.runtime.finalizers import has_finalizer, namespace_terminating, remove_finalizer
from aimcore.runtime.kube import Kube
from aimcore.runtime.request import Request

CLEANUP_NOT_READY = "CleanupNotReady"


@dataclass(frozen=True)
class NotReadyCleanup:
    """What a controller does when an object carrying ``finalizer`` is deleted: delete the children
    of ``child_kind`` (its family's kind in the object's API group) it created, found by ``creator_label``
    naming it, that are not ``ready``, each with a ``CleanupNotReady`` decision; then remove the
    finalizer. In a namespace being deleted nothing is deleted (the namespace takes everything)."""

    finalizer: str
    child_kind: Callable[[str], KindRef]  # the children's family's kind by group: TemplateCache.kind
    creator_label: str  # the children's label whose value is label_value(creator's name)
    ready: Callable[[Obj], bool]
    state: Callable[[Obj], str]  # said in the decision's message
    noun: str  # "template cache": the decision's action is "delete-template-cache"
    along: str  # the message's "with ...": "the service"

    async def finalize(self, kube: Kube, request: Request) -> None:
        if not has_finalizer(request.obj, self.finalizer):
            return
        if not await namespace_terminating(kube, request.namespace):
            kind = self.child_kind(request.ref.group)
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
