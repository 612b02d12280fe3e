"""W3C trace context across NATS: inject into message headers on publish, extract on receive, and
a tracer provider configured from the standard ``OTEL_*`` environment variables."""

from __future__ import annotations

import json
from collections.abc import Mapping

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from aimcore.runtime.settings.process import TracingSettings


def inject(headers: dict[str, str] | None = None) -> dict[str, str]:
    """Headers carrying the current trace context (``traceparent``/``tracestate``)."""
    carrier: dict[str, str] = dict(headers or {})
    propagate.inject(carrier)
    return carrier


def extract(headers: Mapping[str, str] | None) -> context.Context:
    return propagate.extract(dict(headers or {}))


def setup(service_name: str, settings: TracingSettings | None = None) -> TracerProvider:
    """Install a tracer provider. ``OTEL_TRACES_EXPORTER`` picks ``console``, ``otlp`` or ``none``
    (default ``none``: spans are created and propagated but not exported)."""
    settings = settings or TracingSettings()
    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.service_name or service_name})
    )
    exporter = _exporter(settings.traces_exporter)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


def _exporter(name: str) -> SpanExporter | None:
    if name == "console":
        # One JSON object per line (the SDK's default is indented over many lines), so spans in a
        # service's log can be read by tools.
        return ConsoleSpanExporter(formatter=lambda span: json.dumps(json.loads(span.to_json())) + "\n")
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
                OTLPSpanExporter,
            )
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise RuntimeError(
                "OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-http"
            ) from exc
        exporter: SpanExporter = OTLPSpanExporter()
        return exporter
    return None
