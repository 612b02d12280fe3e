"""The status writer's first read comes from the NATS object mirror (one API request per write
instead of two under a burst); these tests prove a stale mirror can cost a retry but never a lost
or wrong write: against a real API server and nats-server of the test's own, with no services
running (so no watcher refreshes the mirror and no controller writes the object behind the test's
back, and the conflicts counted are exactly the stale mirror's)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.testing.plugin import LocalServers, connect_as
from aim_status.ordering import Sequenced
from aim_status.writer import StatusWriter
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ConditionReport, ObjectRef, StatusReport
from aimcore.api.kinds import by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import condition, manifest

MODEL = by_kind("aim.eai.amd.com", "AIMModel")
NS = "default"


@pytest.fixture
async def kube(private_stack: LocalServers) -> AsyncIterator[Kube]:
    client = Kube(await connect(str(private_stack.kubeconfig)), field_manager="aim-tests")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def bus(private_stack: LocalServers) -> AsyncIterator[JetStreamContext]:
    nc = await connect_as(private_stack.nats)
    js = nc.jetstream()
    await topology.ensure_topology(js)
    try:
        yield js
    finally:
        await nc.close()


def report(obj: dict[str, Any], status: str) -> Sequenced:
    """A report as the writer takes it (not from the stream: no order to check)."""
    meta = obj["metadata"]
    return Sequenced(
        "",
        0,
        StatusReport(
            object=ObjectRef.of(MODEL, meta["namespace"], meta["name"]),
            uid=meta["uid"],
            source="tests",
            conditions=(ConditionReport(type="ImageReady", status=status, reason="Checked", message=status),),
        ),
    )


async def put(js: JetStreamContext, obj: dict[str, Any]) -> None:
    kv = await topology.objects_bucket(js)
    meta = obj["metadata"]
    await kv.put(subjects.object_key(MODEL, meta["namespace"], meta["name"]), json.dumps(obj).encode())


async def live_condition(kube: Kube, obj: dict[str, Any]) -> dict[str, Any]:
    live = await kube.get(MODEL, obj["metadata"]["namespace"], obj["metadata"]["name"])
    assert live is not None
    return condition(live.get("status") or {}, "ImageReady")


async def test_a_current_mirror_saves_the_read(kube: Kube, bus: JetStreamContext) -> None:
    created = await kube.create(MODEL, manifest(MODEL, "fresh", NS, {"image": "ghcr.io/a/b:1"}), NS)
    await put(bus, created)
    writer = StatusWriter(kube, mirror=await topology.objects_bucket(bus))
    assert await writer.apply(report(created, "True"))
    assert (await live_condition(kube, created))["status"] == "True"
    assert (writer.mirror_reads, writer.conflicts, writer.writes) == (1, 0, 1)


async def test_a_stale_mirror_costs_a_retry_never_a_write(kube: Kube, bus: JetStreamContext) -> None:
    created = await kube.create(MODEL, manifest(MODEL, "stale", NS, {"image": "ghcr.io/a/b:1"}), NS)
    writer = StatusWriter(kube, mirror=await topology.objects_bucket(bus))
    await put(bus, created)  # the mirror keeps this version from now on
    assert await writer.apply(report(created, "True"))

    # the mirror's (older) copy has no condition: by it, False is a change; the conditional patch
    # on its resourceVersion is refused, and the write is made on the API server's state
    assert await writer.apply(report(created, "False"))
    assert (await live_condition(kube, created))["status"] == "False"
    assert writer.conflicts == 1

    # by the stale copy True would be a change too; by the live object it is one as well
    assert await writer.apply(report(created, "True"))
    assert (await live_condition(kube, created))["status"] == "True"

    # a mirror that shows an older version in which the condition already had the reported value
    # must not turn a needed write into nothing
    was_true = await kube.get(MODEL, NS, "stale")
    assert was_true is not None
    assert await writer.apply(report(created, "False"))
    await put(bus, was_true)
    writes = writer.writes
    assert await writer.apply(report(created, "True"))
    assert (await live_condition(kube, created))["status"] == "True"
    assert writer.writes == writes + 1

    # and a current mirror's "nothing to do" is confirmed, not written
    current = await kube.get(MODEL, NS, "stale")
    assert current is not None
    await put(bus, current)
    noops = writer.noops
    assert not await writer.apply(report(created, "True"))
    assert (writer.writes, writer.noops) == (writes + 1, noops + 1)
