"""AIMService ``status.runtime`` (and its ``Replicas`` column) follows the predictor's Deployment and
KEDA's HPA, as the watcher mirrors them: the deployer is a real process against a real API server
whose kube-controller-manager runs the Deployment, ReplicaSet and HPA controllers.

The tests play KServe (they create the predictor Deployment KServe would) and KEDA (the HPA it
would make for the ScaledObject), and the kubelet (they mark the ReplicaSet's pods Ready). The HPA
controller has no metrics here; it still acts on a target above its maximum, which is the scaler's
decision the autoscaling test reads back."""

from __future__ import annotations

from typing import Any

import pytest

from aim_deployer.inference import isvc_name, predictor_name
from aim_deployer.replica_status import Replicas, hpa_name
from aimcore.api.kinds import DEPLOYMENT, HPA, INFERENCE_SERVICE, POD
from aimcore.runtime import Kube
from tests.helpers import condition, eventually, has
from tests.integration import test_deployer
from tests.integration.test_deployer import (
    SERVICE,
    isvc_of,
    make_model,
    make_service,
    make_template,
    wait_service,
)

deployer = test_deployer.deployer  # the fixture: the session's services, discovery and cache stopped
pytestmark = pytest.mark.usefixtures("deployer")

ISVC_LABEL = "serving.kserve.io/inferenceservice"
PART_OF = {"app.kubernetes.io/part-of": "aim-engine"}


def predictor_deployment(namespace: str, isvc: str, replicas: int) -> dict[str, Any]:
    """The Deployment KServe makes for an InferenceService in RawDeployment mode (labels from the
    InferenceService, which carries the operator's part-of label)."""
    labels = {ISVC_LABEL: isvc, "component": "predictor", **PART_OF}
    pod_labels = {**labels, "app": f"isvc.{predictor_name(isvc)}"}
    return {
        "apiVersion": DEPLOYMENT.api_version,
        "kind": DEPLOYMENT.kind,
        "metadata": {"name": predictor_name(isvc), "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": pod_labels["app"]}},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {"containers": [{"name": "kserve-container", "image": "x"}]},
            },
        },
    }


def keda_hpa(namespace: str, isvc: str, low: int, high: int) -> dict[str, Any]:
    """The HPA KEDA makes for the ScaledObject KServe creates (its labels are the ScaledObject's)."""
    return {
        "apiVersion": HPA.api_version,
        "kind": HPA.kind,
        "metadata": {
            "name": hpa_name(predictor_name(isvc)),
            "namespace": namespace,
            "labels": {ISVC_LABEL: isvc, **PART_OF},
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": predictor_name(isvc)},
            "minReplicas": low,
            "maxReplicas": high,
            "targetCPUUtilizationPercentage": 80,
        },
    }


async def pods_of(kube: Kube, namespace: str, isvc: str) -> list[dict[str, Any]]:
    pods, _ = await kube.list(POD, namespace, label_selector=f"{ISVC_LABEL}={isvc}")
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


async def set_ready(kube: Kube, namespace: str, pod: str, ready: bool) -> None:
    """The kubelet's word on one pod."""
    flag = "True" if ready else "False"
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": flag}, {"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [
            {
                "name": "kserve-container",
                "ready": ready,
                "restartCount": 0,
                "image": "x",
                "imageID": "",
                "state": {"running": {"startedAt": "2026-11-22T00:00:00Z"}},
            }
        ],
    }
    await kube.patch_status(POD, namespace, pod, {"status": status})


async def run_pods(kube: Kube, namespace: str, isvc: str, count: int) -> list[str]:
    """Wait for the ReplicaSet's ``count`` pods and mark each Ready."""

    async def made() -> list[dict[str, Any]] | None:
        pods = await pods_of(kube, namespace, isvc)
        return pods if len(pods) == count else None

    pods = await eventually(made, timeout=30, what=f"{count} predictor pods of {isvc}")
    names = sorted(p["metadata"]["name"] for p in pods)
    for name in names:
        await set_ready(kube, namespace, name, True)
    return names


def runtime_is(**want: Any) -> Any:
    def check(status: dict[str, Any]) -> bool:
        runtime = status.get("runtime") or {}
        return all(runtime.get(k) == v for k, v in want.items())

    return check


async def test_fixed_replicas_follow_the_deployment_a_dying_pod_and_a_scaled_spec(
    kube: Kube, namespace: str
) -> None:
    await make_model(kube, namespace, "rm")
    await make_template(kube, namespace, "rm-t", "rm")
    await make_service(kube, namespace, "three", {"model": {"name": "rm"}, "replicas": 3})
    isvc = isvc_name("three", namespace)
    # nothing runs before KServe makes the Deployment
    await wait_service(kube, namespace, "three", runtime_is(**Replicas(3, 3, 3, 0).wire()), "runtime 0 of 3")

    await kube.create(DEPLOYMENT, predictor_deployment(namespace, isvc, 3), namespace)
    pods = await run_pods(kube, namespace, isvc, 3)
    svc = await wait_service(kube, namespace, "three", runtime_is(**Replicas(3, 3, 3, 3).wire()), "3/3/3/3")
    assert svc["status"]["runtime"] == Replicas(3, 3, 3, 3).wire()
    assert svc["status"]["runtime"]["replicas"] == "3"

    # a pod that dies: current < desired until it is back
    await set_ready(kube, namespace, pods[0], False)
    await wait_service(kube, namespace, "three", runtime_is(currentReplicas=2, desiredReplicas=3), "2 of 3")
    await set_ready(kube, namespace, pods[0], True)
    await wait_service(kube, namespace, "three", runtime_is(currentReplicas=3, replicas="3"), "3 again")

    # the spec scaled to 1: the bounds follow at once, the count once KServe scales the Deployment
    await kube.patch(SERVICE, namespace, "three", {"spec": {"replicas": 1}})
    await wait_service(kube, namespace, "three", runtime_is(minReplicas=1, maxReplicas=1), "bounds 1")
    await kube.patch(DEPLOYMENT, namespace, predictor_name(isvc), {"spec": {"replicas": 1}})
    await wait_service(kube, namespace, "three", runtime_is(**Replicas(1, 1, 1, 1).wire()), "1/1/1/1")


async def test_autoscaling_shows_the_range_and_the_scalers_desired_count(kube: Kube, namespace: str) -> None:
    await make_model(kube, namespace, "am")
    await make_template(kube, namespace, "am-t", "am")
    await make_service(kube, namespace, "auto", {"model": {"name": "am"}, "minReplicas": 1, "maxReplicas": 3})
    isvc = isvc_name("auto", namespace)
    await wait_service(kube, namespace, "auto", runtime_is(**Replicas(1, 3, 1, 0).wire()), "no pods yet")

    # a burst left the predictor at 5; KEDA's HPA (max 3) brings it back: its decision is desired
    await kube.create(DEPLOYMENT, predictor_deployment(namespace, isvc, 5), namespace)
    await kube.create(HPA, keda_hpa(namespace, isvc, 1, 3), namespace)

    async def decided() -> dict[str, Any] | None:
        hpa = await kube.get(HPA, namespace, hpa_name(predictor_name(isvc)))
        return hpa if hpa and (hpa.get("status") or {}).get("desiredReplicas") == 3 else None

    await eventually(decided, timeout=60, what="the HPA controller to clamp the predictor to 3")
    await run_pods(kube, namespace, isvc, 3)
    svc = await wait_service(kube, namespace, "auto", runtime_is(replicas="3/3 (1-3)"), "3/3 (1-3)")
    assert svc["status"]["runtime"] == Replicas(1, 3, 3, 3).wire()


async def test_a_service_scaling_while_a_pod_serves_stays_running_with_its_address(
    kube: Kube, namespace: str
) -> None:
    """RuntimeScaling (0.2.2): KServe reports the InferenceService not Ready while it rolls out or
    scales, but a pod serves and the address is known: a service that has served stays Running. A
    first start is Running only once KServe says Ready."""
    await make_model(kube, namespace, "sm")
    await make_template(kube, namespace, "sm-t", "sm")
    await make_service(kube, namespace, "scaling", {"model": {"name": "sm"}})
    isvc = await isvc_of(kube, namespace, "scaling")
    name = isvc["metadata"]["name"]
    url = f"http://{name}.{namespace}"
    rolling = {"type": "Ready", "status": "False", "reason": "PredictorNotReady", "message": "rolling out"}

    # a first start: the pod is ready and the address known a moment before KServe says Ready
    await kube.patch_status(
        INFERENCE_SERVICE, namespace, name, {"status": {"url": url, "conditions": [rolling]}}
    )
    await kube.create(DEPLOYMENT, predictor_deployment(namespace, name, 1), namespace)
    [pod] = await run_pods(kube, namespace, name, 1)
    first = await wait_service(
        kube, namespace, "scaling", has("InferenceServicePodsReady", "True", "PodsReady"), "the pod ready"
    )
    assert condition(first["status"], "InferenceServiceReady")["reason"] == "RuntimeNotReady"
    assert first["status"]["status"] != "Running"

    ready = {"type": "Ready", "status": "True"}
    await kube.patch_status(INFERENCE_SERVICE, namespace, name, {"status": {"conditions": [ready]}})
    await wait_service(kube, namespace, "scaling", lambda s: s.get("status") == "Running", "Running")

    # KServe rolls out again: a pod still serves, the service stays Running with its address
    await kube.patch_status(INFERENCE_SERVICE, namespace, name, {"status": {"conditions": [rolling]}})
    svc = await wait_service(
        kube, namespace, "scaling", has("InferenceServiceReady", "True", "RuntimeScaling"), "RuntimeScaling"
    )
    assert svc["status"]["status"] == "Running"
    assert condition(svc["status"], "InferenceServiceReady")["message"] == url

    # the serving pod is lost too: no longer reachable
    await set_ready(kube, namespace, pod, False)
    lost = await wait_service(
        kube, namespace, "scaling", has("InferenceServiceReady", "False", "RuntimeNotReady"), "not serving"
    )
    assert lost["status"]["status"] != "Running"
