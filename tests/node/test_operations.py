"""Day-one operations on a real node (issue 19): the operator's Pods pass the probes deploy/ gives
them, their ``/metrics`` and ``/readyz`` answer through the API server, and the status service's
Kubernetes Events show under ``kubectl describe``.

Through the API server means ``kubectl port-forward`` (API server → kubelet → the pod's network
namespace): the API server's pod proxy dials the pod's IP from the host, and the node's addresses
live in its private network namespace, which the host deliberately has no route into
(docs/node.md)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from aim_dev.local import deployed, predictor
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import POD
from aimcore.runtime import Kube
from tests.helpers import eventually, kubectl
from tests.node.helpers import NODE_TIMEOUT, aim, events

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

SERVICE = aim("AIMService")
PART_OF = "app.kubernetes.io/part-of=aim-engine"
SERVICES = {"watcher", "status", "deployer", "discovery", "registry-sync", "cache"}


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def health_port(pod: dict[str, Any]) -> int:
    for container in pod["spec"]["containers"]:
        for port in container.get("ports") or []:
            if port.get("name") == "health":
                return int(port["containerPort"])
    raise AssertionError(f"pod {pod['metadata']['name']} declares no health port")


@contextlib.contextmanager
def port_forward(kubeconfig: Path, pod: str, port: int) -> Iterator[int]:
    """``kubectl port-forward`` to one of the operator's pods; yields the local port."""
    with predictor.port_forward(kubeconfig, deployed.SYSTEM_NAMESPACE, f"pod/{pod}", port) as local:
        yield local


async def get(port: int, path: str) -> tuple[int, str]:
    timeout = aiohttp.ClientTimeout(total=20)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(f"http://127.0.0.1:{port}{path}") as r,
    ):
        return r.status, await r.text()


async def test_the_operators_pods_pass_their_probes_and_answer_through_the_api_server(
    stack: NodeStack, api: Kube
) -> None:
    async def all_ready() -> list[dict[str, Any]] | None:
        pods = (await api.list(POD, deployed.SYSTEM_NAMESPACE, label_selector=PART_OF))[0]
        ours = [p for p in pods if p["metadata"]["labels"].get("app.kubernetes.io/component") in SERVICES]
        running = [p for p in ours if p["metadata"].get("deletionTimestamp") is None]
        return running if running and all(ready(p) for p in running) else None

    pods = await eventually(all_ready, timeout=120, interval=0.5, what="every operator pod Ready")
    assert {p["metadata"]["labels"]["app.kubernetes.io/component"] for p in pods} == SERVICES
    for pod in pods:
        [container] = [c for c in pod["spec"]["containers"] if c.get("readinessProbe")]
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        # Ready is the readiness probe's verdict (the kubelet ran it against the service's server)
        assert all(s["ready"] for s in pod["status"]["containerStatuses"]), pod["status"]

        name, component = pod["metadata"]["name"], pod["metadata"]["labels"]["app.kubernetes.io/component"]
        with port_forward(stack.kubeconfig, name, health_port(pod)) as local:
            status, body = await get(local, "/readyz")
            assert (status, body.strip()) == (200, "ready"), (component, body)
            status, metrics = await get(local, "/metrics")
            assert status == 200
            assert "aim_nats_connected 1.0" in metrics, component
            if component == "deployer":
                assert "aim_consumer_bound{" in metrics


async def test_status_transitions_show_as_events_under_kubectl_describe(
    stack: NodeStack, api: Kube, namespace: str
) -> None:
    await api.create(
        SERVICE,
        {
            "apiVersion": SERVICE.api_version,
            "kind": SERVICE.kind,
            "metadata": {"name": "described"},
            "spec": {"model": {"name": "no-such-model"}},
        },
        namespace,
    )

    async def recorded() -> list[dict[str, Any]] | None:
        found = await events(api, namespace, kind="AIMService", name="described", component="aim-status")
        return found or None

    found = await eventually(recorded, timeout=120, interval=0.5, what="Events from aim-status")
    described = kubectl("describe", "aimservice", "-n", namespace, "described", kubeconfig=stack.kubeconfig)
    events_part = described.split("\nEvents:", 1)[1]
    for event in found:
        assert event["reason"] in events_part, (event["reason"], events_part)
    assert "aim-status" in events_part


def rotation_step(kubeconfig: Path, flag: str, role: str) -> None:
    """One of docs/deploy.md's rotation steps: the bus Secrets through ``aimctl bus credentials``
    and back with ``kubectl replace``."""
    secrets = kubectl(
        "get", "secret", "-n", deployed.SYSTEM_NAMESPACE, "-l", "app.kubernetes.io/component=bus-credentials",
        "-o", "yaml", kubeconfig=kubeconfig,
    )  # fmt: skip
    changed = subprocess.run(
        [sys.executable, "-m", "aimctl", "bus", "credentials", flag, role],
        input=secrets, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert changed.strip(), f"aimctl bus credentials {flag} {role} changed nothing"
    kubectl("replace", "-f", "-", stdin=changed, kubeconfig=kubeconfig)


def reloads(kubeconfig: Path) -> int:
    log = kubectl("logs", "-n", deployed.SYSTEM_NAMESPACE, "aim-nats-0", "-c", "nats", kubeconfig=kubeconfig)
    return log.count("Reloaded server configuration")


async def test_a_bus_key_is_rotated_without_restarting_nats(stack: NodeStack, api: Kube) -> None:
    """docs/deploy.md's rotation of the deployer's key, step by step: the Secret changes in place,
    the NATS pod's reloader makes nats-server reload (never restart), the deployer rolls onto the
    new seed and is ready with it, and retiring the old key leaves it connected."""
    kubeconfig = stack.kubeconfig

    async def nats_pod() -> dict[str, Any]:
        pod = await api.get(POD, deployed.SYSTEM_NAMESPACE, "aim-nats-0")
        assert pod is not None
        return pod

    before = await nats_pod()
    reloaded = reloads(kubeconfig)

    async def reloaded_again() -> int | None:
        count = reloads(kubeconfig)
        return count if count > reloaded else None

    rotation_step(kubeconfig, "--rotate", "deployer")
    reloaded = await eventually(
        reloaded_again, timeout=240, interval=2, what="NATS reloading the rotated keys"
    )
    kubectl(
        "rollout", "restart", "-n", deployed.SYSTEM_NAMESPACE, "deploy/aim-deployer", kubeconfig=kubeconfig
    )
    kubectl(
        "rollout", "status", "-n", deployed.SYSTEM_NAMESPACE, "deploy/aim-deployer", "--timeout=300s",
        kubeconfig=kubeconfig,
    )  # fmt: skip
    rotation_step(kubeconfig, "--retire", "deployer")
    await eventually(reloaded_again, timeout=240, interval=2, what="NATS reloading without the old key")

    # the new deployer, on the new key, stays connected (its readiness needs NATS) ...
    async def deployer_ready() -> list[dict[str, Any]] | None:
        pods = (
            await api.list(
                POD, deployed.SYSTEM_NAMESPACE, label_selector="app.kubernetes.io/name=aim-deployer"
            )
        )[0]
        live = [p for p in pods if p["metadata"].get("deletionTimestamp") is None]
        return live if live and all(ready(p) for p in live) else None

    [pod] = await eventually(deployer_ready, timeout=60, interval=1, what="the deployer Ready on its new key")
    with port_forward(kubeconfig, pod["metadata"]["name"], health_port(pod)) as local:
        status, body = await get(local, "/readyz")
        assert (status, body.strip()) == (200, "ready"), body
    # ... and NATS was never restarted: same pod, its container never restarted
    after = await nats_pod()
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    [nats] = [s for s in after["status"]["containerStatuses"] if s["name"] == "nats"]
    assert nats["restartCount"] == 0 and "running" in nats["state"], nats
