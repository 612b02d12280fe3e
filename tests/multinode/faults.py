"""What the multi-node tests share: the operator's pods and the bus as the cluster sees them, a fleet
of AIMServices and what is watched of it while a fault happens (every InferenceService created
once, no status going backwards), and the figures the faults are judged by."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_deployer.inference import isvc_name
from aim_dev.local import deployed
from aim_dev.local.binaries import run_kubectl
from aim_dev.local.consuming import SERVICES
from aim_dev.local.nodestack import NodeStack
from aim_dev.node import host
from aimcore.api.kinds import INFERENCE_SERVICE, NAMESPACE, POD, by_kind
from aimcore.runtime import Kube
from tests.helpers import Following, eventually, kubectl

SYSTEM = deployed.SYSTEM_NAMESPACE
NATS_PODS = tuple(f"aim-nats-{i}" for i in range(3))
SERVICE = by_kind("aim.eai.amd.com", "AIMService")
MODEL = by_kind("aim.eai.amd.com", "AIMModel")
GPU = "amd.com/gpu"
"""No node has one: a service that asks for one is correctly Pending (``FailedScheduling``) with no
container started, so hundreds of them cost the nodes nothing."""


def ready(obj: Mapping[str, Any]) -> bool:
    """A Node's or a Pod's ``Ready`` condition is True."""
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


async def nats_pods(api: Kube) -> list[dict[str, Any]]:
    pods, _ = await api.list(POD, SYSTEM, label_selector="app.kubernetes.io/name=aim-nats")
    return sorted(pods, key=lambda p: p["metadata"]["name"])


async def bus_views(stack: NodeStack, rounds: int = 4) -> list[dict[str, Any]]:
    """Several servers' answers about the bus (each monitor reaches the Service: any server)."""
    views = []
    for _ in range(rounds):
        for monitor in stack.nats_monitors:
            try:
                views.append(await asyncio.to_thread(deployed.read_jsz, monitor))
            except (OSError, ValueError):  # its node is gone, or the server went mid-answer
                continue
    return views


async def bus_formed(stack: NodeStack, timeout: float = 120) -> list[dict[str, Any]]:
    """Until the bus is one cluster with every stream at R3 and each stream's followers current
    (:func:`aim_dev.local.deployed.bus_cluster_problems`); the answers that showed it."""
    last: dict[str, Any] = {}

    async def formed() -> list[dict[str, Any]] | None:
        views = await bus_views(stack)
        last["problems"] = deployed.bus_cluster_problems(views)
        return views if not last["problems"] else None

    try:
        return await eventually(formed, timeout=timeout, interval=1, what="the bus formed")
    except AssertionError:
        raise AssertionError(f"the bus did not form: {last.get('problems')}") from None


async def meta_leader(stack: NodeStack) -> str:
    views = await bus_views(stack, rounds=1)
    leaders = {v["meta_cluster"].get("leader") for v in views} - {None}
    assert len(leaders) == 1, f"the servers disagree on the meta leader: {leaders}"
    return str(leaders.pop())


def redeliveries(stack: NodeStack) -> dict[str, int]:
    """Messages redelivered to the operator's consumers, by live replica (its
    ``aim_consumer_redelivered_total``, read from its /metrics)."""
    counts: dict[str, int] = {}
    script = "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8080/metrics').read().decode())"
    listed = json.loads(kubectl("get", "pods", "-n", SYSTEM, "-o", "json", kubeconfig=stack.kubeconfig))
    consuming = {f"aim-{s}" for s in SERVICES if s != "watcher"}
    for pod in listed["items"]:
        name = pod["metadata"]["name"]
        if (pod["metadata"]["labels"] or {}).get("app.kubernetes.io/name") not in consuming or not ready(pod):
            continue
        if pod["metadata"].get("deletionTimestamp"):
            continue
        done = run_kubectl(
            "exec", "-n", SYSTEM, name, "--", "python", "-c", script, kubeconfig=stack.kubeconfig
        )
        if done.returncode == 0:
            text = done.stdout
            counts[name] = sum(
                int(float(m))
                for m in re.findall(r"^aim_consumer_redelivered_total\{[^}]*\} (\S+)$", text, re.M)
            )
    return counts


def redelivered_since(before: Mapping[str, int], after: Mapping[str, int]) -> int:
    """Redeliveries between two readings: the live replicas' growth (a replica started since
    counts from zero; one gone since took its count with it, and was not redelivered to after)."""
    return sum(count - before.get(pod, 0) for pod, count in after.items())


def resident_mib(pids: list[int]) -> float:
    """The processes' resident memory summed (``VmRSS``; pages shared between them count twice)."""
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        total += int(found.group(1)) if found else 0
    return round(total / 1024, 1)


def memory(stack: NodeStack) -> dict[str, float]:
    """What the stack holds in memory: each node (its daemons and every container on it), and the
    control plane with the registry, the Hub server and the stand-ins."""
    assert stack.nodes is not None and stack.cluster is not None
    held = {n.node_name: resident_mib(host.node_processes(n.node_id)) for n in stack.nodes.nodes}
    others = [*stack.cluster.processes, *stack.stand_ins()]
    others += [s.process for s in (stack.registry, stack.hub) if s is not None and s.process is not None]
    held["control plane and host servers"] = resident_mib([p.pid for p in others if p.pid is not None])
    held["total"] = round(sum(held.values()), 1)
    return held


# -- the fleet -----------------------------------------------------------------------------------


def service_body(name: str, *, gpu: bool, roll: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "model": {"name": "fleet-model"},
        # the test model's one profile is unoptimized (a CPU stand-in for an AIM image)
        "template": {"allowUnoptimized": True},
        "env": [{"name": "ROLL", "value": roll}],
    }
    if gpu:
        spec["resources"] = {"limits": {GPU: 1}, "requests": {GPU: 1}}
    return {
        "apiVersion": SERVICE.api_version,
        "kind": SERVICE.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


@dataclass
class Fleet:
    """``count`` AIMServices of one model in ``namespace``; the first ``running`` have real predictor
    pods (the test model's server), the rest ask for a GPU no node has."""

    api: Kube
    namespace: str
    count: int
    running: int
    names: list[str] = field(default_factory=list)
    created: int = 0

    def __post_init__(self) -> None:
        self.names = [f"svc-{i:03d}" for i in range(self.count)]

    def isvc_names(self) -> list[str]:
        return [isvc_name(n, self.namespace) for n in self.names]

    def gpu(self, name: str) -> bool:
        return self.names.index(name) >= self.running

    async def setup(self, image: str) -> None:
        await self.api.create(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        )
        model = {
            "apiVersion": MODEL.api_version,
            "kind": MODEL.kind,
            "metadata": {"name": "fleet-model"},
            "spec": {"image": image},
        }
        await self.api.create(MODEL, model, self.namespace)

    async def create(self, names: list[str], roll: str, parallel: int = 8) -> None:
        gate = asyncio.Semaphore(parallel)

        async def one(name: str) -> None:
            async with gate:
                await self.api.create(
                    SERVICE, service_body(name, gpu=self.gpu(name), roll=roll), self.namespace
                )
                self.created += 1

        await asyncio.gather(*(one(n) for n in names))

    async def roll(self, names: list[str], roll: str, parallel: int = 8) -> None:
        """A new generation of each: the predictor's env changes."""
        gate = asyncio.Semaphore(parallel)

        async def one(name: str) -> None:
            async with gate:
                patch = {"spec": {"env": [{"name": "ROLL", "value": roll}]}}
                await self.api.patch(SERVICE, self.namespace, name, patch)

        await asyncio.gather(*(one(n) for n in names))

    def converged(self, svc: Mapping[str, Any], isvc: Mapping[str, Any] | None, roll: str) -> str | None:
        """Why one service has not converged on ``roll`` (None: it has)."""
        meta, status = svc["metadata"], svc.get("status") or {}
        if status.get("observedGeneration") != meta.get("generation"):
            return f"observed {status.get('observedGeneration')} of {meta.get('generation')}"
        if isvc is None:
            return "no InferenceService"
        env = json.dumps(isvc.get("spec") or {})
        if f'"ROLL", "value": "{roll}"' not in env:
            return "the InferenceService is not rolled"
        state = status.get("status")
        want = "Pending" if self.gpu(meta["name"]) else "Running"
        if state != want:
            return f"{state}, want {want}"
        if self.gpu(meta["name"]):
            pods = {c["type"]: c for c in status.get("conditions") or []}.get(
                "InferenceServicePodsReady"
            ) or {}
            if pods.get("reason") != "FailedScheduling" or GPU not in pods.get("message", ""):
                return f"pods: {pods.get('reason')}: {pods.get('message')}"
        return None

    async def wait_converged(self, roll: str, timeout: float) -> float:
        """Until every service has converged on ``roll``; the monotonic time it did."""
        last: dict[str, Any] = {}

        async def done() -> bool:
            services, _ = await self.api.list(SERVICE, self.namespace)
            isvcs, _ = await self.api.list(INFERENCE_SERVICE, self.namespace)
            by_name = {i["metadata"]["name"]: i for i in isvcs}
            waiting = {}
            for svc in services:
                why = self.converged(
                    svc, by_name.get(isvc_name(svc["metadata"]["name"], self.namespace)), roll
                )
                if why:
                    waiting[svc["metadata"]["name"]] = why
            waiting.update(
                {n: "missing" for n in set(self.names) - {s["metadata"]["name"] for s in services}}
            )
            last["waiting"] = waiting
            return not waiting

        try:
            await eventually(done, timeout=timeout, interval=1, what="the fleet converged")
        except AssertionError:
            waiting = last.get("waiting") or {}
            sample = dict(list(sorted(waiting.items()))[:8])
            raise AssertionError(f"{len(waiting)} services not converged on {roll}, e.g. {sample}") from None
        return time.monotonic()


class Children(Following):
    """Every InferenceService event in the namespace: each must be created once and never deleted."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        super().__init__(kube, INFERENCE_SERVICE, namespace)
        self.added: Counter[str] = Counter()
        self.deleted: Counter[str] = Counter()
        self.uids: dict[str, set[str]] = defaultdict(set)

    def seen(self, event: dict[str, Any]) -> None:
        meta = event["object"]["metadata"]
        self.uids[meta["name"]].add(meta["uid"])
        if event["type"] == "ADDED":
            self.added[meta["name"]] += 1
        elif event["type"] == "DELETED":
            self.deleted[meta["name"]] += 1

    def duplicates(self) -> dict[str, int]:
        """Children made more than once (a second object, or one deleted and made again)."""
        twice = {n: c for n, c in self.added.items() if c > 1}
        twice.update({n: len(u) for n, u in self.uids.items() if len(u) > 1})
        twice.update({n: -c for n, c in self.deleted.items()})
        return twice


class Statuses(Following):
    """Every AIMService event in the namespace: ``observedGeneration`` never goes back."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        super().__init__(kube, SERVICE, namespace)
        self.observed: dict[str, int] = {}
        self.backwards: list[str] = []

    def seen(self, event: dict[str, Any]) -> None:
        obj = event["object"]
        name = obj["metadata"]["name"]
        generation = (obj.get("status") or {}).get("observedGeneration")
        if not isinstance(generation, int):
            return
        before = self.observed.get(name, 0)
        if generation < before:
            self.backwards.append(f"{name}: {before} -> {generation}")
        self.observed[name] = max(before, generation)
