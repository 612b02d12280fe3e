"""AIM image labels → :class:`aimcore.api.crds.aim.ImageMetadata`.

Every AIM label is tried with the prefix ``com.amd.aim.`` first, then the legacy
``org.amd.silogen.``. ``model.recommendedDeployments`` (also accepted as ``model.deployments``) may be
JSON or Python-dict style (single quotes, ``True``/``False``/``None``), a list or comma-separated
objects; Python style is read with :func:`ast.literal_eval`, never ``eval``. A label that cannot be
parsed raises :class:`LabelError` naming it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from aimcore.api.crds.aim import ImageMetadata, ModelMetadata, OCIMetadata, RecommendedDeployment
from aimcore.domain.oci.errors import LabelError

AIM_PREFIXES = ("com.amd.aim.", "org.amd.silogen.")
OCI_PREFIX = "org.opencontainers.image."
MAX_DEPLOYMENTS_LENGTH = 256 * 1024

_LIST_FIELDS = {"tags": "model.tags", "versions": "model.versions", "variants": "model.variants"}
_TEXT_FIELDS = {
    "canonical_name": "model.canonicalName",
    "source": "model.source",
    "title": "title",
    "description_full": "description.full",
    "release_notes": "release.notes",
}
_DEPLOYMENT_SUFFIXES = ("model.recommendedDeployments", "model.deployments")
_OCI_FIELDS = (
    "title",
    "description",
    "licenses",
    "vendor",
    "authors",
    "source",
    "documentation",
    "created",
    "revision",
    "version",
)
_TRUE = {"1", "t", "true", "yes", "y", "on"}
_FALSE = {"0", "f", "false", "no", "n", "off"}
_DEPLOYMENT_KEYS: dict[str, str] = {}
for _name, _info in RecommendedDeployment.model_fields.items():  # both spellings → the wire name
    _DEPLOYMENT_KEYS[_name] = _DEPLOYMENT_KEYS[_info.alias or _name] = _info.alias or _name


def aim_label(labels: Mapping[str, str], suffix: str) -> tuple[str, str] | None:
    """``(label name, value)`` of ``com.amd.aim.<suffix>``, else ``org.amd.silogen.<suffix>``."""
    for prefix in AIM_PREFIXES:
        key = prefix + suffix
        value = labels.get(key)
        if value is not None:
            return key, value
    return None


def image_metadata(labels: Mapping[str, str] | None) -> ImageMetadata:
    """The metadata an image's labels carry. ``model``/``oci`` are left out when no label of
    theirs is present; ``original_labels`` holds every label verbatim."""
    labels = dict(labels or {})
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise LabelError(str(key), "label values must be strings")
    return ImageMetadata(
        model=model_metadata(labels),
        oci=oci_metadata(labels),
        original_labels=labels or None,
    )


def model_metadata(labels: Mapping[str, str]) -> ModelMetadata | None:
    values: dict[str, Any] = {}
    for field, suffix in _TEXT_FIELDS.items():
        found = aim_label(labels, suffix)
        if found and found[1].strip():
            values[field] = found[1].strip()
    for field, suffix in _LIST_FIELDS.items():
        found = aim_label(labels, suffix)
        if found:
            items = parse_list(found[1])
            if items:
                values[field] = items
    found = aim_label(labels, "hfToken.required")
    if found and found[1].strip():
        values["hf_token_required"] = parse_bool(found[1], found[0])
    for suffix in _DEPLOYMENT_SUFFIXES:
        found = aim_label(labels, suffix)
        if found:
            deployments = parse_recommended_deployments(found[1], found[0])
            if deployments is not None:
                values["recommended_deployments"] = deployments
            break
    return ModelMetadata(**values) if values else None


def oci_metadata(labels: Mapping[str, str]) -> OCIMetadata | None:
    values = {f: labels[OCI_PREFIX + f] for f in _OCI_FIELDS if labels.get(OCI_PREFIX + f)}
    return OCIMetadata(**values) if values else None


def parse_list(value: str) -> list[str]:
    """A comma-separated label: items trimmed, empty items dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def parse_bool(value: str, label: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise LabelError(label, f"{_excerpt(value)} is not a boolean (true/false)")


def parse_recommended_deployments(value: str, label: str) -> list[RecommendedDeployment] | None:
    """Parse a ``recommendedDeployments`` label; ``None`` when it is empty.

    Accepted: a JSON array or object, comma-separated JSON objects, the same in Python literal
    syntax, and the original's lenient form (single quotes turned into double quotes, then JSON).
    Keys are ``gpuModel``, ``gpuCount``, ``precision``, ``metric``, ``profileId``, ``description``
    (snake_case too); others are ignored."""
    text = value.strip()
    if not text:
        return None
    if len(text) > MAX_DEPLOYMENTS_LENGTH:
        raise LabelError(label, f"longer than {MAX_DEPLOYMENTS_LENGTH} characters")
    parsed = _parse_structured(text)
    if parsed is _UNPARSEABLE:
        raise LabelError(label, f"{_excerpt(value)} is neither JSON nor a Python literal list of objects")
    if isinstance(parsed, Mapping):
        items: list[Any] = [parsed]
    elif isinstance(parsed, list | tuple):
        items = list(parsed)
    else:
        raise LabelError(label, f"expected a list of objects, got {type(parsed).__name__}")
    out: list[RecommendedDeployment] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise LabelError(label, f"entry {index} is a {type(item).__name__}, not an object")
        known = {
            _DEPLOYMENT_KEYS[k]: v for k, v in item.items() if isinstance(k, str) and k in _DEPLOYMENT_KEYS
        }
        if isinstance(known.get("gpuCount"), bool):
            raise LabelError(label, f"entry {index}: gpuCount must be an integer")
        try:
            out.append(RecommendedDeployment.model_validate(known))
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors(include_url=False)
            )
            raise LabelError(label, f"entry {index}: {problems}") from None
    return out


_UNPARSEABLE: Any = object()


def _parse_structured(text: str) -> Any:
    candidates = [text] if text.startswith("[") else [text, f"[{text}]"]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            pass
    for candidate in candidates:
        try:
            return ast.literal_eval(candidate)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    for candidate in candidates:  # the original: single quotes → double quotes, then JSON
        try:
            return json.loads(candidate.replace("'", '"'))
        except (ValueError, RecursionError):
            pass
    return _UNPARSEABLE


def _excerpt(value: str, limit: int = 80) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")
