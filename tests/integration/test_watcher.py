"""The watcher's list/watch loop against the real API server and a private nats-server: a watch
whose resourceVersion expired (HTTP 410) relists and misses nothing, deletions included; the
mirror never regresses to an older version."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.crdinstall import CRD
from aim_watcher.kind_watch import KindWatcher
from aim_watcher.publisher import Publisher
from aim_watcher.watching import seed
from aimcore.api.bus import mirror, subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType
from aimcore.api.kinds import by_kind
from aimcore.runtime import REGISTRY, Kube
from aimcore.runtime.kube import Gone
from aimcore.runtime.mirrorscan import kind_pattern, snapshot_identities
from tests.helpers import eventually, manifest, stored_messages

MODEL = by_kind("aim.eai.amd.com", "AIMModel")
# A kind no other test uses: this test changes its CRD.
UNCACHED = by_kind("aim.silogen.ai", "AIMRuntimeConfig")


def model(name: str, namespace: str) -> dict[str, Any]:
    return manifest(MODEL, name, namespace, {"image": f"ghcr.io/example/{name}:1"})


def runtime_config(name: str, namespace: str) -> dict[str, Any]:
    return manifest(UNCACHED, name, namespace, {"defaultStorageClassName": "fast"})


@pytest.fixture
def bus(private_js):  # type: ignore[no-untyped-def]
    return private_js


class GapAfterFirstList(KindWatcher):
    """Runs ``gap`` between the first list and the first watch, as if the watch had been down."""

    def __init__(self, *args: Any, gap: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gap = gap

    async def _relist(self, *, resync: bool) -> str:
        rv = await super()._relist(resync=resync)
        if self.relists == 1:
            await self.gap()
        return rv


async def touch_crd(kube: Kube, name: str) -> None:
    crd = await kube.get(CRD, None, name)
    assert crd is not None
    columns = crd["spec"]["versions"][0].get("additionalPrinterColumns", [])
    column = {"name": f"Touched{len(columns)}", "type": "string", "jsonPath": ".metadata.name", "priority": 1}
    patch = [{"op": "add", "path": "/spec/versions/0/additionalPrinterColumns", "value": [*columns, column]}]
    await kube.patch_json(CRD, None, name, patch)


async def expired(kube: Kube, resource_version: str) -> bool:
    try:
        async for _ in kube.watch(UNCACHED, resource_version, timeout_seconds=1):
            return False
    except Gone:
        return True
    return False


async def listed_once(watcher: KindWatcher) -> None:
    """Run ``watcher`` until its first list is published, then stop it."""
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        await watcher.synced.wait()
    finally:
        stop.set()
        await task


async def events_for(js: JetStreamContext, namespace: str) -> list[ChangeEvent]:
    """Every change event of the kind in ``namespace`` the stream holds (read to ``num_pending == 0``)."""
    subject = f"{subjects.EVENTS_PREFIX}.silogen.AIMRuntimeConfig.{subjects.escape(namespace)}.>"
    return [ChangeEvent.model_validate_json(msg.data) for msg in await stored_messages(js, subject)]


async def test_expired_watch_relists_and_misses_nothing(kube: Kube, namespace: str, bus) -> None:  # type: ignore[no-untyped-def]
    for name in ("a", "b", "gone"):
        await kube.create(UNCACHED, runtime_config(name, namespace))

    _, listed_at = await kube.list(UNCACHED, namespace)

    async def gap() -> None:
        # While the watch is "down": one object changes, one appears, one goes, and the CRD is
        # upgraded, which rebuilds the API server's watch cache for the kind: watches from older
        # resourceVersions now get 410 Gone, as they do after a CRD upgrade on a real cluster.
        await kube.patch(UNCACHED, namespace, "b", {"metadata": {"annotations": {"n": "changed"}}})
        await kube.create(UNCACHED, runtime_config("late", namespace))
        await kube.delete(UNCACHED, namespace, "gone")
        await touch_crd(kube, UNCACHED.plural + "." + UNCACHED.group)
        await eventually(lambda: expired(kube, listed_at), what="the old resourceVersion to expire")

    kv = await topology.objects_bucket(bus)
    watcher = GapAfterFirstList(kube, UNCACHED, Publisher(bus, kv), gap=gap)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:

        async def caught_up() -> bool:
            names = {k[1] for k in watcher.known if k[0] == namespace}
            return watcher.expired >= 1 and "late" in names and "gone" not in names

        await eventually(caught_up, timeout=30, what="the watcher to hit 410 and relist")
    finally:
        stop.set()
        await task

    def key(name: str) -> str:
        return subjects.object_key(UNCACHED, namespace, name)

    late = json.loads((await kv.get(key("late"))).value)
    assert late["metadata"]["name"] == "late"
    b = json.loads((await kv.get(key("b"))).value)
    assert b["metadata"]["annotations"]["n"] == "changed"
    with pytest.raises(Exception, match=r"(?i)not ?found|deleted"):
        await kv.get(key("gone"))
    events = await events_for(bus, namespace)
    changes = {(e.object.name, e.change) for e in events}
    assert ("gone", ChangeType.DELETED) in changes
    assert ("late", ChangeType.ADDED) in changes  # created while no watch was open
    assert ("b", ChangeType.MODIFIED) in changes
    assert watcher.relists >= 2


async def test_mirror_never_regresses(bus) -> None:  # type: ignore[no-untyped-def]
    kv = await topology.objects_bucket(bus)
    publisher = Publisher(bus, kv)
    newer = {
        **model("m", "ns"),
        "metadata": {"name": "m", "namespace": "ns", "uid": "u", "resourceVersion": "20"},
    }
    older = {
        **model("m", "ns"),
        "metadata": {"name": "m", "namespace": "ns", "uid": "u", "resourceVersion": "19"},
    }
    await publisher.observe(MODEL, newer, ChangeType.MODIFIED)
    await publisher.observe(MODEL, older, ChangeType.MODIFIED)  # a lagging replica
    stored = json.loads((await kv.get(subjects.object_key(MODEL, "ns", "m"))).value)
    assert stored["metadata"]["resourceVersion"] == "20"
    assert publisher.stale_skipped == 1
    # A delete tombstones it; a late write of an older version does not resurrect it.
    gone = {**newer, "metadata": {**newer["metadata"], "resourceVersion": "21"}}
    await publisher.observe(MODEL, gone, ChangeType.DELETED)
    with pytest.raises(Exception, match=r"(?i)not ?found|deleted"):
        await kv.get(subjects.object_key(MODEL, "ns", "m"))


async def test_an_object_deleted_and_created_again_is_mirrored_again_with_its_identity(bus) -> None:  # type: ignore[no-untyped-def]
    """The mirror write of a new object conditions on the key not existing; a key deleted before
    holds a tombstone, which the write replaces (CI: a download Job deleted to retry, created again
    under the same name, was never mirrored again)."""
    kv = await topology.objects_bucket(bus)
    publisher = Publisher(bus, kv)
    first = runtime_config("again", "ns-again") | {
        "metadata": {
            "name": "again",
            "namespace": "ns-again",
            "uid": "u1",
            "resourceVersion": "5",
            "generation": 1,
        }
    }
    second = first | {"metadata": {**first["metadata"], "uid": "u2", "resourceVersion": "9"}}
    await publisher.observe(UNCACHED, first, ChangeType.ADDED)
    await publisher.observe(UNCACHED, first, ChangeType.DELETED)
    fresh = Publisher(bus, kv)  # a watcher that never saw it (the first one forgot it on deletion)
    async with asyncio.timeout(30):  # a write that cannot replace the tombstone is retried forever
        for writer in (publisher, fresh):
            await writer.observe(UNCACHED, second, ChangeType.ADDED)
    key = subjects.object_key(UNCACHED, "ns-again", "again")
    entry = await kv.get(key)
    assert entry.value is not None and json.loads(entry.value)["metadata"]["uid"] == "u2"
    identities = await snapshot_identities(kv, kind_pattern(UNCACHED, "ns-again"))
    assert identities[key][1] == mirror.Identity("u2", "9", 1)


async def test_deletion_while_no_watcher_ran_is_noticed(kube: Kube, namespace: str, bus) -> None:  # type: ignore[no-untyped-def]
    kv = await topology.objects_bucket(bus)
    publisher = Publisher(bus, kv)
    await kube.create(UNCACHED, runtime_config("stays", namespace))
    created = await kube.create(UNCACHED, runtime_config("deleted-while-down", namespace))
    await publisher.observe(UNCACHED, created, ChangeType.ADDED)  # mirrored by an earlier run
    await kube.delete(UNCACHED, namespace, "deleted-while-down")

    watcher = KindWatcher(kube, UNCACHED, publisher)
    await seed(watcher, publisher, kv, bus)
    assert (namespace, "deleted-while-down") in watcher.known
    await listed_once(watcher)
    assert (namespace, "deleted-while-down") not in watcher.known
    with pytest.raises(Exception, match=r"(?i)not ?found|deleted"):
        await kv.get(subjects.object_key(UNCACHED, namespace, "deleted-while-down"))
    changes = {(e.object.name, e.change) for e in await events_for(bus, namespace)}
    assert ("deleted-while-down", ChangeType.DELETED) in changes
    assert ("stays", ChangeType.ADDED) in changes  # never published before: new to the consumers


async def test_a_version_mirrored_but_never_published_is_a_change_to_the_next_leader(  # type: ignore[no-untyped-def]
    kube: Kube, namespace: str, bus
) -> None:
    """The mirror is written before the event: a leader stopped in between leaves a version its
    dependents were never woken for. The next leader publishes it as a change (even for a kind
    whose resync republishes nothing unchanged), and only it."""
    kv = await topology.objects_bucket(bus)
    publisher = Publisher(bus, kv)
    published = await kube.create(UNCACHED, runtime_config("published", namespace))
    await publisher.observe(UNCACHED, published, ChangeType.ADDED)  # mirrored and published
    created = await kube.create(UNCACHED, runtime_config("mirrored-only", namespace))
    await publisher.observe(UNCACHED, created, ChangeType.ADDED)
    edited = await kube.patch(
        UNCACHED, namespace, "mirrored-only", {"spec": {"defaultStorageClassName": "slow"}}
    )
    key = subjects.object_key(UNCACHED, namespace, "mirrored-only")
    await kv.put(key, mirror.encode(edited))  # the leader stopped before publishing the edit

    watcher = KindWatcher(kube, UNCACHED, Publisher(bus, kv), republish=False)
    await seed(watcher, watcher.publisher, kv, bus)
    assert not watcher.known[(namespace, "mirrored-only")].published
    assert watcher.known[(namespace, "published")].published
    await listed_once(watcher)
    events = await events_for(bus, namespace)
    changes = {
        name: [e.change for e in events if e.object.name == name] for name in ("published", "mirrored-only")
    }
    assert changes == {
        "published": [ChangeType.ADDED],
        "mirrored-only": [ChangeType.ADDED, ChangeType.MODIFIED],
    }
    last = [e for e in events if e.object.name == "mirrored-only"][-1]
    assert last.resource_version == edited["metadata"]["resourceVersion"]


async def test_a_resync_asked_for_republishes_everything_at_once_and_watching_goes_on(  # type: ignore[no-untyped-def]
    kube: Kube, namespace: str, bus
) -> None:
    kv = await topology.objects_bucket(bus)
    await kube.create(UNCACHED, runtime_config("listed", namespace))
    watcher = KindWatcher(kube, UNCACHED, Publisher(bus, kv), resync_seconds=3600)

    def resyncs() -> float:
        return REGISTRY.get_sample_value("aim_watcher_resyncs_total", {"kind": UNCACHED.short}) or 0.0

    before = resyncs()
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        await watcher.synced.wait()
        watcher.request_resync()  # an hour early

        async def resynced() -> bool:
            # (counted in this test's namespace: other tests' namespaces may be going away)
            listed = [e.change for e in await events_for(bus, namespace) if e.object.name == "listed"]
            return watcher.relists == 2 and resyncs() == before + 1 and ChangeType.RESYNC in listed

        await eventually(resynced, timeout=30, what="a second full resync")
        await kube.create(UNCACHED, runtime_config("after", namespace))

        async def seen_after() -> bool:
            changes = [(e.object.name, e.change) for e in await events_for(bus, namespace)]
            return ("after", ChangeType.ADDED) in changes

        await eventually(seen_after, timeout=30, what="the watch going on after the resync")
    finally:
        stop.set()
        await task
    # new to the bus at the first list; the same version once more at the resync asked for
    listed = [e.change for e in await events_for(bus, namespace) if e.object.name == "listed"]
    assert listed == [ChangeType.ADDED, ChangeType.RESYNC]


async def test_a_resync_of_a_kind_no_service_reconciles_publishes_nothing_unchanged(  # type: ignore[no-untyped-def]
    kube: Kube, namespace: str, bus
) -> None:
    """Children and Nodes: their versions wake owners and users when new; the same version again
    would wake nobody, so a resync leaves it out."""
    kv = await topology.objects_bucket(bus)
    await kube.create(UNCACHED, runtime_config("child", namespace))
    watcher = KindWatcher(kube, UNCACHED, Publisher(bus, kv), resync_seconds=3600, republish=False)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        await watcher.synced.wait()
        assert watcher.publisher.published >= 1  # new to the bus: published at the first list
        done = REGISTRY.get_sample_value("aim_watcher_resyncs_total", {"kind": UNCACHED.short}) or 0.0
        watcher.request_resync()

        async def resynced() -> bool:
            now = REGISTRY.get_sample_value("aim_watcher_resyncs_total", {"kind": UNCACHED.short})
            return watcher.relists == 2 and now == done + 1

        await eventually(resynced, timeout=30, what="the second relist, through")
    finally:
        stop.set()
        await task
    # (this test's namespace only: other tests' objects of the kind may be going away meanwhile)
    changes = [e.change for e in await events_for(bus, namespace) if e.object.name == "child"]
    assert changes == [ChangeType.ADDED]


async def test_a_list_comes_a_page_at_a_time_from_one_snapshot(kube: Kube, namespace: str) -> None:
    """The watcher's relist holds a page at a time (at 50,000 objects, holding them all kept its
    memory at the peak); the pages are one snapshot, and only the last says where to watch from."""
    for n in range(5):
        await kube.create(UNCACHED, runtime_config(f"paged-{n}", namespace))
    pages = []
    async for page, rv in kube.pages(UNCACHED, namespace, limit=2):
        pages.append(([o["metadata"]["name"] for o in page], rv))
        if len(pages) == 1:  # created after the snapshot: not in it
            await kube.create(UNCACHED, runtime_config("paged-late", namespace))
    assert [len(names) for names, _ in pages] == [2, 2, 1]
    assert [bool(rv) for _, rv in pages] == [False, False, True]
    assert sorted(n for names, _ in pages for n in names) == [f"paged-{n}" for n in range(5)]
    assert all(o["kind"] == UNCACHED.kind for o in (await kube.list(UNCACHED, namespace))[0])


async def test_a_resync_publishes_a_version_the_mirror_holds_without_writing_it(  # type: ignore[no-untyped-def]
    kube: Kube, namespace: str, bus
) -> None:
    """The relist keeps only the identity of an unchanged object the mirror holds, and its resync
    event goes out from that alone: the mirror entry stays the whole object, at its revision."""
    kv = await topology.objects_bucket(bus)
    created = await kube.create(UNCACHED, runtime_config("held", namespace))
    watcher = KindWatcher(kube, UNCACHED, Publisher(bus, kv), resync_seconds=3600)
    key = subjects.object_key(UNCACHED, namespace, "held")
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        await watcher.synced.wait()
        before = await kv.get(key)
        watcher.request_resync()

        async def resynced() -> bool:
            changes = [e.change for e in await events_for(bus, namespace) if e.object.name == "held"]
            return ChangeType.RESYNC in changes

        await eventually(resynced, timeout=30, what="the resync event")
    finally:
        stop.set()
        await task
    after = await kv.get(key)
    assert after.revision == before.revision  # not written again
    assert after.value is not None and json.loads(after.value)["spec"] == created["spec"]
    event = [e for e in await events_for(bus, namespace) if e.object.name == "held"][-1]
    assert (event.uid, event.resource_version) == (
        created["metadata"]["uid"],
        created["metadata"]["resourceVersion"],
    )
