"""What KEDA's operator does with a ScaledObject, as pure functions (the I/O is
:mod:`aim_dev.keda.controller`; docs/node.md lists what is and is not emulated).

Why it exists: with scale to zero the deployer writes an InferenceService with
``autoscalerClass: external`` and a KEDA ScaledObject over its predictor Deployment. KEDA cannot run
here, yet the operator reads what it leaves: the HPA it makes (for ``status.runtime``) and a target
at zero replicas, which the real HPA controller marks ``ScalingActive=False/ScalingDisabled``
("idle"). :func:`plan` follows KEDA's ScaledObject reconciler (``scaledobject_controller.go``,
``hpa.go``) and its scale executor (``scale_scaledobjects.go``), for a ScaledObject over an
``apps/v1`` Deployment:

- **the HPA** KEDA makes, :func:`hpa`: ``keda-hpa-<scaledobject>`` (trimmed to 63 characters, as
  KEDA does) over ``spec.scaleTargetRef``, ``minReplicas`` = ``max(minReplicaCount, 1)`` (default
  0), ``maxReplicas`` = ``maxReplicaCount`` (default 100); labels ``app.kubernetes.io/name`` (the
  HPA's name), ``app.kubernetes.io/part-of`` (the ScaledObject's name),
  ``app.kubernetes.io/managed-by: keda-operator``, then the ScaledObject's labels over them, and
  ``scaledobject.keda.sh/name: <scaledobject>`` (KEDA puts it on the ScaledObject, whose labels it
  copies); annotations: the ScaledObject's, less kubectl's last-applied configuration and
  :data:`ACTIVITY_ANNOTATION`; owned by the ScaledObject as its controller, so the garbage collector
  removes it with it. **Not** KEDA's: autoscaling/v1 with a CPU target (what
  :data:`aimcore.api.kinds.HPA` reads, and all the 1.20 control plane of the tests serves) instead
  of v2 with the triggers' external metrics (no metrics adapter here: the HPA controller acts on
  the bounds only), no ``app.kubernetes.io/version`` label, no ``advanced`` settings (HPA name,
  behavior).
- **the check** KEDA makes before it makes the HPA: the target must exist and ``minReplicaCount``
  must not exceed ``maxReplicaCount``, else ``Ready=False/ScaledObjectCheckFailed`` with KEDA's
  message, ``Active=Unknown/UnknownState``, and no HPA written and no scaling. Other kinds of
  target (StatefulSets, custom resources with ``/scale``) are refused the same way: not emulated.
- **the activation decision**, which KEDA takes from its triggers' metrics every
  ``pollingInterval``. There are no metrics here: the decision is an input, the annotation
  :data:`ACTIVITY_ANNOTATION` on the ScaledObject, ``active`` or ``idle`` (absent or anything else:
  no decision, the target's replicas are left alone, ``Active=Unknown``). Then as KEDA's
  ``RequestScale`` (:func:`decide`): active with the target at 0 replicas: scale it to
  ``max(minReplicaCount, 1)`` (the HPA controller governs from there, between its bounds); idle
  with replicas and ``minReplicaCount`` 0: scale it to 0 (KEDA does, outside the HPA, which then
  reports ``ScalingDisabled``); idle below ``minReplicaCount``: scale it to ``minReplicaCount``;
  otherwise nothing. **Not** emulated: ``cooldownPeriod`` (idle scales to zero at once; KEDA waits
  that long after the last active poll), ``initialCooldownPeriod``, ``pollingInterval`` (the
  stand-in's pass interval applies), ``idleReplicaCount``, ``fallback``, the ``paused`` annotations,
  ``restoreToOriginalReplicaCount`` on deletion, and the triggers, whose content is ignored.
- **the status** KEDA writes (:func:`status`): ``conditions`` ``Ready`` (``True/ScaledObjectReady``)
  and ``Active`` (``True/ScalerActive``, ``False/ScalerNotActive``, or ``Unknown``), ``hpaName``
  and ``scaleTargetKind``. Not ``Fallback``/``Paused`` conditions, ``lastActiveTime``,
  ``originalReplicaCount``, ``scaleTargetGVKR``, metric names or health.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.types import Obj

ACTIVITY_ANNOTATION = "aim.eai.amd.com/keda-standin-activity"
"""The stand-in's input in place of KEDA's metrics: ``active`` or ``idle`` (see the module)."""
ACTIVE, IDLE = "active", "idle"
SPEC_HASH_ANNOTATION = "aim.eai.amd.com/keda-standin-spec"
"""On the HPA only: the hash of what the stand-in last wrote (its own mark, not KEDA's)."""
SCALED_OBJECT_LABEL = "scaledobject.keda.sh/name"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEFAULT_MIN, DEFAULT_MAX = 0, 100
HPA_MIN = 1
"""An HPA's ``minReplicas`` cannot be 0 (KEDA's ``defaultHPAMinReplicas``)."""
TARGET_KIND = "apps/v1.Deployment"


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def hpa_name(scaled_object: str) -> str:
    """KEDA's ``getHPAName``: ``keda-hpa-<name>``, at most 63 characters."""
    return f"keda-hpa-{scaled_object}"[:63]


class Invalid(ValueError):
    """A ScaledObject KEDA would refuse (its message is what ``Ready=False`` says)."""


@dataclass(frozen=True)
class Spec:
    """What the stand-in reads of a ScaledObject's spec."""

    target: str
    """The Deployment scaled (``spec.scaleTargetRef.name``)."""
    low: int
    """``minReplicaCount`` (default 0: scale to zero allowed)."""
    high: int
    """``maxReplicaCount`` (default 100)."""


def read_spec(so: Mapping[str, Any]) -> Spec:
    """The ScaledObject's target and bounds; :class:`Invalid` when KEDA would refuse them (or the
    stand-in does not emulate the target's kind)."""
    spec = _map(so.get("spec"))
    ref = _map(spec.get("scaleTargetRef"))
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        raise Invalid("ScaledObject doesn't have correct scaleTargetRef specification: no name")
    api_version, kind = ref.get("apiVersion") or "apps/v1", ref.get("kind") or "Deployment"
    if f"{api_version}.{kind}" != TARGET_KIND:
        raise Invalid(f"the KEDA stand-in scales {TARGET_KIND} only, not {api_version}.{kind}")
    low, high = spec.get("minReplicaCount", DEFAULT_MIN), spec.get("maxReplicaCount", DEFAULT_MAX)
    if low is None:
        low = DEFAULT_MIN
    if high is None:
        high = DEFAULT_MAX
    if not _count(low) or not _count(high):
        raise Invalid(f"minReplicaCount={low!r} and maxReplicaCount={high!r} must be counts")
    if low > high:
        raise Invalid(f"MinReplicaCount={low} must be less than MaxReplicaCount={high}")
    return Spec(name, low, high)


def activity(so: Mapping[str, Any]) -> bool | None:
    """The stand-in's activation decision: True (``active``), False (``idle``), None (none)."""
    value = _map(_map(so.get("metadata")).get("annotations")).get(ACTIVITY_ANNOTATION)
    return {ACTIVE: True, IDLE: False}.get(str(value).strip().lower()) if value is not None else None


def decide(active: bool | None, current: int, low: int) -> int | None:
    """The replicas KEDA's scale executor sets on the target (``RequestScale``), or None to leave
    them: ``current`` is the target's ``spec.replicas``, ``low`` the ``minReplicaCount``."""
    if active is None:
        return None
    if active:
        return max(low, HPA_MIN) if current == 0 else None
    if current > 0 and low == 0:
        return 0  # cooldownPeriod ignored: idle now means zero now
    if current < low:
        return low
    return None


def owner_reference(so: Mapping[str, Any]) -> Obj:
    meta = _map(so.get("metadata"))
    return {
        "apiVersion": str(so.get("apiVersion") or "keda.sh/v1alpha1"),
        "kind": "ScaledObject",
        "name": str(meta["name"]),
        "uid": str(meta["uid"]),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _hash(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def spec_hash(hpa: Mapping[str, Any] | None) -> str | None:
    return _map(_map(_map(hpa).get("metadata")).get("annotations")).get(SPEC_HASH_ANNOTATION)


def hpa(so: Mapping[str, Any], spec: Spec) -> Obj:
    """The HPA KEDA keeps for the ScaledObject (shape in the module docstring), with the hash of
    itself in :data:`SPEC_HASH_ANNOTATION`."""
    meta = _map(so.get("metadata"))
    name = str(meta["name"])
    labels = {
        "app.kubernetes.io/name": hpa_name(name),
        "app.kubernetes.io/part-of": name[:63],
        "app.kubernetes.io/managed-by": "keda-operator",
    }
    labels.update({str(k): str(v) for k, v in _map(meta.get("labels")).items()})
    labels[SCALED_OBJECT_LABEL] = name[:63]
    annotations = {
        str(k): str(v)
        for k, v in _map(meta.get("annotations")).items()
        if k not in (LAST_APPLIED, ACTIVITY_ANNOTATION)
    }
    low = max(spec.low, HPA_MIN)
    body: Obj = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": hpa_name(name),
            "namespace": str(meta["namespace"]),
            "labels": dict(sorted(labels.items())),
            "annotations": dict(sorted(annotations.items())),
            "ownerReferences": [owner_reference(so)],
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.target},
            "minReplicas": low,
            "maxReplicas": max(spec.high, low),
            "targetCPUUtilizationPercentage": 80,
        },
    }
    body["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = _hash(body)
    return body


def _condition(type_: str, status_: str, reason: str = "", message: str = "") -> Obj:
    out: Obj = {"type": type_, "status": status_}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def status(*, problem: str | None, active: bool | None, hpa_name_: str | None) -> Obj:
    """The ScaledObject's status as KEDA writes it (what is emulated: the module docstring):
    ``problem`` is the check's failure, if any."""
    if problem is not None:
        conditions = [
            _condition("Ready", "False", "ScaledObjectCheckFailed", problem),
            _condition("Active", "Unknown", "UnknownState", "ScaledObject check failed"),
        ]
    else:
        ready = _condition(
            "Ready", "True", "ScaledObjectReady", "ScaledObject is defined correctly and is ready for scaling"
        )
        if active is None:
            act = _condition("Active", "Unknown", message=f"the KEDA stand-in has no {ACTIVITY_ANNOTATION}")
        elif active:
            act = _condition(
                "Active", "True", "ScalerActive", "Scaling is performed because triggers are active"
            )
        else:
            act = _condition(
                "Active",
                "False",
                "ScalerNotActive",
                "Scaling is not performed because triggers are not active",
            )
        conditions = [ready, act]
    out: Obj = {"conditions": conditions, "scaleTargetKind": TARGET_KIND}
    if hpa_name_ is not None:
        out["hpaName"] = hpa_name_
    return out


def status_differs(so: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether the fields :func:`status` writes differ from the ScaledObject's (others are left)."""
    live = _map(so.get("status"))
    return any(live.get(k) != v for k, v in wanted.items())


@dataclass(frozen=True)
class Plan:
    """What the stand-in does for one ScaledObject in one pass."""

    hpa: Obj | None
    """The HPA to keep (rewritten when its :func:`spec_hash` differs); None: HPAs left alone."""
    replicas: int | None
    """The target's ``spec.replicas`` to set; None: left as they are."""
    status: Obj
    """The ScaledObject's status (patched when :func:`status_differs`)."""


def plan(so: Mapping[str, Any], target: Mapping[str, Any] | None) -> Plan:
    """KEDA's reconcile of ``so`` and its scale executor's decision, given its target Deployment as
    read (None: it does not exist)."""
    try:
        spec = read_spec(so)
    except Invalid as exc:
        return Plan(None, None, status(problem=str(exc), active=None, hpa_name_=None))
    if target is None:
        problem = (
            "ScaledObject doesn't have correct scaleTargetRef specification: "
            f'deployments.apps "{spec.target}" not found'
        )
        return Plan(None, None, status(problem=problem, active=None, hpa_name_=None))
    active = activity(so)
    replicas = _map(target.get("spec")).get("replicas", 1)
    current = replicas if _count(replicas) else 1
    body = hpa(so, spec)
    name = str(body["metadata"]["name"])
    return Plan(body, decide(active, current, spec.low), status(problem=None, active=active, hpa_name_=name))
