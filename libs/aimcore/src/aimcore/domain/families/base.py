"""What every AIM object says, whatever its kind and group: identity, owners, and its status in
the terms every kind shares (``status.status``, conditions). The family adapters
(:mod:`aimcore.domain.families`) build on :class:`Object`.

Metadata and spec are read from the parsed model. The status is read as the status service wrote
it, a field at a time, here and in the family adapters only: it is that service's output, not the
user's input (the runtime does not parse it), and a reader takes what it finds — an unknown state
is not ready, a condition without a reason has none.

An object comes from the informer (:meth:`Object.get`, :meth:`Object.each`, :meth:`Object.read`),
parsed once per resourceVersion; one the process cannot read as its kind (a placeholder for an
object too large for the bus: no spec) is absent to its readers. Constructed from a dict
(``Template(kind, obj)``), it parses the dict itself (tests, bodies being built).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

from pydantic import BaseModel

from aimcore.api.crds.base import Resource
from aimcore.api.crds.validation import decode
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime.informer import Informer
from aimcore.runtime.request import Request

__all__ = [
    "READY_STATES",
    "Deployable",
    "Object",
    "Reference",
    "StatusCondition",
    "is_ready",
    "state_of",
    "written",
]

R = TypeVar("R", bound=Resource)

READY_STATES = ("Ready", "Available")  # the legacy group's templates and caches say Available


def state_of(obj: Mapping[str, Any]) -> str:
    """``status.status`` of any AIM object as stored (``Pending`` until something wrote it): a
    status read needs no parsed spec."""
    status = obj.get("status")
    return str((status.get("status") if isinstance(status, Mapping) else None) or "Pending")


def is_ready(obj: Mapping[str, Any]) -> bool:
    """Whether any AIM object as stored is ready (``Ready``, or the legacy group's ``Available``)."""
    return state_of(obj) in READY_STATES


def written(model: BaseModel) -> Obj:
    """A fragment of a parsed object as it was written: the fields its input set, not the model's
    defaults (what a child copies verbatim, or hashes into a name)."""
    return model.model_dump(by_alias=True, exclude_unset=True, mode="json")


class Object(Generic[R]):
    """One AIM object: its kind (``ref``), its parsed model (``resource``: metadata, spec and
    status) and the object as stored (``obj``: the fragments a child copies as written)."""

    __slots__ = ("obj", "ref", "resource")
    kinds: ClassVar[tuple[KindRef, ...]] = ()
    """The kinds of the family (both groups)."""

    def __init__(self, ref: KindRef, obj: Obj, resource: R | None = None) -> None:
        self.ref = ref
        self.obj = obj
        if resource is None:
            read = decode(ref.group, ref.kind, obj)
            if read.resource is None:
                raise ValueError(f"{ref.kind} does not read as its kind: {read.invalid}")
            resource = cast(R, read.resource)
        self.resource: R = resource

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ref.kind} {self.namespace or ''}/{self.name})"

    @classmethod
    def of_request(cls, request: Request) -> Self:
        """The object a reconcile is for, through this adapter (parsed by the runtime:
        ``request.resource``)."""
        return cls(request.ref, request.obj, cast(R, request.resource))

    # -- from the informer -------------------------------------------------------------------------

    @classmethod
    def read(cls, informer: Informer, ref: KindRef, obj: Obj | None) -> Self | None:
        """``obj`` (of kind ``ref``, as the informer has it) through this adapter."""
        if obj is None:
            return None
        resource = informer.decoded(ref, obj).resource
        return None if resource is None else cls(ref, obj, cast(R, resource))

    @classmethod
    def kinds_in(cls, group: str) -> tuple[KindRef, ...]:
        """The family's kinds that ``group`` serves."""
        return tuple(k for k in cls.kinds if k.group == group)

    @classmethod
    def get(cls, informer: Informer, ref: KindRef, namespace: str | None, name: str) -> Self | None:
        """The object of kind ``ref`` named ``name`` (in ``namespace`` if the kind is namespaced)."""
        return cls.read(informer, ref, informer.get(ref, namespace if ref.namespaced else None, name))

    @classmethod
    def each(cls, informer: Informer, ref: KindRef, namespace: str | None = None) -> list[Self]:
        """Every object of kind ``ref`` (in ``namespace`` if the kind is namespaced and it is given)."""
        found = (cls.read(informer, ref, obj) for obj in informer.list(ref, namespace))
        return [o for o in found if o is not None]

    # -- identity ----------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.resource.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.resource.metadata.namespace or None

    @property
    def label(self) -> str:
        """``Kind name`` for messages (the kind tells the scope)."""
        return f"{self.ref.kind} {self.name}"

    @property
    def uid(self) -> str | None:
        return self.resource.metadata.uid

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.resource.metadata.labels or {})

    @property
    def annotations(self) -> dict[str, str]:
        return dict(self.resource.metadata.annotations or {})

    @property
    def deleting(self) -> bool:
        return bool(self.resource.metadata.deletion_timestamp)

    @property
    def created(self) -> str | None:
        """``metadata.creationTimestamp`` (RFC 3339, so it sorts in time order)."""
        return self.resource.metadata.creation_timestamp

    @property
    def owner_uids(self) -> set[str]:
        return {o.uid for o in self.resource.metadata.owner_references or []}

    def reference(self) -> Obj:
        """An ``AIMResolvedReference`` to this object (``status.resolvedModel``, ``resolvedTemplate``…)."""
        out: Obj = {
            "name": self.name,
            "scope": "Namespace" if self.ref.namespaced else "Cluster",
            "kind": self.ref.kind,
        }
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        return out

    # -- status (as written) -----------------------------------------------------------------------

    @property
    def status(self) -> Mapping[str, Any]:
        """The status as the status service wrote it."""
        status = self.obj.get("status")
        return status if isinstance(status, Mapping) else {}

    @property
    def state(self) -> str:
        """``status.status`` (``Pending`` until something wrote it)."""
        return state_of(self.obj)

    @property
    def ready(self) -> bool:
        return self.state in READY_STATES

    @property
    def conditions(self) -> list[Mapping[str, Any]]:
        """The conditions as written."""
        return [c for c in self.status.get("conditions") or [] if isinstance(c, Mapping)]

    def condition(self, type_: str) -> StatusCondition | None:
        """The condition of type ``type_``, if the status has one."""
        return StatusCondition.find(self.obj, type_)

    @property
    def ready_reason(self) -> str:
        """The reason of the ``Ready`` condition, or ``""``."""
        return next(
            (str(c["reason"]) for c in self.conditions if c.get("type") == "Ready" and c.get("reason")), ""
        )

    @property
    def ready_message(self) -> str:
        """The message of the ``Ready`` condition, or ``""``."""
        return next(
            (str(c["message"]) for c in self.conditions if c.get("type") == "Ready" and c.get("message")), ""
        )

    def resolved(self, field: str) -> Reference | None:
        """A reference its status records (``resolvedModel``, ``resolvedTemplate``…), by wire name."""
        return Reference.of(self.status.get(field))


@dataclass(frozen=True)
class StatusCondition:
    """One condition of a status, as written (``""`` for what it does not say)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""

    @classmethod
    def find(cls, obj: Mapping[str, Any], type_: str) -> StatusCondition | None:
        """The condition of type ``type_`` in the status of ``obj`` (any AIM object as stored: a
        status read needs no parsed spec)."""
        status = obj.get("status")
        for c in (status.get("conditions") if isinstance(status, Mapping) else None) or []:
            if isinstance(c, Mapping) and c.get("type") == type_:
                return cls.of(c)
        return None

    @classmethod
    def of(cls, condition: Mapping[str, Any]) -> StatusCondition:
        return cls(
            type=str(condition.get("type") or ""),
            status=str(condition.get("status") or ""),
            reason=str(condition.get("reason") or ""),
            message=str(condition.get("message") or ""),
        )


@dataclass(frozen=True)
class Reference:
    """An ``AIMResolvedReference`` a status records (``None`` for what it does not say)."""

    name: str | None = None
    kind: str | None = None
    namespace: str | None = None
    uid: str | None = None

    @classmethod
    def of(cls, value: Any) -> Reference | None:
        if not isinstance(value, Mapping):
            return None
        found = {k: str(value[k]) if value.get(k) else None for k in ("name", "kind", "namespace", "uid")}
        return cls(**found)


class Deployable(Object[R]):
    """A kind whose spec says how the workloads made from it run (models and templates, both
    groups): the runtime config, pull secrets and service account they pass on to their children."""

    __slots__ = ()

    @property
    def runtime_config_name(self) -> str | None:
        """``spec.runtimeConfigName`` when written (not the legacy group's filled-in default)."""
        spec = getattr(self.resource, "spec", None)
        if spec is None or "runtime_config_name" not in spec.model_fields_set:
            return None
        return getattr(spec, "runtime_config_name", None) or None

    @property
    def pull_secrets(self) -> list[str]:
        """The names in ``spec.imagePullSecrets`` (generation-1 images have none)."""
        refs = getattr(getattr(self.resource, "spec", None), "image_pull_secrets", None) or []
        return [r.name for r in refs if r.name]

    @property
    def service_account(self) -> str | None:
        """``spec.serviceAccountName`` (generation-1 images have none)."""
        return getattr(getattr(self.resource, "spec", None), "service_account_name", None) or None
