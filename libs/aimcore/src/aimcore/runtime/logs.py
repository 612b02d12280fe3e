"""The services' log: plain text by default, JSON lines on request (``AIM_LOG_FORMAT=json``), so
a log pipeline can index it without parsing prose. Every line carries, when they are known, the
object it is about (from :func:`about`, or a line's own ``extra``), the current OpenTelemetry trace
id (the same id the spans are exported under) and the decision it records.

The object is known while a reconcile or a status write runs (:func:`about` sets it for the task
and what it awaits); a line can also name its object and decision itself with
``log.info(..., extra=logs.fields(obj, decision))``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal

from opentelemetry import trace

from aimcore.api.bus.messages import Decision, ObjectRef

LogFormat = Literal["text", "json"]

DECISION_SHOWN = {"action", "reason", "source"}
OBJECT_FIELD = "aim_object"
DECISION_FIELD = "aim_decision"

_current: ContextVar[ObjectRef | None] = ContextVar("aim_log_object", default=None)


@contextlib.contextmanager
def about(obj: ObjectRef) -> Iterator[None]:
    """Lines logged inside (by this task and what it awaits) are about ``obj``."""
    token = _current.set(obj)
    try:
        yield
    finally:
        _current.reset(token)


def fields(
    obj: ObjectRef | None = None, decision: Decision | Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``extra`` of a line that names its object and/or the decision it records (a
    :class:`~aimcore.api.bus.messages.Decision` is shown as its action, reason and source)."""
    extra: dict[str, Any] = {}
    if obj is not None:
        extra[OBJECT_FIELD] = obj
    if isinstance(decision, Decision):
        extra[DECISION_FIELD] = decision.model_dump(include=DECISION_SHOWN)
    elif decision is not None:
        extra[DECISION_FIELD] = dict(decision)
    return extra


def object_of(record: logging.LogRecord) -> ObjectRef | None:
    given = getattr(record, OBJECT_FIELD, None)
    return given if isinstance(given, ObjectRef) else _current.get()


def trace_ids() -> tuple[str, str] | None:
    """The current span's trace and span id (hex), or None outside a recorded span."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def object_json(obj: ObjectRef) -> dict[str, str]:
    out = {"kind": obj.kind, "group": obj.group}
    if obj.namespace:
        out["namespace"] = obj.namespace
    out["name"] = obj.name
    return out


def object_text(obj: ObjectRef) -> str:
    where = f"{obj.namespace}/" if obj.namespace else ""
    return f"{obj.kind} {where}{obj.name}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
    ``service``; ``object``, ``trace_id``/``span_id``, ``decision`` when known; ``exception``
    (the traceback as one string, so a line stays a line)."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "service": self.service,
        }
        if (obj := object_of(record)) is not None:
            line["object"] = object_json(obj)
        if (ids := trace_ids()) is not None:
            line["trace_id"], line["span_id"] = ids
        decision = getattr(record, DECISION_FIELD, None)
        if isinstance(decision, dict):
            line["decision"] = decision
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: [Kind namespace/name] message``; the object part when known."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        obj = object_of(record)
        if obj is None:
            return super().formatMessage(record)
        message = record.message
        record.message = f"[{object_text(obj)}] {message}"
        try:
            return super().formatMessage(record)
        finally:
            record.message = message


def configure(level: str, fmt: LogFormat = "text", service: str = "") -> None:
    """The root logger at ``level``, writing ``fmt`` lines to stderr (replacing any handler a
    previous call installed). In JSON, warnings and an uncaught exception are lines too."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service) if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(True)
    if fmt == "json":
        sys.excepthook = _log_uncaught


def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    logging.getLogger("aimcore.runtime.service").critical("uncaught exception", exc_info=(kind, exc, tb))
