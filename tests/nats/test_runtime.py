"""The reconcile runtime on a real nats-server: a dependency's change is mapped to the primaries
that use it (through an informer index), its resync is not, and ``requeue_after`` has the server
publish a requeue for the service when it is due."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from nats.js.errors import NotFoundError

from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import by_kind
from aimcore.runtime import (
    Controller,
    Informer,
    Reporter,
    Request,
    Result,
    Watch,
    field_indexer,
    schedule_requeue,
)
from aimcore.runtime.engine import Runtime
from aimcore.runtime.lease import ObjectLeases

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
TEMPLATE = by_kind("aim.eai.amd.com", "AIMServiceTemplate")


def obj(ref: Any, name: str, spec: dict[str, Any], rv: int) -> dict[str, Any]:
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": str(rv),
            "generation": 1,
        },
        "spec": spec,
    }


def event(o: dict[str, Any], ref: Any, change: ChangeType = ChangeType.MODIFIED) -> SimpleNamespace:
    meta = o["metadata"]
    ev = ChangeEvent(
        object=ObjectRef.of(ref, meta["namespace"], meta["name"]),
        uid=meta["uid"],
        resource_version=meta["resourceVersion"],
        change=change,
    )
    return SimpleNamespace(data=ev.encode())  # all Runtime.handle reads of a message


async def test_dependency_changes_reach_their_primaries_and_requeues_fire(private_js) -> None:  # type: ignore[no-untyped-def]
    js = private_js
    kv = await topology.objects_bucket(js)
    uses = obj(AIMSVC, "uses-tpl", {"model": {"name": "m"}, "template": {"name": "tpl"}}, 10)
    other = obj(AIMSVC, "other", {"model": {"name": "m"}, "template": {"name": "another"}}, 11)
    tpl = obj(TEMPLATE, "tpl", {"modelName": "m"}, 12)
    for o, ref in ((uses, AIMSVC), (other, AIMSVC), (tpl, TEMPLATE)):
        await kv.put(subjects.object_key(ref, "ns", o["metadata"]["name"]), json.dumps(o).encode())

    reconciled: list[str] = []

    async def reconcile(request: Request) -> Result | None:
        reconciled.append(request.name)
        return Result(requeue_after=0.2) if reconciled.count(request.name) == 1 else None

    def services_using(event: ChangeEvent, dep: Any, informer: Informer) -> list[Any]:
        return [
            (AIMSVC, o["metadata"]["namespace"], o["metadata"]["name"])
            for o in informer.by_index("template", event.object.name)
        ]

    controller = Controller(
        "svc-test",
        [AIMSVC],
        reconcile,
        watches=[Watch(TEMPLATE, services_using)],
        indexers={"template": field_indexer("spec", "template", "name")},
    )
    informer = Informer(kv, [AIMSVC, TEMPLATE], controller.indexers)
    await informer.start()
    leases = await topology.leases_bucket(js)
    runtime = Runtime(js, controller, informer, ObjectLeases(leases, "svc-test"), Reporter(js, "svc-test"))
    requeues = await js.subscribe(f"{subjects.REQUEUE_PREFIX}.svc-test.>", ordered_consumer=True)
    try:
        await runtime.handle(event(tpl, TEMPLATE))
        assert reconciled == ["uses-tpl"]  # only the service that uses the template

        msg = await requeues.next_msg(timeout=10)
        requeue = ChangeEvent.model_validate_json(msg.data)
        assert requeue.change is ChangeType.REQUEUE
        assert requeue.object.name == "uses-tpl"

        await runtime.handle(msg)  # the requeue comes back through the same handler
        assert reconciled == ["uses-tpl", "uses-tpl"]

        await runtime.handle(event(other, AIMSVC))  # a primary's own event
        assert reconciled[-1] == "other"
        assert runtime.reconciled == 3

        # a resync of the template wakes nobody (its users get resyncs of their own); a resync of
        # a primary reconciles it, as any of its events does
        await runtime.handle(event(tpl, TEMPLATE, ChangeType.RESYNC))
        assert runtime.reconciled == 3
        await runtime.handle(event(uses, AIMSVC, ChangeType.RESYNC))
        assert (reconciled[-1], runtime.reconciled) == ("uses-tpl", 4)
    finally:
        await requeues.unsubscribe()
        await informer.stop()


async def test_own_writes_and_own_status_changes_do_not_reconcile_again(private_js) -> None:  # type: ignore[no-untyped-def]
    """A child event at exactly the version the reconcile wrote is not mapped back to its owner
    (any later version is); a status-only change of a primary is skipped without taking its
    lease."""
    js = private_js
    kv = await topology.objects_bucket(js)
    svc = obj(AIMSVC, "svc", {"model": {"name": "m"}, "template": {"name": "tpl"}}, 20)
    tpl = obj(TEMPLATE, "tpl", {"modelName": "m"}, 21)
    for o, ref in ((svc, AIMSVC), (tpl, TEMPLATE)):
        await kv.put(subjects.object_key(ref, "ns", o["metadata"]["name"]), json.dumps(o).encode())

    reconciled: list[str] = []

    async def reconcile(request: Request) -> Result | None:
        reconciled.append(request.name)
        request.writes.record(TEMPLATE, tpl)  # as if this reconcile had written the template at rv 21
        return None

    def owner(event: ChangeEvent, dep: Any, informer: Informer) -> list[Any]:
        return [(AIMSVC, "ns", "svc")]

    controller = Controller(
        "own-test", [AIMSVC], reconcile, watches=[Watch(TEMPLATE, owner)], ignore_own_status=True
    )
    informer = Informer(kv, [AIMSVC, TEMPLATE], controller.indexers)
    await informer.start()
    leases = ObjectLeases(await topology.leases_bucket(js), "own-test")
    runtime = Runtime(js, controller, informer, leases, Reporter(js, "own-test"))
    try:
        await runtime.handle(event(svc, AIMSVC, ChangeType.ADDED))
        assert reconciled == ["svc"]

        await runtime.handle(event(tpl, TEMPLATE, ChangeType.ADDED))  # the write itself comes back
        assert reconciled == ["svc"]

        changed = obj(TEMPLATE, "tpl", {"modelName": "m"}, 22)  # the child moved on
        await kv.put(subjects.object_key(TEMPLATE, "ns", "tpl"), json.dumps(changed).encode())
        await runtime.handle(event(changed, TEMPLATE))
        assert reconciled == ["svc", "svc"]

        runs = leases.stats.runs
        status_only = {**obj(AIMSVC, "svc", svc["spec"], 23), "status": {"status": "Running"}}
        await kv.put(subjects.object_key(AIMSVC, "ns", "svc"), json.dumps(status_only).encode())
        await runtime.handle(event(status_only, AIMSVC))
        assert reconciled == ["svc", "svc"] and leases.stats.runs == runs

        edited = obj(AIMSVC, "svc", {**svc["spec"], "replicas": 2}, 24)  # a spec change is reconciled
        await kv.put(subjects.object_key(AIMSVC, "ns", "svc"), json.dumps(edited).encode())
        await runtime.handle(event(edited, AIMSVC))
        assert reconciled == ["svc", "svc", "svc"]
    finally:
        await informer.stop()


async def test_a_requeue_timer_is_the_servers_and_a_newer_one_replaces_it(private_js) -> None:  # type: ignore[no-untyped-def]
    """``requeue_after`` is a scheduled message the server publishes when due: it outlives the
    replica that set it (a timer in memory died with a killed replica, and the object waited for the
    periodic resync), and one object has one timer per service, the latest."""
    js = private_js
    svc = obj(AIMSVC, "timed", {"model": {"name": "m"}}, 30)
    requeues = await js.subscribe(f"{subjects.REQUEUE_PREFIX}.timer-test.>", ordered_consumer=True)
    schedule = subjects.schedule_subject("timer-test", AIMSVC, "ns", "timed")
    try:
        await schedule_requeue(js, "timer-test", AIMSVC, svc, 3600)  # replaced by the next one
        pending = await js.get_last_msg(topology.EVENTS_STREAM, schedule)
        assert pending.headers["Nats-Schedule"].startswith("@at ")
        await schedule_requeue(js, "timer-test", AIMSVC, svc, 0.2)  # no process keeps a timer
        msg = await requeues.next_msg(timeout=10)
        requeue = ChangeEvent.model_validate_json(msg.data)
        assert (requeue.change, requeue.object.name, requeue.resource_version) == (
            ChangeType.REQUEUE,
            "timed",
            "30",
        )
        with pytest.raises(NotFoundError):  # fired and gone: the hour-long timer was replaced
            await js.get_last_msg(topology.EVENTS_STREAM, schedule)
    finally:
        await requeues.unsubscribe()
