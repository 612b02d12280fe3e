"""The bus's trust boundary on a real nats-server with the shipped authorization
(docs/design.md#security): no anonymous client, and each role may do exactly what its work needs.
Every role tries every operation; a refused operation must produce the server's permission violation
for its subject, an allowed one none (a refusal of a marker subject, sent last, is the barrier: a
flush is not, the server may answer a PING before an earlier refusal;
:func:`tests.helpers.refusals_settled`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js.api import ConsumerConfig, DeliverPolicy

from aim_dev.local.natsserver import NatsServer
from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import auth, subjects, topology
from aimcore.api.bus.topology import ConsumerSpec, ensure_consumer
from aimcore.api.kinds import STATUS_OWNERS
from tests.helpers import refusals_settled, refused_connection

SERVICES = frozenset(auth.SERVICES)
READERS = frozenset({"watcher", "status", "reader", *SERVICES})
KEY = "aim.AIMService.ns.probe"

Op = Callable[[NatsClient], Awaitable[object]]


@dataclass(frozen=True)
class Operation:
    what: str
    run: Op
    refused_on: str  # the subject (prefix) a refusal is reported for
    allowed: frozenset[str]


async def _publish(nc: NatsClient, subject: str) -> None:
    await nc.jetstream().publish(subject, b"{}", timeout=1)


async def _kv_put(nc: NatsClient, bucket: str) -> None:
    await _publish(nc, f"$KV.{bucket}.{KEY}")  # what KeyValue.put sends


async def _kv_get(nc: NatsClient) -> None:
    kv = await nc.jetstream().key_value(topology.OBJECTS_BUCKET)
    await kv.get(KEY)


async def _pull(nc: NatsClient, stream: str, durable: str) -> None:
    psub = await nc.jetstream().pull_subscribe_bind(durable, stream=stream)
    await psub.fetch(1, timeout=0.5)


async def _browse(nc: NatsClient, stream: str) -> None:
    await nc.jetstream().add_consumer(
        stream, config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL, inactive_threshold=5)
    )


async def _retarget(nc: NatsClient) -> None:
    """Rewrite the deployer's durable so that it receives nothing."""
    await ensure_consumer(
        nc.jetstream(),
        ConsumerSpec(durable="aim-deployer", stream=topology.EVENTS_STREAM, filter_subjects=["nothing.>"]),
    )


async def _subscribe(nc: NatsClient, subject: str) -> None:
    await nc.subscribe(subject)


OPERATIONS = (
    Operation(
        "publish a change event",
        lambda nc: _publish(nc, f"aim.events.{KEY}"),
        f"aim.events.{KEY}",
        frozenset({"watcher"}),
    ),
    Operation(
        "write the object mirror",
        lambda nc: _kv_put(nc, topology.OBJECTS_BUCKET),
        f"$KV.{topology.OBJECTS_BUCKET}.{KEY}",
        frozenset({"watcher"}),
    ),
    *(
        Operation(
            f"publish {service}'s status report for {kind.kind}",
            lambda nc, subject=subject: _publish(nc, subject),  # type: ignore[misc]
            subject,
            frozenset({service} if kind in STATUS_OWNERS[service] else ()),
        )
        # every service's report on every service's kind: only an owner on its own kinds passes
        for service in auth.SERVICES
        for kind in (owned[0] for owned in STATUS_OWNERS.values())
        for subject in (subjects.status_subject(service, kind, "ns", "probe"),)
    ),
    Operation(
        "publish a status report under no service's name",
        lambda nc: _publish(nc, f"aim.status.{KEY}"),
        f"aim.status.{KEY}",
        frozenset(),
    ),
    *(
        Operation(
            f"take, mark or give back {service}'s reconcile lease",
            lambda nc, key=f"{service}.{KEY}": _publish(nc, f"$KV.{topology.LEASES_BUCKET}.{key}"),  # type: ignore[misc]
            f"$KV.{topology.LEASES_BUCKET}.{service}.{KEY}",
            frozenset({service}),
        )
        for service in auth.SERVICES
    ),
    Operation(
        "read the object mirror",
        _kv_get,
        "$JS.API.STREAM.INFO.KV_aim-objects",
        READERS,
    ),
    Operation(
        "consume status reports",
        lambda nc: _pull(nc, topology.STATUS_STREAM, "aim-status"),
        "$JS.API.CONSUMER.MSG.NEXT.AIM_STATUS.aim-status",
        frozenset({"status"}),
    ),
    Operation(
        "consume the deployer's events",
        lambda nc: _pull(nc, topology.EVENTS_STREAM, "aim-deployer"),
        "$JS.API.CONSUMER.MSG.NEXT.AIM_EVENTS.aim-deployer",
        frozenset({"deployer"}),
    ),
    Operation(
        "rewrite the deployer's consumer",
        _retarget,
        "$JS.API.CONSUMER.CREATE.AIM_EVENTS.aim-deployer",
        frozenset({"deployer"}),
    ),
    Operation(
        "browse the status stream",
        lambda nc: _browse(nc, topology.STATUS_STREAM),
        "$JS.API.CONSUMER.CREATE.AIM_STATUS",
        frozenset({"reader"}),
    ),
    Operation(
        "read another role's replies",
        lambda nc: _subscribe(nc, f"{auth.inbox_prefix('watcher')}.>"),
        f"{auth.inbox_prefix('watcher')}.>",
        frozenset({"watcher"}),
    ),
    Operation(
        "listen to progress offers",
        lambda nc: _subscribe(nc, "aim.progress.>"),
        "aim.progress.>",
        frozenset({"cache"}),
    ),
    Operation(
        "offer download progress",
        lambda nc: nc.publish(f"aim.progress.{KEY}", b"{}"),
        f"aim.progress.{KEY}",
        frozenset({"download"}),
    ),
    Operation(
        "delete the events stream",
        lambda nc: nc.jetstream().delete_stream(topology.EVENTS_STREAM),
        "$JS.API.STREAM.DELETE.AIM_EVENTS",
        frozenset(),
    ),
    Operation(
        "purge the object mirror",
        lambda nc: nc.jetstream().purge_stream("KV_aim-objects"),
        "$JS.API.STREAM.PURGE.KV_aim-objects",
        frozenset(),
    ),
)
ROLES = tuple(r for r in auth.ROLE_NAMES if r != "admin")


@pytest.fixture
async def bus(nats_factory: Callable[[], NatsServer]) -> NatsServer:
    server = nats_factory()
    admin = await connect_as(server)
    try:
        js = admin.jetstream()
        await topology.ensure_topology(js)
        for service in ("status", *auth.SERVICES):
            stream = topology.STATUS_STREAM if service == "status" else topology.EVENTS_STREAM
            prefix = "aim.status" if service == "status" else "aim.events"
            await ensure_consumer(js, ConsumerSpec(f"aim-{service}", stream, [f"{prefix}.>"]))
    finally:
        await admin.close()
    return server


async def violations_of(server: NatsServer, role: str) -> set[str]:
    """Run every operation as ``role``; the operations the server refused."""
    seen: list[str] = []

    async def on_error(exc: Exception) -> None:
        seen.append(str(exc))

    async def attempt(op: Operation) -> None:
        with contextlib.suppress(NatsError, TimeoutError):
            async with asyncio.timeout(2):
                await op.run(nc)

    nc = await connect_as(server, role, on_error=on_error)
    try:
        await asyncio.gather(*(attempt(op) for op in OPERATIONS))
        await refusals_settled(nc, seen)
    finally:
        await nc.close()
    text = "\n".join(seen)
    return {op.what for op in OPERATIONS if f'"{op.refused_on.lower()}' in text}


@pytest.mark.parametrize("role", ROLES)
async def test_each_role_may_do_only_its_work(bus: NatsServer, role: str) -> None:
    refused = await violations_of(bus, role)
    expected = {op.what for op in OPERATIONS if role not in op.allowed}
    assert refused == expected


async def test_anonymous_and_unknown_clients_are_refused(
    bus: NatsServer, nats_factory: Callable[[], NatsServer]
) -> None:
    assert "Authorization Violation" in await refused_connection(bus.url, connect_timeout=2)
    # a key of the right shape that the server does not know (another installation's) is refused too
    elsewhere = nats_factory()
    stranger = elsewhere.client("watcher")
    refused = await refused_connection(bus.url, nkeys_seed=stranger.seed_file, connect_timeout=2)
    assert "Authorization Violation" in refused
