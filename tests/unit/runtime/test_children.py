"""Labels, owner references and comparison of the objects services create for AIM resources
(``aimcore.runtime.children``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from aimcore.api.kinds import CHILD_SELECTOR, JOB, by_kind
from aimcore.api.types import Obj
from aimcore.runtime import child_labels, contains, differs, owned_by, owner_reference
from aimcore.runtime.children import MANAGED_BY, PART_OF_LABEL, PART_OF_VALUE, without_owner

SERVICE = by_kind("aim.eai.amd.com", "AIMService")
CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")


def owner(name: str = "svc", uid: str = "u1") -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid}}


def test_child_labels() -> None:
    assert MANAGED_BY == "app.kubernetes.io/managed-by"
    assert child_labels("aim-cache-controller") == {
        "app.kubernetes.io/managed-by": "aim-cache-controller",
        "app.kubernetes.io/part-of": "aim-engine",
    }
    # the watcher selects children by exactly this label
    assert f"{PART_OF_LABEL}={PART_OF_VALUE}" == CHILD_SELECTOR


def test_child_labels_is_a_fresh_dict() -> None:
    labels = child_labels("x")
    labels["extra"] = "y"
    assert child_labels("x") == {MANAGED_BY: "x", PART_OF_LABEL: PART_OF_VALUE}


def test_owner_reference_is_the_controller_by_default() -> None:
    assert owner_reference(SERVICE, owner()) == {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "name": "svc",
        "uid": "u1",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_owner_reference_of_a_shared_child_is_not_the_controller() -> None:
    ref = owner_reference(CACHE, owner("cache", "c1"), controller=False)
    assert ref == {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModelCache",
        "name": "cache",
        "uid": "c1",
        "controller": False,
        "blockOwnerDeletion": True,
    }


def test_owner_reference_of_a_builtin_kind_uses_the_core_api_version() -> None:
    assert owner_reference(JOB, owner("j", "j1"))["apiVersion"] == "batch/v1"


def test_owner_reference_needs_name_and_uid() -> None:
    with pytest.raises(KeyError):
        owner_reference(SERVICE, {"metadata": {"name": "svc"}})


def _child(*uids: str) -> Obj:
    return {"metadata": {"name": "c", "ownerReferences": [{"uid": u, "name": f"o-{u}"} for u in uids]}}


@pytest.mark.parametrize(
    ("obj", "uid", "want"),
    [
        (_child("u1"), "u1", True),
        (_child("u0", "u1"), "u1", True),
        (_child("u0"), "u1", False),
        (_child(), "u1", False),
        ({"metadata": {}}, "u1", False),
        ({}, "u1", False),
        ({"metadata": {"ownerReferences": None}}, "u1", False),
        ({"metadata": {"ownerReferences": ["junk", {"uid": "u1"}]}}, "u1", True),
    ],
)
def test_owned_by(obj: Obj, uid: str, want: bool) -> None:
    assert owned_by(obj, uid) is want


def test_without_owner() -> None:
    child = _child("u0", "u1", "u2")
    left = without_owner(child, "u1")
    assert left == [{"uid": "u0", "name": "o-u0"}, {"uid": "u2", "name": "o-u2"}]
    left[0]["uid"] = "changed"  # copies: the object itself is untouched
    assert [o["uid"] for o in child["metadata"]["ownerReferences"]] == ["u0", "u1", "u2"]


@pytest.mark.parametrize(
    ("obj", "uid", "left"),
    [
        (_child("u1"), "u1", []),
        (_child("u1", "u1"), "u1", []),
        (_child("u0"), "u1", [{"uid": "u0", "name": "o-u0"}]),
        ({}, "u1", []),
        ({"metadata": {"ownerReferences": ["junk"]}}, "u1", []),
    ],
)
def test_without_owner_edge_cases(obj: Obj, uid: str, left: list[Obj]) -> None:
    assert without_owner(obj, uid) == left


# -- differs / contains ---------------------------------------------------------------------------


def _pvc() -> Obj:
    """A child body as a service applies it."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "cache-llama",
            "namespace": "ns",
            "labels": child_labels("aim-cache-controller"),
            "ownerReferences": [owner_reference(CACHE, owner("cache", "c1"), controller=False)],
        },
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}}},
    }


def _server(change: Callable[[Obj], object] = lambda obj: None) -> Obj:
    """The body as the server returns it, with defaults and bookkeeping added, then ``change``d."""
    obj = copy.deepcopy(_pvc())
    obj["metadata"].update({"uid": "p1", "resourceVersion": "3"})
    obj["metadata"]["labels"]["kubernetes.io/extra"] = "server"
    obj["spec"].update({"volumeMode": "Filesystem", "storageClassName": "standard"})
    obj["status"] = {"phase": "Bound"}
    change(obj)
    return obj


CHANGES: dict[str, tuple[Callable[[Obj], object], bool]] = {
    "server-defaults": (lambda o: None, False),
    "changed-list-item": (lambda o: o["spec"].update(accessModes=["ReadWriteOnce"]), True),
    "longer-list": (lambda o: o["spec"]["accessModes"].append("ReadOnlyMany"), True),
    "changed-nested": (lambda o: o["spec"]["resources"]["requests"].update(storage="10Gi"), True),
    "extra-nested-key": (lambda o: o["spec"]["resources"]["requests"].update(cpu="1"), False),
    "no-spec": (lambda o: o.pop("spec"), True),
    "missing-label": (lambda o: o["metadata"]["labels"].pop(MANAGED_BY), True),
    "no-labels": (lambda o: o["metadata"].pop("labels"), True),
    "no-owner": (lambda o: o["metadata"].pop("ownerReferences"), True),
    "other-owner": (lambda o: o["metadata"].update(ownerReferences=[{"uid": "other"}]), True),
    "extra-owner": (lambda o: o["metadata"]["ownerReferences"].insert(0, {"uid": "other"}), False),
}


@pytest.mark.parametrize(("change", "want"), CHANGES.values(), ids=CHANGES.keys())
def test_differs(change: Callable[[Obj], object], want: bool) -> None:
    assert differs(_server(change), _pvc()) is want


def test_differs_ignores_owners_the_body_does_not_name() -> None:
    body = _pvc()
    body["metadata"].pop("ownerReferences")
    no_owner = _server(lambda o: o["metadata"].pop("ownerReferences"))
    assert not differs(no_owner, body)
    body["metadata"]["ownerReferences"] = [{"name": "no-uid"}]
    assert not differs(no_owner, body)


def test_differs_on_changed_label_value() -> None:
    existing = _server()
    existing["metadata"]["labels"][MANAGED_BY] = "someone-else"
    assert differs(existing, _pvc())


def test_differs_on_an_annotation_the_body_sets() -> None:
    """An annotation alone (an InferenceService's autoscaler class) is a change; one the server or a
    user added, that the body does not set, is not."""
    body = _pvc()
    body["metadata"]["annotations"] = {"serving.kserve.io/autoscalerClass": "keda"}
    same = _server(lambda o: o["metadata"].update(annotations={**body["metadata"]["annotations"], "x": "y"}))
    assert not differs(same, body)
    other = _server(lambda o: o["metadata"].update(annotations={"serving.kserve.io/autoscalerClass": "none"}))
    assert differs(other, body)
    assert differs(_server(), body)  # none at all yet


@pytest.mark.parametrize(
    ("have", "want", "result"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, True),
        ({"a": {"b": 1}}, {"a": {"b": 2}}, False),
        ([{"a": 1, "x": 0}, {"b": 2}], [{"a": 1}, {"b": 2}], True),
        ([{"a": 1}], [{"a": 1}, {"b": 2}], False),
        ([1, 2], [2, 1], False),
        ({}, {}, True),
        (None, {}, False),
        ("x", {"a": 1}, False),
        ({"a": 1}, [], False),
        ([], [], True),
        (1, 1, True),
        (1, "1", False),
        (None, None, True),
        ({"a": None}, {"a": None}, True),
        ({}, {"a": None}, True),  # a missing key reads as None
    ],
)
def test_contains(have: Any, want: Any, result: bool) -> None:
    assert contains(have, want) is result
