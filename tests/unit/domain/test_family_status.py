"""What every AIM object's status says, read as the status service wrote it: by a family adapter
(``Object.state``, ``.ready``) and, for an object not read through one (a child a finalizer cleans
up), from the stored dict (``state_of``, ``is_ready``): the two agree."""

from __future__ import annotations

from typing import Any

import pytest

from aimcore.api.kinds import GROUP_AIM, GROUP_LEGACY, by_kind
from aimcore.api.types import Obj
from aimcore.domain.families.base import READY_STATES, is_ready, state_of
from aimcore.domain.families.caches import TemplateCache


def cache(group: str, status: Any) -> Obj:
    ref = by_kind(group, "AIMTemplateCache")
    spec = {"templateName": "t"} if group == GROUP_AIM else {"templateRef": "t"}
    obj: Obj = {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": {"name": "c", "namespace": "ns"}}
    return {**obj, "spec": spec, **({"status": status} if status is not None else {})}


@pytest.mark.parametrize(
    ("group", "status", "state", "ready"),
    [
        (GROUP_AIM, None, "Pending", False),
        (GROUP_AIM, {}, "Pending", False),
        (GROUP_AIM, {"status": ""}, "Pending", False),
        (GROUP_AIM, {"status": "Ready"}, "Ready", True),
        (GROUP_AIM, {"status": "Failed"}, "Failed", False),
        (GROUP_LEGACY, {"status": "Available"}, "Available", True),  # the legacy group's ready
        (GROUP_LEGACY, {"status": "Progressing"}, "Progressing", False),
    ],
)
def test_state_and_readiness(group: str, status: Obj | None, state: str, ready: bool) -> None:
    obj = cache(group, status)
    assert state_of(obj) == state
    assert is_ready(obj) is ready
    read = TemplateCache(by_kind(group, "AIMTemplateCache"), obj)
    assert (read.state, read.ready) == (state, ready)


def test_ready_states() -> None:
    assert READY_STATES == ("Ready", "Available")
    assert state_of({"status": "written by no one we know"}) == "Pending"  # not a mapping: nothing said
