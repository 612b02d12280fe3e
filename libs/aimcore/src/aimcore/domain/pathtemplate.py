"""Path templates (``spec.routing.pathTemplate``, legacy ``routeTemplate``): the JSONPath subset a
route's path is written in, rendered against an AIMService, and checked on its own, so the deployer
(which renders it for each service) and the runtime-config check (which has no service to render
against) read a template the same way.

The original operator renders the template with a Kubernetes JSONPath and **on any render failure
silently falls back to the default path** ``/<namespace>/<uid>``, and cuts every path segment to
63 characters. Here :func:`render_path` raises :class:`PathTemplateError` with a message naming the
expression or the segment, so the controller can report ``PathTemplateInvalid`` and skip the
route. The evaluator understands the subset of JSONPath a path needs (dotted fields,
``['quoted key']`` and ``[index]``) and rejects the rest explicitly instead of guessing.
:func:`check_template` finds what is wrong with a template whatever the service: its syntax, and
literal segments that are too long. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.errors import AimError
from aimcore.domain.naming import DNS_LABEL_MAX

__all__ = [
    "DEFAULT_PATH_TEMPLATE",
    "MAX_PATH",
    "PathTemplateError",
    "check_template",
    "default_path",
    "evaluate",
    "quote_template",
    "render_path",
]

MAX_PATH = 200
DEFAULT_PATH_TEMPLATE = "/{.metadata.namespace}/{.metadata.uid}"


class PathTemplateError(AimError, ValueError):
    """The path template cannot be rendered for this service; the message says why."""

    reason = "PathTemplateInvalid"
    transient = False


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

_INVALID_CHARS = re.compile(r"[^a-z0-9-]")


def _clean(text: str) -> str | None:
    """``text`` made RFC-1123-ish as :func:`aimcore.domain.naming.sanitize_part` does (lower case, every
    character outside ``[a-z0-9-]`` a ``-``, ``-`` trimmed) **without** cutting it to 63; None when
    nothing of it survives."""
    clean = _INVALID_CHARS.sub("-", text.strip().lower()).strip("-")
    return clean or None


def _segment(text: str) -> str | None:
    """One path segment, cleaned; longer than a DNS label is an error (the original cut it)."""
    clean = _clean(text)
    if clean is not None and len(clean) > DNS_LABEL_MAX:
        raise PathTemplateError(
            f"renders a segment of {len(clean)} characters (at most {DNS_LABEL_MAX}): {clean[:40]}..."
        )
    return clean


def quote_template(template: str) -> str:
    """The template as messages quote it (errors here do not: the caller names the template):
    a hostile one can be thousands of characters long."""
    if len(template) <= 80:
        return repr(template)
    return repr(template[:60]) + f"... ({len(template)} characters)"


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
            raise PathTemplateError(f"unbalanced '}}' at position {pos}")
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
            raise PathTemplateError(f"unbalanced '{{' at position {pos}")
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
    empty segments dropped, a leading ``/``, no trailing ``/``. A segment longer than 63 characters
    or a path longer than :data:`MAX_PATH` is an error, not cut. Raises :class:`PathTemplateError`
    naming the offending expression or segment."""
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
        clean = _clean(value)
        if clean is None:
            raise PathTemplateError(f"{{{text}}} renders {value!r}, which leaves nothing usable in a path")
        rendered.append(clean)
    segments = [s for part in "".join(rendered).split("/") if (s := _segment(part))]
    if not segments:
        raise PathTemplateError("renders an empty path")
    path = "/" + "/".join(segments)
    if len(path) > MAX_PATH:
        raise PathTemplateError(
            f"renders a path of {len(path)} characters (at most {MAX_PATH}): {path[:60]}..."
        )
    return path


def check_template(template: str) -> str | None:
    """What is wrong with ``template`` for every service (``None``: nothing found): unbalanced
    braces, an expression outside the supported JSONPath subset, a literal segment (one without
    an expression) longer than 63 characters, a literal-only template that renders nothing or
    more than :data:`MAX_PATH` characters. What depends on the service (a missing label) is only
    known when rendering."""
    try:
        pieces = _split(template)
        for is_expr, text in pieces:
            if is_expr:
                _parse(text)
        # Expressions become a placeholder no segment can contain, so only literal segments count.
        skeleton = "".join("\0" if is_expr else text for is_expr, text in pieces)
        literal = [_segment(part) for part in skeleton.split("/") if "\0" not in part]
        if not any(is_expr for is_expr, _ in pieces):
            segments = [s for s in literal if s]
            if not segments:
                raise PathTemplateError("renders an empty path")
            length = 1 + len("/".join(segments))
            if length > MAX_PATH:
                raise PathTemplateError(f"renders a path of {length} characters (at most {MAX_PATH})")
    except PathTemplateError as exc:
        return str(exc)
    return None


def default_path(service: Mapping[str, Any]) -> str:
    """``/<namespace>/<uid>``, the path when no template is configured."""
    return render_path(DEFAULT_PATH_TEMPLATE, service)
