"""The deployer service: AIMService (both API groups) from model reference to KServe
InferenceService and HTTPRoute (:mod:`aim_deployer.services`).

Dependencies, mapped back to the services that depend on them, through indexes of the informer
cache (no list of every service per change):

- a model → services naming it, using its image, or co-owning it (custom models); a cluster
  model reaches services in every namespace;
- a template → services of its model (by the model each service resolved), naming it, or
  co-owning it (derived templates);
- a runtime config → services resolving that name;
- a template cache → services using its template; a model cache → those of its template cache;
- an InferenceService or HTTPRoute → its owner; a predictor pod → its InferenceService's owner;
- a Node → services still waiting for a template (GPU availability may have changed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from aim_deployer.caching import TEMPLATE_CACHE_LABEL
from aim_deployer.models import custom_model_name, custom_model_spec, service_model
from aim_deployer.services import PODS_INDEX, ServiceController, pod_isvc
from aim_deployer.settings import DeployerSettings
from aim_deployer.templates import TEMPLATE_READY, explicit_name
from aimcore.api.bus.messages import ChangeEvent
from aimcore.api.kinds import (
    HTTP_ROUTE,
    INFERENCE_SERVICE,
    MODEL_CACHE_KINDS,
    MODEL_KINDS,
    NODE,
    POD,
    RUNTIME_CONFIG_KINDS,
    SERVICE_KINDS,
    TEMPLATE_CACHE_KINDS,
    TEMPLATE_KINDS,
    KindRef,
    by_kind,
)
from aimcore.api.types import Obj
from aimcore.domain.runtimeconfig import config_name
from aimcore.domain.views import TemplateView, model_kinds
from aimcore.runtime.informer import Informer
from aimcore.runtime.mappers import Target
from aimcore.runtime.reconciler import Controller, Watch, run_controller
from aimcore.runtime.service import ServiceContext, run_service

BY_MODEL = "service-model"  # model name or image a service refers to (spec), or resolved (status)
BY_TEMPLATE = "service-template"  # template a service names or resolved
BY_CONFIG = "service-config"


def _group(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).partition("/")[0]


def _is_service(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "AIMService"


def _ref(obj: Mapping[str, Any]) -> KindRef:
    return by_kind(_group(obj), str(obj.get("kind")))


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


def _services_by(
    index: str, value: str, group: str, namespace: str | None, informer: Informer
) -> list[Target]:
    """Services of ``group`` indexed under ``value``, in ``namespace`` (``None``: any namespace)."""
    out: list[Target] = []
    for svc in informer.by_index(index, value):
        ns = svc["metadata"].get("namespace")
        if _group(svc) == group and (namespace is None or ns == namespace):
            out.append((by_kind(group, "AIMService"), ns, svc["metadata"]["name"]))
    return out


def _owners(obj: Obj | None, group: str | None = None) -> list[Target]:
    out: list[Target] = []
    for owner in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
        owner_group = str(owner.get("apiVersion", "")).partition("/")[0]
        if owner.get("kind") == "AIMService" and (group is None or owner_group == group):
            out.append(
                (
                    by_kind(owner_group, "AIMService"),
                    (obj or {})["metadata"].get("namespace"),
                    str(owner["name"]),
                )
            )
    return out


def model_to_services(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    ref = by_kind(event.object.group, event.object.kind)
    ns = event.object.namespace if ref.namespaced else None
    targets = _services_by(BY_MODEL, event.object.name, ref.group, ns, informer)
    image = ((obj or {}).get("spec") or {}).get("image")
    if image:
        targets += _services_by(BY_MODEL, str(image), ref.group, ns, informer)
    return targets + _owners(obj, ref.group)


def template_to_services(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    ref = by_kind(event.object.group, event.object.kind)
    ns = event.object.namespace if ref.namespaced else None
    targets = _services_by(BY_TEMPLATE, event.object.name, ref.group, ns, informer)
    if obj is not None:
        model = TemplateView(ref, obj).model_name
        if model:
            targets += _services_by(BY_MODEL, model, ref.group, ns, informer)
            # services that asked for the model by image, or co-own it (custom models), and have
            # not recorded it in their status yet
            for kind in model_kinds(by_kind(ref.group, "AIMServiceTemplate")):
                found = informer.get(kind, event.object.namespace if kind.namespaced else None, model)
                if found is None:
                    continue
                image = (found.get("spec") or {}).get("image")
                if image:
                    scope = event.object.namespace if kind.namespaced else ns
                    targets += _services_by(BY_MODEL, str(image), ref.group, scope, informer)
                targets += _owners(found, ref.group)
    return targets + _owners(obj, ref.group)


def config_to_services(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    ref = by_kind(event.object.group, event.object.kind)
    ns = event.object.namespace if ref.namespaced else None
    return _services_by(BY_CONFIG, event.object.name, ref.group, ns, informer)


def template_cache_to_services(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    if obj is None:
        return []
    ref = by_kind(event.object.group, event.object.kind)
    spec = obj.get("spec") or {}
    template = spec.get("templateName") or spec.get("templateRef")
    targets = (
        _services_by(BY_TEMPLATE, str(template), ref.group, event.object.namespace, informer)
        if template
        else []
    )
    return targets


def model_cache_to_services(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """A model cache → the services of the template cache that created it (the retry reads them)."""
    creator = (((obj or {}).get("metadata") or {}).get("labels") or {}).get(TEMPLATE_CACHE_LABEL)
    if not creator:
        return []
    kind = by_kind(event.object.group, "AIMTemplateCache")
    tc = informer.get(kind, event.object.namespace, creator)
    return template_cache_to_services(event, tc, informer) if tc is not None else []


def child_to_service(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    return _owners(obj)


def pod_to_service(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    for name in pod_isvc(obj or {}):
        isvc = informer.get(INFERENCE_SERVICE, event.object.namespace, name)
        return _owners(isvc)
    return []


def node_to_services(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """Services whose template is not resolved yet: a new GPU may make one selectable."""
    out: list[Target] = []
    for kind in SERVICE_KINDS:
        for svc in informer.list(kind):
            conditions = (svc.get("status") or {}).get("conditions") or []
            if any(c.get("type") == TEMPLATE_READY and c.get("status") != "True" for c in conditions):
                out.append((kind, svc["metadata"].get("namespace"), svc["metadata"]["name"]))
    return out


def controller(ctx: ServiceContext, settings: DeployerSettings) -> Controller:
    assert ctx.kube is not None, "the deployer needs a Kubernetes client (it applies InferenceServices)"
    services = ServiceController(ctx.kube, settings)
    watches = [
        *(Watch(k, model_to_services) for k in MODEL_KINDS),
        *(Watch(k, template_to_services) for k in TEMPLATE_KINDS),
        *(Watch(k, config_to_services) for k in RUNTIME_CONFIG_KINDS),
        *(Watch(k, template_cache_to_services) for k in TEMPLATE_CACHE_KINDS),
        *(Watch(k, model_cache_to_services) for k in MODEL_CACHE_KINDS),
        Watch(INFERENCE_SERVICE, child_to_service),
        Watch(HTTP_ROUTE, child_to_service),
        Watch(POD, pod_to_service),
        Watch(NODE, node_to_services),
    ]
    return Controller(
        ctx.name,
        SERVICE_KINDS,
        services.reconcile,
        watches=watches,
        # every decision reads the informer's dependencies, not the service's own status (the
        # sticky references and the retry counter are read on the next dependency change)
        ignore_own_status=True,
        indexers={
            BY_MODEL: service_models,
            BY_TEMPLATE: service_templates,
            BY_CONFIG: service_config,
            PODS_INDEX: pod_isvc,
        },
    )


async def main(ctx: ServiceContext) -> None:
    await run_controller(ctx, controller(ctx, DeployerSettings.from_env()))


def run() -> None:
    asyncio.run(run_service("deployer", main, needs_kube=True))
