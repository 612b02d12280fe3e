"""The templates a model should have (recommended deployments, custom templates), as wire-form
template objects. Pure: wire-form dicts in, wire-form dicts out. How models and templates of both
groups are read is :mod:`aimcore.domain.views`'.

Template names, labels and owner references follow reference §1.4/§1.5 so ``kubectl get aimtpl``
shows what the Go operator would; the labels and owner references every child carries, and how a
child is compared with the cluster's copy, are :mod:`aimcore.runtime.children`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aimcore.api.kinds import KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.naming import derived_name, label_value
from aimcore.domain.runtimeconfig import merge_env
from aimcore.domain.views import AIM, AUTO_GENERATED, MODEL_LABEL, ORIGIN_LABEL, ModelView
from aimcore.runtime.children import child_labels, owner_reference

ALIAS_LABEL = "aim.eai.amd.com/template.alias"
MODEL_CONTROLLER = "aim-model-controller"
TEMPLATE_CONTROLLER = "aim-template-controller"


_METRIC_SHORT = {"latency": "lat", "throughput": "thr"}


def template_kind(model: KindRef) -> KindRef:
    """The template kind a model creates (same group, same scope)."""
    return by_kind(model.group, "AIMServiceTemplate" if model.namespaced else "AIMClusterServiceTemplate")


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


def recommended_template(model: ModelView, deployment: Mapping[str, Any]) -> PlannedTemplate:
    """The template for one recommended deployment of an image's labels (reference §1.4):
    ``<image URI>-<n>x-<gpu>-<lat|thr>-<precision>-<4 hex>``."""
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
    hardware: Obj = {"gpu": {"requests": count, "model": gpu}} if gpu and count > 0 else {}
    return PlannedTemplate(name, _template_spec(model, spec, hardware))


def custom_templates(model: ModelView) -> list[PlannedTemplate]:
    """Templates from ``customTemplates`` (legacy: ``custom.templates``); for a custom model
    without any, one from ``custom.hardware``."""
    entries = list(model.custom_templates)
    if not entries and model.is_custom:
        entries = [{}]
    out = []
    default_hw = model.custom.get("hardware") if isinstance(model.custom.get("hardware"), Mapping) else {}
    for index, entry in enumerate(entries):
        alias = str(entry.get("name") or "")
        profile = entry.get("profile") if isinstance(entry.get("profile"), Mapping) else None
        precision = str((profile or {}).get("precision") or "")
        metric = str((profile or {}).get("metric") or "")
        hardware = merge_hardware(default_hw, entry.get("hardware"))
        own = entry.get("hardware") if isinstance(entry.get("hardware"), Mapping) else {}
        own_gpu = own.get("gpu") if isinstance(own, Mapping) and isinstance(own.get("gpu"), Mapping) else None
        gpu_model = str((own_gpu or {}).get("model") or "")
        # the original's generateCustomTemplateName: the auto template (no entry) hashes [model,
        # index]; an entry adds its alias, its profile (if any) and its own GPU (if any)
        hashed: list[Any] = [model.name, index]
        if entry:
            hashed.append(alias)
            if profile is not None:
                hashed += [precision, metric]
            if own_gpu is not None:
                hashed += [int(own_gpu.get("requests") or 0), gpu_model]
        name = derived_name([model.name, "custom", *(p for p in (alias, precision, gpu_model) if p)], hashed)
        spec: Obj = {}
        if metric:
            spec["metric"] = metric
        if precision:
            spec["precision"] = precision
        if model.is_custom:
            spec["type"] = str(entry.get("type") or model.custom.get("type") or "unoptimized")
        env = merge_env(model.env, [dict(e) for e in entry.get("env") or [] if isinstance(e, Mapping)])
        labels = {ALIAS_LABEL: label_value(alias)} if alias else {}
        planned = _template_spec(model, spec, hardware, env=env, released=True)
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


def _template_spec(
    model: ModelView,
    spec: Obj,
    hardware: Mapping[str, Any],
    *,
    env: Sequence[Obj] = (),
    released: bool = False,
) -> Obj:
    """The wire-form template spec in the model's group. ``released``: the hardware goes to
    ``spec.hardware {gpu, cpu}`` as the released original writes a custom model's templates (its CPU
    also to ``spec.resources``, as there), else the GPU to the seed's ``spec.gpu``; the legacy group
    has only ``gpuSelector``. Quantities are copied as written."""
    out: Obj = dict(spec)
    gpu = hardware.get("gpu") if isinstance(hardware.get("gpu"), Mapping) else None
    cpu = hardware.get("cpu") if isinstance(hardware.get("cpu"), Mapping) else None
    runtime_config = model.spec.get("runtimeConfigName")
    if model.ref.group == AIM:
        out["modelName"] = model.name
        if released and (gpu or cpu):
            out["hardware"] = {
                part: {k: v for k, v in values.items() if v not in (None, "")}
                for part, values in (("gpu", gpu), ("cpu", cpu))
                if values
            }
        elif gpu:
            out["gpu"] = {k: v for k, v in gpu.items() if v not in (None, "")}
        if model.is_custom:
            out["modelSources"] = model.model_sources
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
    if (model.ref.group == AIM or model.ref.namespaced) and model.pull_secrets:
        out["imagePullSecrets"] = [{"name": s} for s in model.pull_secrets]
    if model.ref.group == AIM and model.service_account:
        out["serviceAccountName"] = model.service_account
    return out


def template_body(
    planned: PlannedTemplate, kind: KindRef, model: ModelView, inherited: Mapping[str, str]
) -> Obj:
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
