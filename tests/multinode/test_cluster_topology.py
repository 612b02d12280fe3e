"""The production topology on three real nodes, as ``deploy/overlays/production`` lays it out: NATS
as three pods on three different nodes forming one JetStream cluster (routes over TLS by the
headless Service's DNS names, every stream and bucket at three replicas), each service's two
replicas on two different nodes, the PodDisruptionBudgets in force; and the cluster underneath it
doing what a cluster does: a pod reaches a pod on another node, a Service's cluster address and
its DNS name from any node, and the StatefulSet's pods by their stable names."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from aim_dev.local import deployed
from aim_dev.local.consuming import SERVICES
from aim_dev.local.multinode import node_names
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import NODE, POD, KindRef
from aimcore.runtime import Kube
from tests.helpers import eventually, kubectl
from tests.multinode.conftest import NODES
from tests.multinode.faults import NATS_PODS, bus_formed, memory, nats_pods, ready

PDB = KindRef("policy", "v1beta1", "PodDisruptionBudget", "poddisruptionbudgets", True)
SYSTEM = deployed.SYSTEM_NAMESPACE

pytestmark = pytest.mark.timeout(900)  # the first test pays for the stack (about five minutes)


async def test_nats_and_every_service_are_spread_over_the_nodes(
    stack: NodeStack, api: Kube, figures: dict[str, Any]
) -> None:
    figures["memory MiB"] = memory(stack)
    nodes, _ = await api.list(NODE, None)
    assert sorted(n["metadata"]["name"] for n in nodes) == list(node_names(NODES))
    assert all(ready(n) for n in nodes)

    pods = await nats_pods(api)
    assert sorted(p["metadata"]["name"] for p in pods) == [f"aim-nats-{i}" for i in range(NODES)]
    assert len({p["spec"]["nodeName"] for p in pods}) == NODES, "one NATS server per node"
    assert all(ready(p) for p in pods)

    for service in SERVICES:
        replicas, _ = await api.list(POD, SYSTEM, label_selector=f"app.kubernetes.io/name=aim-{service}")
        running = [p for p in replicas if ready(p)]
        assert len(running) == 2, f"aim-{service}: {len(running)} ready replicas"
        assert len({p["spec"]["nodeName"] for p in running}) == 2, f"aim-{service}'s replicas share a node"

    async def budgets() -> dict[str, Any] | None:
        found, _ = await api.list(PDB, SYSTEM)
        by_name = {b["metadata"]["name"]: b for b in found}
        settled = all((b.get("status") or {}).get("observedGeneration") for b in found)
        return by_name if settled and len(by_name) == len(SERVICES) + 1 else None

    pdbs = await eventually(budgets, timeout=60, interval=0.5, what="every PDB observed")
    nats = pdbs["aim-nats"]
    assert nats["spec"]["maxUnavailable"] == 1
    assert nats["status"]["disruptionsAllowed"] == 1 and nats["status"]["currentHealthy"] == NODES


async def test_the_bus_is_one_jetstream_cluster_at_three_replicas(stack: NodeStack) -> None:
    views = await bus_formed(stack)
    meta = views[-1]["meta_cluster"]
    assert meta["cluster_size"] == NODES
    assert meta["leader"] in NATS_PODS
    details = {
        d["name"]: d for a in views[-1].get("account_details") or [] for d in a.get("stream_detail") or []
    }
    for stream in (*deployed.STREAMS, *(f"KV_{b}" for b in deployed.BUCKETS)):
        assert details[stream]["config"]["num_replicas"] == NODES, stream


def probe(stack: NodeStack, pod: str, script: str) -> Any:
    """Run ``script`` (Python, printing one JSON value) in a service pod; its value."""
    out = kubectl("exec", "-n", SYSTEM, pod, "--", "python", "-c", script, kubeconfig=stack.kubeconfig)
    return json.loads(out.strip().splitlines()[-1])


NETWORK_PROBE = """
import json, socket
def resolve(name):
    try:
        return sorted({a[4][0] for a in socket.getaddrinfo(name, None, socket.AF_INET)})
    except OSError as exc:
        return str(exc)
def greet(host, port):
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            return s.recv(5).decode()
    except OSError as exc:
        return str(exc)
def reach(host, port):
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError as exc:
        return str(exc)
names = %(names)r
out = {"dns": {n: resolve(n) for n in names}, "nats": {t: greet(t, 4222) for t in %(targets)r}}
out["api"] = reach("kubernetes.default.svc.cluster.local", 443)
print(json.dumps(out))
"""


async def test_pods_reach_pods_services_and_names_across_nodes(stack: NodeStack, api: Kube) -> None:
    """From a service's pod on one node: the Service's name (short, and fully qualified) is its
    cluster address; each NATS pod's stable name is that pod's address; a NATS pod on another
    node answers on its own address and through the Service (kube-proxy); a name in no Service
    is not found."""
    nats = {p["metadata"]["name"]: p for p in await nats_pods(api)}
    watchers, _ = await api.list(POD, SYSTEM, label_selector="app.kubernetes.io/name=aim-watcher")
    here = next(p for p in watchers if ready(p))
    elsewhere = next(p for p in nats.values() if p["spec"]["nodeName"] != here["spec"]["nodeName"])
    stable = {f"{n}.aim-nats-headless.aim-system.svc.cluster.local": n for n in nats}
    names = ["aim-nats.aim-system", "aim-nats.aim-system.svc.cluster.local", *stable, "nowhere.aim-system"]
    targets = ["aim-nats.aim-system", elsewhere["status"]["podIP"]]
    seen = probe(stack, here["metadata"]["name"], NETWORK_PROBE % {"names": names, "targets": targets})

    assert seen["dns"]["aim-nats.aim-system"] == [deployed.NATS_SERVICE_IP]
    assert seen["dns"]["aim-nats.aim-system.svc.cluster.local"] == [deployed.NATS_SERVICE_IP]
    for name, pod in stable.items():
        assert seen["dns"][name] == [nats[pod]["status"]["podIP"]], name
    assert isinstance(seen["dns"]["nowhere.aim-system"], str), "a name in no Service must not resolve"
    # NATS greets every client with INFO, over the pod network and through the Service alike
    assert seen["nats"] == {t: "INFO " for t in targets}
    assert seen["api"] is True  # the `kubernetes` Service: kube-proxy, then the node's forwarder
    # each pod has an address of its node's own pod subnet
    assert stack.nodes is not None
    subnets = {n.node_name: ipaddress.ip_network(n.addressing.pod_subnet) for n in stack.nodes.nodes}
    for pod in nats.values():
        assert ipaddress.ip_address(pod["status"]["podIP"]) in subnets[pod["spec"]["nodeName"]]
