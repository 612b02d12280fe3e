"""Discovery on a real node: a model image pushed to the local registry, whose labels carry its
recommended deployments, becomes templates; each template's discovery Job really runs the image's
``dry-run --format=json`` on the node (the kubelet's Events prove it: the Job itself is deleted once
its output is read) and the template turns Ready with the profile from that output. An image whose
dry-run fails fails its template with the classified reason and the image's own message."""

from __future__ import annotations

from typing import Any

import pytest

from aim_dev import images, testmodel
from aim_dev.local.nodestack import NodeStack
from aimcore.runtime import Kube
from tests.helpers import eventually
from tests.node.helpers import NODE_TIMEOUT, aim, conditions, ran_on_the_node, state, summary, wait_for

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

MODEL = aim("AIMModel")
TEMPLATE = aim("AIMServiceTemplate")


def model_body(name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": MODEL.api_version,
        "kind": MODEL.kind,
        "metadata": {"name": name},
        "spec": {"image": image},
    }


async def the_template(api: Kube, namespace: str, model: str) -> dict[str, Any]:
    """The one template discovery derives from the test model's one recommended deployment."""

    async def probe() -> dict[str, Any] | None:
        found = [t for t in (await api.list(TEMPLATE, namespace))[0] if t["spec"].get("modelName") == model]
        assert len(found) <= len(testmodel.RECOMMENDED_DEPLOYMENTS), found
        return found[0] if found else None

    return await eventually(probe, timeout=120, interval=0.25, what=f"a template of {model}")


async def test_a_model_image_gets_templates_from_its_labels_and_a_real_discovery_job(
    stack: NodeStack, api: Kube, namespace: str, model_image: str
) -> None:
    await api.create(MODEL, model_body("tiny", model_image), namespace)
    model = await wait_for(
        api, MODEL, namespace, "tiny", lambda m: state(m) == "Ready", timeout=120, what="the model Ready"
    )
    # the labels were read from the registry (the operator's own client, on the node's loopback)
    assert model["status"]["imageMetadata"]["model"]["canonicalName"] == testmodel.CANONICAL_NAME

    template = await the_template(api, namespace, "tiny")
    name = template["metadata"]["name"]
    [deployment] = testmodel.RECOMMENDED_DEPLOYMENTS
    assert (template["spec"]["metric"], template["spec"]["precision"]) == (
        deployment["metric"],
        deployment["precision"],
    )
    template = await wait_for(
        api, TEMPLATE, namespace, name, lambda t: state(t) == "Ready", timeout=180, what="the template Ready"
    )
    status = template["status"]
    expected = testmodel.server.discovery_output(
        {"AIM_METRIC": deployment["metric"], "AIM_PRECISION": deployment["precision"]}
    )[0]
    assert status["profile"]["metadata"]["metric"] == deployment["metric"]
    assert status["profile"]["metadata"]["precision"] == deployment["precision"]
    assert status["profile"]["engine_args"] == expected["profile"]["engine_args"]
    assert status["profile"]["env_vars"] == expected["profile"]["env_vars"]
    assert [s["sourceUri"] for s in status["modelSources"]] == [expected["models"][0]["source"]]
    assert conditions(template)["Discovered"]["reason"] == "DiscoveryComplete"

    # The Job ran on the node: the kubelet pulled the image from the registry and started its pod,
    # and the Job controller saw it complete. (The operator deletes a succeeded Job.)
    await ran_on_the_node(api, namespace, status["discoveryJob"]["name"], model_image)


async def test_a_failing_dry_run_fails_the_template_with_the_classified_reason(
    stack: NodeStack, api: Kube, namespace: str
) -> None:
    builder = images.Builder()
    broken = builder.derive(
        "test-model",
        "localhost/aim/aim-test-model-broken:0.1.0",
        env={"AIM_TEST_MODEL_DRY_RUN_FAIL": "no profile fits this node"},
    )
    assert stack.registry is not None
    builder.push_ref(broken, f"{stack.registry.host}/aim/test-model-broken:0.1.0")
    await api.create(
        MODEL, model_body("broken", stack.model_image("aim/test-model-broken", "0.1.0")), namespace
    )

    template = await the_template(api, namespace, "broken")
    name = template["metadata"]["name"]
    template = await wait_for(
        api,
        TEMPLATE,
        namespace,
        name,
        lambda t: state(t) == "Failed",
        timeout=180,
        what="the template Failed",
    )
    job = conditions(template)["DiscoveryJobReady"]
    assert job["status"] == "False", summary(template)
    assert job["reason"] == "JobBackoffLimitExceeded", summary(template)
    # the container's exit and the image's own words, from the pod's log through the API server
    assert "discovery container exited with code 1" in job["message"]
    assert "dry-run: no profile fits this node" in job["message"]
    assert conditions(template)["Ready"]["reason"] == "JobBackoffLimitExceeded"
