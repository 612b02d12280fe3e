"""Scale to zero (the released original's 0.2.5) against a real API server whose
kube-controller-manager runs the Deployment, ReplicaSet and HPA controllers: a service with
``minReplicas: 0`` gets an InferenceService with ``autoscalerClass: external`` and a KEDA
ScaledObject the operator owns; idle, it stays ``Running`` (``ScaledToZero``); woken, its pod
counts; and what cannot work is refused with a reason.

The tests play KServe (the predictor Deployment, the InferenceService's Ready), KEDA (its HPA
``keda-hpa-<isvc>-predictor`` and the Deployment's replicas between 0 and 1, KEDA's own decision)
and the kubelet (pods marked Ready). The HPA's ``ScalingActive=False/ScalingDisabled`` at zero
is the real HPA controller's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aim_deployer.inference import predictor_name
from aim_deployer.replica_status import Replicas, hpa_name
from aimcore.api.kinds import DEPLOYMENT, HPA, INFERENCE_SERVICE, SCALED_OBJECT
from aimcore.runtime import Kube
from tests.helpers import condition, eventually, gateway_accepts, has
from tests.integration import test_deployer
from tests.integration.test_deployer import (
    SERVICE,
    isvc_of,
    make_model,
    make_service,
    make_template,
    wait_service,
)
from tests.integration.test_deployer_replicas import (
    keda_hpa,
    pods_of,
    predictor_deployment,
    run_pods,
    runtime_is,
)

deployer = test_deployer.deployer  # the fixture: the session's services, discovery and cache stopped
pytestmark = pytest.mark.usefixtures("deployer")

ROUTING = {"enabled": True, "gatewayRef": {"name": "gw"}}
HPA_V1_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"


async def scaled_object_of(kube: Kube, namespace: str, predictor: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        return await kube.get(SCALED_OBJECT, namespace, predictor)

    found: dict[str, Any] = await eventually(probe, timeout=30, what=f"the ScaledObject {predictor}")
    return found


async def kserve_ready(kube: Kube, namespace: str, isvc: str) -> None:
    """KServe's word: the InferenceService is Ready (a Deployment at 0 replicas is Available)."""
    await kube.patch_status(
        INFERENCE_SERVICE,
        namespace,
        isvc,
        {
            "status": {
                "url": f"http://{isvc}.{namespace}",
                "conditions": [{"type": "Ready", "status": "True"}],
            }
        },
    )


def is_(status: str, **reasons: tuple[str, str]) -> Any:
    def check(s: dict[str, Any]) -> bool:
        return s.get("status") == status and all(
            (condition(s, t).get("status"), condition(s, t).get("reason")) == want
            for t, want in reasons.items()
        )

    return check


async def test_a_service_scaled_to_zero_owns_its_scaled_object_rests_idle_and_wakes(
    kube: Kube, namespace: str
) -> None:
    await make_model(kube, namespace, "zm")
    await make_template(kube, namespace, "zm-t", "zm")
    spec = {
        "model": {"name": "zm"},
        "minReplicas": 0,
        "maxReplicas": 2,
        "autoScaling": {"cooldownPeriod": 30},
        "routing": ROUTING,
    }
    await make_service(kube, namespace, "zero", spec)
    isvc = await isvc_of(kube, namespace, "zero")
    name = isvc["metadata"]["name"]
    predictor = predictor_name(name)
    assert isvc["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] == "external"
    assert (isvc["spec"]["predictor"]["minReplicas"], isvc["spec"]["predictor"]["maxReplicas"]) == (0, 2)

    scaler = await scaled_object_of(kube, namespace, predictor)
    service = await kube.get(SERVICE, namespace, "zero")
    assert service is not None
    owner = scaler["metadata"]["ownerReferences"][0]
    assert (owner["uid"], owner["controller"]) == (service["metadata"]["uid"], True)
    assert scaler["metadata"]["labels"]["app.kubernetes.io/component"] == "autoscaling"
    assert scaler["metadata"]["labels"]["aim.eai.amd.com/service"] == "zero"
    body = scaler["spec"]
    assert body["scaleTargetRef"]["name"] == predictor
    assert (body["minReplicaCount"], body["maxReplicaCount"]) == (0, 2)
    assert (body["pollingInterval"], body["cooldownPeriod"]) == (
        5,
        30,
    )  # polling defaulted, cooldown as written
    (activation,) = body["triggers"]
    assert activation["type"] == "external"
    assert f'deployment="{predictor}"' in activation["metadata"]["query"]
    assert f'namespace="{namespace}"' in activation["metadata"]["query"]

    # KEDA has not made its HPA yet
    await wait_service(kube, namespace, "zero", has("HPAReady", "False", "HPANotFound"), "HPANotFound")

    # KServe's Deployment at zero, the InferenceService Ready; KEDA's HPA over the Deployment: the
    # real HPA controller disables scaling while its target is at zero
    await kube.create(DEPLOYMENT, predictor_deployment(namespace, name, 0), namespace)
    await kserve_ready(kube, namespace, name)
    await gateway_accepts(kube, namespace)
    await kube.create(HPA, keda_hpa(namespace, name, 1, 2), namespace)

    async def disabled() -> bool:
        hpa = await kube.get(HPA, namespace, hpa_name(predictor))  # autoscaling/v1: conditions in JSON
        said = ((hpa or {}).get("metadata") or {}).get("annotations", {}).get(HPA_V1_CONDITIONS, "[]")
        return any(
            c.get("type") == "ScalingActive" and c.get("reason") == "ScalingDisabled"
            for c in json.loads(said)
        )

    await eventually(disabled, timeout=60, what="the HPA controller to disable scaling at zero")
    idle = await wait_service(
        kube,
        namespace,
        "zero",
        is_("Running", HPAReady=("True", "ScaledToZero"), InferenceServicePodsReady=("True", "ScaledToZero")),
        "Running and idle",
    )
    assert idle["status"]["runtime"] == Replicas(0, 2, 0, 0).wire()
    assert (
        "KEDA has scaled the deployment to zero"
        in condition(idle["status"], "InferenceServicePodsReady")["message"]
    )

    # a request at the gateway: KEDA activates the predictor; its pod runs
    await kube.patch(DEPLOYMENT, namespace, predictor, {"spec": {"replicas": 1}})
    await run_pods(kube, namespace, name, 1)
    awake = await wait_service(
        kube,
        namespace,
        "zero",
        is_("Running", HPAReady=("True", "HPAOperational"), InferenceServicePodsReady=("True", "PodsReady")),
        "Running with a pod",
    )
    assert awake["status"]["runtime"]["currentReplicas"] == 1

    # idle past the cooldown: back to zero
    await kube.patch(DEPLOYMENT, namespace, predictor, {"spec": {"replicas": 0}})

    async def no_pods() -> bool:
        return not await pods_of(kube, namespace, name)

    await eventually(no_pods, timeout=60, what="the ReplicaSet to remove the predictor pod")
    await wait_service(
        kube,
        namespace,
        "zero",
        is_("Running", InferenceServicePodsReady=("True", "ScaledToZero")),
        "idle again",
    )
    await wait_service(kube, namespace, "zero", runtime_is(currentReplicas=0, desiredReplicas=0), "0/0 (0-2)")

    # a fixed replica count: the operator's ScaledObject goes, KServe is told there is no autoscaler
    await kube.patch(
        SERVICE, namespace, "zero", {"spec": {"minReplicas": None, "maxReplicas": None, "autoScaling": None}}
    )

    async def gone() -> bool:
        return await kube.get(SCALED_OBJECT, namespace, predictor) is None

    await eventually(gone, timeout=30, what="the ScaledObject deleted")
    fixed = await isvc_of(kube, namespace, "zero")
    assert fixed["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] == "none"


async def test_what_cannot_scale_to_zero_is_refused_with_a_reason(kube: Kube, namespace: str) -> None:
    await make_model(kube, namespace, "rz")
    await make_template(kube, namespace, "rz-t", "rz")

    # nothing would wake it: no routing, no gateway counting its requests
    await make_service(
        kube, namespace, "unrouted", {"model": {"name": "rz"}, "minReplicas": 0, "maxReplicas": 1}
    )
    failed = await wait_service(
        kube,
        namespace,
        "unrouted",
        has("ConfigValid", "False", "RoutingRequiredForScaleToZero"),
        "RoutingRequiredForScaleToZero",
    )
    assert failed["status"]["status"] == "Failed"
    assert "needs routing" in condition(failed["status"], "ConfigValid")["message"]
    assert not (await kube.list(INFERENCE_SERVICE, namespace))[0]  # nothing made for it
    await kube.patch(SERVICE, namespace, "unrouted", {"spec": {"routing": ROUTING}})
    isvc = await isvc_of(kube, namespace, "unrouted")
    await scaled_object_of(kube, namespace, predictor_name(isvc["metadata"]["name"]))
    await wait_service(kube, namespace, "unrouted", has("ConfigValid", "True", "ConfigurationValid"), "valid")

    # the release's CEL rules, which the local API server (no CEL) lets through: the deployer says no
    bad = {
        "empty": ({"autoScaling": {}}, "autoScaling must set at least one of"),
        "no-query": (
            {
                "autoScaling": {
                    "metrics": [
                        {"type": "PodMetric", "podmetric": {"target": {"type": "Value", "value": "1"}}}
                    ]
                }
            },
            "podmetric.metric.query or podmetric.metric.metricNames",
        ),
        "upside-down": (
            {"minReplicas": 3, "maxReplicas": 1},
            "minReplicas must not be greater than maxReplicas",
        ),
    }
    for name, (fields, _) in bad.items():
        await make_service(kube, namespace, name, {"model": {"name": "rz"}, **fields})
    for name, (_, words) in bad.items():
        refused = await wait_service(kube, namespace, name, has("ConfigValid", "False", "InvalidSpec"), name)
        assert words in condition(refused["status"], "ConfigValid")["message"]
        assert refused["status"]["status"] == "Failed"
