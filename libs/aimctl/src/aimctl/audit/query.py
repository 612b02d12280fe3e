"""What to replay: kinds resolved the way kubectl resolves resource names, time bounds, and the
server-side subject filters built from them.

A kind may be written as its short name (``aimsvc``), kind (``AIMService``), singular
(``aimservice``) or plural (``aimservices``), case-insensitively, optionally qualified by a group
(``aimservices.aim.silogen.ai``, ``AIMService.silogen``; a version may sit between them:
``aimservices.v1alpha1.aim.eai.amd.com``). An unqualified name that several groups serve (the
current and the legacy AIM API share their kind names) resolves to the first group of
:data:`GROUP_PREFERENCE`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Literal

from aimcore.api.bus import subjects
from aimcore.api.crds.registry import ALL_KINDS
from aimcore.api.kinds import EXTERNAL_KINDS, KindRef, crd_kinds

RecordType = Literal["change", "status", "decision"]
RECORD_TYPES: tuple[RecordType, ...] = ("change", "status", "decision")

GROUP_PREFERENCE: tuple[str, ...] = ("aim.eai.amd.com", "inference.llmkube.dev", "aim.silogen.ai")
"""Which group an unqualified, ambiguous kind name means: the current AIM API first."""

WATCHER = "watcher"
"""The source of every change event."""


class KindError(ValueError):
    """A kind name that matches no served kind."""


class TimeError(ValueError):
    """A time bound that is neither a duration nor an RFC 3339 time."""


@cache
def _kind_index() -> tuple[tuple[KindRef, frozenset[str]], ...]:
    short: dict[tuple[str, str], tuple[str, ...]] = {}
    singular: dict[tuple[str, str], str] = {}
    for cls in ALL_KINDS:
        short[(cls.crd.group, cls.crd.kind)] = cls.crd.short_names
        singular[(cls.crd.group, cls.crd.kind)] = cls.crd.singular_name
    out: list[tuple[KindRef, frozenset[str]]] = []
    for ref in (*crd_kinds(), *EXTERNAL_KINDS):
        key = (ref.group, ref.kind)
        names = {ref.kind.lower(), ref.plural.lower(), singular.get(key, ref.kind.lower())}
        names.update(s.lower() for s in short.get(key, ()))
        out.append((ref, frozenset(names)))
    return tuple(out)


def _group_rank(group: str) -> int:
    return GROUP_PREFERENCE.index(group) if group in GROUP_PREFERENCE else len(GROUP_PREFERENCE)


def _expand_group(text: str) -> str:
    """``silogen`` → ``aim.silogen.ai`` (the subject aliases are accepted as group shorthands)."""
    known = {ref.group for ref, _ in _kind_index()}
    for group in known:
        if text == subjects.group_token(group):
            return group
    return text


def resolve_kind(text: str) -> KindRef:
    """The kind ``text`` names; :class:`KindError` when it names none."""
    text = text.strip()
    if not text or "/" in text:
        raise KindError(f"invalid kind {text!r}")
    name, _, group = text.partition(".")
    wanted = name.lower()
    version: str | None = None
    if group:
        first, _, rest = group.partition(".")
        if rest and re.fullmatch(r"v\d+((alpha|beta)\d+)?", first):
            version, group = first, rest
        group = _expand_group(group)
    matches = [
        ref
        for ref, names in _kind_index()
        if wanted in names
        and (not group or ref.group == group)
        and (version is None or ref.version == version)
    ]
    if not matches:
        raise KindError(f"unknown kind {text!r}; try one of: {', '.join(known_kind_names())}")
    return min(matches, key=lambda ref: (_group_rank(ref.group), ref.group))


def known_kind_names() -> list[str]:
    """One preferred name per kind, for error messages and help."""
    out: list[str] = []
    for ref, _ in _kind_index():
        out.append(ref.plural if ref.group in GROUP_PREFERENCE[:1] else f"{ref.plural}.{ref.group}")
    return out


def display_kind(group: str, kind: str) -> str:
    """``AIMService`` for the preferred group, ``AIMService.aim.silogen.ai`` for any other."""
    return kind if group == GROUP_PREFERENCE[0] else f"{kind}.{group}" if group else kind


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``10m``, ``2h``, ``1h30m``, ``7d``; :class:`TimeError` otherwise."""
    text = text.strip()
    pos = 0
    seconds = 0.0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if not m:
            raise TimeError(f"invalid duration {text!r} (examples: 30s, 10m, 2h, 1h30m, 7d)")
        seconds += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not text:
        raise TimeError("empty duration")
    return timedelta(seconds=seconds)


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """A point in time: a duration back from ``now`` (``10m``), ``now``, or RFC 3339
    (``2025-01-02T15:04:05Z``; without an offset UTC is assumed). Always timezone-aware UTC."""
    text = text.strip()
    now = now or datetime.now(UTC)
    if text.lower() == "now":
        return now.astimezone(UTC)
    if _DURATION.fullmatch(text):
        return (now - parse_duration(text)).astimezone(UTC)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise TimeError(
            f"invalid time {text!r}: use a duration (10m, 2h, 1d) or RFC 3339 (2025-01-02T15:04:05Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


@dataclass(frozen=True)
class Query:
    """Which records to read. Unset fields match everything."""

    kind: KindRef | None = None
    namespace: str | None = None
    name: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    types: frozenset[RecordType] = field(default_factory=lambda: frozenset(RECORD_TYPES))
    source: str | None = None
    follow: bool = False
    tail: int | None = None
    """Only the last ``tail`` records of history (follow mode then continues with new ones)."""
    limit: int | None = None
    """Stop after this many records (history and follow mode together)."""

    def __post_init__(self) -> None:
        if self.follow and self.until is not None:
            raise ValueError("follow mode has no end: do not combine it with an until bound")
        if self.since and self.until and self.since > self.until:
            raise ValueError("since is after until")
        unknown = set(self.types) - set(RECORD_TYPES)
        if unknown:
            raise ValueError(f"unknown record types: {', '.join(sorted(unknown))}")

    def _object_tail(self) -> str | None:
        """The object tokens of a subject filter, or None when every object matches."""
        cluster = self.kind is not None and not self.kind.namespaced
        g = subjects.group_token(self.kind.group) if self.kind else "*"
        k = self.kind.kind if self.kind else "*"
        ns = "*"
        if cluster:
            ns = subjects.CLUSTER_SCOPE
        elif self.namespace:
            ns = subjects.escape(self.namespace)
        name = subjects.escape(self.name) if self.name else "*"
        if (g, k, ns, name) == ("*", "*", "*", "*"):
            return None
        return f"{g}.{k}.{ns}.{name}"

    def filters(self) -> dict[RecordType, str]:
        """The subject filter per record type to read (types excluded by ``types`` or ``source``
        are left out): everything the subjects can express is filtered by the server."""
        tail = self._object_tail()
        out: dict[RecordType, str] = {}
        if "change" in self.types and self.source in (None, WATCHER):
            out["change"] = f"{subjects.EVENTS_PREFIX}.{tail or '>'}"
        src = subjects.escape(self.source) if self.source else "*"
        for record_type, prefix in (
            ("status", subjects.STATUS_PREFIX),
            ("decision", subjects.DECISIONS_PREFIX),
        ):
            if record_type not in self.types:
                continue
            # both name their source first: aim.status.<service>.…, aim.decisions.<service>.…
            if tail is None and self.source is None:
                out[record_type] = f"{prefix}.>"
            else:
                out[record_type] = f"{prefix}.{src}.{tail or '>'}"
        return out


def parse_types(values: Iterable[str]) -> frozenset[RecordType]:
    """``["change,status", "decision"]`` → the record types (``events`` and ``decisions`` are
    accepted as plurals)."""
    aliases: dict[str, RecordType] = {
        "change": "change",
        "changes": "change",
        "event": "change",
        "events": "change",
        "status": "status",
        "decision": "decision",
        "decisions": "decision",
    }
    out: set[RecordType] = set()
    for value in values:
        for raw in value.split(","):
            part = raw.strip().lower()
            if not part:
                continue
            if part not in aliases:
                raise ValueError(f"unknown record type {part!r}; use change, status or decision")
            out.add(aliases[part])
    return frozenset(out) if out else frozenset(RECORD_TYPES)
