"""What hardware an LLMKube ``Model`` asks for, whether that makes sense, and whether the cluster has it.

Why this module exists: ``spec.hardware`` and ``spec.resources`` are mostly free-form strings and
loosely coupled switches, and the original operator checked almost none of it. A typo in a quantity
(``"12XB"``) or ``accelerator: cpu`` next to ``gpu.enabled: true`` went unnoticed until a pod failed
to schedule or, worse, silently ran on CPU; and ``status.acceleratorReady`` had to agree with the
extended resource the serving pod will actually request. This module gives one answer to each of
those questions, as pure functions over the wire-format spec (camelCase dicts) and Node objects as
plain JSON dicts, so the reconciler, the deployer and the tests share it:

* :func:`validate`: every problem in ``hardware``/``resources``, as sentences naming the field.
* :func:`gpu_wanted` / :func:`gpus_wanted`: does the model need a cluster GPU, and how many.
  ``accelerator`` decides (default ``cpu``): ``cpu`` and ``metal`` need none (Metal runs in the
  metal agent on a Mac host, outside the cluster); ``cuda``, ``rocm``, ``intel``, ``vulkan`` (and
  any unknown value) do. ``gpu.enabled``/``gpu.count`` next to ``accelerator: cpu`` do not turn a
  GPU on: that is the original readiness rule, and :func:`validate` reports the contradiction.
  ``gpu.count`` 0 or unset means 1 (the original falls back to the InferenceService's
  ``resources.gpu``, which a Model cannot see; one GPU is the least a GPU model needs).
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

Enum values are compared trimmed and lower-cased, as the original does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from aimcore.domain.gpu import parse_quantity

__all__ = [
    "ACCELERATORS",
    "ACCELERATOR_UNAVAILABLE",
    "AMD_GPU",
    "DRI_RENDER",
    "GPU_ACCELERATORS",
    "INTEL_GPU",
    "INVALID_HARDWARE",
    "MAX_GPU_COUNT",
    "NVIDIA_GPU",
    "RUNTIMES",
    "VENDORS",
    "accelerator",
    "accelerator_ready",
    "gpu_wanted",
    "gpus_wanted",
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

ACCELERATORS: Final = ("cpu", "metal", "cuda", "rocm", "intel", "vulkan")
GPU_ACCELERATORS: Final = frozenset({"cuda", "rocm", "intel", "vulkan"})
VENDORS: Final = ("nvidia", "amd", "intel")
RUNTIMES: Final = ("vulkan", "rocm")
MAX_GPU_COUNT: Final = 8

_IMPLIED_VENDOR: Final[Mapping[str, str]] = {"cuda": "nvidia", "rocm": "amd", "intel": "intel"}
_RESOURCE_NAME = re.compile(r"^[a-z0-9.\-]+/[a-z0-9._\-]+$")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _norm(value: object) -> str:
    return value.strip().lower() if isinstance(value, str) else ""


def _hardware(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(spec.get("hardware"))


def _gpu(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(_hardware(spec).get("gpu"))


def _claims(gpu: Mapping[str, Any]) -> list[Any]:
    claims = gpu.get("resourceClaims")
    return list(claims) if isinstance(claims, list | tuple) else []


def _int(value: object) -> int | None:
    """``value`` if it is a whole number (bools are not), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def accelerator(spec: Mapping[str, Any]) -> str:
    """``spec.hardware.accelerator`` trimmed and lower-cased; ``cpu`` when unset or blank."""
    return _norm(_hardware(spec).get("accelerator")) or "cpu"


def gpu_wanted(spec: Mapping[str, Any]) -> bool:
    """Whether the model needs a GPU in the cluster: any accelerator but ``cpu`` and ``metal``."""
    return accelerator(spec) not in ("cpu", "metal")


def gpus_wanted(spec: Mapping[str, Any]) -> int:
    """How many GPUs one replica needs: 0 without a GPU, else ``gpu.count`` with 0/unset meaning 1."""
    if not gpu_wanted(spec):
        return 0
    count = _int(_gpu(spec).get("count"))
    return count if count is not None and count > 1 else 1


def resource_name(spec: Mapping[str, Any]) -> str | None:
    """The extended resource the serving pod requests, or ``None`` (no GPU, or DRA resource claims)."""
    if not gpu_wanted(spec):
        return None
    gpu = _gpu(spec)
    if _claims(gpu):
        return None
    override = gpu.get("resourceName")
    if isinstance(override, str) and override.strip():
        return override.strip()
    accel = accelerator(spec)
    vendor = _IMPLIED_VENDOR.get(accel) or _norm(gpu.get("vendor")) or "nvidia"
    runtime = "vulkan" if accel == "vulkan" else _norm(gpu.get("runtime"))
    if vendor == "amd":
        return DRI_RENDER if runtime in RUNTIMES else AMD_GPU
    if vendor == "intel":
        return INTEL_GPU
    return NVIDIA_GPU


def validate(spec: Mapping[str, Any]) -> list[str]:
    """Every problem with ``spec.hardware`` and ``spec.resources``, one sentence each; ``[]`` if none."""
    problems: list[str] = []
    resources = spec.get("resources")
    if resources is not None and not isinstance(resources, Mapping):
        problems.append(f"spec.resources: expected an object, got {_kind(resources)}")
    else:
        for key in ("cpu", "memory"):
            _check_quantity(problems, f"spec.resources.{key}", _mapping(resources).get(key))

    hardware = spec.get("hardware")
    if hardware is None:
        return problems
    if not isinstance(hardware, Mapping):
        problems.append(f"spec.hardware: expected an object, got {_kind(hardware)}")
        return problems

    accel = hardware.get("accelerator")
    if accel is not None and _norm(accel) not in ACCELERATORS:
        problems.append(f"spec.hardware.accelerator: {accel!r} is not one of {', '.join(ACCELERATORS)}")
    _check_quantity(problems, "spec.hardware.memoryBudget", hardware.get("memoryBudget"))
    fraction = hardware.get("memoryFraction")
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, int | float):
            problems.append(f"spec.hardware.memoryFraction: {fraction!r} is not a number")
        elif not 0 < fraction <= 1:
            problems.append(
                f"spec.hardware.memoryFraction: {fraction!r} is out of range; "
                "it must be greater than 0 and at most 1"
            )

    gpu = hardware.get("gpu")
    if gpu is None:
        return problems
    if not isinstance(gpu, Mapping):
        problems.append(f"spec.hardware.gpu: expected an object, got {_kind(gpu)}")
        return problems
    _validate_gpu(problems, gpu, _norm(accel) or "cpu")
    return problems


def _validate_gpu(problems: list[str], gpu: Mapping[str, Any], accel: str) -> None:
    enabled = gpu.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        problems.append(f"spec.hardware.gpu.enabled: {enabled!r} is not true or false")
    raw_count = gpu.get("count")
    count = _int(raw_count)
    if raw_count is not None:
        if count is None:
            problems.append(f"spec.hardware.gpu.count: {raw_count!r} is not a whole number")
        elif count < 0:
            problems.append(f"spec.hardware.gpu.count: {count} is negative; it must be 0 or more")
        elif count > MAX_GPU_COUNT:
            problems.append(f"spec.hardware.gpu.count: {count} is more than the maximum of {MAX_GPU_COUNT}")
    if accel == "cpu":
        asks = []
        if enabled is True:
            asks.append("spec.hardware.gpu.enabled is true")
        if count is not None and count > 0:
            asks.append(f"spec.hardware.gpu.count is {count}")
        if asks:
            problems.append(
                f"spec.hardware.accelerator: cpu contradicts {' and '.join(asks)}; set the accelerator "
                "to cuda, rocm, intel or vulkan to use a GPU, or remove the GPU request"
            )

    vendor = gpu.get("vendor")
    if vendor is not None and _norm(vendor) not in VENDORS:
        problems.append(f"spec.hardware.gpu.vendor: {vendor!r} is not one of {', '.join(VENDORS)}")
    runtime = gpu.get("runtime")
    if runtime is not None and _norm(runtime) not in RUNTIMES:
        problems.append(f"spec.hardware.gpu.runtime: {runtime!r} is not one of {', '.join(RUNTIMES)}")
    _check_quantity(problems, "spec.hardware.gpu.memory", gpu.get("memory"))

    name = gpu.get("resourceName")
    if name is not None and (not isinstance(name, str) or not _RESOURCE_NAME.match(name)):
        problems.append(
            f"spec.hardware.gpu.resourceName: {name!r} is not an extended resource name "
            "(expected <domain>/<name> in lower case, e.g. 'nvidia.com/gpu')"
        )

    claims = gpu.get("resourceClaims")
    if claims is None:
        return
    if not isinstance(claims, list | tuple):
        problems.append(f"spec.hardware.gpu.resourceClaims: expected a list, got {_kind(claims)}")
        return
    if claims and isinstance(name, str) and name.strip():
        problems.append(
            "spec.hardware.gpu: resourceName and resourceClaims are mutually exclusive; "
            "use one or the other for GPU scheduling"
        )
    for index, claim in enumerate(claims):
        where = f"spec.hardware.gpu.resourceClaims[{index}]"
        if not isinstance(claim, Mapping):
            problems.append(f"{where}: expected an object, got {_kind(claim)}")
            continue
        claim_name = claim.get("name")
        if not isinstance(claim_name, str) or not claim_name.strip():
            problems.append(f"{where}.name is required")
        else:
            where = f"{where} ({claim_name!r})"
        direct = _set(claim.get("resourceClaimName"))
        template = _set(claim.get("resourceClaimTemplateName"))
        if direct == template:
            which = "both are set" if direct else "neither is set"
            problems.append(
                f"{where}: set exactly one of resourceClaimName or resourceClaimTemplateName ({which})"
            )


def _set(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _kind(value: object) -> str:
    return type(value).__name__


def _check_quantity(problems: list[str], field: str, value: object) -> None:
    if value is None:
        return
    try:
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError(value)
        amount = parse_quantity(value)
    except ValueError:
        problems.append(f"{field}: {value!r} is not a Kubernetes quantity")
        return
    if amount < 0:
        problems.append(f"{field}: {value!r} is negative")


def accelerator_ready(spec: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> tuple[bool, str]:
    """``(ready, message)`` for ``status.acceleratorReady``.

    No GPU wanted → ready. DRA ``resourceClaims`` → ready (whether the claims and templates exist is
    checked by the caller, which can read them). Otherwise ready iff at least one schedulable node
    (``spec.unschedulable`` not true) advertises :func:`resource_name` in ``status.allocatable``
    (else ``status.capacity``) with a count of at least :func:`gpus_wanted`.
    """
    if not gpu_wanted(spec):
        return True, "runs on a Metal host" if accelerator(spec) == "metal" else "runs on CPU"
    claims = _claims(_gpu(spec))
    if claims:
        refs = ", ".join(_claim_ref(claim) for claim in claims)
        return (
            True,
            f"uses dynamic resource claims ({refs}); their existence is not checked",
        )
    resource = resource_name(spec) or NVIDIA_GPU  # never None here: a GPU is wanted, no claims
    wanted = gpus_wanted(spec)
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


def _claim_ref(value: object) -> str:
    claim = _mapping(value)
    if _set(claim.get("resourceClaimName")):
        return f"claim {claim['resourceClaimName']}"
    if _set(claim.get("resourceClaimTemplateName")):
        return f"template {claim['resourceClaimTemplateName']}"
    return str(claim.get("name") or "unnamed")


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
