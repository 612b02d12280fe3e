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
- a predictor Pod through its InferenceService (:func:`predictor_isvc`) to that one's owner;
- a Node wakes the services still waiting for a template (:func:`awaiting_template`: a new GPU
  may make one selectable).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aim_deployer.caching import TEMPLATE_CACHE_LABEL
from aim_deployer.model_resolution import custom_model_name, custom_model_spec, service_model
from aim_deployer.services import pod_isvc
from aim_deployer.templates import TEMPLATE_READY, explicit_name
from aimcore.api.bus.messages import ChangeEvent
from aimcore.api.kinds import INFERENCE_SERVICE, SERVICE_KINDS, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.runtimeconfig import config_name
from aimcore.domain.views import TemplateView, model_kinds
from aimcore.runtime.informer import Informer
from aimcore.runtime.mappers import Target, changed, group_of, indexed, scope, to_owners

BY_MODEL = "service-model"  # model name or image a service refers to (spec), or resolved (status)
BY_TEMPLATE = "service-template"  # template a service names or resolved
BY_CONFIG = "service-config"


# -- indexes ---------------------------------------------------------------------------------------


def _is_service(obj: Mapping[str, object]) -> bool:
    return obj.get("kind") == "AIMService"


def _ref(obj: Obj) -> KindRef:
    return by_kind(group_of(obj), str(obj.get("kind")))


def service_models(obj: Obj) -> Iterable[str]:
    if not _is_service(obj):
        return []
    ref = _ref(obj)
    model = service_model(ref, obj.get("spec") or {})
    out = [str(model[k]) for k in ("name", "image") if model.get(k)]
    custom = model.get("custom")
    if isinstance(custom, Mapping):  # the model it creates or shares, before its status names it
        spec = custom_model_spec(obj.get("spec") or {}, custom)
        out.append(custom_model_name(by_kind(ref.group, "AIMModel"), spec))
    status = obj.get("status") or {}
    resolved = status.get("resolvedModel") or status.get("resolvedImage")
    if isinstance(resolved, Mapping) and resolved.get("name"):
        out.append(str(resolved["name"]))
    return out


def service_templates(obj: Obj) -> Iterable[str]:
    if not _is_service(obj):
        return []
    out = []
    name = explicit_name(_ref(obj), obj.get("spec") or {})
    if name:
        out.append(name)
    resolved = (obj.get("status") or {}).get("resolvedTemplate")
    if isinstance(resolved, Mapping) and resolved.get("name"):
        out.append(str(resolved["name"]))
    return out


def service_config(obj: Obj) -> Iterable[str]:
    return [config_name(obj.get("spec"))] if _is_service(obj) else []


# -- keys and mappers ------------------------------------------------------------------------------


def name_and_image(event: ChangeEvent, obj: Obj | None) -> Iterable[str]:
    """A model is looked up by its name and by its image (services may ask for either)."""
    image = ((obj or {}).get("spec") or {}).get("image")
    return [event.object.name, *([str(image)] if image else [])]


def cached_template(event: ChangeEvent, obj: Obj | None) -> Iterable[str]:
    """The template a template cache is for."""
    spec = (obj or {}).get("spec") or {}
    template = spec.get("templateName") or spec.get("templateRef")
    return [str(template)] if template else []


_co_owners = to_owners(*SERVICE_KINDS, same_group=True)


def template_model_users(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The services of the model a template is for: those that name it, and those that asked for
    it by image or co-own it (custom models) and have not recorded it in their status yet; in the
    template's scope."""
    if obj is None:
        return []
    ref = changed(event)
    model = TemplateView(ref, obj).model_name
    if not model:
        return []
    ns = scope(event)
    targets = indexed(informer, BY_MODEL, model, group=ref.group, namespace=ns, kinds=SERVICE_KINDS)
    for kind in model_kinds(by_kind(ref.group, "AIMServiceTemplate")):
        found = informer.get(kind, event.object.namespace if kind.namespaced else None, model)
        if found is None:
            continue
        image = (found.get("spec") or {}).get("image")
        if image:
            where = event.object.namespace if kind.namespaced else ns
            targets += indexed(
                informer, BY_MODEL, str(image), group=ref.group, namespace=where, kinds=SERVICE_KINDS
            )
        targets += _co_owners(event, found, informer)
    return targets


def creating_template_cache(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The template cache that created a model cache (its label names it)."""
    creator = (((obj or {}).get("metadata") or {}).get("labels") or {}).get(TEMPLATE_CACHE_LABEL)
    return (
        [(by_kind(event.object.group, "AIMTemplateCache"), event.object.namespace, creator)]
        if creator
        else []
    )


def predictor_isvc(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The InferenceService a predictor Pod belongs to (its label names it)."""
    return [(INFERENCE_SERVICE, event.object.namespace, name) for name in pod_isvc(obj or {})[:1]]


def awaiting_template(kind: KindRef, svc: Obj) -> bool:
    """A service whose template is not resolved yet."""
    conditions = (svc.get("status") or {}).get("conditions") or []
    return any(c.get("type") == TEMPLATE_READY and c.get("status") != "True" for c in conditions)
