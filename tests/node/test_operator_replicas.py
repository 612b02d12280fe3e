"""AIMService ``status.runtime`` on a real node: the replica counts read back from the predictor
Deployment the KServe stand-in makes (real pods, readiness from their probes) and from the HPA a
KEDA-scaled predictor gets, acted on by kube-controller-manager's real HPA controller. ``kubectl get
aimsvc`` shows the display string in its ``Replicas`` column.

The node has no metrics server, so the HPA controller cannot compute a count from metrics; it
still bounds its target (a Deployment scaled above the maximum is brought back to it), and that
decision (the HPA's ``status.desiredReplicas``) is the desired count the service shows."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import pytest

from aim_deployer.inference import isvc_name, predictor_name
from aim_deployer.replica_status import Replicas, hpa_name
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import HPA, POD
from aimcore.runtime import Kube
from tests.helpers import eventually, kubectl
from tests.node.helpers import NODE_TIMEOUT, aim, state, wait_for

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
