"""Children several services share (a custom model, a derived template): each service using one
is one of its owners, so Kubernetes collects it with its last user and never before. A service
joins a shared child it found (:func:`co_own`) and leaves the custom models it no longer runs
(:func:`release_custom_models`); both write owner references with a JSON patch that tests what
it changes, so a child changed meanwhile is left for the next reconcile to look at again.
"""

from __future__ import annotations

from typing import Any

from aim_deployer.model_resolution import CUSTOM_LABEL
from aim_deployer.service_view import AnyService
from aimcore.api.types import Obj
from aimcore.domain.families.base import Object
from aimcore.domain.families.models import Model
from aimcore.runtime import ApiException, Kube, Request, owner_reference

__all__ = ["co_own", "release_custom_models"]

_CHANGED_MEANWHILE = (404, 409, 422)


async def co_own(kube: Kube, request: Request[AnyService], child: Object[Any]) -> None:
    """Make the request's service one more owner of a shared ``child``: it is garbage-collected
    with its last user."""
    owner = owner_reference(request.ref, request.obj, controller=False)
    path = "/metadata/ownerReferences"
    ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": child.uid}]
    if child.resource.metadata.owner_references:
        ops.append({"op": "add", "path": f"{path}/-", "value": owner})
    else:
        ops.append({"op": "add", "path": path, "value": [owner]})
    try:
        await kube.patch_json(child.ref, child.namespace, child.name, ops)
    except ApiException as exc:
        if exc.status not in _CHANGED_MEANWHILE:
            raise


async def release_custom_models(kube: Kube, request: Request[AnyService], keep: Model) -> None:
    """Stop co-owning the custom models the service no longer runs: its request changed (new env,
    hardware...), or it shared a model made for a different request before custom models were
    told apart by their whole spec. Called once the InferenceService is built from ``keep``; a
    model left without owners is deleted (with its templates), one still used by others only
    loses this owner reference."""
    uid = request.resource.metadata.uid
    kind = Model.kind(request.ref.group)
    for model in Model.each(request.informer, kind, request.namespace):
        owners = model.resource.metadata.owner_references or []
        index = next((i for i, o in enumerate(owners) if o.uid == uid), None)
        if index is None or model.uid == keep.uid or model.deleting:
            continue
        if model.labels.get(CUSTOM_LABEL) != "true":
            continue
        path = f"/metadata/ownerReferences/{index}"
        ops: list[Obj] = [
            {"op": "test", "path": f"{path}/uid", "value": uid},
            {"op": "remove", "path": path},
        ]
        try:
            if len(owners) == 1:
                await kube.delete(kind, request.namespace, model.name)
            else:
                await kube.patch_json(kind, request.namespace, model.name, ops)
        except ApiException as exc:
            if exc.status not in _CHANGED_MEANWHILE:
                raise
            continue  # changed meanwhile: the next reconcile looks again
        await request.decide(
            "release-model",
            "ModelReleased",
            f"custom AIMModel {model.name} is no longer used by this service"
            + (" and was deleted" if len(owners) == 1 else ""),
        )
