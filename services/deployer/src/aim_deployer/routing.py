"""The HTTP path and the Gateway API HTTPRoute of an AIMService (reference §2.7).

The original operator renders ``spec.routing.pathTemplate`` (legacy ``routeTemplate``) with a
Kubernetes JSONPath against the service, and **on any render failure silently falls back to the
default path** ``/<namespace>/<uid>``: a typo in a label name publishes the model under a path
nobody asked for, with no condition saying so (its docs and the legacy e2e suite expect Degraded
with ``PathTemplateInvalid`` and no route). Here :func:`render_path` raises
:class:`PathTemplateError` with a message naming the expression, so the controller can report it
and skip the route. The evaluator understands the subset of JSONPath a path needs (dotted fields,
``['quoted key']`` and ``[index]``) and rejects the rest explicitly instead of guessing.
:func:`route_body` builds the HTTPRoute and :func:`route_condition` reads its status for the
``HTTPRouteReady`` condition. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.kinds import HTTP_ROUTE
from aimcore.naming import sanitize_part

__all__ = [
    "DEFAULT_PATH_TEMPLATE",
    "MAX_PATH",
    "REASON_ACCEPTED",
    "REASON_CREATING",
    "REASON_PENDING",
    "REASON_REJECTED",
    "Obj",
    "PathTemplateError",
    "default_path",
    "evaluate",
    "render_path",
    "route_body",
    "route_condition",
]

Obj = dict[str, Any]

MAX_PATH = 200
DEFAULT_PATH_TEMPLATE = "/{.metadata.namespace}/{.metadata.uid}"

REASON_CREATING = "HTTPRouteCreating"
REASON_ACCEPTED = "HTTPRouteAccepted"
REASON_REJECTED = "HTTPRouteRejected"
REASON_PENDING = "HTTPRoutePending"

BACKEND_PORT = 80


class PathTemplateError(ValueError):
    """The path template cannot be rendered for this service; the message says why."""


# --- JSONPath subset ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    key: str | int  # a field/key name, or a list index

    def show(self) -> str:
        if isinstance(self.key, int):
            return f"[{self.key}]"
        return f".{self.key}" if _FIELD.fullmatch(self.key) else f"[{self.key!r}]"


_FIELD = re.compile(r"[A-Za-z0-9_-]+")
_INDEX = re.compile(r"-?\d+")


def _parse(expr: str) -> list[_Step]:
    """``.a.b['c'][0]`` as steps; anything else (wildcards, filters, slices, recursive descent,
    functions) is rejected."""
    text = expr.strip()
    if not text:
        raise PathTemplateError("empty expression {}")
    if text.startswith("$"):
        text = text[1:]
    if not text.startswith((".", "[")):
        raise PathTemplateError(f"expression {{{expr}}} must start with '.' (for example {{.metadata.name}})")
    steps: list[_Step] = []
    pos = 0
    while pos < len(text):
        if text.startswith("..", pos):
            raise PathTemplateError(f"unsupported JSONPath {{{expr}}}: recursive descent '..'")
        char = text[pos]
        if char == ".":
            match = _FIELD.match(text, pos + 1)
            if match is None:
                found = text[pos + 1 : pos + 2] or "end of expression"
                raise PathTemplateError(f"unsupported JSONPath {{{expr}}}: unexpected {found!r} after '.'")
            steps.append(_Step(match.group()))
            pos = match.end()
        elif char == "[":
            close = _bracket_end(text, pos, expr)
            inner = text[pos + 1 : close].strip()
            if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                key = inner[1:-1]
                if inner[0] in key:
                    raise PathTemplateError(f"unsupported JSONPath {{{expr}}}: quote inside key [{inner}]")
                steps.append(_Step(key))
            elif _INDEX.fullmatch(inner):
                steps.append(_Step(int(inner)))
            else:
                raise PathTemplateError(
                    f"unsupported JSONPath {{{expr}}}: [{inner}] (only ['key'], [\"key\"] and [index])"
                )
            pos = close + 1
        else:
            raise PathTemplateError(f"unsupported JSONPath {{{expr}}}: unexpected {char!r}")
    return steps


def _bracket_end(text: str, start: int, expr: str) -> int:
    quote: str | None = None
    for pos in range(start + 1, len(text)):
        char = text[pos]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "]":
            return pos
    raise PathTemplateError(f"unsupported JSONPath {{{expr}}}: unclosed '['")


def evaluate(expr: str, obj: Mapping[str, Any]) -> Any:
    """The value of JSONPath ``expr`` in ``obj``; :class:`PathTemplateError` when a step is missing
    (a missing label or annotation is named as such)."""
    steps = _parse(expr)
    value: Any = obj
    walked = ""
    for index, step in enumerate(steps):
        if isinstance(step.key, int):
            if not isinstance(value, list):
                raise PathTemplateError(f"{{{expr}}}: {walked or 'the object'} is not a list")
            if not -len(value) <= step.key < len(value):
                raise PathTemplateError(f"{{{expr}}}: index {step.key} is out of range ({len(value)} items)")
            value = value[step.key]
        else:
            if not isinstance(value, Mapping) or value.get(step.key) is None:
                raise PathTemplateError(_missing(expr, steps, index, walked))
            value = value[step.key]
        walked += step.show()
    return value


def _missing(expr: str, steps: list[_Step], index: int, walked: str) -> str:
    parents = [s.key for s in steps[:index]]
    if parents in (["metadata", "labels"], ["metadata", "annotations"]):
        what = "label" if parents[1] == "labels" else "annotation"
        return f"{{{expr}}}: the service has no {what} {steps[index].key!r}"
    return f"{{{expr}}}: field {walked}{steps[index].show()} is not set on the service"


def _is_annotation(expr: str) -> bool:
    steps = _parse(expr)
    return [s.key for s in steps[:2]] == ["metadata", "annotations"]


# --- rendering ---------------------------------------------------------------------------------------

_ALNUM = re.compile(r"[a-z0-9]")


def _rfc1123(text: str) -> str | None:
    """``text`` made RFC-1123-ish (:func:`aimcore.naming.sanitize_part`), or None when nothing of
    it survives (where sanitize_part would answer ``part``)."""
    text = text.strip()
    return sanitize_part(text) if _ALNUM.search(text.lower()) else None


def _scalar(expr: str, value: Any) -> str:
    if isinstance(value, Mapping | list):
        kind = "an object" if isinstance(value, Mapping) else "a list"
        raise PathTemplateError(f"{{{expr}}} is {kind}, not a single value")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _split(template: str) -> list[tuple[bool, str]]:
    """``template`` as (is_expression, text) pieces; braces must balance (quotes inside an
    expression may contain braces)."""
    pieces: list[tuple[bool, str]] = []
    literal: list[str] = []
    pos = 0
    while pos < len(template):
        char = template[pos]
        if char == "}":
            raise PathTemplateError(f"path template {template!r}: unbalanced '}}' at position {pos}")
        if char != "{":
            literal.append(char)
            pos += 1
            continue
        quote: str | None = None
        end = None
        for scan in range(pos + 1, len(template)):
            c = template[scan]
            if quote:
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "{":
                break
            elif c == "}":
                end = scan
                break
        if end is None:
            raise PathTemplateError(f"path template {template!r}: unbalanced '{{' at position {pos}")
        if literal:
            pieces.append((False, "".join(literal)))
            literal = []
        pieces.append((True, template[pos + 1 : end]))
        pos = end + 1
    if literal:
        pieces.append((False, "".join(literal)))
    return pieces


def render_path(template: str, service: Mapping[str, Any]) -> str:
    """The route's path prefix: every ``{expr}`` evaluated against ``service``; each value (except
    annotation values) made RFC-1123-ish, then every ``/``-separated segment of the whole path too,
    empty segments dropped, a leading ``/``, no trailing ``/``, at most :data:`MAX_PATH` characters.
    Raises :class:`PathTemplateError` naming the offending expression."""
    rendered: list[str] = []
    for is_expr, text in _split(template):
        if not is_expr:
            rendered.append(text)
            continue
        value = _scalar(text, evaluate(text, service))
        if not value.strip():
            raise PathTemplateError(f"{{{text}}} renders an empty value")
        if _is_annotation(text):
            rendered.append(value)
            continue
        clean = _rfc1123(value)
        if clean is None:
            raise PathTemplateError(f"{{{text}}} renders {value!r}, which leaves nothing usable in a path")
        rendered.append(clean)
    segments = [s for part in "".join(rendered).split("/") if (s := _rfc1123(part))]
    if not segments:
        raise PathTemplateError(f"path template {template!r} renders an empty path")
    path = "/" + "/".join(segments)
    if len(path) > MAX_PATH:
        raise PathTemplateError(
            f"path template {template!r} renders a path of {len(path)} characters (at most {MAX_PATH}): "
            f"{path[:60]}..."
        )
    return path


def default_path(service: Mapping[str, Any]) -> str:
    """``/<namespace>/<uid>``, the path when no template is configured."""
    return render_path(DEFAULT_PATH_TEMPLATE, service)


# --- the HTTPRoute -----------------------------------------------------------------------------------


def _present(value: Any) -> bool:
    return value is not None and value not in ("", [], {})


def route_body(
    *,
    name: str,
    namespace: str,
    path: str,
    gateway: Mapping[str, Any],
    backend_service: str,
    request_timeout: str | None,
    annotations: Mapping[str, str],
    labels: Mapping[str, str],
    owner: Mapping[str, Any],
) -> Obj:
    """The HTTPRoute: ``gateway`` (a ParentReference) as the only parent, one rule matching the
    path prefix, rewriting it to ``/`` and forwarding to port 80 of ``backend_service``."""
    parent = {k: v for k, v in gateway.items() if _present(v)}
    if not parent.get("name"):
        raise ValueError("the gateway reference has no name")
    metadata: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels),
        "ownerReferences": [dict(owner)],
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    rule: Obj = {
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "filters": [
            {
                "type": "URLRewrite",
                "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
            }
        ],
        "backendRefs": [{"name": backend_service, "port": BACKEND_PORT}],
    }
    if request_timeout:
        rule["timeouts"] = {"request": request_timeout}
    return {
        "apiVersion": HTTP_ROUTE.api_version,
        "kind": HTTP_ROUTE.kind,
        "metadata": metadata,
        "spec": {"parentRefs": [parent], "rules": [rule]},
    }


def _gateway_name(parent: Mapping[str, Any]) -> str:
    ref = parent.get("parentRef")
    ref = ref if isinstance(ref, Mapping) else {}
    name = str(ref.get("name") or "the gateway")
    namespace = ref.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def _conditions(parent: Mapping[str, Any], generation: Any) -> dict[str, Mapping[str, Any]]:
    """The parent's conditions by type, leaving out those observed for an older generation of the
    route (when both generations are known)."""
    out: dict[str, Mapping[str, Any]] = {}
    for cond in parent.get("conditions") or []:
        if not isinstance(cond, Mapping) or not cond.get("type"):
            continue
        observed = cond.get("observedGeneration")
        if isinstance(generation, int) and isinstance(observed, int) and observed < generation:
            continue
        out[str(cond["type"])] = cond
    return out


def route_condition(route: Mapping[str, Any] | None) -> tuple[bool, str, str]:
    """(ok, reason, message) for the service's ``HTTPRouteReady`` condition, from the route's
    ``status.parents``: accepted by any parent wins, then a rejection, then unresolved references,
    else pending."""
    if route is None:
        return False, REASON_CREATING, "creating the HTTPRoute"
    status = route.get("status")
    parents = [p for p in (status or {}).get("parents") or [] if isinstance(p, Mapping)]
    parents = sorted(parents, key=_gateway_name)
    if not parents:
        return False, REASON_PENDING, "waiting for the gateway to accept the route"
    generation = (route.get("metadata") or {}).get("generation")
    seen = [(_gateway_name(p), _conditions(p, generation)) for p in parents]
    for gateway, conds in seen:
        if str(conds.get("Accepted", {}).get("status")) == "True":
            return True, REASON_ACCEPTED, f"accepted by {gateway}"
    for gateway, conds in seen:
        accepted = conds.get("Accepted", {})
        if str(accepted.get("status")) == "False":
            parts = [gateway, str(accepted.get("reason") or "NotAccepted")]
            if accepted.get("message"):
                parts.append(str(accepted["message"]))
            return False, REASON_REJECTED, ": ".join(parts)
    for gateway, conds in seen:
        resolved = conds.get("ResolvedRefs", {})
        if str(resolved.get("status")) == "False":
            reason = resolved.get("reason") or "RefNotResolved"
            message = f"{gateway} cannot resolve the route's references: {reason}"
            if resolved.get("message"):
                message += f": {resolved['message']}"
            return False, REASON_PENDING, message
    gateways = ", ".join(gateway for gateway, _ in seen)
    return False, REASON_PENDING, f"waiting for {gateways} to accept the route"
