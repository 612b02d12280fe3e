"""The template-cache reconciler (AIMTemplateCache, both API groups): the model caches one template
needs, reused where a compatible one exists.

One reconcile:

1. A finalizer (``aim.eai.amd.com/artifactcleanup``, the original's name; its older name
   ``aim.eai.amd.com/model-cache-cleanup`` is honoured alike) is added; when the
   template cache is deleted, the model caches it created that are not Ready are deleted (a Ready one
   is kept for whoever else uses it) and the finalizer removed. A terminating namespace is never
   blocked.
2. Runtime config (``RuntimeConfigReady``).
3. The template (``ServiceTemplateReady``): ``templateScope`` Namespace → the AIMServiceTemplate in
   the namespace, Cluster → the AIMClusterServiceTemplate, unset → namespace first, then cluster
   (legacy ``templateRef``: namespace first). Missing (or of the wrong scope) → ``ReferenceNotFound``
   and ``ConfigValid=False`` (Failed, as in the original, the message naming what was looked for).
   A template that is not Ready → ``TemplateNotReady``, its state named in the message: a Failed
   template fails the cache, a NotAvailable one makes it NotAvailable, one still in progress keeps
   it waiting (Pending). ``status.resolvedTemplateKind`` records the
   kind found (the original declares it but never writes it).
4. One model cache per model source (``spec.modelSources`` when set, else the template's):
   the best compatible cache in the namespace (same ``sourceUri``, storage class unset here or
   equal) is reused, respecting the mode:

   - **Shared** (default): caches without owner references are preferred; if only owned ones
     exist, the best is *promoted* (its owner references removed) so it outlives its former owner,
     as the seed describes (under ``AIM_BEHAVIOUR=released`` owned ones are ignored, as the
     released original does: a Shared cache makes its own). New caches get no owner reference.
   - **Dedicated**: only caches this template cache owns, or the one it created and a Shared cache
     has since promoted (never re-owned, so the two never fight). New caches are owned, so garbage
     collection removes them with the template cache.

   Caches are created with the original's deterministic names, so Shared caches dedupe per
   namespace. ``ModelCachesReady`` is the worst cache's state; ``status.modelCaches`` lists each
   cache with its status, PVC and mount point (``/workspace/model-cache/{modelId}``).

   A model cache of either kind (``AIMModelCache``, ``AIMArtifact``) is found and used; a new one
   is an ``AIMModelCache`` (the seeds), or under ``AIM_BEHAVIOUR=released`` an ``AIMArtifact``. The
   released names of the status are written beside the seeds': ``status.artifacts`` (the same
   entries) and ``ArtifactsReady`` (the same status and reason as ``ModelCachesReady``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, cast

from aim_cache import plan
from aim_cache.quota import QUOTA_READY
from aimcore.api.backoff import jitter_key
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.crds.base import Resource
from aimcore.api.kinds import (
    GROUP_LEGACY,
    PART_OF_LABEL,
    PART_OF_VALUE,
    TEMPLATE_CACHE_KINDS,
    KindRef,
)
from aimcore.api.types import Obj
from aimcore.domain.cleanup import NotReadyCleanup
from aimcore.domain.families.base import is_ready, state_of
from aimcore.domain.families.caches import AnyTemplateCache, CacheSource, ModelCache, TemplateCache
from aimcore.domain.families.templates import Template
from aimcore.domain.families.templates import template_kinds as kinds_of
from aimcore.domain.jobs import JOB_RETRY
from aimcore.domain.naming import label_value
from aimcore.domain.runtimeconfig import merge_env, resolution_conditions
from aimcore.domain.status.rules import dependency_message
from aimcore.runtime import (
    Children,
    Kube,
    Refusal,
    Request,
    ResourceIndexer,
    Result,
    add_finalizer,
    has_finalizer,
    owner_reference,
    refused_condition,
    resource_indexer,
)
from aimcore.runtime import condition as cond

FINALIZER = "aim.eai.amd.com/artifactcleanup"
OLDER_FINALIZER = "aim.eai.amd.com/model-cache-cleanup"
MODEL_ID_ANNOTATION = "aim.eai.amd.com/model-id"
TEMPLATE_READY = "ServiceTemplateReady"
TEMPLATE_NOT_READY = "TemplateNotReady"
REFERENCE_NOT_FOUND = "ReferenceNotFound"
CONFIG_VALID = "ConfigValid"
CACHES_READY = "ModelCachesReady"
ARTIFACTS_READY = "ArtifactsReady"  # the released name of ModelCachesReady, reported beside it
LEGACY = GROUP_LEGACY

_RANK = {
    "Ready": 6,
    "Available": 6,
    "Progressing": 5,
    "Pending": 4,
    "Degraded": 3,
    "NotAvailable": 2,
    "Failed": 1,
}


def template_kinds(group: str, scope: str | None) -> list[KindRef]:
    """Where a template cache looks for its template: ``templateScope`` Namespace or Cluster, else
    the namespace's first, then the cluster's."""
    namespaced, cluster = kinds_of(group)
    if scope == "Namespace":
        return [namespaced]
    if scope == "Cluster":
        return [cluster]
    return [namespaced, cluster]


# on delete: the model caches this template cache created that never became ready go with it
CLEANUP = NotReadyCleanup(
    FINALIZER,
    ModelCache.kinds_in,
    plan.LABEL_TEMPLATE_CACHE,
    ready=is_ready,
    state=state_of,
    noun="model cache",
    along="its template cache",
    older=(OLDER_FINALIZER,),
)


def best_of(caches: Iterable[ModelCache]) -> ModelCache | None:
    """The best cache: by status (Ready first), then the oldest, then by name."""

    def key(cache: ModelCache) -> tuple[int, str, str]:
        return (-_RANK.get(cache.state, 0), cache.created or "~", cache.name)

    return min(caches, key=key, default=None)


def model_key(source: CacheSource, index: int) -> str:
    return source.name or source.model_id or f"source-{index}"


def caches_condition(caches: Sequence[tuple[str, ModelCache | None]]) -> ConditionReport:
    """``ModelCachesReady`` from each source's cache (``None``: just created)."""
    if not caches:
        return cond(CACHES_READY, True, "NoCaches", "the template has no model sources to cache")
    if all(c is not None and c.ready for _, c in caches):
        return cond(CACHES_READY, True, "AllCachesReady", f"{len(caches)} model cache(s) ready")
    worst = min(
        ((k, c) for k, c in caches if c is not None),
        key=lambda kc: _RANK.get(kc[1].state, 0),
        default=None,
    )
    if worst is not None and worst[1].state in ("Failed", "Degraded", "NotAvailable"):
        cache = worst[1]
        return cond(
            CACHES_READY,
            False,
            cache.ready_reason or "CachesNotReady",
            f"model cache {cache.name}: {cache.ready_message or cache.state}",
        )
    if any(c is None or not c.conditions for _, c in caches):
        return cond(CACHES_READY, False, "CreatingCaches", "creating model caches")
    # a cache kept from its volume by a storage quota says why, with its figures, up to the service
    for _, c in caches:
        room = c.condition(QUOTA_READY) if c is not None else None
        if c is not None and room is not None and room.status == "False":
            return cond(CACHES_READY, False, room.reason, f"model cache {c.name}: {room.message}")
    waiting = [f"{c.name} ({c.state})" for _, c in caches if c is not None and not c.ready]
    return cond(CACHES_READY, False, "CachesNotReady", "waiting for " + ", ".join(waiting))


def released_condition(said: ConditionReport) -> ConditionReport:
    """``ArtifactsReady``: the released name of ``ModelCachesReady``, with its status and reason."""
    return said.model_copy(update={"type": ARTIFACTS_READY})


class RefusedCache(NamedTuple):
    """A model cache the API server refused to create: the condition saying so, and whether the
    refusal is about permissions (a quota, RBAC: retried) rather than the body (not sent again)."""

    condition: ConditionReport
    forbidden: bool

    @staticmethod
    def of(kind: KindRef, body: Obj, found: Refusal) -> RefusedCache:
        said = refused_condition(CACHES_READY, "ModelCache", kind, body, found, update=False)
        return RefusedCache(said, found.forbidden)


class TemplateCacheReconciler:
    def __init__(
        self, kube: Kube, download_image: str | None = None, behaviour: Behaviour = Behaviour.SEEDS
    ) -> None:
        self.kube = kube
        self.download_image = download_image  # AIM_CACHE_DOWNLOAD_IMAGE
        # AIM_BEHAVIOUR: which model cache kind it creates, whether a Shared cache promotes an owned one
        self.behaviour = behaviour
        self.children = Children(kube)  # writes the model caches; keeps those refused

    async def reconcile(self, request: Request[AnyTemplateCache]) -> Result | None:
        obj = request.obj
        tc = TemplateCache(request.ref, obj, request.resource)
        if tc.deleting:
            await CLEANUP.finalize(self.kube, request)
            return None
        if not has_finalizer(obj, FINALIZER):
            await add_finalizer(self.kube, request.ref, obj, FINALIZER)
        fields: dict[str, Any] = {}
        config, conditions = resolution_conditions(
            request.informer.get,
            request.ref.group,
            request.namespace,
            {"runtimeConfigName": tc.runtime_config_name},
        )
        if config is not None and request.ref.group != LEGACY:
            fields["resolvedRuntimeConfig"] = config.reference()
        if config is None:
            await request.reporter.report(request.ref, obj, conditions, {})
            return None
        name = tc.template_name
        template = self._template(request, tc)
        if template is None:
            kinds = template_kinds(request.ref.group, tc.template_scope)
            where = " or ".join(
                k.kind + (f" in namespace {request.namespace}" if k.namespaced else "") for k in kinds
            )
            # the original: every missing upstream object is ReferenceNotFound, ConfigValid=False
            message = f"template not found: no {where} named {name!r}"
            conditions.append(cond(TEMPLATE_READY, False, REFERENCE_NOT_FOUND, message))
            conditions.append(cond(CONFIG_VALID, False, REFERENCE_NOT_FOUND, message))
            fields["resolvedTemplateKind"] = None
            if await request.reporter.report(request.ref, obj, conditions, fields):
                await request.reporter.decide(
                    request.ref, obj, "resolve-template", REFERENCE_NOT_FOUND, message
                )
            return None
        fields["resolvedTemplateKind"] = template.ref.kind
        sources, waiting = self._sources(tc, template, conditions)
        if waiting:
            await request.reporter.report(request.ref, obj, conditions, fields)
            return None
        found_caches = [
            await self._cache_for(request, tc, template, source, i) for i, source in enumerate(sources)
        ]
        refused = next((c for c in found_caches if isinstance(c, RefusedCache)), None)
        caches = [None if isinstance(c, RefusedCache) else c for c in found_caches]
        keyed = [(model_key(s, i), c) for i, (s, c) in enumerate(zip(sources, caches, strict=True))]
        said = refused.condition if refused else caches_condition(keyed)
        conditions.append(said)
        if request.ref.group != LEGACY:
            conditions.append(released_condition(said))
            fields["modelCaches"] = {
                key: self._resolved(c, s, refused=isinstance(f, RefusedCache))
                for (key, c), s, f in zip(keyed, sources, found_caches, strict=True)
            }
            fields["artifacts"] = fields["modelCaches"]
        await request.reporter.report(request.ref, obj, conditions, fields)
        if refused is not None and refused.forbidden:  # permissions (a quota) may change: retry
            return Result(requeue_after=JOB_RETRY.delay(1, jitter=jitter_key(obj)))
        return None

    # -- template and sources --------------------------------------------------------------------

    @staticmethod
    def _template(request: Request, tc: TemplateCache) -> Template | None:
        for kind in template_kinds(request.ref.group, tc.template_scope):
            found = Template.get(request.informer, kind, request.namespace, tc.template_name)
            if found is not None:
                return found
        return None

    @staticmethod
    def _sources(
        tc: TemplateCache, template: Template, conditions: list[ConditionReport]
    ) -> tuple[list[CacheSource], bool]:
        """The sources to cache, and whether to wait for the template instead."""
        tname = template.name
        explicit = tc.model_sources
        state = template.state
        if explicit:
            conditions.append(
                cond(
                    TEMPLATE_READY, True, "ModelSourcesInSpec", f"caching the model sources in spec ({tname})"
                )
            )
            return list(explicit), False
        detail = template.ready_message or state
        if state in ("Ready", "Available"):
            conditions.append(cond(TEMPLATE_READY, True, "TemplateReady", f"template {tname} is ready"))
            sources = template.cache_sources
            return list(sources), False
        # the original's one reason for a template in any state; the state is named in the message
        # (the status rules take Failed/Degraded/NotAvailable from it; otherwise the cache waits)
        message = dependency_message(f"template {tname}", state, str(detail))
        conditions.append(cond(TEMPLATE_READY, False, TEMPLATE_NOT_READY, message))
        return [], True

    # -- model caches ----------------------------------------------------------------------------

    async def _cache_for(
        self, request: Request, tc: TemplateCache, template: Template, source: CacheSource, index: int
    ) -> ModelCache | RefusedCache | None:
        """The model cache for ``source``: the best compatible one, or ``None`` when one was just
        created, or the condition saying the API server refused to create it (for its content:
        not sent again until the template cache or its template changes)."""
        kind = ModelCache.kind(request.ref.group, self.behaviour)
        dedicated = tc.dedicated
        uri = source.uri
        env = merge_env(tc.env, list(source.env))
        klass = tc.storage_class
        name = plan.model_cache_name(uri, env, klass, tc.name if dedicated else None)
        uid = str(tc.uid)
        label = label_value(tc.name)
        candidates = [
            c
            for c in ModelCache.each_in(request.informer, request.ref.group, request.namespace)
            if c.source_uri == uri and (not klass or c.storage_class == klass) and not c.deleting
        ]
        if dedicated:
            mine = [
                c
                for c in candidates
                if uid in c.owner_uids
                or (c.name == name and not c.owner_uids and c.labels.get(plan.LABEL_TEMPLATE_CACHE) == label)
            ]
            best = best_of(mine)
        else:
            unowned = [c for c in candidates if not c.owner_uids]
            best = best_of(unowned)
            if best is None and not self.behaviour.released:  # the seeds' promotion
                best = best_of(candidates)
            if best is not None and best.owner_uids:
                await self._promote(request, best)
        if best is not None:
            return best
        body = self._cache_body(request, tc, kind, template, source, index, name, env)
        if (known := self.children.refused_before(kind, body)) is not None:
            return RefusedCache.of(kind, body, known)
        written = await self.children.write(request, kind, body)
        if isinstance(written, Refusal):
            refused = RefusedCache.of(kind, body, written)
            said = refused.condition
            await request.reporter.decide(
                request.ref, request.obj, "create-model-cache-failed", said.reason, said.message
            )
            return refused
        await request.reporter.decide(
            request.ref,
            request.obj,
            "create-model-cache",
            "CreatingCaches",
            f"model cache {name} for {uri} ({'dedicated' if dedicated else 'shared'})",
        )
        created = ModelCache.read(request.informer, kind, written.obj)
        return created if created is not None and created.status else None

    async def _promote(self, request: Request, cache: ModelCache) -> None:
        owners = [f"{o.kind}/{o.name}" for o in cache.resource.metadata.owner_references or []]
        await self.kube.patch_json(
            cache.ref,
            cache.namespace,
            cache.name,
            [
                {"op": "test", "path": "/metadata/uid", "value": cache.uid},
                {"op": "remove", "path": "/metadata/ownerReferences"},
            ],
        )
        await request.reporter.decide(
            request.ref,
            request.obj,
            "promote-model-cache",
            "PromotedToShared",
            f"model cache {cache.name} promoted to shared (owner references {', '.join(owners)} removed)",
        )

    def _cache_body(  # noqa: PLR0917 - one call site, every argument named there
        self,
        request: Request,
        tc: TemplateCache,
        kind: KindRef,
        template: Template,
        source: CacheSource,
        index: int,
        name: str,
        env: list[Any],
    ) -> Obj:
        legacy = request.ref.group == LEGACY
        klass = tc.storage_class
        body_spec: Obj = {"sourceUri": source.uri or None}
        if source.model_id and not legacy:
            body_spec["modelId"] = source.model_id
        if source.size:
            body_spec["size"] = source.size
        if env:
            body_spec["env"] = env
        if klass:
            body_spec["storageClassName"] = klass
        download_image = tc.download_image or self.download_image
        if download_image and not legacy:
            body_spec["modelDownloadImage"] = download_image
        if tc.pull_secrets:
            body_spec["imagePullSecrets"] = tc.pull_secrets
        if tc.runtime_config_name and not legacy:
            body_spec["runtimeConfigName"] = tc.runtime_config_name
        meta: Obj = {
            "name": name,
            "namespace": request.namespace,
            "labels": {
                plan.LABEL_TEMPLATE_CREATED: "true",
                plan.LABEL_TEMPLATE_CACHE: label_value(tc.name),
                plan.LABEL_TEMPLATE_NAME: label_value(template.name),
                plan.LABEL_TEMPLATE_SCOPE: "Namespace" if template.ref.namespaced else "Cluster",
                "aim.eai.amd.com/template.index": str(index),
                PART_OF_LABEL: PART_OF_VALUE,
                plan.MANAGED_BY: "aim-cache",
            },
        }
        # where the deployer mounts it (the legacy template cache's status does not list it)
        meta["annotations"] = {MODEL_ID_ANNOTATION: plan.model_id(source.uri, source.model_id)}
        if tc.dedicated:
            meta["ownerReferences"] = [owner_reference(tc.ref, tc.obj)]
        return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, "spec": body_spec}

    @staticmethod
    def _resolved(cache: ModelCache | None, source: CacheSource, *, refused: bool = False) -> Obj:
        if cache is None:
            model = plan.model_id(source.uri, source.model_id)
        else:
            model = plan.model_id(cache.source_uri, cache.model_id or source.model_id)
        state = "Failed" if refused else "Pending"  # refused: the API server will not create it
        entry: Obj = {"model": model, "mountPoint": plan.mount_path(model), "status": state}
        if cache is not None:
            entry.update(name=cache.name, uid=cache.uid, status=cache.state)
            if cache.claim:
                entry["persistentVolumeClaim"] = cache.claim
        return entry


def _template_names(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    name = TemplateCache(ref, obj, cast(AnyTemplateCache, resource)).template_name
    return [name] if name else []


def _model_cache_names(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    entries = TemplateCache(ref, obj, cast(AnyTemplateCache, resource)).model_caches.values()
    return [e.name for e in entries if e.name]


template_names: ResourceIndexer = resource_indexer(_template_names, TEMPLATE_CACHE_KINDS)
"""Index: the template a template cache is for."""
model_cache_names: ResourceIndexer = resource_indexer(_model_cache_names, TEMPLATE_CACHE_KINDS)
"""Index: the model caches a template cache's status lists."""
