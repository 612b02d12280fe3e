"""One trace covers the three hops of a change: the watcher observing it, the deployer handling
it, and the status service writing the result. Services run as processes with the standard
``OTEL_TRACES_EXPORTER=console``; their spans are read back from their logs."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.kinds import NAMESPACE, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import eventually
from tests.integration.conftest import Services, consumers_ready

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
HOPS = {"handle aim-deployer", "handle aim-status", "write status AIMService"}


def spans_in(log_dir: Path) -> list[dict[str, Any]]:
    spans = []
    for log in log_dir.glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith('{"name"'):
                spans.append(json.loads(line))
    return spans


async def test_one_trace_from_watch_to_status_write(private_stack: LocalServers) -> None:
    logs = private_stack.workdir / "traced-logs"
    services = Services(private_stack, logs, env={"OTEL_TRACES_EXPORTER": "console"})
    for name in ("watcher", "status", "deployer"):
        services.start(name)
    kube = Kube(await connect(private_stack.kubeconfig), field_manager="aim-tests")
    nc = await connect_as(private_stack.nats)
    try:
        await consumers_ready(nc.jetstream(), services)
        await kube.create(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "traced"}}
        )
        await kube.create(
            AIMSVC,
            {
                "apiVersion": AIMSVC.api_version,
                "kind": AIMSVC.kind,
                "metadata": {"name": "traced-svc", "namespace": "traced"},
                "spec": {"model": {"name": "llama"}},
            },
        )

        async def one_trace() -> dict[str, list[dict[str, Any]]] | None:
            by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for span in spans_in(logs):
                by_trace[span["context"]["trace_id"]].append(span)
            for spans in by_trace.values():
                names = {s["name"] for s in spans}
                observed = any(
                    s["name"] == "observe AIMService"
                    and "traced-svc" in s["attributes"].get("k8s.object", "")
                    for s in spans
                )
                if (
                    observed
                    and {"handle aim-deployer", "handle aim-status", "write status AIMService"} <= names
                ):
                    return {"spans": spans}
            return None

        # Spans are exported in batches; wait for the three services to flush theirs.
        found = await eventually(one_trace, timeout=60, interval=0.5, what="one trace across three hops")
    finally:
        await nc.close()
        await kube.close()
        services.stop_all()

    spans = found["spans"]
    by_id = {s["context"]["span_id"]: s for s in spans}
    write = next(s for s in spans if s["name"] == "write status AIMService")
    chain = [write["name"]]
    node = write
    while node.get("parent_id") in by_id:
        node = by_id[node["parent_id"]]
        chain.append(node["name"])
    assert chain[-1] == "observe AIMService"  # the watcher's span is the root
    assert "handle aim-deployer" in chain and "handle aim-status" in chain
