"""Pull messages from a service's durable consumer and run a handler on each.

Replicas of a service bind the same durable consumer, so JetStream spreads the work between them.
Within one replica, messages for the same subject (the same object) run one after another, others
concurrently. The handler's outcome becomes an ack decision (``aimcore.api.errors.decide``), and
work that runs longer than half the ack wait sends in-progress acks so it is not redelivered.

A stopping consumer hands back what it holds but has not started (a nak without delay, so another
replica gets it now rather than after the ack wait), including messages the server delivered after
the last fetch gave up waiting, and lets the work in progress finish.

Each consumer is a readiness check (``consumer <durable>``: bound or not, :mod:`aimcore.runtime.probes`)
and its counters and sampled lag are metrics (:mod:`aimcore.runtime.metrics`).

Every service shell runs its consumer the one way, :func:`run_consumer`: not ready until it binds,
waiting for its stream (the watcher declares the topology), then set up, consumed until the service
stops, and torn down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import NamedTuple

from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from opentelemetry import trace

from aimcore.api.bus import topology
from aimcore.api.bus.topology import ConsumerSpec, ensure_consumer
from aimcore.api.errors import AckAction, decide, is_permanent
from aimcore.runtime import metrics, tracing
from aimcore.runtime.bus import BUS_RETRY, until_answered
from aimcore.runtime.keyedlock import KeyedLock
from aimcore.runtime.kube import describe_error
from aimcore.runtime.probes import READINESS
from aimcore.runtime.service import ServiceContext

log = logging.getLogger(__name__)
tracer = trace.get_tracer("aimcore.runtime")

Handler = Callable[[Msg], Awaitable[None]]


@dataclass
class ConsumerStats:
    handled: int = 0
    acked: int = 0
    naked: int = 0
    permanent: int = 0
    bus_errors: int = 0
    handed_back: int = 0
    redelivered: int = 0


def _undelivered(psub: JetStreamContext.PullSubscription) -> list[Msg]:
    """Messages the server delivered to the subscription that no fetch has returned yet."""
    queue = getattr(getattr(psub, "_sub", None), "_pending_queue", None)
    out: list[Msg] = []
    while queue is not None and not queue.empty():
        out.append(queue.get_nowait())
    return out


class Consumer:
    def __init__(
        self,
        js: JetStreamContext,
        spec: ConsumerSpec,
        handler: Handler,
        *,
        batch: int = 64,
        concurrency: int = 32,
    ) -> None:
        self.js = js
        self.spec = spec
        self.handler = handler
        self.batch = batch
        self.sem = asyncio.Semaphore(concurrency)
        self.stats = ConsumerStats()
        self.bound = False
        self.stopped = False
        self._subject_locks: KeyedLock[str] = KeyedLock()
        self._tasks: set[asyncio.Task[None]] = set()

    async def _bind(self, stop: asyncio.Event) -> JetStreamContext.PullSubscription | None:
        """Declare (idempotently) and bind the durable consumer, waiting out a bus that is down or
        still starting (JetStream answers 503 for a moment after a restart)."""

        async def bind() -> JetStreamContext.PullSubscription:
            await ensure_consumer(self.js, self.spec)
            return await self.js.pull_subscribe_bind(self.spec.durable, stream=self.spec.stream)

        return await until_answered(f"{self.spec.durable}: binding its consumer", bind, stop)

    @property
    def check_name(self) -> str:
        return consumer_check(self.spec.durable)

    def readiness(self) -> str | None:
        if self.stopped:
            return "stopped"
        return None if self.bound else "not bound"

    async def run(self, stop: asyncio.Event) -> None:
        READINESS.add(self.check_name, self.readiness)
        metrics.CONSUMERS.track(self)
        try:
            await self._run(stop)
        finally:
            self.bound, self.stopped = False, True

    async def _run(self, stop: asyncio.Event) -> None:
        psub = await self._bind(stop)
        if psub is None:
            return
        self.bound = True
        failures = 0
        try:
            while not stop.is_set():
                try:
                    msgs = await psub.fetch(self.batch, timeout=1.0)
                    failures = 0
                except (NatsTimeout, TimeoutError):  # an empty fetch; also raised while draining
                    continue
                except ConnectionClosedError:
                    return
                except NatsError as exc:  # e.g. 503 while JetStream restarts, or the consumer recreated
                    failures += 1
                    self.stats.bus_errors += 1
                    self.bound = False
                    delay = BUS_RETRY.delay(failures)
                    log.warning("%s: fetch failed (%r); re-binding in %.1fs", self.spec.durable, exc, delay)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), delay)
                    with contextlib.suppress(Exception):
                        await psub.unsubscribe()
                    psub = await self._bind(stop)
                    if psub is None:
                        return
                    self.bound = True
                    continue
                for i, msg in enumerate(msgs):
                    await self.sem.acquire()
                    if stop.is_set():
                        self.sem.release()
                        await self._hand_back(msgs[i:])
                        break
                    task = asyncio.create_task(self._handle(msg))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        finally:
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            if psub is not None:
                await self._hand_back(_undelivered(psub))
                with contextlib.suppress(Exception):
                    await psub.unsubscribe()

    async def _hand_back(self, msgs: list[Msg]) -> None:
        for msg in msgs:
            if not (msg.reply or "").startswith("$JS.ACK."):
                continue  # a status message of the pull request, not a delivery
            with contextlib.suppress(Exception):
                await msg.nak()
                self.stats.handed_back += 1

    async def _handle(self, msg: Msg) -> None:
        try:
            async with self._subject_locks.hold(msg.subject):
                await self._process(msg)
        finally:
            self.sem.release()

    async def _process(self, msg: Msg) -> None:
        attempt = msg.metadata.num_delivered
        if attempt > 1:
            self.stats.redelivered += 1
        error: BaseException | None = None
        ctx = tracing.extract(msg.headers)
        with tracer.start_as_current_span(f"handle {self.spec.durable}", context=ctx) as span:
            span.set_attribute("messaging.destination", msg.subject)
            span.set_attribute("messaging.delivery", attempt)
            keepalive = asyncio.create_task(self._keep_alive(msg))
            try:
                await self.handler(msg)
            except Exception as exc:
                error = exc
                if is_permanent(exc):
                    self.stats.permanent += 1
                    log.warning(
                        "%s: permanent failure on %s: %s", self.spec.durable, msg.subject, exc.message
                    )
                else:
                    span.record_exception(exc)
                    log.warning(
                        "%s: attempt %d on %s failed: %s",
                        self.spec.durable,
                        attempt,
                        msg.subject,
                        describe_error(exc),
                    )
            finally:
                keepalive.cancel()
        self.stats.handled += 1
        decision = decide(error, attempt)
        with contextlib.suppress(Exception):
            if decision.action is AckAction.ACK:
                await msg.ack()
                self.stats.acked += 1
            else:
                await msg.nak(delay=decision.delay)
                self.stats.naked += 1

    async def _keep_alive(self, msg: Msg) -> None:
        interval = max(1.0, self.spec.ack_wait / 2)
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):
                await msg.in_progress()


def consumer_check(durable: str) -> str:
    """The readiness check of the consumer ``durable`` (:attr:`Consumer.check_name`)."""
    return f"consumer {durable}"


class Consuming(NamedTuple):
    """What a service consumes, set up once its stream exists: its durable consumer and the
    handler of its messages."""

    spec: ConsumerSpec
    handler: Handler


Serve = Callable[[], AbstractAsyncContextManager[Consuming]]
"""Sets up what a service's handler needs (informers, leases, writers...), yields the
:class:`Consuming`, and tears it down when the consumer has stopped."""


async def run_consumer(ctx: ServiceContext, stream: str, durable: str, serve: Serve) -> bool:
    """Run the service's durable consumer ``durable`` on ``stream`` until the service stops: not
    ready until it is bound (so the check exists before anything can be slow), wait for the
    stream, which the watcher declares with the rest of the topology (its buckets too, so
    ``serve`` may open them), then consume what ``serve`` sets up. False when the service stopped
    before the stream existed or ``serve`` could set up."""
    READINESS.waiting(consumer_check(durable), f"waiting for the {stream} stream")
    if not await topology.wait_for_stream(ctx.js, stream, ctx.stop):
        return False
    READINESS.waiting(consumer_check(durable), "setting up what it consumes with (buckets, informer)")
    async with contextlib.AsyncExitStack() as stack:
        # what serve opens (buckets, the informer's first read) waits out a bus that is slow to
        # answer, as the stream did: a cluster just formed may still be electing their leaders
        consuming = await until_answered(
            f"{durable}: setting up", lambda: stack.enter_async_context(serve()), ctx.stop
        )
        if consuming is None:
            return False
        spec = consuming.spec
        assert (spec.stream, spec.durable) == (stream, durable), (
            f"{spec.durable} is not {durable} on {stream}"
        )
        await Consumer(ctx.js, spec, consuming.handler).run(ctx.stop)
    return True
