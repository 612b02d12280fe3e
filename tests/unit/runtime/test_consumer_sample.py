"""What one consumer-info answer says about a consumer's raft group: on a single server the group is
that server; in a cluster the leader counts as current, a follower only when it is caught up and
online (what the AIMBusReplicaLost alert compares)."""

from __future__ import annotations

from typing import Any

from nats.js.api import ConsumerInfo

from aimcore.runtime.metrics import ConsumerSample


def info(cluster: dict[str, Any] | None) -> ConsumerInfo:
    answer: dict[str, Any] = {
        "name": "aim-status",
        "stream_name": "AIM_STATUS",
        "config": {"durable_name": "aim-status"},
        "created": "2026-11-26T22:00:00Z",
        "num_pending": 7,
        "num_ack_pending": 2,
    }
    if cluster is not None:
        answer["cluster"] = cluster
    return ConsumerInfo.from_response(answer)


def test_a_single_server_is_one_current_replica() -> None:
    assert ConsumerSample.of(info({"leader": "nats-0"})) == ConsumerSample(7, 2, 1, 1)
    assert ConsumerSample.of(info(None)) == ConsumerSample(7, 2, 1, 1)


def test_a_healthy_cluster_has_every_replica_current() -> None:
    cluster = {
        "name": "aim",
        "leader": "nats-0",
        "replicas": [{"name": "nats-1", "current": True, "active": 10}, {"name": "nats-2", "current": True}],
    }
    assert ConsumerSample.of(info(cluster)) == ConsumerSample(7, 2, 3, 3)


def test_an_offline_or_lagging_follower_is_not_current() -> None:
    cluster = {
        "name": "aim",
        "leader": "nats-0",
        "replicas": [
            {"name": "nats-1", "current": False, "offline": True, "active": 9_000_000_000},
            {"name": "nats-2", "current": False, "lag": 40},
        ],
    }
    assert ConsumerSample.of(info(cluster)) == ConsumerSample(7, 2, 3, 1)


def test_no_leader_is_not_current() -> None:
    cluster = {"name": "aim", "replicas": [{"name": "nats-1", "current": True}]}
    assert ConsumerSample.of(info(cluster)) == ConsumerSample(7, 2, 2, 1)
