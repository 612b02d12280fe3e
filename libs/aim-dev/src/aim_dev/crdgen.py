"""Generates CustomResourceDefinitions from the pydantic models, so the models stay the only source
of truth for the API and the committed YAML under ``deploy/crds/`` can be checked for drift.

Pydantic emits JSON Schema (``$ref``, ``anyOf`` with ``null``, ``title``); Kubernetes wants a
*structural* OpenAPI v3 schema (everything inlined, a ``type`` at every level, no nulls). The
conversion below is deliberately small and strict: anything it does not understand raises.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from aim_dev import userroles
from aimcore.api.crds.base import CRDInfo, Resource
from aimcore.api.crds.registry import ALL_KINDS

_DROP = {"title", "additionalProperties"}
_KEEP = {
    "description",
    "default",
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "format",
    "type",
    "x-kubernetes-validations",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-map-type",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "nullable",
}


class SchemaError(ValueError):
    """The model produced a schema the converter cannot express structurally."""


_RULES = "x-kubernetes-validations"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over``'s keywords on ``base``'s, except CEL rules, which add up: a field's own rule
    (``hardware is immutable``) must not drop its type's (``at least one of gpu or cpu``)."""
    merged = {**base, **over}
    rules = list(base.get(_RULES, []))
    rules += [rule for rule in over.get(_RULES, []) if rule not in rules]
    if rules:
        merged[_RULES] = rules
    return merged


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    target = defs[ref.rsplit("/", 1)[-1]]
    return _merge(target, {k: v for k, v in node.items() if k != "$ref"})


def _strip_null(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {type: null}]`` (pydantic's Optional) → X, keeping sibling keywords."""
    variants = node.get("anyOf")
    if not variants:
        return node
    real = [v for v in variants if v.get("type") != "null"]
    if len(real) == len(variants):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if len(real) == 1:
        return _merge(real[0], rest)
    return {**rest, "anyOf": real}


def to_structural(node: dict[str, Any], defs: dict[str, Any], path: str = "") -> dict[str, Any]:
    """Convert one pydantic JSON-schema node (and its children) to structural OpenAPI v3."""
    node = _strip_null(_resolve(node, defs))
    node = _resolve(node, defs)  # an Optional[$ref] resolves only after the null is stripped
    if node.get("default", 0) in (None, ""):
        # None means "unset"; an empty-string default says nothing and API servers before 1.2x
        # reject it ("must be of type string: null").
        node = {k: v for k, v in node.items() if k != "default"}

    if node.get("x-kubernetes-int-or-string"):
        return {k: v for k, v in node.items() if k in _KEEP}
    if "anyOf" in node:
        raise SchemaError(f"{path or '<root>'}: unions are not structural: {node['anyOf']}")

    out: dict[str, Any] = {k: v for k, v in node.items() if k in _KEEP}
    typ = node.get("type")
    if typ is None and "enum" in node:
        out["type"] = "string"
    elif typ is None and not node.get("x-kubernetes-preserve-unknown-fields"):
        if "const" in node:
            out["type"] = "string"
            out["enum"] = [node["const"]]
        else:
            raise SchemaError(f"{path or '<root>'}: no type in {node}")

    if typ == "object":
        props = node.get("properties")
        if props:
            out["properties"] = {
                name: to_structural(child, defs, f"{path}.{name}") for name, child in props.items()
            }
            if node.get("required"):
                out["required"] = list(node["required"])
        addl = node.get("additionalProperties")
        if isinstance(addl, dict):
            out["additionalProperties"] = to_structural(addl, defs, f"{path}[*]")
    elif typ == "array":
        out["items"] = to_structural(node.get("items", {}), defs, f"{path}[]")
    for key in (
        set(node)
        - _KEEP
        - _DROP
        - {
            "properties",
            "required",
            "items",
            "$defs",
            "const",
            "$ref",
        }
    ):
        raise SchemaError(f"{path or '<root>'}: unsupported keyword {key!r}")
    return out


def schema_of(model: type[Any]) -> dict[str, Any]:
    """Structural schema of one pydantic model class."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    return to_structural(copy.deepcopy(raw), defs, model.__name__)


def crd_for(kind: type[Resource]) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    info: CRDInfo = kind.crd
    full = schema_of(kind)
    props = full.get("properties", {})
    root: dict[str, Any] = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
        },
    }
    if info.description:
        root["description"] = info.description
    for part in ("spec", "status"):
        if part in props:
            root["properties"][part] = props[part]
    if "spec" in full.get("required", []):
        root["required"] = ["spec"]
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": f"{info.kind}List",
        "plural": info.plural,
        "singular": info.singular_name,
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    version: dict[str, Any] = {
        "name": info.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": root},
        "subresources": {"status": {}},
    }
    if info.printer_columns:
        version["additionalPrinterColumns"] = [c.wire() for c in info.printer_columns]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.crd_name},
        "spec": {
            "group": info.group,
            "names": names,
            "scope": info.scope,
            "versions": [version],
        },
    }


def all_kinds() -> tuple[type[Resource], ...]:
    return ALL_KINDS


class _NoAliasDumper(yaml.SafeDumper):
    """Repeated rule lists are written out in full, never as ``&id``/``*id`` anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


USER_ROLES_FILE = "aim-user-roles.yaml"
"""The aggregated user roles (aim_dev.userroles), installed with the CRDs."""


def render_all(docs: Iterable[dict[str, Any]]) -> str:
    header = "# Generated by `aimctl crds generate` from aimcore.api.crds; do not edit by hand.\n"
    return header + "".join(
        "---\n" + yaml.dump(d, Dumper=_NoAliasDumper, sort_keys=False, width=120) for d in docs
    )


def render(crd: dict[str, Any]) -> str:
    header = "# Generated by `aimctl crds generate` from aimcore.api.crds; do not edit by hand.\n"
    body = yaml.dump(crd, Dumper=_NoAliasDumper, sort_keys=False, width=120, allow_unicode=True)
    return header + body


def file_name(info: CRDInfo) -> str:
    return f"{info.group}_{info.plural}.yaml"


def generated_files(kinds: Iterable[type[Resource]] | None = None) -> dict[str, str]:
    """File name → YAML text for every kind, the user roles over them, and the kustomization listing
    them all."""
    chosen = tuple(kinds or all_kinds())
    files = {file_name(k.crd): render(crd_for(k)) for k in chosen}
    files[USER_ROLES_FILE] = render_all(userroles.cluster_roles(chosen))
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(files),
    }
    files["kustomization.yaml"] = render(kustomization)
    return files


def write(directory: Path) -> list[str]:
    """Write every CRD into ``directory``; remove stale generated files. Returns the names written."""
    directory.mkdir(parents=True, exist_ok=True)
    files = generated_files()
    for stale in directory.glob("*.yaml"):
        if stale.name not in files:
            stale.unlink()
    for name, text in files.items():
        (directory / name).write_text(text)
    return sorted(files)


def diff(directory: Path) -> list[str]:
    """Names of files in ``directory`` that differ from what the models generate (missing, changed, extra)."""
    files = generated_files()
    problems = [
        n for n, t in files.items() if not (directory / n).exists() or (directory / n).read_text() != t
    ]
    problems += [p.name for p in directory.glob("*.yaml") if p.name not in files]
    return sorted(problems)
