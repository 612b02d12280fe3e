"""A profile id in an image's labels reaches what runs (issue 39.4): the label's
``recommendedDeployments[].profileId`` becomes the generated template's ``spec.profileId``, then
``AIM_PROFILE_ID`` on the discovery Job and on the predictor. Discovery and the deployer are real
processes against a real registry and API server; a fake kubelet serves the discovery pod's log."""

from __future__ import annotations

import json
from typing import Any

from aim_dev.local.registry import Registry
from aim_dev.testing.kubelet import FakeKubelet, bind_pod, finish_pod, wait_for_service_account
from aim_dev.testing.oci import push_image
from aimcore.runtime import Kube
from tests.helpers import eventually, manifest, status_of
from tests.integration import test_discovery
from tests.integration.test_deployer import SERVICE, env_of, isvc_of
from tests.integration.test_discovery import MODEL, TEMPLATE, _discovery_pod, owned_templates, suffix

discovery = test_discovery.discovery  # the fixture: the session's services plus discovery

PROFILE = "mi300x-fp16-latency-unopt"
OUTPUT = [
    {
        "filename": f"{PROFILE}.yaml",
        "profile": {
            "model": "acme/pid-1b",
            "metadata": {
                "engine": "vllm",
                "precision": "fp16",
                "gpu_count": 0,
                "metric": "latency",
                "type": "optimized",
            },
            "engine_args": {},
            "env_vars": {},
        },
        "models": [{"name": "acme/pid-1b", "source": "hf://acme/pid-1b", "size_gb": 0.5}],
    }
]


def job_env(job: dict[str, Any]) -> dict[str, Any]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value") for e in container.get("env") or []}


async def test_a_profile_id_in_image_labels_reaches_template_discovery_and_predictor(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, oci_registry: Registry, kubelet: FakeKubelet
) -> None:
    await wait_for_service_account(kube, namespace)
    node = f"pid-node-{suffix()}"
    await kubelet.register_node(kube, node)
    repo = f"pid{suffix()}/aim-pid"
    deployments = [{"precision": "fp16", "metric": "latency", "profileId": PROFILE}]
    push_labels = {
        "com.amd.aim.model.canonicalName": "acme/pid-1b",
        "com.amd.aim.model.recommendedDeployments": json.dumps(deployments),
    }
    push_image(oci_registry.url, repo, "1.0", push_labels)
    image = f"{oci_registry.host}/{repo}:1.0"
    await kube.create(MODEL, manifest(MODEL, "pid", namespace, {"image": image}), namespace)

    async def generated() -> dict[str, Any] | None:
        model = await kube.get(MODEL, namespace, "pid")
        found = await owned_templates(kube, namespace, model["metadata"]["uid"]) if model else {}
        return next(iter(found.values()), None)

    template = await eventually(generated, timeout=45, what="the template generated from the labels")
    name = template["metadata"]["name"]
    assert template["spec"]["profileId"] == PROFILE
    model = await status_of(kube, MODEL, namespace, "pid", lambda s: "imageMetadata" in s, "imageMetadata")
    (deployment,) = model["status"]["imageMetadata"]["model"]["recommendedDeployments"]
    assert deployment["profileId"] == PROFILE

    job, pod = await _discovery_pod(kube, namespace, name)
    env = job_env(job)
    assert (env["AIM_PROFILE_ID"], env["AIM_METRIC"], env["AIM_PRECISION"]) == (PROFILE, "latency", "fp16")
    await bind_pod(kube, namespace, pod["metadata"]["name"], node)
    kubelet.set_log(namespace, pod["metadata"]["name"], "discovery", json.dumps(OUTPUT) + "\n")
    await finish_pod(kube, namespace, pod["metadata"]["name"], exit_code=0)
    await status_of(kube, TEMPLATE, namespace, name, lambda s: s.get("status") == "Ready", f"{name} Ready")

    await kube.create(SERVICE, manifest(SERVICE, "pid", namespace, {"model": {"name": "pid"}}), namespace)
    isvc = await isvc_of(kube, namespace, "pid")
    predictor = env_of(isvc)
    assert (predictor["AIM_PROFILE_ID"], predictor["AIM_METRIC"], predictor["AIM_PRECISION"]) == (
        PROFILE,
        "latency",
        "fp16",
    )
