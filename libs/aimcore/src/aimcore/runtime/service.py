"""The process shell every service runs in: settings read and validated once, before anything
else, and held by the :class:`ServiceContext` (code is handed them from there), logging,
tracing, the health and metrics server (:mod:`aimcore.runtime.health`, started before anything
can be slow, so ``/healthz`` answers while NATS is still unreachable), a NATS connection that
reconnects forever (as the service's own bus role, :mod:`aimcore.runtime.bus`), an optional
Kubernetes client, and clean shutdown on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aimcore.runtime import health, logs, metrics, tracing
from aimcore.runtime.bus import connect_bus
from aimcore.runtime.kube import Kube, connect
from aimcore.runtime.probes import READINESS
from aimcore.runtime.settings import (
    AimSettings,
    HealthSettings,
    ProxySettings,
    Settings,
    SettingsError,
    TracingSettings,
)

log = logging.getLogger(__name__)


@dataclass
class ServiceContext:
    name: str
    settings: Settings  # every concern the service reads, read once at start-up
    nc: NatsClient
    js: JetStreamContext
    kube: Kube | None
    stop: asyncio.Event = field(default_factory=asyncio.Event)


Main = Callable[[ServiceContext], Coroutine[Any, Any, None]]


def configure_logging(level: str, fmt: logs.LogFormat = "text", service: str = "") -> None:
    logs.configure(level, fmt, service)


EXIT_BAD_SETTINGS = 2


def load_settings(program: str, concerns: Sequence[type[AimSettings]] = ()) -> Settings:
    """Every setting the service reads (the process, the bus, tracing, proxies and ``concerns``),
    read and validated now, once: the service holds what this returns. A bad value ends the
    process with one line on stderr naming the variable, the problem and the accepted form, and
    exit code 2."""
    try:
        settings = Settings.load(concerns)
    except SettingsError as exc:
        sys.stderr.write(f"{program}: invalid setting {exc}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_BAD_SETTINGS) from None
    return settings


async def run_service(
    name: str,
    main: Main,
    *,
    needs_kube: bool,
    concerns: Sequence[type[AimSettings]] = (),
) -> None:
    """Read the settings (``concerns``: the service's own, beyond every service's; see
    :func:`load_settings`), connect, run ``main`` until a signal arrives or it returns, then clean
    up."""
    settings = load_settings(f"aim-{name}", concerns)
    configure_logging(settings.log_level, settings.log_format, f"aim-{name}")
    tracing.setup(f"aim-{name}", settings.get(TracingSettings))
    server = await health.serve(f"aim-{name}", settings.get(HealthSettings))
    READINESS.waiting("nats", "connecting")
    nc = await connect_bus(settings.bus.as_role(name), f"aim-{name}")
    READINESS.add("nats", lambda: None if nc.is_connected else "not connected")
    metrics.NATS_CONNECTED.set_function(lambda: 1.0 if nc.is_connected else 0.0)
    kube = (
        Kube(await connect(settings.kubeconfig, settings.get(ProxySettings)), field_manager=f"aim-{name}")
        if needs_kube
        else None
    )
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
        if server is not None:
            await server.stop()
        log.info("aim-%s stopped", name)
