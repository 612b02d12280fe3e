"""Models and templates of both API groups, read through one vocabulary.

The current group (``aim.eai.amd.com``) and the legacy one (``aim.silogen.ai``, generation 1
images and generation 2 models) spell the same ideas differently: ``spec.modelName`` vs
``spec.aimImageName``, ``spec.gpu {requests, model, minVram}`` vs ``spec.gpuSelector {count, model}``,
``spec.customTemplates`` vs ``spec.custom.templates``, ``discovery.extractMetadata`` vs
``discovery.enabled``; and a current-group template may give its hardware the seed's way
(``spec.gpu``, CPU in ``spec.resources``) or the released original's (``spec.hardware {gpu, cpu}``,
:mod:`aimcore.api.hardware`). The discovery service and the deployer work through these views and
never look at the spelling themselves. Pure: wire-form dicts in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api import hardware
from aimcore.api.kinds import (
    GROUP_AIM,
    GROUP_LEGACY,
    MODEL_KINDS,
    RUNTIME_CONFIG_KINDS,
    TEMPLATE_KINDS,
    KindRef,
    by_kind,
)
from aimcore.api.types import Obj

AIM = GROUP_AIM
LEGACY = GROUP_LEGACY

MODEL_LABEL = "aim.eai.amd.com/model"
ORIGIN_LABEL = "aim.eai.amd.com/origin"
AUTO_GENERATED = "auto-generated"


def is_model(ref: KindRef) -> bool:
    return ref in MODEL_KINDS


def is_template(ref: KindRef) -> bool:
    return ref in TEMPLATE_KINDS


def is_runtime_config(ref: KindRef) -> bool:
    return ref in RUNTIME_CONFIG_KINDS


def model_kinds(template: KindRef) -> list[KindRef]:
    """Where a template looks its model up, in order: the namespace first (namespaced templates),
    then the cluster. Legacy templates name a generation-2 model or a generation-1 image."""
    if template.group == AIM:
        kinds = ["AIMModel", "AIMClusterModel"] if template.namespaced else ["AIMClusterModel"]
    else:
        cluster = ["AIMClusterModel", "AIMClusterImage"]
        kinds = ["AIMModel", "AIMImage", *cluster] if template.namespaced else cluster
    return [by_kind(template.group, k) for k in kinds]


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
        """The GPU the template needs: ``spec.gpu`` or ``spec.hardware.gpu`` (legacy: ``gpuSelector``)."""
        if self.ref.group == AIM:
            gpu = hardware.effective_gpu(self.spec)
            if gpu is None:
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
    def gpu_field(self) -> str:
        """Where the GPU requirement is written: ``spec.gpu``, ``spec.hardware.gpu`` or ``gpuSelector``."""
        return hardware.gpu_field(self.spec) if self.ref.group == AIM else "spec.gpuSelector"

    @property
    def cpu(self) -> Obj | None:
        """The template's CPU ``{requests, limits}`` from ``spec.resources`` or ``spec.hardware.cpu``."""
        return hardware.effective_cpu(self.spec)

    @property
    def resources(self) -> Obj | None:
        """``spec.resources`` with the CPU of ``spec.hardware.cpu`` filled in (what a service gets)."""
        return hardware.effective_resources(self.spec)

    @property
    def inline_sources(self) -> list[Obj]:
        return [dict(s) for s in self.spec.get("modelSources") or [] if isinstance(s, Mapping)]

    @property
    def caching_enabled(self) -> bool:
        caching = self.spec.get("caching")
        return isinstance(caching, Mapping) and bool(caching.get("enabled"))


def resolved_reference(ref: KindRef, obj: Mapping[str, Any]) -> Obj:
    """An ``AIMResolvedReference`` (``status.resolvedModel``, ``resolvedTemplate``, …) to ``obj``."""
    meta = obj["metadata"]
    out: Obj = {
        "name": meta["name"],
        "scope": "Namespace" if ref.namespaced else "Cluster",
        "kind": ref.kind,
    }
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    if meta.get("uid"):
        out["uid"] = meta["uid"]
    return out


READY_STATES = ("Ready", "Available")  # the legacy group's templates and caches say Available


def state_of(obj: Mapping[str, Any]) -> str:
    """``status.status`` of any AIM object (``Pending`` until something wrote it)."""
    return str((obj.get("status") or {}).get("status") or "Pending")


def is_ready(obj: Mapping[str, Any]) -> bool:
    return state_of(obj) in READY_STATES


def ready_reason(obj: Mapping[str, Any]) -> str:
    """The reason of the object's ``Ready`` condition, or ``""``."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("reason"):
            return str(c["reason"])
    return ""


def ready_message(obj: Mapping[str, Any]) -> str:
    """The message of the object's ``Ready`` condition, or ``""``."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("message"):
            return str(c["message"])
    return ""
