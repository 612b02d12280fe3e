"""A Node's GPU change wakes exactly the templates that need a GPU (both groups, every spelling of a
GPU requirement), found through an index kept as templates are stored
(``aim_discovery.dependencies.GPU_INDEX``), not by reading every template at each Node change."""

from __future__ import annotations

from typing import Any

from aim_discovery import dependencies as deps
from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import GROUP_AIM, GROUP_LEGACY, NODE, TEMPLATE_KINDS, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.runtime import Informer, filed
from aimcore.runtime.mappers import target_of

TEMPLATE = by_kind(GROUP_AIM, "AIMServiceTemplate")
CLUSTER_TEMPLATE = by_kind(GROUP_AIM, "AIMClusterServiceTemplate")
LEGACY = by_kind(GROUP_LEGACY, "AIMServiceTemplate")


def template(ref: KindRef, name: str, rv: int = 1, **spec: Any) -> Obj:
    meta: Obj = {"name": name, "uid": f"u-{name}", "resourceVersion": str(rv)}
    if ref.namespaced:
        meta["namespace"] = "ns"
    model = {"modelName": "m"} if ref.group == GROUP_AIM else {"aimImageName": "m"}
    return {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": meta, "spec": {**model, **spec}}


def store(cache: Informer, obj: Obj) -> None:
    cache._store(subjects.object_key(*target_of(obj)), obj)


def node_event(change: ChangeType = ChangeType.MODIFIED) -> ChangeEvent:
    return ChangeEvent(object=ObjectRef.of(NODE, None, "n1"), uid="n", resource_version="5", change=change)


def woken(cache: Informer) -> list[str]:
    mapper = filed(deps.GPU_INDEX, deps.NEEDS_GPU, *TEMPLATE_KINDS)
    return sorted(f"{ref.kind}.{ref.group}/{name}" for ref, _, name in mapper(node_event(), {}, cache))


def test_a_node_wakes_exactly_the_templates_needing_a_gpu() -> None:
    cache = Informer(None, [], {deps.GPU_INDEX: deps.needs_gpu})  # type: ignore[arg-type]
    store(cache, template(TEMPLATE, "gpu", gpu={"requests": 1}))
    store(cache, template(TEMPLATE, "model-only", gpu={"model": "MI300X"}))
    store(cache, template(TEMPLATE, "vram", gpu={"minVram": "64Gi"}))
    store(cache, template(CLUSTER_TEMPLATE, "released", hardware={"gpu": {"requests": 2, "model": "MI300X"}}))
    store(cache, template(LEGACY, "selector", gpuSelector={"count": 1, "model": "MI300X"}))
    store(cache, template(TEMPLATE, "none"))
    store(cache, template(TEMPLATE, "zero", gpu={"requests": 0}))
    store(cache, template(TEMPLATE, "cpu", hardware={"cpu": {"requests": "2"}}))
    store(cache, template(LEGACY, "legacy-cpu"))
    assert woken(cache) == [
        f"AIMClusterServiceTemplate.{GROUP_AIM}/released",
        f"AIMServiceTemplate.{GROUP_AIM}/gpu",
        f"AIMServiceTemplate.{GROUP_AIM}/model-only",
        f"AIMServiceTemplate.{GROUP_AIM}/vram",
        f"AIMServiceTemplate.{GROUP_LEGACY}/selector",
    ]

    store(cache, template(TEMPLATE, "gpu", rv=2))  # its GPU requirement removed
    store(cache, template(TEMPLATE, "none", rv=2, gpu={"requests": 4}))  # one added
    cache._remove(subjects.object_key(*target_of(template(LEGACY, "selector"))))
    assert woken(cache) == [
        f"AIMClusterServiceTemplate.{GROUP_AIM}/released",
        f"AIMServiceTemplate.{GROUP_AIM}/model-only",
        f"AIMServiceTemplate.{GROUP_AIM}/none",
        f"AIMServiceTemplate.{GROUP_AIM}/vram",
    ]


def test_only_a_change_of_the_nodes_gpus_wakes_them() -> None:
    cache = Informer(None, [], {deps.GPU_INDEX: deps.needs_gpu})  # type: ignore[arg-type]
    store(cache, template(TEMPLATE, "gpu", gpu={"requests": 1}))
    watch = deps.GpuChanges(filed(deps.GPU_INDEX, deps.NEEDS_GPU, *TEMPLATE_KINDS))
    node: Obj = {"metadata": {"name": "n1", "labels": {"amd.com/gpu.product-name": "MI300X"}}}
    assert [t[2] for t in watch(node_event(ChangeType.ADDED), node, cache)] == ["gpu"]
    assert list(watch(node_event(), node, cache)) == []  # a heartbeat: the same GPUs
    node["metadata"]["labels"] = {}
    assert [t[2] for t in watch(node_event(), node, cache)] == ["gpu"]
