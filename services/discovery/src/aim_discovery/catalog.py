"""The templates a model should have (recommended deployments, custom templates), as wire-form
template objects. Pure: a model read through its family in, wire-form dicts out. How models of
both groups are read is :class:`aimcore.domain.families.models.Model`'s; the fragments a template
copies (hardware, env, model sources) are taken as the model wrote them.

Template names, labels and owner references follow the original (docs/original.md#derived-names,
docs/original.md#labels-and-annotations-children-inherit) so ``kubectl get aimtpl`` shows what the
Go operator would; the labels and owner references every child carries, and how a
child is compared with the cluster's copy, are :mod:`aimcore.runtime.children`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aimcore.api.crds.aim import AIMCustomTemplate
from aimcore.api.hardware import canonical_hardware
from aimcore.api.kinds import GROUP_AIM, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.base import written
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template
from aimcore.domain.labels import AUTO_GENERATED, MODEL_LABEL, ORIGIN_LABEL
from aimcore.domain.naming import derived_name, label_value
from aimcore.domain.runtimeconfig import merge_env
from aimcore.runtime import child_labels, owner_reference

ALIAS_LABEL = "aim.eai.amd.com/template.alias"
MODEL_CONTROLLER = "aim-model-controller"
TEMPLATE_CONTROLLER = "aim-template-controller"


_METRIC_SHORT = {"latency": "lat", "throughput": "thr"}


def template_kind(model: KindRef) -> KindRef:
    """The template kind a model creates (same group, same scope)."""
    return Template.kind(model.group, cluster=not model.namespaced)


def templates_condition(model: KindRef) -> str:
    return "ServiceTemplatesReady" if model.namespaced else "ClusterServiceTemplatesReady"


def model_condition(template: KindRef) -> str:
    return "ModelReady" if template.namespaced else "ClusterModelReady"


@dataclass(frozen=True)
class PlannedTemplate:
    """A template a model should have: its name, the labels and spec the model sets."""

    name: str
    spec: Obj
    labels: dict[str, str] = field(default_factory=dict)


def recommended_template(model: Model, deployment: Mapping[str, Any]) -> PlannedTemplate:
    """The template for one recommended deployment of an image's labels (docs/original.md#derived-names):
    ``<image URI>-<n>x-<gpu>-<lat|thr>-<precision>-<4 hex>``; the deployment's ``profileId`` becomes
    the template's ``spec.profileId`` (the released original; not part of the name)."""
    gpu = str(deployment.get("gpuModel") or "")
    count = int(deployment.get("gpuCount") or 0)
    metric = str(deployment.get("metric") or "")
    precision = str(deployment.get("precision") or "")
    # each piece only when the deployment sets it, as the original's GenerateTemplateName
    counted = f"x{count}" if count > 0 else ""
    hardware_part = f"{count}x-{gpu}" if gpu and counted else gpu or counted
    profile = "-".join(p for p in (hardware_part, _METRIC_SHORT.get(metric, metric), precision) if p)
    hashed = f"{model.name}-{model.image}"
    hashed += "".join(f"-{p}" for p in (gpu, counted, metric, precision) if p)
    name = derived_name([model.image, profile], [hashed], hash_length=4)
    spec: Obj = {}
    if metric:
        spec["metric"] = metric
    if precision:
        spec["precision"] = precision
    profile_id = str(deployment.get("profileId") or "")
    if profile_id and model.ref.group == GROUP_AIM:  # the legacy group's templates have no profileId
        spec["profileId"] = profile_id
    hardware: Obj = {"gpu": {"requests": count, "model": gpu}} if gpu and count > 0 else {}
    return PlannedTemplate(name, _template_spec(model, spec, hardware))


def custom_templates(model: Model) -> list[PlannedTemplate]:
    """Templates from ``customTemplates`` (legacy: ``custom.templates``); for a custom model
    without any, one from ``custom.hardware``."""
    entries: list[AIMCustomTemplate | None] = list(model.custom_templates)
    if not entries and model.is_custom:
        entries = [None]  # the auto template: no entry of its own
    out = []
    custom = model.custom
    default_hw = written(custom.hardware) if custom is not None and custom.hardware is not None else {}
    default_type = str(custom.type) if custom is not None and custom.type else ""
    for index, entry in enumerate(entries):
        alias = (entry.name if entry is not None else None) or ""
        profile = entry.profile if entry is not None else None
        precision = str(profile.precision or "") if profile is not None else ""
        metric = str(profile.metric or "") if profile is not None else ""
        own = entry.hardware if entry is not None else None
        hardware = merge_hardware(default_hw, written(own) if own is not None else None)
        own_gpu = own.gpu if own is not None else None
        gpu_model = str(own_gpu.model or "") if own_gpu is not None else ""
        # the original's generateCustomTemplateName: the auto template (no entry) hashes [model,
        # index]; an entry adds its alias, its profile (if any) and its own GPU (if any)
        hashed: list[Any] = [model.name, index]
        if entry is not None and entry.model_fields_set:
            hashed.append(alias)
            if profile is not None:
                hashed += [precision, metric]
            if own_gpu is not None:
                hashed += [int(own_gpu.requests or 0), gpu_model]
        name = derived_name([model.name, "custom", *(p for p in (alias, precision, gpu_model) if p)], hashed)
        spec: Obj = {}
        if metric:
            spec["metric"] = metric
        if precision:
            spec["precision"] = precision
        if model.is_custom or model.ref.group == GROUP_AIM:
            # every entry's template has a type, as the original writes them (an image model's
            # too): the entry's only when written (the model fills in unoptimized), then the model's
            own_type = str(entry.type) if entry is not None and "type" in entry.model_fields_set else ""
            spec["type"] = own_type or default_type or "unoptimized"
        own_env = [written(e) for e in entry.env or []] if entry is not None else []
        env = merge_env(model.written_env, own_env)
        labels = {ALIAS_LABEL: label_value(alias)} if alias else {}
        planned = _template_spec(model, spec, hardware, env=env)
        out.append(PlannedTemplate(name, planned, labels))
    return out


def merge_hardware(default: Any, override: Any) -> Obj:
    """Field-wise merge of a custom template's hardware over the model's ``custom.hardware``: the
    template's non-empty GPU fields win; CPU merged the same way."""
    out: Obj = {}
    for part in ("gpu", "cpu"):
        base = default.get(part) if isinstance(default, Mapping) else None
        over = override.get(part) if isinstance(override, Mapping) else None
        merged = {**(base or {}), **{k: v for k, v in (over or {}).items() if v not in (None, "", [])}}
        if merged:
            out[part] = merged
    return out


def _template_spec(model: Model, spec: Obj, hardware: Mapping[str, Any], *, env: Sequence[Obj] = ()) -> Obj:
    """The wire-form template spec in the model's group: the hardware goes to ``spec.hardware {gpu,
    cpu}`` as the original writes every generated template (its CPU also to ``spec.resources``, as
    there); the legacy group has only ``gpuSelector``. Quantities are as Kubernetes writes them
    back (``2000m`` → ``"2"``: :func:`aimcore.api.hardware.canonical_hardware`), as the original's
    Go types copy them."""
    out: Obj = dict(spec)
    hardware = canonical_hardware(hardware)
    gpu = hardware.get("gpu") if isinstance(hardware.get("gpu"), Mapping) else None
    cpu = hardware.get("cpu") if isinstance(hardware.get("cpu"), Mapping) else None
    runtime_config = model.runtime_config_name
    if model.ref.group == GROUP_AIM:
        out["modelName"] = model.name
        if gpu or cpu:
            out["hardware"] = {
                part: {k: v for k, v in values.items() if v not in (None, "")}
                for part, values in (("gpu", gpu), ("cpu", cpu))
                if values
            }
        if model.is_custom:
            out["modelSources"] = model.written_sources
        if env:
            out["env"] = list(env)
    else:
        out["aimImageName"] = model.name
        if gpu and (gpu.get("requests") or gpu.get("model")):
            selector: Obj = {}
            if gpu.get("requests"):
                selector["count"] = gpu["requests"]
            if gpu.get("model"):
                selector["model"] = gpu["model"]
            out["gpuSelector"] = selector
        if env and model.ref.namespaced:
            out["env"] = list(env)
    if cpu and cpu.get("requests") is not None:
        resources: Obj = {"requests": {"cpu": cpu["requests"]}}
        if cpu.get("limits") is not None:
            resources["limits"] = {"cpu": cpu["limits"]}
        out["resources"] = resources
    if runtime_config:
        out["runtimeConfigName"] = runtime_config
    if (model.ref.group == GROUP_AIM or model.ref.namespaced) and model.pull_secrets:
        out["imagePullSecrets"] = [{"name": s} for s in model.pull_secrets]
    if model.ref.group == GROUP_AIM and model.service_account:
        out["serviceAccountName"] = model.service_account
    return out


def template_body(planned: PlannedTemplate, kind: KindRef, model: Model, inherited: Mapping[str, str]) -> Obj:
    """The full template object a model applies (owner: the model, so it is garbage-collected)."""
    labels = {
        **inherited,
        MODEL_LABEL: label_value(model.name),
        ORIGIN_LABEL: AUTO_GENERATED,
        **child_labels(MODEL_CONTROLLER),
        **planned.labels,
    }
    meta: Obj = {
        "name": planned.name,
        "labels": labels,
        "ownerReferences": [owner_reference(model.ref, model.obj)],
    }
    if kind.namespaced and model.namespace:
        meta["namespace"] = model.namespace
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, "spec": planned.spec}
