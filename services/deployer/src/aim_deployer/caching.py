"""Whether and how an AIMService uses a template cache (``caching``/``cacheModel`` and
``status.cache``: docs/specification.md#service-caching), decided from the informer cache; the
controller applies the plan.

Modes (:func:`service_mode`): ``caching.mode`` when set, else the deprecated ``cacheModel``
tri-state (unset → Auto, true → Always, false → Never); the legacy group's boolean ``cacheModel``
means Always when true and Auto when false. Under ``AIM_BEHAVIOUR=released`` the current group's
modes are the released original's: ``Always``/``Auto`` (and unset) → Shared, ``Never`` →
Dedicated, ``cacheModel`` ignored, so there is always a cache.

- **Never**: no cache; the runtime fetches the weights itself.
- **Auto**: a template cache of the resolved template in the namespace is used when one exists
  (waited for while it fills); none → deploy without.
- **Always** and **Shared**: a Shared template cache of the template in the namespace, created when
  missing (named ``<template>-<hash of namespace>`` as the original, labelled with the service,
  owned by none; the service's finalizer removes it on delete if it never became Ready).
- **Dedicated**: the service's own template cache (``mode: Dedicated``), named from template and
  service with the service's uid in the hash (:func:`dedicated_cache_name`, as the original), owned
  by the service, so it goes with it; its model caches' names hash that name in. A Shared service
  never uses a Dedicated cache, a Dedicated one only the cache it owns.

Under ``released`` the InferenceService is mounted at ``/workspace/cache`` (seeds:
``/workspace/model-cache``), and a cache failing after its retry keeps the service waiting instead
of deploying without it (the original creates the InferenceService only once the cache is Ready).

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
claim, rather than the template cache's "progressing"). A Shared cache deleted under a running
service is ``CacheLost`` (Degraded) and a Dedicated one ``CacheCreating``, each created again at
once (a Shared one unowned), the InferenceService keeping its volumes until the new one is Ready.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aim_deployer.inference import CacheMount
from aim_deployer.model_resolution import MANAGED_BY, MANAGER, SERVICE_LABEL
from aim_deployer.service_view import ServiceView
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import GROUP_AIM, PART_OF_LABEL, PART_OF_VALUE, KindRef
from aimcore.api.sourcerules import PVC_SCHEME, pvc_parts
from aimcore.api.types import Obj
from aimcore.domain.families.base import READY_STATES, written
from aimcore.domain.families.caches import ModelCache, TemplateCache
from aimcore.domain.families.templates import Template
from aimcore.domain.naming import derived_name, label_value
from aimcore.domain.runtimeconfig import merge_env
from aimcore.runtime import Informer, condition, owned_by, owner_reference

CACHE_READY = "CacheReady"
AUTO, ALWAYS, NEVER = "Auto", "Always", "Never"
SHARED, DEDICATED = "Shared", "Dedicated"
CACHE_ROOT = "/workspace/model-cache"
RELEASED_CACHE_ROOT = "/workspace/cache"
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


def cache_root(behaviour: Behaviour) -> str:
    """Where the InferenceService mounts its caches (and ``AIM_CACHE_PATH``): the seeds'
    ``/workspace/model-cache``, the released original's ``/workspace/cache``."""
    return RELEASED_CACHE_ROOT if behaviour.released else CACHE_ROOT


def mount_path(model_id: str, root: str = CACHE_ROOT) -> str:
    """``{root}/{modelId}`` with ``..`` and empty segments dropped."""
    parts = [p for p in model_id.split("/") if p not in ("", ".", "..")]
    return posixpath.join(root, *parts)


def service_mode(service: ServiceView, behaviour: Behaviour) -> str:
    """The caching mode a service asks for, as the behaviour reads it: the seeds' (``Auto``,
    ``Always``, ``Never``, ``Shared``, ``Dedicated`` as written, ``cacheModel`` when ``caching`` is
    unset) or, for the current group under ``released``, the original's mapping (``Never`` and
    ``Dedicated`` → Dedicated, anything else, unset included → Shared; ``cacheModel`` ignored)."""
    if behaviour.released and service.ref.group == GROUP_AIM:
        return DEDICATED if service.written_caching_mode in (NEVER, DEDICATED) else SHARED
    return str(service.caching_mode)


def shared_cache_name(template: str, namespace: str) -> str:
    return derived_name([template], [namespace])


def dedicated_cache_name(template: str, service: str, identity: str) -> str:
    """A Dedicated template cache's name: template and service readable, the service's identity
    (its uid: a service deleted and made again under the same name gets a new cache) only hashed."""
    return derived_name([template, service], [identity])


def _template_field(group: str) -> str:
    return "templateName" if group == GROUP_AIM else "templateRef"


def find_cache(
    informer: Informer,
    group: str,
    namespace: str | None,
    template: Template,
    owner: ServiceView | None = None,
) -> TemplateCache | None:
    """The best Shared template cache of ``template`` in the namespace (Ready first, then the
    oldest); with ``owner`` (a Dedicated service) its own one only: Dedicated, under the name
    :func:`dedicated_cache_name` gives it, owned by the service."""
    scope = "Namespace" if template.ref.namespaced else "Cluster"
    if owner is not None:
        name = dedicated_cache_name(template.name, owner.name, str(owner.uid))
        tc = TemplateCache.get(informer, TemplateCache.kind(group), namespace, name)
        usable = tc is not None and tc.dedicated and owned_by(tc.obj, str(owner.uid)) and not tc.deleting
        return tc if usable else None
    found = [
        tc
        for tc in TemplateCache.each(informer, TemplateCache.kind(group), namespace)
        if tc.template_name == template.name
        and tc.template_scope in (None, scope)
        and not tc.dedicated
        and not tc.deleting
    ]
    found.sort(key=lambda tc: (tc.state not in READY_STATES, tc.created or "~", tc.name))
    return found[0] if found else None


def cache_body(service: ServiceView, template: Template, mode: str = SHARED) -> tuple[KindRef, Obj]:
    """The template cache a service makes (env and pull secrets copied as written): Shared (named
    for template and namespace, owned by none) or, for ``mode`` Dedicated, the service's own. Its
    env, lowest first: the template's, the template's caching env, the service's caching env (the
    download's only), the service's env."""
    ref = service.ref
    kind = TemplateCache.kind(ref.group)
    namespace = service.namespace or ""
    env = merge_env(
        merge_env(
            merge_env([written(e) for e in template.env], [written(e) for e in template.caching_env]),
            [written(e) for e in service.caching_env],
        ),
        [written(e) for e in service.env],
    )
    body_spec: Obj = {_template_field(ref.group): template.name}
    if ref.group == GROUP_AIM:
        body_spec["templateScope"] = "Namespace" if template.ref.namespaced else "Cluster"
        body_spec["mode"] = DEDICATED if mode == DEDICATED else SHARED
    if service.storage_class:
        body_spec["storageClassName"] = service.storage_class
    if service.runtime_config_name:
        body_spec["runtimeConfigName"] = service.runtime_config_name
    if env:
        body_spec["env"] = env
    if service.pull_secrets:
        body_spec["imagePullSecrets"] = [written(s) for s in service.pull_secrets]
    dedicated = mode == DEDICATED
    name = (
        dedicated_cache_name(template.name, service.name, str(service.uid))
        if dedicated
        else shared_cache_name(template.name, namespace)
    )
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": {
            SERVICE_LABEL: label_value(service.name),
            PART_OF_LABEL: PART_OF_VALUE,
            MANAGED_BY: MANAGER,
        },
    }
    if dedicated:
        meta["ownerReferences"] = [owner_reference(ref, service.obj)]
    return kind, {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, "spec": body_spec}


def _reference(tc: TemplateCache) -> Obj:
    return {
        "name": tc.name,
        "namespace": tc.resource.metadata.namespace,
        "kind": tc.ref.kind,
        "uid": tc.uid,
        "scope": "Namespace",
    }


def mounts_of(
    informer: Informer, group: str, tc: TemplateCache, root: str = CACHE_ROOT
) -> tuple[CacheMount, ...]:
    """The volumes of a Ready template cache's Ready model caches, mounted under ``root`` (the
    seeds' root takes the status's ``mountPoint``; the released original's never reads it)."""
    out: list[CacheMount] = []
    if group == GROUP_AIM:
        entries = tc.model_caches
        for key in sorted(entries):
            entry = entries[key]
            if str(entry.status or "") != "Ready":
                continue
            claim, name = entry.claim, entry.name
            if claim and name:
                listed = entry.mount_point if root == CACHE_ROOT else None
                path = listed or mount_path(entry.model or name, root)
                out.append(imported(informer, group, tc.namespace, CacheMount(name, claim, path)))
        return tuple(out)
    label = label_value(tc.name)
    for mc in sorted(ModelCache.each_in(informer, group, tc.namespace), key=lambda m: m.name):
        if mc.labels.get(TEMPLATE_CACHE_LABEL) != label or mc.state not in READY_STATES:
            continue
        if mc.claim:
            model = mc.annotations.get(MODEL_ID_ANNOTATION) or mc.name
            out.append(CacheMount(mc.name, mc.claim, mount_path(model, root)))
    return tuple(out)


def imported(informer: Informer, group: str, namespace: str | None, mount: CacheMount) -> CacheMount:
    """``mount`` as an imported (``pvc://CLAIM/PATH``) model cache is mounted: PATH of the claim,
    read-only; any other cache's unchanged."""
    mc = ModelCache.get_in(informer, group, namespace, mount.name)
    if mc is None or not mc.source_uri.startswith(PVC_SCHEME):
        return mount
    _, path = pvc_parts(mc.source_uri)
    return dataclasses.replace(mount, sub_path=path, read_only=True)


def failed_model_caches(
    informer: Informer, group: str, tc: TemplateCache, *, skip_uids: frozenset[str] = frozenset()
) -> list[str]:
    """The failed (or degraded) model caches of a template cache, by name; ``skip_uids``: ones
    already deleted, whose deletion the informer has not seen yet."""
    label = label_value(tc.name)
    listed = {e.name for e in tc.model_caches.values() if e.name}
    out = []
    for mc in ModelCache.each_in(informer, group, tc.namespace):
        mine = mc.name in listed or mc.labels.get(TEMPLATE_CACHE_LABEL) == label
        if mine and mc.state in ("Failed", "Degraded") and mc.uid not in skip_uids:
            out.append(mc.name)
    return sorted(out)


def lost_claims(
    informer: Informer, group: str, namespace: str | None, mounts: Sequence[CacheMount]
) -> list[str]:
    """The claims the InferenceService mounts whose model cache is gone (deleted, or being deleted):
    the volume stays mounted (Kubernetes keeps a claim in use), the cache that made it does not."""
    claimed = {str(mc.claim) for mc in ModelCache.each_in(informer, group, namespace) if not mc.deleting}
    return sorted({m.claim for m in mounts if m.claim not in claimed})


def retried_uids(tc: TemplateCache) -> frozenset[str]:
    text = tc.annotations.get(RETRIED_UIDS_ANNOTATION) or ""
    return frozenset(u for u in text.split(",") if u)


def _ready_message(tc: TemplateCache) -> str:
    return tc.ready_message or tc.state


def plan_cache(
    informer: Informer,
    service: ServiceView,
    template: Template,
    live_mounts: Sequence[CacheMount],
    behaviour: Behaviour = Behaviour.SEEDS,
) -> CachePlan:
    """The plan for the service's cache: none (``Never``), the template cache to use or to create
    (:func:`_without_cache`), and what the cache's state means (:class:`_Found`)."""
    mode = service_mode(service, behaviour)
    if mode == NEVER:
        return CachePlan(
            condition(CACHE_READY, True, "CachingDisabled", "caching.mode is Never: no cache is used")
        )
    live = tuple(live_mounts)
    owner = service if mode == DEDICATED else None
    tc = find_cache(informer, service.ref.group, service.namespace, template, owner)
    if tc is None:
        return _without_cache(service, template, mode, live)
    found = _Found(informer, service.ref.group, service.namespace, tc, live, behaviour)
    if tc.state in READY_STATES:
        return found.ready()
    if tc.state == "Failed":
        return found.failed()
    return found.not_ready()


LOST_MESSAGES = {
    SHARED: "Shared template cache was deleted but InferenceService still references cached storage volumes",
    DEDICATED: "Dedicated template cache is being recreated",
}
"""A Shared or Dedicated cache gone while the InferenceService mounts its volumes: the original's
words (``getCacheHealth``); it is created again at once."""


def _without_cache(
    service: ServiceView, template: Template, mode: str, live: tuple[CacheMount, ...]
) -> CachePlan:
    """No template cache of the template: ``Auto`` goes on without one (keeping the volumes a lost
    one left mounted), the other modes create it (the volumes a lost one left mounted kept
    meanwhile: a Dedicated one is ``CacheCreating``, the others ``CacheLost``)."""
    tname = template.name
    if mode == AUTO:
        if live:
            message = f"the template cache of {tname} is gone; keeping the mounted volumes"
            return CachePlan(condition(CACHE_READY, False, "CacheLost", message), live)
        message = f"no template cache for {tname} (caching.mode Auto does not create one)"
        return CachePlan(condition(CACHE_READY, True, "NoCache", message))
    kind, body = cache_body(service, template, mode)
    message = f"creating template cache {body['metadata']['name']} for {tname}"
    reason = "CacheCreating"
    if live:
        reason = "CacheCreating" if mode == DEDICATED else "CacheLost"
        message = LOST_MESSAGES.get(mode, message)
    return CachePlan(condition(CACHE_READY, False, reason, message), live, wait=not live, create=(kind, body))


@dataclass(frozen=True)
class _Found:
    """The template cache a service uses, and what its state means for the service: while it is
    not ready, the volumes mounted now (``live``) stay, and the service waits only without them."""

    informer: Informer
    group: str
    namespace: str | None
    tc: TemplateCache
    live: tuple[CacheMount, ...]
    behaviour: Behaviour = Behaviour.SEEDS

    @property
    def reference(self) -> Obj | None:
        """``status.cache.templateCacheRef`` (the legacy status has none)."""
        return _reference(self.tc) if self.group == GROUP_AIM else None

    @property
    def attempts(self) -> int:
        """Its retries so far (0 or 1), as recorded on the template cache."""
        return 1 if self.tc.annotations.get(RETRIED_ANNOTATION) else 0

    def _unready(self, reason: str, message: str, *, wait: bool, **extra: Any) -> CachePlan:
        """Not ready (``reason``): the live volumes kept; ``wait``: do not deploy without them."""
        extra.setdefault("retry_attempts", self.attempts or None)
        return CachePlan(
            condition(CACHE_READY, False, reason, message),
            self.live,
            wait=wait and not self.live,
            reference=self.reference,
            **extra,
        )

    def ready(self) -> CachePlan:
        mounts = mounts_of(self.informer, self.group, self.tc, cache_root(self.behaviour))
        message = f"template cache {self.tc.name} is ready ({len(mounts)} model cache(s) mounted)"
        attempts = self.attempts
        return CachePlan(
            condition(CACHE_READY, True, "CacheReady", message),
            mounts,
            reference=self.reference,
            retry_attempts=attempts if self.group == GROUP_AIM and attempts else None,
        )

    def failed(self) -> CachePlan:
        """The one retry (its failed model caches deleted), then waiting for it; failing again (or
        with nothing to retry), the service runs without the cache (seeds) or keeps waiting for it
        (released: no InferenceService without a Ready cache)."""
        tc, name, attempts = self.tc, self.tc.name, self.attempts
        failed = failed_model_caches(self.informer, self.group, tc, skip_uids=retried_uids(tc))
        if attempts == 0 and failed:
            message = f"template cache {name} failed; retrying once (deleting {', '.join(failed)})"
            return self._unready(
                "CacheRetrying", message, wait=True, retry=tuple(failed), retry_of=name, retry_attempts=1
            )
        if not failed and (attempts == 1 or bool(tc.model_caches)):
            # retried and not re-created yet, or its failed model caches not seen yet: wait
            why = "is being retried" if attempts else "failed"
            message = f"template cache {name} {why}: {_ready_message(tc)}"
            return self._unready("CacheRetrying" if attempts else "CacheNotReady", message, wait=True)
        retried = " after its retry" if attempts else ""
        if self.behaviour.released:
            message = f"template cache {name} failed{retried}: {_ready_message(tc)}"
            return self._unready("CacheFailed", message, wait=True)
        message = f"template cache {name} failed{retried}: {_ready_message(tc)}; running without it"
        return self._unready("CacheFailed", message, wait=False)

    def not_ready(self) -> CachePlan:
        """Filling (or degraded): waited for, unless a mounted model cache was deleted meanwhile
        (the server keeps its volume until a new one is Ready)."""
        message = f"template cache {self.tc.name} is {self.tc.state.lower()}: {_ready_message(self.tc)}"
        lost = lost_claims(self.informer, self.group, self.namespace, self.live)
        if lost:
            message = (
                f"the model cache of the mounted volume {', '.join(lost)} was deleted; serving from it "
                f"until the new one is ready ({message})"
            )
            return self._unready("CacheLost", message, wait=False)
        return self._unready("CacheNotReady", message, wait=True)
