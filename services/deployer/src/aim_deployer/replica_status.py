"""An AIMService's ``status.runtime``: the replica picture ``kubectl get aimsvc`` shows (its
``Replicas`` column) and automation waits on, read back from what actually runs.

Why it exists: the spec says what was asked for, not what is running; a pod that dies or a scaler
that decides otherwise is only visible in KServe's predictor Deployment and the HPA that drives it.
Pure: the reconcile hands it the objects it read from the informer (the watcher mirrors both kinds,
so the status follows them as pods come and go, with no polling).

- ``minReplicas``/``maxReplicas``: the spec's bounds (:func:`aim_deployer.inference.replica_bounds`:
  ``replicas`` for both when fixed, default 1);
- ``desiredReplicas``: fixed replicas: that number; autoscaling: the HPA's ``status.desiredReplicas``
  (KEDA's ``keda-hpa-<isvc>-predictor``) once it has decided one, else the replicas the scaler left
  on the Deployment, else the minimum;
- ``currentReplicas``: the Deployment's ready replicas (0 without one), so a dying pod shows
  ``current < desired`` until its replacement is ready. (The original reads the HPA's count of
  pods, ready or not, and without an HPA reports the spec's number as current.)
- ``replicas``, the display: ``"N"`` (current) when min equals max, else ``"cur/desired (min-max)"``,
  as in the original.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.types import Obj

__all__ = ["Replicas", "hpa_name", "runtime_status"]


def hpa_name(predictor: str) -> str:
    """The HPA KEDA creates for the ScaledObject KServe makes for ``predictor``."""
    return f"keda-hpa-{predictor}"


@dataclass(frozen=True)
class Replicas:
    """The four counts; :attr:`display` and :meth:`wire` as ``status.runtime`` holds them."""

    low: int
    high: int
    desired: int
    current: int

    @property
    def display(self) -> str:
        if self.low == self.high:
            return str(self.current)
        return f"{self.current}/{self.desired} ({self.low}-{self.high})"

    def wire(self) -> Obj:
        return {
            "minReplicas": self.low,
            "maxReplicas": self.high,
            "desiredReplicas": self.desired,
            "currentReplicas": self.current,
            "replicas": self.display,
        }


def _count(obj: Mapping[str, Any] | None, part: str, key: str) -> int | None:
    value = ((obj or {}).get(part) or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def runtime_status(
    bounds: tuple[int, int], *, scaled: bool, deployment: Obj | None, hpa: Obj | None
) -> Replicas:
    """``status.runtime`` (rules in the module docstring)."""
    low, high = bounds
    if scaled:
        desired = _count(hpa, "status", "desiredReplicas") or _count(deployment, "spec", "replicas") or low
    else:
        desired = low
    current = _count(deployment, "status", "readyReplicas") or 0
    return Replicas(low, high, desired, current)
