"""The NATS contract against a real nats-server with JetStream: dedup, nak delay, max_deliver,
KV compare-and-set, and the topology owner's idempotence."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from nats.aio.client import Client as NatsClient
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from nats.js.errors import KeyWrongLastSequenceError

from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.bus.topology import ConsumerSpec
from aimcore.api.errors import PermanentError, TransientError
from aimcore.api.kinds import KindRef
from aimcore.runtime import Consuming, ServiceContext, run_consumer
from aimcore.runtime.consumer import Consumer
from tests.helpers import eventually


async def _true(value: bool) -> bool:
    return value


AIMSVC = KindRef("aim.eai.amd.com", "v1alpha1", "AIMService", "aimservices", True)


async def _stream(js: JetStreamContext) -> tuple[str, str]:
    name = f"T_{secrets.token_hex(4)}"
    subject = f"t.{name.lower()}"
    await js.add_stream(StreamConfig(name=name, subjects=[f"{subject}.>"], duplicate_window=60))
    return name, subject


def _event(name: str = "llama.3") -> ChangeEvent:
    return ChangeEvent(
        object=ObjectRef.of(AIMSVC, "team-a", name),
        uid="1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        resource_version="4711",
        generation=2,
        change=ChangeType.MODIFIED,
    )


async def test_duplicate_publish_is_stored_once(js: JetStreamContext) -> None:
    stream, subject = await _stream(js)
    event = _event()
    target = f"{subject}.{subjects.object_tokens(AIMSVC, 'team-a', 'llama.3')}"
    first = await js.publish(target, event.encode(), headers={"Nats-Msg-Id": event.msg_id})
    again = _event()  # a second watcher replica observing the same change
    second = await js.publish(target, again.encode(), headers={"Nats-Msg-Id": again.msg_id})
    assert not first.duplicate
    assert second.duplicate
    assert second.seq == first.seq
    info = await js.stream_info(stream)
    assert info.state.messages == 1


async def test_nacked_message_returns_after_its_delay(js: JetStreamContext) -> None:
    stream, subject = await _stream(js)
    await js.publish(f"{subject}.x", b"payload")
    psub = await js.pull_subscribe(f"{subject}.>", durable="nak", stream=stream)
    (msg,) = await psub.fetch(1, timeout=5)
    assert msg.metadata.num_delivered == 1
    await msg.nak(delay=3.0)
    nacked_at = time.monotonic()
    with pytest.raises(NatsTimeout):
        await psub.fetch(1, timeout=1.0)  # well inside the delay: nothing comes back
    (again,) = await psub.fetch(1, timeout=15)
    assert again.data == b"payload"
    assert again.metadata.num_delivered == 2
    assert time.monotonic() - nacked_at >= 2.5
    await again.ack()


async def test_max_deliver_stops_a_poison_message(nats_client: NatsClient, js: JetStreamContext) -> None:
    stream, subject = await _stream(js)
    advisories = await nats_client.subscribe(f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{stream}.poison")
    await js.add_consumer(
        stream,
        ConsumerConfig(durable_name="poison", ack_policy=AckPolicy.EXPLICIT, max_deliver=3, ack_wait=5),
    )
    await js.publish(f"{subject}.bad", b"poison")
    psub = await js.pull_subscribe_bind("poison", stream=stream)
    deliveries = []
    for _ in range(3):
        (msg,) = await psub.fetch(1, timeout=5)
        deliveries.append(msg.metadata.num_delivered)
        await msg.nak()
    assert deliveries == [1, 2, 3]
    with pytest.raises(NatsTimeout):
        await psub.fetch(1, timeout=1.5)  # a fourth delivery never comes
    advisory = await advisories.next_msg(timeout=5)
    assert json.loads(advisory.data)["deliveries"] == 3


async def test_kv_compare_and_set_rejects_a_stale_writer(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket=f"cas-{secrets.token_hex(4)}")
    rev = await kv.create("lease.obj", b"replica-a")
    newer = await kv.update("lease.obj", b"replica-a-renewed", last=rev)
    with pytest.raises(KeyWrongLastSequenceError):
        await kv.update("lease.obj", b"replica-b", last=rev)  # b read before a renewed
    with pytest.raises(KeyWrongLastSequenceError):
        await kv.create("lease.obj", b"replica-c")
    entry = await kv.get("lease.obj")
    assert entry.value == b"replica-a-renewed"
    assert entry.revision == newer


async def test_topology_is_declared_idempotently_and_updated(nats_factory) -> None:  # type: ignore[no-untyped-def]
    server = nats_factory()
    nc = await connect_as(server)
    try:
        js = nc.jetstream()
        await topology.ensure_topology(js)
        await topology.ensure_topology(js)  # same config again: no error
        changed = topology.Retention(max_age=3600, max_bytes=1 << 20)
        await topology.ensure_topology(js, changed)
        info = await js.stream_info(topology.EVENTS_STREAM)
        assert info.config.max_age == 3600
        assert info.config.max_bytes == 1 << 20
        names = {s.config.name for s in await js.streams_info()}
        assert {topology.EVENTS_STREAM, topology.STATUS_STREAM, topology.DECISIONS_STREAM} <= names
        kv = await js.key_value(topology.OBJECTS_BUCKET)
        assert (await kv.status()).bucket == topology.OBJECTS_BUCKET
        # a bucket made by an earlier release with another TTL (leases: 30 s before 15 s) is updated
        leases = await js.key_value(topology.LEASES_BUCKET)
        info = (await leases.status()).stream_info.config
        info.max_age = 30.0
        await js.update_stream(config=info)
        await topology.ensure_topology(js)
        assert (await leases.status()).ttl == topology.LEASE_TTL
    finally:
        await nc.close()


async def test_consumer_maps_errors_to_ack_and_nak(js: JetStreamContext) -> None:
    stream, subject = await _stream(js)
    calls: dict[str, list[int]] = {"ok": [], "invalid": [], "flaky": []}

    async def handler(msg) -> None:  # type: ignore[no-untyped-def]
        key = msg.subject.rsplit(".", 1)[-1]
        calls[key].append(msg.metadata.num_delivered)
        if key == "invalid":
            raise PermanentError("InvalidSpec", "spec.model: exactly one of name, image, custom")
        if key == "flaky" and msg.metadata.num_delivered < 3:
            raise TransientError("not yet", delay=0.2)

    spec = ConsumerSpec(durable="mapper", stream=stream, filter_subjects=[f"{subject}.>"], max_deliver=5)
    consumer = Consumer(js, spec, handler)
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    for key in calls:
        await js.publish(f"{subject}.{key}", b"{}")
    try:
        await eventually(lambda: _true(calls["flaky"] == [1, 2, 3]), what="three deliveries of the flaky one")

        async def settled() -> bool:
            info = await js.consumer_info(stream, "mapper")
            return not (info.num_ack_pending or info.num_pending)

        await eventually(settled, what="the consumer to settle")
    finally:
        stop.set()
        await task
    assert calls["ok"] == [1]
    assert calls["invalid"] == [1]  # permanent: acknowledged, never redelivered
    assert calls["flaky"] == [1, 2, 3]
    assert consumer.stats.permanent == 1
    assert consumer.stats.naked == 2
    assert consumer.stats.redelivered == 2  # the flaky one's second and third deliveries


async def test_consumer_survives_a_nats_restart(nats_factory) -> None:  # type: ignore[no-untyped-def]
    server = nats_factory()
    nc = await connect_as(server, forever=True, reconnect_time_wait=0.2)
    try:
        js = nc.jetstream()
        stream, subject = await _stream(js)
        seen: list[bytes] = []

        async def handler(msg) -> None:  # type: ignore[no-untyped-def]
            seen.append(msg.data)

        spec = ConsumerSpec(durable="survivor", stream=stream, filter_subjects=[f"{subject}.>"])
        stop = asyncio.Event()
        consumer = Consumer(js, spec, handler)
        task = asyncio.create_task(consumer.run(stop))
        await js.publish(f"{subject}.a", b"before")
        await eventually(lambda: _true(seen == [b"before"]), what="the first message")

        # The server comes back without JetStream first (as JetStream is briefly unavailable after
        # a restart: every JetStream request fails), then with it.
        server.stop()
        server.jetstream = False
        server.restart()
        await eventually(lambda: _true(consumer.stats.bus_errors > 0), timeout=30, what="a failed fetch")
        assert not task.done(), "a failed fetch must not end the consumer loop"
        server.jetstream = True
        server.restart()

        async def published_after() -> bool:
            try:
                await js.publish(f"{subject}.a", b"after")
            except Exception:
                return False
            return True

        await eventually(published_after, timeout=30, what="publishing after the restart")
        await eventually(lambda: _true(b"after" in seen), timeout=30, what="delivery after the restart")
        assert not task.done(), "the consumer loop must outlive the restart"
        stop.set()
        await task
    finally:
        await nc.close()


async def test_a_consumer_whose_setup_finds_its_bucket_missing_waits_for_it(js: JetStreamContext) -> None:
    """``run_consumer``: the stream exists but a bucket its setup opens does not answer yet (as a
    bucket of a bus cluster that is still electing its leader): the setup is tried again until it
    opens, instead of the service dying; then it consumes."""
    stream, subject = await _stream(js)
    bucket = f"t-{secrets.token_hex(4)}"
    spec = ConsumerSpec(durable="late-bucket", stream=stream, filter_subjects=[f"{subject}.>"])
    tries: list[str] = []
    seen: list[bytes] = []

    async def handler(msg: Any) -> None:
        seen.append(msg.data)

    @contextlib.asynccontextmanager
    async def serve() -> AsyncIterator[Consuming]:
        tries.append(bucket)
        await js.key_value(bucket)  # NotFoundError until it is made
        yield Consuming(spec, handler)

    ctx = ServiceContext("test", cast(Any, None), cast(Any, None), js, None)
    task = asyncio.create_task(run_consumer(ctx, stream, spec.durable, serve))
    try:
        await eventually(lambda: _true(len(tries) >= 3), timeout=30, what="the setup tried again")
        assert not task.done(), "a bucket that is not there yet must not end the consumer"
        await js.create_key_value(bucket=bucket)
        await js.publish(f"{subject}.a", b"after")
        await eventually(lambda: _true(seen == [b"after"]), timeout=30, what="consumed once set up")
    finally:
        ctx.stop.set()
        assert await asyncio.wait_for(task, 30)


async def test_a_stopping_consumer_hands_back_what_it_has_not_started(js: JetStreamContext) -> None:
    """A graceful stop: the message being handled finishes and is acknowledged; the ones fetched
    but not started are handed back at once, so another replica gets them now instead of after
    the ack wait (which here is far longer than the test waits)."""
    stream, subject = await _stream(js)
    for i in range(6):
        await js.publish(f"{subject}.obj{i}", f"m{i}".encode())
    spec = ConsumerSpec(durable="stopping", stream=stream, filter_subjects=[f"{subject}.>"], ack_wait=600)
    started, release, stop = asyncio.Event(), asyncio.Event(), asyncio.Event()
    handled: list[bytes] = []

    async def slow(msg: Any) -> None:
        started.set()
        await release.wait()
        handled.append(msg.data)

    consumer = Consumer(js, spec, slow, batch=6, concurrency=1)
    run = asyncio.create_task(consumer.run(stop))
    await asyncio.wait_for(started.wait(), 10)
    stop.set()  # SIGTERM while one message is in the handler and five wait for a slot
    release.set()
    await asyncio.wait_for(run, 10)
    assert handled == [b"m0"] and consumer.stats.acked == 1
    assert consumer.stats.handed_back == 5

    other = await js.pull_subscribe_bind("stopping", stream=stream)
    again: list[bytes] = []
    # Well inside the 600 s ack wait. A fetch returns what is available when it asks, so the
    # five naks may arrive over more than one fetch.
    deadline = asyncio.get_running_loop().time() + 10
    while len(again) < 5 and asyncio.get_running_loop().time() < deadline:
        try:
            again += [m.data for m in await other.fetch(5 - len(again), timeout=2)]
        except NatsTimeout:
            continue
    assert sorted(again) == [f"m{i}".encode() for i in range(1, 6)]
