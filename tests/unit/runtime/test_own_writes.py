"""The children a reconcile wrote are known to its replica only if the reconcile completes: a
failed reconcile's writes are withdrawn, so their change events wake the owner again."""

from __future__ import annotations

from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import INFERENCE_SERVICE
from aimcore.runtime.ownwrites import OwnWrites, RunWrites


def child(version: str) -> dict[str, object]:
    return {"metadata": {"namespace": "ns", "name": "svc-isvc", "resourceVersion": version}}


def event(version: str) -> ChangeEvent:
    return ChangeEvent(
        object=ObjectRef.of(INFERENCE_SERVICE, "ns", "svc-isvc"),
        uid="u",
        resource_version=version,
        change=ChangeType.ADDED,
    )


def test_a_completed_reconciles_child_event_is_its_own_once() -> None:
    own = OwnWrites()
    RunWrites(own).record(INFERENCE_SERVICE, child("5"))
    assert own.consume(event("5")) is True
    assert own.consume(event("5")) is False  # once
    assert own.consume(event("6")) is False  # a later version is news


def test_a_failed_reconciles_writes_are_withdrawn() -> None:
    own = OwnWrites()
    run = RunWrites(own)
    run.record(INFERENCE_SERVICE, child("5"))
    run.withdraw()
    assert own.consume(event("5")) is False


def test_withdrawing_leaves_a_later_write_of_the_same_child() -> None:
    own = OwnWrites()
    failed = RunWrites(own)
    failed.record(INFERENCE_SERVICE, child("5"))
    RunWrites(own).record(INFERENCE_SERVICE, child("7"))  # another run wrote it again since
    failed.withdraw()
    assert own.consume(event("7")) is True
