"""AIMService ``status.runtime`` on a real node: the replica counts read back from the predictor
Deployment the KServe stand-in makes (real pods, readiness from their probes) and from the HPA a
KEDA-scaled predictor gets, acted on by kube-controller-manager's real HPA controller. ``kubectl get
aimsvc`` shows the display string in its ``Replicas`` column.

The node has no metrics server, so the HPA controller cannot compute a count from metrics; it
still bounds its target (a Deployment scaled above the maximum is brought back to it), and that
decision (the HPA's ``status.desiredReplicas``) is the desired count the service shows. A service
that scales to zero is taken to zero and back by the KEDA stand-in (:mod:`aim_dev.keda`), whose
decision the test sets in place of the gateway's request counter."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import pytest

from aim_deployer.inference import isvc_name, predictor_name
from aim_deployer.replica_status import Replicas, hpa_name
from aim_dev.keda.scaledobject import ACTIVITY_ANNOTATION as ACTIVITY
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import HPA, POD, SCALED_OBJECT
from aimcore.runtime import Kube
from tests.helpers import eventually, gateway_accepts, kubectl
from tests.node.helpers import NODE_TIMEOUT, aim, conditions, state, wait_for

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

SERVICE = aim("AIMService")
ISVC_LABEL = "serving.kserve.io/inferenceservice"


def service_body(name: str, image: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": SERVICE.api_version,
        "kind": SERVICE.kind,
        "metadata": {"name": name},
        # the test model's one profile is unoptimized (a CPU stand-in for an AIM image)
        "spec": {"model": {"image": image}, "template": {"allowUnoptimized": True}, **spec},
    }


def shows(**want: Any) -> Callable[[dict[str, Any]], bool]:
    def check(svc: dict[str, Any]) -> bool:
        got = (svc.get("status") or {}).get("runtime") or {}
        return all(got.get(k) == v for k, v in want.items())

    return check


async def until(api: Kube, namespace: str, name: str, what: str, **want: Any) -> dict[str, Any]:
    return await wait_for(api, SERVICE, namespace, name, shows(**want), timeout=240, what=what)


def column(stack: NodeStack, namespace: str, name: str) -> str:
    """The ``Replicas`` column of ``kubectl get aimsvc``. With a discovery cache of its own: the
    shared one may predate the CRDs, and kubectl expands a short name from the cache only."""
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache:
        args = ("get", "aimsvc", name, "-n", namespace, "--cache-dir", cache)
        out = kubectl(*args, kubeconfig=stack.kubeconfig)
    header, row = out.splitlines()[:2]
    return row[header.index("REPLICAS") : header.index("AGE")].strip()


async def ready_pods(api: Kube, namespace: str, isvc: str) -> list[str]:
    pods, _ = await api.list(POD, namespace, label_selector=f"{ISVC_LABEL}={isvc}")
    return sorted(
        p["metadata"]["name"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
    )


async def test_fixed_replicas_show_what_runs_as_pods_come_and_go(
    stack: NodeStack, api: Kube, namespace: str, model_image: str, source_env: list[dict[str, str]]
) -> None:
    await api.create(SERVICE, service_body("three", model_image, replicas=3, env=source_env), namespace)
    svc = await until(api, namespace, "three", "3/3/3/3", **Replicas(3, 3, 3, 3).wire())
    assert svc["status"]["runtime"]["replicas"] == "3"
    assert len(await ready_pods(api, namespace, isvc_name("three", namespace))) == 3
    assert column(stack, namespace, "three") == "3"
    await wait_for(
        api, SERVICE, namespace, "three", lambda s: state(s) == "Running", timeout=240, what="Running"
    )

    # a pod dies; its replacement cannot be scheduled while the node is cordoned, so the service
    # shows 2 of 3 until the node takes pods again and the new one is ready
    assert stack.node is not None
    node = stack.node.node_name
    pods = await ready_pods(api, namespace, isvc_name("three", namespace))
    kubectl("cordon", node, kubeconfig=stack.kubeconfig)
    try:
        kubectl("delete", "pod", pods[0], "-n", namespace, "--wait=false", kubeconfig=stack.kubeconfig)
        dying = await until(api, namespace, "three", "2 of 3", currentReplicas=2, desiredReplicas=3)
        assert dying["status"]["runtime"]["replicas"] == "2"
        assert column(stack, namespace, "three") == "2"
    finally:
        kubectl("uncordon", node, kubeconfig=stack.kubeconfig)
    await until(api, namespace, "three", "3 again", **Replicas(3, 3, 3, 3).wire())

    # the spec scaled to 1: KServe's Deployment follows, and so does the status
    await api.patch(SERVICE, namespace, "three", {"spec": {"replicas": 1}})
    await until(api, namespace, "three", "1/1/1/1", **Replicas(1, 1, 1, 1).wire())

    async def one_left() -> bool:
        return len(await ready_pods(api, namespace, isvc_name("three", namespace))) == 1

    await eventually(one_left, timeout=120, interval=0.25, what="one predictor pod")
    assert column(stack, namespace, "three") == "1"


async def test_an_autoscaled_service_shows_its_range_and_the_scalers_decision(
    stack: NodeStack, api: Kube, namespace: str, model_image: str, source_env: list[dict[str, str]]
) -> None:
    await api.create(
        SERVICE, service_body("auto", model_image, minReplicas=1, maxReplicas=2, env=source_env), namespace
    )
    isvc = isvc_name("auto", namespace)
    await until(api, namespace, "auto", "1/1 (1-2)", **Replicas(1, 2, 1, 1).wire())
    assert column(stack, namespace, "auto") == "1/1 (1-2)"
    hpa = await api.get(HPA, namespace, hpa_name(predictor_name(isvc)))
    assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 2)

    # a burst scales the predictor past the maximum; the HPA controller brings it back to 2
    kubectl(
        "scale",
        "deployment",
        predictor_name(isvc),
        "-n",
        namespace,
        "--replicas=3",
        kubeconfig=stack.kubeconfig,
    )

    async def decided() -> dict[str, Any] | None:
        found = await api.get(HPA, namespace, hpa_name(predictor_name(isvc)))
        return found if found and (found.get("status") or {}).get("desiredReplicas") == 2 else None

    await eventually(
        decided, timeout=120, interval=0.5, what="the HPA controller to bound the predictor at 2"
    )
    svc = await until(api, namespace, "auto", "2/2 (1-2)", **Replicas(1, 2, 2, 2).wire())
    assert svc["status"]["runtime"]["replicas"] == "2/2 (1-2)"
    assert column(stack, namespace, "auto") == "2/2 (1-2)"


def running_with(pods_reason: str) -> Callable[[dict[str, Any]], bool]:
    def check(svc: dict[str, Any]) -> bool:
        pods = conditions(svc).get("InferenceServicePodsReady") or {}
        return state(svc) == "Running" and (pods.get("status"), pods.get("reason")) == ("True", pods_reason)

    return check


async def test_a_service_scales_to_zero_and_back_as_keda_decides(
    stack: NodeStack, api: Kube, namespace: str, model_image: str, source_env: list[dict[str, str]]
) -> None:
    """``minReplicas: 0``: the operator's ScaledObject; the KEDA stand-in (its decision set by the
    test in place of the gateway's request counter) scales the KServe stand-in's Deployment to zero
    and back; the real HPA controller and kubelet do the rest, and the status follows."""
    routing = {"enabled": True, "gatewayRef": {"name": "gw"}}
    body = service_body("zero", model_image, minReplicas=0, maxReplicas=1, routing=routing, env=source_env)
    await api.create(SERVICE, body, namespace)
    predictor = predictor_name(isvc_name("zero", namespace))
    await gateway_accepts(api, namespace, timeout=120)

    # KServe starts the predictor at its minimum, 0; KEDA's HPA over it is disabled at zero
    idle = await wait_for(
        api, SERVICE, namespace, "zero", running_with("ScaledToZero"), timeout=300, what="Running at zero"
    )
    assert idle["status"]["runtime"] == Replicas(0, 1, 0, 0).wire()
    assert conditions(idle)["HPAReady"]["reason"] == "ScaledToZero"
    assert column(stack, namespace, "zero") == "0/0 (0-1)"
    assert await ready_pods(api, namespace, isvc_name("zero", namespace)) == []
    scaler = await api.get(SCALED_OBJECT, namespace, predictor)
    assert scaler is not None and scaler["spec"]["minReplicaCount"] == 0

    # a request at the gateway would activate it: KEDA scales the predictor to one, a real pod
    # loads the model and turns ready
    await api.patch(SCALED_OBJECT, namespace, predictor, {"metadata": {"annotations": {ACTIVITY: "active"}}})
    awake = await wait_for(
        api, SERVICE, namespace, "zero", running_with("PodsReady"), timeout=300, what="Running with a pod"
    )
    assert awake["status"]["runtime"]["currentReplicas"] == 1
    assert conditions(awake)["HPAReady"]["status"] == "True"
    assert len(await ready_pods(api, namespace, isvc_name("zero", namespace))) == 1

    # idle past its cooldown: back to zero, the pod gone
    await api.patch(SCALED_OBJECT, namespace, predictor, {"metadata": {"annotations": {ACTIVITY: "idle"}}})
    await wait_for(
        api, SERVICE, namespace, "zero", running_with("ScaledToZero"), timeout=300, what="idle again"
    )

    async def no_pods() -> bool:
        pods, _ = await api.list(
            POD, namespace, label_selector=f"{ISVC_LABEL}={isvc_name('zero', namespace)}"
        )
        return not [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    await eventually(no_pods, timeout=180, interval=0.5, what="the predictor pod gone")
    await until(api, namespace, "zero", "0/0 (0-1)", **Replicas(0, 1, 0, 0).wire())
