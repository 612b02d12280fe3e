"""The KEDA ScaledObject the operator writes for a service that scales to zero, and how the HPA
KEDA makes from it reads as the service's ``HPAReady`` condition (the released original's 0.2.5).

Why it exists: KServe's own KEDA integration (``autoscalerClass: keda``, the seeds') cannot scale a
predictor to zero: nothing would wake it. The released original writes the ScaledObject itself
(``autoscalerClass: external`` on the InferenceService, :func:`aim_deployer.inference.owns_scaler`)
with a first trigger on the gateway's request counter for the predictor, so a request at the
gateway activates it. Pure: the reconcile hands in the service and what it read.

- :func:`build`: ``<isvc>-predictor`` (``keda.sh/v1alpha1``), labels
  ``app.kubernetes.io/component: autoscaling``, ``app.kubernetes.io/managed-by: aim-engine``,
  ``aim.eai.amd.com/service``; owned by the AIMService (controller). ``scaleTargetRef`` the
  predictor Deployment; ``minReplicaCount``/``maxReplicaCount`` the service's bounds. Triggers:
  first, with ``minReplicas: 0`` only, the activation trigger (``external`` on the OpenTelemetry
  scaler at ``AIM_KEDA_OTEL_SCALER_ADDRESS``, target 10⁹, ``avg``, query
  ``sum(envoy_cluster_external_upstream_rq_completed{namespace="<ns>",deployment="<isvc>-predictor"})``:
  active as soon as the gateway counts a request); then one per metric, its ``query`` (else its
  first ``metricNames``) wrapped the same way unless it already has a selector (``{``), its target
  ``value``/``averageValue``/``averageUtilization`` (else ``"0"``). ``pollingInterval`` and
  ``cooldownPeriod`` as written; unset with ``minReplicas: 0``, 5 s and ``300 + 5 * GiB`` of the
  predictor's memory request (else limit), between 300 and 1200 s (a larger model takes longer
  to load, so it is kept longer). No ScaledObject without a trigger.
- :func:`hpa_health`: ``HPAReady`` from KEDA's HPA ``keda-hpa-<isvc>-predictor``: none yet →
  ``HPANotFound``; scaling to zero and idle (the predictor at 0 replicas, or the HPA's
  ``ScalingActive=False/ScalingDisabled``) → True/``ScaledToZero``; scaling to zero with pods →
  True/``HPAOperational`` (KEDA, not the HPA, decides between 0 and 1); ``AbleToScale`` not True →
  ``ScaleTargetNotReady``; ``ScalingActive`` not True → ``WaitingForMetrics`` (the HPA's words);
  else True/``HPAOperational``.
- :func:`idle`: whether the predictor is scaled to zero (``InferenceServicePodsReady`` is then
  True/``ScaledToZero`` rather than waiting for pods that are not meant to run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from aim_deployer import inference
from aim_deployer.readiness import Health
from aim_deployer.service_view import ServiceView
from aimcore.api.crds.aim import AIMServiceMetricsSpec, AIMServiceScalingSpec
from aimcore.api.kinds import SCALED_OBJECT
from aimcore.api.types import Obj
from aimcore.domain.gpu import parse_quantity
from aimcore.domain.naming import label_value
from aimcore.runtime import child_labels, owner_reference

__all__ = [
    "ACTIVATION_METRIC",
    "REASON_SCALED_TO_ZERO",
    "SCALED_TO_ZERO_MESSAGE",
    "build",
    "cooldown_default",
    "hpa_health",
    "idle",
    "scaler_name",
]

ACTIVATION_METRIC: Final = "envoy_cluster_external_upstream_rq_completed"
ACTIVATION_TARGET: Final = "1000000000"
DEFAULT_POLLING_SECONDS: Final = 5
COOLDOWN_BASE_SECONDS: Final = 300
COOLDOWN_MAX_SECONDS: Final = 1200
AUTOSCALING_COMPONENT: Final = "autoscaling"

REASON_HPA_NOT_FOUND: Final = "HPANotFound"
REASON_HPA_OPERATIONAL: Final = "HPAOperational"
REASON_SCALED_TO_ZERO: Final = "ScaledToZero"
REASON_SCALE_TARGET_NOT_READY: Final = "ScaleTargetNotReady"
REASON_WAITING_FOR_METRICS: Final = "WaitingForMetrics"
SCALED_TO_ZERO_MESSAGE: Final = (
    "Service is idle: KEDA has scaled the deployment to zero replicas; "
    "will scale up when the configured trigger becomes active"
)
_GIB: Final = 1 << 30


def scaler_name(isvc: str) -> str:
    """The ScaledObject's name: the predictor's, as KServe names its own."""
    return inference.predictor_name(isvc)


def cooldown_default(memory_bytes: int | None, seconds_per_gib: int) -> int:
    """KEDA's cooldown for a service scaling to zero with none written: ``300 + seconds_per_gib *
    GiB``, between 300 and 1200 seconds."""
    extra = seconds_per_gib * (memory_bytes or 0) / _GIB
    return int(min(max(COOLDOWN_BASE_SECONDS + extra, COOLDOWN_BASE_SECONDS), COOLDOWN_MAX_SECONDS))


def memory_bytes(resources: Mapping[str, Any]) -> int | None:
    """The predictor's memory request (else limit) from its merged ``resources``."""
    for side in ("requests", "limits"):
        value = (resources.get(side) or {}).get("memory")
        if value is not None:
            try:
                return int(parse_quantity(str(value)))
            except ValueError:
                return None
    return None


def _scoped(query: str, namespace: str, predictor: str) -> str:
    if "{" in query:
        return query
    return f'sum({query}{{namespace="{namespace}",deployment="{predictor}"}})'


def _target(metric: AIMServiceMetricsSpec) -> str:
    target = metric.pod_metric.target if metric.pod_metric is not None else None
    if target is not None:
        for value in (target.value, target.average_value, target.average_utilization):
            if value is not None:
                return str(value)
    return "0"


def triggers(
    spec: AIMServiceScalingSpec | None, low: int, namespace: str, predictor: str, address: str
) -> list[Obj]:
    """The ScaledObject's triggers (rules in the module docstring)."""
    out: list[Obj] = []
    if low == 0:
        out.append(
            {
                "type": "external",
                "metadata": {
                    "scalerAddress": address,
                    "query": _scoped(ACTIVATION_METRIC, namespace, predictor),
                    "targetValue": ACTIVATION_TARGET,
                    "operationOverTime": "avg",
                },
            }
        )
    for metric in (spec.metrics or []) if spec is not None else []:
        pod = metric.pod_metric.metric if metric.pod_metric is not None else None
        if pod is None:
            continue
        query = pod.query or next(iter(pod.metric_names or []), None)
        if not query:
            continue
        out.append(
            {
                "type": "external",
                "metadata": {
                    "scalerAddress": pod.server_address or address,
                    "query": _scoped(query, namespace, predictor),
                    "targetValue": _target(metric),
                    "operationOverTime": pod.operation_over_time or "last_one",
                },
            }
        )
    return out


def build(
    service: ServiceView, isvc: str, resources: Mapping[str, Any], *, address: str, seconds_per_gib: int
) -> Obj | None:
    """The ScaledObject for ``service``'s InferenceService ``isvc`` (``None`` without a trigger)."""
    spec = service.spec
    scaling = spec.auto_scaling if isinstance(spec.auto_scaling, AIMServiceScalingSpec) else None
    low, high = inference.replica_bounds(spec)
    namespace = str(service.namespace or "")
    predictor = inference.predictor_name(isvc)
    found = triggers(scaling, low, namespace, predictor, address)
    if not found:
        return None
    polling = scaling.polling_interval if scaling is not None else None
    cooldown = scaling.cooldown_period if scaling is not None else None
    if low == 0:
        polling = DEFAULT_POLLING_SECONDS if polling is None else polling
        if cooldown is None:
            cooldown = cooldown_default(memory_bytes(resources), seconds_per_gib)
    body_spec: Obj = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": predictor},
        "minReplicaCount": low,
        "maxReplicaCount": high,
        "triggers": found,
    }
    if polling is not None:
        body_spec["pollingInterval"] = polling
    if cooldown is not None:
        body_spec["cooldownPeriod"] = cooldown
    labels = {
        **child_labels(inference.MANAGED_BY_VALUE),
        inference.COMPONENT_LABEL: AUTOSCALING_COMPONENT,
        inference.SERVICE_LABEL: label_value(service.name),
    }
    return {
        "apiVersion": SCALED_OBJECT.api_version,
        "kind": SCALED_OBJECT.kind,
        "metadata": {
            "name": scaler_name(isvc),
            "namespace": namespace,
            "labels": dict(sorted(labels.items())),
            "ownerReferences": [owner_reference(service.ref, service.obj)],
        },
        "spec": body_spec,
    }


HPA_V1_CONDITIONS: Final = "autoscaling.alpha.kubernetes.io/conditions"
"""Where an HPA read as ``autoscaling/v1`` (what the watcher mirrors: every cluster serves it) keeps
its conditions, as JSON; ``autoscaling/v2`` has them in ``status.conditions``."""


def _conditions(hpa: Mapping[str, Any] | None) -> list[Any]:
    found = ((hpa or {}).get("status") or {}).get("conditions")
    if found:
        return list(found)
    raw = ((hpa or {}).get("metadata") or {}).get("annotations", {}).get(HPA_V1_CONDITIONS)
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    return parsed if isinstance(parsed, list) else []


def _condition(obj: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    for c in _conditions(obj):
        if isinstance(c, Mapping) and c.get("type") == type_:
            return c
    return None


def idle(low: int, deployment: Mapping[str, Any] | None, hpa: Mapping[str, Any] | None) -> bool:
    """Whether a service that scales to zero (``low`` 0) is scaled to zero now: its predictor
    Deployment asks for 0 replicas, or the HPA says scaling is disabled (its target is at 0)."""
    if low != 0:
        return False
    replicas = ((deployment or {}).get("spec") or {}).get("replicas")
    if replicas == 0:
        return True
    active = _condition(hpa, "ScalingActive")
    return active is not None and active.get("status") != "True" and active.get("reason") == "ScalingDisabled"


def _said(condition: Mapping[str, Any], fallback: str) -> str:
    reason = str(condition.get("reason") or "")
    message = str(condition.get("message") or "")
    said = ": ".join(part for part in (reason, message) if part)
    return f"{fallback}: {said}" if said else fallback


def hpa_health(
    hpa_name: str, hpa: Mapping[str, Any] | None, deployment: Mapping[str, Any] | None, low: int
) -> Health:
    """``HPAReady`` (rules in the module docstring)."""
    if hpa is None:
        return Health(
            False, REASON_HPA_NOT_FOUND, f"waiting for KEDA to make the HorizontalPodAutoscaler {hpa_name}"
        )
    active = _condition(hpa, "ScalingActive")
    active_ok = active is not None and active.get("status") == "True"
    if low == 0 and not active_ok:
        if idle(low, deployment, hpa):
            return Health(True, REASON_SCALED_TO_ZERO, SCALED_TO_ZERO_MESSAGE)
        return Health(
            True, REASON_HPA_OPERATIONAL, f"{hpa_name} is operational (KEDA scales from and to zero)"
        )
    able = _condition(hpa, "AbleToScale")
    if able is None or able.get("status") != "True":
        return Health(
            False,
            REASON_SCALE_TARGET_NOT_READY,
            _said(able or {}, f"{hpa_name} cannot scale the predictor yet"),
        )
    if not active_ok:
        return Health(
            False, REASON_WAITING_FOR_METRICS, _said(active or {}, f"{hpa_name} is waiting for its metrics")
        )
    return Health(True, REASON_HPA_OPERATIONAL, f"{hpa_name} is operational")
