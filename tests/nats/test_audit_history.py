"""Audit replay against a real nats-server: server-side filters by kind, namespace, name, source
and time select exactly the right records in time order; follow mode; empty history; replay
leaves no consumers behind.

Each test gets a private server (``nats_factory``) so the streams hold only what it published."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aim_dev.local.natsserver import NatsServer
from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import (
    ChangeEvent,
    ChangeType,
    ConditionReport,
    Decision,
    ObjectRef,
    StatusReport,
)
from aimcore.api.kinds import KindRef
from aimctl.audit.history import History, Record
from aimctl.audit.query import Query, resolve_kind

SVC = resolve_kind("aimsvc")
MODEL = resolve_kind("aimmodel")
LEGACY_SVC = resolve_kind("aimservices.aim.silogen.ai")
CLUSTER_MODEL = resolve_kind("aimclustermodel")


@pytest.fixture
async def private_js(nats_factory: Callable[[], NatsServer]) -> AsyncIterator[JetStreamContext]:
    server = nats_factory()
    nc: NatsClient = await connect_as(server)
    js = nc.jetstream()
    await topology.ensure_topology(js)
    try:
        yield js
    finally:
        await nc.close()


@dataclass(frozen=True)
class Sent:
    marker: str
    type: str
    ref: KindRef
    namespace: str | None
    name: str
    source: str


class Publisher:
    """Publishes records and remembers them, in publish (= stored time) order."""

    def __init__(self, js: JetStreamContext) -> None:
        self.js = js
        self.sent: list[Sent] = []

    async def change(self, ref: KindRef, ns: str | None, name: str) -> Sent:
        marker = f"rv{len(self.sent)}"
        event = ChangeEvent(
            object=ObjectRef.of(ref, ns, name),
            uid=f"uid-{name}",
            resource_version=marker,
            generation=1,
            change=ChangeType.MODIFIED,
        )
        await self.js.publish(subjects.event_subject(ref, ns, name), event.encode())
        return self._remember(Sent(marker, "change", ref, ns, name, "watcher"))

    async def status(self, ref: KindRef, ns: str | None, name: str, source: str = "deployer") -> Sent:
        marker = f"st{len(self.sent)}"
        report = StatusReport(
            object=ObjectRef.of(ref, ns, name),
            source=source,
            conditions=(ConditionReport(type="Ready", status="False", reason="Pending", message=marker),),
        )
        await self.js.publish(subjects.status_subject(source, ref, ns, name), report.encode())
        return self._remember(Sent(marker, "status", ref, ns, name, source))

    async def decision(self, ref: KindRef, ns: str | None, name: str, source: str = "deployer") -> Sent:
        marker = f"dc{len(self.sent)}"
        decision = Decision(
            object=ObjectRef.of(ref, ns, name),
            source=source,
            action="select-template",
            reason="BestMatch",
            message=marker,
        )
        await self.js.publish(subjects.decision_subject(source, ref, ns, name), decision.encode())
        return self._remember(Sent(marker, "decision", ref, ns, name, source))

    def _remember(self, sent: Sent) -> Sent:
        self.sent.append(sent)
        return sent


def marker(record: Record) -> str:
    if record.change is not None:
        return record.change.resource_version
    if record.status is not None:
        return record.status.conditions[0].message
    assert record.decision is not None
    return record.decision.message


async def replay(js: JetStreamContext, query: Query, **kwargs: Any) -> list[Record]:
    async with asyncio.timeout(30):
        async with History(js, query, **kwargs) as history:
            return [r async for r in history.records()]


async def scenario(js: JetStreamContext) -> Publisher:
    p = Publisher(js)
    await p.change(SVC, "team-a", "llama.3")
    await p.status(SVC, "team-a", "llama.3")
    await p.decision(SVC, "team-a", "llama.3")
    await p.change(SVC, "team-b", "qwen")
    await p.change(MODEL, "team-a", "llama.3")
    await p.decision(SVC, "team-a", "llama", source="status")  # a prefix of the dotted name
    await p.change(LEGACY_SVC, "team-a", "llama.3")
    await p.status(SVC, "team-a", "llama.3", source="status")
    await p.change(CLUSTER_MODEL, None, "big.model")
    await p.decision(CLUSTER_MODEL, None, "big.model", source="discovery")
    await p.status(SVC, "team-b", "qwen")
    await p.decision(SVC, "team-a", "llama.3", source="status")
    return p


def expected(p: Publisher, pred: Callable[[Sent], bool]) -> list[str]:
    return [s.marker for s in p.sent if pred(s)]


async def test_filters_select_exactly_the_right_records_in_time_order(private_js: JetStreamContext) -> None:
    js = private_js
    p = await scenario(js)

    everything = await replay(js, Query())
    assert [marker(r) for r in everything] == expected(p, lambda s: True)
    times = [r.time for r in everything]
    assert times == sorted(times)
    assert [r.type for r in everything] == [s.type for s in p.sent]

    by_kind = await replay(js, Query(kind=SVC))
    assert [marker(r) for r in by_kind] == expected(p, lambda s: s.ref == SVC)

    by_ns = await replay(js, Query(namespace="team-a"))
    assert [marker(r) for r in by_ns] == expected(p, lambda s: s.namespace == "team-a")

    one = await replay(js, Query(kind=SVC, namespace="team-a", name="llama.3"))
    assert [marker(r) for r in one] == expected(
        p, lambda s: s.ref == SVC and s.namespace == "team-a" and s.name == "llama.3"
    )
    assert {(r.kind, r.namespace, r.name, r.group) for r in one} == {
        ("AIMService", "team-a", "llama.3", "aim.eai.amd.com")
    }

    by_name = await replay(js, Query(name="llama.3"))
    assert [marker(r) for r in by_name] == expected(p, lambda s: s.name == "llama.3")

    legacy = await replay(js, Query(kind=LEGACY_SVC))
    assert [marker(r) for r in legacy] == expected(p, lambda s: s.ref == LEGACY_SVC)

    # A cluster-scoped kind ignores the namespace, as kubectl does.
    cluster = await replay(js, Query(kind=CLUSTER_MODEL, namespace="team-a"))
    assert [marker(r) for r in cluster] == expected(p, lambda s: s.ref == CLUSTER_MODEL)

    decisions = await replay(js, Query(types=frozenset({"decision"}), source="status"))
    assert [marker(r) for r in decisions] == expected(
        p, lambda s: s.type == "decision" and s.source == "status"
    )

    by_source = await replay(js, Query(source="deployer"))
    assert [marker(r) for r in by_source] == expected(p, lambda s: s.source == "deployer")

    watcher = await replay(js, Query(source="watcher", namespace="team-b"))
    assert [marker(r) for r in watcher] == expected(
        p, lambda s: s.type == "change" and s.namespace == "team-b"
    )

    tail = await replay(js, Query(kind=SVC, tail=2))
    assert [marker(r) for r in tail] == expected(p, lambda s: s.ref == SVC)[-2:]

    limited = await replay(js, Query(limit=3))
    assert [marker(r) for r in limited] == expected(p, lambda s: True)[:3]


async def test_time_range_uses_the_stored_times(private_js: JetStreamContext) -> None:
    js = private_js
    p = await scenario(js)
    everything = await replay(js, Query())
    all_markers = expected(p, lambda s: True)
    since, until = everything[3].time, everything[8].time

    assert [marker(r) for r in await replay(js, Query(since=since))] == all_markers[3:]
    assert [marker(r) for r in await replay(js, Query(until=until))] == all_markers[:9]
    window = await replay(js, Query(since=since, until=until))
    assert [marker(r) for r in window] == all_markers[3:9]
    narrowed = await replay(js, Query(kind=SVC, since=since, until=until))
    assert [marker(r) for r in narrowed] == [s.marker for s in p.sent[3:9] if s.ref == SVC]
    later = everything[-1].time.replace(year=everything[-1].time.year + 1)
    assert await replay(js, Query(since=later)) == []


async def test_long_history_is_read_in_batches(private_js: JetStreamContext) -> None:
    js = private_js
    p = Publisher(js)
    for i in range(25):
        await p.change(SVC, "team-a", f"svc-{i % 3}")
        await p.decision(SVC, "team-a", f"svc-{i % 3}")
    got = await replay(js, Query(name="svc-1"), batch=4)
    assert [marker(r) for r in got] == expected(p, lambda s: s.name == "svc-1")


async def test_replay_survives_its_consumer_being_removed(private_js: JetStreamContext) -> None:
    """The server removes an idle ephemeral consumer (a reader paused by a slow terminal); the
    reader re-creates it where it left off, repeating and losing nothing."""
    js = private_js
    p = Publisher(js)
    for i in range(10):
        await p.change(SVC, "team-a", f"obj-{i}")
    got: list[Record] = []
    async with asyncio.timeout(60):
        async with History(js, Query(types=frozenset({"change"})), batch=3) as history:
            async for record in history.records():
                got.append(record)
                if len(got) == 4:
                    for info in await js.consumers_info(topology.EVENTS_STREAM):
                        await js.delete_consumer(topology.EVENTS_STREAM, info.name)
    assert [marker(r) for r in got] == expected(p, lambda s: True)


async def test_follow_yields_records_published_after_the_replay(private_js: JetStreamContext) -> None:
    js = private_js
    p = Publisher(js)
    await p.change(SVC, "team-a", "live.one")
    await p.decision(SVC, "team-a", "other")  # filtered out
    got: list[Record] = []
    async with asyncio.timeout(30):
        async with History(js, Query(name="live.one", follow=True), poll=0.5) as history:
            records = history.records()
            got.append(await anext(records))
            waiter = asyncio.ensure_future(anext(records))
            await history.caught_up.wait()
            await p.decision(SVC, "team-b", "live.one", source="cache")
            await p.status(SVC, "team-a", "live.one")
            got.append(await waiter)
            got.append(await anext(records))
            await records.aclose()
    assert sorted(marker(r) for r in got[1:]) == sorted(expected(p, lambda s: s.name == "live.one")[1:])
    assert marker(got[0]) == p.sent[0].marker


async def test_follow_limit_stops_after_n_records(private_js: JetStreamContext) -> None:
    js = private_js
    p = Publisher(js)
    async with asyncio.timeout(30):
        async with History(js, Query(kind=MODEL, follow=True, limit=1), poll=0.5) as history:
            task = asyncio.ensure_future(_collect(history))
            await history.caught_up.wait()
            await p.change(MODEL, "team-a", "m")
            got = await task
    assert [marker(r) for r in got] == [p.sent[0].marker]


async def _collect(history: History) -> list[Record]:
    return [r async for r in history.records()]


async def test_empty_history_returns_promptly_and_leaves_no_consumers(private_js: JetStreamContext) -> None:
    js = private_js
    async with asyncio.timeout(5):  # a replay that waited on an empty stream would take >= 5 s
        assert await replay(js, Query()) == []
        assert await replay(js, Query(kind=SVC, namespace="nowhere", name="nothing")) == []
    p = Publisher(js)
    await p.change(SVC, "team-a", "x")
    async with asyncio.timeout(5):
        assert await replay(js, Query(name="y")) == []
        assert [marker(r) for r in await replay(js, Query(name="x"))] == [p.sent[0].marker]
    for stream in (topology.EVENTS_STREAM, topology.STATUS_STREAM, topology.DECISIONS_STREAM):
        assert (await js.stream_info(stream)).state.consumer_count == 0


async def test_missing_streams_are_reported_not_waited_for(nats_factory: Callable[[], NatsServer]) -> None:
    server = nats_factory()
    nc = await connect_as(server)
    try:
        async with asyncio.timeout(5), History(nc.jetstream(), Query()) as history:
            assert [r async for r in history.records()] == []
            assert sorted(history.missing) == sorted(
                [topology.EVENTS_STREAM, topology.STATUS_STREAM, topology.DECISIONS_STREAM]
            )
    finally:
        await nc.close()


async def test_unreadable_records_are_shown_not_fatal(private_js: JetStreamContext) -> None:
    js = private_js
    await js.publish(subjects.decision_subject("future", SVC, "team-a", "odd.name"), b'{"schema_version": 9}')
    await js.publish(subjects.event_subject(SVC, "team-a", "odd.name"), b"not json")
    got = await replay(js, Query(name="odd.name"))
    assert [(r.type, r.source, r.name, r.message) for r in got] == [
        ("decision", "future", "odd.name", None),
        ("change", "watcher", "odd.name", None),
    ]
    assert got[0].payload == {"schema_version": 9}
    assert got[1].payload is None
