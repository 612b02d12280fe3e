"""A Node's change wakes the AIMServices still waiting for a template, found through an index kept
as objects are stored (``aim_deployer.dependencies.AWAITING_TEMPLATE``), not by reading every
AIMService at each Node status report; a service leaves the index once its template resolves."""

from __future__ import annotations

from typing import Any

from aim_deployer import dependencies as deps
from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import GROUP_AIM, GROUP_LEGACY, NODE, SERVICE_KINDS, by_kind
from aimcore.api.types import Obj
from aimcore.runtime import Informer, filed
from aimcore.runtime.mappers import target_of

SERVICE = by_kind(GROUP_AIM, "AIMService")
LEGACY = by_kind(GROUP_LEGACY, "AIMService")
TEMPLATE = by_kind(GROUP_AIM, "AIMServiceTemplate")


def service(ref: Any, name: str, template_ready: str | None, rv: int = 1) -> Obj:
    conditions = [] if template_ready is None else [{"type": "TemplateReady", "status": template_ready}]
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": str(rv)},
        "spec": {},
        "status": {"conditions": conditions},
    }


def store(cache: Informer, obj: Obj) -> None:
    cache._store(subjects.object_key(*target_of(obj)), obj)


def woken(cache: Informer) -> list[str]:
    node_event = ChangeEvent(
        object=ObjectRef.of(NODE, None, "n1"), uid="n", resource_version="5", change=ChangeType.MODIFIED
    )
    mapper = filed(deps.AWAITING_TEMPLATE, deps.AWAITING, *SERVICE_KINDS)
    return sorted(f"{ref.group}/{name}" for ref, _, name in mapper(node_event, {}, cache))


def test_a_node_wakes_exactly_the_services_waiting_for_a_template() -> None:
    cache = Informer(None, [], {deps.AWAITING_TEMPLATE: deps.awaiting_template_index})  # type: ignore[arg-type]
    store(cache, service(SERVICE, "waiting", "False"))
    store(cache, service(LEGACY, "legacy-waiting", "Unknown"))
    store(cache, service(SERVICE, "resolved", "True"))
    store(cache, service(SERVICE, "new", None))  # not reconciled yet: its own event comes
    template = service(TEMPLATE, "t", "False")  # another kind with such a condition: not a service
    store(cache, template)
    assert woken(cache) == sorted([f"{GROUP_LEGACY}/legacy-waiting", f"{GROUP_AIM}/waiting"])

    store(cache, service(SERVICE, "waiting", "True", rv=2))  # its template resolved
    assert woken(cache) == [f"{GROUP_LEGACY}/legacy-waiting"]
    cache._remove(subjects.object_key(*target_of(service(LEGACY, "legacy-waiting", None))))
    assert woken(cache) == []
