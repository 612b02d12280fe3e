"""What wakes the cache service's objects: the informer indexes of the names they refer to, and the
parts of its dependency mapping that are the cache service's own (the general ones are the
runtime's verbs, :mod:`aimcore.runtime.mappers`; :mod:`aim_cache.app` puts them together).

- a model cache wakes the template caches that created it (:func:`creating_template_caches`) or
  list it;
- a template wakes the template caches naming it (a cluster template: in every namespace);
- a runtime config wakes the caches resolving that name;
- a PVC or download Job wakes the model cache (or LLMKube Model) owning it, a download Pod the
  owner of its Job;
- a Node wakes the LLMKube Models that want a GPU (:func:`wants_gpu`: ``acceleratorReady``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from aim_cache import plan
from aimcore.api.bus.messages import ChangeEvent
from aimcore.api.crds.base import Resource
from aimcore.api.kinds import MODEL_CACHE_KINDS, TEMPLATE_CACHE_KINDS, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.caches import AnyModelCache, AnyTemplateCache, ModelCache, TemplateCache
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.domain.naming import label_value
from aimcore.domain.runtimeconfig import config_name
from aimcore.runtime import Informer, ResourceIndexer, Target, changed, resource_indexer

TEMPLATE_INDEX = "template-name"
MODEL_CACHE_INDEX = "model-cache"
RUNTIME_CONFIG_INDEX = "runtime-config"


def _runtime_config(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    cache: TemplateCache | ModelCache = (
        TemplateCache(ref, obj, cast(AnyTemplateCache, resource))
        if ref in TEMPLATE_CACHE_KINDS
        else ModelCache(ref, obj, cast(AnyModelCache, resource))
    )
    return [config_name({"runtimeConfigName": cache.runtime_config_name})]


runtime_config: ResourceIndexer = resource_indexer(
    _runtime_config, (*TEMPLATE_CACHE_KINDS, *MODEL_CACHE_KINDS)
)
"""Index: the runtime config a template or model cache resolves."""


def creating_template_caches(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The template caches of a model cache's namespace and group whose name its creator label
    carries."""
    cache = ModelCache.read(informer, changed(event), obj)
    creator = cache.labels.get(plan.LABEL_TEMPLATE_CACHE) if cache is not None else None
    if not creator:
        return []
    kind = TemplateCache.kind(event.object.group)
    ns = event.object.namespace
    return [
        (kind, ns, tc.name)
        for tc in TemplateCache.each(informer, kind, ns)
        if label_value(tc.name) == creator
    ]


def wants_gpu(kind: KindRef, model: Obj) -> bool:
    """An LLMKube Model whose ``acceleratorReady`` depends on the nodes (one that does not read as
    its kind has no ``acceleratorReady`` to update)."""
    try:
        return LLMKubeModel(kind, model).gpu_wanted
    except ValueError:
        return False
