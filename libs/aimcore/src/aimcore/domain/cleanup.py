"""What the AIM controllers that create shared children (template caches, services) do when an
object carrying their finalizer is deleted (:class:`NotReadyCleanup`): the children the deleted
object created and that never became ready go with it, the ready ones stay for whoever else uses
them. The finalizer itself is the runtime's (:mod:`aimcore.runtime.finalizers`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
    """What a controller does when an object carrying ``finalizer`` (or one of its ``older`` names)
    is deleted: delete the children of ``child_kinds`` (its family's kinds in the object's API group)
    it created, found by ``creator_label`` naming it, that are not ``ready``, each with a
    ``CleanupNotReady`` decision; then remove the finalizer (every name of it the object carries).
    In a namespace being deleted nothing is deleted (the namespace takes everything)."""

    finalizer: str
    child_kinds: Callable[[str], Iterable[KindRef]]  # the family's kinds by group: TemplateCache.kinds_in
    creator_label: str  # the children's label whose value is label_value(creator's name)
    ready: Callable[[Obj], bool]
    state: Callable[[Obj], str]  # said in the decision's message
    noun: str  # "template cache": the decision's action is "delete-template-cache"
    along: str  # the message's "with ...": "the service"
    older: tuple[str, ...] = ()  # earlier names of the finalizer, honoured alike

    async def finalize(self, kube: Kube, request: Request) -> None:
        held = [f for f in (self.finalizer, *self.older) if has_finalizer(request.obj, f)]
        if not held:
            return
        if not await namespace_terminating(kube, request.namespace):
            label = label_value(request.name)
            for kind in self.child_kinds(request.ref.group):
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
        # one name at a time: a second removal against the same read fails its test and is left
        # to the next reconcile (the object's change wakes it)
        await remove_finalizer(kube, request.ref, request.obj, held[0])
