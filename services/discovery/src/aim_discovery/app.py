"""The discovery service. It owns models (and legacy images), service templates and runtime configs
of both AIM API groups: one controller per family (:mod:`aim_discovery.models`,
:mod:`aim_discovery.templates`, :mod:`aim_discovery.runtimeconfigs`) behind one consumer.

Dependencies, mapped back to the objects that depend on them (as controller-runtime's watches):

- a template change → its model (the model's status aggregates its templates), and the template
  itself;
- a model change → the templates naming it (namespace templates of a cluster model too);
- a runtime config change → the models and templates resolving that name (a namespace config only
  in its namespace), and namespace configs of the same name (their status says what they merge
  over);
- a Node change that touches ``amd.com/`` labels or resources → every template needing a GPU;
- a discovery Job or its Pod → the template that runs it;
- a template's AIMTemplateCache → that template (``status.resolvedCache`` names its uid).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable

from aim_discovery import runtimeconfigs
from aim_discovery.models import ModelController
from aim_discovery.slots import Slots
from aim_discovery.templates import TemplateController, job_template
from aimcore.api.bus import topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType
from aimcore.api.kinds import (
    JOB,
    MODEL_KINDS,
    NODE,
    POD,
    RUNTIME_CONFIG_KINDS,
    TEMPLATE_CACHE_KINDS,
    TEMPLATE_KINDS,
    KindRef,
    by_kind,
)
from aimcore.api.types import Obj
from aimcore.domain import gpu as gpus
from aimcore.domain.oci import RegistryClient
from aimcore.domain.outbound import OutboundPolicy
from aimcore.domain.runtimeconfig import config_name
from aimcore.domain.views import (
    TemplateView,
    is_model,
    is_runtime_config,
    is_template,
    model_kinds,
)
from aimcore.runtime.informer import Informer
from aimcore.runtime.mappers import Target
from aimcore.runtime.reconciler import Controller, Request, Result, Watch, run_controller
from aimcore.runtime.service import ServiceContext, run_service

MODEL_NAME_INDEX = "model-name"
RUNTIME_CONFIG_INDEX = "runtime-config"


def kinds() -> tuple[KindRef, ...]:
    return (*MODEL_KINDS, *TEMPLATE_KINDS, *RUNTIME_CONFIG_KINDS)


# -- indexes -------------------------------------------------------------------------------------


def _model_name(obj: Obj) -> Iterable[str]:
    spec = obj.get("spec") or {}
    name = spec.get("modelName") or spec.get("aimImageName")
    return [str(name)] if name else []


def _runtime_config(obj: Obj) -> Iterable[str]:
    return [config_name(obj.get("spec"))]


# -- mappers ---------------------------------------------------------------------------------------


def _ref_of(event: ChangeEvent) -> KindRef:
    return by_kind(event.object.group, event.object.kind)


def template_to_model(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """A template's change reaches the model(s) it belongs to or names."""
    ref = _ref_of(event)
    namespace = event.object.namespace
    targets: list[Target] = []
    owners = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    for owner in owners:
        for kind in model_kinds(ref):
            if kind.kind == owner.get("kind") and kind.api_version == owner.get("apiVersion"):
                targets.append((kind, namespace if kind.namespaced else None, str(owner.get("name"))))
    if obj is not None:
        name = TemplateView(ref, obj).model_name
        for kind in model_kinds(ref):
            ns = namespace if kind.namespaced else None
            if kind.namespaced == ref.namespaced and informer.get(kind, ns, name) is not None:
                targets.append((kind, ns, name))
    return targets


def model_to_templates(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    ref = _ref_of(event)
    for template in informer.by_index(MODEL_NAME_INDEX, event.object.name):
        template_ref = by_kind(template["apiVersion"].split("/")[0], template["kind"])
        if template_ref.group != ref.group:
            continue
        ns = template["metadata"].get("namespace")
        if ref.namespaced and ns != event.object.namespace:
            continue
        yield template_ref, ns, template["metadata"]["name"]


def config_to_users(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    ref = _ref_of(event)
    for user in informer.by_index(RUNTIME_CONFIG_INDEX, event.object.name):
        group, _, _ = str(user.get("apiVersion", "")).partition("/")
        if group != ref.group:
            continue
        user_ref = by_kind(group, user["kind"])
        if not (is_model(user_ref) or is_template(user_ref)):
            continue
        ns = user["metadata"].get("namespace")
        if ref.namespaced and ns != event.object.namespace:
            continue
        yield user_ref, ns, user["metadata"]["name"]
    if not ref.namespaced:  # namespace configs of this name say whether they merge over it
        namespaced = by_kind(ref.group, "AIMRuntimeConfig")
        for config in informer.list(namespaced):
            if config["metadata"]["name"] == event.object.name:
                yield namespaced, config["metadata"].get("namespace"), event.object.name


class NodeMapper:
    """Node changes that matter to GPU availability (``amd.com/`` labels and resources; not
    heartbeats) re-check every template that needs a GPU."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, str]] = {}

    def __call__(self, event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        fingerprint = gpus.gpu_fingerprint(obj) if obj is not None else {}
        previous = self.seen.get(event.object.name)
        if event.change is ChangeType.DELETED:
            self.seen.pop(event.object.name, None)
        else:
            self.seen[event.object.name] = fingerprint
        if previous == fingerprint and event.change is not ChangeType.DELETED:
            return []
        if previous is None and not fingerprint and event.change is not ChangeType.ADDED:
            return []  # first sight of a node without GPUs (a resync): nothing to re-check
        targets: list[Target] = []
        for ref in TEMPLATE_KINDS:
            for template in informer.list(ref):
                if TemplateView(ref, template).gpu.required:
                    targets.append((ref, template["metadata"].get("namespace"), template["metadata"]["name"]))
        return targets


def job_to_template(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    found = job_template(obj) if obj is not None else None
    return [found] if found else []


def pod_to_template(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    if obj is None:
        return []
    owners = obj["metadata"].get("ownerReferences") or []
    for owner in owners:
        if owner.get("kind") == "Job":
            job = informer.get(JOB, event.object.namespace, str(owner.get("name")))
            found = job_template(job) if job is not None else None
            if found:
                return [found]
    return []


def cache_to_template(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    ref = _ref_of(event)
    template = by_kind(ref.group, "AIMServiceTemplate")
    owners = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    return [
        (template, event.object.namespace, str(o.get("name")))
        for o in owners
        if o.get("kind") == "AIMServiceTemplate"
    ]


# -- the controller ------------------------------------------------------------------------------


class Discovery:
    """Dispatches each object to its family's controller."""

    def __init__(self, models: ModelController, templates: TemplateController) -> None:
        self.models = models
        self.templates = templates

    async def reconcile(self, request: Request) -> Result | None:
        if is_model(request.ref):
            return await self.models.reconcile(request)
        if is_template(request.ref):
            return await self.templates.reconcile(request)
        if is_runtime_config(request.ref):
            return await runtimeconfigs.reconcile(request)
        return None


def controller(ctx: ServiceContext, slots: Slots) -> Controller:
    assert ctx.kube is not None, "discovery needs a Kubernetes client (secrets, templates, jobs, logs)"
    system_namespace = ctx.settings.system_namespace
    discovery = Discovery(
        ModelController(
            ctx.kube,
            system_namespace,
            client_factory=functools.partial(RegistryClient, policy=OutboundPolicy.from_env()),
        ),
        TemplateController(ctx.kube, system_namespace, slots),
    )
    watches = [
        *(Watch(k, template_to_model) for k in TEMPLATE_KINDS),
        *(Watch(k, model_to_templates) for k in MODEL_KINDS),
        *(Watch(k, config_to_users) for k in RUNTIME_CONFIG_KINDS),
        Watch(NODE, NodeMapper()),
        Watch(JOB, job_to_template),
        Watch(POD, pod_to_template),
        *(Watch(k, cache_to_template) for k in TEMPLATE_CACHE_KINDS),
    ]
    return Controller(
        ctx.name,
        kinds(),
        discovery.reconcile,
        watches=watches,
        indexers={MODEL_NAME_INDEX: _model_name, RUNTIME_CONFIG_INDEX: _runtime_config},
    )


async def main(ctx: ServiceContext) -> None:
    if not await topology.wait_for_stream(ctx.js, topology.EVENTS_STREAM, ctx.stop):
        return
    slots = Slots(await ctx.js.key_value(topology.DISCOVERY_BUCKET))
    await run_controller(ctx, controller(ctx, slots))


def run() -> None:
    asyncio.run(run_service("discovery", main, needs_kube=True))
