"""NotReadyCleanup (aimcore.domain.cleanup): on delete, the not-ready children of every kind of the
family go, the ready ones stay, and the finalizer is removed; an older name of the finalizer is
honoured alike (a template cache's ``aim.eai.amd.com/model-cache-cleanup``)."""

from __future__ import annotations

from typing import Any, cast

from aimcore.api.kinds import GROUP_AIM, NAMESPACE, KindRef, by_kind
from aimcore.domain.cleanup import NotReadyCleanup
from aimcore.domain.families.base import is_ready, state_of
from aimcore.domain.families.caches import ModelCache
from aimcore.runtime.kube import Kube
from aimcore.runtime.request import Request

TEMPLATE_CACHE = by_kind(GROUP_AIM, "AIMTemplateCache")
MODEL_CACHE = by_kind(GROUP_AIM, "AIMModelCache")
ARTIFACT = by_kind(GROUP_AIM, "AIMArtifact")
LABEL = "aim.eai.amd.com/template-cache.name"
NEWER, OLDER = "aim.eai.amd.com/artifactcleanup", "aim.eai.amd.com/model-cache-cleanup"
CLEANUP = NotReadyCleanup(
    NEWER,
    ModelCache.kinds_in,
    LABEL,
    ready=is_ready,
    state=state_of,
    noun="model cache",
    along="its template cache",
    older=(OLDER,),
)


def child(name: str, state: str, creator: str = "tc") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {LABEL: creator}}, "status": {"status": state}}


class FakeKube:
    def __init__(self) -> None:
        self.deleted: list[tuple[str, str]] = []
        self.patches: list[list[dict[str, Any]]] = []

    async def get(self, ref: KindRef, namespace: str | None, name: str) -> dict[str, Any] | None:
        assert ref == NAMESPACE
        return {"metadata": {"name": name}}  # not terminating

    async def delete(self, ref: KindRef, namespace: str | None, name: str) -> None:
        self.deleted.append((ref.kind, name))

    async def patch_json(self, ref: KindRef, namespace: str | None, name: str, ops: list[Any]) -> None:
        self.patches.append(ops)


class FakeInformer:
    def __init__(self, children: dict[KindRef, list[dict[str, Any]]]) -> None:
        self.children = children

    def list(self, ref: KindRef, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.children.get(ref, [])


class FakeReporter:
    def __init__(self) -> None:
        self.decisions: list[str] = []

    async def decide(self, ref: KindRef, obj: Any, action: str, reason: str, message: str) -> None:
        self.decisions.append(message)


class FakeRequest:
    def __init__(self, finalizers: list[str], children: dict[KindRef, list[dict[str, Any]]]) -> None:
        self.ref = TEMPLATE_CACHE
        self.name, self.namespace = "tc", "ns"
        self.obj = {"metadata": {"name": "tc", "namespace": "ns", "finalizers": finalizers}}
        self.informer = FakeInformer(children)
        self.reporter = FakeReporter()


async def finalize(finalizers: list[str], children: dict[KindRef, list[dict[str, Any]]]) -> FakeKube:
    kube = FakeKube()
    await CLEANUP.finalize(cast(Kube, kube), cast(Request, FakeRequest(finalizers, children)))
    return kube


async def test_the_not_ready_children_of_every_kind_go_and_the_ready_ones_stay() -> None:
    children = {
        MODEL_CACHE: [
            child("mc-ready", "Ready"),
            child("mc-failed", "Failed"),
            child("other", "Failed", "x"),
        ],
        ARTIFACT: [child("art-pending", "Pending"), child("art-ready", "Ready")],
    }
    kube = await finalize([NEWER], children)
    assert kube.deleted == [("AIMModelCache", "mc-failed"), ("AIMArtifact", "art-pending")]
    assert kube.patches[0][-1] == {"op": "remove", "path": "/metadata/finalizers/0"}


async def test_the_older_name_is_honoured_and_removed() -> None:
    kube = await finalize(["else", OLDER], {ARTIFACT: [child("art-failed", "Failed")]})
    assert kube.deleted == [("AIMArtifact", "art-failed")]
    assert kube.patches == [
        [
            {"op": "test", "path": "/metadata/finalizers/1", "value": OLDER},
            {"op": "remove", "path": "/metadata/finalizers/1"},
        ]
    ]


async def test_both_names_are_removed_one_reconcile_at_a_time() -> None:
    kube = await finalize([NEWER, OLDER], {})
    assert [ops[0]["value"] for ops in kube.patches] == [NEWER]
    kube = await finalize([OLDER], {})  # the next reconcile sees the object without the newer name
    assert [ops[0]["value"] for ops in kube.patches] == [OLDER]


async def test_an_object_without_either_name_is_left_alone() -> None:
    kube = await finalize(["else"], {ARTIFACT: [child("art-failed", "Failed")]})
    assert kube.deleted == [] and kube.patches == []
