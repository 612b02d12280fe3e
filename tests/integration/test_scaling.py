"""Horizontal scaling and crash safety through real processes, each test on a control plane and
NATS of its own:

- two deployer replicas share 200 AIMServices: every object is reconciled, work is spread, no
  object is reconciled by both replicas at once, and each object's status is written once;
- kill -9 the watcher, the status service and a deployer replica (one at a time) and restart NATS
  in the middle of a 200-object rollout: every object converges, nothing is lost or written twice.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.kinds import NAMESPACE, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from aimcore.runtime.mirrorscan import kind_pattern, snapshot
from tests.helpers import Following, eventually, manifest
from tests.integration.conftest import Services, consumers_ready, drained

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
NS = "rollout"
COUNT = 200


def service(i: int) -> dict[str, Any]:
    return manifest(AIMSVC, f"svc-{i:03d}", NS, {"model": {"name": f"model-{i % 7}"}})


async def create(kube: Kube, indexes: range) -> None:
    gate = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with gate:
            await kube.create(AIMSVC, service(i))

    await asyncio.gather(*(one(i) for i in indexes))


async def pending(kube: Kube) -> int:
    items, _ = await kube.list(AIMSVC, NS)
    return sum(
        1
        for o in items
        # their models do not exist: settled means Failed with ModelNotFound, for this generation
        if (o.get("status") or {}).get("status") == "Failed"
        and o["status"].get("observedGeneration") == o["metadata"]["generation"]
    )


class WriteCounter(Following):
    """Counts MODIFIED events per object from a watch of its own: after creation, every
    modification of an AIMService here is a status write."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube, AIMSVC, NS)
        self.writes: Counter[str] = Counter()

    def seen(self, event: dict[str, Any]) -> None:
        if event["type"] == "MODIFIED":
            self.writes[event["object"]["metadata"]["name"]] += 1


async def mirrored(servers: LocalServers) -> int:
    nc = await connect_as(servers.nats)
    try:
        kv = await topology.objects_bucket(nc.jetstream())
        return len(await snapshot(kv, kind_pattern(AIMSVC, NS)))
    finally:
        await nc.close()


async def with_stack(
    stack: LocalServers, journal: Path, scenario: Callable[[Kube, Services], Awaitable[None]]
) -> tuple[Services, WriteCounter]:
    services = Services(stack, stack.workdir / "logs", env={"AIM_RECONCILE_JOURNAL": str(journal)})
    for name, replica in (("watcher", 0), ("status", 0), ("deployer", 0), ("deployer", 1)):
        services.start(name, replica)
    kube = Kube(await connect(stack.kubeconfig), field_manager="aim-tests")
    counter = WriteCounter(kube)
    try:
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        nc = await connect_as(stack.nats)
        try:
            await consumers_ready(nc.jetstream(), services)
        finally:
            await nc.close()
        await counter.start()
        await scenario(kube, services)

        async def all_pending() -> bool:
            return await pending(kube) == COUNT

        # Generous: a killed watcher's leadership must expire (10 s) before the standby leads, and
        # this test shares two cores with a second control plane and seven service processes.
        await eventually(all_pending, timeout=240, interval=0.2, what=f"all {COUNT} AIMServices settled")
        await drained(stack)
        services.assert_alive()
    finally:
        if counter.task:
            await counter.stop()
        await kube.close()
        services.stop_all()
    return services, counter


def assert_written_once(counter: WriteCounter) -> None:
    missing = sorted(f"svc-{i:03d}" for i in range(COUNT) if counter.writes[f"svc-{i:03d}"] == 0)
    repeated = {name: n for name, n in counter.writes.items() if n > 1}
    assert not missing and not repeated, (
        f"status never written: {missing[:10]}; written more than once: {repeated}"
    )


def journal_runs(path: Path) -> dict[str, list[tuple[int, int, int]]]:
    runs: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        runs[rec["key"]].append((rec["start"], rec["end"], rec["pid"]))
    return runs


def overlapping(runs: list[tuple[int, int, int]]) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    ordered = sorted(runs)
    return [(a, b) for a, b in itertools.pairwise(ordered) if b[0] < a[1]]


async def test_two_replicas_share_200_objects(private_stack: LocalServers, tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"

    async def rollout(kube: Kube, services: Services) -> None:
        await create(kube, range(COUNT))

    services, counter = await with_stack(private_stack, journal, rollout)

    runs = journal_runs(journal)
    keys = {subjects.object_key(AIMSVC, NS, f"svc-{i:03d}") for i in range(COUNT)}
    assert keys <= set(runs), f"never reconciled: {sorted(keys - set(runs))[:5]}"
    pids = {pid for r in runs.values() for _, _, pid in r}
    deployer_pids = {services.procs["deployer"].pid, services.procs["deployer-1"].pid}
    assert pids == deployer_pids, "both replicas took part"
    assert {k: v for k in keys if (v := overlapping(runs[k]))} == {}
    assert_written_once(counter)


async def test_kill_9_each_part_and_restart_nats_mid_rollout(
    private_stack: LocalServers, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.jsonl"
    batches = [range(i, i + COUNT // 4) for i in range(0, COUNT, COUNT // 4)]

    async def rollout(kube: Kube, services: Services) -> None:
        disruptions: list[Callable[[], None]] = [
            lambda: (services.kill("watcher"), services.restart("watcher")),  # type: ignore[func-returns-value]
            lambda: (services.kill("status"), services.restart("status")),  # type: ignore[func-returns-value]
            lambda: (services.kill("deployer-1"), services.restart("deployer-1")),  # type: ignore[func-returns-value]
            private_stack.nats.restart,
        ]
        for batch, disrupt in zip(batches, disruptions, strict=True):
            await create(kube, batch)
            disrupt()

    services, counter = await with_stack(private_stack, journal, rollout)

    assert await mirrored(private_stack) == COUNT
    assert_written_once(counter)
    # a NATS restart is a line or two in each service's log, never a traceback per reconnect attempt
    logs = {label: proc.log_path.read_text(errors="replace") for label, proc in services.procs.items()}
    assert {label for label, text in logs.items() if "Traceback" in text} == set()
    # the one process never restarted (the others may still be starting when NATS goes down) saw the
    # outage as one line each way
    assert logs["deployer"].count("NATS disconnected") == 1, logs["deployer"]
    assert logs["deployer"].count("NATS reconnected") == 1, logs["deployer"]
    assert {k: v for k, r in journal_runs(journal).items() if (v := overlapping(r))} == {}
