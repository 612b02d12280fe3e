"""W3C trace context crosses NATS: a span around a publish and the consumer's handling span share
one trace, with the handler's span a child of the publisher's."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from nats.js import JetStreamContext
from nats.js.api import StreamConfig
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from aimcore.api.bus.topology import ConsumerSpec
from aimcore.runtime import consumer as consumer_module
from aimcore.runtime import tracing
from aimcore.runtime.consumer import Consumer
from tests.helpers import eventually


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> TracerProvider:
    """A recording provider of the test's own, for the consumer's spans too: the process-wide one
    may be another test's (or a service's set-up that records nothing without an exporter)."""
    own = TracerProvider()
    monkeypatch.setattr(consumer_module, "tracer", own.get_tracer("aimcore.runtime"))
    return own


@pytest.fixture
def spans(provider: TracerProvider) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


async def test_trace_context_propagates_through_headers(
    js: JetStreamContext, provider: TracerProvider, spans: InMemorySpanExporter
) -> None:
    name = f"TR_{secrets.token_hex(4)}"
    await js.add_stream(StreamConfig(name=name, subjects=[f"tr.{name}.>"]))
    handled = asyncio.Event()

    async def handler(msg) -> None:  # type: ignore[no-untyped-def]
        assert "traceparent" in (msg.headers or {})
        handled.set()

    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("publish") as parent:
        await js.publish(f"tr.{name}.x", b"{}", headers=tracing.inject())
    stop = asyncio.Event()
    spec = ConsumerSpec(durable="tr", stream=name, filter_subjects=[f"tr.{name}.>"])
    task = asyncio.create_task(Consumer(js, spec, handler).run(stop))
    try:
        await eventually(lambda: _is_set(handled), what="the handler")

        async def handled_span():  # type: ignore[no-untyped-def]
            return [s for s in spans.get_finished_spans() if s.name == "handle tr"]

        (child,) = await eventually(handled_span, what="the handler's span")
    finally:
        stop.set()
        await task
    assert child.context.trace_id == parent.get_span_context().trace_id
    assert child.parent is not None and child.parent.span_id == parent.get_span_context().span_id


async def _is_set(event: asyncio.Event) -> bool:
    return event.is_set()
