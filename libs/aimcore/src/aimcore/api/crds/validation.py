"""Service-side validation, and reading a stored object into its model.

Parsing an object into its model checks every seed constraint the 1.20 test API server cannot
enforce (CEL), and a failure becomes an ``InvalidSpec`` message (:func:`parse`, :func:`describe`).
Reading is not judging: every process that reads an object it does not own (a template the
deployer selects, a model a service names) reads it as the API server stored it, rules or not, as a
Go controller decodes an object into its struct (:func:`decode`). The owner's verdict travels with
the read (:attr:`Decoded.invalid`), so one parse per version serves both.

What is parsed is the user's input: metadata and spec. The status is the status service's output,
which every reader takes as written (a few fields each, through its kind family's adapter:
:mod:`aimcore.domain.families`); parsing it too would cost every read for fields nobody asks for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from aimcore.api.crds.base import Resource
from aimcore.api.crds.registry import resource_class
from aimcore.api.decoding import DECODE

INVALID_SPEC = "InvalidSpec"
_INPUT = ("apiVersion", "kind", "metadata", "spec")  # the user's input: what is validated


def describe(error: ValidationError, limit: int = 5) -> str:
    """A short human message: ``spec.model: exactly one of name, image or custom must be set``."""
    parts = []
    for err in error.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "object"
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {msg}")
    more = len(error.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def parse(obj: dict[str, Any]) -> Resource:
    """Parse a wire object into its kind's model; raises ``ValidationError`` when invalid."""
    group = str(obj.get("apiVersion", "")).split("/")[0]
    cls = resource_class(group, str(obj.get("kind", "")))
    # The server adds metadata fields and may add status we do not model strictly; only the spec
    # is the user's input to validate.
    return cls.model_validate({k: v for k, v in obj.items() if k in _INPUT})


@dataclass(frozen=True)
class Decoded:
    """One stored object read into its kind's model."""

    resource: Resource | None
    """The model (metadata and spec); ``None`` only when the object is not one of its kind at all
    (a placeholder for an object too large for the bus: no spec)."""
    invalid: str | None = None
    """Why the spec breaks a rule the services check (the ``InvalidSpec`` message its owner
    reports), ``None`` when it keeps them all."""


def decode(group: str, kind: str, obj: dict[str, Any]) -> Decoded:
    """``obj`` (stored as kind ``kind`` of ``group``) as its model: checked as :func:`parse`
    checks it, and read without the services' rules when it breaks one."""
    cls = resource_class(group, kind)
    given = {k: v for k, v in obj.items() if k in _INPUT}
    invalid: str | None = None
    try:
        resource = cls.model_validate(given)
    except ValidationError as exc:
        invalid = describe(exc)
        try:
            resource = cls.model_validate(given, context=DECODE)
        except ValidationError:
            return Decoded(None, invalid)
    return Decoded(resource, invalid)
