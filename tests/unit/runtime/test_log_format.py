"""The two log formats: text names the object a line is about; JSON lines carry the object, the
trace id of the current span, the decision, and a traceback as one field (a line stays a line).
An unknown trace exporter is a warning, never a failed start."""

from __future__ import annotations

import json
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider

from aimcore.api.bus.messages import ObjectRef
from aimcore.api.kinds import by_kind
from aimcore.runtime import logs, tracing
from aimcore.runtime.settings import SettingsError, TracingSettings
from aimcore.runtime.settings.process import ProcessSettings

SVC = ObjectRef.of(by_kind("aim.eai.amd.com", "AIMService"), "team", "chat")


def record(message: str, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("aim_test", logging.INFO, __file__, 1, message, (), None)
    rec.__dict__.update(extra)
    return rec


def test_text_names_the_object_when_known() -> None:
    text = logs.TextFormatter()
    assert text.format(record("plain")).endswith("INFO aim_test: plain")
    with logs.about(SVC):
        assert text.format(record("inside")).endswith("INFO aim_test: [AIMService team/chat] inside")
    assert text.format(record("named", **logs.fields(SVC))).endswith("[AIMService team/chat] named")


def test_json_has_object_trace_and_decision() -> None:
    formatter = logs.JsonFormatter("aim-test")
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span, logs.about(SVC):
        line = json.loads(formatter.format(record("decided", **logs.fields(decision={"action": "pick"}))))
        trace_id = format(span.get_span_context().trace_id, "032x")
    assert line["message"] == "decided"
    assert line["level"] == "INFO" and line["logger"] == "aim_test" and line["service"] == "aim-test"
    assert line["object"] == {
        "kind": "AIMService",
        "group": "aim.eai.amd.com",
        "namespace": "team",
        "name": "chat",
    }
    assert line["trace_id"] == trace_id
    assert line["decision"] == {"action": "pick"}
    plain = json.loads(formatter.format(record("outside")))
    assert "object" not in plain and "trace_id" not in plain and "decision" not in plain


def test_json_keeps_a_traceback_on_one_line() -> None:
    formatter = logs.JsonFormatter("aim-test")
    try:
        raise ValueError("boom")
    except ValueError:
        rec = logging.LogRecord(
            "aim_test", logging.ERROR, __file__, 1, "failed", (), __import__("sys").exc_info()
        )
    text = formatter.format(rec)
    assert "\n" not in text
    assert "ValueError: boom" in json.loads(text)["exception"]


def test_log_format_setting() -> None:
    assert ProcessSettings.from_env({}).log_format == "text"
    assert ProcessSettings.from_env({"AIM_LOG_FORMAT": "JSON"}).log_format == "json"
    with pytest.raises(SettingsError, match="AIM_LOG_FORMAT='yaml'"):
        ProcessSettings.from_env({"AIM_LOG_FORMAT": "yaml"})


@pytest.mark.parametrize(
    ("env", "warning"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER=zipkin: unknown exporter"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "OTEL_TRACES_EXPORTER=otlp: OTLP protocol 'grpc' is not supported",
        ),
    ],
)
def test_an_unavailable_exporter_is_one_warning(
    env: dict[str, str], warning: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="aimcore.runtime.tracing"):
        provider = tracing.setup("aim-test", TracingSettings.from_env(env))
    provider.shutdown()
    messages = [r.getMessage() for r in caplog.records if r.name == "aimcore.runtime.tracing"]
    assert len(messages) == 1 and messages[0].startswith(warning), messages


def test_otlp_and_console_together() -> None:
    provider = tracing.setup("aim-test", TracingSettings.from_env({"OTEL_TRACES_EXPORTER": "otlp, console"}))
    try:
        processors = provider._active_span_processor._span_processors
        assert len(processors) == 2
    finally:
        provider.shutdown()
