"""``aim_nats_permission_violations_total`` counts what the server refuses a service's bus role:
a client connected the way every service connects (:func:`aimcore.runtime.bus.connect_bus`, no
error callback of its own) publishes where its role may not, and the counter moves by one per
refusal; a permitted publish does not move it (the flush is the barrier: the server answers a
PING only after every earlier command)."""

from __future__ import annotations

from collections.abc import Callable

from aim_dev.local.natsserver import NatsServer
from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import subjects
from aimcore.runtime import metrics


def refused() -> float:
    return metrics.REFUSED_PUBLISHES._value.get()


async def test_refused_publishes_are_counted(nats_factory: Callable[[], NatsServer]) -> None:
    server = nats_factory()
    nc = await connect_as(server, "registry-sync")  # the services' own error callback
    try:
        before = refused()
        await nc.publish(f"{subjects.REQUEUE_PREFIX}.registry-sync.x", b"{}")  # its own requeues
        await nc.flush(timeout=5)
        assert refused() == before
        await nc.publish("aim.events.not-for-registry-sync", b"{}")  # the watcher's
        await nc.publish("aim.decisions.not-for-registry-sync", b"{}")
        await nc.flush(timeout=5)
        assert refused() == before + 2
    finally:
        await nc.close()
