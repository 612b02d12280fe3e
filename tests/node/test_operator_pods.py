"""The operator's own Pods on a real node: deleting the watcher's Pod (the single replica every
change event comes from) in the middle of an AIMService's rollout; its Deployment replaces it, the
new watcher lists everything again, and the service still converges to ``Running``."""

from __future__ import annotations

from typing import Any

import pytest

from aim_dev.local import deployed
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import POD
from aimcore.runtime import Kube
from tests.helpers import eventually, kubectl
from tests.node.helpers import NODE_TIMEOUT, aim, conditions, state, summary, wait_for

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

SERVICE = aim("AIMService")
MODEL = aim("AIMModel")
WATCHER = "app.kubernetes.io/name=aim-watcher"


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


async def test_a_watcher_pod_deleted_mid_rollout_is_replaced_and_the_service_converges(
    stack: NodeStack, api: Kube, namespace: str, model_image: str, source_env: list[dict[str, str]]
) -> None:
    [old] = (await api.list(POD, deployed.SYSTEM_NAMESPACE, label_selector=WATCHER))[0]
    await api.create(
        SERVICE,
        {
            "apiVersion": SERVICE.api_version,
            "kind": SERVICE.kind,
            "metadata": {"name": "survivor"},
            "spec": {
                "model": {"image": model_image},
                "template": {"allowUnoptimized": True},
                "env": source_env,
            },
        },
        namespace,
    )

    # mid-rollout: the deployer has made the model, the service is not running yet
    async def model_made() -> list[dict[str, Any]] | None:
        return (await api.list(MODEL, namespace))[0] or None

    await eventually(model_made, timeout=60, interval=0.1, what="the service's AIMModel")
    svc = await api.get(SERVICE, namespace, "survivor")
    assert svc is not None and state(svc) != "Running", summary(svc)
    kubectl(
        "delete", "pod", "-n", deployed.SYSTEM_NAMESPACE, old["metadata"]["name"], kubeconfig=stack.kubeconfig
    )

    async def replaced() -> dict[str, Any] | None:
        pods = (await api.list(POD, deployed.SYSTEM_NAMESPACE, label_selector=WATCHER))[0]
        if len(pods) == 1 and pods[0]["metadata"]["uid"] != old["metadata"]["uid"] and ready(pods[0]):
            return pods[0]
        return None

    new = await eventually(replaced, timeout=120, interval=0.25, what="a new watcher pod, Ready, alone")
    assert new["spec"]["nodeName"] == old["spec"]["nodeName"]

    svc = await wait_for(
        api, SERVICE, namespace, "survivor", lambda s: state(s) == "Running", timeout=300, what="Running"
    )
    assert conditions(svc)["InferenceServicePodsReady"]["reason"] == "PodsReady"

    async def watcher_available() -> bool:
        dep = await api.get(deployed.DEPLOYMENT, deployed.SYSTEM_NAMESPACE, "aim-watcher")
        return dep is not None and not deployed.rollout_problems([dep])

    await eventually(watcher_available, timeout=60, interval=0.25, what="aim-watcher rolled out")
