"""The template-cache reconciler (AIMTemplateCache, both API groups): the model caches one template
needs, reused where a compatible one exists.

One reconcile:

1. A finalizer (``aim.eai.amd.com/artifactcleanup``, the original's name) is added; when the
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
     as the seed describes. New caches get no owner reference.
   - **Dedicated**: only caches this template cache owns, or the one it created and a Shared cache
     has since promoted (never re-owned, so the two never fight). New caches are owned, so garbage
     collection removes them with the template cache.

   Caches are created with the original's deterministic names, so Shared caches dedupe per
   namespace. ``ModelCachesReady`` is the worst cache's state; ``status.modelCaches`` lists each
   cache with its status, PVC and mount point (``/workspace/model-cache/{modelId}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from aim_cache import plan
from aimcore.api.backoff import jitter_key
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import GROUP_LEGACY, PART_OF_LABEL, PART_OF_VALUE, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.cleanup import NotReadyCleanup
from aimcore.domain.jobs import JOB_RETRY
from aimcore.domain.naming import label_value
from aimcore.domain.runtimeconfig import merge_env, resolution_conditions
from aimcore.domain.status.rules import dependency_message
from aimcore.runtime.children import owned_by, owner_reference
from aimcore.runtime.conditions import condition as cond
from aimcore.runtime.conditions import refused_condition
from aimcore.runtime.finalizers import add_finalizer, has_finalizer
from aimcore.runtime.kube import Kube
from aimcore.runtime.reconciler import Request, Result
from aimcore.runtime.refusals import Refusal
from aimcore.runtime.writes import Children

FINALIZER = "aim.eai.amd.com/artifactcleanup"
MODEL_ID_ANNOTATION = "aim.eai.amd.com/model-id"
TEMPLATE_READY = "ServiceTemplateReady"
TEMPLATE_NOT_READY = "TemplateNotReady"
REFERENCE_NOT_FOUND = "ReferenceNotFound"
CONFIG_VALID = "ConfigValid"
CACHES_READY = "ModelCachesReady"
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


def template_name(ref: KindRef, spec: Mapping[str, Any]) -> str:
    return str(spec.get("templateRef") if ref.group == LEGACY else spec.get("templateName") or "")


def template_kinds(ref: KindRef, spec: Mapping[str, Any]) -> list[KindRef]:
    namespaced = by_kind(ref.group, "AIMServiceTemplate")
    cluster = by_kind(ref.group, "AIMClusterServiceTemplate")
    scope = spec.get("templateScope")
    if scope == "Namespace":
        return [namespaced]
    if scope == "Cluster":
        return [cluster]
    return [namespaced, cluster]


def cache_status(cache: Mapping[str, Any]) -> str:
    return str((cache.get("status") or {}).get("status") or "Pending")


def is_ready(cache: Mapping[str, Any]) -> bool:
    return cache_status(cache) in ("Ready", "Available")


# on delete: the model caches this template cache created that never became ready go with it
CLEANUP = NotReadyCleanup(
    FINALIZER,
    "AIMModelCache",
    plan.LABEL_TEMPLATE_CACHE,
    ready=is_ready,
    state=cache_status,
    noun="model cache",
    along="its template cache",
)


def best_of(caches: Iterable[Obj]) -> Obj | None:
    """The best cache: by status (Ready first), then the oldest, then by name."""

    def key(cache: Obj) -> tuple[int, str, str]:
        meta = cache.get("metadata") or {}
        return (
            -_RANK.get(cache_status(cache), 0),
            str(meta.get("creationTimestamp") or "~"),
            str(meta.get("name")),
        )

    return min(caches, key=key, default=None)


def model_key(source: Mapping[str, Any], index: int) -> str:
    return str(source.get("name") or source.get("modelId") or f"source-{index}")


def _ready_condition(cache: Mapping[str, Any]) -> Mapping[str, Any]:
    for c in (cache.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return dict(c)
    return {}


def caches_condition(caches: Sequence[tuple[str, Mapping[str, Any] | None]]) -> ConditionReport:
    """``ModelCachesReady`` from each source's cache (``None``: just created)."""
    if not caches:
        return cond(CACHES_READY, True, "NoCaches", "the template has no model sources to cache")
    if all(c is not None and is_ready(c) for _, c in caches):
        return cond(CACHES_READY, True, "AllCachesReady", f"{len(caches)} model cache(s) ready")
    worst = min(
        ((k, c) for k, c in caches if c is not None),
        key=lambda kc: _RANK.get(cache_status(kc[1]), 0),
        default=None,
    )
    if worst is not None and cache_status(worst[1]) in ("Failed", "Degraded", "NotAvailable"):
        ready = _ready_condition(worst[1])
        name = worst[1]["metadata"]["name"]
        return cond(
            CACHES_READY,
            False,
            str(ready.get("reason") or "CachesNotReady"),
            f"model cache {name}: {ready.get('message') or cache_status(worst[1])}",
        )
    if any(c is None or not (c.get("status") or {}).get("conditions") for _, c in caches):
        return cond(CACHES_READY, False, "CreatingCaches", "creating model caches")
    waiting = [
        f"{c['metadata']['name']} ({cache_status(c)})" for _, c in caches if c is not None and not is_ready(c)
    ]
    return cond(CACHES_READY, False, "CachesNotReady", "waiting for " + ", ".join(waiting))


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
    def __init__(self, kube: Kube, download_image: str | None = None) -> None:
        self.kube = kube
        self.download_image = download_image  # AIM_CACHE_DOWNLOAD_IMAGE
        self.children = Children(kube)  # writes the model caches; keeps those refused

    async def reconcile(self, request: Request) -> Result | None:
        obj = request.obj
        if obj["metadata"].get("deletionTimestamp"):
            await CLEANUP.finalize(self.kube, request)
            return None
        if not has_finalizer(obj, FINALIZER):
            await add_finalizer(self.kube, request.ref, obj, FINALIZER)
        spec = obj.get("spec") or {}
        fields: dict[str, Any] = {}
        config, conditions = resolution_conditions(
            request.informer.get, request.ref.group, request.namespace, spec
        )
        if config is not None and request.ref.group != LEGACY:
            fields["resolvedRuntimeConfig"] = config.reference()
        if config is None:
            await request.reporter.report(request.ref, obj, conditions, {})
            return None
        name = template_name(request.ref, spec)
        found = self._template(request, spec, name)
        if found is None:
            kinds = template_kinds(request.ref, spec)
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
        template_ref, template = found
        fields["resolvedTemplateKind"] = template_ref.kind
        sources, waiting = self._sources(request.ref, spec, template, conditions)
        if waiting:
            await request.reporter.report(request.ref, obj, conditions, fields)
            return None
        found_caches = [
            await self._cache_for(request, template_ref, template, source, i)
            for i, source in enumerate(sources)
        ]
        refused = next((c for c in found_caches if isinstance(c, RefusedCache)), None)
        caches = [None if isinstance(c, RefusedCache) else c for c in found_caches]
        keyed = [(model_key(s, i), c) for i, (s, c) in enumerate(zip(sources, caches, strict=True))]
        conditions.append(refused.condition if refused else caches_condition(keyed))
        if request.ref.group != LEGACY:
            fields["modelCaches"] = {
                key: self._resolved(c, s, refused=isinstance(f, RefusedCache))
                for (key, c), s, f in zip(keyed, sources, found_caches, strict=True)
            }
        await request.reporter.report(request.ref, obj, conditions, fields)
        if refused is not None and refused.forbidden:  # permissions (a quota) may change: retry
            return Result(requeue_after=JOB_RETRY.delay(1, jitter=jitter_key(obj)))
        return None

    # -- template and sources --------------------------------------------------------------------

    def _template(self, request: Request, spec: Mapping[str, Any], name: str) -> tuple[KindRef, Obj] | None:
        for kind in template_kinds(request.ref, spec):
            found = request.informer.get(kind, request.namespace if kind.namespaced else None, name)
            if found is not None:
                return kind, found
        return None

    @staticmethod
    def _sources(
        ref: KindRef, spec: Mapping[str, Any], template: Mapping[str, Any], conditions: list[ConditionReport]
    ) -> tuple[list[Mapping[str, Any]], bool]:
        """The sources to cache, and whether to wait for the template instead."""
        tname = template["metadata"]["name"]
        explicit = spec.get("modelSources") if ref.group != LEGACY else None
        status = template.get("status") or {}
        state = str(status.get("status") or "Pending")
        if explicit:
            conditions.append(
                cond(
                    TEMPLATE_READY, True, "ModelSourcesInSpec", f"caching the model sources in spec ({tname})"
                )
            )
            return list(explicit), False
        ready: Mapping[str, Any] = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {}
        )
        detail = ready.get("message") or state
        if state in ("Ready", "Available"):
            conditions.append(cond(TEMPLATE_READY, True, "TemplateReady", f"template {tname} is ready"))
            sources = status.get("modelSources") or (template.get("spec") or {}).get("modelSources") or []
            return list(sources), False
        # the original's one reason for a template in any state; the state is named in the message
        # (the status rules take Failed/Degraded/NotAvailable from it; otherwise the cache waits)
        message = dependency_message(f"template {tname}", state, str(detail))
        conditions.append(cond(TEMPLATE_READY, False, TEMPLATE_NOT_READY, message))
        return [], True

    # -- model caches ----------------------------------------------------------------------------

    async def _cache_for(
        self,
        request: Request,
        template_ref: KindRef,
        template: Mapping[str, Any],
        source: Mapping[str, Any],
        index: int,
    ) -> Obj | RefusedCache | None:
        """The model cache for ``source``: the best compatible one, or ``None`` when one was just
        created, or the condition saying the API server refused to create it (for its content:
        not sent again until the template cache or its template changes)."""
        tc = request.obj
        spec = tc.get("spec") or {}
        kind = by_kind(request.ref.group, "AIMModelCache")
        dedicated = request.ref.group != LEGACY and spec.get("mode") == "Dedicated"
        uri = str(source.get("sourceUri") or "")
        env = merge_env(list(spec.get("env") or []), list(source.get("env") or []))
        klass = spec.get("storageClassName") or None
        name = plan.model_cache_name(uri, env, klass, tc["metadata"]["name"] if dedicated else None)
        uid = str(tc["metadata"]["uid"])
        label = label_value(tc["metadata"]["name"])
        candidates = [
            c
            for c in request.informer.list(kind, request.namespace)
            if (c.get("spec") or {}).get("sourceUri") == uri
            and (not klass or (c.get("spec") or {}).get("storageClassName") == klass)
            and not c["metadata"].get("deletionTimestamp")
        ]
        if dedicated:
            mine = [
                c
                for c in candidates
                if owned_by(c, uid)
                or (
                    c["metadata"]["name"] == name
                    and not c["metadata"].get("ownerReferences")
                    and (c["metadata"].get("labels") or {}).get(plan.LABEL_TEMPLATE_CACHE) == label
                )
            ]
            best = best_of(mine)
        else:
            unowned = [c for c in candidates if not c["metadata"].get("ownerReferences")]
            best = best_of(unowned) or best_of(candidates)
            if best is not None and best["metadata"].get("ownerReferences"):
                await self._promote(request, kind, best)
        if best is not None:
            return best
        body = self._cache_body(
            request, kind, template_ref, template, source, index, name, env, klass, dedicated
        )
        if (known := self.children.refused_before(kind, body)) is not None:
            return RefusedCache.of(kind, body, known)
        written = await self.children.write(request, kind, body)
        if isinstance(written, Refusal):
            refused = RefusedCache.of(kind, body, written)
            said = refused.condition
            await request.reporter.decide(
                request.ref, tc, "create-model-cache-failed", said.reason, said.message
            )
            return refused
        await request.reporter.decide(
            request.ref,
            tc,
            "create-model-cache",
            "CreatingCaches",
            f"model cache {name} for {uri} ({'dedicated' if dedicated else 'shared'})",
        )
        created = written.obj or {}
        return None if not created.get("status") else created

    async def _promote(self, request: Request, kind: KindRef, cache: Mapping[str, Any]) -> None:
        meta = cache["metadata"]
        owners = [f"{o.get('kind')}/{o.get('name')}" for o in meta.get("ownerReferences") or []]
        await self.kube.patch_json(
            kind,
            meta.get("namespace"),
            meta["name"],
            [
                {"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
                {"op": "remove", "path": "/metadata/ownerReferences"},
            ],
        )
        await request.reporter.decide(
            request.ref,
            request.obj,
            "promote-model-cache",
            "PromotedToShared",
            f"model cache {meta['name']} promoted to shared (owner references {', '.join(owners)} removed)",
        )

    def _cache_body(  # noqa: PLR0917 - one call site, every argument named there
        self,
        request: Request,
        kind: KindRef,
        template_ref: KindRef,
        template: Mapping[str, Any],
        source: Mapping[str, Any],
        index: int,
        name: str,
        env: list[Any],
        klass: str | None,
        dedicated: bool,
    ) -> Obj:
        tc = request.obj
        spec = tc.get("spec") or {}
        legacy = request.ref.group == LEGACY
        body_spec: Obj = {"sourceUri": source.get("sourceUri")}
        if source.get("modelId") and not legacy:
            body_spec["modelId"] = source["modelId"]
        if source.get("size"):
            body_spec["size"] = source["size"]
        if env:
            body_spec["env"] = env
        if klass:
            body_spec["storageClassName"] = klass
        download_image = spec.get("downloadImage") or self.download_image
        if download_image and not legacy:
            body_spec["modelDownloadImage"] = download_image
        if spec.get("imagePullSecrets"):
            body_spec["imagePullSecrets"] = spec["imagePullSecrets"]
        if spec.get("runtimeConfigName") and not legacy:
            body_spec["runtimeConfigName"] = spec["runtimeConfigName"]
        meta: Obj = {
            "name": name,
            "namespace": request.namespace,
            "labels": {
                plan.LABEL_TEMPLATE_CREATED: "true",
                plan.LABEL_TEMPLATE_CACHE: label_value(tc["metadata"]["name"]),
                plan.LABEL_TEMPLATE_NAME: label_value(template["metadata"]["name"]),
                plan.LABEL_TEMPLATE_SCOPE: "Namespace" if template_ref.namespaced else "Cluster",
                "aim.eai.amd.com/template.index": str(index),
                PART_OF_LABEL: PART_OF_VALUE,
                plan.MANAGED_BY: "aim-cache",
            },
        }
        # where the deployer mounts it (the legacy template cache's status does not list it)
        meta["annotations"] = {
            MODEL_ID_ANNOTATION: plan.model_id(str(source.get("sourceUri") or ""), source.get("modelId"))
        }
        if dedicated:
            meta["ownerReferences"] = [owner_reference(request.ref, tc)]
        return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, "spec": body_spec}

    @staticmethod
    def _resolved(
        cache: Mapping[str, Any] | None, source: Mapping[str, Any], *, refused: bool = False
    ) -> Obj:
        written = {**source, **((cache or {}).get("spec") or {})}
        model = plan.model_id(str(written.get("sourceUri") or ""), written.get("modelId"))
        state = "Failed" if refused else "Pending"  # refused: the API server will not create it
        entry: Obj = {"model": model, "mountPoint": plan.mount_path(model), "status": state}
        if cache is not None:
            meta = cache["metadata"]
            entry.update(name=meta["name"], uid=meta["uid"], status=cache_status(cache))
            claim = (cache.get("status") or {}).get("persistentVolumeClaim")
            if claim:
                entry["persistentVolumeClaim"] = claim
        return entry


def template_names(obj: Mapping[str, Any]) -> Iterable[str]:
    spec = obj.get("spec") or {}
    name = spec.get("templateName") or spec.get("templateRef")
    return [str(name)] if name else []


def model_cache_names(obj: Mapping[str, Any]) -> Iterable[str]:
    caches = (obj.get("status") or {}).get("modelCaches") or {}
    return [str(c.get("name")) for c in caches.values() if isinstance(c, Mapping) and c.get("name")]
