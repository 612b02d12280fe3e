"""List-then-watch one kind, the way informers do: bookmarks keep the resourceVersion fresh, a
``410 Gone`` or a broken stream goes back to listing (publishing only what changed), and a
periodic relist republishes every object as a ``resync`` event so a lost message delays work but
never loses it (or at once when asked: :meth:`KindWatcher.request_resync`). Deletions that
happened while no watch was open are found by diffing the relist against what was known. A new
leader resumes the previous one's watch where everything was published
(:mod:`aim_watcher.resume`) instead of listing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from nats.errors import Error as NatsError
from prometheus_client import Counter

from aim_watcher.publisher import Publisher
from aim_watcher.resume import ResumePoint, ResumePoints
from aimcore.api.backoff import Backoff
from aimcore.api.bus.messages import ChangeType
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime import REGISTRY, ApiException, Kube, describe_error
from aimcore.runtime.kube import Gone
from aimcore.runtime.settings.process import RESYNC_SECONDS

log = logging.getLogger(__name__)

WATCH_RETRY = Backoff(base=1.0, cap=60.0)
"""A list or watch that failed (API server down, a network error): relist after 1 s doubling to 60 s."""
SAVE_EVERY = 30.0
"""The least time between two resume points saved on watch bookmarks (the API server sends one
about every minute): how far back a leader that died resumes from."""
STOP_GRACE = 10.0
"""How long a stopping watch may take to publish what it has taken, so that its resume point
covers it; past that it is cancelled (the next leader resumes from the point before)."""

ObjKey = tuple[str | None, str]

RESYNCS = Counter(
    "aim_watcher_resyncs_total",
    "Full resyncs of a kind completed: every object listed and republished as a resync event.",
    ["kind"],
    registry=REGISTRY,
)
RESUMES = Counter(
    "aim_watcher_resumes_total",
    "Watches a new leader resumed where the last one published everything, instead of listing.",
    ["kind"],
    registry=REGISTRY,
)


@dataclass(slots=True)
class Known:
    """What the watcher remembers of an object it published: its identity and version, enough to
    tell a changed object on relist and to publish the deletion of one that is gone. Not the object
    itself: with 10,000 objects that was half the watcher's memory (the mirror holds them)."""

    uid: str
    resource_version: str
    generation: int | None
    published: bool = True
    """False for a version found in the mirror without its change event (a leader stopped
    between writing the mirror and publishing): the next list publishes it as a change."""

    @classmethod
    def of(cls, obj: Obj) -> Known:
        meta = obj.get("metadata") or {}
        return cls(meta.get("uid", ""), str(meta.get("resourceVersion", "")), meta.get("generation"))

    def bare(self, ref: KindRef, key: ObjKey) -> Obj:
        """The object as far as an event about it needs (identity and version): its deletion, or a
        resync of a version the mirror holds (nothing of it is written)."""
        namespace, name = key
        meta: Obj = {"name": name, "uid": self.uid, "resourceVersion": self.resource_version}
        if namespace is not None:
            meta["namespace"] = namespace
        if self.generation is not None:
            meta["generation"] = self.generation
        return {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": meta}


def object_key(obj: Obj) -> ObjKey:
    meta = obj.get("metadata") or {}
    return meta.get("namespace"), meta["name"]


class PerObject:
    """Publishes concurrently across objects and in order per object, at most ``limit`` at once.

    Publishing one change is a few round trips to NATS; done one after another they made the
    watcher the pipeline's slowest stage under bursts (a thousand new objects). Changes of one
    object still go out in watch order (each waits for the one before), and :meth:`drain` waits
    for all, so a resourceVersion is only handed back once everything before it is published."""

    def __init__(self, limit: int = 64) -> None:
        self._tails: dict[ObjKey, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(limit)

    async def submit(self, key: ObjKey, publish: Callable[[], Awaitable[None]]) -> None:
        await self._slots.acquire()
        before = self._tails.get(key)

        async def run() -> None:
            try:
                if before is not None:
                    await before
                await publish()
            finally:
                self._slots.release()
                if self._tails.get(key) is task:
                    del self._tails[key]

        task = asyncio.create_task(run())
        self._tails[key] = task

    async def drain(self) -> None:
        """Wait for every publication; the first failure is raised."""
        while self._tails:
            await asyncio.gather(*list(self._tails.values()))

    def cancel(self) -> None:
        for task in self._tails.values():
            task.cancel()
        self._tails.clear()


class KindWatcher:
    def __init__(
        self,
        kube: Kube,
        ref: KindRef,
        publisher: Publisher,
        *,
        resync_seconds: float = RESYNC_SECONDS,
        watch_timeout: int = 300,
        label_selector: str | None = None,
        republish: bool = True,
        points: ResumePoints | None = None,
    ) -> None:
        self.kube = kube
        self.ref = ref
        self.publisher = publisher
        self.resync_seconds = resync_seconds
        self.watch_timeout = watch_timeout
        self.label_selector = label_selector
        self.republish = republish  # whether a resync publishes versions published before
        self.known: dict[ObjKey, Known] = {}
        self.synced = asyncio.Event()
        self.relists = 0
        self.expired = 0
        self.resumed = 0
        self._resync_asked = asyncio.Event()
        self.points = points
        self.resume_from: str | None = None
        self._through = 0  # the mirror revision through which every entry's version was published
        self._highest = 0  # the highest mirror revision of the kind known (seeded or written here)
        self._unconfirmed = False  # seeded versions not yet known to be published
        self._saved: tuple[str, int] | None = None  # the last point saved: (resourceVersion, revision)
        self._bookmarked = 0.0  # when a bookmark's resume point was last saved (loop time)
        self._taken = ""  # the resourceVersion of the last watch event submitted for publishing
        self._bookmarks = 0  # bookmarks in this watch window
        RESYNCS.labels(ref.short)  # exposed from the start, at 0 until the first resync
        RESUMES.labels(ref.short)

    def request_resync(self) -> None:
        """Resync now rather than at the end of the interval: the open watch is left, every object
        listed and republished (an operator after an outage, ``aimctl bench scale``); the interval
        starts again from this resync. A version the stream got as a resync within its duplicate
        window (two minutes) is stored once."""
        self._resync_asked.set()

    def seed(
        self,
        known: dict[ObjKey, Known],
        *,
        resume: ResumePoint | None = None,
        through: int = 0,
        highest: int = 0,
    ) -> None:
        """What the mirror already holds (from a previous run), so deletions are noticed and what
        was published is not published again. A version mirrored but never published
        (``Known.published``) is a change to the next list (its dependents were never woken for
        it), not a resync. With ``resume``, the first watch opens where the previous leader
        published everything instead of listing; ``through`` is the mirror revision through
        which every entry's version was published, ``highest`` the highest of them all."""
        self.known.update(known)
        self.resume_from = resume.resource_version if resume is not None else None
        self._through = through
        self._highest = max(self._highest, highest)
        self._unconfirmed = any(not k.published for k in known.values())

    async def run(self, stop: asyncio.Event) -> None:
        """List and watch until ``stop`` is set. The watch then publishes what it has taken and
        saves its resume point; one that cannot within :data:`STOP_GRACE` is cancelled."""
        work = asyncio.create_task(self._run(stop))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait({work}, timeout=STOP_GRACE)
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work

    async def _run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        next_resync = loop.time() + self.resync_seconds
        # The first list publishes what is new to the bus: versions nobody published (seeded from
        # the mirror and the events stream: watching.seed), deletions missed. Republishing every
        # object as well made each watcher restart or failover a full resync of every service
        # (and held the new leader's readiness for it); the interval's resync is the safety net.
        resync = False
        failures = 0
        rv: str | None = self.resume_from  # where the previous leader published everything
        if rv is not None:
            self.resumed += 1
            RESUMES.labels(self.ref.short).inc()
            log.info("%s: resuming the watch at resourceVersion %s", self.ref.short, rv)
        while not stop.is_set():
            try:
                if rv is None:
                    rv = await self._relist(resync=resync)
                    resync = False
                    failures = 0
                    self.synced.set()
                    await self._save(rv, confirmed=True)
                while not stop.is_set():
                    rv, bookmarked = await self._watch(rv, stop, until=next_resync)
                    failures = 0
                    await self._save(rv, confirmed=bookmarked)
                    if loop.time() >= next_resync or self._resync_asked.is_set():
                        self._resync_asked.clear()
                        next_resync = loop.time() + self.resync_seconds
                        resync = True
                        rv = None
                        break
            except Gone:
                self.expired += 1
                rv = None
                if self._unconfirmed:  # a resumed watch too late: not watching until listed
                    self.synced.clear()
                log.info("%s: resourceVersion expired; relisting", self.ref.short)
            except (ApiException, OSError, TimeoutError, ValueError) as exc:
                rv = None
                failures += 1
                delay = WATCH_RETRY.delay(failures)
                if isinstance(exc, ApiException) and exc.status == 404:
                    # The kind is not served (e.g. KServe not installed): check again now and then.
                    if failures == 1:
                        log.info("%s is not served by this cluster; checking every minute", self.ref.short)
                    delay = 60.0
                else:
                    log.warning(
                        "%s: watch failed (%s); relisting in %.0fs",
                        self.ref.short,
                        describe_error(exc),
                        delay,
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)

    async def _save(self, rv: str, *, confirmed: bool) -> None:
        """Record where a next leader may resume: everything taken through ``rv`` is published.
        ``confirmed``: a list, or a watch bookmark, says everything before ``rv`` was taken, so the
        versions seeded as unpublished were published since (as changes). A point that cannot be
        saved is saved next time (a leader that stops before resumes from the one before)."""
        if confirmed:
            self._unconfirmed = False
        if not self._unconfirmed:
            self._through = max(self._through, self._highest)
        point = (rv, self._through)
        if self.points is None or point == self._saved or not rv or not self.points.mirror:
            return
        try:
            await self.points.save(self.ref, *point)
            self._saved = point
        except (NatsError, TimeoutError) as exc:
            log.warning("%s: could not save the resume point (%r)", self.ref.short, exc)

    async def _relist(self, *, resync: bool) -> str:
        """List every object, then publish what changed, what is gone, and with ``resync`` the
        rest. The list is read a page at a time and only what must be published is kept of it: a
        changed object whole, an unchanged one the mirror holds as its identity and version
        (:meth:`Known.bare`). Holding every object of the list at once, 50,000 AIMServices and
        their InferenceServices, kept the watcher at 750 MiB to 1.1 GiB after each resync (a
        process keeps its peak); publishing while listing would slow the list to the pace of the
        publications, and a list that outlasts the API server's compaction interval is refused
        (410) and starts over."""
        self.relists += 1
        todo: list[tuple[ObjKey, Obj, ChangeType]] = []
        seen: set[ObjKey] = set()
        rv = ""
        async for page, at in self.kube.pages(self.ref, label_selector=self.label_selector):
            self._plan_page(page, resync, todo, seen)
            rv = at or rv
        for key in set(self.known) - seen:
            todo.append((key, self.known[key].bare(self.ref, key), ChangeType.DELETED))
        pending = PerObject()
        try:
            for key, obj, change in todo:
                await pending.submit(key, partial(self._publish, key, obj, change))
            await pending.drain()
        finally:
            pending.cancel()
        if resync:
            RESYNCS.labels(self.ref.short).inc()
        return rv

    def _plan_page(
        self, items: list[Obj], resync: bool, todo: list[tuple[ObjKey, Obj, ChangeType]], seen: set[ObjKey]
    ) -> None:
        for obj in items:
            key = object_key(obj)
            seen.add(key)
            meta = obj["metadata"]
            prev = self.known.get(key)
            changed = (
                prev is None
                or not prev.published
                or prev.resource_version != str(meta.get("resourceVersion"))
            )
            if changed or (resync and self.republish):
                # ``resync`` only for a version already published: consumers may take it as
                # nothing new (their dependents get their own); one the watch missed is a change
                if changed:
                    todo.append((key, obj, ChangeType.ADDED if prev is None else ChangeType.MODIFIED))
                elif prev is not None and self.publisher.holds(self.ref, key, prev.resource_version):
                    todo.append((key, prev.bare(self.ref, key), ChangeType.RESYNC))  # nothing written
                else:
                    todo.append((key, obj, ChangeType.RESYNC))
            else:
                self.known[key] = Known.of(obj)

    async def _publish(self, key: ObjKey, obj: Obj, change: ChangeType) -> None:
        """Publish one change, then record it as known: what is known has been published (a
        watcher stopped meanwhile republishes the rest on its next list)."""
        revision = await self.publisher.observe(self.ref, obj, change)
        if revision is not None:
            self._highest = max(self._highest, revision)
        if change is ChangeType.DELETED:
            self.known.pop(key, None)
        else:
            self.known[key] = Known.of(obj)

    async def _watch(self, rv: str, stop: asyncio.Event, until: float) -> tuple[str, bool]:
        """One watch window from ``rv``: the resourceVersion through which everything it took is
        published, and whether a bookmark came (the API server had sent all before it)."""
        loop = asyncio.get_running_loop()
        timeout = max(1, min(self.watch_timeout, int(until - loop.time()) + 1))
        stream = self.kube.watch(
            self.ref,
            rv,
            timeout_seconds=timeout,
            label_selector=self.label_selector,
            opened=self.synced.set,  # listed, or resumed: watching
        )
        pending = PerObject()
        self._taken = rv
        self._bookmarks = 0
        follow = asyncio.ensure_future(self._follow(stream, rv, stop, timeout, pending))
        asked = asyncio.ensure_future(self._resync_asked.wait())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({follow, asked, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if follow.done():
                follow.result()
            else:  # a resync asked for (the relist starts afresh), or stopping: publish what was taken
                follow.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await follow
            await pending.drain()
        finally:
            asked.cancel()
            stopping.cancel()
            follow.cancel()
            pending.cancel()
        return self._taken, self._bookmarks > 0

    async def _follow(
        self,
        stream: AsyncGenerator[Obj, None],
        rv: str,
        stop: asyncio.Event,
        timeout: int,
        pending: PerObject,
    ) -> str:
        # closed on the way out, cancelled included (a resync asked for, a stall): its connection
        # is released now rather than whenever the generator is collected
        async with contextlib.aclosing(stream), asyncio.timeout(timeout + 60):  # a stalled stream is left
            async for event in stream:
                if stop.is_set():
                    break
                obj = event["object"]
                new_rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                kind = event["type"]
                if kind == "BOOKMARK":
                    rv = self._taken = new_rv
                    self._bookmarks += 1
                    await self._bookmark(rv, pending)
                    continue
                key = object_key(obj)
                if kind == "DELETED":
                    change = ChangeType.DELETED
                else:
                    change = ChangeType.ADDED if kind == "ADDED" else ChangeType.MODIFIED
                await pending.submit(key, partial(self._publish, key, obj, change))
                rv = self._taken = new_rv
        return rv

    async def _bookmark(self, rv: str, pending: PerObject) -> None:
        """Now and then, on a bookmark, publish what was taken and save the point: a leader that
        dies resumes from at most about a minute back, within the API server's history."""
        loop = asyncio.get_running_loop()
        if self.points is None or loop.time() - self._bookmarked < SAVE_EVERY:
            return
        self._bookmarked = loop.time()
        await pending.drain()
        await self._save(rv, confirmed=True)
