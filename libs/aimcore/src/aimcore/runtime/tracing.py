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
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, Sampler

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


def setup(service_name: str, settings: TracingSettings) -> TracerProvider:
    """Install a tracer provider. ``OTEL_TRACES_EXPORTER`` picks ``console``, ``otlp`` or ``none``
    (several, comma-separated; default ``none``). An exporter that is unknown or cannot be loaded is
    one warning in the log, and the service runs on without it: tracing is never a reason for a
    service not to start.

    Spans are always created and their context propagated (every message carries ``traceparent``,
    log lines carry the trace id). Without an exporter they are not *recorded*: nothing would read
    their names, attributes and timings, and recording them was 4-5 % of a service's CPU in a burst
    (docs/benchmarks.md). With an exporter every span is recorded, also under a remote parent that
    did not record its own (a service without an exporter sends ``traceparent`` flags ``00``).
    ``OTEL_TRACES_SAMPLER`` set in the environment overrides both (the SDK reads it)."""
    exporters: list[SpanExporter] = []
    for name in exporter_names(settings.traces_exporter):
        try:
            exporter = _exporter(name, settings)
        except ExporterUnavailable as exc:
            log.warning("OTEL_TRACES_EXPORTER=%s: %s; spans are not exported there", name, exc)
            continue
        if exporter is not None:
            exporters.append(exporter)
    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.service_name or service_name}),
        sampler=sampler(exported=bool(exporters), configured=settings.traces_sampler),
    )
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


# with an exporter: record every span, whatever a remote parent decided for its own
RECORD_ALL = ParentBased(ALWAYS_ON, remote_parent_not_sampled=ALWAYS_ON)
# without: ids and propagation only (a non-recording span still has its own valid span context)
IDS_ONLY = ALWAYS_OFF


def sampler(*, exported: bool, configured: str | None = None) -> Sampler | None:
    """The sampler for a service that exports its spans or not; ``None`` (the SDK's own choice,
    which reads ``OTEL_TRACES_SAMPLER`` itself) when one is ``configured``."""
    if configured:
        return None
    return RECORD_ALL if exported else IDS_ONLY


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
