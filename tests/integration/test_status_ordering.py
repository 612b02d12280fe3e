"""Status never goes backwards (issue: stopping the status service brought old status back).

A replica that stops holding a report it has not acknowledged lets the server redeliver it after
the ack wait, by which time newer reports from the same source may have been written. Here a
stand-in for that dying replica takes a report from the status service's own durable consumer and
holds it; the real status service meanwhile writes the newer report; then the held one is handed
back and must change nothing. Real API server and nats-server of the test's own, the status
service as a process."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.testing.plugin import LocalServers, connect_as
from aim_status.ordering import Ordering, Sequenced
from aim_status.reports import CONSUMER
from aim_status.writer import StatusWriter
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ConditionReport, ObjectRef, StatusReport
from aimcore.api.bus.topology import ensure_consumer
from aimcore.api.errors import TransientError
from aimcore.api.kinds import by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import Following, condition, eventually, manifest, status_of
from tests.integration.conftest import Services, health_get

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


async def test_a_later_report_from_an_older_generation_does_not_supersede_a_newer_one(
    private_stack: LocalServers, kube: Kube, bus: JetStreamContext
) -> None:
    """Two replicas of a source, one whose copy of the object lags: the one that saw the second
    spec reports first, the lagging one (first spec) after it. Stream order must not let the older
    generation win: seen in tests/bus_cluster, where a replica's mirror watch stalled by a killed
    NATS node left two AIMServices at ``observedGeneration`` 1 until the resync."""
    obj = await kube.create(MODEL, manifest(MODEL, "lagging", NS, {"image": "example.com/m:1"}), NS)
    obj = await kube.patch(MODEL, NS, "lagging", {"spec": {"image": "example.com/m:2"}})
    assert obj["metadata"]["generation"] == 2
    await publish(bus, obj, report(obj, "SecondSpec", "True", generation=2))
    await publish(bus, obj, report(obj, "FirstSpec", "False", generation=1, source_type="Custom"))
    services = Services(private_stack, private_stack.workdir / "logs")
    services.start("status")
    try:
        await drained(bus)
        after = await kube.get(MODEL, NS, "lagging")
        assert after is not None
        assert after["status"].get("observedGeneration") == 2, after["status"]
        assert condition(after["status"], "ImageReady")["reason"] == "SecondSpec"
        assert after["status"]["sourceType"] == "Image"
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


async def test_a_conflict_retry_checks_the_order_again(
    private_stack: LocalServers, kube: Kube, bus: JetStreamContext
) -> None:
    """Two status replicas: one writes the newer report while the other holds the older one, read
    from a copy of the object that the first write made stale. The other's patch meets a 409; its
    retry must see that the stream holds a newer report from the same source and write nothing."""
    obj = await kube.create(MODEL, manifest(MODEL, "raced", NS, {"image": "example.com/m:1"}), NS)
    older, newer = report(obj, "Older", "False", source_type="Custom"), report(obj, "Newer", "True")
    subject = subjects.status_subject("discovery", MODEL, NS, "raced")
    older_seq = (await bus.publish(subject, older.encode())).seq
    newer_seq = (await bus.publish(subject, newer.encode())).seq
    kv = await topology.objects_bucket(bus)
    await kv.put(subjects.object_key(MODEL, NS, "raced"), json.dumps(obj).encode())  # soon stale

    first = StatusWriter(kube)  # the replica that got the newer report
    assert await first.apply(Sequenced(subject, newer_seq, newer))
    written = await kube.get(MODEL, NS, "raced")
    assert written is not None

    ordering = Ordering(bus, topology.STATUS_STREAM)
    second = StatusWriter(kube, mirror=kv, ordering=ordering)
    assert not await second.apply(Sequenced(subject, older_seq, older))
    assert second.conflicts == 1  # the stale copy made it retry
    assert ordering.superseded == 1  # and the retry found the newer report
    after = await kube.get(MODEL, NS, "raced")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
    assert condition(after["status"], "ImageReady")["reason"] == "Newer"

    # the same race without the order checked on retry puts the older report back
    unordered = StatusWriter(kube, mirror=kv)
    assert await unordered.apply(Sequenced(subject, older_seq, older))
    assert unordered.conflicts == 1
    regressed = await kube.get(MODEL, NS, "raced")
    assert regressed is not None
    assert condition(regressed["status"], "ImageReady")["reason"] == "Older"


async def test_an_ordering_read_that_fails_is_a_retry_not_a_pass(private_stack: LocalServers) -> None:
    nc = await connect_as(private_stack.nats)
    js = nc.jetstream()
    await topology.ensure_topology(js)
    await nc.close()  # the stream cannot be read now
    rep = StatusReport(object=ObjectRef.of(MODEL, NS, "x"), source="discovery")
    with pytest.raises(TransientError, match="cannot check the order"):
        await Ordering(js, topology.STATUS_STREAM).latest_part("aim.status.discovery.x", 5, rep)
    # a report that is not from the stream has no order to check
    assert await Ordering(js, topology.STATUS_STREAM).latest_part("", 0, rep) is rep


class History(Following):
    """Every version of the test's AIMModels the API server hands a watch, in order: what each
    object's status looked like at every write, not only at the end."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube, MODEL, NS)
        self.seen_steps: dict[str, list[tuple[int, int]]] = defaultdict(list)  # name -> (generation, step)

    def seen(self, event: dict[str, Any]) -> None:
        obj = event["object"]
        status = obj.get("status") or {}
        message = condition(status, "ImageReady").get("message", "")
        if event["type"] == "MODIFIED" and message.startswith("step "):
            self.seen_steps[obj["metadata"]["name"]].append(
                (int(status.get("observedGeneration", 0)), int(message.removeprefix("step ")))
            )


async def handled_by(services: Services, label: str) -> float:
    """The reports a replica has handled (0 while it does not answer yet)."""
    status, text = await health_get(services, label, "/metrics")
    if status != 200:
        return 0.0
    prefix = 'aim_consumer_handled_total{consumer="aim-status"} '
    return sum(float(line.removeprefix(prefix)) for line in text.splitlines() if line.startswith(prefix))


async def test_two_status_replicas_never_let_an_older_report_win(
    private_stack: LocalServers, kube: Kube, bus: JetStreamContext
) -> None:
    """A burst of reports for 70 objects (more than one replica fetches at once) through two status
    replicas, one killed (SIGKILL) half-way; every report is a new step, every other step also a new
    generation. Watched at every write, no object's observedGeneration or step ever goes backwards,
    and every object ends at the last."""
    names = [f"burst-{i:02d}" for i in range(70)]
    objs = {
        n: await kube.create(MODEL, manifest(MODEL, n, NS, {"image": "example.com/m:0"}), NS) for n in names
    }
    history = History(kube)
    await history.start()
    services = Services(private_stack, private_stack.workdir / "logs")
    services.start("status", 0)
    services.start("status", 1)
    steps = 8

    async def step(name: str, k: int) -> None:
        if k % 2 == 0:  # a new spec: the report that follows is about the new generation
            objs[name] = await kube.patch(MODEL, NS, name, {"spec": {"image": f"example.com/m:{k}"}})
        obj = objs[name]
        rep = report(obj, f"Step{k}", "True").model_copy(
            update={
                "conditions": (
                    ConditionReport(type="ImageReady", status="True", reason="Checked", message=f"step {k}"),
                )
            }
        )
        await publish(bus, obj, rep)

    try:

        async def both_ready() -> bool:
            return all([(await health_get(services, r, "/readyz"))[0] == 200 for r in ("status", "status-1")])

        await eventually(both_ready, timeout=60, interval=0.2, what="both status replicas bound")
        killed_at = 0
        for k in range(1, steps + 1):
            await asyncio.gather(*(step(n, k) for n in names))
            # one replica dies half-way, once both have taken reports (which one JetStream hands a
            # burst to is its choice: under load one replica may take the first steps alone)
            if not killed_at and k >= steps // 2 and await _all_positive(services, ("status", "status-1")):
                services.kill("status-1")
                killed_at = k
        assert 0 < killed_at < steps, "the two replicas never both took reports before the last step"

        async def converged() -> bool:
            for n in names:
                live = await kube.get(MODEL, NS, n)
                assert live is not None
                status = live.get("status") or {}
                if condition(status, "ImageReady").get("message") != f"step {steps}":
                    return False
                if status.get("observedGeneration") != live["metadata"]["generation"]:
                    return False
            return True

        await eventually(converged, timeout=90, interval=0.5, what="every object at the last step")
        await drained(bus)
        history.assert_following()
    finally:
        await history.stop()
        services.stop_all()
    backwards = {
        n: seen
        for n, seen in history.seen_steps.items()
        if any(b[0] < a[0] or b[1] < a[1] for a, b in itertools.pairwise(seen))
    }
    assert backwards == {}
    assert set(history.seen_steps) == set(names)
    # the watch saw objects move through writes before their last (older reports already
    # superseded in the stream when taken are never written at all)
    assert sum(len(s) for s in history.seen_steps.values()) > len(names)


async def _all_positive(services: Services, labels: tuple[str, ...]) -> bool:
    for label in labels:
        if await handled_by(services, label) <= 0:
            return False
    return True
