"""Which template an AIMService runs (docs/original.md#template-selection,
docs/specification.md#auto-creation-from-service-overrides), decided from the informer cache; the
controller applies what :class:`TemplatePlan` asks for.

Order: an explicit ``template.name`` (legacy ``templateRef``; the namespace's template first, then
the cluster's), else the model's ``defaultServiceTemplate`` (the original ignores it; one that does
not exist is ``TemplateNotFound`` with ``ConfigValid=False/ReferenceNotFound``, not a silent fall
back to selection), else automatic selection (:mod:`aim_deployer.selection`), sticky to
``status.resolvedTemplate`` while that template stays Ready.

Overrides: when the chosen template does not already match ``spec.overrides``, a namespaced
*derived* template ``<base>-ovr-…`` is planned with the base's spec and the overrides applied,
owned by every service that uses it; it runs its own discovery and is used once Ready. Unlike the
original, this works with an explicit template name too (there, the combination deadlocked), and
the service uses the derived template rather than the base.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from aim_deployer.model_resolution import MANAGED_BY, MANAGER, SERVICE_LABEL
from aim_deployer.overrides import Overrides
from aim_deployer.selection import (
    Selection,
    Verdict,
    overrides_match,
    select_template,
    template_traits,
)
from aim_deployer.service_view import ServiceView
from aimcore.api import hardware
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import GROUP_AIM, PART_OF_LABEL, PART_OF_VALUE, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.families.base import written
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template, template_kinds
from aimcore.domain.labels import ORIGIN_LABEL
from aimcore.domain.naming import derived_name, label_value
from aimcore.domain.status.rules import dependency_message
from aimcore.runtime import Informer, condition, owner_reference

TEMPLATE_READY = "TemplateReady"
RESOLVED = "Resolved"
TEMPLATE_NOT_FOUND = "TemplateNotFound"
TEMPLATE_NOT_READY = "TemplateNotReady"
CREATING_DERIVED = "CreatingDerivedTemplate"
DERIVED = "derived"
# a GPU override of 0 on a template without a GPU model: no GPU nodes to choose (issue 24)
GPU_OVERRIDE_NOT_APPLICABLE = "GPUOverrideNotApplicable"
# a usable model without templates, and only a user can give it some (issue 15)
MODEL_HAS_NO_TEMPLATES = "ModelHasNoTemplates"

# the model's conditions read to say why it has no templates (discovery's vocabulary)
IMAGE_METADATA_READY = "ImageMetadataReady"
SERVICE_TEMPLATES_READY = "ServiceTemplatesReady"
CLUSTER_TEMPLATES_READY = "ClusterServiceTemplatesReady"
NO_TEMPLATES_EXPECTED = "NoTemplatesExpected"
REFUSED_TEMPLATE_REASONS = frozenset(
    {"TemplateCreateRejected", "TemplateCreateForbidden", "TemplateNameConflict", "SomeTemplatesRejected"}
)


@dataclass(frozen=True)
class TemplatePlan:
    condition: ConditionReport
    template: Template | None = None  # the template to deploy (Ready)
    create: tuple[KindRef, Obj] | None = None  # a derived template to apply
    join: Template | None = None  # a derived template this service must co-own
    invalid: str | None = None  # ConfigValid=False reason (a named template that does not exist)
    selection: Selection | None = None  # the automatic selection, for the audit stream
    verdicts: tuple[Verdict, ...] = field(default_factory=tuple)


def find_named(informer: Informer, group: str, namespace: str | None, name: str) -> Template | None:
    """The template of that name: the namespace's first, then the cluster's."""
    for kind in template_kinds(group):
        found = Template.get(informer, kind, namespace, name)
        if found is not None:
            return found
    return None


def candidates(informer: Informer, group: str, namespace: str | None, model_name: str) -> list[Template]:
    out = [
        template
        for kind in template_kinds(group)
        for template in Template.each(informer, kind, namespace if kind.namespaced else None)
        if not template.deleting and template.model_name == model_name
    ]
    out.sort(key=lambda c: (not c.ref.namespaced, c.name))
    return out


def _waiting(template: Template, why: str) -> TemplatePlan:
    """``TemplateNotReady`` whatever the template's state, which the message names (the
    original's one reason; the status rules take a Failed, Degraded or NotAvailable from it)."""
    message = dependency_message(f"{why} {template.label}", template.state, template.ready_message)
    return TemplatePlan(condition(TEMPLATE_READY, False, TEMPLATE_NOT_READY, message), template)


def _use(template: Template, why: str, **extra: Any) -> TemplatePlan:
    if not template.ready:
        return _waiting(template, why)
    message = f"{why} {template.label}"
    return TemplatePlan(condition(TEMPLATE_READY, True, RESOLVED, message), template, **extra)


# -- derived templates --------------------------------------------------------------------------


def derived_template_name(base: str, overrides: Overrides) -> str:
    """The original's name for an override template (docs/original.md#derived-names);
    ``gpu.requests: 0``, which the original ignored, adds a ``0gpu`` part (its hash inputs are
    those of no count)."""
    model, count = overrides.gpu_model or "", overrides.gpu_count
    precision, metric = overrides.precision or "", overrides.metric or ""
    parts = [base, "ovr"]
    if model:
        parts.append(model.lower())
    if count is not None:
        parts.append(f"{count}gpu")
    parts += [p for p in (precision, metric) if p]
    inputs: list[Any] = ["gpu", model, "count", count or 0, "precision", precision, "metric", metric]
    if resource := overrides.custom_resource:  # not in the original's name: only a non-default one hashes
        inputs += ["resourceName", resource]
    return derived_name(parts, inputs, hash_length=4)


def derived_spec(group: str, base: Template, overrides: Overrides, model_name: str) -> Obj:
    """The base template's spec (as written) with the overrides applied (a discovered profile id
    no longer fits). A base written with the released ``spec.hardware`` is copied in the seed's
    spelling (``gpu``, ``resources``), so the overridden GPU cannot disagree with a
    ``hardware.gpu`` left behind."""
    spec: Obj = {
        k: v
        for k, v in hardware.seed_shape(written(base.resource.spec)).items()
        if k not in ("profileId", "type", "caching")
    }
    if overrides.metric:
        spec["metric"] = overrides.metric
    if overrides.precision:
        spec["precision"] = overrides.precision
    model, count = overrides.gpu_model, overrides.gpu_count
    if group == GROUP_AIM:
        spec["modelName"] = model_name
        gpu = dict(spec.get("gpu") or {})
        if model:
            gpu["model"] = model
        if count is not None:
            gpu["requests"] = count
        if resource := overrides.custom_resource:
            gpu["resourceName"] = resource
        if gpu:
            spec["gpu"] = gpu
    else:
        spec["aimImageName"] = model_name
        selector = dict(spec.get("gpuSelector") or {})
        if model:
            selector["model"] = model
        if count is not None:
            selector["count"] = count
        if selector:
            spec["gpuSelector"] = selector
    return spec


@dataclass(frozen=True)
class Ask:
    """What one service asks of template resolution."""

    informer: Informer
    service: ServiceView
    model_name: str
    overrides: Overrides | None


def plan_derived(ask: Ask, base: Template, overrides: Overrides) -> TemplatePlan:
    informer, service, model_name = ask.informer, ask.service, ask.model_name
    ref, namespace = service.ref, service.namespace
    kind = Template.kind(ref.group)
    name = derived_template_name(base.name, overrides)
    why = f"derived from {base.label} with overrides {overrides.describe()}:"
    existing = Template.get(informer, kind, namespace, name)
    if existing is not None and not existing.deleting:
        plan = _use(existing, why)
        if service.uid not in existing.owner_uids and existing.labels.get(ORIGIN_LABEL) == DERIVED:
            return TemplatePlan(plan.condition, plan.template, join=existing)
        return plan
    body = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                ORIGIN_LABEL: DERIVED,
                MANAGED_BY: MANAGER,
                PART_OF_LABEL: PART_OF_VALUE,
                SERVICE_LABEL: label_value(service.name),
                "aim.eai.amd.com/model": label_value(model_name),
            },
            "ownerReferences": [owner_reference(ref, service.obj, controller=False)],
        },
        "spec": derived_spec(ref.group, base, overrides, model_name),
    }
    message = f"creating AIMServiceTemplate {name} {why.rstrip(':')}"
    return TemplatePlan(condition(TEMPLATE_READY, False, CREATING_DERIVED, message), create=(kind, body))


# -- resolution ---------------------------------------------------------------------------------


def _with_overrides(ask: Ask, base: Template, why: str, **extra: Any) -> TemplatePlan:
    overrides = ask.overrides
    if overrides and not overrides_match(template_traits(base), overrides):
        if not base.ready:
            return _waiting(base, f"{why} (the base of the override template)")
        plan = plan_derived(ask, base, overrides)
        return TemplatePlan(plan.condition, plan.template, plan.create, plan.join, **extra)
    return _use(base, why, **extra)


def _gpu_override_not_applicable(plan: TemplatePlan, overrides: Overrides | None) -> TemplatePlan:
    """``gpu.requests: 0`` asks for the GPU nodes of the template's
    GPU without consuming GPUs. On a template that names no GPU model (a CPU template) there are
    no such nodes to choose, and the override was dropped without a word (issue 24): say so
    instead of deploying, unless the override names the GPU model itself."""
    if overrides is None or overrides.gpu_count != 0 or overrides.gpu_model:
        return plan
    if plan.template is not None:
        kind, name = plan.template.ref, plan.template.name
        named = template_traits(plan.template).gpu_model
    elif plan.create is not None:  # the derived template's body, being made
        kind, body = plan.create
        name = body["metadata"]["name"]
        spec = body["spec"]
        gpu = spec.get("gpu")  # the body being written (the current group's spelling)
        named = str(gpu.get("model") or "") if isinstance(gpu, Mapping) else ""
    else:
        return plan
    if named:
        return plan
    # (the legacy group's gpuSelector.count is at least 1: only the current group asks for 0)
    message = (
        f"overrides.gpu.requests: 0 asks for GPU nodes without GPU resources, but {kind.kind} "
        f"{name} names no GPU model (it runs on CPU), so there are no GPU nodes "
        "to choose: set the GPU model in the override (e.g. gpu.model: MI300X) to run on those "
        "nodes, or remove the GPU override to run on CPU"
    )
    return TemplatePlan(condition(TEMPLATE_READY, False, GPU_OVERRIDE_NOT_APPLICABLE, message))


def resolve_template(
    informer: Informer, service: ServiceView, model: Model, cluster_gpus: Collection[str]
) -> TemplatePlan:
    plan = _resolve_template(informer, service, model, cluster_gpus)
    return _gpu_override_not_applicable(plan, service.overrides)


def _resolve_template(
    informer: Informer, service: ServiceView, model: Model, cluster_gpus: Collection[str]
) -> TemplatePlan:
    ref, namespace = service.ref, service.namespace
    overrides = service.overrides
    ask = Ask(informer, service, model.name, overrides)

    name = service.template_name
    if name:
        found = find_named(informer, ref.group, namespace, name)
        if found is None:
            message = (
                f"no AIMServiceTemplate in namespace {namespace} or AIMClusterServiceTemplate named {name!r}"
            )
            return TemplatePlan(
                condition(TEMPLATE_READY, False, TEMPLATE_NOT_FOUND, message), invalid="ReferenceNotFound"
            )
        return _with_overrides(ask, found, "using")

    default = model.default_template
    if default:
        found = find_named(informer, ref.group, namespace, default)
        if found is not None:
            return _with_overrides(ask, found, "using the model's default template")
        # not a silent fall back to automatic selection: the model says which template to run
        message = (
            f"{model.label} has spec.defaultServiceTemplate {default!r}, but there is "
            f"no AIMServiceTemplate in namespace {namespace} or AIMClusterServiceTemplate of that name: "
            "create it, correct the model's defaultServiceTemplate, or name a template in "
            "spec.template.name"
        )
        return TemplatePlan(
            condition(TEMPLATE_READY, False, TEMPLATE_NOT_FOUND, message), invalid="ReferenceNotFound"
        )

    sticky = service.previous_template
    if sticky is not None and sticky.name and sticky.kind:
        found = Template.get(informer, by_kind(ref.group, sticky.kind), namespace, sticky.name)
        if found is not None and found.uid == sticky.uid and found.ready and found.model_name == model.name:
            return _use(found, "selected")

    pool = candidates(informer, ref.group, namespace, model.name)
    allow = service.allow_unoptimized
    selection = select_template(pool, overrides=overrides, allow_unoptimized=allow, cluster_gpus=cluster_gpus)
    if selection.chosen is not None:
        return _use(selection.chosen, "selected", selection=selection, verdicts=selection.verdicts)
    if overrides and selection.reason == "ServiceOverridesNotMatched":
        # nothing matches the overrides yet: derive one from the best template without them
        base = select_template(pool, overrides=None, allow_unoptimized=allow, cluster_gpus=cluster_gpus)
        if base.chosen is not None:
            return _with_overrides(ask, base.chosen, "selected", selection=base, verdicts=base.verdicts)
    reason, message = selection.reason, selection.message
    if not pool:
        reason, message = why_no_templates(model) or (reason, message)
    return TemplatePlan(
        condition(TEMPLATE_READY, False, reason, message),
        selection=selection,
        verdicts=selection.verdicts,
    )


def why_no_templates(model: Model) -> tuple[str, str] | None:
    """Why a usable model has no templates, from its own conditions: its image metadata cannot be
    read (the model's reason: ``RegistryError``, ``ImageNotFound``...), the API server refused
    its templates, or it has none to make (``ModelHasNoTemplates``: only a user can add one).
    ``None`` when the model does not say (its templates may still be on their way)."""
    what = f"{model.label} has no templates"
    metadata = model.condition(IMAGE_METADATA_READY)
    if metadata is not None and metadata.status == "False" and metadata.reason:
        return (
            metadata.reason,
            f"{what}: its image metadata cannot be read ({metadata.reason}: {metadata.message})",
        )
    templates = model.condition(SERVICE_TEMPLATES_READY) or model.condition(CLUSTER_TEMPLATES_READY)
    if templates is None:
        return None
    if templates.status == "True" and templates.reason == NO_TEMPLATES_EXPECTED:
        return MODEL_HAS_NO_TEMPLATES, f"{what}: {templates.message}"
    if templates.reason in REFUSED_TEMPLATE_REASONS:
        return templates.reason, f"{what}: {templates.message}"
    return None
