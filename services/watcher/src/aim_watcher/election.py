"""Leader election among watcher replicas, so a second replica is a hot standby rather than a
second set of watches (the API server keeps seeing one watch per kind).

The leader holds a key in a KV bucket with a short TTL (15 s), taken with compare-and-set and
renewed every few seconds. A standby polls for the key to disappear. A leader steps down when
another replica holds its key (it was paused past the TTL); one that cannot reach the key (a NATS
server lost and its streams electing new leaders, or the whole bus restarting) keeps leading and
retrying, and takes its key again if it expired meanwhile and nobody else took it. Nobody can
publish while the bus cannot answer, so riding the outage out costs nothing, while handing over
would: a new leader resumes from the last resume point the leader saved, and past the API server's
history it lists, so the versions of objects written in between would never become change events
(the audit history would miss them). Where two replicas do lead for a moment
(one cut off from the bus while the other took the key), the mirror's compare-and-set keeps the old
leader from regressing state and the events' ``Nats-Msg-Id`` dedupes what both publish. The key is a
:class:`aimcore.runtime.kvlease.KvLease`, the same lease the services take per object.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from nats.errors import Error as NatsError
from nats.js.errors import KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from aimcore.runtime import describe_error
from aimcore.runtime.kvlease import KvLease

log = logging.getLogger(__name__)

LEADER_KEY = "watcher"


class Election:
    def __init__(
        self,
        kv: KeyValue,
        identity: str,
        *,
        renew_every: float = 3.0,
        poll_every: float = 1.0,
    ) -> None:
        self.kv = kv
        self.lease = KvLease(kv, LEADER_KEY, identity.encode())
        self.renew_every = renew_every
        self.poll_every = poll_every
        self.terms = 0

    async def run(
        self, stop: asyncio.Event, lead: Callable[[asyncio.Event], Coroutine[Any, Any, None]]
    ) -> None:
        """Alternate between standby and leading until ``stop``; ``lead(step_down)`` runs each term."""
        while not stop.is_set():
            if not await self._try_acquire():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_every)
                continue
            self.terms += 1
            log.info("elected leader (term %d)", self.terms)
            step_down = asyncio.Event()
            leading = asyncio.create_task(lead(step_down))
            renewing = asyncio.create_task(self._renew(stop, step_down))
            await asyncio.wait({leading, renewing}, return_when=asyncio.FIRST_COMPLETED)
            step_down.set()
            for task in (leading, renewing):
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                except Exception as exc:  # the term ends; the next one starts over
                    log.warning("term %d ended by an error: %s", self.terms, describe_error(exc))
            if stop.is_set():
                # handed over once the term has ended (its watches published what they took and
                # saved where the next leader resumes), not before
                with contextlib.suppress(Exception):
                    await self.lease.release()
            log.info("leadership ended (term %d)", self.terms)

    async def _try_acquire(self) -> bool:
        try:
            return await self.lease.take()
        except (NatsError, TimeoutError) as exc:
            log.warning("election: NATS unavailable (%r)", exc)
            return False

    async def _renew(self, stop: asyncio.Event, step_down: asyncio.Event) -> None:
        while not stop.is_set() and not step_down.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.renew_every)
            if stop.is_set():
                return  # released by run() once the term has ended
            try:
                try:
                    await self.lease.renew()
                except KeyWrongLastSequenceError:
                    # the key changed: expired during an outage (take it again) or another's now
                    if not await self.lease.take():
                        log.warning("election: another replica holds the leadership; stepping down")
                        return
                    log.info("election: leadership key expired during an outage; taken again")
            except (NatsError, TimeoutError) as exc:
                log.warning("election: could not renew leadership (%r); retrying", exc)
