"""What wakes an AIMService: the informer indexes of the names a service refers to, and the parts of
its dependency mapping that are the deployer's own (the general ones are the runtime's verbs,
:mod:`aimcore.runtime.mappers`; :mod:`aim_deployer.app` puts them together).

- a model is found by the services naming it, asking for its image, or co-owning it (custom
  models); a cluster model reaches services in every namespace;
- a template by the services naming it or having resolved it, and by the services of its model
  (:func:`template_model_users`);
- a runtime config by the services resolving that name;
- a template cache by the services using its template; a model cache through the template cache
  that created it (:func:`creating_template_cache`);
- a predictor Pod or Deployment through its InferenceService (:func:`predictor_isvc`) to that
  one's owner, and the HPA scaling a predictor through the InferenceService it names
  (:func:`scaled_isvc`): they make ``status.runtime``;
- a Node wakes the services still waiting for a template (:func:`awaiting_template`: a new GPU
  may make one selectable), found through an index (:data:`AWAITING_TEMPLATE`), not by reading
  every service at each Node status report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from aim_deployer.caching import TEMPLATE_CACHE_LABEL
from aim_deployer.inference import predictor_name
from aim_deployer.model_resolution import custom_model_name, custom_model_of
from aim_deployer.service_view import ServiceView
from aim_deployer.services import isvc_label
from aim_deployer.templates import TEMPLATE_READY
from aimcore.api.bus.messages import ChangeEvent
from aimcore.api.crds.base import Resource
from aimcore.api.kinds import INFERENCE_SERVICE, SERVICE_KINDS, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.families.base import Object, StatusCondition
from aimcore.domain.families.caches import ModelCache, TemplateCache
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template
from aimcore.runtime import (
    Informer,
    ResourceIndexer,
    Target,
    changed,
    group_of,
    indexed,
    resource_indexer,
    scope,
    to_owners,
)

BY_MODEL = "service-model"  # model name or image a service refers to (spec), or resolved (status)
BY_TEMPLATE = "service-template"  # template a service names or resolved
BY_CONFIG = "service-config"


# -- indexes ---------------------------------------------------------------------------------------


def _service_models(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    service = ServiceView.of(ref, resource, obj)
    out = [v for v in (service.model_name, service.model_image) if v]
    custom = service.model_custom
    if custom is not None:  # the model it creates or shares, before its status names it
        out.append(custom_model_name(*custom_model_of(service, custom)))
    resolved = service.previous_model
    if resolved is not None and resolved.name:
        out.append(resolved.name)
    return out


def _service_templates(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    service = ServiceView.of(ref, resource, obj)
    resolved = service.previous_template
    return [v for v in (service.template_name, resolved.name if resolved is not None else None) if v]


def _service_config(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    return [ServiceView.of(ref, resource, obj).runtime_config_name or "default"]


service_models: ResourceIndexer = resource_indexer(_service_models, SERVICE_KINDS)
service_templates: ResourceIndexer = resource_indexer(_service_templates, SERVICE_KINDS)
service_config: ResourceIndexer = resource_indexer(_service_config, SERVICE_KINDS)


# -- keys and mappers ------------------------------------------------------------------------------


def name_and_image(event: ChangeEvent, obj: Obj | None) -> Iterable[str]:
    """A model is looked up by its name and by its image (services may ask for either)."""
    model = _parsed(Model, event, obj)
    image = model.image if model is not None else None
    return [event.object.name, *([image] if image else [])]


def cached_template(event: ChangeEvent, obj: Obj | None) -> Iterable[str]:
    """The template a template cache is for."""
    cache = _parsed(TemplateCache, event, obj)
    return [cache.template_name] if cache is not None and cache.template_name else []


F = TypeVar("F", bound=Object[Any])


def _parsed(family: type[F], event: ChangeEvent, obj: Obj | None) -> F | None:
    """The changed object through its family's adapter (a key has no informer at hand to read it
    through: it is parsed here, one model or cache change at a time)."""
    if obj is None:
        return None
    try:
        return family(changed(event), obj)
    except ValueError:  # a placeholder for an object too large for the bus
        return None


_co_owners = to_owners(*SERVICE_KINDS, same_group=True)


def template_model_users(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The services of the model a template is for: those that name it, and those that asked for
    it by image or co-own it (custom models) and have not recorded it in their status yet; in the
    template's scope."""
    template = Template.read(informer, changed(event), obj)
    if template is None or not template.model_name:
        return []
    ref, model = template.ref, template.model_name
    ns = scope(event)
    targets = indexed(informer, BY_MODEL, model, group=ref.group, namespace=ns, kinds=SERVICE_KINDS)
    for kind in Model.kinds_for(Template.kind(ref.group)):
        found = Model.get(informer, kind, event.object.namespace, model)
        if found is None:
            continue
        if found.image:
            where = event.object.namespace if kind.namespaced else ns
            targets += indexed(
                informer, BY_MODEL, found.image, group=ref.group, namespace=where, kinds=SERVICE_KINDS
            )
        targets += _co_owners(event, found.obj, informer)
    return targets


def creating_template_cache(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The template cache that created a model cache (its label names it)."""
    cache = ModelCache.read(informer, changed(event), obj)
    creator = cache.labels.get(TEMPLATE_CACHE_LABEL) if cache is not None else None
    return [(TemplateCache.kind(event.object.group), event.object.namespace, creator)] if creator else []


def predictor_isvc(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The InferenceService a predictor Pod or Deployment belongs to (its label names it)."""
    return [(INFERENCE_SERVICE, event.object.namespace, name) for name in isvc_label(obj or {})[:1]]


def scaled_isvc(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The InferenceService whose predictor an HPA scales (its target names the predictor), or
    that its label names (KEDA copies the ScaledObject's labels, KServe's, to its HPA)."""
    target = str((((obj or {}).get("spec") or {}).get("scaleTargetRef") or {}).get("name") or "")
    suffix = predictor_name("")
    if target.endswith(suffix) and len(target) > len(suffix):
        return [(INFERENCE_SERVICE, event.object.namespace, target.removesuffix(suffix))]
    return predictor_isvc(event, obj, informer)


AWAITING_TEMPLATE = "awaiting-template"
AWAITING = "awaiting"


def awaiting_template(svc: Obj) -> bool:
    """A service whose template is not resolved yet (its status says so: nothing to parse)."""
    template = StatusCondition.find(svc, TEMPLATE_READY)
    return template is not None and template.status != "True"


def awaiting_template_index(obj: Obj) -> Iterable[str]:
    """Files a service still waiting for a template under :data:`AWAITING` (other kinds: nothing)."""
    try:
        kind = by_kind(group_of(obj), str(obj.get("kind", "")))
    except KeyError:
        return ()
    return (AWAITING,) if kind in SERVICE_KINDS and awaiting_template(obj) else ()
