"""Status never goes backwards (issue: stopping the status service brought old status back).

A replica that stops holding a report it has not acknowledged lets the server redeliver it after
the ack wait, by which time newer reports from the same source may have been written. Here a
stand-in for that dying replica takes a report from the status service's own durable consumer and
holds it; the real status service meanwhile writes the newer report; then the held one is handed
back and must change nothing. Real API server and nats-server of the test's own, the status
service as a process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.testing.plugin import LocalServers, connect_as
from aim_status.reports import CONSUMER
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ConditionReport, ObjectRef, StatusReport
from aimcore.api.bus.topology import ensure_consumer
from aimcore.api.kinds import by_kind
from aimcore.runtime.kube import Kube, connect
from tests.helpers import condition, eventually, manifest, status_of
from tests.integration.conftest import Services

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
    await ensure_consumer(js, CONSUMER)
    try:
        yield js
    finally:
        await nc.close()


def report(
    obj: dict[str, Any], reason: str, status: str, generation: int | None = None, source_type: str = "Image"
) -> StatusReport:
    meta = obj["metadata"]
    return StatusReport(
        object=ObjectRef.of(MODEL, meta["namespace"], meta["name"]),
        uid=meta["uid"],
        source="discovery",
        observed_generation=generation or meta["generation"],
        based_on=meta["resourceVersion"],
        conditions=(ConditionReport(type="ImageReady", status=status, reason=reason, message=reason),),
        fields={"sourceType": source_type},
    )


async def publish(js: JetStreamContext, obj: dict[str, Any], rep: StatusReport) -> None:
    subject = subjects.status_subject(
        rep.source, MODEL, obj["metadata"]["namespace"], obj["metadata"]["name"]
    )
    await js.publish(subject, rep.encode(), headers={"Nats-Msg-Id": rep.msg_id})


async def drained(js: JetStreamContext) -> None:
    async def done() -> bool:
        info = await js.consumer_info(topology.STATUS_STREAM, CONSUMER.durable)
        return info.num_pending == 0 and info.num_ack_pending == 0

    await eventually(done, timeout=30, what="the status service to acknowledge every report")


async def test_a_report_handed_back_late_does_not_overwrite_a_newer_one(
    private_stack: LocalServers, kube: Kube, bus: JetStreamContext
) -> None:
    obj = await kube.create(MODEL, manifest(MODEL, "ordered", NS, {"image": "example.com/m:1"}), NS)
    older, newer = report(obj, "Older", "False", source_type="Custom"), report(obj, "Newer", "True")
    await publish(bus, obj, older)
    await publish(bus, obj, newer)

    # a replica that is going away took the older report and holds it
    dying = await bus.pull_subscribe_bind(CONSUMER.durable, stream=topology.STATUS_STREAM)
    (held,) = await dying.fetch(1, timeout=10)
    assert StatusReport.model_validate_json(held.data).conditions[0].reason == "Older"

    services = Services(private_stack, private_stack.workdir / "logs")
    services.start("status")
    try:
        written = await status_of(
            kube, MODEL, NS, "ordered", lambda s: condition(s, "ImageReady").get("reason") == "Newer", "Newer"
        )
        # the held report comes back now (as after an ack wait) and must change nothing
        await held.nak()
        await drained(bus)
        after = await kube.get(MODEL, NS, "ordered")
        assert after is not None
        assert condition(after["status"], "ImageReady")["reason"] == "Newer"
        assert after["status"]["sourceType"] == "Image"
        assert after["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
        services.assert_alive()
    finally:
        services.stop_all()


async def test_a_late_report_keeps_what_no_newer_report_says(
    private_stack: LocalServers, kube: Kube, bus: JetStreamContext
) -> None:
    """The newer report from the same source sets only the condition: the older one's field, which
    nothing newer says, still lands."""
    obj = await kube.create(MODEL, manifest(MODEL, "partial", NS, {"image": "example.com/m:1"}), NS)
    older = report(obj, "Older", "False", source_type="Custom")
    newer = report(obj, "Newer", "True").model_copy(update={"fields": {}})
    await publish(bus, obj, older)
    await publish(bus, obj, newer)
    dying = await bus.pull_subscribe_bind(CONSUMER.durable, stream=topology.STATUS_STREAM)
    (held,) = await dying.fetch(1, timeout=10)

    services = Services(private_stack, private_stack.workdir / "logs")
    services.start("status")
    try:
        await status_of(
            kube, MODEL, NS, "partial", lambda s: condition(s, "ImageReady").get("reason") == "Newer", "Newer"
        )
        await held.nak()
        await drained(bus)
        after = await kube.get(MODEL, NS, "partial")
        assert after is not None
        assert condition(after["status"], "ImageReady")["reason"] == "Newer"
        assert after["status"]["sourceType"] == "Custom"
    finally:
        services.stop_all()


async def test_observed_generation_never_goes_backwards(
    private_stack: LocalServers, kube: Kube, bus: JetStreamContext
) -> None:
    obj = await kube.create(MODEL, manifest(MODEL, "generations", NS, {"image": "example.com/m:1"}), NS)
    obj = await kube.patch(MODEL, NS, "generations", {"spec": {"image": "example.com/m:2"}})
    assert obj["metadata"]["generation"] == 2
    services = Services(private_stack, private_stack.workdir / "logs")
    services.start("status")
    try:
        await publish(bus, obj, report(obj, "SecondSpec", "True", generation=2))
        await status_of(kube, MODEL, NS, "generations", lambda s: s.get("observedGeneration") == 2, "gen 2")
        # a report computed from the first spec, published late (not a redelivery: the stream has
        # nothing newer from its source to compare with) is older than what the status says
        await publish(bus, obj, report(obj, "FirstSpec", "False", generation=1))
        await drained(bus)
        after = await kube.get(MODEL, NS, "generations")
        assert after is not None
        assert after["status"]["observedGeneration"] == 2
        assert condition(after["status"], "ImageReady")["reason"] == "SecondSpec"
    finally:
        services.stop_all()


async def test_progress_published_after_the_outcome_does_not_undo_it(
    private_stack: LocalServers, kube: Kube, bus: JetStreamContext
) -> None:
    """A download's last progress report can reach the stream after the cache's outcome (a Job's
    offer relayed late): the outcome stands."""
    cache_ref = by_kind("aim.eai.amd.com", "AIMModelCache")
    obj = await kube.create(cache_ref, manifest(cache_ref, "done", NS, {"sourceUri": "hf://a/b"}), NS)
    meta = obj["metadata"]

    def cache_report(status: str, reason: str, percentage: int, *, progress: bool) -> StatusReport:
        return StatusReport(
            object=ObjectRef.of(cache_ref, NS, "done"),
            uid=meta["uid"],
            source="cache",
            observed_generation=meta["generation"],
            conditions=(ConditionReport(type="DownloadReady", status=status, reason=reason),),
            fields={"progress": {"percentage": percentage}},
            progress=progress,
        )

    subject = subjects.status_subject("cache", cache_ref, NS, "done")
    for rep in (
        cache_report("True", "Verified", 100, progress=False),
        cache_report("False", "Verifying", 99, progress=True),
    ):
        await bus.publish(subject, rep.encode(), headers={"Nats-Msg-Id": rep.msg_id})
    services = Services(private_stack, private_stack.workdir / "logs")
    services.start("status", env={"AIM_STATUS_COALESCE_SECONDS": "0"})
    try:
        await drained(bus)
        after = await kube.get(cache_ref, NS, "done")
        assert after is not None
        assert condition(after["status"], "DownloadReady")["reason"] == "Verified"
        assert after["status"]["progress"] == {"percentage": 100}
    finally:
        services.stop_all()
