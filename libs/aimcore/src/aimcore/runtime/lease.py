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

The lease itself (:class:`KvLease`: a key taken with compare-and-set, renewed and given back
conditioned on its revision, expiring with the bucket's TTL) is also the watcher replicas' leader
election (``aim_watcher.election``): one key, held for as long as a replica leads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nats.js.errors import APIError, KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from aimcore.runtime import metrics

log = logging.getLogger(__name__)

Work = Callable[[], Awaitable[None]]

# JetStream's error codes for a write whose expected last sequence did not match
WRONG_LAST_SEQUENCE = (10071, 10164)


def holder_id() -> str:
    """Identifies this replica in lease values (host and pid), for debugging."""
    return f"{socket.gethostname()}/{os.getpid()}"


@dataclass
class LeaseStats:
    runs: int = 0
    reruns: int = 0
    contended: int = 0


class KvLease:
    """One key of a KV bucket held by one holder at a time.

    Taken with ``create`` (only one create of a key succeeds), renewed with an ``update``
    conditioned on the revision this holder last wrote, given back with a ``delete`` conditioned
    the same way, so a holder never renews or deletes a lease that expired and was taken by
    another. The bucket's TTL expires the key of a holder that died."""

    def __init__(self, kv: KeyValue, key: str, holder: bytes) -> None:
        self.kv = kv
        self.key = key
        self.holder = holder
        self.revision: int | None = None  # of this holder's last write, while it holds the key

    async def take(self) -> bool:
        """Take the key; False if someone holds it."""
        try:
            self.revision = await self.kv.create(self.key, self.holder)
        except KeyWrongLastSequenceError:
            return False
        return True

    async def renew(self) -> None:
        """Write the key again (restarting its TTL). Raises ``KeyWrongLastSequenceError`` if the
        lease was lost meanwhile (expired, and perhaps taken by another holder)."""
        self.revision = await self.kv.update(self.key, self.holder, last=self.revision)

    async def release(self) -> None:
        """Give the key back, unless it is no longer this holder's (then there is nothing to do)."""
        if self.revision is None:
            return
        revision, self.revision = self.revision, None
        try:
            await self.kv.delete(self.key, last=revision)
        except APIError as exc:
            # nats-py's delete does not translate a failed condition into KeyWrongLastSequenceError
            # as update does: the server's "wrong last sequence" arrives as a plain API error
            if exc.err_code not in WRONG_LAST_SEQUENCE:
                raise


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
        lease = KvLease(self.leases, key, self.holder)
        if not await lease.take():
            self.stats.contended += 1
            metrics.LEASES_CONTENDED.inc()
            await self.dirty.put(key, b"1")
            if not await lease.take():
                return False
            await self._clear_dirty(key)
        while True:
            renewing = asyncio.create_task(self._renew(lease))
            metrics.LEASES_HELD.inc()
            try:
                self.stats.runs += 1
                await work()
            finally:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewing
                try:
                    await lease.release()
                finally:
                    metrics.LEASES_HELD.dec()
            if not await self._is_dirty(key):
                return True
            if not await lease.take():
                return True  # another replica took it; it will see the mark
            await self._clear_dirty(key)
            self.stats.reruns += 1
            metrics.LEASE_RERUNS.inc()

    async def _renew(self, lease: KvLease) -> None:
        try:
            while True:
                await asyncio.sleep(self.renew_every)
                await lease.renew()
        except KeyWrongLastSequenceError:
            log.warning("lease %s was lost while working (expired or taken)", lease.key)

    async def _is_dirty(self, key: str) -> bool:
        try:
            entry = await self.dirty.get(key)
        except (KeyNotFoundError, KeyDeletedError):
            return False
        return bool(entry.value)

    async def _clear_dirty(self, key: str) -> None:
        with contextlib.suppress(KeyNotFoundError, KeyDeletedError):
            await self.dirty.delete(key)
