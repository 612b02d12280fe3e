"""AIMServices on a real node: by image and by model name, each becomes a KServe InferenceService,
the KServe stand-in's Deployment starts real predictor pods from the model image, their readiness
probe passes, and the service is ``Running`` with the InferenceService's URL. A model image that
does not exist leaves the pod in the kubelet's image-pull back-off, and the service says the image
was not found (under the released behaviour the image is inspected first, and no pod is made); a
model server that exits crash-loops, and the service says so."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from aim_deployer.inference import isvc_name
from aim_dev import testmodel
from aim_dev.kserve import raw
from aim_dev.local.nodestack import NodeStack
from aim_dev.node import config as node_config
from aimcore.api.kinds import INFERENCE_SERVICE, POD
from aimcore.runtime import Kube
from tests.helpers import eventually, kubectl
from tests.node.helpers import (
    BEHAVIOUR,
    CACHE_ROOT,
    NODE_TIMEOUT,
    aim,
    conditions,
    events,
    state,
    summary,
    wait_for,
)

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

SERVICE = aim("AIMService")
MODEL = aim("AIMModel")


def service_body(name: str, model: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": SERVICE.api_version,
        "kind": SERVICE.kind,
        "metadata": {"name": name, "labels": {"aim.eai.amd.com/team": "node-tier"}},
        # the test model's one profile is unoptimized (a CPU stand-in for an AIM image)
        "spec": {"model": model, "template": {"allowUnoptimized": True}, **spec},
    }


async def predictor_pods(api: Kube, namespace: str, isvc: str) -> list[dict[str, Any]]:
    pods, _ = await api.list(POD, namespace, label_selector=f"{raw.ISVC_LABEL}={isvc}")
    return pods


async def running(api: Kube, namespace: str, name: str) -> dict[str, Any]:
    return await wait_for(
        api, SERVICE, namespace, name, lambda s: state(s) == "Running", timeout=240, what=f"{name} Running"
    )


async def test_services_by_image_and_by_name_run_real_predictor_pods(
    stack: NodeStack, api: Kube, namespace: str, model_image: str, source_env: list[dict[str, str]]
) -> None:
    await api.create(
        MODEL,
        {
            "apiVersion": MODEL.api_version,
            "kind": MODEL.kind,
            "metadata": {"name": "named"},
            "spec": {"image": model_image},
        },
        namespace,
    )
    await api.create(SERVICE, service_body("by-image", {"image": model_image}, env=source_env), namespace)
    await api.create(SERVICE, service_body("by-name", {"name": "named"}, env=source_env), namespace)

    for name in ("by-image", "by-name"):
        svc = await running(api, namespace, name)
        ready = conditions(svc)
        assert ready["InferenceServicePodsReady"]["reason"] == "PodsReady", summary(svc)
        isvc = await api.get(INFERENCE_SERVICE, namespace, isvc_name(name, namespace))
        assert isvc is not None
        assert conditions(isvc)["Ready"]["status"] == "True"
        # the operator's InferenceServiceReady carries KServe's URL
        assert ready["InferenceServiceReady"]["message"] == isvc["status"]["url"]

        [pod] = await predictor_pods(api, namespace, isvc["metadata"]["name"])
        assert stack.node is not None and pod["spec"]["nodeName"] == stack.node.node_name
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(node_config.POD_SUBNET)
        assert pod["status"]["phase"] == "Running"
        labels = pod["metadata"]["labels"]
        # KServe's labels, and the InferenceService's own (which the operator set) on the pod
        assert labels[raw.ISVC_LABEL] == isvc["metadata"]["name"]
        assert labels["component"] == "predictor"
        for key, value in isvc["metadata"]["labels"].items():
            assert labels[key] == value
        assert labels["aim.eai.amd.com/service"] == name
        [container] = pod["spec"]["containers"]
        assert container["image"] == model_image

        # it really serves: /v1/models from inside the pod
        url = f"http://127.0.0.1:{testmodel.PORT}/v1/models"
        fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}).read().decode())"
        served = kubectl(
            "exec",
            "-n",
            namespace,
            pod["metadata"]["name"],
            "--",
            "python3",
            "-c",
            fetch,
            kubeconfig=stack.kubeconfig,
        )
        assert [m["id"] for m in json.loads(served)["data"]] == [testmodel.CANONICAL_NAME]


def missing_custom_model(stack: NodeStack) -> tuple[str, dict[str, Any]]:
    """An image on the node's registry that does not exist, as a custom model's base image (its
    template has its sources inline, so no discovery Job needs the image)."""
    missing = stack.model_image("aim/missing", "0.1.0")
    custom = {
        "custom": {
            "baseImage": missing,
            "modelSources": [{"modelId": "demo/tiny-llm", "sourceUri": "hf://demo/tiny-llm"}],
            "hardware": {"cpu": {"requests": "100m"}},
        }
    }
    return missing, custom


@pytest.mark.skipif(BEHAVIOUR.released, reason="the released original inspects a custom model's image first")
async def test_an_image_that_cannot_be_pulled_is_reported_from_the_kubelets_pull_error(
    stack: NodeStack, api: Kube, namespace: str
) -> None:
    missing, custom = missing_custom_model(stack)
    await api.create(SERVICE, service_body("missing", custom), namespace)

    def not_found(svc: dict[str, Any]) -> bool:
        return conditions(svc).get("InferenceServicePodsReady", {}).get("reason") == "ImageNotFound"

    svc = await wait_for(api, SERVICE, namespace, "missing", not_found, timeout=180, what="ImageNotFound")
    pods_ready = conditions(svc)["InferenceServicePodsReady"]
    assert pods_ready["message"].startswith("inference image not found:"), pods_ready
    assert missing in pods_ready["message"]
    assert state(svc) == "Failed"
    # what the kubelet said, and did: it tried, failed, and backs off
    failed = await events(api, namespace, reason="Failed", kind="Pod", name="missing-", component="kubelet")
    assert any("not found" in (e.get("message") or "") for e in failed), failed

    async def backing_off() -> dict[str, Any] | None:
        svc = await api.get(SERVICE, namespace, "missing")
        reason = conditions(svc).get("InferenceServicePodsReady", {}).get("reason")
        assert reason in ("ImageNotFound", "ImagePullBackOff"), summary(svc)
        return svc if reason == "ImagePullBackOff" else None

    # Between the kubelet's pull attempts the pod says only "Back-off pulling image" (no cause).
    await eventually(backing_off, timeout=120, interval=0.25, what="the back-off between pulls")


@pytest.mark.skipif(not BEHAVIOUR.released, reason="the seeds skip discovery for custom models")
async def test_a_custom_models_image_that_does_not_exist_is_found_missing_before_any_pod(
    stack: NodeStack, api: Kube, namespace: str
) -> None:
    """The released behaviour (the original's ``custom-models/nonexistent-image``): the custom
    model's base image is inspected on the registry; not found, the model is ``Degraded`` with
    ``ImageMetadataReady=False``, no template is made for it (as the original, whose templates wait
    for the image), and the service waits for one instead of starting a pod that could never pull
    its image."""
    missing, custom = missing_custom_model(stack)
    await api.create(SERVICE, service_body("missing", custom), namespace)

    async def degraded_model() -> dict[str, Any] | None:
        models = (await api.list(MODEL, namespace))[0]
        return models[0] if models and state(models[0]) == "Degraded" else None

    model = await eventually(degraded_model, timeout=180, interval=0.5, what="the custom model Degraded")
    assert model["status"].get("sourceType") == "Custom", summary(model)
    metadata = conditions(model)["ImageMetadataReady"]
    assert metadata["status"] == "False" and missing in metadata["message"], summary(model)
    assert "not found" in metadata["message"], summary(model)
    assert conditions(model)["ServiceTemplatesReady"]["reason"] == "AwaitingMetadata", summary(model)
    assert (await api.list(aim("AIMServiceTemplate"), namespace))[0] == []

    def no_ready_template(svc: dict[str, Any]) -> bool:
        return conditions(svc).get("TemplateReady", {}).get("status") == "False"

    svc = await wait_for(
        api, SERVICE, namespace, "missing", no_ready_template, timeout=60, what="no ready template"
    )
    assert state(svc) != "Running"
    assert await predictor_pods(api, namespace, isvc_name("missing", namespace)) == []


async def test_a_crashing_model_server_is_a_crash_loop(
    stack: NodeStack, api: Kube, namespace: str, model_image: str, source_env: list[dict[str, str]]
) -> None:
    # the test model exits 1 without its weights, as a model server would
    env = [*source_env, {"name": "AIM_TEST_MODEL_REQUIRE", "value": f"{CACHE_ROOT}/nowhere/config.json"}]
    await api.create(SERVICE, service_body("crash", {"image": model_image}, env=env), namespace)

    def crash_loop(svc: dict[str, Any]) -> bool:
        return conditions(svc).get("InferenceServicePodsReady", {}).get("reason") == "CrashLoopBackOff"

    svc = await wait_for(api, SERVICE, namespace, "crash", crash_loop, timeout=240, what="CrashLoopBackOff")
    message = conditions(svc)["InferenceServicePodsReady"]["message"]
    assert "keeps crashing" in message and "exit code 1" in message, message
    # KServe (the stand-in, as KServe does) marks the model failed to load: the service is Failed
    isvc = conditions(svc)["InferenceServiceReady"]
    assert (isvc["reason"], state(svc)) == ("InferenceServiceFailed", "Failed"), summary(svc)
    assert "exit code 1" in isvc["message"]
