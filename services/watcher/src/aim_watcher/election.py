"""Leader election among watcher replicas, so a second replica is a hot standby rather than a
second set of watches (the API server keeps seeing one watch per kind).

The leader holds a key in a KV bucket with a short TTL (15 s), taken with compare-and-set and
renewed every few seconds. A standby polls for the key to disappear. A leader whose key was taken
(after a pause) steps down at once; one that cannot reach the key (NATS unreachable, or the
bucket's stream electing a new leader after a NATS server died) keeps trying until its renew
deadline (10 s after the last renewal, as controller-runtime's lease duration and renew deadline),
then steps down: its watches are cancelled before the TTL lets another replica take over, and the
mirror's compare-and-set guards the short overlap where an old leader may still be writing. Riding
out a short outage matters: a new leader starts with a list, so the versions of objects written
while no watcher led never become change events (the audit history would miss them). The key is a
:class:`aimcore.runtime.lease.KvLease`, the same lease the services take per object.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from nats.errors import Error as NatsError
from nats.js.errors import KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from aimcore.runtime.lease import KvLease

log = logging.getLogger(__name__)

LEADER_KEY = "watcher"
RENEW_DEADLINE = 10.0
"""How long a leader that cannot reach its key keeps leading after its last renewal: below the
election bucket's TTL (:data:`aimcore.api.bus.topology.ELECTION_TTL`, 15 s), so it has stepped
down before another replica can take the key."""


class Election:
    def __init__(
        self,
        kv: KeyValue,
        identity: str,
        *,
        renew_every: float = 3.0,
        poll_every: float = 1.0,
        renew_deadline: float = RENEW_DEADLINE,
    ) -> None:
        self.kv = kv
        self.lease = KvLease(kv, LEADER_KEY, identity.encode())
        self.renew_every = renew_every
        self.renew_deadline = renew_deadline
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
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            log.info("leadership ended (term %d)", self.terms)

    async def _try_acquire(self) -> bool:
        try:
            return await self.lease.take()
        except (NatsError, TimeoutError) as exc:
            log.warning("election: NATS unavailable (%r)", exc)
            return False

    async def _renew(self, stop: asyncio.Event, step_down: asyncio.Event) -> None:
        renewed = time.monotonic()  # taken just now
        while not stop.is_set() and not step_down.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.renew_every)
            if stop.is_set():
                with contextlib.suppress(Exception):
                    await self.lease.release()  # hand over at once
                return
            try:
                await self.lease.renew()
                renewed = time.monotonic()
            except KeyWrongLastSequenceError as exc:
                log.warning("election: leadership taken (%r); stepping down", exc)
                return
            except (NatsError, TimeoutError) as exc:
                if time.monotonic() - renewed + self.renew_every >= self.renew_deadline:
                    log.warning("election: could not renew leadership (%r); stepping down", exc)
                    return
                log.warning("election: could not renew leadership (%r); retrying", exc)
