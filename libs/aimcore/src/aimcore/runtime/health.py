"""The small HTTP server every service runs for its probes and metrics (port ``AIM_HEALTH_PORT``,
default 8080; :class:`~aimcore.runtime.settings.health.HealthSettings`):

- ``/healthz``: liveness. Answered by the event loop itself, so a loop that is stuck does not
  answer at all; and 503 if the loop's heartbeat has been silent longer than
  ``AIM_HEALTH_STALL_SECONDS``. A watchdog thread watches the same heartbeat and logs the stuck
  loop's stack once per stall (what it is stuck in), counting ``aim_event_loop_stalls_total``.
- ``/readyz``: readiness. 200 once every registered check is ready (NATS connected, each consumer
  bound, each informer synced...; :mod:`aimcore.runtime.probes`), else 503 with the list of what
  is not, one line each.
- ``/metrics``: Prometheus text format (:mod:`aimcore.runtime.metrics`).

aiohttp is already the runtime's HTTP stack (the Kubernetes client runs on it), so no other
framework is needed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import traceback

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from aimcore.runtime import metrics
from aimcore.runtime.probes import (
    READINESS,
    Heartbeat,
    Readiness,
    StallWatch,
    liveness_answer,
    readiness_answer,
)
from aimcore.runtime.settings.health import HealthSettings

log = logging.getLogger(__name__)

BEAT_EVERY = 1.0


class Watchdog:
    """A daemon thread that looks at the loop's heartbeat and, on a stall, logs the loop thread's
    stack once (the loop cannot log it: it is the one stuck)."""

    def __init__(self, heartbeat: Heartbeat, limit: float, loop_thread: int) -> None:
        self.heartbeat = heartbeat
        self.watch = StallWatch(limit)
        self.loop_thread = loop_thread
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aim-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        every = min(BEAT_EVERY, self.watch.limit / 2)
        while not self._stop.wait(every):
            silent = self.heartbeat.silent_for()
            if self.watch.look(silent):
                metrics.LOOP_STALLS.inc()
                frame = sys._current_frames().get(self.loop_thread)
                stack = "".join(traceback.format_stack(frame)) if frame is not None else "(unknown)"
                log.error(
                    "event loop stalled: no heartbeat for %.1fs (limit %gs); it is in:\n%s",
                    silent,
                    self.watch.limit,
                    stack,
                )


class HealthServer:
    """The server, its heartbeat task and its watchdog; :meth:`start` binds, :meth:`stop` undoes."""

    def __init__(self, settings: HealthSettings, readiness: Readiness = READINESS) -> None:
        self.settings = settings
        self.readiness = readiness
        self.heartbeat = Heartbeat()
        self.port: int | None = None  # the bound port, once started
        self._runner: web.AppRunner | None = None
        self._beating: asyncio.Task[None] | None = None
        self._watchdog: Watchdog | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def start(self) -> None:
        self.heartbeat.beat()
        self._beating = asyncio.create_task(self._beat())
        self._watchdog = Watchdog(self.heartbeat, self.settings.stall_seconds, threading.get_ident())
        self._watchdog.start()
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.address, self.settings.port, reuse_address=True)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.settings.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._beating is not None:
            self._beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beating
        if self._watchdog is not None:
            self._watchdog.stop()

    async def _beat(self) -> None:
        while True:
            self.heartbeat.beat()
            await asyncio.sleep(BEAT_EVERY)

    async def _healthz(self, request: web.Request) -> web.Response:
        status, text = liveness_answer(self.heartbeat.silent_for(), self.settings.stall_seconds)
        return web.Response(status=status, text=text)

    async def _readyz(self, request: web.Request) -> web.Response:
        status, text = readiness_answer(self.readiness.problems())
        return web.Response(status=status, text=text)

    async def _metrics(self, request: web.Request) -> web.Response:
        body = await metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def serve(name: str, settings: HealthSettings) -> HealthServer | None:
    """Start the server of service ``name`` (None when ``AIM_HEALTH_PORT=0``). A port that cannot
    be bound ends the process with one line saying so (exit code 2), as a bad setting does."""
    if settings.port == 0:
        return None
    server = HealthServer(settings)
    try:
        await server.start()
    except OSError as exc:
        await server.stop()
        sys.stderr.write(
            f"{name}: cannot serve health and metrics on {settings.address}:{settings.port}: "
            f"{exc.strerror or exc} (AIM_HEALTH_PORT, AIM_HEALTH_ADDRESS; 0 disables)\n"
        )
        sys.stderr.flush()
        raise SystemExit(2) from None
    log.info("%s: health and metrics on %s:%d", name, settings.address, server.port)
    return server
