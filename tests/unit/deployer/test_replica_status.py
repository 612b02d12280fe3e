"""AIMService ``status.runtime`` from the predictor's Deployment and HPA
(``aim_deployer.replica_status``), and the HPA and Deployment changes that reach the service
(``aim_deployer.dependencies``)."""

from __future__ import annotations

from typing import Any

from aim_deployer.dependencies import predictor_isvc, scaled_isvc
from aim_deployer.replica_status import Replicas, hpa_name, runtime_status
from aim_deployer.services import pod_isvc
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import DEPLOYMENT, HPA, INFERENCE_SERVICE, KindRef
from aimcore.api.types import Obj


def deployment(replicas: int, ready: int | None) -> Obj:
    status = {} if ready is None else {"readyReplicas": ready}
    return {"kind": "Deployment", "spec": {"replicas": replicas}, "status": status}


def hpa(desired: int | None, current: int = 0) -> Obj:
    status: Obj = {"currentReplicas": current}
    if desired is not None:
        status["desiredReplicas"] = desired
    return {"kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 1, "maxReplicas": 4}, "status": status}


def test_fixed_replicas_show_the_ready_count_against_the_spec() -> None:
    running = runtime_status((3, 3), scaled=False, deployment=deployment(3, 3), hpa=None).wire()
    assert running == {
        "minReplicas": 3,
        "maxReplicas": 3,
        "desiredReplicas": 3,
        "currentReplicas": 3,
        "replicas": "3",
    }
    dying = runtime_status((3, 3), scaled=False, deployment=deployment(3, 2), hpa=None)
    assert dying == Replicas(3, 3, 3, 2) and dying.display == "2"


def test_nothing_runs_before_kserve_makes_the_deployment() -> None:
    assert runtime_status((1, 1), scaled=False, deployment=None, hpa=None).wire() == {
        "minReplicas": 1,
        "maxReplicas": 1,
        "desiredReplicas": 1,
        "currentReplicas": 0,
        "replicas": "0",
    }
    no_ready = runtime_status((1, 1), scaled=False, deployment=deployment(1, None), hpa=None)
    assert no_ready.current == 0


def scaled(dep: Obj | None, scaler: Obj | None, bounds: tuple[int, int] = (1, 4)) -> Replicas:
    return runtime_status(bounds, scaled=True, deployment=dep, hpa=scaler)


def test_autoscaling_shows_the_range_and_the_scalers_decision() -> None:
    decided = scaled(deployment(3, 2), hpa(3, 3))
    assert decided == Replicas(1, 4, 3, 2) and decided.display == "2/3 (1-4)"
    # an HPA that has not decided yet (no metrics): what the scaler left on the Deployment
    assert scaled(deployment(2, 2), hpa(None)).display == "2/2 (1-4)"
    assert scaled(deployment(2, 2), hpa(0)).desired == 2
    # no scaler and no Deployment yet: the minimum
    assert scaled(None, None, (2, 4)).display == "0/2 (2-4)"


def test_autoscaling_with_equal_bounds_displays_one_number() -> None:
    assert scaled(deployment(2, 1), hpa(2), (2, 2)).display == "1"


def test_the_hpa_is_the_one_keda_makes() -> None:
    assert hpa_name("chat-ns-predictor") == "keda-hpa-chat-ns-predictor"


def test_only_pods_are_indexed_as_predictor_pods() -> None:
    labels = {"metadata": {"labels": {"serving.kserve.io/inferenceservice": "chat"}}}
    assert pod_isvc({"kind": "Pod", **labels}) == ["chat"]
    assert pod_isvc(labels) == ["chat"]  # an object without its kind (a test's hand-made pod)
    assert pod_isvc({"kind": "Deployment", **labels}) == []
    assert pod_isvc({"kind": "HorizontalPodAutoscaler", **labels}) == []


def _change(ref: KindRef, name: str) -> ChangeEvent:
    return ChangeEvent(
        object=ObjectRef.of(ref, "ns", name), uid="u", resource_version="2", change=ChangeType.MODIFIED
    )


def test_an_hpa_and_a_deployment_reach_the_inference_service_they_scale() -> None:
    hpa_obj = {
        "metadata": {"name": "keda-hpa-chat-ns-predictor"},
        "spec": {"scaleTargetRef": {"name": "chat-ns-predictor"}},
    }
    informer: Any = None  # neither mapper reads the cache
    assert list(scaled_isvc(_change(HPA, "keda-hpa-chat-ns-predictor"), hpa_obj, informer)) == [
        (INFERENCE_SERVICE, "ns", "chat-ns")
    ]
    labelled = {"metadata": {"labels": {"serving.kserve.io/inferenceservice": "chat-ns"}}, "spec": {}}
    assert list(scaled_isvc(_change(HPA, "other"), labelled, informer)) == [
        (INFERENCE_SERVICE, "ns", "chat-ns")
    ]
    assert (
        list(scaled_isvc(_change(HPA, "other"), {"spec": {"scaleTargetRef": {"name": "web"}}}, informer))
        == []
    )
    assert list(predictor_isvc(_change(DEPLOYMENT, "chat-ns-predictor"), labelled, informer)) == [
        (INFERENCE_SERVICE, "ns", "chat-ns")
    ]
