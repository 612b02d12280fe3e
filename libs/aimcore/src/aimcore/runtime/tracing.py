"""W3C trace context across NATS: inject into message headers on publish, extract on receive, and
a tracer provider configured from the standard ``OTEL_*`` environment variables."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from aimcore.api.errors import AimError
from aimcore.runtime.settings.process import TracingSettings

log = logging.getLogger(__name__)


def inject(headers: dict[str, str] | None = None) -> dict[str, str]:
    """Headers carrying the current trace context (``traceparent``/``tracestate``)."""
    carrier: dict[str, str] = dict(headers or {})
    propagate.inject(carrier)
    return carrier


def extract(headers: Mapping[str, str] | None) -> context.Context:
    return propagate.extract(dict(headers or {}))


def setup(service_name: str, settings: TracingSettings | None = None) -> TracerProvider:
    """Install a tracer provider. ``OTEL_TRACES_EXPORTER`` picks ``console``, ``otlp`` or ``none``
    (several, comma-separated; default ``none``: spans are created and propagated but not
    exported). An exporter that is unknown or cannot be loaded is one warning in the log, and
    the service runs on without it: tracing is never a reason for a service not to start."""
    settings = settings or TracingSettings()
    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.service_name or service_name})
    )
    for name in exporter_names(settings.traces_exporter):
        try:
            exporter = _exporter(name, settings)
        except ExporterUnavailable as exc:
            log.warning("OTEL_TRACES_EXPORTER=%s: %s; spans are not exported there", name, exc)
            continue
        if exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


KNOWN_EXPORTERS = ("console", "otlp", "none")


class ExporterUnavailable(AimError):
    """An exporter that is unknown or whose package is missing (a warning, never a condition)."""


def exporter_names(value: str) -> list[str]:
    """``OTEL_TRACES_EXPORTER``'s names, as the OpenTelemetry specification reads it: comma
    separated, any case; ``none`` alone means none."""
    return list(dict.fromkeys(n.strip().lower() for n in value.split(",") if n.strip()))


def _exporter(name: str, settings: TracingSettings) -> SpanExporter | None:
    if name == "none":
        return None
    if name == "console":
        # One JSON object per line (the SDK's default is indented over many lines), so spans in a
        # service's log can be read by tools.
        return ConsoleSpanExporter(formatter=lambda span: json.dumps(json.loads(span.to_json())) + "\n")
    if name == "otlp":
        protocol = settings.otlp_protocol.strip()
        if protocol != "http/protobuf":
            raise ExporterUnavailable(
                f"OTLP protocol {protocol!r} is not supported (only http/protobuf is installed)"
            )
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
                OTLPSpanExporter,
            )
        except ImportError as exc:
            raise ExporterUnavailable(
                f"the package opentelemetry-exporter-otlp-proto-http cannot be loaded ({exc})"
            ) from exc
        exporter: SpanExporter = OTLPSpanExporter()
        return exporter
    raise ExporterUnavailable(f"unknown exporter; expected one of {', '.join(KNOWN_EXPORTERS)}")
