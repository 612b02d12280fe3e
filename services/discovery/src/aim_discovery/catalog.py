"""What models and templates look like to the discovery service, for both API groups and scopes,
and the templates a model should have. Pure: wire-form dicts in, wire-form dicts out.

The current group (``aim.eai.amd.com``) and the legacy one (``aim.silogen.ai``, generation 1
images and generation 2 models) spell the same ideas differently: ``spec.modelName`` vs
``spec.aimImageName``, ``spec.gpu {requests, model, minVram}`` vs ``spec.gpuSelector {count, model}``,
``spec.customTemplates`` vs ``spec.custom.templates``, ``discovery.extractMetadata`` vs
``discovery.enabled``. The controllers work through the accessors here and never look at the
spelling themselves.

Template names, labels and owner references follow reference §1.4/§1.5 so ``kubectl get aimtpl``
shows what the Go operator would; the labels and owner references every child carries, and how a
child is compared with the cluster's copy, are :mod:`aimcore.children`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aimcore.children import child_labels, owner_reference
from aimcore.kinds import KindRef, by_kind
from aimcore.naming import derived_name, label_value
from aimcore.runtimeconfig import merge_env

Obj = dict[str, Any]

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"

MODEL_LABEL = "aim.eai.amd.com/model"
ORIGIN_LABEL = "aim.eai.amd.com/origin"
ALIAS_LABEL = "aim.eai.amd.com/template.alias"
AUTO_GENERATED = "auto-generated"
MODEL_CONTROLLER = "aim-model-controller"
TEMPLATE_CONTROLLER = "aim-template-controller"

MODEL_KINDS = {
    (AIM, "AIMModel"),
    (AIM, "AIMClusterModel"),
    (LEGACY, "AIMImage"),
    (LEGACY, "AIMClusterImage"),
    (LEGACY, "AIMModel"),
    (LEGACY, "AIMClusterModel"),
}
TEMPLATE_KINDS = {
    (AIM, "AIMServiceTemplate"),
    (AIM, "AIMClusterServiceTemplate"),
    (LEGACY, "AIMServiceTemplate"),
    (LEGACY, "AIMClusterServiceTemplate"),
}
RUNTIME_CONFIG_KINDS = {
    (AIM, "AIMRuntimeConfig"),
    (AIM, "AIMClusterRuntimeConfig"),
    (LEGACY, "AIMRuntimeConfig"),
    (LEGACY, "AIMClusterRuntimeConfig"),
}

_METRIC_SHORT = {"latency": "lat", "throughput": "thr"}


def is_model(ref: KindRef) -> bool:
    return (ref.group, ref.kind) in MODEL_KINDS


def is_template(ref: KindRef) -> bool:
    return (ref.group, ref.kind) in TEMPLATE_KINDS


def is_runtime_config(ref: KindRef) -> bool:
    return (ref.group, ref.kind) in RUNTIME_CONFIG_KINDS


def template_kind(model: KindRef) -> KindRef:
    """The template kind a model creates (same group, same scope)."""
    return by_kind(model.group, "AIMServiceTemplate" if model.namespaced else "AIMClusterServiceTemplate")


def model_kinds(template: KindRef) -> list[KindRef]:
    """Where a template looks its model up, in order: the namespace first (namespaced templates),
    then the cluster. Legacy templates name a generation-2 model or a generation-1 image."""
    if template.group == AIM:
        kinds = ["AIMModel", "AIMClusterModel"] if template.namespaced else ["AIMClusterModel"]
    else:
        cluster = ["AIMClusterModel", "AIMClusterImage"]
        kinds = ["AIMModel", "AIMImage", *cluster] if template.namespaced else cluster
    return [by_kind(template.group, k) for k in kinds]


def templates_condition(model: KindRef) -> str:
    return "ServiceTemplatesReady" if model.namespaced else "ClusterServiceTemplatesReady"


def model_condition(template: KindRef) -> str:
    return "ModelReady" if template.namespaced else "ClusterModelReady"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def secret_names(refs: Any) -> list[str]:
    return [str(r["name"]) for r in refs or [] if isinstance(r, Mapping) and r.get("name")]


# -- models --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectView:
    """What models and templates both say, spelled the same in both groups."""

    ref: KindRef
    obj: Obj

    @property
    def spec(self) -> Mapping[str, Any]:
        return _spec(self.obj)

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        ns = self.obj["metadata"].get("namespace")
        return str(ns) if ns else None

    @property
    def pull_secrets(self) -> list[str]:
        return secret_names(self.spec.get("imagePullSecrets"))

    @property
    def service_account(self) -> str | None:
        sa = self.spec.get("serviceAccountName")
        return str(sa) if sa else None


@dataclass(frozen=True)
class ModelView(ObjectView):
    """A model (or legacy image) as the discovery service sees it, whatever its group."""

    @property
    def image(self) -> str:
        return str(self.spec.get("image") or "")

    @property
    def env(self) -> list[Obj]:
        return [dict(e) for e in self.spec.get("env") or [] if isinstance(e, Mapping)]

    @property
    def model_sources(self) -> list[Obj]:
        return [dict(s) for s in self.spec.get("modelSources") or [] if isinstance(s, Mapping)]

    @property
    def is_custom(self) -> bool:
        return bool(self.model_sources)

    @property
    def custom(self) -> Mapping[str, Any]:
        custom = self.spec.get("custom")
        return custom if isinstance(custom, Mapping) else {}

    @property
    def custom_templates(self) -> list[Mapping[str, Any]]:
        raw = self.spec.get("customTemplates") if self.ref.group == AIM else self.custom.get("templates")
        return [t for t in raw or [] if isinstance(t, Mapping)]

    @property
    def spec_metadata(self) -> Obj | None:
        md = self.spec.get("imageMetadata")
        return dict(md) if isinstance(md, Mapping) else None

    def _discovery(self, current: str, legacy: str) -> bool | None:
        discovery = self.spec.get("discovery")
        if not isinstance(discovery, Mapping):
            return None
        value = discovery.get(current if self.ref.group == AIM else legacy)
        return bool(value) if value is not None else None

    def extract_metadata(self, auto_discovery: bool | None) -> bool:
        """Whether to read the image's labels: the model's own setting, else the runtime
        config's ``model.autoDiscovery``, else yes."""
        own = self._discovery("extractMetadata", "enabled")
        if own is not None:
            return own
        return auto_discovery if auto_discovery is not None else True

    def create_templates(self, auto_discovery: bool | None) -> bool:
        own = self._discovery("createServiceTemplates", "autoCreateTemplates")
        if own is not None:
            return own
        return auto_discovery if auto_discovery is not None else True


# -- templates -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPURequirement:
    model: str | None = None
    requests: int | None = None
    min_vram: str | int | None = None
    resource_name: str = "amd.com/gpu"

    @property
    def required(self) -> bool:
        return bool(self.requests) or bool(self.model) or self.min_vram is not None


@dataclass(frozen=True)
class TemplateView(ObjectView):
    """A template as the discovery service sees it, whatever its group."""

    @property
    def model_name(self) -> str:
        key = "modelName" if self.ref.group == AIM else "aimImageName"
        return str(self.spec.get(key) or "")

    @property
    def gpu(self) -> GPURequirement:
        if self.ref.group == AIM:
            gpu = self.spec.get("gpu")
            if not isinstance(gpu, Mapping):
                return GPURequirement()
            return GPURequirement(
                model=gpu.get("model") or None,
                requests=gpu.get("requests"),
                min_vram=gpu.get("minVram"),
                resource_name=str(gpu.get("resourceName") or "amd.com/gpu"),
            )
        selector = self.spec.get("gpuSelector")
        if not isinstance(selector, Mapping):
            return GPURequirement()
        return GPURequirement(model=selector.get("model") or None, requests=selector.get("count"))

    @property
    def inline_sources(self) -> list[Obj]:
        return [dict(s) for s in self.spec.get("modelSources") or [] if isinstance(s, Mapping)]

    @property
    def caching_enabled(self) -> bool:
        caching = self.spec.get("caching")
        return isinstance(caching, Mapping) and bool(caching.get("enabled"))


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
        out.append(PlannedTemplate(name, _template_spec(model, spec, hardware, env=env), labels))
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
    model: ModelView, spec: Obj, hardware: Mapping[str, Any], *, env: Sequence[Obj] = ()
) -> Obj:
    """The wire-form template spec in the model's group."""
    out: Obj = dict(spec)
    gpu = hardware.get("gpu") if isinstance(hardware.get("gpu"), Mapping) else None
    cpu = hardware.get("cpu") if isinstance(hardware.get("cpu"), Mapping) else None
    runtime_config = model.spec.get("runtimeConfigName")
    if model.ref.group == AIM:
        out["modelName"] = model.name
        if gpu:
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
