"""Service-side validation: parsing an object into its model checks every seed constraint the
1.20 test API server cannot enforce (CEL), and a failure becomes an ``InvalidSpec`` message."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from aimcore.api.crds.base import Resource
from aimcore.api.crds.registry import resource_class

INVALID_SPEC = "InvalidSpec"


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
    return cls.model_validate(
        {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "metadata", "spec")}
    )
