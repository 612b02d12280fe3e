"""The topology on a three-node cluster: every stream and bucket is declared at the replica count
the services are given (``AIM_NATS_REPLICAS``), and one declared earlier at one replica (a bus that
outgrew its single node) is raised to three in place, its data kept."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aim_dev.local.natscluster import NatsCluster
from aimcore.api.bus import topology
from aimcore.runtime import connect_bus
from tests.bus_cluster.conftest import meta_leader
from tests.helpers import eventually

NAMES: list[str] = [
    *(str(c.name) for c in topology.stream_configs()),
    *(f"KV_{b.bucket}" for b in topology.bucket_configs()),
]


async def _replicas(js: object, names: list[str]) -> dict[str, int]:
    return {name: (await js.stream_info(name)).config.num_replicas or 1 for name in names}  # type: ignore[attr-defined]


async def _none(probe: Callable[[], Awaitable[list[str]]]) -> bool:
    return not await probe()


async def test_a_single_replica_topology_is_raised_to_the_setting(nats_cluster: NatsCluster) -> None:
    await meta_leader(nats_cluster)
    nc = await connect_bus(nats_cluster.client(), "test-admin", forever=False, connect_timeout=5)
    try:
        js = nc.jetstream()
        await topology.ensure_topology(js)  # as a single-node default would declare it
        assert await _replicas(js, NAMES) == dict.fromkeys(NAMES, 1)
        kv = await topology.objects_bucket(js)
        await kv.put("kept", b"before")

        await topology.ensure_topology(js, replicas=3)

        assert await _replicas(js, NAMES) == dict.fromkeys(NAMES, 3)
        assert (await kv.get("kept")).value == b"before"

        async def placed() -> list[str]:
            """Streams not yet led and copied, current, on three distinct servers (the copies are
            made after the update answers)."""
            behind = []
            for name in NAMES:
                cluster = (await js.stream_info(name)).cluster
                peers = [r for r in (cluster.replicas if cluster else None) or [] if r.current]
                servers = {cluster.leader, *(r.name for r in peers)} if cluster else set()
                if cluster is None or not cluster.leader or len(servers) < 3:
                    behind.append(name)
            return behind

        assert await eventually(lambda: _none(placed), timeout=30, what="three copies of each") is True
    finally:
        await nc.close()
