"""One reconcile per object at a time across all replicas of a service, with no lost trigger
(docs/design.md#leases), even when the replica holding an object's lease dies.

A replica that wants to reconcile an object takes a lease: a key in the ``aim-leases`` bucket
created with compare-and-set (only one ``create`` can win), renewed while the work runs and
expiring with the bucket's TTL if its holder dies. A replica that finds the lease taken does not
run concurrently: it overwrites the holder's value with a *dirty mark* (conditioned on the holder's
revision; the mark carries the newest resourceVersion the trigger is about), then keeps its
message until the mark is *taken up*. The holder gives the lease back with a delete conditioned on
its own revision: it succeeds when nobody marked the key (the usual case: two round trips per
reconcile, take and give back), and fails when a mark is there; then the holder takes the key back
from the mark and runs once more, on at least the version the mark names. A holder renewing its
lease finds a mark the same way and owes the re-run.

Any write after the mark means someone owes a run that starts after the trigger: the holder took
the mark back (value or give-back), another replica took a lease that had expired, or a newer mark
replaced it (its replica waits in turn). Then the loser acknowledges. If instead the mark expires
with the bucket's TTL untouched, its holder is gone (killed, evicted, partitioned): the loser takes
the lease and runs the trigger itself. A loser that acknowledged at once (the design before) lost
every trigger handed to a holder that died, until the periodic resync; waiting costs a loser a few
polls of one key while a live holder finishes, and at most the lease TTL after a holder died.

A holder whose run *fails* owes its own message nothing (that message is retried), but it may owe
a trigger that is not its message: a mark on the lease when it fails, or one it took up before
(that loser has acknowledged). Giving the lease back then lost the trigger (the retry runs on its
own message's version, or was handed to yet another failing run; seen with NATS leader elections
failing status reports mid-reconcile, ``tests/bus_cluster``). So it leaves the lease as an
*abandoned* mark naming the newest version owed: a waiting loser, or whichever replica next wants
the lease (the retry of the failed message included), takes it over at once and runs on at least
that version.

The mark lives in the lease key itself, so there is no window between giving the lease back and
looking for a mark (with a separate mark key that took a third round trip per reconcile, and a
second try of the lease by the loser to close the race). A loser that finds the key gone takes the
lease itself.

The lease itself (:class:`~aimcore.runtime.kvlease.KvLease`: a key taken with compare-and-set,
renewed and given back conditioned on its revision, expiring with the bucket's TTL) is also the
watcher replicas' leader election (``aim_watcher.election``): one key, held for as long as a
replica leads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from aimcore.api.bus import topology
from aimcore.api.errors import TransientError
from aimcore.runtime import metrics
from aimcore.runtime.kvlease import WRONG_LAST_SEQUENCE, KvLease, holder_id
from aimcore.runtime.natsinternals import bucket_stream
from aimcore.runtime.resourceversion import rv_int

log = logging.getLogger(__name__)

Work = Callable[[str | None], Awaitable[None]]
"""A reconcile; its argument is the resourceVersion it must see the object at, at least."""


@dataclass
class LeaseStats:
    runs: int = 0
    reruns: int = 0
    contended: int = 0
    takeovers: int = 0
    abandoned: int = 0  # leases taken over from a holder whose run failed with a trigger owed


DIRTY = b"\x00dirty"
"""The value of a lease key a loser marked: a trigger arrived while the holder worked (no holder
id starts with a NUL byte). ``DIRTY|<resourceVersion>|<ns>`` names the newest version a trigger
was about (so the re-run never reads an older copy) and when the holder last wrote its lease, by
the server's clock (so a mark never extends the life of a dead holder's lease)."""

MARK_ATTEMPTS = 8
POLL_FIRST = 0.01
POLL_MAX = 0.5
"""A loser looks at the mark it waits on after 10 ms, doubling to every 0.5 s: a live holder takes it
up within its reconcile (milliseconds) or at its next renewal."""


@dataclass(frozen=True)
class Mark:
    """A dirty mark read from a lease key: a re-run is owed, on at least ``at_least``; the holder
    last wrote the lease at ``held_since`` (server time, ns since the epoch; 0 if unknown).
    ``abandoned``: the holder's run failed with the re-run still owed, and left the lease to the
    next replica that wants it (a waiting loser, or the retry of the holder's own message), which
    takes it over at once and runs on at least ``at_least``."""

    at_least: str | None = None
    held_since: int = 0
    abandoned: bool = False

    def encode(self) -> bytes:
        fields = [DIRTY, (self.at_least or "").encode(), str(self.held_since).encode()]
        if self.abandoned:
            fields.append(ABANDONED)
        return b"|".join(fields)


ABANDONED = b"abandoned"


def _read_mark(value: bytes | None) -> Mark | None:
    """The mark ``value`` is, or ``None`` if it is a holder's value."""
    if not value or not value.startswith(DIRTY):
        return None
    _, at_least, held_since, flag, *_ = (*value.split(b"|"), b"", b"", b"")
    since = int(held_since) if held_since.isdigit() else 0
    return Mark(at_least.decode() or None, since, flag == ABANDONED)


def _newer(a: str | None, b: str | None) -> str | None:
    """The newer of two resourceVersions (``None`` is older than any)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if rv_int(a) >= rv_int(b) else b


@dataclass(frozen=True)
class _Entry:
    """A lease key's latest value, with its revision and the server's time of the write."""

    value: bytes
    revision: int
    written: int  # ns since the epoch, by the server's clock


@dataclass(frozen=True)
class _Gone:
    """The key holds nothing: ``revision`` is the delete marker's (a holder gave it back), or 0
    when no message is left (it expired)."""

    revision: int = 0


async def _read(kv: KeyValue, key: str) -> _Entry | _Gone:
    """A KV get that keeps the server's timestamp (``KeyValue.get`` drops it)."""
    try:
        bucket = bucket_stream(kv)
        msg = await bucket.js.get_msg(bucket.stream, subject=bucket.subject(key), direct=bucket.direct)
    except NotFoundError:
        return _Gone()
    if (msg.headers or {}).get("KV-Operation") in (KV_DEL, KV_PURGE):
        return _Gone(msg.seq or 0)
    written = int(msg.time.timestamp() * 1e9) if msg.time is not None else 0
    return _Entry(msg.data or b"", msg.seq or 0, written)


@dataclass
class _Run:
    """What renewing found during one run: a mark (a re-run is owed, on at least ``at_least``)."""

    marked: bool = False
    at_least: str | None = None


class ObjectLeases:
    def __init__(
        self,
        leases: KeyValue,
        service: str,
        *,
        holder: str | None = None,
        ttl: float = topology.LEASE_TTL,
        renew_every: float | None = None,
        stop: asyncio.Event | None = None,
    ) -> None:
        self.leases = leases
        self.service = service
        self.holder = (holder or holder_id()).encode()
        self.ttl = ttl  # the bucket's: a holder that has not written for this long is gone
        self.renew_every = renew_every if renew_every is not None else ttl / 3
        self.stop = stop
        self.stats = LeaseStats()

    def key(self, object_key: str) -> str:
        return f"{self.service}.{object_key}"

    async def run_exclusive(self, object_key: str, work: Work, at_least: str | None = None) -> bool:
        """Run ``work`` while holding the object's lease, re-running it for triggers that arrived
        meanwhile. Returns False if another replica holding the lease took this trigger up (it
        runs again on fresh state); returns only once someone owes that run."""
        key = self.key(object_key)
        lease = KvLease(self.leases, key, self.holder)
        if not await lease.take():
            self.stats.contended += 1
            metrics.LEASES_CONTENDED.inc()
            run_here = await self._hand_over(lease, at_least)
            if run_here is None:
                return False
            at_least = run_here.at_least
        owes = False  # a mark was taken up: its replica acknowledged, the re-run is this call's
        while True:
            run = _Run()
            renewing = asyncio.create_task(self._renew(lease, run))
            metrics.LEASES_HELD.inc()
            try:
                try:
                    self.stats.runs += 1
                    await work(at_least)
                finally:
                    renewing.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await renewing
                mark = await self._give_back(lease)
            except BaseException:
                # The failed run is retried through its message; a trigger marked meanwhile, or
                # taken up before, is not that message's: the lease is left to it (abandoned)
                with contextlib.suppress(Exception):
                    await self._abandon(lease, _newer(at_least, run.at_least), owes=owes or run.marked)
                raise
            finally:
                metrics.LEASES_HELD.dec()
            if mark is not None:
                at_least = _newer(at_least, _newer(mark.at_least, run.at_least))  # taken back: run again
            elif not run.marked or not await lease.take():
                return True  # nothing owed, or another replica took the lease (it runs on fresh state)
            else:
                at_least = _newer(at_least, run.at_least)
            owes = True
            self.stats.reruns += 1
            metrics.LEASE_RERUNS.inc()

    async def _hand_over(self, lease: KvLease, at_least: str | None) -> Mark | None:
        """Hand this trigger to the holder by marking its lease, and wait until the mark is taken
        up (``None``). A mark when this replica holds the lease instead (it was free, abandoned,
        or its holder is gone) and must run the trigger itself, on at least its ``at_least``."""
        for _ in range(MARK_ATTEMPTS):
            entry = await _read(self.leases, lease.key)
            if isinstance(entry, _Gone):
                if await lease.take():
                    return Mark(at_least)
                continue  # someone else took it just now: mark theirs
            marked = _read_mark(entry.value)
            if marked is not None and marked.abandoned:
                try:
                    return await self._take_abandoned(lease, entry.revision, marked, at_least)
                except KeyWrongLastSequenceError:
                    continue  # another replica took it just now: mark theirs
            if marked is not None and _newer(marked.at_least, at_least) == marked.at_least:
                return await self._wait_taken_up(lease, entry.revision, marked.held_since, marked.at_least)
            # a mark keeps the time the holder last wrote: writing it must not restart the clock
            mark = Mark(
                _newer(marked.at_least if marked else None, at_least),
                marked.held_since if marked else entry.written,
            )
            try:
                revision = await self.leases.update(lease.key, mark.encode(), last=entry.revision)
            except KeyWrongLastSequenceError:
                continue  # renewed, given back or marked meanwhile: look again
            return await self._wait_taken_up(lease, revision, mark.held_since, mark.at_least)
        raise TransientError(f"lease {lease.key}: could not hand over a trigger (contended)")

    async def _wait_taken_up(
        self, lease: KvLease, mark: int, held_since: int, at_least: str | None
    ) -> Mark | None:
        """Wait until the mark at revision ``mark`` is taken up (``None``), or until its holder,
        which last wrote at ``held_since``, is gone or failed (a mark: this replica took the lease
        over and runs on at least its ``at_least``).

        A live holder takes a mark up at its next renewal at the latest (every ``renew_every``, a
        third of the TTL), so one that has not written for the TTL is gone: its lease would have
        expired but for the mark. Both times are the server's (the mark's own write time is read
        back), so the replicas' clocks need not agree. A holder whose run failed abandons the
        lease to the mark at once (:meth:`_abandon`)."""
        waited = time.monotonic()
        deadline: float | None = None
        delay = POLL_FIRST
        while True:
            if self.stop is not None and self.stop.is_set():
                raise TransientError(f"lease {lease.key}: stopping before the holder took the trigger up")
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)
            entry = await _read(self.leases, lease.key)
            if isinstance(entry, _Gone):
                if entry.revision > mark:
                    return None  # given back after taking the mark up (its re-run is done)
                if not await lease.take():
                    return None  # another replica took the expired lease: its run is after the trigger
                return self._took_over(lease, waited, at_least)
            if entry.revision != mark:
                marked = _read_mark(entry.value)
                if marked is None or not marked.abandoned:
                    return None  # taken up: taken back by its holder, or replaced by a newer mark or lease
                try:  # the holder's run failed and left the lease to the mark
                    return await self._take_abandoned(lease, entry.revision, marked, at_least)
                except KeyWrongLastSequenceError:
                    continue  # another replica took it just now: the next look tells
            if deadline is None:
                # the holder's remaining time, seen from the mark's write (server clock), as a
                # deadline on this replica's clock (a few ms late at worst: the mark is read after)
                age = (entry.written - held_since) / 1e9 if held_since and entry.written else 0.0
                deadline = time.monotonic() + max(0.0, self.ttl - age)
            if time.monotonic() >= deadline:
                try:
                    lease.revision = await self.leases.update(lease.key, self.holder, last=mark)
                except KeyWrongLastSequenceError:
                    continue  # taken up (or over) just now: the next look tells
                return self._took_over(lease, waited, at_least)

    async def _take_abandoned(
        self, lease: KvLease, revision: int, marked: Mark, at_least: str | None
    ) -> Mark:
        """Take over a lease its holder abandoned (raises ``KeyWrongLastSequenceError`` if another
        replica took it first); the run owed is on at least the newer of both versions."""
        lease.revision = await self.leases.update(lease.key, self.holder, last=revision)
        self.stats.abandoned += 1
        metrics.LEASE_TAKEOVERS.inc()
        log.info("lease %s: its holder's run failed with a trigger owed; running it here", lease.key)
        return Mark(_newer(at_least, marked.at_least))

    def _took_over(self, lease: KvLease, waited: float, at_least: str | None) -> Mark:
        self.stats.takeovers += 1
        metrics.LEASE_TAKEOVERS.inc()
        log.warning(
            "lease %s: its holder stopped before taking a trigger up; running it here (waited %.1fs)",
            lease.key,
            time.monotonic() - waited,
        )
        return Mark(at_least)

    async def _reclaim(self, lease: KvLease) -> Mark | None:
        """After a conditional write of ours failed: if the key holds a mark, take the lease back
        from it and answer the mark (a re-run is owed). ``None``: the lease expired and is another
        replica's, or gone."""
        for _ in range(MARK_ATTEMPTS):
            try:
                entry = await self.leases.get(lease.key)
            except KeyNotFoundError:
                return None
            marked = _read_mark(entry.value)
            if marked is None:
                return None
            try:
                lease.revision = await self.leases.update(lease.key, self.holder, last=entry.revision)
                return marked
            except KeyWrongLastSequenceError:
                continue
        return None

    async def _give_back(self, lease: KvLease) -> Mark | None:
        """Give the lease back unless it was marked; if it was, the lease is held again and the
        mark is answered (``None``: given back)."""
        revision = lease.revision
        if revision is None:
            return None
        try:
            await self.leases.delete(lease.key, last=revision)
        except APIError as exc:
            if exc.err_code not in WRONG_LAST_SEQUENCE:
                raise
            marked = await self._reclaim(lease)
            if marked is not None:
                return marked
        lease.revision = None
        return None

    async def _abandon(self, lease: KvLease, at_least: str | None, *, owes: bool) -> None:
        """After a failed run: give the lease back, unless a run is still owed to a trigger that is
        not this run's message (a mark on the lease now, or one taken up before, whose replica
        acknowledged: ``owes``, on at least ``at_least``). Then the lease is left as an abandoned
        mark, which the next replica to want it (a waiting loser, or the retry of this run's own
        message) takes over at once; if none comes within the TTL, the retry still runs."""
        revision, lease.revision = lease.revision, None
        if revision is None:
            return
        if not owes:
            try:
                await self.leases.delete(lease.key, last=revision)
                return
            except APIError as exc:
                if exc.err_code not in WRONG_LAST_SEQUENCE:
                    raise
        for _ in range(MARK_ATTEMPTS):
            entry = await _read(self.leases, lease.key)
            if isinstance(entry, _Gone):
                return  # expired
            marked = _read_mark(entry.value)
            if marked is None and entry.revision != revision:
                return  # expired and taken by another replica: its run is after every trigger
            owed = _newer(at_least if owes else None, marked.at_least if marked else None)
            try:
                await self.leases.update(lease.key, Mark(owed, abandoned=True).encode(), last=entry.revision)
                return
            except KeyWrongLastSequenceError:
                continue  # marked (again) just now

    async def _renew(self, lease: KvLease, run: _Run) -> None:
        while True:
            await asyncio.sleep(self.renew_every)
            try:
                await lease.renew()
            except KeyWrongLastSequenceError:
                marked = await self._reclaim(lease)
                if marked is not None:
                    run.marked = True
                    run.at_least = _newer(run.at_least, marked.at_least)
                    continue
                log.warning("lease %s was lost while working (expired or taken)", lease.key)
                return
