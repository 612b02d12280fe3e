"""A template's hardware, whichever of its two spellings it is written in.

Why this module exists: the seed (the ``aim.eai.amd.com/v1alpha1`` API reference) gives a template
its GPU as ``spec.gpu`` and its CPU as ``cpu`` in ``spec.resources``; the original's released API
(v0.2) moved both to ``spec.hardware: {gpu, cpu}`` (the ``AIMHardwareRequirements`` custom models
use). A template applied from either documentation must mean the same thing: before this module, a
template written the released way had its ``spec.hardware`` pruned and ran as a CPU template. So
every reader (the template model's validation, discovery's GPU check and Job, the deployer's
selection, derived templates and InferenceService resources) takes the *effective* hardware from
here and never looks at the spelling itself.

The equivalence:

* ``spec.hardware.gpu`` ⇔ ``spec.gpu`` (same fields: ``requests``, ``model``, ``minVram``,
  ``resourceName``). When both are set they must be equal (the API server fills in the default
  ``resourceName`` on both; an unset ``requests`` is not ``0``): the CRD's CEL rule refuses anything
  else, and so does the template model's validator (:func:`conflicts`) for API servers without CEL.
* ``spec.hardware.cpu.requests`` ⇔ ``spec.resources.requests.cpu`` and ``spec.hardware.cpu.limits``
  ⇔ ``spec.resources.limits.cpu``. When both spellings give a value they must be the same amount
  (``"1"`` and ``"1000m"`` agree); checked by the model's validator only (CEL cannot compare two
  quantities on every API server version).

The same holds for an AIMService's ``spec.overrides`` (the seed's ``gpu``, the released
``hardware {gpu, cpu}``): :func:`seed_overrides` reads the GPU of either, and a CPU given there is
the template-level CPU of the service's InferenceService (:func:`service_resources`, below the
service's own ``spec.resources``, as the original's derived template's CPU is).

A child that copies a user's hardware or resources (a model's generated template, a template's
``status.resolvedHardware``) carries each quantity as Kubernetes writes it back
(:func:`canonical_hardware`, :func:`canonical_resources`: ``2000m`` → ``"2"``), as the original's
Go types do.

Pure: wire-form dicts in, values out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from aimcore.api.quantities import amount, canonical
from aimcore.api.types import Obj

__all__ = [
    "DEFAULT_GPU_RESOURCE",
    "HARDWARE_GPU_MESSAGE",
    "HARDWARE_GPU_RULE",
    "canonical_hardware",
    "canonical_resources",
    "conflicts",
    "effective_cpu",
    "effective_gpu",
    "effective_resources",
    "gpu_field",
    "seed_overrides",
    "seed_shape",
    "service_resources",
]

DEFAULT_GPU_RESOURCE = "amd.com/gpu"

HARDWARE_GPU_RULE = (
    "!has(self.gpu) || !has(self.hardware) || !has(self.hardware.gpu) || self.hardware.gpu == self.gpu"
)
"""The CEL rule of an object with both spellings (a template's spec, a service's overrides)."""
HARDWARE_GPU_MESSAGE = "hardware.gpu and gpu must be equal when both are set"
_SIDES = ("requests", "limits")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _hardware(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(spec.get("hardware"))


def gpu_field(spec: Mapping[str, Any]) -> str:
    """Where the effective GPU requirement is written: ``spec.gpu`` or ``spec.hardware.gpu``."""
    if isinstance(spec.get("gpu"), Mapping) or not isinstance(_hardware(spec).get("gpu"), Mapping):
        return "spec.gpu"
    return "spec.hardware.gpu"


def effective_gpu(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The template's GPU requirement: ``spec.gpu``, else ``spec.hardware.gpu``, else ``None``."""
    for gpu in (spec.get("gpu"), _hardware(spec).get("gpu")):
        if isinstance(gpu, Mapping):
            return gpu
    return None


def effective_cpu(spec: Mapping[str, Any]) -> Obj | None:
    """The template's CPU as ``{requests, limits}`` (either may be missing), ``spec.resources`` first,
    then ``spec.hardware.cpu``; ``None`` when neither says anything about CPU."""
    resources = _mapping(spec.get("resources"))
    cpu = _mapping(_hardware(spec).get("cpu"))
    out: Obj = {}
    for side in _SIDES:
        value = _mapping(resources.get(side)).get("cpu")
        if value is None:
            value = cpu.get(side)
        if value is not None:
            out[side] = copy.deepcopy(value)
    return out or None


def effective_resources(spec: Mapping[str, Any]) -> Obj | None:
    """``spec.resources`` with the CPU of ``spec.hardware.cpu`` filled in where it gives none."""
    resources: Obj = copy.deepcopy(dict(_mapping(spec.get("resources"))))
    cpu = effective_cpu(spec) or {}
    for side in _SIDES:
        if side in cpu:
            values = resources.get(side)
            values = dict(values) if isinstance(values, Mapping) else {}
            values.setdefault("cpu", cpu[side])
            resources[side] = values
    return resources or None


def _gpu_fields(gpu: Mapping[str, Any]) -> dict[str, Any]:
    fields = {str(k): v for k, v in gpu.items() if v is not None}
    fields.setdefault("resourceName", DEFAULT_GPU_RESOURCE)
    return fields


def _same_amount(a: Any, b: Any) -> bool:
    try:
        return amount(a) == amount(b)
    except ValueError:
        return str(a) == str(b)


def conflicts(spec: Mapping[str, Any]) -> list[str]:
    """Where ``spec.hardware`` and the seed's spelling both say something and disagree, one message
    each, naming the fields relative to the spec (empty: they agree, or one spelling is used)."""
    found: list[str] = []
    hardware = _hardware(spec)
    gpu, hw_gpu = spec.get("gpu"), hardware.get("gpu")
    if isinstance(gpu, Mapping) and isinstance(hw_gpu, Mapping):
        mine, theirs = _gpu_fields(gpu), _gpu_fields(hw_gpu)
        differing = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
        if differing:
            detail = ", ".join(f"{k} {theirs.get(k)!r} vs {mine.get(k)!r}" for k in differing)
            found.append(
                f"hardware.gpu and gpu are both set but differ ({detail}); set only one, or both alike"
            )
    cpu = _mapping(hardware.get("cpu"))
    resources = _mapping(spec.get("resources"))
    for side in _SIDES:
        given, stated = cpu.get(side), _mapping(resources.get(side)).get("cpu")
        if given is not None and stated is not None and not _same_amount(given, stated):
            found.append(
                f"hardware.cpu.{side} {given!r} and resources.{side}.cpu {stated!r} "
                "are both set but differ; set only one, or both alike"
            )
    return found


def seed_shape(spec: Mapping[str, Any]) -> Obj:
    """The spec in the seed's spelling: ``spec.hardware`` folded into ``spec.gpu`` and
    ``spec.resources`` (for a copy the deployer changes, such as a derived template's spec)."""
    out: Obj = {k: copy.deepcopy(v) for k, v in spec.items() if k != "hardware"}
    if "hardware" not in spec:
        return out
    gpu = effective_gpu(spec)
    if gpu is not None:
        out["gpu"] = copy.deepcopy(dict(gpu))
    resources = effective_resources(spec)
    if resources is not None:
        out["resources"] = resources
    return out


def seed_overrides(overrides: Mapping[str, Any]) -> Obj:
    """A service's ``spec.overrides`` in the seed's spelling: ``hardware.gpu`` becomes ``gpu``
    (unless ``gpu`` is given too; the two must agree) and ``hardware`` is dropped (its CPU is read
    by :func:`service_resources`), so both spellings name and build the same derived template."""
    out: Obj = {k: copy.deepcopy(v) for k, v in overrides.items() if k != "hardware"}
    gpu = effective_gpu(overrides)
    if gpu is not None:
        out["gpu"] = copy.deepcopy(dict(gpu))
    return out


def service_resources(spec: Mapping[str, Any]) -> Obj | None:
    """An AIMService's ``spec.resources`` with the CPU of ``spec.overrides.hardware.cpu`` filled in
    where it gives none (the service's own resources win, as they win over a template's)."""
    overrides = _mapping(spec.get("overrides"))
    return effective_resources({"resources": spec.get("resources"), "hardware": overrides.get("hardware")})


def _canonical(value: Any) -> Any:
    """``value`` as Kubernetes writes the quantity back; anything that is not one as it is."""
    try:
        return canonical(value)
    except ValueError:
        return value


def canonical_resources(resources: Mapping[str, Any]) -> Obj:
    """``{requests, limits}`` with every quantity as Kubernetes writes it back; other keys as they are."""
    out: Obj = dict(resources)
    for side in _SIDES:
        values = resources.get(side)
        if isinstance(values, Mapping):
            out[side] = {name: _canonical(v) for name, v in values.items()}
    return out


def canonical_hardware(hardware: Mapping[str, Any]) -> Obj:
    """``{gpu, cpu}`` with the CPU's requests and limits and the GPU's ``minVram`` as Kubernetes
    writes the quantities back (a GPU count is an integer, kept)."""
    out: Obj = dict(hardware)
    cpu = hardware.get("cpu")
    if isinstance(cpu, Mapping):
        out["cpu"] = {k: _canonical(v) if k in _SIDES else v for k, v in cpu.items()}
    gpu = hardware.get("gpu")
    if isinstance(gpu, Mapping) and "minVram" in gpu:
        out["gpu"] = {**gpu, "minVram": _canonical(gpu["minVram"])}
    return out
