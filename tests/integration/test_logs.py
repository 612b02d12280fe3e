"""What an operator reads and collects from the services: JSON log lines (``AIM_LOG_FORMAT=json``)
with the object and the trace id on the status-write line, and spans exported over OTLP/HTTP to a
collector (here a tiny real HTTP receiver) with ``OTEL_TRACES_EXPORTER=otlp``."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.kinds import NAMESPACE, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import eventually
from tests.integration.conftest import Services, consumers_ready

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


async def create_service(kube: Kube, namespace: str, name: str, **spec: Any) -> None:
    if await kube.get(NAMESPACE, None, namespace) is None:
        await kube.create(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
    await kube.create(
        AIMSVC,
        {
            "apiVersion": AIMSVC.api_version,
            "kind": AIMSVC.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"model": {"name": "llama"}, **spec},
        },
    )


def about(line: dict[str, Any], name: str) -> bool:
    return bool((line.get("object") or {}).get("name") == name)


def json_lines(log: Path) -> list[dict[str, Any]]:
    """Every line of a service's output, each parsed as JSON (a line that is not JSON fails)."""
    lines = []
    for number, line in enumerate(log.read_text(errors="replace").splitlines(), 1):
        try:
            parsed = json.loads(line)
        except ValueError:
            raise AssertionError(f"{log.name}:{number} is not JSON: {line!r}") from None
        assert isinstance(parsed, dict), line
        lines.append(parsed)
    return lines


async def test_json_log_lines_carry_the_object_and_the_trace(private_stack: LocalServers) -> None:
    logs = private_stack.workdir / "json-logs"
    services = Services(private_stack, logs, env={"AIM_LOG_FORMAT": "json", "AIM_LOG_LEVEL": "INFO"})
    for name in ("watcher", "status", "deployer"):
        services.start(name)
    kube = Kube(await connect(private_stack.kubeconfig), field_manager="aim-tests")
    nc = await connect_as(private_stack.nats)
    try:
        await consumers_ready(nc.jetstream(), services)
        await create_service(kube, "logged", "logged-svc")
        # a spec the API server stores and the deployer rejects: a decision
        await create_service(kube, "logged", "rejected-svc", resources={"limits": {"amd.com/gpu": "0.5"}})

        def written_line(name: str) -> dict[str, Any] | None:
            services.assert_alive()
            for line in json_lines(logs / "status.log"):
                if line["message"].startswith("status written") and about(line, name):
                    return line
            return None

        async def status_written() -> dict[str, Any] | None:
            return written_line("logged-svc")

        async def rejected() -> tuple[dict[str, Any], dict[str, Any]] | None:
            decided = [
                line
                for line in json_lines(logs / "deployer.log")
                if "decision" in line and about(line, "rejected-svc")
            ]
            written = written_line("rejected-svc")
            return (decided[0], written) if decided and written else None

        written = await eventually(status_written, timeout=60, interval=0.2, what="the status-write line")
        decided, rejected_written = await eventually(
            rejected, timeout=60, interval=0.2, what="the deployer's decision and its status write"
        )
    finally:
        await nc.close()
        await kube.close()
        services.stop_all()

    assert written["level"] == "INFO"
    assert written["service"] == "aim-status"
    assert written["logger"] == "aim_status.writer"
    assert written["object"] == {
        "kind": "AIMService",
        "group": "aim.eai.amd.com",
        "namespace": "logged",
        "name": "logged-svc",
    }
    assert TRACE_ID.match(written["trace_id"]), written
    assert written["time"].endswith("+00:00")
    # every line every service wrote, to its end, is JSON with the common fields
    for log in sorted(logs.glob("*.log")):
        for line in json_lines(log):
            assert {"time", "level", "logger", "message", "service"} <= line.keys(), (log.name, line)
    # a decision is one line with the decision, the object, and the trace its status write is in
    assert decided["level"] == "INFO"
    assert decided["service"] == "aim-deployer"
    assert decided["decision"] == {"action": "reject", "reason": "InvalidSpec", "source": "deployer"}
    assert decided["object"]["namespace"] == "logged"
    assert TRACE_ID.match(decided["trace_id"]), decided
    assert rejected_written["trace_id"] == decided["trace_id"]


@dataclass
class Collector:
    """A tiny OTLP/HTTP receiver: records every POST it gets."""

    url: str = ""
    received: list[tuple[str, str, bytes]] = field(default_factory=list)

    def span_names(self) -> set[str]:
        names = set()
        for path, _, body in self.received:
            if path != "/v1/traces":
                continue
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    names.update(span.name for span in scope.spans)
        return names


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    found = Collector()

    async def receive(request: web.Request) -> web.Response:
        found.received.append((request.path, request.content_type, await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/{tail:.*}", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    found.url = f"http://127.0.0.1:{port}"
    try:
        yield found
    finally:
        await runner.cleanup()


async def test_otlp_exporter_sends_spans_to_the_collector(
    private_stack: LocalServers, collector: Collector
) -> None:
    logs = private_stack.workdir / "otlp-logs"
    services = Services(
        private_stack,
        logs,
        env={
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        },
    )
    services.start("watcher")
    kube = Kube(await connect(private_stack.kubeconfig), field_manager="aim-tests")
    try:
        await create_service(kube, "exported", "exported-svc")

        async def exported() -> set[str] | None:
            services.assert_alive()
            names = collector.span_names()
            return names if "observe AIMService" in names else None

        await eventually(exported, timeout=60, interval=0.2, what="the watcher's spans at the collector")
    finally:
        await kube.close()
        services.stop_all()

    _, content_type, _ = next(r for r in collector.received if r[0] == "/v1/traces")
    assert content_type == "application/x-protobuf"
    assert "Traceback" not in (logs / "watcher.log").read_text()
