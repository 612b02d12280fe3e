"""Presenting history: a streaming table (fixed columns, so follow mode can print row by row),
JSON lines with a fixed set of keys, and the ``describe`` view.

Records carry no secrets (docs/design.md#security: nothing on the bus does), and nothing here adds
any: the table shows names, reasons and messages; JSON adds the record as it was published.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from aimctl.audit.history import Record
from aimctl.audit.query import display_kind

TABLE_COLUMNS: tuple[tuple[str, int], ...] = (
    ("TIME", 20),
    ("SOURCE", 10),
    ("KIND", 12),
    ("NAMESPACE/NAME", 24),
    ("TYPE", 8),
    ("WHAT", 28),
)
"""Minimum widths; a longer value is never cut (names matter in an audit trail), it pushes the
rest of its row right. Only MESSAGE, the last column, is truncated to the terminal width."""

MIN_MESSAGE = 20
ELLIPSIS = "…"

JSON_KEYS: tuple[str, ...] = (
    "time",
    "type",
    "source",
    "group",
    "kind",
    "namespace",
    "name",
    "what",
    "message",
    "stream",
    "seq",
    "subject",
    "record",
)
"""Every JSON line has exactly these keys, in this order (absent values are ``null``)."""

_SPACE = re.compile(r"\s+")


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed, control characters dropped."""
    text = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
    return _SPACE.sub(" ", text).strip()


def truncate(text: str, width: int | None) -> str:
    if width is None or len(text) <= width:
        return text
    if width <= 0:
        return ""
    return text[: width - 1] + ELLIPSIS


def iso(when: datetime, *, precise: bool = True) -> str:
    """RFC 3339 in UTC with a ``Z``; microseconds unless ``precise`` is off."""
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if precise else "%Y-%m-%dT%H:%M:%SZ")


def _compact(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
    return truncate(one_line(text), limit)


def what(record: Record) -> str:
    """What happened, in a few words: the change type, the reported conditions, or the decision's
    action and reason."""
    if record.change is not None:
        return record.change.change.value
    if record.status is not None:
        report = record.status
        parts = [f"{c.type}={c.status}" for c in report.conditions]
        if not parts and report.fields:
            parts = [f"fields: {', '.join(sorted(report.fields))}"]
        return " ".join(parts) or "(empty report)"
    if record.decision is not None:
        return f"{record.decision.action} ({record.decision.reason})"
    return "?"


def message(record: Record) -> str:
    """The record's explanation, on one line."""
    if record.change is not None:
        event = record.change
        parts = [f"resourceVersion {event.resource_version}"]
        if event.generation is not None:
            parts.append(f"generation {event.generation}")
        return ", ".join(parts)
    if record.status is not None:
        report = record.status
        items: list[str] = []
        for c in report.conditions:
            text = f"{c.type}: {c.reason}"
            items.append(f"{text} - {c.message}" if c.message else text)
        for key in sorted(report.fields):
            items.append(f"{key}={_compact(report.fields[key])}")
        if report.observed_generation is not None:
            items.append(f"generation {report.observed_generation}")
        return one_line("; ".join(items))
    if record.decision is not None:
        return one_line(record.decision.message)
    return "record not readable by this aimctl" + (
        f" (schema {record.payload.get('schema_version')!r})" if record.payload else ""
    )


def object_name(record: Record) -> str:
    return f"{record.namespace}/{record.name}" if record.namespace else record.name


def _row(cells: Sequence[tuple[str, int]], last: str, width: int | None) -> str:
    line = ""
    for text, min_width in cells:
        line += text.ljust(min_width) + " " if len(text) < min_width else text + " "
    room = None if width is None else max(width - len(line), MIN_MESSAGE)
    return (line + truncate(last, room)).rstrip()


def table_header(width: int | None = None) -> str:
    return _row(TABLE_COLUMNS, "MESSAGE", width)


def table_row(record: Record, width: int | None = None) -> str:
    values = (
        iso(record.time, precise=False),
        record.source,
        display_kind(record.group, record.kind),
        object_name(record),
        record.type,
        what(record),
    )
    cells = [(one_line(v), w) for v, (_, w) in zip(values, TABLE_COLUMNS, strict=True)]
    return _row(cells, message(record), width)


def record_dict(record: Record) -> dict[str, Any]:
    """The JSON form: :data:`JSON_KEYS` in order; ``record`` is the message as published."""
    out: dict[str, Any] = {
        "time": iso(record.time),
        "type": record.type,
        "source": record.source,
        "group": record.group,
        "kind": record.kind,
        "namespace": record.namespace,
        "name": record.name,
        "what": what(record),
        "message": message(record),
        "stream": record.stream,
        "seq": record.seq,
        "subject": record.subject,
        "record": record.payload,
    }
    assert tuple(out) == JSON_KEYS
    return out


def json_line(record: Record) -> str:
    return json.dumps(record_dict(record), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Plain tables (describe): columns sized to their content, the last one truncated
# ---------------------------------------------------------------------------------------------


def format_table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], width: int | None = None, indent: str = "  "
) -> list[str]:
    body = [[one_line(str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in body:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    lines: list[str] = []
    for row in [list(headers), *body]:
        prefix = indent + "".join(cell.ljust(widths[i]) + "  " for i, cell in enumerate(row[:-1]))
        room = None if width is None else max(width - len(prefix), MIN_MESSAGE)
        lines.append((prefix + truncate(row[-1], room)).rstrip())
    return lines
