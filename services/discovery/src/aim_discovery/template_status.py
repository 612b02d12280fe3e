"""What a template reports (AIMServiceTemplate, AIMClusterServiceTemplate): its condition types
and reasons, the status fields it derives from its spec and discovery (``resolvedHardware``,
``hardwareSummary``), and the one way its reconciler, its discovery Jobs and its cache report
(:func:`report`). Shared by :mod:`aim_discovery.templates`, :mod:`aim_discovery.template_jobs` and
:mod:`aim_discovery.template_cache`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aimcore.api.bus.messages import ConditionReport
from aimcore.api.hardware import canonical_hardware
from aimcore.domain import gpu as gpus
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template
from aimcore.domain.status.rules import dependency_message
from aimcore.runtime import Request
from aimcore.runtime.composer import has_status_field

CONFIG_VALID = "ConfigValid"
GPU_READY = "GPUReady"
DISCOVERY_JOB_READY = "DiscoveryJobReady"
DISCOVERY_PODS_READY = "DiscoveryPodsReady"
DISCOVERED = "Discovered"

MODEL_FOUND = "ModelFound"
MODEL_NOT_FOUND = "ModelNotFound"
MODEL_FAILED = "ModelFailed"  # the model Failed or Degraded (cluster templates: ClusterModelFailed)
REFERENCE_NOT_FOUND = "ReferenceNotFound"
INLINE_SOURCES = "InlineModelSources"
INLINE_SOURCES_MESSAGE = "Model sources provided in-line in spec"  # the original's, exactly
DISCOVERY_COMPLETE = "DiscoveryComplete"
AWAITING_DISCOVERY = "AwaitingDiscovery"
INVALID_OUTPUT = "InvalidDiscoveryOutput"
JOB_COMPLETE = "JobComplete"
JOB_NOT_CREATED = "JobNotCreated"
WAITING_FOR_SLOT = "WaitingForDiscoverySlot"
LOG_UNAVAILABLE = "DiscoveryLogUnavailable"
JOB_CREATE_FAILED = "JobCreateFailed"


async def report(  # noqa: PLR0917
    request: Request,
    conditions: Sequence[ConditionReport],
    fields: dict[str, Any],
    action: str,
    reason: str,
    message: str,
    **details: Any,
) -> None:
    """Report the template's conditions and the status fields its kind has (with
    ``hardwareSummary`` derived from ``resolvedHardware``); the decision is recorded only when the
    report was sent (a report the status already says is not)."""
    if isinstance(fields.get("resolvedHardware"), Mapping):
        fields["hardwareSummary"] = hardware_summary(fields["resolvedHardware"])
    kept = {k: v for k, v in fields.items() if has_status_field(request.ref.group, request.ref.kind, k)}
    if await request.reporter.report(request.ref, request.obj, conditions, kept):
        await request.reporter.decide(request.ref, request.obj, action, reason, message, **details)


def model_failure(model: Model, templates_condition: str) -> str | None:
    """The message of a template's ``ModelReady=False/ModelFailed`` (``ClusterModelFailed``) when
    its model is Failed or Degraded for something other than its templates (the original's
    circular-dependency guard: a model failing only through ``templates_condition`` is its
    templates' doing, so they ignore it), else ``None``. The message names the model's state, which
    the template takes (:data:`aimcore.domain.status.rules.DEPENDENCY_REASONS`)."""
    state = model.state
    if state not in ("Failed", "Degraded"):
        return None
    failing = [
        c
        for c in model.conditions
        if str(c.get("type") or "").endswith("Ready")
        and c.get("type") not in ("Ready", templates_condition)
        and c.get("status") == "False"
    ]
    if not failing:
        return None
    return dependency_message(f"{model.ref.kind} {model.name}", state, model.ready_message)


def resolved_hardware(template: Template, model: str | None, requests: int | None) -> dict[str, Any]:
    """``status.resolvedHardware``, for every template: the GPU it runs on (discovery's output over
    the spec; ``requests: 0`` when it needs none) and its CPU when the spec gives one (from
    ``spec.resources`` or ``spec.hardware.cpu``; a limit alone is also the request, as in a Pod), its
    quantities as Kubernetes writes them back (``2000m`` → ``"2"``, as the original)."""
    requirement = template.gpu
    gpu: dict[str, Any] = {"resourceName": requirement.resource_name}
    if requests is not None:
        gpu["requests"] = requests
    if model:
        gpu["model"] = model
    elif requirement.min_vram is not None:
        gpu["minVram"] = requirement.min_vram
    resolved: dict[str, Any] = {}
    if requirement.required or model or requests:
        resolved["gpu"] = gpu
    cpu = template.cpu
    if cpu is not None:
        resolved["cpu"] = {"requests": cpu.get("requests", cpu.get("limits")), **cpu}
    if not resolved:  # CPU-only, nothing said about CPU: no GPU is the one thing known
        resolved["gpu"] = {"requests": 0, "resourceName": requirement.resource_name}
    return canonical_hardware(resolved)


def hardware_summary(resolved: Mapping[str, Any]) -> str:
    """``status.hardwareSummary`` from ``status.resolvedHardware``: ``2 x MI300X``, ``MI300X`` (no
    GPU resources), ``2 x GPU`` (any model) or ``CPU``."""
    gpu = resolved.get("gpu")
    gpu = gpu if isinstance(gpu, Mapping) else {}
    requests = gpu.get("requests")
    return gpus.hardware_summary(
        str(gpu.get("model") or "") or None, requests if isinstance(requests, int) else None
    )
