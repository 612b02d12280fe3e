"""Two worker nodes with different GPUs, as the original's kind cluster labels them: templates for
each GPU model are discovered (the model image's dry-run, in a real Job), a service of each runs
its predictor pod on the node with that GPU and nowhere else (the node affinity on the device id
the deployer writes, honoured by the real scheduler), and a GPU no node has is said to be missing.

The nodes have no GPU devices: they are labelled as the AMD GPU node labeller would label them and
advertise ``amd.com/gpu`` capacity (an extended resource patched into the Node's status, as a
device plugin would report it); the test model's server needs no GPU to answer. Both are taken
away afterwards, so no later test finds GPUs here."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aim_dev.kserve import raw
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import NAMESPACE, NODE, POD, by_kind
from aimcore.domain.gpu import DEVICE_ID_LABEL
from aimcore.runtime import Kube
from tests.helpers import eventually
from tests.multinode.faults import GPU, MODEL, SERVICE, ready

TEMPLATE = by_kind("aim.eai.amd.com", "AIMServiceTemplate")
GPUS = {"aim-worker-1": ("74a1", "MI300X"), "aim-worker-2": ("75a3", "MI355X")}

pytestmark = pytest.mark.timeout(900)


@pytest.fixture
async def gpu_nodes(api: Kube) -> AsyncIterator[dict[str, str]]:
    """Two nodes labelled and advertising eight GPUs each: GPU model → node name."""
    try:
        for node, (device, _) in GPUS.items():
            await api.patch(NODE, None, node, {"metadata": {"labels": {DEVICE_ID_LABEL: device}}})
            eight = {GPU: "8"}
            await api.patch_status(NODE, None, node, {"status": {"capacity": eight, "allocatable": eight}})
        yield {model: node for node, (_, model) in GPUS.items()}
    finally:
        for node in GPUS:
            await api.patch(NODE, None, node, {"metadata": {"labels": {DEVICE_ID_LABEL: None}}})
            gone = {GPU: None}
            await api.patch_status(NODE, None, node, {"status": {"capacity": gone, "allocatable": gone}})


def state(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("status") or {}).get("status")


async def test_each_service_runs_on_the_node_with_its_gpu(
    stack: NodeStack, api: Kube, model_image: str, gpu_nodes: dict[str, str]
) -> None:
    namespace = f"gpu-{secrets.token_hex(3)}"
    await api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        await _services_find_their_gpus(api, namespace, model_image, gpu_nodes)
    finally:
        # gone before the next test: each Node event would wake these services (their GPUs)
        await api.delete(NAMESPACE, None, namespace)


async def _services_find_their_gpus(
    api: Kube, namespace: str, model_image: str, gpu_nodes: dict[str, str]
) -> None:
    model = {"apiVersion": MODEL.api_version, "kind": MODEL.kind, "metadata": {"name": "m"}}
    await api.create(MODEL, {**model, "spec": {"image": model_image}}, namespace)
    for gpu in (*gpu_nodes, "MI325X"):
        template = {
            "apiVersion": TEMPLATE.api_version,
            "kind": TEMPLATE.kind,
            "metadata": {"name": gpu.lower()},
            "spec": {"modelName": "m", "gpu": {"model": gpu, "requests": 1}},
        }
        await api.create(TEMPLATE, template, namespace)
        service = {
            "apiVersion": SERVICE.api_version,
            "kind": SERVICE.kind,
            "metadata": {"name": f"on-{gpu.lower()}"},
            "spec": {
                "model": {"name": "m"},
                # the test model's profiles are unoptimized (a CPU stand-in for an AIM image)
                "template": {"name": gpu.lower(), "allowUnoptimized": True},
                # a GPU's default share of a node (4 CPUs, 32 GiB) is more than these nodes have
                "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi", GPU: 1},
                    "limits": {"memory": "256Mi", GPU: 1},
                },
            },
        }
        await api.create(SERVICE, service, namespace)

    for gpu, node in gpu_nodes.items():

        async def running(name: str = f"on-{gpu.lower()}") -> dict[str, Any] | None:
            svc = await api.get(SERVICE, namespace, name)
            return svc if state(svc) == "Running" else None

        await eventually(running, timeout=300, interval=1, what=f"the {gpu} service Running")
        pods, _ = await api.list(POD, namespace, label_selector=f"aim.eai.amd.com/service=on-{gpu.lower()}")
        [pod] = [p for p in pods if ready(p)]
        assert pod["spec"]["nodeName"] == node, f"the {gpu} service's pod is on {pod['spec']['nodeName']}"
        [container] = [c for c in pod["spec"]["containers"] if c["name"] == raw.CONTAINER]
        assert container["resources"]["limits"][GPU] == "1"
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert GPUS[node][0] in str(terms)

    async def missing() -> dict[str, Any] | None:
        svc = await api.get(SERVICE, namespace, "on-mi325x")
        conds = {c["type"]: c for c in ((svc or {}).get("status") or {}).get("conditions") or []}
        template = conds.get("TemplateReady") or {}
        return template if template.get("reason") == "TemplateNotReady" else None

    why = await eventually(missing, timeout=120, interval=1, what="the MI325X service says why")
    # the template's verdict, from the two real nodes' labels
    assert "No node has GPU MI325X; available: MI300X (1 node), MI355X (1 node)" in why["message"]
