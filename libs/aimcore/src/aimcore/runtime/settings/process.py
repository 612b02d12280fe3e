"""What every service reads, whatever it does: where the Kubernetes API is, the operator's namespace,
the watcher's resync period, the log level, an optional reconcile journal; tracing (OpenTelemetry's
own variables) and whether a proxy is configured."""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from aimcore.runtime.settings.base import AimSettings, setting, split_commas

LOG_LEVELS = tuple(logging.getLevelNamesMapping())

RESYNC_SECONDS = 1800.0
"""The default resync interval. A resync reconciles every object once (about 2.5 CPU-ms per
AIMService across the operator, docs/benchmarks.md), so 30 minutes keeps it within a tenth of a
core up to about 70,000 AIMServices; controller-runtime's default is 10 hours."""


def _log_level(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    level = value.strip().upper() or "INFO"
    if level not in LOG_LEVELS:
        raise ValueError("not a log level")
    return level


def _log_format(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return value.strip().lower() or "text"


LogFormat = Annotated[Literal["text", "json"], BeforeValidator(_log_format)]
"""``AIM_LOG_FORMAT``'s values: ``text`` or ``json``, any case, blank meaning ``text`` (the services'
and the download Jobs')."""


class ProcessSettings(AimSettings):
    """The process: the Kubernetes API, the operator's namespace, resync, logging, diagnostics."""

    title = "Process"

    kubeconfig: str | None = setting(
        env=("AIM_KUBECONFIG", "KUBECONFIG"),
        description="The kubeconfig file of the Kubernetes API. Unset in a cluster: the pod's "
        "service account is used (outside a cluster, the default kubeconfig).",
        form="a path",
        shown_default="unset: in-cluster service account",
    )
    system_namespace: str = setting(
        "aim-system",
        env="AIM_SYSTEM_NAMESPACE",
        description="The operator's namespace: cluster-scoped objects' pull secrets, discovery Jobs "
        "and templates of cluster-scoped models live here.",
    )
    resync_seconds: float = setting(
        RESYNC_SECONDS,
        env="AIM_RESYNC_SECONDS",
        gt=0,
        form="seconds, a number > 0",
        description="How often the watcher lists every watched kind again and republishes every "
        "object of a kind some service reconciles (a safety net for missed events and lost "
        "triggers; each costs about one reconcile per object).",
    )
    log_level: Annotated[str, BeforeValidator(_log_level)] = setting(
        "INFO",
        env="AIM_LOG_LEVEL",
        form="DEBUG, INFO, WARNING, ERROR or CRITICAL (any case)",
        description="The level of the service's log.",
    )
    log_format: LogFormat = setting(
        "text",
        env="AIM_LOG_FORMAT",
        form="text or json (any case)",
        description="`text`: one readable line per record, with the object it is about when "
        "known; `json`: one JSON object per line with `time`, `level`, `logger`, `message`, "
        "`service` and, when known, `object`, `trace_id`/`span_id` and `decision` (see "
        "`docs/logging.md`).",
    )
    reconcile_journal: str | None = setting(
        env="AIM_RECONCILE_JOURNAL",
        form="a path",
        description="Diagnostics: append one JSON line per reconcile (object, process id, monotonic "
        "start and end) to this file. The scaling tests use it to prove no two replicas "
        "reconcile an object at once.",
    )


class TracingSettings(AimSettings):
    """Tracing: spans are always created and propagated across NATS; these standard OpenTelemetry
    variables choose where they go. Without an exporter spans carry their ids (messages, log
    lines) but are not recorded; `OTEL_TRACES_SAMPLER`, if set, overrides that choice. The OTLP
    exporter reads its own `OTEL_EXPORTER_OTLP_*` variables (endpoint, headers...)."""

    title = "Tracing (OpenTelemetry)"

    service_name: str | None = setting(
        env="OTEL_SERVICE_NAME",
        shown_default="`aim-<service>`",
        description="The service name spans are reported under.",
    )
    traces_exporter: str = setting(
        "none",
        env="OTEL_TRACES_EXPORTER",
        form="console, otlp or none; several comma-separated",
        description="`console`: one JSON span per line in the log; `otlp`: OTLP/HTTP protobuf to "
        "`OTEL_EXPORTER_OTLP_ENDPOINT` (default `http://localhost:4318`, path `/v1/traces`). An "
        "unknown name is one warning in the log and no export, never a failed start.",
    )
    traces_sampler: str | None = setting(
        env="OTEL_TRACES_SAMPLER",
        shown_default="unset",
        form="an OpenTelemetry sampler name (always_on, parentbased_traceidratio...)",
        description="Unset, spans are recorded when an exporter is configured and not otherwise "
        "(their ids still travel). Set, the OpenTelemetry SDK's own sampler of that name decides "
        "(with `OTEL_TRACES_SAMPLER_ARG`).",
    )
    otlp_protocol: str = setting(
        "http/protobuf",
        env=("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
        form="http/protobuf",
        description="The OTLP transport. Only `http/protobuf` is installed; another value (such "
        "as `grpc`) is one warning in the log and no OTLP export.",
    )


def _proxy_url(value: Any) -> Any:
    if not isinstance(value, str) or "://" not in value:
        return value
    scheme = value.split("://", 1)[0].lower()
    if scheme != "http":
        raise ValueError(f"a {scheme}:// proxy is not supported (TLS to the proxy)")
    return value


class ProxySettings(AimSettings):
    """Forward proxies: of the Kubernetes client, and of the downloads (the cache service passes
    its values to the download Jobs it creates; a model cache's `env` cannot set them)."""

    title = "Proxy"

    https: Annotated[str | None, BeforeValidator(_proxy_url)] = setting(
        env=("HTTPS_PROXY", "https_proxy"),
        secret=True,
        form="an http:// proxy URL (`http://[user:password@]host:port`)",
        description="The proxy of requests to `https://` hosts (a `CONNECT` tunnel; TLS is still "
        "end to end). The downloads honour it; the outbound address policy still judges the host "
        "a request is for, while the proxy's own address, being operator configuration, is not "
        "checked.",
    )
    http: Annotated[str | None, BeforeValidator(_proxy_url)] = setting(
        env=("HTTP_PROXY", "http_proxy"),
        secret=True,
        form="an http:// proxy URL",
        description="The proxy of requests to `http://` hosts (the download's request is sent to "
        "the proxy in absolute form).",
    )
    no_proxy: Annotated[tuple[str, ...], BeforeValidator(split_commas)] = setting(
        (),
        env=("NO_PROXY", "no_proxy"),
        form="comma-separated: `*`, domains (`example.com`, `.example.com`), `host:port`, "
        "addresses or CIDR ranges",
        description="Hosts the downloads reach directly, not through the proxy (a domain "
        "includes its subdomains).",
    )

    proxy: str | None = setting(
        env=("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"),
        secret=True,
        form="a proxy URL",
        description="When one is set, the Kubernetes client honours the proxy variables (and "
        "`NO_PROXY`, `~/.netrc`) as aiohttp does; when none is, it connects directly and skips "
        "those look-ups on every request. A kubeconfig's `proxy-url` works either way.",
    )
