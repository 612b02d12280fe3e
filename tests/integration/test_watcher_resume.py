"""A new watcher leader resumes the previous one's watch where everything was published
(``aim_watcher.resume``), against the real API server and a private nats-server: what changed
while no watcher ran is published and nothing is listed; a point the API server has no history
for any more lists and misses nothing; a version mirrored but never published goes out as a
change; a point about another mirror is not used."""

from __future__ import annotations

import asyncio
from typing import Any

from nats.js import JetStreamContext

from aim_watcher.kind_watch import KindWatcher
from aim_watcher.publisher import Publisher
from aim_watcher.resume import ResumePoint, ResumePoints
from aim_watcher.watching import seed
from aimcore.api.bus import mirror, subjects, topology
from aimcore.api.bus.messages import ChangeType
from aimcore.runtime import Kube
from tests.helpers import eventually
from tests.integration.test_watcher import (
    UNCACHED,
    events_for,
    expired,
    listed_once,
    runtime_config,
    touch_crd,
)


async def seeded(kube: Kube, js: JetStreamContext) -> KindWatcher:
    """A watcher as a new leader starts one: seeded from the mirror and the resume points."""
    kv = await topology.objects_bucket(js)
    points = await ResumePoints.about(js, kv)
    watcher = KindWatcher(kube, UNCACHED, Publisher(js, kv), points=points)
    await seed(watcher, watcher.publisher, kv, js, points)
    return watcher


async def saved_point(js: JetStreamContext) -> ResumePoint:
    kv = await topology.objects_bucket(js)
    points = await ResumePoints.about(js, kv)
    point = await points.load(UNCACHED)
    assert point is not None, "the stopped watcher saved no resume point"
    return point


async def first_leader(kube: Kube, js: JetStreamContext, namespace: str, *names: str) -> ResumePoint:
    """``names`` created, then a first leader that lists them (there is no point yet) and stops:
    the point it saved."""
    for name in names:
        await kube.create(UNCACHED, runtime_config(name, namespace))
    first = await seeded(kube, js)
    assert first.resume_from is None
    await listed_once(first)
    return await saved_point(js)


async def changes_in(js: JetStreamContext, namespace: str) -> dict[str, list[ChangeType]]:
    out: dict[str, list[ChangeType]] = {}
    for event in await events_for(js, namespace):
        out.setdefault(event.object.name, []).append(event.change)
    return out


async def run_until(watcher: KindWatcher, done: Any, what: str) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        await eventually(done, timeout=30, what=what)
    finally:
        stop.set()
        await task


async def test_a_new_leader_resumes_where_the_last_one_stopped_and_lists_nothing(
    kube: Kube, namespace: str, private_js: JetStreamContext
) -> None:
    js = private_js
    point = await first_leader(kube, js, namespace, "edited-while-down", "deleted-while-down", "unchanged")

    # while no watcher runs
    edited = await kube.patch(
        UNCACHED, namespace, "edited-while-down", {"spec": {"defaultStorageClassName": "slow"}}
    )
    await kube.create(UNCACHED, runtime_config("created-while-down", namespace))
    await kube.delete(UNCACHED, namespace, "deleted-while-down")

    second = await seeded(kube, js)
    assert second.resume_from == point.resource_version

    async def caught_up() -> bool:
        changes = await changes_in(js, namespace)
        return (
            ChangeType.MODIFIED in changes.get("edited-while-down", [])
            and ChangeType.ADDED in changes.get("created-while-down", [])
            and ChangeType.DELETED in changes.get("deleted-while-down", [])
        )

    await run_until(second, caught_up, "the changes made while no watcher ran")
    assert (second.relists, second.resumed, second.expired) == (0, 1, 0)
    assert await changes_in(js, namespace) == {
        "edited-while-down": [ChangeType.ADDED, ChangeType.MODIFIED],
        "deleted-while-down": [ChangeType.ADDED, ChangeType.DELETED],
        "unchanged": [ChangeType.ADDED],  # published once, by the first leader
        "created-while-down": [ChangeType.ADDED],
    }
    assert (namespace, "deleted-while-down") not in second.known
    edited_rv = edited["metadata"]["resourceVersion"]
    assert second.known[(namespace, "edited-while-down")].resource_version == edited_rv
    later = await saved_point(js)  # the second leader saved where it stopped
    assert int(later.resource_version) >= int(edited_rv)


async def test_a_point_the_api_server_has_no_history_for_lists_and_misses_nothing(
    kube: Kube, namespace: str, private_js: JetStreamContext
) -> None:
    js = private_js
    point = await first_leader(kube, js, namespace, "stays", "deleted-while-down")

    await kube.delete(UNCACHED, namespace, "deleted-while-down")
    await kube.create(UNCACHED, runtime_config("created-while-down", namespace))
    # a CRD upgrade rebuilds the API server's watch cache: the point's resourceVersion is gone
    await touch_crd(kube, UNCACHED.plural + "." + UNCACHED.group)
    await eventually(lambda: expired(kube, point.resource_version), what="the point to expire")

    second = await seeded(kube, js)
    assert second.resume_from == point.resource_version

    async def caught_up() -> bool:
        changes = await changes_in(js, namespace)
        created = changes.get("created-while-down", [])
        return ChangeType.ADDED in created and ChangeType.DELETED in changes.get("deleted-while-down", [])

    await run_until(second, caught_up, "the relist after the expired point")
    assert (second.resumed, second.expired, second.relists) == (1, 1, 1)
    assert (await changes_in(js, namespace))["stays"] == [ChangeType.ADDED]  # not published again


async def test_a_version_mirrored_but_never_published_goes_out_when_resumed(
    kube: Kube, namespace: str, private_js: JetStreamContext
) -> None:
    """The previous leader stopped between writing the mirror and publishing: the entry is above
    its point's revision, so the new leader takes it as unpublished; the watch it resumes replays
    the change, which goes out (the mirror already holds it)."""
    js = private_js
    point = await first_leader(kube, js, namespace, "published")

    edited = await kube.patch(UNCACHED, namespace, "published", {"spec": {"defaultStorageClassName": "slow"}})
    kv = await topology.objects_bucket(js)
    key = subjects.object_key(UNCACHED, namespace, "published")
    revision = await kv.put(key, mirror.encode(edited))  # mirrored; the leader stopped before the event
    assert revision > point.published_through

    second = await seeded(kube, js)
    assert not second.known[(namespace, "published")].published

    async def published() -> bool:
        return (await changes_in(js, namespace)).get("published") == [ChangeType.ADDED, ChangeType.MODIFIED]

    await run_until(second, published, "the mirrored version's change event")
    assert (second.relists, second.resumed) == (0, 1)
    last = [e for e in await events_for(js, namespace) if e.object.name == "published"][-1]
    assert last.resource_version == edited["metadata"]["resourceVersion"]


async def test_a_point_about_another_mirror_is_not_used(
    kube: Kube, namespace: str, private_js: JetStreamContext
) -> None:
    """Revisions number one mirror: a point saved about a mirror since made again (its bucket
    deleted and created) would take entries of the new one as published, and skip the list that
    fills it."""
    js = private_js
    other = ResumePoints(await js.key_value(topology.WATCHER_BUCKET), "2020-01-01T00:00:00+00:00")
    _, rv = await kube.list(UNCACHED, namespace)
    await other.save(UNCACHED, rv, 10**9)
    await kube.create(UNCACHED, runtime_config("listed", namespace))

    watcher = await seeded(kube, js)
    assert watcher.resume_from is None
    await listed_once(watcher)
    assert (watcher.relists, watcher.resumed) == (1, 0)
    assert (await changes_in(js, namespace))["listed"] == [ChangeType.ADDED]
    assert (await saved_point(js)).published_through < 10**9
