"""The clustered-bus tier: a real three-node nats-server cluster (processes on loopback, cluster
routes on free ports, a store directory each; :class:`aim_dev.local.natscluster.NatsCluster`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aim_dev.local.natscluster import NatsCluster
from aim_dev.testing.plugin import assert_no_violations
from tests.helpers import eventually


@pytest.fixture
def nats_cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    """Three nodes of the test's own, their JetStream meta group formed."""
    cluster = NatsCluster(tmp_path / "nats-cluster")
    try:
        yield cluster.start()
        for node in cluster.nodes:
            assert_no_violations(node)
    finally:
        cluster.stop()


async def meta_leader(cluster: NatsCluster, timeout: float = 60.0) -> str:
    """Wait until the cluster has a JetStream meta leader; answer its server name."""

    async def elected() -> str | None:
        return cluster.meta_leader()

    return await eventually(elected, timeout=timeout, interval=0.2, what="a JetStream meta leader")
