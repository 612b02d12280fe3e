"""The KServe stand-in's rendering (pure): the children KServe's RawDeployment mode creates for an
InferenceService as the deployer writes it, and the status it derives from the Deployment and the
predictor pods (what ``aim_deployer.readiness`` reads)."""

from __future__ import annotations

from typing import Any

import pytest

from aim_deployer.readiness import inference_service_health
from aim_dev.kserve import raw

NOW = "2026-01-01T00:00:00Z"


def isvc(**predictor: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": "chat-1a2b3c4d",
            "namespace": "team",
            "uid": "u-1",
            "labels": {"aim.eai.amd.com/service": "chat", "app.kubernetes.io/managed-by": "aim-engine"},
            "annotations": {
                "serving.kserve.io/deploymentMode": "RawDeployment",
                "serving.kserve.io/autoscalerClass": "none",
            },
        },
        "spec": {
            "predictor": {
                "minReplicas": 2,
                "maxReplicas": 2,
                "containers": [
                    {
                        "name": "kserve-container",
                        "image": "127.0.0.1:5000/aim/test-model:0.1.0",
                        "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
                    }
                ],
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                **predictor,
            }
        },
    }


def test_the_predictor_deployment_carries_kserves_and_the_inference_services_labels() -> None:
    dep = raw.deployment(isvc())
    assert dep["metadata"]["name"] == "chat-1a2b3c4d-predictor"
    assert dep["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert pod_labels == {
        "aim.eai.amd.com/service": "chat",
        "app.kubernetes.io/managed-by": "aim-engine",
        "serving.kserve.io/inferenceservice": "chat-1a2b3c4d",
        "component": "predictor",
        "app": "isvc.chat-1a2b3c4d-predictor",
    }
    assert dep["spec"]["selector"] == {"matchLabels": {"app": "isvc.chat-1a2b3c4d-predictor"}}
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert set(pod) == {"containers", "volumes"}  # minReplicas and friends are not pod fields
    [container] = pod["containers"]
    # KServe's default readiness probe: TCP on the first port
    assert container["readinessProbe"]["tcpSocket"] == {"port": 8000}
    assert dep["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "RawDeployment"


def test_a_readiness_probe_of_the_inference_service_is_kept() -> None:
    """The operator's HTTP probe on /health (ready = loaded) replaces KServe's TCP default."""
    probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 2}
    body = isvc()
    body["spec"]["predictor"]["containers"][0]["readinessProbe"] = probe
    [container] = raw.deployment(body)["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"] == probe


def test_the_service_sends_port_80_to_the_first_container_port() -> None:
    svc = raw.service(isvc())
    assert svc["spec"]["selector"] == {"app": "isvc.chat-1a2b3c4d-predictor"}
    assert svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": 8000, "protocol": "TCP"}]


def test_a_child_is_rewritten_only_when_what_it_would_say_changes() -> None:
    first = raw.deployment(isvc())
    assert raw.spec_hash(first) == raw.spec_hash(raw.deployment(isvc()))
    assert raw.spec_hash(first) != raw.spec_hash(raw.deployment(isvc(minReplicas=3)))


def test_an_autoscaled_predictor_gets_the_hpa_keda_would_make() -> None:
    assert raw.scaler(isvc()) is None  # autoscalerClass none: no scaler
    scaled = isvc(minReplicas=1, maxReplicas=3)
    scaled["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] = "keda"
    hpa = raw.scaler(scaled)
    assert hpa is not None
    assert hpa["metadata"]["name"] == "keda-hpa-chat-1a2b3c4d-predictor"
    assert hpa["metadata"]["labels"]["serving.kserve.io/inferenceservice"] == "chat-1a2b3c4d"
    assert hpa["metadata"]["labels"]["aim.eai.amd.com/service"] == "chat"
    spec = hpa["spec"]
    assert spec["scaleTargetRef"]["name"] == raw.deployment(scaled)["metadata"]["name"]
    assert (spec["minReplicas"], spec["maxReplicas"]) == (1, 3)
    assert raw.spec_hash(hpa) == raw.spec_hash(raw.scaler(scaled))


def test_model_forms_need_a_serving_runtime_and_are_not_emulated() -> None:
    with pytest.raises(raw.Unsupported, match="ServingRuntime"):
        raw.deployment(isvc(model={"modelFormat": {"name": "sklearn"}}))


def deployment_with(*conditions: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "status": {
            "observedGeneration": 1,
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": f"{t} {r}"} for t, s, r in conditions
            ],
        }
    }


def pod(
    *, ready: bool = False, state: dict[str, Any] | None = None, last: dict[str, Any] | None = None
) -> dict[str, Any]:
    cs: dict[str, Any] = {"name": "kserve-container", "state": state or {"running": {}}, "restartCount": 0}
    if last:
        cs["lastState"] = last
    return {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [cs],
        },
    }


def test_an_available_deployment_makes_the_inference_service_ready_with_its_url() -> None:
    dep = deployment_with(
        ("Available", "True", "MinimumReplicasAvailable"), ("Progressing", "True", "NewReplicaSetAvailable")
    )
    status = raw.status(isvc(), dep, [pod(ready=True)], now=NOW)
    conds = {c["type"]: c for c in status["conditions"]}
    assert {t: c["status"] for t, c in conds.items()} == {
        "IngressReady": "True",
        "PredictorReady": "True",
        "Ready": "True",
    }
    assert status["url"] == "http://chat-1a2b3c4d-team.example.com"
    assert status["address"]["url"] == "http://chat-1a2b3c4d-predictor.team.svc.cluster.local"
    assert status["modelStatus"]["transitionStatus"] == "UpToDate"
    assert status["modelStatus"]["states"]["activeModelState"] == "Loaded"
    # what the operator reads from it
    health = inference_service_health({**isvc(), "status": status})
    assert (health.ok, health.reason, health.message) == (True, "RuntimeReady", status["url"])


def test_a_rollout_in_progress_is_not_ready_and_not_failed() -> None:
    dep = deployment_with(
        ("Available", "False", "MinimumReplicasUnavailable"), ("Progressing", "True", "ReplicaSetUpdated")
    )
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}
    status = raw.status(isvc(), dep, [pod(state=waiting)], now=NOW)
    ready = {c["type"]: c for c in status["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "MinimumReplicasUnavailable")
    assert status["modelStatus"]["transitionStatus"] == "InProgress"
    health = inference_service_health({**isvc(), "status": status})
    assert (health.ok, health.reason) == (False, "RuntimeNotReady")


def test_a_crash_looping_model_server_failed_to_load() -> None:
    dep = deployment_with(("Available", "False", "MinimumReplicasUnavailable"))
    crashing = pod(
        state={"waiting": {"reason": "CrashLoopBackOff"}},
        last={"terminated": {"exitCode": 1, "reason": "Error", "message": "no weights"}},
    )
    status = raw.status(isvc(), dep, [crashing], now=NOW)
    model = status["modelStatus"]
    assert model["transitionStatus"] == "BlockedByFailedLoad"
    assert model["states"]["targetModelState"] == "FailedToLoad"
    assert model["lastFailureInfo"] == {"reason": "ModelLoadFailed", "message": "no weights", "exitCode": 1}
    health = inference_service_health({**isvc(), "status": status})
    assert (health.ok, health.reason) == (False, "InferenceServiceFailed")
    assert "exit code 1" in health.message


def test_no_pods_yet_is_pending_and_unchanged_conditions_keep_their_time() -> None:
    first = raw.status(isvc(), None, [], now=NOW)
    assert first["modelStatus"]["states"]["targetModelState"] == "Pending"
    later = raw.status({**isvc(), "status": first}, None, [], now="2026-01-01T00:05:00Z")
    assert [c["lastTransitionTime"] for c in later["conditions"]] == [NOW] * 3


def autoscaled(klass: str, **predictor: Any) -> dict[str, Any]:
    body = isvc(**predictor)
    body["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] = klass
    return body


def live_deployment(replicas: int) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": "42"}, "spec": {"replicas": replicas}}


def test_with_class_external_kserve_makes_no_autoscaler_and_may_start_at_zero() -> None:
    scaled = autoscaled("external", minReplicas=0, maxReplicas=3)
    assert raw.scaler(scaled) is None  # KEDA's ScaledObject is the deployer's, its HPA KEDA's
    assert raw.deployment(scaled)["spec"]["replicas"] == 0


@pytest.mark.parametrize("klass", ["keda", "external"])
def test_a_rewrite_of_an_autoscaled_predictor_keeps_the_scalers_replicas(klass: str) -> None:
    scaled = autoscaled(klass, minReplicas=1, maxReplicas=4)
    dep = raw.deployment(scaled, live_deployment(3))
    assert dep["spec"]["replicas"] == 3
    # conditional on the Deployment as read: a scaler's later change is not undone (409)
    assert dep["metadata"]["resourceVersion"] == "42"
    # the hash says what the InferenceService asks for: the scaler moving replicas rewrites nothing
    assert raw.spec_hash(dep) == raw.spec_hash(raw.deployment(scaled))
    assert raw.spec_hash(dep) == raw.spec_hash(raw.deployment(scaled, live_deployment(0)))
    # a first write (no Deployment yet) starts at minReplicas
    assert raw.deployment(scaled)["spec"]["replicas"] == 1
    assert "resourceVersion" not in raw.deployment(scaled)["metadata"]


def test_a_rewrite_of_a_fixed_predictor_resets_its_replicas() -> None:
    """``autoscalerClass: none``: KServe owns the replicas and writes minReplicas again."""
    dep = raw.deployment(isvc(), live_deployment(5))
    assert dep["spec"]["replicas"] == 2
    assert "resourceVersion" not in dep["metadata"]
