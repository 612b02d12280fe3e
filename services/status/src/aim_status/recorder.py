"""Writes the Kubernetes Events of status writes (:mod:`aim_status.events` decides which) to the
API server as core/v1 Events, best effort: a status write never waits for, or fails because of, an
Event.

:meth:`EventRecorder.record` only computes the Events and puts them on a bounded queue (full:
the Event is dropped and counted); one worker task writes them in order: the spam filter first,
then the replica's rate limit (a write waits for its turn), then a PATCH of
``count``/``lastTimestamp`` for an Event written recently with the same key, else a POST of a new
one (also when the Event to patch is gone: Events expire after the API server's ``--event-ttl``).
A failed write is counted and dropped, never retried; the first failure is logged
as a warning, later ones at debug level until a write succeeds again.

Aggregation state is per replica, as client-go's is per process: with two status replicas one
transition may be counted in two Event objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import Counter

from aim_status.events import (
    Aggregates,
    EventSpec,
    RateLimit,
    Seen,
    SpamFilter,
    count_patch,
    event_body,
    event_name,
    events_for,
    transitions,
)
from aim_status.writer import Written
from aimcore.api.events import Involved
from aimcore.api.kinds import EVENT
from aimcore.runtime import REGISTRY, ApiException, Kube, describe_error

log = logging.getLogger(__name__)

QUEUE_SIZE = 1000


@dataclass
class RecorderStats:
    created: int = 0  # new Event objects
    patched: int = 0  # count increments of an existing Event
    filtered: int = 0  # dropped by the spam filter
    dropped: int = 0  # dropped because the queue was full
    failed: int = 0  # writes the API server refused or that did not reach it


EVENTS = Counter(
    "aim_events_total",
    "Kubernetes Events by outcome: created, patched (a count increment), filtered (the spam "
    "filter), dropped (the queue was full), failed (refused or not delivered).",
    ["outcome"],
    registry=REGISTRY,
)


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        *,
        queue_size: int = QUEUE_SIZE,
        instance: str | None = None,
        clock: Callable[[], float] = time.time,
        rate: RateLimit | None = None,
    ) -> None:
        self.kube = kube
        self.rate = rate or RateLimit(0, 1)
        self.instance = instance or socket.gethostname()
        self.clock = clock
        self.stats = RecorderStats()
        self.aggregates = Aggregates()
        self.spam = SpamFilter()
        self._queue: asyncio.Queue[EventSpec] = asyncio.Queue(maxsize=queue_size)
        self._failing = False
        self._warned_full = False

    def _count(self, outcome: str) -> None:
        setattr(self.stats, outcome, getattr(self.stats, outcome) + 1)
        EVENTS.labels(outcome).inc()

    def record(self, written: Written) -> None:
        """Queue the Events of one status write; never blocks, never raises."""
        if self._queue.full():  # a burst: only count what is dropped (composing them costs CPU)
            with contextlib.suppress(Exception):
                for _ in transitions(written.old, written.new):
                    self._drop()
            return
        try:
            obj = written.object
            involved = Involved(
                api_version=written.ref.api_version,
                kind=written.ref.kind,
                namespace=obj.namespace if written.ref.namespaced else None,
                name=obj.name,
                uid=written.uid,
                resource_version=written.resource_version,
            )
            specs = events_for(written.ref, involved, written.old, written.new)
        except Exception:  # a bug here must not fail the status write
            log.exception("events of the status write of %s not computed", written.object.display)
            return
        for spec in specs:
            try:
                self._queue.put_nowait(spec)
            except asyncio.QueueFull:
                self._drop()

    def _drop(self) -> None:
        self._count("dropped")
        if not self._warned_full:
            self._warned_full = True
            log.warning("event queue full (%d): dropping Events", self._queue.maxsize)

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def run(self) -> None:
        """Write queued Events until cancelled."""
        while True:
            spec = await self._queue.get()
            try:
                await self.write(spec)
            finally:
                self._queue.task_done()

    async def write(self, spec: EventSpec) -> None:
        now = self.clock()
        if not self.spam.allow(spec.involved.uid or spec.involved.name, now):
            self._count("filtered")
            return
        if (wait := self.rate.delay(now)) > 0:
            await asyncio.sleep(wait)
            now = self.clock()
        try:
            seen = self.aggregates.lookup(spec.key, now)
            if seen is not None and await self._patch(spec, seen, now):
                return
            name = event_name(spec, now)
            await self.kube.create(EVENT, event_body(spec, name, now, self.instance), spec.namespace)
            self.aggregates.remember(spec.key, Seen(name, spec.namespace, 1, now))
            self._count("created")
            self._succeeded()
        except Exception as exc:
            self._failed(spec, exc)

    async def _patch(self, spec: EventSpec, seen: Seen, now: float) -> bool:
        """Count one more occurrence; False when the Event is gone (expired or deleted)."""
        try:
            await self.kube.patch(EVENT, seen.namespace, seen.name, count_patch(seen.count + 1, now))
        except ApiException as exc:
            if exc.status == 404:
                self.aggregates.forget(spec.key)
                return False
            raise
        self.aggregates.remember(spec.key, Seen(seen.name, seen.namespace, seen.count + 1, now))
        self._count("patched")
        self._succeeded()
        return True

    def _succeeded(self) -> None:
        if self._failing:
            self._failing = False
            log.info("Events are written again (%d failed so far)", self.stats.failed)

    def _failed(self, spec: EventSpec, exc: BaseException) -> None:
        self._count("failed")
        what = f"{spec.type} {spec.reason} Event for {spec.involved.kind} {spec.involved.name}"
        if self._failing:
            log.debug("%s not written: %s", what, describe_error(exc))
        else:
            self._failing = True
            log.warning(
                "%s not written: %s (further failures are logged at debug level until one succeeds)",
                what,
                describe_error(exc),
            )

    async def close(self, timeout: float = 2.0) -> None:
        """Give queued Events ``timeout`` seconds to be written (the caller then cancels :meth:`run`)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._queue.join()
