"""The mapper verbs (``aimcore.runtime.mappers``): owners, through a Job to its owner, users found by
an index with the scope rules (same API group; the dependency's namespace, or every namespace for a
cluster-scoped one), every object of a kind, and their compositions. Run against a real
:class:`Informer` cache, filled as its KV watch would fill it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import (
    GROUP_AIM,
    GROUP_LEGACY,
    JOB,
    LLMKUBE_MODEL,
    MODEL_CACHE_KINDS,
    POD,
    SERVICE_KINDS,
    TEMPLATE_KINDS,
    KindRef,
    by_kind,
)
from aimcore.api.types import Obj
from aimcore.runtime import (
    Indexer,
    Informer,
    Mapper,
    Target,
    Watch,
    any_of,
    by_index,
    every,
    field_indexer,
    keep_cached,
    through,
    through_job_to_owner,
    to_owners,
)
from aimcore.runtime.mappers import target_of

SERVICE = by_kind(GROUP_AIM, "AIMService")
LEGACY_SERVICE = by_kind(GROUP_LEGACY, "AIMService")
TEMPLATE = by_kind(GROUP_AIM, "AIMServiceTemplate")
CLUSTER_TEMPLATE = by_kind(GROUP_AIM, "AIMClusterServiceTemplate")
LEGACY_TEMPLATE = by_kind(GROUP_LEGACY, "AIMServiceTemplate")
CLUSTER_MODEL = by_kind(GROUP_AIM, "AIMClusterModel")
MODEL_CACHE = MODEL_CACHE_KINDS[0]
BY_TEMPLATE = "template"


def obj(ref: KindRef, namespace: str | None, name: str, **fields: Any) -> Obj:
    meta: Obj = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(fields.pop("metadata", {}))
    return {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": meta, **fields}


def owned_by(*owners: tuple[KindRef, str]) -> dict[str, Any]:
    return {"ownerReferences": [{"apiVersion": r.api_version, "kind": r.kind, "name": n} for r, n in owners]}


def informer(*objs: Obj, indexers: dict[str, Indexer] | None = None) -> Informer:
    cache = Informer(None, [], indexers)  # type: ignore[arg-type]  # filled here, not by a KV watch
    for o in objs:
        cache._store(subjects.object_key(*target_of(o)), o)
    return cache


def event(
    ref: KindRef, namespace: str | None, name: str, change: ChangeType = ChangeType.MODIFIED
) -> ChangeEvent:
    return ChangeEvent(
        object=ObjectRef.of(ref, namespace, name), uid="u", resource_version="2", change=change
    )


def run(mapper: Mapper, changed: Obj, cache: Informer) -> list[Target]:
    return list(mapper(event(*target_of(changed)), changed, cache))


def names(targets: Iterable[Target]) -> list[tuple[str, str | None, str]]:
    return [(ref.short, ns, name) for ref, ns, name in targets]


# -- to_owners -------------------------------------------------------------------------------------


def test_to_owners_keeps_the_owners_of_the_given_kinds() -> None:
    child = obj(
        MODEL_CACHE,
        "ns",
        "mc",
        metadata=owned_by((SERVICE, "a"), (LEGACY_SERVICE, "b"), (TEMPLATE, "t"), (CLUSTER_MODEL, "m")),
    )
    assert names(run(to_owners(*SERVICE_KINDS), child, informer())) == [
        ("AIMService.aim.eai.amd.com", "ns", "a"),
        ("AIMService.aim.silogen.ai", "ns", "b"),
    ]
    # with same_group, only owners of the child's own API group (a current child, a current owner)
    assert names(run(to_owners(*SERVICE_KINDS, same_group=True), child, informer())) == [
        ("AIMService.aim.eai.amd.com", "ns", "a")
    ]
    # a cluster-scoped owner of a namespaced child has no namespace
    assert names(run(to_owners(CLUSTER_MODEL), child, informer())) == [
        ("AIMClusterModel.aim.eai.amd.com", None, "m")
    ]


def test_to_owners_of_nothing_and_of_a_cluster_scoped_child() -> None:
    assert list(to_owners(SERVICE)(event(MODEL_CACHE, "ns", "gone"), None, informer())) == []
    # Kubernetes allows no namespaced owner of a cluster-scoped object: such a reference maps nowhere
    cluster_child = obj(CLUSTER_TEMPLATE, None, "ct", metadata=owned_by((SERVICE, "a"), (CLUSTER_MODEL, "m")))
    assert names(run(to_owners(SERVICE, CLUSTER_MODEL), cluster_child, informer())) == [
        ("AIMClusterModel.aim.eai.amd.com", None, "m")
    ]


# -- through ---------------------------------------------------------------------------------------


def test_a_pods_change_reaches_the_owner_of_its_job() -> None:
    job = obj(JOB, "ns", "download", metadata=owned_by((MODEL_CACHE, "mc")))
    pod = obj(POD, "ns", "download-x1", metadata=owned_by((JOB, "download")))
    mapper = through_job_to_owner(*MODEL_CACHE_KINDS, LLMKUBE_MODEL)
    assert names(run(mapper, pod, informer(job))) == [("AIMModelCache.aim.eai.amd.com", "ns", "mc")]
    assert run(mapper, pod, informer()) == []  # a Job the cache does not have: nothing
    orphan = obj(POD, "ns", "lonely")
    assert run(mapper, orphan, informer(job)) == []


def test_through_maps_from_the_intermediate_object_as_if_it_had_changed() -> None:
    """The second mapping sees the intermediate object's identity: here its scope (a cluster
    template reaches services in every namespace, though the change was a namespaced object's)."""

    def the_cluster_template(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        return [(CLUSTER_TEMPLATE, None, "ct")]

    services = [
        obj(SERVICE, "a", "s1", spec={"template": "ct"}),
        obj(SERVICE, "b", "s2", spec={"template": "ct"}),
    ]
    cache = informer(
        obj(CLUSTER_TEMPLATE, None, "ct"),
        *services,
        indexers={BY_TEMPLATE: field_indexer("spec", "template")},
    )
    mapper = through(the_cluster_template, by_index(BY_TEMPLATE))
    changed = obj(MODEL_CACHE, "a", "mc")
    assert names(run(mapper, changed, cache)) == [
        ("AIMService.aim.eai.amd.com", "a", "s1"),
        ("AIMService.aim.eai.amd.com", "b", "s2"),
    ]
    # and an intermediate object the cache does not have maps nowhere
    assert run(through(the_cluster_template, by_index(BY_TEMPLATE)), changed, informer()) == []


# -- by_index --------------------------------------------------------------------------------------


def _users() -> Informer:
    return informer(
        obj(SERVICE, "a", "s1", spec={"template": "t"}),
        obj(SERVICE, "b", "s2", spec={"template": "t"}),
        obj(LEGACY_SERVICE, "a", "legacy", spec={"template": "t"}),
        obj(SERVICE, "a", "other", spec={"template": "u"}),
        obj(TEMPLATE, "a", "named-t", spec={"template": "t"}),  # another kind the index files
        indexers={BY_TEMPLATE: field_indexer("spec", "template")},
    )


def test_by_index_a_namespaced_dependency_reaches_its_namespace_and_its_group_only() -> None:
    changed = obj(TEMPLATE, "a", "t")
    assert names(run(by_index(BY_TEMPLATE, kinds=SERVICE_KINDS), changed, _users())) == [
        ("AIMService.aim.eai.amd.com", "a", "s1")
    ]
    # without kinds, whatever the index files under the name (of the group and namespace)
    assert names(run(by_index(BY_TEMPLATE), changed, _users())) == [
        ("AIMService.aim.eai.amd.com", "a", "s1"),
        ("AIMServiceTemplate.aim.eai.amd.com", "a", "named-t"),
    ]


def test_by_index_a_cluster_scoped_dependency_reaches_every_namespace() -> None:
    changed = obj(CLUSTER_TEMPLATE, None, "t")
    assert names(run(by_index(BY_TEMPLATE, kinds=SERVICE_KINDS), changed, _users())) == [
        ("AIMService.aim.eai.amd.com", "a", "s1"),
        ("AIMService.aim.eai.amd.com", "b", "s2"),
    ]


def test_by_index_the_legacy_twin_reaches_legacy_users_only() -> None:
    changed = obj(LEGACY_TEMPLATE, "a", "t")
    assert names(run(by_index(BY_TEMPLATE), changed, _users())) == [
        ("AIMService.aim.silogen.ai", "a", "legacy")
    ]


def test_by_index_under_other_keys() -> None:
    def spec_aliases(event: ChangeEvent, obj: Obj | None) -> list[str]:
        return list(((obj or {}).get("spec") or {}).get("aliases") or [])

    changed = obj(TEMPLATE, "a", "renamed", spec={"aliases": ["u", "t"]})
    assert names(run(by_index(BY_TEMPLATE, key=spec_aliases, kinds=SERVICE_KINDS), changed, _users())) == [
        ("AIMService.aim.eai.amd.com", "a", "other"),
        ("AIMService.aim.eai.amd.com", "a", "s1"),
    ]


# -- every, any_of, keep_cached --------------------------------------------------------------------


def test_every_object_of_the_kinds_that_satisfies_the_condition() -> None:
    cache = informer(
        obj(TEMPLATE, "a", "gpu", spec={"gpu": True}),
        obj(TEMPLATE, "a", "cpu", spec={}),
        obj(CLUSTER_TEMPLATE, None, "cluster-gpu", spec={"gpu": True}),
        obj(SERVICE, "a", "s", spec={"gpu": True}),
    )

    def wants_gpu(kind: KindRef, item: Obj) -> bool:
        return bool(item["spec"].get("gpu"))

    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    assert names(run(every(*TEMPLATE_KINDS, where=wants_gpu), node, cache)) == [
        ("AIMServiceTemplate.aim.eai.amd.com", "a", "gpu"),
        ("AIMClusterServiceTemplate.aim.eai.amd.com", None, "cluster-gpu"),
    ]
    assert len(list(run(every(TEMPLATE), node, cache))) == 2


def test_any_of_keeps_each_mappers_targets_in_order_and_keep_cached_has_none() -> None:
    job = obj(JOB, "ns", "j", metadata=owned_by((MODEL_CACHE, "mc"), (SERVICE, "svc")))
    mapper = any_of(to_owners(SERVICE), keep_cached, to_owners(MODEL_CACHE))
    assert names(run(mapper, job, informer())) == [
        ("AIMService.aim.eai.amd.com", "ns", "svc"),
        ("AIMModelCache.aim.eai.amd.com", "ns", "mc"),
    ]
    assert run(keep_cached, job, informer()) == []


def test_watch_each_kind_of_a_family() -> None:
    watches = Watch.each(TEMPLATE_KINDS, keep_cached)
    assert [w.kind for w in watches] == list(TEMPLATE_KINDS)
    assert {w.mapper for w in watches} == {keep_cached}
