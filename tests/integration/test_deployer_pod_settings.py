"""What the AIMService says about its inference pods reaches them, and a pod the API server refuses
is named on the service: ``spec.priorityClassName`` (the released original's 0.2.2), the pull
policy from the tag (its 0.2.5) and the service's annotations the deployer's
``AIM_PROPAGATE_ANNOTATIONS`` allows, against a real API server whose kube-controller-manager runs the
Deployment and ReplicaSet controllers and whose Priority admission resolves a pod's priority.

The test plays KServe with the KServe stand-in's own Deployment (:func:`aim_dev.kserve.raw.deployment`,
which copies the predictor's pod fields as KServe does); on the node the stand-in runs it and
``tests/node/test_operator_pod_settings.py`` shows a running pod with them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aim_deployer.inference import isvc_name
from aim_dev.kserve import raw
from aimcore.api.kinds import DEPLOYMENT, INFERENCE_SERVICE, KindRef
from aimcore.runtime import Kube
from tests.helpers import condition, eventually, has, manifest
from tests.integration import test_deployer
from tests.integration.test_deployer import (
    SERVICE,
    container,
    isvc_of,
    make_model,
    make_service,
    make_template,
    wait_service,
)
from tests.integration.test_deployer_replicas import pods_of

deployer = test_deployer.deployer  # the fixture: the session's services, discovery and cache stopped
pytestmark = pytest.mark.usefixtures("deployer")

PRIORITY_CLASS = KindRef("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False)
PODS_READY = "InferenceServicePodsReady"
PRIORITY = 1_000_000


@pytest.fixture
async def priority_class(kube: Kube) -> AsyncIterator[str]:
    """A PriorityClass name unique to the test (cluster-scoped, so removed after it)."""
    name = f"aim-test-{uuid.uuid4().hex[:8]}"
    yield name
    await kube.delete(PRIORITY_CLASS, None, name)


async def test_a_priority_class_reaches_the_pods_and_a_missing_one_is_named(
    kube: Kube, namespace: str, priority_class: str
) -> None:
    await make_model(kube, namespace, "pm")
    await make_template(kube, namespace, "pm-t", "pm")
    await make_service(
        kube, namespace, "urgent", {"model": {"name": "pm"}, "priorityClassName": priority_class}
    )
    isvc = await isvc_of(kube, namespace, "urgent")
    assert isvc["metadata"]["name"] == isvc_name("urgent", namespace)
    assert isvc["spec"]["predictor"]["priorityClassName"] == priority_class
    assert container(isvc)["imagePullPolicy"] == "IfNotPresent"  # the model's image has a fixed tag

    # the class does not exist: the API server refuses every pod, and the service says so
    await kube.create(DEPLOYMENT, raw.deployment(isvc), namespace)
    svc = await wait_service(kube, namespace, "urgent", has(PODS_READY, "False", "PodsNotCreated"), "refused")
    message = condition(svc["status"], PODS_READY)["message"]
    assert f"no PriorityClass with name {priority_class} was found" in message, message
    assert svc["status"]["status"] == "Degraded"
    assert not await pods_of(kube, namespace, isvc["metadata"]["name"])

    # the class made: the ReplicaSet's next try makes the pod, at the priority the API server resolved
    await kube.create(
        PRIORITY_CLASS,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class},
            "value": PRIORITY,
        },
        None,
    )

    async def made() -> list[dict[str, Any]] | None:
        return await pods_of(kube, namespace, isvc["metadata"]["name"]) or None

    (pod,) = await eventually(made, timeout=120, what="the ReplicaSet to make the pod once the class exists")
    assert pod["spec"]["priorityClassName"] == priority_class
    assert pod["spec"]["priority"] == PRIORITY
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    svc = await wait_service(
        kube,
        namespace,
        "urgent",
        lambda s: condition(s, PODS_READY).get("reason") not in (None, "PodsNotCreated"),
        "the refusal to pass",
    )
    assert condition(svc["status"], PODS_READY)["reason"] in ("PodsPending", "PodsStarting")


async def test_a_moving_tag_is_pulled_each_time_a_pod_starts(kube: Kube, namespace: str) -> None:
    await make_model(kube, namespace, "lm", image="ghcr.io/acme/moving:latest")
    await make_template(kube, namespace, "lm-t", "lm")
    await make_service(kube, namespace, "moving", {"model": {"name": "lm"}})
    isvc = await isvc_of(kube, namespace, "moving")
    assert container(isvc)["image"] == "ghcr.io/acme/moving:latest"
    assert container(isvc)["imagePullPolicy"] == "Always"
    assert "priorityClassName" not in isvc["spec"]["predictor"]


async def test_the_services_allowed_annotations_reach_the_inference_service(
    kube: Kube, namespace: str
) -> None:
    """The session's deployer propagates ``example.com/*`` and ``cost-center``
    (:data:`tests.integration.conftest.PROPAGATED_ANNOTATIONS`); nothing else of the service's."""
    await make_model(kube, namespace, "am")
    await make_template(kube, namespace, "am-t", "am")
    annotations = {
        "example.com/team": "ml",
        "cost-center": "42",
        "example.org/other": "kept on the service",
        "serving.kserve.io/deploymentMode": "Serverless",
    }
    body = manifest(SERVICE, "annotated", namespace, {"model": {"name": "am"}}, annotations=annotations)
    await kube.create(SERVICE, body, namespace)
    isvc = await isvc_of(kube, namespace, "annotated")
    got = isvc["metadata"]["annotations"]
    assert got["example.com/team"] == "ml" and got["cost-center"] == "42"
    assert "example.org/other" not in got
    assert got["serving.kserve.io/deploymentMode"] == "RawDeployment"

    # an edit of the service's annotation reaches the running InferenceService
    await kube.patch(SERVICE, namespace, "annotated", {"metadata": {"annotations": {"cost-center": "7"}}})

    async def updated() -> bool:
        live = await kube.get(INFERENCE_SERVICE, namespace, isvc["metadata"]["name"])
        return live is not None and live["metadata"]["annotations"].get("cost-center") == "7"

    await eventually(updated, timeout=45, what="the new annotation on the InferenceService")
