"""Building blocks every CRD model is written with, so one set of pydantic classes is both the
runtime type of an object and the single source the CRD YAML is generated from.

Conventions (the generator in ``aim_dev.crdgen`` relies on them):

- Spec/status types subclass :class:`K8sModel`: snake_case attributes, camelCase on the wire
  (``alias_generator``), unknown fields rejected so a typo in a manifest is an error, not silence.
- A pydantic default is the CRD default. Use ``None`` for "unset" and a real default only where the
  seed documents one.
- Constraints use pydantic's own (``min_length``, ``ge``, ``pattern``, ``max_length``...); they become
  OpenAPI constraints. Extra OpenAPI keywords go through ``json_schema_extra``.
- CEL rules: :func:`cel` on a field (``Field(json_schema_extra=cel(...))``) or on a model
  (``model_config = k8s_config(cel(...))``). The 1.20 test server ignores CEL, so every rule that
  needs no ``oldSelf`` is also checked in Python by a ``model_validator``; parsing an object is
  validating it, and a ``ValidationError`` becomes an ``InvalidSpec`` condition.
- A top-level kind subclasses :class:`Resource` and declares ``crd: ClassVar[CRDInfo]``.
- Every Python-only rule (a ``model_validator`` or ``field_validator`` that checks, never
  converts) returns at once when :func:`decoding`, and an annotated type's rule is wrapped in
  :func:`aimcore.api.decoding.rule`: reading a stored object (what
  the API server enforced: types, enums, required fields) is one thing, judging it is its owner's
  (:mod:`aimcore.api.crds.validation`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Self, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel

from aimcore.api.decoding import decoding, rule
from aimcore.api.imageref import InvalidReference, parse_reference
from aimcore.api.quantities import amount, check_amount

# ---------------------------------------------------------------------------------------------
# Model configuration
# ---------------------------------------------------------------------------------------------

_BASE_CONFIG: dict[str, Any] = {
    "alias_generator": to_camel,
    "populate_by_name": True,
    "extra": "forbid",
    "validate_default": False,
}


def k8s_config(*rules: dict[str, Any], **extra_schema: Any) -> ConfigDict:
    """A ``model_config`` with the wire conventions plus CEL rules / extra schema keywords."""
    schema: dict[str, Any] = dict(extra_schema)
    validations = [r for rs in rules for r in rs.get("x-kubernetes-validations", [])]
    if validations:
        schema["x-kubernetes-validations"] = validations
    cfg: dict[str, Any] = dict(_BASE_CONFIG)
    if schema:
        cfg["json_schema_extra"] = schema
    return cast(ConfigDict, cfg)


def cel(*rules: tuple[str, str] | dict[str, str]) -> dict[str, Any]:
    """CEL validation rules: ``cel(("self == oldSelf", "field is immutable"))``."""
    out: list[dict[str, str]] = []
    for r in rules:
        out.append(r if isinstance(r, dict) else {"rule": r[0], "message": r[1]})
    return {"x-kubernetes-validations": out}


IMMUTABLE = ("self == oldSelf", "field is immutable")


def immutable(message: str = "field is immutable") -> dict[str, Any]:
    return cel(("self == oldSelf", message))


class K8sModel(BaseModel):
    """Base of every spec/status/nested type."""

    model_config = k8s_config()

    def wire(self) -> dict[str, Any]:
        """The object as the API server wants it: camelCase, unset fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# ---------------------------------------------------------------------------------------------
# Kubernetes built-in types as they appear inside CRD schemas
# ---------------------------------------------------------------------------------------------

_QUANTITY_SCHEMA = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    # resource.Quantity's pattern without the minus sign (and integers from 0): every quantity of
    # these APIs is a size or an amount of a resource, where Kubernetes refuses a negative value.
    "pattern": (
        r"^(\+)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
        r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "minimum": 0,
    "x-kubernetes-int-or-string": True,
}


def _quantity(value: int | str) -> int | str:
    check_amount(value)
    return value


Quantity = Annotated[int | str, rule(_quantity), WithJsonSchema(_QUANTITY_SCHEMA)]
"""resource.Quantity: ``"64Gi"``, ``"500m"`` or an integer; never negative, above 2^63-1 or finer
than 1n (:func:`aimcore.api.quantities.check_amount`: Kubernetes would refuse, cap or round it)."""

QuantityString = Annotated[
    str,
    rule(_quantity),
    WithJsonSchema({"type": "string", "pattern": _QUANTITY_SCHEMA["pattern"]}),
]
"""A quantity the API spells as a plain string (an autoscaling target): the same checks."""

IMAGE_PATTERN = r"^\S+$"
"""An image reference has no whitespace (a trailing newline would reach the Pod as written)."""


def _image_reference(value: str) -> str:
    try:
        parse_reference(value)
    except InvalidReference as exc:
        raise ValueError(str(exc)) from None
    return value


ImageReference = Annotated[str, rule(_image_reference)]
"""A container image reference, parsed as the registry client and the kubelet will read it
(:func:`aimcore.api.imageref.parse_reference`); use with ``Field(pattern=IMAGE_PATTERN)`` so the
API server refuses whitespace at apply time."""

DURATION_PATTERN = r"^\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$"
"""Go's ``time.ParseDuration`` syntax without the minus sign: no interval or timeout of these
APIs can be negative."""
_DURATION_RE = re.compile(DURATION_PATTERN)


def _duration(value: str) -> str:
    if not _DURATION_RE.fullmatch(value):
        raise ValueError(f"{value!r} is not a duration (such as 30m, 1h or 2h30m; no sign, no spaces)")
    return value


Duration = Annotated[str, rule(_duration), WithJsonSchema({"type": "string", "pattern": DURATION_PATTERN})]
"""metav1.Duration: a Go duration string such as ``"1h"`` or ``"15m30s"``; the API server refuses
anything else (it would be stored, then fail or be misread by whoever parses it)."""

HOSTNAME_PATTERN = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""The Gateway API's Hostname: a lowercase DNS name, optionally with a leading ``*.`` label; no IP,
no port, no trailing dot."""
_HOSTNAME_RE = re.compile(HOSTNAME_PATTERN)
HOSTNAME_MAX = 253


def _hostname(value: str) -> str:
    if len(value) > HOSTNAME_MAX or not _HOSTNAME_RE.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a hostname a route can match (a lowercase DNS name such as "
            "chat.example.com, or *.example.com; no IP address, port or trailing dot)"
        )
    return value


GatewayHostname = Annotated[
    str,
    rule(_hostname),
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": HOSTNAME_MAX, "pattern": HOSTNAME_PATTERN}
    ),
]
"""gateway.networking.k8s.io Hostname, as an HTTPRoute's ``spec.hostnames`` takes it."""

Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
"""metav1.Time: RFC 3339."""

JSONValue = Annotated[Any, WithJsonSchema({"x-kubernetes-preserve-unknown-fields": True})]
"""apiextensions JSON: any value, kept as is."""

FreeObject = Annotated[
    dict[str, Any], WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
]
"""An embedded Kubernetes object we do not model field by field (for example an Affinity)."""


class LocalObjectReference(K8sModel):
    name: str = Field(default="", description="Name of the referent.")
    model_config = k8s_config(**{"x-kubernetes-map-type": "atomic"})


class SecretKeySelector(K8sModel):
    name: str = Field(default="", description="Name of the referent.")
    key: str = Field(description="The key of the secret to select from.")
    optional: bool | None = None


class ConfigMapKeySelector(K8sModel):
    name: str = Field(default="", description="Name of the referent.")
    key: str = Field(description="The key to select.")
    optional: bool | None = None


class ObjectFieldSelector(K8sModel):
    api_version: str | None = None
    field_path: str


class ResourceFieldSelector(K8sModel):
    container_name: str | None = None
    resource: str
    divisor: Quantity | None = None


class EnvVarSource(K8sModel):
    secret_key_ref: SecretKeySelector | None = None
    config_map_key_ref: ConfigMapKeySelector | None = None
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None


class EnvVar(K8sModel):
    """core/v1 EnvVar."""

    name: str = Field(description="Name of the environment variable.")
    value: str | None = None
    value_from: EnvVarSource | None = None


class ResourceClaim(K8sModel):
    name: str


def is_extended_resource(name: str) -> bool:
    """A resource outside the ``kubernetes.io`` domain (``amd.com/gpu``): whole numbers only, and
    a request equal to the limit (Kubernetes does not overcommit them)."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


class ResourceRequirements(K8sModel):
    """core/v1 ResourceRequirements. Checked as a Pod's would be (what the API server stores
    here is copied into Pods later, where Kubernetes refuses it): a request is not above its
    limit, an extended resource is a whole number and its request equals its limit."""

    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[ResourceClaim] | None = None

    @model_validator(mode="after")
    def _check_pod_rules(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        requests, limits = self.requests or {}, self.limits or {}
        for side, values in (("requests", requests), ("limits", limits)):
            for name, value in values.items():
                if is_extended_resource(name) and amount(value).denominator != 1:
                    raise ValueError(f"{side}.{name}: {value!r} is not a whole number (an extended resource)")
        for name, request in requests.items():
            limit = limits.get(name)
            if limit is None:
                continue
            if is_extended_resource(name) and amount(request) != amount(limit):
                raise ValueError(
                    f"requests.{name} {request!r} must equal limits.{name} {limit!r} (an extended resource)"
                )
            if amount(request) > amount(limit):
                raise ValueError(f"requests.{name} {request!r} is more than limits.{name} {limit!r}")
        return self


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(K8sModel):
    """metav1.Condition."""

    type: str = Field(max_length=316)
    status: ConditionStatus
    observed_generation: int | None = Field(default=None, ge=0)
    last_transition_time: Time
    reason: str = Field(max_length=1024, min_length=1)
    message: str = Field(default="", max_length=32768)


# ---------------------------------------------------------------------------------------------
# Object metadata and top-level resources
# ---------------------------------------------------------------------------------------------


class OwnerReference(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(BaseModel):
    """The parts of metav1.ObjectMeta the operator reads; anything else is kept as is."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: str = "string"
    priority: int = 0
    description: str | None = None
    format: str | None = None

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.priority:
            out["priority"] = self.priority
        if self.description:
            out["description"] = self.description
        if self.format:
            out["format"] = self.format
        return out


AGE = PrinterColumn("Age", ".metadata.creationTimestamp", type="date")
STATUS = PrinterColumn("Status", ".status.status")


@dataclass(frozen=True)
class CRDInfo:
    """Everything about a kind the CRD says besides its schema."""

    group: str
    kind: str
    plural: str
    scope: Literal["Namespaced", "Cluster"]
    version: str = "v1alpha1"
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    description: str = ""
    # Kinds whose spec is free-form beyond what we model set this to keep unknown fields.
    singular: str = field(default="")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def namespaced(self) -> bool:
        return self.scope == "Namespaced"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()


class Resource(BaseModel):
    """A top-level object of one of our kinds. Subclasses set ``crd`` and type ``spec``/``status``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
    crd: ClassVar[CRDInfo]

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def wire(self) -> dict[str, Any]:
        out = self.model_dump(by_alias=True, exclude_none=True, mode="json")
        out["apiVersion"] = self.crd.api_version
        out["kind"] = self.crd.kind
        return out
