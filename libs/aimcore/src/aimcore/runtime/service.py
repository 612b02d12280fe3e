"""The process shell every service runs in: logging, tracing, a NATS connection that reconnects
forever (as the service's own bus role, :mod:`aimcore.runtime.bus`), an optional Kubernetes client,
and clean shutdown on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aimcore.runtime import tracing
from aimcore.runtime.bus import connect_bus
from aimcore.runtime.kube import Kube, connect
from aimcore.runtime.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class ServiceContext:
    name: str
    settings: Settings
    nc: NatsClient
    js: JetStreamContext
    kube: Kube | None
    stop: asyncio.Event = field(default_factory=asyncio.Event)


Main = Callable[[ServiceContext], Coroutine[Any, Any, None]]


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


async def run_service(name: str, main: Main, *, needs_kube: bool, settings: Settings | None = None) -> None:
    """Connect, run ``main`` until a signal arrives or it returns, then clean up."""
    settings = settings or Settings()
    configure_logging(settings.log_level)
    tracing.setup(f"aim-{name}")
    nc = await connect_bus(settings.bus.as_role(name), f"aim-{name}")
    kube = Kube(await connect(settings.kubeconfig), field_manager=f"aim-{name}") if needs_kube else None
    ctx = ServiceContext(name, settings, nc, nc.jetstream(), kube)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, ctx.stop.set)
    log.info("aim-%s starting (nats %s)", name, settings.nats_url)
    try:
        task = asyncio.create_task(main(ctx))
        stopper = asyncio.create_task(ctx.stop.wait())
        done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        ctx.stop.set()
        if task in done:
            task.result()
        else:
            await asyncio.wait_for(task, 15)
    finally:
        stopper.cancel()
        if kube:
            await kube.close()
        with contextlib.suppress(Exception):
            await nc.drain()
        log.info("aim-%s stopped", name)
