"""The runtime config that applies to an object, read into its group's model.

Resolution and merge stay on the wire form (:mod:`aimcore.domain.runtimeconfig`: a field the
namespace config *sets* wins, ``false`` and ``0`` included, which only the wire form can tell from
unset); what the merge gives is then read once into the group's runtime-config spec, and readers
ask :class:`RuntimeConfig` for its env, routing and model defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from aimcore.api.crds import aim, silogen
from aimcore.api.crds.base import EnvVar
from aimcore.api.decoding import DECODE
from aimcore.api.kinds import GROUP_AIM, KindRef
from aimcore.api.types import Obj
from aimcore.domain.runtimeconfig import Resolved, config_kinds

__all__ = ["AnyRuntimeConfigSpec", "AnyRuntimeRouting", "RuntimeConfig", "routing_value"]

AnyRuntimeConfigSpec = aim.AIMRuntimeConfigSpec | silogen.AIMRuntimeConfigSpec
AnyRuntimeRouting = aim.AIMRuntimeRoutingConfig | silogen.AIMRuntimeRoutingConfig


def _read(group: str, spec: Obj) -> AnyRuntimeConfigSpec:
    """The merged spec in the group's model (fields of the other scope's or group's spelling the
    model does not have, such as a legacy config's migrated ``storage``, are left out)."""
    model: type[AnyRuntimeConfigSpec] = (
        aim.AIMRuntimeConfigSpec if group == GROUP_AIM else silogen.AIMRuntimeConfigSpec
    )
    names = {f.alias or n for n, f in model.model_fields.items()}
    try:
        return model.model_validate({k: v for k, v in spec.items() if k in names}, context=DECODE)
    except ValidationError:
        return model()


@dataclass(frozen=True)
class RuntimeConfig:
    """The runtime config resolved for an object (:class:`Resolved`), read."""

    resolved: Resolved
    spec: AnyRuntimeConfigSpec

    @classmethod
    def kind(cls, group: str, *, cluster: bool = False) -> KindRef:
        """The runtime config kind of ``group``: ``AIMRuntimeConfig``, or with ``cluster``
        ``AIMClusterRuntimeConfig``."""
        return config_kinds(group).scoped(cluster=cluster)

    @classmethod
    def of(cls, group: str, resolved: Resolved) -> RuntimeConfig:
        return cls(resolved, _read(group, resolved.spec))

    def reference(self) -> Obj | None:
        """``status.resolvedRuntimeConfig`` (``None`` without a config)."""
        return self.resolved.reference()

    @property
    def env(self) -> list[EnvVar]:
        """``env`` (the current group's): the first layer of a workload's environment."""
        return list(self.spec.env or []) if isinstance(self.spec, aim.AIMRuntimeConfigSpec) else []

    @property
    def routing(self) -> AnyRuntimeRouting | None:
        return self.spec.routing

    @property
    def creation_scope(self) -> str | None:
        """``model.creationScope``: where a model made for a service's image goes."""
        model = self.spec.model
        return str(model.creation_scope) if model is not None and model.creation_scope else None

    @property
    def auto_discovery(self) -> bool | None:
        """``model.autoDiscovery``: whether models made for images read their labels and make templates."""
        model = self.spec.model
        return model.auto_discovery if model is not None else None

    def routing_setting(self, name: str) -> Any:
        """A field of the config's routing (:func:`routing_value`)."""
        return routing_value(self.routing, name)


def routing_value(routing: object, name: str) -> Any:
    """A field of a ``routing`` block (a runtime config's or a service's, either group) by
    attribute name (``path_template``…), ``None`` when unset or empty; the legacy
    ``routeTemplate`` answers for ``path_template`` when that is not set."""
    if routing is None:
        return None
    names = [name, "route_template"] if name == "path_template" else [name]
    for field in names:
        value = getattr(routing, field, None)
        if value not in (None, ""):
            return value
    return None
