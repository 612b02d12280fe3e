"""One reconcile per object at a time across all replicas of a service, with no lost trigger
(DESIGN §2.5).

A replica that wants to reconcile an object takes a lease: a key in the ``aim-leases`` bucket
created with compare-and-set (only one ``create`` can win), renewed while the work runs and
expiring with the bucket's TTL if its holder dies. A replica that finds the lease taken does not
wait and does not drop the trigger: it overwrites the holder's value with a *dirty mark*,
conditioned on the holder's revision, and acknowledges its message. The holder gives the lease
back with a delete conditioned on its own revision: it succeeds when nobody marked the key (the
usual case: two round trips per reconcile, take and give back), and fails when a mark is there;
then the holder takes the key back from the mark and runs once more, so the change that arrived
during its run is reconciled from fresh state. A holder renewing its lease finds a mark the same
way and owes the re-run.

The mark lives in the lease key itself, so there is no window between giving the lease back and
looking for a mark (with a separate mark key that took a third round trip per reconcile, and a
second try of the lease by the loser to close the race). A loser that finds the key gone takes the
lease itself.

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

from aimcore.api.errors import TransientError
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


DIRTY = b"\x00dirty"
"""The value of a lease key a loser marked: a trigger arrived while the holder worked (no holder
id starts with a NUL byte)."""

MARK_ATTEMPTS = 8


@dataclass
class _Run:
    """What renewing found during one run: a mark (a re-run is owed)."""

    marked: bool = False


class ObjectLeases:
    def __init__(
        self,
        leases: KeyValue,
        service: str,
        *,
        holder: str | None = None,
        renew_every: float = 10.0,
    ) -> None:
        self.leases = leases
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
            if not await self._mark(lease):
                return False
        while True:
            run = _Run()
            renewing = asyncio.create_task(self._renew(lease, run))
            metrics.LEASES_HELD.inc()
            try:
                try:
                    self.stats.runs += 1
                    await work()
                finally:
                    renewing.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await renewing
                marked = await self._give_back(lease)
            except BaseException:
                # a failed run is retried through its message, which covers a trigger marked
                # meanwhile: give the lease back even from a mark, or it would block until its TTL
                with contextlib.suppress(Exception):
                    await self._let_go(lease)
                raise
            finally:
                metrics.LEASES_HELD.dec()
            if marked:
                pass  # taken back from the mark: run again
            elif not run.marked or not await lease.take():
                return True  # nothing owed, or another replica took the lease (it runs on fresh state)
            self.stats.reruns += 1
            metrics.LEASE_RERUNS.inc()

    async def _mark(self, lease: KvLease) -> bool:
        """Hand this trigger to the holder by marking its lease; True if the lease turned out free
        and this replica took it instead."""
        for _ in range(MARK_ATTEMPTS):
            try:
                entry = await self.leases.get(lease.key)
            except (KeyNotFoundError, KeyDeletedError):
                if await lease.take():
                    return True
                continue  # someone else took it just now: mark theirs
            if entry.value == DIRTY:
                return False  # marked already: the holder runs once more for both triggers
            try:
                await self.leases.update(lease.key, DIRTY, last=entry.revision)
                return False
            except KeyWrongLastSequenceError:
                continue  # renewed, given back or marked meanwhile: look again
        raise TransientError(f"lease {lease.key}: could not hand over a trigger (contended)")

    async def _reclaim(self, lease: KvLease) -> bool:
        """After a conditional write of ours failed: if the key holds a mark, take the lease back
        from it (True: a re-run is owed). Anything else means the lease expired and is another
        replica's, or gone."""
        for _ in range(MARK_ATTEMPTS):
            try:
                entry = await self.leases.get(lease.key)
            except (KeyNotFoundError, KeyDeletedError):
                return False
            if entry.value != DIRTY:
                return False
            try:
                lease.revision = await self.leases.update(lease.key, self.holder, last=entry.revision)
                return True
            except KeyWrongLastSequenceError:
                continue
        return False

    async def _give_back(self, lease: KvLease) -> bool:
        """Give the lease back unless it was marked; True if it was (the lease is held again)."""
        revision = lease.revision
        if revision is None:
            return False
        try:
            await self.leases.delete(lease.key, last=revision)
        except APIError as exc:
            if exc.err_code not in WRONG_LAST_SEQUENCE:
                raise
            if await self._reclaim(lease):
                return True
        lease.revision = None
        return False

    async def _let_go(self, lease: KvLease) -> None:
        for _ in range(MARK_ATTEMPTS):
            if not await self._give_back(lease):
                return

    async def _renew(self, lease: KvLease, run: _Run) -> None:
        while True:
            await asyncio.sleep(self.renew_every)
            try:
                await lease.renew()
            except KeyWrongLastSequenceError:
                if await self._reclaim(lease):
                    run.marked = True
                    continue
                log.warning("lease %s was lost while working (expired or taken)", lease.key)
                return
