"""InferenceService and predictor pod health as the AIMService's ``InferenceServiceReady`` and
``InferenceServicePodsReady`` conditions (``aim_deployer.readiness``)."""

from __future__ import annotations

import copy

import pytest

from aim_deployer import readiness
from aim_deployer.readiness import Health, inference_service_health, pods_health, ready_pod_count
from aimcore.api.types import Obj
from aimcore.domain.status.rules import SERVICE, State


def component_state(type_: str, status: str, reason: str) -> State:
    """The lifecycle state an AIMService reads from one of these conditions."""
    return SERVICE.state_of({"type": type_, "status": status, "reason": reason})


# -- InferenceServiceReady -------------------------------------------------------------------------


def isvc(
    conditions: list[Obj] | None = None,
    *,
    status: Obj | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    st: Obj = dict(status or {})
    if conditions is not None:
        st["conditions"] = conditions
    return {
        "metadata": {"name": "svc-a04542d9", "annotations": annotations or {}},
        "status": st,
    }


NOT_READY = {
    "type": "Ready",
    "status": "False",
    "reason": "PredictorNotReady",
    "message": "predictor not ready",
}
READY = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (None, Health(False, "CreatingRuntime", "creating InferenceService")),
        (isvc(), Health(False, "CreatingRuntime", "waiting for KServe to report")),
        (isvc([]), Health(False, "CreatingRuntime", "waiting for KServe to report")),
        (
            isvc([READY], status={"url": "http://svc.ml-team.example"}),
            Health(True, "RuntimeReady", "http://svc.ml-team.example"),
        ),
        (isvc([READY]), Health(True, "RuntimeReady", "InferenceService is ready")),
        (isvc([NOT_READY]), Health(False, "RuntimeNotReady", "PredictorNotReady: predictor not ready")),
        (
            isvc([{"type": "PredictorReady", "status": "Unknown"}]),
            Health(False, "RuntimeNotReady", "InferenceService is not ready"),
        ),
    ],
)
def test_inference_service_health(obj: Obj | None, expected: Health) -> None:
    assert inference_service_health(obj) == expected


SERVERLESS = Health(
    False,
    "ServerlessModeRejected",
    "KServe runs this InferenceService in Serverless mode; configure KServe RawDeployment (Standard)",
)


@pytest.mark.parametrize(
    "obj",
    [
        isvc([READY], status={"deploymentMode": "Serverless"}),
        isvc([NOT_READY], annotations={"serving.kserve.io/deploymentMode": "Serverless"}),
        isvc(status={"deploymentMode": "Serverless"}),
    ],
)
def test_serverless_is_rejected_even_when_ready(obj: Obj) -> None:
    assert inference_service_health(obj) == SERVERLESS


@pytest.mark.parametrize("mode", ["RawDeployment", "Standard"])
def test_raw_and_standard_modes_are_accepted(mode: str) -> None:
    obj = isvc(
        [READY], status={"deploymentMode": mode}, annotations={"serving.kserve.io/deploymentMode": mode}
    )
    assert inference_service_health(obj).ok


FAILURE_INFO = {"reason": "ModelLoadFailed", "message": "engine exited", "exitCode": 1}


@pytest.mark.parametrize(
    "model_status",
    [
        {
            "states": {"targetModelState": "FailedToLoad", "activeModelState": ""},
            "lastFailureInfo": FAILURE_INFO,
        },
        {"states": {"activeModelState": "FailedToLoad"}, "lastFailureInfo": FAILURE_INFO},
        {"transitionStatus": "BlockedByFailedLoad", "lastFailureInfo": FAILURE_INFO},
    ],
)
def test_terminal_model_failure(model_status: Obj) -> None:
    health = inference_service_health(isvc([NOT_READY], status={"modelStatus": model_status}))
    assert health == Health(
        False,
        "InferenceServiceFailed",
        "model server failed to load: ModelLoadFailed: engine exited (exit code 1)",
    )
    assert component_state("InferenceServiceReady", "False", health.reason) is State.FAILED


def test_terminal_failure_without_failure_info_uses_kserve_message() -> None:
    health = inference_service_health(
        isvc([NOT_READY], status={"modelStatus": {"transitionStatus": "InvalidSpec"}})
    )
    assert health == Health(
        False, "InferenceServiceFailed", "model server failed to load: PredictorNotReady: predictor not ready"
    )


def test_non_terminal_failure_info_is_not_a_failure() -> None:
    model_status = {
        "states": {"targetModelState": "Loading", "activeModelState": "Pending"},
        "transitionStatus": "InProgress",
        "lastFailureInfo": {"reason": "ModelLoadFailed", "message": "retrying"},
    }
    health = inference_service_health(isvc([NOT_READY], status={"modelStatus": model_status}))
    assert health == Health(
        False,
        "RuntimeNotReady",
        "PredictorNotReady: predictor not ready; last failure: ModelLoadFailed: retrying",
    )
    assert component_state("InferenceServiceReady", "False", health.reason) is State.PROGRESSING


def test_a_serving_inference_service_that_scales_stays_ready_with_its_address() -> None:
    """RuntimeScaling (0.2.2): not Ready while KServe rolls out or scales, yet a pod serves."""
    url = "http://svc.ml-team.example"
    scaling = isvc([NOT_READY], status={"url": url})
    assert inference_service_health(scaling, ready_pods=1) == Health(True, "RuntimeScaling", url)
    # no ready pod: not serving
    assert inference_service_health(scaling, ready_pods=0).reason == "RuntimeNotReady"
    # no address yet (a first start): Running would mean reachable, so not yet
    assert inference_service_health(isvc([NOT_READY]), ready_pods=2).reason == "RuntimeNotReady"
    # a terminal failure stays one
    failed = {"states": {"targetModelState": "FailedToLoad"}, "transitionStatus": "BlockedByFailedLoad"}
    broken = isvc([NOT_READY], status={"url": url, "modelStatus": failed})
    assert inference_service_health(broken, ready_pods=1).reason == "InferenceServiceFailed"


def test_ready_pods_are_counted_without_those_being_deleted() -> None:
    pods = [pod("a", ready=True), pod("b", ready=True, deleting=True), pod("c", ready=False)]
    assert ready_pod_count(pods) == 1


# -- InferenceServicePodsReady ---------------------------------------------------------------------


def pod(
    name: str = "svc-predictor-abc",
    *,
    ready: bool = False,
    phase: str = "Running",
    node: str | None = "node-1",
    state: Obj | None = None,
    last_state: Obj | None = None,
    restarts: int = 0,
    scheduled: Obj | None = None,
    created: str = "2025-01-01T00:00:00Z",
    deleting: bool = False,
    status_extra: Obj | None = None,
) -> Obj:
    conditions: list[Obj] = [{"type": "Ready", "status": "True" if ready else "False"}]
    if scheduled is not None:
        conditions.append({"type": "PodScheduled", **scheduled})
    cs: Obj = {
        "name": "kserve-container",
        "ready": ready,
        "restartCount": restarts,
        "state": state if state is not None else ({"running": {}} if phase == "Running" else {}),
    }
    if last_state is not None:
        cs["lastState"] = last_state
    metadata: Obj = {"name": name, "creationTimestamp": created}
    if deleting:
        metadata["deletionTimestamp"] = "2025-01-02T00:00:00Z"
    return {
        "metadata": metadata,
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [cs],
            **(status_extra or {}),
        },
    }


def waiting(reason: str, message: str = "") -> Obj:
    return {"waiting": {"reason": reason, "message": message}}


CRASHING = pod(
    "crash",
    state=waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container"),
    last_state={
        "terminated": {"exitCode": 1, "reason": "Error", "message": "HF_TOKEN=hf_secretvalue1234567"}
    },
    restarts=7,
)
OOM = pod(
    "oom",
    state=waiting("CrashLoopBackOff"),
    last_state={"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
    restarts=2,
)
AUTH = pod(
    "auth",
    state=waiting("ErrImagePull", 'failed to pull "ghcr.io/x:1": 401 Unauthorized'),
)
NOT_FOUND = pod("nf", state=waiting("ImagePullBackOff", "ghcr.io/x:1: manifest unknown"))
BACK_OFF = pod("bo", state=waiting("ImagePullBackOff", 'Back-off pulling image "ghcr.io/x:1"'))
UNSCHEDULABLE = pod(
    "unsched",
    phase="Pending",
    node=None,
    state={},
    scheduled={
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient amd.com/gpu.",
    },
)
UNSCHEDULED = pod("waiting-node", phase="Pending", node=None, state={})
CREATING = pod("creating", phase="Pending", state=waiting("ContainerCreating"))
LOADING = pod("loading")
CONFIG_ERROR = pod(
    "cfg", phase="Pending", state=waiting("CreateContainerConfigError", 'configmap "x" not found')
)
READY_POD = pod("ok", ready=True)


@pytest.mark.parametrize(
    ("pods", "expected", "reason", "fragments"),
    [
        ([], 1, "WaitingForPods", ["no predictor pods yet"]),
        ([READY_POD], 1, "PodsReady", ["1/1 pods ready"]),
        ([READY_POD, pod("ok2", ready=True)], 2, "PodsReady", ["2/2 pods ready"]),
        ([READY_POD], 2, "PodsStarting", ["1 of 2 pods ready"]),
        ([LOADING], 1, "PodsStarting", ["0 of 1 pods ready", "loading", "not ready"]),
        ([CREATING], 1, "PodsStarting", ["0 of 1 pods ready", "creating", "ContainerCreating"]),
        ([pod("assigned", phase="Pending", state={})], 1, "PodsStarting", ["pod assigned is starting"]),
        ([AUTH], 1, "ImagePullAuthFailure", ["not authorized", "401 Unauthorized"]),
        ([NOT_FOUND], 1, "ImageNotFound", ["manifest unknown"]),
        ([BACK_OFF], 1, "ImagePullBackOff", ["Back-off pulling image"]),
        (
            [CRASHING],
            1,
            "CrashLoopBackOff",
            ["container kserve-container in pod crash keeps crashing (restarts 7): exit code 1 (Error)"],
        ),
        ([OOM], 1, "PodOOMKilled", ["kserve-container", "oom", "OOMKilled"]),
        ([UNSCHEDULABLE], 1, "FailedScheduling", ["unsched", "3 Insufficient amd.com/gpu"]),
        ([UNSCHEDULED], 1, "PodsPending", ["waiting-node", "waiting for a node"]),
        ([CONFIG_ERROR], 1, "PodFailed", ["CreateContainerConfigError", 'configmap "x" not found']),
    ],
)
def test_pods_health(pods: list[Obj], expected: int, reason: str, fragments: list[str]) -> None:
    health = pods_health(pods, expected=expected)
    assert (health.ok, health.reason) == (reason == "PodsReady", reason)
    for fragment in fragments:
        assert fragment in health.message


def test_crash_loop_message_exact_and_never_quotes_env() -> None:
    health = pods_health([CRASHING], expected=1)
    assert health.message == (
        "container kserve-container in pod crash keeps crashing (restarts 7): exit code 1 (Error): "
        "HF_TOKEN=***"  # the container's termination message, redacted
    )
    assert "hf_secret" not in health.message


def test_crash_loop_message_says_what_the_container_said_in_its_termination_message() -> None:
    crashing = copy.deepcopy(CRASHING)
    [cs] = crashing["status"]["containerStatuses"]
    cs["lastState"]["terminated"]["message"] = (
        "llama.cpp cannot load model.gguf: llama_model_load: error loading model: tensor "
        "'output.weight' data is not within the file bounds"
    )
    health = pods_health([crashing], expected=1)
    assert health.message == (
        "container kserve-container in pod crash keeps crashing (restarts 7): exit code 1 (Error): "
        "llama.cpp cannot load model.gguf: llama_model_load: error loading model: tensor "
        "'output.weight' data is not within the file bounds"
    )


@pytest.mark.parametrize(
    ("pods", "reason"),
    [
        ([LOADING, CRASHING], "CrashLoopBackOff"),
        ([CREATING, UNSCHEDULABLE], "FailedScheduling"),
        ([UNSCHEDULABLE, BACK_OFF], "ImagePullBackOff"),
        ([BACK_OFF, CRASHING], "CrashLoopBackOff"),
        ([CRASHING, OOM], "PodOOMKilled"),
        ([CRASHING, AUTH, LOADING], "ImagePullAuthFailure"),
        ([READY_POD, CRASHING], "CrashLoopBackOff"),
        ([UNSCHEDULED, LOADING], "PodsPending"),
    ],
)
def test_worst_pod_wins(pods: list[Obj], reason: str) -> None:
    assert pods_health(pods, expected=2).reason == reason
    assert pods_health(list(reversed(pods)), expected=2).reason == reason


def test_enough_ready_pods_is_ready_despite_a_failing_surge_pod() -> None:
    assert pods_health([READY_POD, CRASHING], expected=1) == Health(True, "PodsReady", "1/1 pods ready")


def test_oom_in_the_past_of_a_ready_pod_is_ignored() -> None:
    recovered = pod(
        "recovered", ready=True, last_state={"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    )
    assert pods_health([recovered], expected=1).ok


def test_deleting_pods_are_ignored() -> None:
    assert pods_health([pod("old", ready=True, deleting=True)], expected=1).reason == "WaitingForPods"
    assert pods_health(
        [pod("old", deleting=True, state=waiting("CrashLoopBackOff")), READY_POD], expected=1
    ).ok
    crashing_old = pod("old", deleting=True, state=waiting("CrashLoopBackOff"))
    assert pods_health([crashing_old, LOADING], expected=1).reason == "PodsStarting"


def test_ended_pods_are_superseded_by_live_ones() -> None:
    evicted = pod(
        "evicted",
        phase="Failed",
        state={"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
        status_extra={"reason": "Evicted", "message": "The node was low on resource: memory."},
    )
    assert pods_health([evicted, READY_POD], expected=1).ok
    assert pods_health([evicted, LOADING], expected=1).reason == "PodsStarting"
    alone = pods_health([evicted], expected=1)
    assert alone.reason == "PodsPending"
    assert "evicted" in alone.message and "Evicted" in alone.message


def test_expected_below_one_counts_as_one() -> None:
    assert pods_health([LOADING], expected=0).reason == "PodsStarting"
    assert pods_health([READY_POD], expected=0) == Health(True, "PodsReady", "1/1 pods ready")


def test_newest_pod_first_on_ties() -> None:
    old = pod("old", created="2025-01-01T00:00:00Z", state=waiting("CrashLoopBackOff"), restarts=1)
    new = pod("new", created="2025-01-02T00:00:00Z", state=waiting("CrashLoopBackOff"), restarts=3)
    assert "pod new" in pods_health([old, new], expected=2).message
    assert "pod new" in pods_health([new, old], expected=2).message


def test_messages_are_redacted_and_clipped() -> None:
    noisy = pod(
        "noisy",
        phase="Pending",
        state=waiting("RunContainerError", "token=abc123secret " + "x" * 1000),
    )
    health = pods_health([noisy], expected=1)
    assert health.reason == "PodFailed"
    assert "abc123secret" not in health.message
    assert len(health.message) < 500


@pytest.mark.parametrize(
    ("reason", "state"),
    [
        ("PodsReady", State.READY),
        ("PodsStarting", State.STARTING),
        ("PodsPending", State.PENDING),
        ("FailedScheduling", State.PENDING),
        ("ImagePullBackOff", State.DEGRADED),
        ("ImagePullAuthFailure", State.FAILED),
        ("ImageNotFound", State.FAILED),
        ("PodOOMKilled", State.FAILED),
        ("PodFailed", State.FAILED),
    ],
)
def test_pod_reasons_map_to_lifecycle_states(reason: str, state: State) -> None:
    status = "True" if reason == "PodsReady" else "False"
    assert component_state("InferenceServicePodsReady", status, reason) is state


def test_reason_constants_are_exported() -> None:
    assert readiness.REASON_CRASH_LOOP == "CrashLoopBackOff"
    assert readiness.REASON_SERVERLESS_REJECTED == "ServerlessModeRejected"


def _deployment(*conditions: Obj) -> Obj:
    return {"metadata": {"name": "svc-predictor"}, "status": {"conditions": list(conditions)}}


REFUSED = {
    "type": "ReplicaFailure",
    "status": "True",
    "reason": "FailedCreate",
    "message": 'pods "svc-predictor-7d9f-" is forbidden: no PriorityClass with name gold was found',
}


def test_pods_the_api_server_refuses_are_named_with_its_words() -> None:
    health = pods_health([], expected=1, deployment=_deployment(REFUSED))
    assert health.ok is False
    assert health.reason == "PodsNotCreated"
    assert health.message == (
        "the predictor's pods are refused: "
        'pods "svc-predictor-7d9f-" is forbidden: no PriorityClass with name gold was found'
    )


def test_a_refusal_that_passed_or_a_deployment_without_one_is_still_waiting() -> None:
    passed = {**REFUSED, "status": "False"}
    progressing = {"type": "Progressing", "status": "True", "reason": "NewReplicaSetCreated"}
    for deployment in (None, _deployment(), _deployment(passed), _deployment(progressing)):
        assert pods_health([], expected=1, deployment=deployment).reason == "WaitingForPods"


def test_live_pods_say_more_than_a_refusal_of_others() -> None:
    assert pods_health([LOADING], expected=1, deployment=_deployment(REFUSED)).reason == "PodsStarting"
