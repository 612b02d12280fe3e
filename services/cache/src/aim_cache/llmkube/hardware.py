"""What hardware an LLMKube ``Model`` asks for, whether that makes sense, and whether the cluster has it.

Why this module exists: ``spec.hardware`` and ``spec.resources`` are mostly free-form strings and
loosely coupled switches, and the original operator checked almost none of it. A typo in a quantity
(``"12XB"``) or ``accelerator: cpu`` next to ``gpu.enabled: true`` went unnoticed until a pod failed
to schedule or, worse, silently ran on CPU; and ``status.acceleratorReady`` had to agree with the
extended resource the serving pod will actually request. This module gives one answer to each of
those questions, as pure functions over the Model read through its adapter
(:class:`aimcore.domain.families.llmkube.LLMKubeModel`: whether and how many GPUs it wants, its
claims) and Node objects as plain JSON dicts (a kind the project does not own):

* :func:`validate`: every problem in ``hardware``/``resources`` the Model's schema lets through,
  as sentences naming the field: quantities (``"12XB"``), ``memoryFraction`` out of (0, 1], and
  ``accelerator: cpu`` next to a GPU request (``gpu.enabled``/``gpu.count`` do not turn a GPU on:
  that is the original readiness rule, so the contradiction is reported), and DRA claims whose
  names are blank (the schema only asks that they be present). What the schema refuses (an unknown
  accelerator, vendor or runtime, a count out of 0..8, a malformed ``resourceName``, a claim
  without exactly one of its names, ``resourceName`` next to claims) never reaches it: the
  runtime reports that spec as ``InvalidSpec``, as it did before this module read the typed model.
* :func:`resource_name`: the extended resource the pod requests. ``gpu.resourceName`` wins; DRA
  ``resourceClaims`` mean none. Otherwise the vendor is implied by the accelerator (``cuda`` →
  nvidia, ``rocm`` → amd, ``intel`` → intel; ``vulkan`` uses ``gpu.vendor``, default nvidia) and
  mapped as the original does: amd with runtime ``vulkan`` or ``rocm`` → ``devic.es/dri-render``
  (``accelerator: vulkan`` counts as runtime vulkan), amd → ``amd.com/gpu``, intel →
  ``gpu.intel.com/i915``, else ``nvidia.com/gpu``. Unlike the original, readiness and scheduling
  use the same rule (its readiness check mapped ``rocm`` to ``amd.com/gpu`` while the pod asked for
  ``devic.es/dri-render`` or, with the defaulted vendor, ``nvidia.com/gpu``).
* :func:`accelerator_ready`: the value for ``status.acceleratorReady`` and a message. Stricter than
  the original (which accepted any node with a non-zero capacity): a node counts only if it is
  schedulable and its allocatable (else capacity) covers the whole GPU count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from aimcore.api.crds.llmkube import PodResourceClaim
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.domain.gpu import parse_quantity

__all__ = [
    "ACCELERATOR_UNAVAILABLE",
    "AMD_GPU",
    "DRI_RENDER",
    "INTEL_GPU",
    "INVALID_HARDWARE",
    "NVIDIA_GPU",
    "RUNTIMES",
    "accelerator_ready",
    "resource_name",
    "validate",
]

# Condition reasons: the spec cannot work as written (Degraded, fix the spec), and the cluster has no
# node that can take the model's GPUs right now (may resolve itself when a GPU node joins).
INVALID_HARDWARE: Final = "InvalidHardware"
ACCELERATOR_UNAVAILABLE: Final = "AcceleratorUnavailable"

NVIDIA_GPU: Final = "nvidia.com/gpu"
AMD_GPU: Final = "amd.com/gpu"
INTEL_GPU: Final = "gpu.intel.com/i915"
DRI_RENDER: Final = "devic.es/dri-render"

RUNTIMES: Final = ("vulkan", "rocm")

_IMPLIED_VENDOR: Final[Mapping[str, str]] = {"cuda": "nvidia", "rocm": "amd", "intel": "intel"}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def resource_name(model: LLMKubeModel) -> str | None:
    """The extended resource the serving pod requests, or ``None`` (no GPU, or DRA resource claims)."""
    if not model.gpu_wanted or model.resource_claims:
        return None
    gpu = model.gpu
    override = gpu.resource_name if gpu is not None else None
    if override and override.strip():
        return override.strip()
    accel = model.accelerator
    vendor = _IMPLIED_VENDOR.get(accel) or (str(gpu.vendor) if gpu is not None else "nvidia")
    runtime = "vulkan" if accel == "vulkan" else str(gpu.runtime or "") if gpu is not None else ""
    if vendor == "amd":
        return DRI_RENDER if runtime in RUNTIMES else AMD_GPU
    if vendor == "intel":
        return INTEL_GPU
    return NVIDIA_GPU


def validate(model: LLMKubeModel) -> list[str]:
    """Every problem with ``spec.hardware`` and ``spec.resources`` the schema lets through, one
    sentence each, in field order; ``[]`` if none."""
    problems: list[str] = []
    spec = model.spec
    if spec.resources is not None:
        _check_quantity(problems, "spec.resources.cpu", spec.resources.cpu)
        _check_quantity(problems, "spec.resources.memory", spec.resources.memory)
    hardware = spec.hardware
    if hardware is None:
        return problems
    _check_quantity(problems, "spec.hardware.memoryBudget", hardware.memory_budget)
    fraction = hardware.memory_fraction
    if fraction is not None and not 0 < fraction <= 1:
        problems.append(
            f"spec.hardware.memoryFraction: {_number(fraction)!r} is out of range; "
            "it must be greater than 0 and at most 1"
        )
    gpu = hardware.gpu
    if gpu is None:
        return problems
    if model.accelerator == "cpu":
        asks = []
        if gpu.enabled is True:
            asks.append("spec.hardware.gpu.enabled is true")
        if gpu.count is not None and gpu.count > 0:
            asks.append(f"spec.hardware.gpu.count is {gpu.count}")
        if asks:
            problems.append(
                f"spec.hardware.accelerator: cpu contradicts {' and '.join(asks)}; set the accelerator "
                "to cuda, rocm, intel or vulkan to use a GPU, or remove the GPU request"
            )
    _check_quantity(problems, "spec.hardware.gpu.memory", gpu.memory)
    for index, claim in enumerate(gpu.resource_claims or []):
        _check_claim(problems, f"spec.hardware.gpu.resourceClaims[{index}]", claim)
    return problems


def _check_claim(problems: list[str], where: str, claim: PodResourceClaim) -> None:
    """The schema wants exactly one of the claim's names present; a blank one names nothing."""
    if not _set(claim.name):
        problems.append(f"{where}.name is required")
    else:
        where = f"{where} ({claim.name!r})"
    direct = _set(claim.resource_claim_name)
    if direct == _set(claim.resource_claim_template_name):
        which = "both are set" if direct else "neither is set"
        problems.append(
            f"{where}: set exactly one of resourceClaimName or resourceClaimTemplateName ({which})"
        )


def _number(value: float) -> float | int:
    """A number as the API server returns it: a whole one as an integer (it stores ``0.0`` as
    ``0``), so a message shows what the object says, not the model's float."""
    return int(value) if math.isfinite(value) and value.is_integer() and abs(value) < 1e21 else value


def _set(value: str | None) -> bool:
    return bool(value and value.strip())


def _check_quantity(problems: list[str], field: str, value: str | None) -> None:
    if value is None:
        return
    try:
        amount = parse_quantity(value)
    except ValueError:
        problems.append(f"{field}: {value!r} is not a Kubernetes quantity")
        return
    if amount < 0:
        problems.append(f"{field}: {value!r} is negative")


def accelerator_ready(model: LLMKubeModel, nodes: Iterable[Mapping[str, Any]]) -> tuple[bool, str]:
    """``(ready, message)`` for ``status.acceleratorReady``.

    No GPU wanted → ready. DRA ``resourceClaims`` → ready (whether the claims and templates exist is
    checked by the caller, which can read them). Otherwise ready iff at least one schedulable node
    (``spec.unschedulable`` not true) advertises :func:`resource_name` in ``status.allocatable``
    (else ``status.capacity``) with a count of at least the GPUs it wants.
    """
    if not model.gpu_wanted:
        return True, "runs on a Metal host" if model.accelerator == "metal" else "runs on CPU"
    claims = model.resource_claims
    if claims:
        refs = ", ".join(_claim_ref(claim) for claim in claims)
        return (
            True,
            f"uses dynamic resource claims ({refs}); their existence is not checked",
        )
    resource = resource_name(model) or NVIDIA_GPU  # never None here: a GPU is wanted, no claims
    wanted = model.gpus_wanted
    matching = 0
    cordoned = 0
    most = 0
    for node in nodes:
        amount = _advertised(node, resource)
        if _mapping(_mapping(node).get("spec")).get("unschedulable") is True:
            cordoned += 1 if amount >= wanted else 0
            continue
        most = max(most, amount)
        matching += 1 if amount >= wanted else 0
    if matching:
        noun = "node advertises" if matching == 1 else "nodes advertise"
        return True, f"{matching} {noun} {resource} ≥ {wanted}"
    notes = []
    if most:
        notes.append(f"the most on one schedulable node is {most}")
    if cordoned:
        notes.append(f"{cordoned} matching node{'s are' if cordoned > 1 else ' is'} unschedulable")
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return False, f"no node advertises {resource} ≥ {wanted}{suffix}"


def _claim_ref(claim: PodResourceClaim) -> str:
    if _set(claim.resource_claim_name):
        return f"claim {claim.resource_claim_name}"
    if _set(claim.resource_claim_template_name):
        return f"template {claim.resource_claim_template_name}"
    return claim.name or "unnamed"


def _advertised(node: object, resource: str) -> int:
    """How many of ``resource`` a node offers: allocatable, else capacity; 0 when absent or unreadable."""
    status = _mapping(_mapping(node).get("status"))
    for key in ("allocatable", "capacity"):
        resources = _mapping(status.get(key))
        if resource in resources:
            try:
                return max(parse_quantity(resources[resource]), 0)
            except ValueError:
                return 0
    return 0
