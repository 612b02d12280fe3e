"""One reconcile per object at a time across all replicas of a service, with no lost trigger
(DESIGN §2.5).

A replica that wants to reconcile an object takes a lease: a key in the ``aim-leases`` bucket
created with compare-and-set (only one ``create`` can win), renewed while the work runs and
expiring with the bucket's TTL if its holder dies. A replica that finds the lease taken does not
wait and does not drop the trigger: it sets a *dirty mark* for the object and acknowledges its
message. The holder, after its run, releases the lease and looks for a dirty mark; if there is
one it takes the lease again, clears the mark and runs once more, so the change that arrived
during its run is reconciled from fresh state.

The loser re-tries the lease once *after* setting the mark, which closes the race where the holder
checked for a mark just before it was set: either the holder sees the mark, or the loser finds the
lease free and runs itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

log = logging.getLogger(__name__)

Work = Callable[[], Awaitable[None]]


def holder_id() -> str:
    """Identifies this replica in lease values (host and pid), for debugging."""
    return f"{socket.gethostname()}/{os.getpid()}"


@dataclass
class LeaseStats:
    runs: int = 0
    reruns: int = 0
    contended: int = 0


class ObjectLeases:
    def __init__(
        self,
        leases: KeyValue,
        dirty: KeyValue,
        service: str,
        *,
        holder: str | None = None,
        renew_every: float = 10.0,
    ) -> None:
        self.leases = leases
        self.dirty = dirty
        self.service = service
        self.holder = (holder or holder_id()).encode()
        self.renew_every = renew_every
        self.stats = LeaseStats()

    def key(self, object_key: str) -> str:
        return f"{self.service}.{object_key}"

    async def run_exclusive(self, object_key: str, work: Work) -> bool:
        """Run ``work`` while holding the object's lease, re-running it for triggers that arrived
        meanwhile. Returns False if another replica holds the lease (the trigger is handed to it)."""
        key = self.key(object_key)
        rev = await self._acquire(key)
        if rev is None:
            self.stats.contended += 1
            await self.dirty.put(key, b"1")
            rev = await self._acquire(key)
            if rev is None:
                return False
            await self._clear_dirty(key)
        while True:
            renewing = asyncio.create_task(self._renew(key, rev))
            try:
                self.stats.runs += 1
                await work()
            finally:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    rev = await renewing
                await self._release(key, rev)
            if not await self._is_dirty(key):
                return True
            next_rev = await self._acquire(key)
            if next_rev is None:
                return True  # another replica took it; it will see the mark
            rev = next_rev
            await self._clear_dirty(key)
            self.stats.reruns += 1

    async def _acquire(self, key: str) -> int | None:
        try:
            return await self.leases.create(key, self.holder)
        except KeyWrongLastSequenceError:
            return None

    async def _renew(self, key: str, rev: int) -> int:
        try:
            while True:
                await asyncio.sleep(self.renew_every)
                rev = await self.leases.update(key, self.holder, last=rev)
        except asyncio.CancelledError:
            return rev
        except KeyWrongLastSequenceError:
            log.warning("lease %s was lost while working (expired or taken)", key)
            return rev

    async def _release(self, key: str, rev: int) -> None:
        with contextlib.suppress(KeyWrongLastSequenceError, KeyNotFoundError):
            await self.leases.delete(key, last=rev)

    async def _is_dirty(self, key: str) -> bool:
        try:
            entry = await self.dirty.get(key)
        except (KeyNotFoundError, KeyDeletedError):
            return False
        return bool(entry.value)

    async def _clear_dirty(self, key: str) -> None:
        with contextlib.suppress(KeyNotFoundError, KeyDeletedError):
            await self.dirty.delete(key)
