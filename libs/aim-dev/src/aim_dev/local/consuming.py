"""When a started operator is ready: every service has bound its durable consumer (so the watcher
has declared the topology and each service receives events). The embedded stack (processes) and
the operator deployed on a node (Deployments) wait for the same thing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from nats.js.errors import NotFoundError

from aimcore.api.bus import topology
from aimcore.runtime import connect_bus
from aimcore.runtime.bus import BusSettings

SERVICES = ("watcher", "status", "deployer", "discovery", "registry-sync", "cache")


def consumers() -> list[tuple[str, str]]:
    """(stream, durable) of every service that consumes: the status service its reports, the
    others the change events (the watcher publishes, it consumes nothing)."""
    return [(topology.STATUS_STREAM, "aim-status")] + [
        (topology.EVENTS_STREAM, f"aim-{name}") for name in SERVICES if name not in ("watcher", "status")
    ]


async def wait_consuming(
    bus: BusSettings, deadline: float, *, check: Callable[[], None] = lambda: None, interval: float = 0.1
) -> None:
    """Return once every consumer exists; ``check`` runs between attempts (it raises to give up,
    e.g. when a service died); :class:`TimeoutError` naming the first missing consumer at
    ``deadline`` (``time.monotonic()``)."""
    nc = await connect_bus(bus, "aimctl", forever=False)
    try:
        js = nc.jetstream()
        for stream, durable in consumers():
            while True:
                check()
                try:
                    await js.consumer_info(stream, durable)
                    break
                except (NotFoundError, TimeoutError):
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no consumer {durable} on {stream}") from None
                    await asyncio.sleep(interval)
    finally:
        await nc.close()
