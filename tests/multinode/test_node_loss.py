"""A node lost in the middle of a rollout, then a NATS pod replaced, then a node drained — on the
production topology over three real nodes, with a fleet of AIMServices being created and updated.

The node that goes is the one running the JetStream meta leader, with whatever else the scheduler
put there (a NATS server, some of the operator's replicas, predictor pods): kubelet, containerd,
kube-proxy, its DNS and every container on it are killed at once (SIGKILL, no drain). Nothing may be
lost: every AIMService converges on its last generation (Running with real predictor pods, or
correctly Pending for a GPU no node has), every InferenceService is created exactly once, no
status goes back a generation, the bus keeps its majority and goes on accepting writes, the
replicas that were on the node carry on from the other nodes (their leases taken over after the
lease TTL: the resync is 30 minutes away), and the node lifecycle controller evicts the lost pods,
which are rescheduled. Then the node comes back: its NATS server catches up (every stream's
replicas current again) and nothing is made twice.

The figures (seconds from the fault to the last service converged, redeliveries, duplicates) go to
the run's report (``multi-node fault figures``) and to docs/benchmarks.md."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import DEPLOYMENT, INFERENCE_SERVICE, NODE, POD
from aimcore.runtime import Kube
from tests.helpers import eventually, kubectl
from tests.multinode.faults import (
    SYSTEM,
    Children,
    Fleet,
    Statuses,
    bus_formed,
    meta_leader,
    nats_pods,
    ready,
    redelivered_since,
    redeliveries,
)

COUNT = int(os.environ.get("AIM_MULTINODE_SERVICES", "300"))
"""AIMServices in the fleet (the issue's 300; fewer for a quick local run)."""
RUNNING = 3
"""Of them, the ones with real predictor pods (the test model's server)."""
NAMESPACE = "fleet"

pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="module")
def fleet_state() -> dict[str, Any]:
    """What the tests of this module hand on: the fleet's current generation's ``roll``."""
    return {}


async def fleet_of(api: Kube, model_image: str, state: dict[str, Any]) -> Fleet:
    """The module's fleet, created (and converged) if an earlier test has not."""
    fleet = Fleet(api, NAMESPACE, COUNT, RUNNING)
    if "roll" not in state:
        await fleet.setup(model_image)
        await fleet.create(fleet.names, "0")
        await fleet.wait_converged("0", timeout=600)
        state["roll"] = "0"
    return fleet


async def operator_settled(api: Kube, lost: str | None = None) -> None:
    """Every service's Deployment has its two replicas available on nodes other than ``lost``."""

    async def settled() -> bool:
        deployments, _ = await api.list(DEPLOYMENT, SYSTEM)
        pods, _ = await api.list(POD, SYSTEM)
        live = [p for p in pods if ready(p) and not p["metadata"].get("deletionTimestamp")]
        return all(
            int((d.get("status") or {}).get("availableReplicas") or 0) >= 2 for d in deployments
        ) and all(p["spec"].get("nodeName") != lost for p in live)

    await eventually(settled, timeout=300, interval=1, what="the operator's replicas available again")


async def test_a_node_lost_in_the_middle_of_a_rollout(
    stack: NodeStack, api: Kube, model_image: str, figures: dict[str, Any], fleet_state: dict[str, Any]
) -> None:
    assert stack.nodes is not None
    fleet = Fleet(api, NAMESPACE, COUNT, RUNNING)
    await fleet.setup(model_image)
    children, statuses = Children(api, NAMESPACE), Statuses(api, NAMESPACE)
    await children.start()
    await statuses.start()

    leader = await meta_leader(stack)
    nats = {p["metadata"]["name"]: p for p in await nats_pods(api)}
    victim = stack.nodes.node(nats[leader]["spec"]["nodeName"])
    system_pods, _ = await api.list(POD, SYSTEM)
    on_victim = sorted(
        p["metadata"]["name"] for p in system_pods if p["spec"].get("nodeName") == victim.node_name
    )
    before = redeliveries(stack)

    # The first half is created, then rolled while the second half is created; the node goes
    # once a quarter of the second half exists.
    half = COUNT // 2
    await fleet.create(fleet.names[:half], "1")
    creating = asyncio.create_task(fleet.create(fleet.names[half:], "1"))
    rolling = asyncio.create_task(fleet.roll(fleet.names[:half], "2"))

    async def quarter_created() -> bool:
        return fleet.created >= half + COUNT // 8

    await eventually(quarter_created, timeout=120, what="a quarter of the second half created")
    killed_at = time.monotonic()
    victim.kill()
    await asyncio.gather(creating, rolling)
    await fleet.roll(fleet.names[half:], "2")

    async def node_state(want: bool) -> bool:
        node = await api.get(NODE, None, victim.node_name)
        return node is not None and ready(node) is want

    await eventually(lambda: node_state(False), timeout=120, interval=0.5, what="the node NotReady")
    not_ready_at = time.monotonic()
    new_leader = await eventually(
        lambda: _leader_elsewhere(stack, leader), timeout=120, interval=1, what="a new meta leader"
    )

    async def evicted() -> bool:
        pods, _ = await api.list(POD, SYSTEM)
        mine = [p for p in pods if p["spec"].get("nodeName") == victim.node_name]
        return bool(mine) and all(p["metadata"].get("deletionTimestamp") for p in mine)

    await eventually(evicted, timeout=180, interval=1, what="the lost node's pods evicted")
    evicted_at = time.monotonic()
    # Converged only counts once the lost pods are known to be lost (until the node is NotReady,
    # its predictor pods still look Ready).
    converged_at = await fleet.wait_converged("2", timeout=900)
    fleet_state["roll"] = "2"
    await operator_settled(api, lost=victim.node_name)
    rescheduled_at = time.monotonic()

    children.assert_following()
    statuses.assert_following()
    assert children.duplicates() == {}, "InferenceServices made more than once"
    assert sorted(children.added) == sorted(fleet.isvc_names())
    assert statuses.backwards == [], "a status went back a generation"
    after = redeliveries(stack)
    loss = {
        "services": COUNT,
        "lost node": victim.node_name,
        "operator pods on it": on_victim,
        "meta leader": f"{leader} -> {new_leader}",
        "kill to NotReady s": round(not_ready_at - killed_at, 1),
        "kill to pods evicted s": round(evicted_at - killed_at, 1),
        "kill to replicas rescheduled s": round(rescheduled_at - killed_at, 1),
        "kill to last service converged s": round(converged_at - killed_at, 1),
        "redelivered": redelivered_since(before, after),
        "duplicate children": 0,
        "lost": 0,
    }

    # The node comes back: its NATS server rejoins and catches up; nothing converges twice.
    added = sum(children.added.values())
    generations = await isvc_generations(api)
    back = time.monotonic()
    victim.restart()  # on this (the main) thread: the node's daemons die with the thread that starts them
    await eventually(lambda: node_state(True), timeout=180, interval=0.5, what="the node Ready again")

    async def nats_back() -> bool:
        pods = await nats_pods(api)
        return len(pods) == 3 and all(ready(p) and not p["metadata"].get("deletionTimestamp") for p in pods)

    await eventually(nats_back, timeout=300, interval=1, what="three NATS servers ready")
    await bus_formed(stack, timeout=300)
    loss["node back to bus current s"] = round(time.monotonic() - back, 1)
    await fleet.wait_converged("2", timeout=300)
    assert sum(children.added.values()) == added and children.duplicates() == {}
    assert await isvc_generations(api) == generations, "an InferenceService was written again"
    figures["node loss"] = loss
    await children.stop()
    await statuses.stop()


async def isvc_generations(api: Kube) -> dict[str, int]:
    isvcs, _ = await api.list(INFERENCE_SERVICE, NAMESPACE)
    return {i["metadata"]["name"]: int(i["metadata"]["generation"]) for i in isvcs}


async def _leader_elsewhere(stack: NodeStack, old: str) -> str | None:
    try:
        leader = await meta_leader(stack)
    except AssertionError:  # the servers still disagree
        return None
    return leader if leader != old else None


async def test_a_nats_pod_deleted_during_a_rollout(
    stack: NodeStack, api: Kube, model_image: str, figures: dict[str, Any], fleet_state: dict[str, Any]
) -> None:
    """``kubectl delete pod`` of a NATS server while every service is rolled: the StatefulSet
    replaces it (lame duck first: its preStop), the bus keeps its majority, nothing is lost or made
    twice."""
    fleet = await fleet_of(api, model_image, fleet_state)
    children = Children(api, NAMESPACE)
    await children.start()
    before = redeliveries(stack)
    leader = await meta_leader(stack)
    roll = str(int(fleet_state["roll"]) + 1)
    rolling = asyncio.create_task(fleet.roll(fleet.names, roll))
    deleted_at = time.monotonic()
    kubectl("delete", "pod", "-n", SYSTEM, leader, "--wait=false", kubeconfig=stack.kubeconfig)
    await rolling
    converged_at = await fleet.wait_converged(roll, timeout=900)
    fleet_state["roll"] = roll
    await bus_formed(stack, timeout=300)
    caught_up_at = time.monotonic()
    children.assert_following()
    assert children.duplicates() == {} and not children.added, "InferenceServices made again"
    figures["nats pod deleted"] = {
        "pod": leader,
        "delete to last service converged s": round(converged_at - deleted_at, 1),
        "delete to bus current s": round(caught_up_at - deleted_at, 1),
        "redelivered": redelivered_since(before, redeliveries(stack)),
        "duplicate children": 0,
    }
    await children.stop()


async def test_a_node_drained_respects_the_budgets(
    stack: NodeStack, api: Kube, model_image: str, figures: dict[str, Any], fleet_state: dict[str, Any]
) -> None:
    """``kubectl drain`` of a node while every service is rolled: evictions go through the PDBs, so
    no more than one NATS server is ever down; its NATS pod cannot go elsewhere (one per node) and
    waits, Pending, until the node is uncordoned."""
    assert stack.nodes is not None
    fleet = await fleet_of(api, model_image, fleet_state)
    nats = {p["metadata"]["name"]: p for p in await nats_pods(api)}
    node = nats["aim-nats-1"]["spec"]["nodeName"]
    uid = nats["aim-nats-1"]["metadata"]["uid"]
    down: list[int] = []

    async def watch_nats() -> None:  # the most NATS servers not ready at once, sampled
        while True:
            pods = await nats_pods(api)
            down.append(3 - sum(1 for p in pods if ready(p) and not p["metadata"].get("deletionTimestamp")))
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(watch_nats())
    children = Children(api, NAMESPACE)
    await children.start()
    roll = str(int(fleet_state["roll"]) + 1)
    started = time.monotonic()
    rolling = asyncio.create_task(fleet.roll(fleet.names, roll))
    await asyncio.to_thread(
        kubectl,
        "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=600s",
        kubeconfig=stack.kubeconfig,
    )  # fmt: skip
    drained_at = time.monotonic()
    await rolling
    converged_at = await fleet.wait_converged(roll, timeout=900)
    fleet_state["roll"] = roll
    pending = {p["metadata"]["name"]: p for p in await nats_pods(api)}["aim-nats-1"]
    assert pending["metadata"]["uid"] != uid, "the drained node's NATS server was not evicted"
    assert (pending.get("status") or {}).get("phase") == "Pending", "a second NATS server on one node"
    kubectl("uncordon", node, kubeconfig=stack.kubeconfig)
    await bus_formed(stack, timeout=300)
    sampler.cancel()
    children.assert_following()
    assert max(down) == 1, f"NATS servers down at once: {max(down)}"
    assert children.duplicates() == {} and not children.added
    figures["node drained"] = {
        "node": node,
        "drain s": round(drained_at - started, 1),
        "drain start to last service converged s": round(converged_at - started, 1),
        "most NATS servers down at once": max(down),
        "duplicate children": 0,
    }
    await children.stop()
