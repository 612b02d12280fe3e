"""Discovery on a real node: a model image pushed to the local registry, whose labels carry its
recommended deployments, becomes templates; each template's discovery Job really runs the image's
``dry-run --format=json`` on the node (the kubelet's Events prove it: the Job itself is deleted once
its output is read) and the template turns Ready with the profile from that output. An image whose
dry-run fails fails its template with the classified reason and the image's own message. A
namespace holding a Ready model and its templates is gone soon after its deletion."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from aim_dev import images, testmodel
from aim_dev.local.nodestack import NodeStack
from aim_dev.testing.kubelet import wait_for_service_account
from aimcore.api.kinds import NAMESPACE
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


async def test_a_namespace_holding_a_ready_model_and_its_templates_is_gone_soon_after_its_deletion(
    stack: NodeStack, api: Kube, model_image: str
) -> None:
    """``kubectl delete namespace`` of a namespace with a Ready AIMModel and its Ready template
    (their finalizers, the discovery Job's pod and Events in it) finishes within the 30 s the
    original's own suite allows its cleanup: the operator drops its finalizers without cleanup work
    once the namespace is terminating."""
    namespace = f"t-{secrets.token_hex(4)}"
    await api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    await wait_for_service_account(api, namespace)
    await api.create(MODEL, model_body("held", model_image), namespace)
    await wait_for(api, MODEL, namespace, "held", lambda m: state(m) == "Ready", timeout=120, what="Ready")
    name = (await the_template(api, namespace, "held"))["metadata"]["name"]
    await wait_for(
        api, TEMPLATE, namespace, name, lambda t: state(t) == "Ready", timeout=180, what="the template Ready"
    )
    await api.delete(NAMESPACE, None, namespace)
    left: dict[str, Any] = {}

    async def gone() -> bool | None:
        if await api.get(NAMESPACE, None, namespace) is None:
            return True
        held = [*(await api.list(MODEL, namespace))[0], *(await api.list(TEMPLATE, namespace))[0]]
        left["held"] = [(o["kind"], o["metadata"]["name"], o["metadata"].get("finalizers")) for o in held]
        return None

    try:
        await eventually(gone, timeout=30, interval=0.5, what=f"namespace {namespace} gone")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; still there: {left.get('held')}") from None
