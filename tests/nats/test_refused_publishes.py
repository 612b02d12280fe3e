"""``aim_nats_permission_violations_total`` counts what the server refuses a service's bus role:
a client connected the way every service connects (:func:`aimcore.runtime.bus.connect_bus`, no
error callback of its own) publishes where its role may not, and the counter moves by one per
refusal; a permitted publish does not move it.

The server's ``-ERR`` for a refused publish is not ordered before its answer to a later PING: a
flush returning says nothing about the refusals (issue 24: the counter read 0 right after the
flush, in about one run of three). So the test waits for the refusals to be counted; the
permitted publish goes first, and a connection's errors arrive in the order of its commands, so
once the two refusals are counted, a refusal of the permitted publish would have been too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aim_dev.local.natsserver import NatsServer
from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import subjects
from aimcore.runtime import metrics
from tests.helpers import eventually


def refused() -> float:
    return metrics.REFUSED_PUBLISHES._value.get()


async def test_refused_publishes_are_counted(nats_factory: Callable[[], NatsServer]) -> None:
    server = nats_factory()
    nc = await connect_as(server, "registry-sync")  # the services' own error callback
    try:
        before = refused()
        await nc.publish(f"{subjects.REQUEUE_PREFIX}.registry-sync.x", b"{}")  # its own requeues
        await nc.publish("aim.events.not-for-registry-sync", b"{}")  # the watcher's
        await nc.publish("aim.decisions.not-for-registry-sync", b"{}")
        await nc.flush(timeout=5)
        await eventually(
            lambda: asyncio.sleep(0, refused() >= before + 2), timeout=10, what="two refusals counted"
        )
        assert refused() == before + 2  # the permitted publish, sent first, was not refused
    finally:
        await nc.close()
