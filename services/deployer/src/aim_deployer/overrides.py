"""A service's ``spec.overrides``, read once from its parsed spec in either group's spelling: what
it asks of a template (metric, precision, GPU model, count and resource) as typed fields, which
template selection, the derived template's name and its spec read; and the overrides as written
(:func:`overrides_of`), which messages describe.

The legacy group's ``gpuSelector {model, count}`` and the released original's ``hardware.gpu`` are
read as the seed's ``gpu {model, requests}``, so every spelling asks for the same template.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api import hardware
from aimcore.api.crds import aim, silogen
from aimcore.api.kinds import GROUP_AIM
from aimcore.api.types import Obj
from aimcore.domain.families.base import written
from aimcore.domain.gpu import GPU_RESOURCE

__all__ = ["AnyOverrides", "Overrides", "describe_overrides", "overrides_of"]

AnyOverrides = aim.AIMServiceOverrides | silogen.AIMServiceOverrides


def overrides_of(raw: Mapping[str, Any] | None) -> Obj | None:
    """``spec.overrides`` as written with its empty values dropped; ``None`` when nothing is
    overridden. ``gpu.requests: 0`` is kept: it asks for GPU nodes without GPU resources (the
    original dropped it, and the service got the template's GPUs). The released original's
    ``hardware.gpu`` is read as ``gpu`` (:func:`aimcore.api.hardware.seed_overrides`; its
    ``hardware.cpu`` goes to the InferenceService, not into a derived template)."""
    if not raw:
        return None
    out: Obj = {}
    for key, value in hardware.seed_overrides(raw).items():
        if isinstance(value, Mapping):
            inner = {k: v for k, v in value.items() if v is not None and v != ""}
            if inner:
                out[key] = inner
        elif value not in (None, ""):
            out[key] = value
    return out or None


def describe_overrides(overrides: Mapping[str, Any]) -> str:
    """``metric=throughput, gpu.requests=2`` (sorted, nested keys dotted)."""
    parts = []
    for key, value in sorted(overrides.items()):
        if isinstance(value, Mapping):
            parts += [f"{key}.{k}={v}" for k, v in sorted(value.items())]
        else:
            parts.append(f"{key}={value}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Overrides:
    """What a service's ``spec.overrides`` asks for. Built by :meth:`of` only when something is
    overridden."""

    as_written: Obj
    """The overrides as written, empty values dropped (:func:`overrides_of`)."""
    metric: str | None = None
    precision: str | None = None
    gpu_model: str | None = None
    """As written (the derived template's name lower-cases it; selection normalises it)."""
    gpu_count: int | None = None
    """``None``: not overridden; ``0``: GPU nodes without GPU resources."""
    gpu_resource: str | None = None
    """``gpu.resourceName`` where the object has one (the API server fills its default in)."""

    @classmethod
    def of(cls, typed: AnyOverrides | None) -> Overrides | None:
        """The overrides of a parsed ``spec.overrides``; ``None`` when nothing is overridden."""
        if typed is None:
            return None
        as_written = overrides_of(written(typed))
        if as_written is None:
            return None
        model: str | None = None
        count: int | None = None
        resource: str | None = None
        if isinstance(typed, aim.AIMServiceOverrides):
            gpu = typed.gpu or (typed.hardware.gpu if typed.hardware is not None else None)
            if gpu is not None:
                model, count = gpu.model, gpu.requests
                resource = gpu.resource_name if "resource_name" in gpu.model_fields_set else None
        elif typed.gpu_selector is not None:
            model, count = typed.gpu_selector.model, typed.gpu_selector.count
        metric = typed.metric.value if typed.metric is not None else None
        precision = typed.precision.value if typed.precision is not None else None
        return cls(as_written, metric, precision, model or None, count, resource or None)

    @classmethod
    def parse(cls, group: str, raw: Mapping[str, Any] | None) -> Overrides | None:
        """:meth:`of` a ``spec.overrides`` given as written (in ``group``'s spelling)."""
        if not raw:
            return None
        model = aim.AIMServiceOverrides if group == GROUP_AIM else silogen.AIMServiceOverrides
        return cls.of(model.model_validate(raw))

    @property
    def custom_resource(self) -> str | None:
        """``gpu.resourceName`` when it is not the default."""
        return self.gpu_resource if self.gpu_resource not in (None, GPU_RESOURCE) else None

    def describe(self) -> str:
        return describe_overrides(self.as_written)
