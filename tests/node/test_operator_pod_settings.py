"""What an AIMService says about its inference pods, on a real node: ``spec.priorityClassName`` (the
released original's 0.2.2) reaches the predictor pod, whose priority the API server resolves from
the class, and an image by a moving tag (``:latest``) is pulled each time a pod starts
(``imagePullPolicy: Always``, the released original's 0.2.5 rule) from the stack's registry by the
real kubelet; the service runs (its pod Ready: the model server answers its health check). The
refusal of a class that does not exist is the integration tier's
(``tests/integration/test_deployer_pod_settings.py``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aim_deployer.inference import isvc_name
from aim_dev.kserve import raw
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import POD, KindRef
from aimcore.runtime import Kube
from tests.node.conftest import MODEL_REPOSITORY
from tests.node.helpers import NODE_TIMEOUT, aim, state, wait_for

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

SERVICE = aim("AIMService")
PRIORITY_CLASS = KindRef("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False)
PRIORITY = 1_000_000


@pytest.fixture
async def priority_class(api: Kube) -> AsyncIterator[str]:
    """A PriorityClass of the test's own (cluster-scoped, so removed after it)."""
    name = f"aim-node-{uuid.uuid4().hex[:8]}"
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": PRIORITY,
        "description": "the node tier's inference priority",
    }
    await api.create(PRIORITY_CLASS, body, None)
    yield name
    await api.delete(PRIORITY_CLASS, None, name)


async def test_a_priority_class_and_a_moving_tag_reach_the_running_pod(
    stack: NodeStack, api: Kube, namespace: str, priority_class: str, source_env: list[dict[str, str]]
) -> None:
    image = stack.push_model("test-model", MODEL_REPOSITORY, "latest")
    assert image.endswith(":latest")
    body: dict[str, Any] = {
        "apiVersion": SERVICE.api_version,
        "kind": SERVICE.kind,
        "metadata": {"name": "urgent"},
        # the test model's one profile is unoptimized (a CPU stand-in for an AIM image)
        "spec": {
            "model": {"image": image},
            "template": {"allowUnoptimized": True},
            "priorityClassName": priority_class,
            "env": source_env,
        },
    }
    await api.create(SERVICE, body, namespace)
    svc = await wait_for(
        api, SERVICE, namespace, "urgent", lambda s: state(s) == "Running", timeout=240, what="urgent Running"
    )

    isvc = isvc_name("urgent", namespace)
    pods, _ = await api.list(POD, namespace, label_selector=f"{raw.ISVC_LABEL}={isvc}")
    (pod,) = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert pod["spec"]["priorityClassName"] == priority_class
    assert pod["spec"]["priority"] == PRIORITY
    (container,) = [c for c in pod["spec"]["containers"] if c["name"] == raw.CONTAINER]
    assert container["image"] == image
    assert container["imagePullPolicy"] == "Always"
    (status,) = [c for c in pod["status"]["containerStatuses"] if c["name"] == raw.CONTAINER]
    assert status["ready"] is True and status["imageID"], status  # the kubelet pulled and ran it
    assert svc["status"]["status"] == "Running"
