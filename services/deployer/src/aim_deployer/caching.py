"""Whether and how an AIMService uses a template cache (seed 000 ``caching``/``cacheModel`` and
``status.cache``), decided from the informer cache; the controller applies the plan.

Modes: ``caching.mode`` when set, else the deprecated ``cacheModel`` tri-state (unset → Auto,
true → Always, false → Never); the legacy group's boolean ``cacheModel`` means Always when true and
Auto when false.

- **Never**: no cache; the runtime fetches the weights itself.
- **Auto**: a template cache of the resolved template in the namespace is used when one exists
  (waited for while it fills); none → deploy without.
- **Always**: that cache, created when missing (Shared, named ``<template>-<hash of namespace>``
  as the original, labelled with the service; the service's finalizer removes it on delete if it
  never became Ready).

A Failed cache gets the single retry the seed describes: its failed model caches are deleted and
``status.cache.retryAttempts`` goes from 0 to 1; failing again degrades the service
(``CacheFailed``), which then runs without the cache rather than not at all. The retry is recorded
on the template cache (annotation ``aim.eai.amd.com/cache-retried``), not read back from the
service's status, so a reconcile that has not seen its own status write yet cannot retry twice;
``retryAttempts`` mirrors it (the legacy status has no ``cache`` field).

Volumes: every Ready model cache of a Ready template cache (current group: ``status.modelCaches``
with PVC and mount point; legacy: the model caches labelled with the template cache, mount point
from their ``aim.eai.amd.com/model-id`` annotation). A cache that disappears while the
InferenceService mounts it keeps its volumes (``CacheLost``) until a new one is Ready; so does one
whose model cache is deleted while its template cache makes a new one (``CacheLost``, naming the
claim, rather than the template cache's "progressing").
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aim_deployer.inference import CacheMount
from aim_deployer.model_resolution import MANAGED_BY, MANAGER, SERVICE_LABEL
from aim_deployer.service_view import ServiceView
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import PART_OF_LABEL, PART_OF_VALUE, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.naming import derived_name, label_value
from aimcore.domain.runtimeconfig import merge_env
from aimcore.domain.views import AIM, READY_STATES, ready_message, state_of
from aimcore.runtime.conditions import condition
from aimcore.runtime.informer import Informer

CACHE_READY = "CacheReady"
AUTO, ALWAYS, NEVER = "Auto", "Always", "Never"
CACHE_ROOT = "/workspace/model-cache"
TEMPLATE_CACHE_LABEL = "aim.eai.amd.com/template-cache.name"
MODEL_ID_ANNOTATION = "aim.eai.amd.com/model-id"
RETRIED_ANNOTATION = "aim.eai.amd.com/cache-retried"
RETRIED_UIDS_ANNOTATION = "aim.eai.amd.com/cache-retried-uids"
"""The uids of the model caches the retry deleted: until their deletion reaches the informer they
still look failed, and must not count as the retry having failed too."""


@dataclass(frozen=True)
class CachePlan:
    condition: ConditionReport
    mounts: tuple[CacheMount, ...] = ()
    wait: bool = False  # do not deploy yet (the cache is filling)
    create: tuple[KindRef, Obj] | None = None
    retry: tuple[str, ...] = ()  # failed model caches to delete (the one retry)
    retry_of: str | None = None  # the template cache they belong to (marked as retried)
    reference: Obj | None = None  # status.cache.templateCacheRef
    retry_attempts: int | None = None


def mount_path(model_id: str) -> str:
    """``/workspace/model-cache/{modelId}`` with ``..`` and empty segments dropped."""
    parts = [p for p in model_id.split("/") if p not in ("", ".", "..")]
    return posixpath.join(CACHE_ROOT, *parts)


def shared_cache_name(template: str, namespace: str) -> str:
    return derived_name([template], [namespace])


def _template_field(group: str) -> str:
    return "templateName" if group == AIM else "templateRef"


def find_cache(
    informer: Informer, group: str, namespace: str | None, template: tuple[KindRef, Obj]
) -> Obj | None:
    """The best template cache of ``template`` in the namespace: Ready first, then the oldest."""
    kind = by_kind(group, "AIMTemplateCache")
    key = _template_field(group)
    name = template[1]["metadata"]["name"]
    scope = "Namespace" if template[0].namespaced else "Cluster"
    found = [
        tc
        for tc in informer.list(kind, namespace)
        if (tc.get("spec") or {}).get(key) == name
        and (tc.get("spec") or {}).get("templateScope") in (None, scope)
        and (tc.get("spec") or {}).get("mode") != "Dedicated"
        and not tc["metadata"].get("deletionTimestamp")
    ]
    found.sort(
        key=lambda tc: (
            state_of(tc) not in READY_STATES,
            str(tc["metadata"].get("creationTimestamp") or "~"),
            tc["metadata"]["name"],
        )
    )
    return found[0] if found else None


def cache_body(service: ServiceView, template: tuple[KindRef, Obj]) -> tuple[KindRef, Obj]:
    ref = service.ref
    kind = by_kind(ref.group, "AIMTemplateCache")
    spec = service.wire_spec  # env and pull secrets are copied as written
    namespace = service.namespace or ""
    tkind, tobj = template
    tspec = tobj.get("spec") or {}
    name = tobj["metadata"]["name"]
    caching = tspec.get("caching") if isinstance(tspec.get("caching"), Mapping) else {}
    env = merge_env(
        merge_env(list(tspec.get("env") or []), list((caching or {}).get("env") or [])),
        list(spec.get("env") or []),
    )
    body_spec: Obj = {_template_field(ref.group): name}
    if ref.group == AIM:
        body_spec["templateScope"] = "Namespace" if tkind.namespaced else "Cluster"
        body_spec["mode"] = "Shared"
    if service.storage_class:
        body_spec["storageClassName"] = service.storage_class
    if service.runtime_config_name:
        body_spec["runtimeConfigName"] = service.runtime_config_name
    if env:
        body_spec["env"] = env
    if spec.get("imagePullSecrets"):
        body_spec["imagePullSecrets"] = spec["imagePullSecrets"]
    meta: Obj = {
        "name": shared_cache_name(name, namespace),
        "namespace": namespace,
        "labels": {
            SERVICE_LABEL: label_value(service.name),
            PART_OF_LABEL: PART_OF_VALUE,
            MANAGED_BY: MANAGER,
        },
    }
    return kind, {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, "spec": body_spec}


def _reference(kind: KindRef, tc: Mapping[str, Any]) -> Obj:
    meta = tc["metadata"]
    return {
        "name": meta["name"],
        "namespace": meta.get("namespace"),
        "kind": kind.kind,
        "uid": meta.get("uid"),
        "scope": "Namespace",
    }


def mounts_of(informer: Informer, group: str, tc: Mapping[str, Any]) -> tuple[CacheMount, ...]:
    namespace = tc["metadata"].get("namespace")
    out: list[CacheMount] = []
    if group == AIM:
        entries = (tc.get("status") or {}).get("modelCaches") or {}
        for key in sorted(entries):
            entry = entries[key]
            if not isinstance(entry, Mapping) or entry.get("status") != "Ready":
                continue
            claim, name = entry.get("persistentVolumeClaim"), entry.get("name")
            if claim and name:
                path = str(entry.get("mountPoint") or mount_path(str(entry.get("model") or name)))
                out.append(CacheMount(str(name), str(claim), path))
        return tuple(out)
    kind = by_kind(group, "AIMModelCache")
    label = label_value(tc["metadata"]["name"])
    for mc in sorted(informer.list(kind, namespace), key=lambda o: o["metadata"]["name"]):
        meta = mc["metadata"]
        if (meta.get("labels") or {}).get(TEMPLATE_CACHE_LABEL) != label or state_of(mc) not in READY_STATES:
            continue
        claim = (mc.get("status") or {}).get("persistentVolumeClaim")
        if claim:
            model = (meta.get("annotations") or {}).get(MODEL_ID_ANNOTATION) or meta["name"]
            out.append(CacheMount(meta["name"], str(claim), mount_path(str(model))))
    return tuple(out)


def failed_model_caches(
    informer: Informer, group: str, tc: Mapping[str, Any], *, skip_uids: frozenset[str] = frozenset()
) -> list[str]:
    """The failed (or degraded) model caches of a template cache, by name; ``skip_uids``: ones
    already deleted, whose deletion the informer has not seen yet."""
    namespace = tc["metadata"].get("namespace")
    kind = by_kind(group, "AIMModelCache")
    label = label_value(tc["metadata"]["name"])
    listed = {
        str(e.get("name"))
        for e in ((tc.get("status") or {}).get("modelCaches") or {}).values()
        if isinstance(e, Mapping) and e.get("name")
    }
    out = []
    for mc in informer.list(kind, namespace):
        meta = mc["metadata"]
        mine = meta["name"] in listed or (meta.get("labels") or {}).get(TEMPLATE_CACHE_LABEL) == label
        if mine and state_of(mc) in ("Failed", "Degraded") and meta.get("uid") not in skip_uids:
            out.append(meta["name"])
    return sorted(out)


def lost_claims(
    informer: Informer, group: str, namespace: str | None, mounts: Sequence[CacheMount]
) -> list[str]:
    """The claims the InferenceService mounts whose model cache is gone (deleted, or being deleted):
    the volume stays mounted (Kubernetes keeps a claim in use), the cache that made it does not."""
    kind = by_kind(group, "AIMModelCache")
    claimed = {
        str((mc.get("status") or {}).get("persistentVolumeClaim"))
        for mc in informer.list(kind, namespace)
        if not mc["metadata"].get("deletionTimestamp")
    }
    return sorted({m.claim for m in mounts if m.claim not in claimed})


def retried_uids(tc: Mapping[str, Any]) -> frozenset[str]:
    text = str((tc["metadata"].get("annotations") or {}).get(RETRIED_UIDS_ANNOTATION) or "")
    return frozenset(u for u in text.split(",") if u)


def _ready_message(obj: Mapping[str, Any]) -> str:
    return ready_message(obj) or state_of(obj)


def plan_cache(
    informer: Informer,
    service: ServiceView,
    template: tuple[KindRef, Obj],
    live_mounts: Sequence[CacheMount],
) -> CachePlan:
    ref, namespace = service.ref, service.namespace
    mode = service.caching_mode
    if mode == NEVER:
        return CachePlan(
            condition(CACHE_READY, True, "CachingDisabled", "caching.mode is Never: no cache is used")
        )
    tc = find_cache(informer, ref.group, namespace, template)
    tname = template[1]["metadata"]["name"]
    if tc is None:
        if mode == AUTO:
            if live_mounts:
                message = f"the template cache of {tname} is gone; keeping the mounted volumes"
                return CachePlan(condition(CACHE_READY, False, "CacheLost", message), tuple(live_mounts))
            message = f"no template cache for {tname} (caching.mode Auto does not create one)"
            return CachePlan(condition(CACHE_READY, True, "NoCache", message))
        kind, body = cache_body(service, template)
        reason = "CacheLost" if live_mounts else "CacheCreating"
        message = f"creating template cache {body['metadata']['name']} for {tname}"
        return CachePlan(
            condition(CACHE_READY, False, reason, message),
            tuple(live_mounts),
            wait=not live_mounts,
            create=(kind, body),
        )
    kind = by_kind(ref.group, "AIMTemplateCache")
    reference = _reference(kind, tc) if ref.group == AIM else None
    name = tc["metadata"]["name"]
    attempts = 1 if (tc["metadata"].get("annotations") or {}).get(RETRIED_ANNOTATION) else 0
    state = state_of(tc)
    if state in READY_STATES:
        mounts = mounts_of(informer, ref.group, tc)
        message = f"template cache {name} is ready ({len(mounts)} model cache(s) mounted)"
        return CachePlan(
            condition(CACHE_READY, True, "CacheReady", message),
            mounts,
            reference=reference,
            retry_attempts=attempts if ref.group == AIM and attempts else None,
        )
    if state == "Failed":
        failed = failed_model_caches(informer, ref.group, tc, skip_uids=retried_uids(tc))
        listed = bool((tc.get("status") or {}).get("modelCaches"))
        if attempts == 0 and failed:
            message = f"template cache {name} failed; retrying once (deleting {', '.join(failed)})"
            return CachePlan(
                condition(CACHE_READY, False, "CacheRetrying", message),
                tuple(live_mounts),
                wait=not live_mounts,
                retry=tuple(failed),
                retry_of=name,
                reference=reference,
                retry_attempts=1,
            )
        if not failed and (attempts == 1 or listed):
            # retried and not re-created yet, or its failed model caches not seen yet: wait
            why = "is being retried" if attempts else "failed"
            message = f"template cache {name} {why}: {_ready_message(tc)}"
            return CachePlan(
                condition(CACHE_READY, False, "CacheRetrying" if attempts else "CacheNotReady", message),
                tuple(live_mounts),
                wait=not live_mounts,
                reference=reference,
                retry_attempts=attempts or None,
            )
        retried = " after its retry" if attempts else ""
        message = f"template cache {name} failed{retried}: {_ready_message(tc)}; running without it"
        return CachePlan(
            condition(CACHE_READY, False, "CacheFailed", message),
            tuple(live_mounts),
            reference=reference,
            retry_attempts=attempts or None,
        )
    message = f"template cache {name} is {state.lower()}: {_ready_message(tc)}"
    lost = lost_claims(informer, ref.group, namespace, live_mounts)
    if lost:  # a mounted model cache was deleted: the server keeps its volume until a new one is Ready
        message = (
            f"the model cache of the mounted volume {', '.join(lost)} was deleted; serving from it "
            f"until the new one is ready ({message})"
        )
        return CachePlan(
            condition(CACHE_READY, False, "CacheLost", message),
            tuple(live_mounts),
            reference=reference,
            retry_attempts=attempts or None,
        )
    return CachePlan(
        condition(CACHE_READY, False, "CacheNotReady", message),
        tuple(live_mounts),
        wait=not live_mounts,
        reference=reference,
        retry_attempts=attempts or None,
    )
