"""Service templates of both API groups in one vocabulary: the model they are for
(``modelName``/``aimImageName``), the GPU they need (``gpu``, the released ``hardware.gpu``, legacy
``gpuSelector``: :mod:`aimcore.api.hardware`), their resources, and what discovery wrote in their
status (the profile, the resolved hardware)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.crds import aim, silogen
from aimcore.api.crds.aim import AIMCpuRequirements, AIMModelSource
from aimcore.api.crds.base import EnvVar, ResourceRequirements
from aimcore.api.kinds import TEMPLATE_KINDS, TEMPLATE_PAIRS, KindPair, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.base import Deployable, written
from aimcore.domain.families.caches import CacheSource

__all__ = ["AnyTemplate", "GPURequirement", "Profile", "Template", "template_kinds", "with_cpu"]

AnyTemplate = (
    aim.AIMServiceTemplate
    | aim.AIMClusterServiceTemplate
    | silogen.AIMServiceTemplate
    | silogen.AIMClusterServiceTemplate
)
_SIDES = ("requests", "limits")


def template_kinds(group: str) -> KindPair:
    """The namespaced and the cluster template kind of a group (the order a service looks in)."""
    return TEMPLATE_PAIRS[group]


@dataclass(frozen=True)
class GPURequirement:
    """The GPU a template needs (:attr:`Template.gpu`), in both groups' terms: ``model``,
    ``requests`` (legacy ``count``), ``minVram`` (the current group's) and the resource name."""

    model: str | None = None
    requests: int | None = None
    min_vram: str | int | None = None
    resource_name: str = "amd.com/gpu"

    @property
    def required(self) -> bool:
        """Whether it needs a GPU at all (a count of 0 and nothing else is none)."""
        return bool(self.requests) or bool(self.model) or self.min_vram is not None


@dataclass(frozen=True)
class Profile:
    """What discovery found the template's profile to be (``status.profile.metadata``), as
    written: readers normalise (case, GPU names, counts given as text)."""

    type: Any = None
    metric: Any = None
    precision: Any = None
    gpu: Any = None
    gpu_count: Any = None  # ``gpuCount`` (``gpu_count``, discovery's own spelling, accepted)


class Template(Deployable[AnyTemplate]):
    """A template, whatever its group and scope."""

    kinds = TEMPLATE_KINDS

    @classmethod
    def kind(cls, group: str, *, cluster: bool = False) -> KindRef:
        """The template kind of ``group``: ``AIMServiceTemplate``, or with ``cluster``
        ``AIMClusterServiceTemplate``."""
        return TEMPLATE_PAIRS[group].scoped(cluster=cluster)

    @property
    def model_name(self) -> str:
        """The model it is for: ``spec.modelName`` (legacy ``aimImageName``)."""
        spec = self.resource.spec
        if isinstance(spec, silogen.AIMServiceTemplateSpecCommon):
            return spec.aim_image_name
        return spec.model_name

    @property
    def gpu(self) -> GPURequirement:
        """The GPU it needs: ``spec.gpu`` or ``spec.hardware.gpu`` (legacy ``gpuSelector``)."""
        spec = self.resource.spec
        if isinstance(spec, silogen.AIMServiceTemplateSpecCommon):
            selector = spec.gpu_selector
            if selector is None:
                return GPURequirement()
            return GPURequirement(model=selector.model or None, requests=selector.count)
        gpu = spec.gpu or (spec.hardware.gpu if spec.hardware is not None else None)
        if gpu is None:
            return GPURequirement()
        return GPURequirement(
            model=gpu.model or None,
            requests=gpu.requests,
            min_vram=gpu.min_vram,
            resource_name=gpu.resource_name or "amd.com/gpu",
        )

    @property
    def gpu_field(self) -> str:
        """Where its GPU requirement is written: ``spec.gpu``, ``hardware.gpu`` or ``gpuSelector``."""
        spec = self.resource.spec
        if isinstance(spec, silogen.AIMServiceTemplateSpecCommon):
            return "spec.gpuSelector"
        if spec.gpu is None and spec.hardware is not None and spec.hardware.gpu is not None:
            return "spec.hardware.gpu"
        return "spec.gpu"

    @property
    def cpu(self) -> Obj | None:
        """The CPU it needs as ``{requests, limits}`` (either may be missing), as written:
        ``spec.resources`` first, then ``spec.hardware.cpu``; ``None`` when neither says any."""
        resources = self.resources or {}
        out = {side: resources[side]["cpu"] for side in _SIDES if "cpu" in (resources.get(side) or {})}
        return out or None

    @property
    def resources(self) -> Obj | None:
        """``spec.resources`` with the CPU of ``spec.hardware.cpu`` filled in where it gives none
        (what a service of the template gets), as written."""
        spec = self.resource.spec
        hardware = spec.hardware if isinstance(spec, aim.AIMServiceTemplateSpecCommon) else None
        return with_cpu(spec.resources, hardware.cpu if hardware is not None else None)

    @property
    def metric(self) -> str | None:
        return _text(self.resource.spec.metric)

    @property
    def precision(self) -> str | None:
        return _text(self.resource.spec.precision)

    @property
    def profile_type(self) -> str | None:
        """``spec.type`` (``optimized``, ``preview``, ``unoptimized``; the current group's only)."""
        spec = self.resource.spec
        return _text(spec.type) if isinstance(spec, aim.AIMServiceTemplateSpecCommon) else None

    @property
    def profile_id(self) -> str | None:
        spec = self.resource.spec
        return spec.profile_id or None if isinstance(spec, aim.AIMServiceTemplateSpecCommon) else None

    @property
    def env(self) -> list[EnvVar]:
        return list(getattr(self.resource.spec, "env", None) or [])

    @property
    def caching_env(self) -> list[EnvVar]:
        """``spec.caching.env``: the env of the download that caches its model."""
        caching = getattr(self.resource.spec, "caching", None)
        return list(caching.env or []) if caching is not None else []

    @property
    def model_sources(self) -> list[AIMModelSource]:
        spec = self.resource.spec
        return list(spec.model_sources or []) if isinstance(spec, aim.AIMServiceTemplateSpecCommon) else []

    @property
    def written_sources(self) -> list[Obj]:
        """``spec.modelSources`` as written (inline sources: used as they are, no discovery)."""
        return [written(s) for s in self.model_sources]

    @property
    def written_env(self) -> list[Obj]:
        """``spec.env`` as written (the last layer of its discovery Job's env)."""
        return [written(e) for e in self.env]

    @property
    def caching_enabled(self) -> bool:
        """``caching.enabled``: a namespaced template then owns an AIMTemplateCache."""
        caching = getattr(self.resource.spec, "caching", None)
        return caching is not None and bool(caching.enabled)

    # -- what discovery wrote (the status, as written) ---------------------------------------------

    @property
    def profile(self) -> Profile:
        profile = self.status.get("profile")
        metadata = profile.get("metadata") if isinstance(profile, Mapping) else None
        if not isinstance(metadata, Mapping):
            return Profile()
        count = metadata.get("gpuCount")
        return Profile(
            type=metadata.get("type"),
            metric=metadata.get("metric"),
            precision=metadata.get("precision"),
            gpu=metadata.get("gpu"),
            gpu_count=count if count is not None else metadata.get("gpu_count"),
        )

    @property
    def cache_sources(self) -> list[CacheSource]:
        """What caching its model takes: ``status.modelSources`` as discovery wrote them, else
        ``spec.modelSources`` (a custom model's template)."""
        found = self.discovered_sources or [written(s) for s in self.model_sources]
        return [CacheSource.of(s) for s in found]

    @property
    def discovery_job(self) -> Mapping[str, Any] | None:
        """``status.discoveryJob``: the Job discovery last ran for it."""
        job = self.status.get("discoveryJob")
        return job if isinstance(job, Mapping) else None

    @property
    def discovered_sources(self) -> list[Mapping[str, Any]]:
        """``status.modelSources``: the model sources discovery (or the spec) gave it."""
        return [s for s in self.status.get("modelSources") or [] if isinstance(s, Mapping)]

    def discovery_output(self) -> Obj:
        """What discovery wrote (``modelSources``, ``profile``, ``resolvedHardware``,
        ``discoveryJob``), as written: kept while the spec it was found for stays."""
        fields = ("modelSources", "profile", "resolvedHardware", "discoveryJob")
        return {k: self.status[k] for k in fields if self.status.get(k) is not None}

    @property
    def resolved_gpu_requests(self) -> Any:
        """``status.resolvedHardware.gpu.requests``: discovery's answer (an int or a quantity)."""
        hardware = self.status.get("resolvedHardware")
        gpu = hardware.get("gpu") if isinstance(hardware, Mapping) else None
        return gpu.get("requests") if isinstance(gpu, Mapping) else None

    @property
    def resolved_node_affinity(self) -> Mapping[str, Any] | None:
        """``status.resolvedNodeAffinity`` (a NodeAffinity, or a bare NodeSelector)."""
        resolved = self.status.get("resolvedNodeAffinity")
        return resolved if isinstance(resolved, Mapping) and resolved else None


def with_cpu(resources: ResourceRequirements | None, cpu: AIMCpuRequirements | None) -> Obj | None:
    """``resources`` as written, with the CPU of a ``hardware.cpu`` filled in where they give none
    (:mod:`aimcore.api.hardware`: the two spellings of a CPU requirement)."""
    out: Obj = written(resources) if resources is not None else {}
    if cpu is not None:
        for side in _SIDES:
            value = getattr(cpu, side)
            if value is not None:
                values = dict(out.get(side) or {})
                values.setdefault("cpu", copy.deepcopy(value))
                out[side] = values
    return out or None


def _text(value: object) -> str | None:
    """An enum or string field as its text (``None`` when unset or empty)."""
    return str(value) if value not in (None, "") else None
