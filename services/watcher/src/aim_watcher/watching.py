"""What the watcher does: declare the NATS topology (it owns the streams and buckets), win the
leader election among its replicas (:mod:`aim_watcher.election`), and while it leads run one
list/watch loop per kind (:mod:`aim_watcher.kind_watch`), each seeded from the mirror so that
deletions while no watcher ran are seen, and resumed where the last leader published everything
when it can (:mod:`aim_watcher.resume`).

Readiness (``/readyz``): the topology declared, and, while leading, every kind listed once or its
watch resumed (a standby is ready: it is the hot spare). ``aim_watcher_leader`` is 1 while this replica leads.

``SIGUSR1`` asks the leader for a full resync now (every kind listed and republished), as after an
outage one would rather not wait for the interval; a standby logs that it has nothing to resync."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Sequence
from typing import NamedTuple

from nats.js import JetStreamContext
from nats.js.errors import BadRequestError
from nats.js.kv import KeyValue
from prometheus_client import Gauge

from aim_watcher.election import Election
from aim_watcher.kind_watch import KindWatcher, Known, ObjKey
from aim_watcher.publisher import Publisher
from aim_watcher.resume import ResumePoints
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.topology import Retention
from aimcore.api.kinds import KindRef
from aimcore.runtime import REGISTRY, ServiceContext, until_answered
from aimcore.runtime.kvlease import holder_id
from aimcore.runtime.mirrorscan import kind_pattern, last_per_subject, snapshot_identities
from aimcore.runtime.probes import READINESS

log = logging.getLogger(__name__)

LEADER = Gauge("aim_watcher_leader", "1 while this watcher replica is the leader, else 0.", registry=REGISTRY)
WATCHES = "watches"


class WatchedKind(NamedTuple):
    """A kind the watcher mirrors."""

    ref: KindRef
    selector: str | None = None
    """Only the objects with these labels (the operator's children)."""
    reconciled: bool = True
    """Some service reconciles objects of this kind, so a resync republishes every one of them.
    Children and Nodes are watched for their changes, which wake their owners and users; the same
    version again wakes nobody (each owner gets a resync of its own), so their resync publishes
    only what changed and what is gone."""


Watched = Sequence[WatchedKind]


def unsynced(watchers: Sequence[KindWatcher]) -> str | None:
    """The readiness of a leader's watches: which kinds have not been listed yet."""
    waiting = [w.ref.short for w in watchers if not w.synced.is_set()]
    if not waiting:
        return None
    return f"{len(waiting)} of {len(watchers)} kinds not listed or resumed yet ({', '.join(waiting[:3])}...)"


async def published_versions(js: JetStreamContext, ref: KindRef) -> dict[str, tuple[str, str]]:
    """The (uid, resourceVersion) of each object's last change event in the events stream, by
    mirror key: what was published, read from the events' ``Nats-Msg-Id`` headers only."""
    prefix = f"{subjects.EVENTS_PREFIX}."
    out: dict[str, tuple[str, str]] = {}
    events = subjects.kind_filter(subjects.EVENTS_PREFIX, ref)
    async for msg in last_per_subject(js, topology.EVENTS_STREAM, events, headers_only=True):
        uid, _, rest = (msg.headers or {}).get("Nats-Msg-Id", "").partition(":")
        out[msg.subject[len(prefix) :]] = (uid, rest.partition(":")[0])
    return out


async def seed(
    watcher: KindWatcher,
    publisher: Publisher,
    kv: KeyValue,
    js: JetStreamContext,
    points: ResumePoints | None = None,
) -> None:
    """What the mirror holds of the watcher's kind, for the watcher (deletions while no watcher
    ran are seen, and versions already published are not published again) and for the publisher
    (a version already mirrored is not written, nor read and compared, again). Read from the
    entries' identity headers: no object is parsed.

    The mirror is written before the change event, so a leader that stopped in between left
    versions mirrored whose event never went out. The previous leader's resume point
    (:mod:`aim_watcher.resume`) says through which mirror revision every entry was published; the
    watch resumed from it replays the rest, which go out as changes. Without a point, the events
    stream says which (the last event of each object), and the first list publishes those as
    changes, so their dependents are woken. (A version whose last event has aged out of the stream
    counts as unpublished too: republished once as a change, which costs a reconcile and never
    skips one.)"""
    ref = watcher.ref
    point = await points.load(ref) if points is not None else None
    entries = await snapshot_identities(kv, kind_pattern(ref))
    events = await published_versions(js, ref) if point is None else {}
    known: dict[ObjKey, Known] = {}
    unpublished: list[int] = []
    for key, (revision, identity) in entries.items():
        _, _, namespace, name = subjects.parse_object_tokens(key.split("."))
        if point is not None:
            published = revision <= point.published_through
        else:
            published = events.get(key) == (identity.uid, identity.resource_version)
        if not published:
            unpublished.append(revision)
        known[(namespace, name)] = Known(
            identity.uid, identity.resource_version, identity.generation, published
        )
    highest = max((revision for revision, _ in entries.values()), default=0)
    through = min(unpublished) - 1 if unpublished else highest
    if point is not None:
        through = max(through, point.published_through)
    watcher.seed(known, resume=point, through=through, highest=highest)
    publisher.remember(
        {key: (revision, identity.resource_version) for key, (revision, identity) in entries.items()}
    )


async def start_watchers(ctx: ServiceContext, kinds: Watched) -> list[KindWatcher]:
    """One watcher per kind, each seeded (the kinds' mirror reads run at once)."""
    kv = await topology.objects_bucket(ctx.js)
    points = await ResumePoints.about(ctx.js, kv)  # the mirror's identity read once, for every kind
    publisher = Publisher(ctx.js, kv)
    assert ctx.kube is not None
    watchers = [
        KindWatcher(
            ctx.kube,
            kind.ref,
            publisher,
            resync_seconds=ctx.settings.resync_seconds,
            label_selector=kind.selector,
            republish=kind.reconciled,
            points=points,
        )
        for kind in kinds
    ]
    await asyncio.gather(*(seed(w, publisher, kv, ctx.js, points) for w in watchers))
    return watchers


async def run(ctx: ServiceContext, kinds: Watched, retention: Retention) -> None:
    """Declare the topology (with ``retention``), then watch ``kinds`` whenever this replica
    leads, until the service stops."""
    leading: list[KindWatcher] = []

    def resync_now() -> None:
        if not leading:
            log.info("SIGUSR1: not leading, nothing to resync")
            return
        log.info("SIGUSR1: resyncing every kind now")
        for w in leading:
            w.request_resync()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, resync_now)

    READINESS.waiting("topology", "declaring the streams and buckets")

    async def declare() -> KeyValue:
        # a bus cluster that has just formed may time out or answer 503 while it elects the
        # leaders of what is declared: waited out, as a consumer waits to bind; a declaration the
        # bus refuses (400) is a configuration error, raised
        await topology.ensure_topology(ctx.js, retention, ctx.settings.bus.replicas)
        return await ctx.js.key_value(topology.ELECTION_BUCKET)

    election_bucket = await until_answered(
        "declaring the topology", declare, ctx.stop, permanent=(BadRequestError,)
    )
    if election_bucket is None:
        return
    READINESS.remove("topology")
    election = Election(election_bucket, holder_id())

    async def lead(step_down: asyncio.Event) -> None:
        LEADER.set(1)
        READINESS.waiting(WATCHES, "starting the watches")
        try:
            await watch(step_down)
        finally:
            LEADER.set(0)
            READINESS.remove(WATCHES)

    async def watch(step_down: asyncio.Event) -> None:
        watchers = await start_watchers(ctx, kinds)
        READINESS.add(WATCHES, lambda: unsynced(watchers))
        leading[:] = watchers
        log.info("watching %d kinds", len(watchers))
        either = asyncio.Event()

        async def relay() -> None:
            await asyncio.wait(
                [asyncio.create_task(ctx.stop.wait()), asyncio.create_task(step_down.wait())],
                return_when=asyncio.FIRST_COMPLETED,
            )
            either.set()

        try:
            await asyncio.gather(relay(), *(w.run(either) for w in watchers))
        finally:
            leading.clear()

    try:
        await election.run(ctx.stop, lead)
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
