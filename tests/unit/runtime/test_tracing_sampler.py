"""Spans are recorded only where an exporter reads them, and trace context crosses services either
way (aimcore.runtime.tracing.sampler)."""

from __future__ import annotations

import pytest
from opentelemetry import propagate
from opentelemetry.sdk.trace import TracerProvider

from aimcore.runtime import tracing
from aimcore.runtime.settings.process import TracingSettings

REMOTE_TRACE = "0af7651916cd43dd8448eb211c80319c"


def remote_parent(flags: str):  # type: ignore[no-untyped-def]
    return propagate.extract({"traceparent": f"00-{REMOTE_TRACE}-b7ad6b7169203331-{flags}"})


def test_without_an_exporter_spans_carry_ids_but_are_not_recorded() -> None:
    tracer = TracerProvider(sampler=tracing.sampler(exported=False)).get_tracer("t")
    with tracer.start_as_current_span("observe") as root:
        assert not root.is_recording()
        assert root.get_span_context().is_valid  # log lines still get a trace id
        headers = tracing.inject()
    with tracer.start_as_current_span("handle", context=tracing.extract(headers)) as child:
        assert not child.is_recording()
        assert child.get_span_context().trace_id == root.get_span_context().trace_id
    with tracer.start_as_current_span("handle", context=remote_parent("01")) as child:
        assert format(child.get_span_context().trace_id, "032x") == REMOTE_TRACE


@pytest.mark.parametrize("flags", ["00", "01"])
def test_with_an_exporter_every_span_is_recorded_in_the_remote_trace(flags: str) -> None:
    tracer = TracerProvider(sampler=tracing.sampler(exported=True)).get_tracer("t")
    with tracer.start_as_current_span("root") as root:
        assert root.is_recording()
    with tracer.start_as_current_span("handle", context=remote_parent(flags)) as child:
        assert child.is_recording()  # also when the sender (without an exporter) recorded nothing
        assert format(child.get_span_context().trace_id, "032x") == REMOTE_TRACE


def test_otel_traces_sampler_in_the_environment_wins() -> None:
    configured = TracingSettings.from_env({"OTEL_TRACES_SAMPLER": "always_off"}).traces_sampler
    assert configured == "always_off"
    assert tracing.sampler(exported=True, configured=configured) is None
    assert tracing.sampler(exported=False, configured=configured) is None
    assert TracingSettings.from_env({}).traces_sampler is None
