"""A clustered bus loses nothing to the faults a three-node NATS cluster meets in production: two
replicas of every service on a real three-node cluster (streams and buckets at three replicas) and a
control plane of the test's own; four waves of AIMServices, each wave created (and every object
touched to a second generation) while one fault strikes mid-wave:

1. kill -9 of one NATS node (restarted on its store once the wave is created);
2. kill -9 of the JetStream meta leader;
3. kill -9 of the leader of the events stream;
4. all three nodes stopped, then started again.

After each wave: no object lost (every AIMService exists and has its InferenceService), no
duplicate child (one InferenceService per AIMService), no status older than its object's generation,
and the audit history complete, each record once: every status write recorded (one ``write-status``
decision per written resourceVersion) and every change the watcher published stored once (no
``Nats-Msg-Id`` twice), the current version of each object among them. The time from each fault to
convergence is printed for docs/benchmarks.md, never asserted.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.local.cluster import ControlPlane
from aim_dev.local.natscluster import NatsCluster
from aim_dev.testing.plugin import LocalServers, install_all_crds
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.mirror import PAUSE_ANNOTATION
from aimcore.api.kinds import GROUP_AIM, INFERENCE_SERVICE, NAMESPACE, by_kind
from aimcore.runtime import Kube, connect_bus
from aimcore.runtime.kube import connect
from tests.bus_cluster.conftest import meta_leader
from tests.helpers import Following, eventually, manifest, stored_messages
from tests.integration.conftest import Services

pytestmark = pytest.mark.timeout(1500)  # four faults of a wave of 250 AIMServices each

SERVICE, MODEL, TEMPLATE = (by_kind(GROUP_AIM, k) for k in ("AIMService", "AIMModel", "AIMServiceTemplate"))
NS = "bus-faults"
WAVE = 250
"""AIMServices per fault (four faults). See docs/benchmarks.md for what a wave costs here."""
CONCURRENCY = 16
SERVICES = ("watcher", "status", "deployer", "discovery", "registry-sync", "cache")
CONVERGED_WITHIN = 300.0
"""From the fault: generous for two shared cores carrying a control plane, three NATS nodes and
twelve service processes; the figures measured are in docs/benchmarks.md."""

WRITE = "status:write:"  # the status service's audit record of a write: status:write:<uid>:<rv>

Fault = Callable[[NatsCluster], Awaitable[Callable[[], None]]]


async def _kill(cluster: NatsCluster, name: str) -> Callable[[], None]:
    node = cluster.node(name)
    node.kill()
    return node.restart


async def one_node(cluster: NatsCluster) -> Callable[[], None]:
    leader = cluster.meta_leader()
    return await _kill(cluster, next(n.server_name for n in cluster.nodes if n.server_name != leader))


async def meta_leader_node(cluster: NatsCluster) -> Callable[[], None]:
    return await _kill(cluster, await meta_leader(cluster))


async def stream_leader_node(cluster: NatsCluster) -> Callable[[], None]:
    nc = await connect_bus(cluster.client(), "test-admin", forever=False, connect_timeout=5)
    try:
        info = await nc.jetstream().stream_info(topology.EVENTS_STREAM)
    finally:
        await nc.close()
    assert info.cluster is not None and info.cluster.leader
    return await _kill(cluster, info.cluster.leader)


async def all_three(cluster: NatsCluster) -> Callable[[], None]:
    cluster.stop()

    def start_all() -> None:
        for node in cluster.nodes:
            node.restart()

    return start_all


FAULTS: list[tuple[str, Fault]] = [
    ("one node killed", one_node),
    ("meta leader killed", meta_leader_node),
    ("events stream leader killed", stream_leader_node),
    ("all three stopped and started", all_three),
]


@pytest.fixture
def stack(tmp_path: Path, nats_cluster: NatsCluster) -> Any:
    cluster = ControlPlane(tmp_path / "cluster")
    try:
        cluster.start()
        asyncio.run(install_all_crds(str(cluster.kubeconfig_path)))
        yield LocalServers(cluster, nats_cluster.nodes[0], tmp_path)
    finally:
        cluster.stop()


async def _wave(
    kube: Kube, cluster: NatsCluster, indexes: range, fault: Fault
) -> tuple[float, Callable[[], None]]:
    """Create the wave ``CONCURRENCY`` at a time, touching each to a second generation, the fault
    striking once half are created; answers when it struck and how to undo it."""
    gate = asyncio.Semaphore(CONCURRENCY)
    half = indexes[len(indexes) // 2]
    struck = asyncio.get_running_loop().create_future()

    async def one(i: int) -> None:
        if i >= half:
            await asyncio.shield(struck)
        async with gate:
            spec = {"model": {"name": "llama"}, "template": {"name": "llama-lat"}}
            await kube.create(SERVICE, manifest(SERVICE, f"svc-{i:04d}", NS, spec), NS)
            await kube.patch(SERVICE, NS, f"svc-{i:04d}", {"spec": {"replicas": 2}})

    async def strike() -> None:
        await asyncio.gather(*(one(i) for i in indexes if i < half))
        at = time.monotonic()
        struck.set_result((at, await fault(cluster)))

    await asyncio.gather(strike(), *(one(i) for i in indexes if i >= half))
    result: tuple[float, Callable[[], None]] = struck.result()
    return result


async def _unconverged(kube: Kube, count: int) -> list[str]:
    """AIMServices lost, without their one InferenceService, or whose status is older than them."""
    items, _ = await kube.list(SERVICE, NS)
    owners = Counter(
        o["name"]
        for i in (await kube.list(INFERENCE_SERVICE, NS))[0]
        for o in i["metadata"].get("ownerReferences") or []
    )
    wrong = [f"{n} has {c} InferenceServices" for n, c in owners.items() if c > 1]
    if len(items) != count:
        wrong.append(f"{len(items)} of {count} AIMServices")
    return wrong + sorted(
        o["metadata"]["name"]
        for o in items
        if (o.get("status") or {}).get("status") != "Starting"
        or o["status"].get("observedGeneration") != o["metadata"]["generation"]
        or owners[o["metadata"]["name"]] != 1
    )


async def _converged(kube: Kube, count: int, what: str) -> None:
    async def done() -> bool:
        return not await _unconverged(kube, count)

    try:
        await eventually(done, timeout=CONVERGED_WITHIN, interval=0.5, what=what)
    except AssertionError:
        raise AssertionError(f"{what}: never converged: {(await _unconverged(kube, count))[:20]}") from None


class Changes(Following):
    """Every version of every AIMService, from a watch of the test's own: which versions were
    status writes (the status changed; the status service is its only writer)."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube, SERVICE, NS)
        self.versions: set[tuple[str, str]] = set()  # (uid, resourceVersion)
        self.status_writes: set[tuple[str, str]] = set()
        self._status: dict[str, Any] = {}

    def seen(self, event: dict[str, Any]) -> None:
        meta = event["object"]["metadata"]
        version = (meta["uid"], meta["resourceVersion"])
        self.versions.add(version)
        status = event["object"].get("status")
        if event["type"] == "MODIFIED" and status != self._status.get(meta["uid"]):
            self.status_writes.add(version)
        self._status[meta["uid"]] = status


async def _history(js: JetStreamContext, stream: str, subject: str) -> Counter[str]:
    """How many times each ``Nats-Msg-Id`` is stored under ``subject``."""
    return Counter(
        (msg.headers or {}).get("Nats-Msg-Id", "") for msg in await stored_messages(js, subject, stream)
    )


async def _audit(js: JetStreamContext, changes: Changes) -> list[str]:
    """What the audit history lacks or holds twice: every version of every AIMService has its
    change event, every status write its ``write-status`` record, each stored once."""
    changes.assert_following()
    events = await _history(js, topology.EVENTS_STREAM, subjects.kind_filter(subjects.EVENTS_PREFIX, SERVICE))
    writes = subjects.kind_filter(f"{subjects.DECISIONS_PREFIX}.status", SERVICE)
    stored = await _history(js, topology.DECISIONS_STREAM, writes)
    decisions = Counter({i: n for i, n in stored.items() if i.startswith(WRITE)})
    problems = [f"stored twice: {i}" for i, n in {**events, **decisions}.items() if n > 1]
    changed = {tuple(i.split(":")[:2]) for i in events}
    recorded = {tuple(i.removeprefix(WRITE).split(":")) for i in decisions}
    problems += [f"{uid}@{rv}: no change event" for uid, rv in sorted(changes.versions - changed)]
    problems += [
        f"{uid}@{rv}: status write not recorded" for uid, rv in sorted(changes.status_writes - recorded)
    ]
    return problems


async def _complete(js: JetStreamContext, changes: Changes, what: str) -> None:
    """Wait until the audit history is complete (the last records of the wave may still be on
    their way); fail naming what it lacks."""

    async def complete() -> bool:
        return not await _audit(js, changes)

    try:
        await eventually(complete, timeout=60, interval=1.0, what=f"{what}: the audit history")
    except AssertionError:
        problems = await _audit(js, changes)
        raise AssertionError(f"{what}: {len(problems)} gaps in the audit history: {problems[:10]}") from None


async def test_faults_of_a_three_node_bus_lose_nothing(
    stack: LocalServers, nats_cluster: NatsCluster
) -> None:
    await meta_leader(nats_cluster)
    bus = {"AIM_NATS_URL": nats_cluster.url, "AIM_NATS_REPLICAS": str(nats_cluster.size)}
    services = Services(stack, stack.workdir / "logs", env=bus)
    for name in SERVICES:
        for replica in (0, 1):
            services.start(name, replica)
    kube = Kube(await connect(stack.kubeconfig), field_manager="aim-tests")
    nc = await connect_bus(nats_cluster.client(), "test-admin", forever=True, connect_timeout=5)
    js = nc.jetstream()
    timings: dict[str, float] = {}
    changes = Changes(kube)
    try:
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        # the model and template ready by hand, paused so that discovery leaves them so
        paused = {"annotations": {PAUSE_ANNOTATION: "true"}}
        model = {"image": "ghcr.io/acme/llama:1.0"}
        await kube.create(MODEL, manifest(MODEL, "llama", NS, model, **paused), NS)
        await kube.patch_status(MODEL, NS, "llama", {"status": {"status": "Ready"}})
        body = {"modelName": "llama", "metric": "latency", "precision": "fp8"}
        await kube.create(TEMPLATE, manifest(TEMPLATE, "llama-lat", NS, body, **paused), NS)
        profile = {"metadata": {"metric": "latency", "precision": "fp8"}}
        await kube.patch_status(
            TEMPLATE, NS, "llama-lat", {"status": {"status": "Ready", "profile": profile}}
        )

        async def bound() -> bool:
            services.assert_alive()
            try:
                for service in ("deployer", "discovery", "registry-sync", "cache"):
                    await js.consumer_info(topology.EVENTS_STREAM, f"aim-{service}")
                await js.consumer_info(topology.STATUS_STREAM, "aim-status")
            except Exception:
                return False
            return True

        await eventually(bound, timeout=120, interval=0.5, what="every service's consumer")
        await changes.start()
        created = 0
        for what, fault in FAULTS:
            first, created = created, created + WAVE
            struck, restart = await _wave(kube, nats_cluster, range(first, created), fault)
            wave_done = time.monotonic()
            await asyncio.to_thread(restart)
            await _converged(kube, created, what)
            done = time.monotonic()
            timings[what] = round(done - struck, 1)
            print(
                f"\n{what}: converged {timings[what]} s after the fault, {done - wave_done:.1f} s after "
                f"the wave's last object and the node's restart ({created} AIMServices)"
            )
            await meta_leader(nats_cluster)
            await _complete(js, changes, what)
            services.assert_alive()
        print(f"\nbus faults, {WAVE} AIMServices a wave, seconds from the fault to convergence: {timings}")
    finally:
        await changes.stop()
        await nc.close()
        await kube.close()
        services.stop_all()
