"""An update of a running InferenceService never drops a volume it mounts.

Why it exists: the deployer applies the InferenceService with server-side apply, which removes
from the object what an earlier apply set and this one leaves out. A body built while a cache is
briefly unlisted (its template cache re-resolving, a model cache being re-made, the caching step
answering differently) would take the cache volume off the running predictor and restart its pods
without the weights. The released original (``preserveExistingStorageVolumes``,
``internal/aimservice/kserve.go``) copies the live object's volumes and mounts onto every update;
so does :func:`keep_live_volumes`, with one refinement: a live mount whose path the new body
already mounts (a replacement cache at the same place) is not copied, since a container may mount
a path only once; its volume goes with it.

Pure: it reads the two dicts and returns a new body.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from aim_deployer.inference import CONTAINER_NAME
from aimcore.api.types import Obj

__all__ = ["keep_live_volumes"]


def _predictor(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((obj.get("spec") or {}).get("predictor")) or {}


def _container(predictor: Mapping[str, Any]) -> Mapping[str, Any] | None:
    containers = [c for c in predictor.get("containers") or [] if isinstance(c, Mapping)]
    named = [c for c in containers if c.get("name") == CONTAINER_NAME]
    found = named or containers
    return found[0] if found else None


def keep_live_volumes(body: Obj, live: Mapping[str, Any] | None) -> Obj:
    """``body`` with the volumes and inference-container mounts of ``live`` (the InferenceService in
    the cluster) that it lacks, by name, after its own; a live mount at a path ``body`` already
    mounts is left out with its volume. ``body`` as it is when nothing runs yet."""
    if not live:
        return body
    have = _predictor(live)
    have_container = _container(have)
    out = copy.deepcopy(body)
    predictor = _predictor(out)
    container = _container(predictor)
    if have_container is None or not isinstance(container, dict) or not isinstance(predictor, dict):
        return out
    mounts: list[Obj] = container.setdefault("volumeMounts", [])
    mount_names = {m.get("name") for m in mounts}
    paths = {m.get("mountPath") for m in mounts}
    replaced: set[Any] = set()
    for mount in have_container.get("volumeMounts") or []:
        name = mount.get("name")
        if name in mount_names:
            continue
        if mount.get("mountPath") in paths:
            replaced.add(name)
            continue
        mounts.append(copy.deepcopy(dict(mount)))
        mount_names.add(name)
        paths.add(mount.get("mountPath"))
    volumes: list[Obj] = predictor.setdefault("volumes", [])
    volume_names = {v.get("name") for v in volumes}
    for volume in have.get("volumes") or []:
        name = volume.get("name")
        if name not in volume_names and name not in replaced:
            volumes.append(copy.deepcopy(dict(volume)))
            volume_names.add(name)
    return out
