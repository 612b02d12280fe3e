"""Relays download Jobs' progress offers as this service's status reports (:mod:`aimcore.api.bus.progress`):
a Job may only offer, this service checks the offer's token and shape, and only then does it reach
the status stream. Every replica subscribes in one queue group, so each offer is relayed once."""

from __future__ import annotations

import logging

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from opentelemetry import context

from aim_cache.download_metrics import DownloadMeter
from aimcore.api.bus import progress
from aimcore.api.bus.auth import PROGRESS_PREFIX
from aimcore.api.errors import PermanentError
from aimcore.runtime import publish_report, tracing

log = logging.getLogger(__name__)

QUEUE = "aim-cache"


class ProgressRelay:
    def __init__(self, nc: NatsClient, js: JetStreamContext, key: bytes) -> None:
        self.nc, self.js, self.key = nc, js, key
        self.relayed = 0
        self.rejected = 0
        self.meter = DownloadMeter("job")
        self._sub: Subscription | None = None

    async def start(self) -> None:
        self._sub = await self.nc.subscribe(f"{PROGRESS_PREFIX}.>", queue=QUEUE, cb=self.handle)

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None

    async def handle(self, msg: Msg) -> None:
        try:
            report = progress.vet(
                self.key, msg.subject, msg.data, (msg.headers or {}).get(progress.TOKEN_HEADER)
            )
        except PermanentError as exc:
            self.rejected += 1
            # at debug after the first: a misbehaving Job must not flood the log
            log.log(logging.WARNING if self.rejected == 1 else logging.DEBUG, "%s", exc.message)
            return
        self.meter.observe_fields(report.uid or report.object.display, report.fields)
        attached = context.attach(tracing.extract(msg.headers))  # the Job's trace, if it has one
        try:
            await publish_report(self.js, report)
        except Exception as exc:  # progress is best effort: the next offer, or the verdict, follows
            log.debug("relaying progress for %s failed: %r", report.object.display, exc)
            return
        finally:
            context.detach(attached)
        self.relayed += 1
