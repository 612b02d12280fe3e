"""Kubernetes Events as the operator writes them (core/v1, as client-go's legacy recorder makes
them, which is what ``kubectl describe`` reads): the object an Event is about and the Event's body.
The status service records one per condition transition (``aim_status.events``); the cache
service records the ``Evicted`` Event of a cache a storage quota deletes
(``aim_cache.admission``). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from aimcore.api.types import Obj

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class Involved:
    """The object an Event is about (``involvedObject``)."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    uid: str
    resource_version: str = ""

    def as_reference(self) -> Obj:
        ref: Obj = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name, "uid": self.uid}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.resource_version:
            ref["resourceVersion"] = self.resource_version
        return ref

    @classmethod
    def of(cls, obj: Obj) -> Involved:
        """The Event's reference to ``obj`` (as read from the API server)."""
        meta = obj["metadata"]
        return cls(
            str(obj["apiVersion"]),
            str(obj["kind"]),
            meta.get("namespace"),
            str(meta["name"]),
            str(meta.get("uid") or ""),
            str(meta.get("resourceVersion") or ""),
        )


def timestamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_object(
    involved: Involved,
    namespace: str,
    type_: str,
    reason: str,
    message: str,
    *,
    name: str,
    now: float,
    component: str,
    reporting_controller: str,
    instance: str,
) -> Obj:
    """A core/v1 Event named ``name`` in ``namespace`` about ``involved``, first seen ``now``."""
    ts = timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved.as_reference(),
        "type": type_,
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "reportingComponent": reporting_controller,
        "reportingInstance": instance,
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
    }
