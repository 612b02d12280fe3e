"""How the InferenceService and its predictor pods are doing, as the two AIMService conditions
``InferenceServiceReady`` and ``InferenceServicePodsReady`` (docs/original.md#inferenceservice-readiness).

Why it exists: KServe's own status says little about *why* a model server is not up (an image
that cannot be pulled, a crash loop, no node with a free GPU), and users read the AIMService, not
the pods. These pure functions turn the observed objects into a reason the status rules
(:mod:`aimcore.domain.status.rules`) map to a lifecycle state, and a message a user can act on. Messages
never quote env values; kubelet and scheduler text is redacted and clipped.

``InferenceServiceReady`` (:func:`inference_service_health`), first match wins:

1. no InferenceService → ``CreatingRuntime`` ("creating InferenceService");
2. KServe runs it in Serverless mode (``status.deploymentMode`` or the
   ``serving.kserve.io/deploymentMode`` annotation says ``Serverless``) → ``ServerlessModeRejected``.
   Checked before readiness: a Serverless InferenceService is wrong even when it is Ready (the
   operator's pod, HPA and routing handling assume RawDeployment/Standard);
3. no conditions yet → ``CreatingRuntime`` ("waiting for KServe to report");
4. ``Ready=True`` → ``RuntimeReady`` with ``status.url`` (or "InferenceService is ready");
5. a *terminal* failure → ``InferenceServiceFailed`` (a reason ending in ``Failed``, so Failed):
   ``status.modelStatus.states.targetModelState`` or ``activeModelState`` is ``FailedToLoad``, or
   ``modelStatus.transitionStatus`` is ``BlockedByFailedLoad``/``InvalidSpec``; the message is
   ``modelStatus.lastFailureInfo`` (reason, message, exit code), else KServe's Ready message;
6. at least one predictor pod ready and KServe has given the InferenceService its address
   (``status.url``) → True/``RuntimeScaling`` with the address (the released original's 0.2.2: a
   service scaling or rolling out keeps serving and stays ``Running``; its message there is "N
   ready pod(s), scaling in progress", here the address, which callers read from this condition;
   the count is in ``InferenceServicePodsReady``). Without an address it stays not ready:
   ``Running`` means reachable. The reconcile counts the ready pods only for a service whose
   ``InferenceServiceReady`` was True before (it has served): on a first start the pod is ready a
   moment before KServe calls the InferenceService Ready, and the service is not ``Running`` first;
7. anything else → ``RuntimeNotReady`` with KServe's Ready reason and message (a
   ``lastFailureInfo`` that is not terminal is appended). Not a failure reason: KServe is still
   rolling out or retrying, and the pods condition says what they are doing.

``InferenceServicePodsReady`` (:func:`pods_health`): pods being deleted are ignored; so are pods
that ended (phase ``Succeeded``/``Failed``) when any other pod is alive — the Deployment replaced
them. Ready pods (``Ready=True``) ≥ ``expected`` (at least 1) → ``PodsReady``, even if an extra pod
(a rolling update's surge pod, a pod beyond the autoscaling minimum) has trouble. Otherwise every
not-ready pod is classified and the worst wins (newest pod first on ties), worst first:

0. hard failures: ``ImagePullAuthFailure`` / ``ImageNotFound`` (image pull not authorised / not
   found), ``InvalidImageReference``, ``SecretNotFound``, ``PodOOMKilled`` (OOMKilled in the
   container's state or last state), ``PodFailed`` (``CreateContainerConfigError``,
   ``CreateContainerError``, ``RunContainerError``);
1. ``CrashLoopBackOff`` (message: restarts, the last exit code/reason and the container's own
   termination message, e.g. a model server's reason for not loading; never its log text);
2. ``ImagePullBackOff`` (any other pull failure);
3. ``FailedScheduling`` (``PodScheduled=False`` with reason ``Unschedulable``; scheduler message);
4. ``PodsPending`` (not scheduled yet);
5. ``PodsStarting`` (container waiting, e.g. ``ContainerCreating``, or running but not ready;
   message "k of n pods ready; ...").

No live pod at all → ``PodsNotCreated`` when the predictor Deployment says its pods are refused
(``ReplicaFailure=True``: a PriorityClass that does not exist, an exhausted ResourceQuota, an
admission policy; the API server's words, clipped), else ``WaitingForPods`` (KServe has not created
them yet: the service is Starting) or ``PodsPending`` naming the ended pod's reason.
Image, secret and OOM classification is :func:`aimcore.domain.jobs.pod_problem`, shared with the jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aimcore.domain.jobs import pod_problem, redact

__all__ = [
    "CONTAINER",
    "REASON_CRASH_LOOP",
    "REASON_CREATING_RUNTIME",
    "REASON_FAILED_SCHEDULING",
    "REASON_INFERENCE_SERVICE_FAILED",
    "REASON_PODS_NOT_CREATED",
    "REASON_PODS_PENDING",
    "REASON_PODS_READY",
    "REASON_PODS_STARTING",
    "REASON_POD_FAILED",
    "REASON_RUNTIME_NOT_READY",
    "REASON_RUNTIME_READY",
    "REASON_RUNTIME_SCALING",
    "REASON_SERVERLESS_REJECTED",
    "REASON_WAITING_FOR_PODS",
    "Health",
    "inference_service_health",
    "pods_health",
    "ready_pod_count",
]

CONTAINER = "kserve-container"
WHAT = "inference"

REASON_CREATING_RUNTIME = "CreatingRuntime"
REASON_RUNTIME_READY = "RuntimeReady"
REASON_RUNTIME_NOT_READY = "RuntimeNotReady"
REASON_RUNTIME_SCALING = "RuntimeScaling"
REASON_SERVERLESS_REJECTED = "ServerlessModeRejected"
REASON_INFERENCE_SERVICE_FAILED = "InferenceServiceFailed"

REASON_PODS_READY = "PodsReady"
REASON_PODS_STARTING = "PodsStarting"
REASON_PODS_PENDING = "PodsPending"
REASON_WAITING_FOR_PODS = "WaitingForPods"
REASON_PODS_NOT_CREATED = "PodsNotCreated"
REASON_FAILED_SCHEDULING = "FailedScheduling"
REASON_CRASH_LOOP = "CrashLoopBackOff"
REASON_POD_FAILED = "PodFailed"
_REASON_IMAGE_PULL_BACK_OFF = "ImagePullBackOff"

SERVERLESS = "Serverless"
DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
SERVERLESS_MESSAGE = (
    "KServe runs this InferenceService in Serverless mode; configure KServe RawDeployment (Standard)"
)

_TERMINAL_MODEL_STATES = frozenset({"FailedToLoad"})
_TERMINAL_TRANSITIONS = frozenset({"BlockedByFailedLoad", "InvalidSpec"})
_CREATE_FAILURES = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError"})
_MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class Health:
    """One condition's worth: True/False, reason, message."""

    ok: bool
    reason: str
    message: str


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _clip(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    text = redact(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in _map(obj.get("status")).get("conditions") or [] if isinstance(c, Mapping)]


def _condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in _conditions(obj) if c.get("type") == type_), None)


# -- InferenceServiceReady ---------------------------------------------------------------------


def _serverless(isvc: Mapping[str, Any]) -> bool:
    status_mode = _map(isvc.get("status")).get("deploymentMode")
    annotation = _map(_map(isvc.get("metadata")).get("annotations")).get(DEPLOYMENT_MODE_ANNOTATION)
    return SERVERLESS in (status_mode, annotation)


def _failure_info(model_status: Mapping[str, Any]) -> str:
    info = _map(model_status.get("lastFailureInfo"))
    parts = [str(info[k]) for k in ("reason", "message") if info.get(k)]
    text = ": ".join(parts)
    if info.get("exitCode") is not None:
        text = f"{text} (exit code {info['exitCode']})" if text else f"exit code {info['exitCode']}"
    return _clip(text) if text else ""


def inference_service_health(isvc: Mapping[str, Any] | None, *, ready_pods: int = 0) -> Health:
    """The ``InferenceServiceReady`` condition, ``ready_pods`` of its predictor pods ready (rules in
    the module docstring)."""
    if isvc is None:
        return Health(False, REASON_CREATING_RUNTIME, "creating InferenceService")
    if _serverless(isvc):
        return Health(False, REASON_SERVERLESS_REJECTED, SERVERLESS_MESSAGE)
    if not _conditions(isvc):
        return Health(False, REASON_CREATING_RUNTIME, "waiting for KServe to report")
    status = _map(isvc.get("status"))
    ready = _condition(isvc, "Ready") or {}
    if ready.get("status") == "True":
        url = status.get("url")
        return Health(True, REASON_RUNTIME_READY, str(url) if url else "InferenceService is ready")

    model_status = _map(status.get("modelStatus"))
    states = _map(model_status.get("states"))
    failure = _failure_info(model_status)
    kserve = _clip(
        ": ".join(str(ready[k]) for k in ("reason", "message") if ready.get(k))
        or "InferenceService is not ready"
    )
    terminal = (
        bool({states.get("targetModelState"), states.get("activeModelState")} & _TERMINAL_MODEL_STATES)
        or model_status.get("transitionStatus") in _TERMINAL_TRANSITIONS
    )
    if terminal:
        detail = failure or kserve
        return Health(False, REASON_INFERENCE_SERVICE_FAILED, f"model server failed to load: {detail}")
    url = status.get("url")
    if ready_pods > 0 and url:
        return Health(True, REASON_RUNTIME_SCALING, str(url))
    message = f"{kserve}; last failure: {failure}" if failure else kserve
    return Health(False, REASON_RUNTIME_NOT_READY, message)


def ready_pod_count(pods: Sequence[Mapping[str, Any]]) -> int:
    """How many of ``pods`` are ready (pods being deleted left out)."""
    return sum(1 for p in pods if _ready(p) and not _deleting(p))


# -- InferenceServicePodsReady -----------------------------------------------------------------


def _name(pod: Mapping[str, Any]) -> str:
    return str(_map(pod.get("metadata")).get("name") or "<unnamed>")


def _deleting(pod: Mapping[str, Any]) -> bool:
    return bool(_map(pod.get("metadata")).get("deletionTimestamp"))


def _ended(pod: Mapping[str, Any]) -> bool:
    return _map(pod.get("status")).get("phase") in ("Succeeded", "Failed")


def _ready(pod: Mapping[str, Any]) -> bool:
    cond = _condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def _newest_first(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    by_name = sorted(pods, key=_name)
    return sorted(
        by_name,
        key=lambda p: str(_map(p.get("metadata")).get("creationTimestamp") or ""),
        reverse=True,
    )


def _statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Container statuses, the inference container first, then the others, then init containers."""
    status = _map(pod.get("status"))
    main = [s for s in status.get("containerStatuses") or [] if isinstance(s, Mapping)]
    main.sort(key=lambda s: s.get("name") != CONTAINER)
    init = [s for s in status.get("initContainerStatuses") or [] if isinstance(s, Mapping)]
    return main + init


def _waiting(cs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    waiting = _map(cs.get("state")).get("waiting")
    return waiting if isinstance(waiting, Mapping) else None


def _last_termination(cs: Mapping[str, Any]) -> str:
    term = _map(_map(cs.get("lastState")).get("terminated"))
    if not term:
        return "no termination recorded"
    text = f"exit code {term.get('exitCode', '?')}"
    if term.get("reason"):
        text += f" ({_clip(str(term['reason']), 60)})"
    if term.get("message"):  # what the container itself said (its termination message)
        text += f": {_clip(str(term['message']), 200)}"
    return text


# Rank of each reason; lower is worse.
_RANK = {
    REASON_CRASH_LOOP: 1,
    _REASON_IMAGE_PULL_BACK_OFF: 2,
    REASON_FAILED_SCHEDULING: 3,
    REASON_PODS_PENDING: 4,
    REASON_PODS_STARTING: 5,
}
_WORST = 0


def _classify(pod: Mapping[str, Any]) -> tuple[str, str]:
    """Reason and message for one live, not-ready pod."""
    name = _name(pod)
    problem = pod_problem(pod, what=WHAT, container=CONTAINER)
    if problem is not None:
        return problem
    for cs in _statuses(pod):
        waiting = _waiting(cs)
        if waiting is None:
            continue
        reason = str(waiting.get("reason") or "")
        container = str(cs.get("name") or CONTAINER)
        if reason == "CrashLoopBackOff":
            restarts = cs.get("restartCount", 0)
            return (
                REASON_CRASH_LOOP,
                f"container {container} in pod {name} keeps crashing (restarts {restarts}): "
                f"{_last_termination(cs)}",
            )
        if reason in _CREATE_FAILURES:
            detail = _clip(str(waiting.get("message") or reason))
            return REASON_POD_FAILED, f"container {container} in pod {name} cannot start ({reason}): {detail}"

    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        message = _clip(str(scheduled.get("message") or "no node fits the pod"))
        if scheduled.get("reason") == "Unschedulable":
            return REASON_FAILED_SCHEDULING, f"pod {name} cannot be scheduled: {message}"
        return REASON_PODS_PENDING, f"pod {name} is waiting for a node: {message}"
    if not _map(pod.get("spec")).get("nodeName") and _map(pod.get("status")).get("phase") in (
        None,
        "Pending",
    ):
        return REASON_PODS_PENDING, f"pod {name} is waiting for a node"

    for cs in _statuses(pod):
        waiting = _waiting(cs)
        if waiting is not None:
            reason = _clip(str(waiting.get("reason") or "waiting"), 60)
            return (
                REASON_PODS_STARTING,
                f"pod {name}: container {cs.get('name', CONTAINER)} is starting ({reason})",
            )
    if _map(pod.get("status")).get("phase") == "Running":
        return REASON_PODS_STARTING, f"pod {name}: running, not ready yet"
    return REASON_PODS_STARTING, f"pod {name} is starting"


def _ended_message(pod: Mapping[str, Any]) -> str:
    status = _map(pod.get("status"))
    detail = ": ".join(_clip(str(status[k])) for k in ("reason", "message") if status.get(k))
    text = f"no running predictor pods; pod {_name(pod)} ended ({status.get('phase')}"
    return f"{text}, {detail})" if detail else f"{text})"


def _refused(deployment: Mapping[str, Any] | None) -> str | None:
    """The API server's refusal of a Deployment's pods (its ``ReplicaFailure=True`` condition,
    which the Deployment controller copies from the ReplicaSet's), or ``None``."""
    failure = _condition(_map(deployment), "ReplicaFailure")
    if failure is None or str(failure.get("status")) != "True":
        return None
    return str(failure.get("message") or failure.get("reason") or "pods cannot be created")


def pods_health(
    pods: Sequence[Mapping[str, Any]], *, expected: int, deployment: Mapping[str, Any] | None = None
) -> Health:
    """The ``InferenceServicePodsReady`` condition for the predictor ``pods`` of one
    InferenceService, ``expected`` of which should be ready, and its predictor ``deployment``
    when known (rules in the module docstring)."""
    expected = max(expected, 1)
    present = _newest_first([p for p in pods if not _deleting(p)])
    live = [p for p in present if not _ended(p)]
    if not live:
        refusal = _refused(deployment)
        if refusal is not None:
            return Health(
                False, REASON_PODS_NOT_CREATED, _clip(f"the predictor's pods are refused: {refusal}")
            )
        if present:
            return Health(False, REASON_PODS_PENDING, _ended_message(present[0]))
        return Health(False, REASON_WAITING_FOR_PODS, "no predictor pods yet")

    ready = sum(1 for p in live if _ready(p))
    if ready >= expected:
        return Health(True, REASON_PODS_READY, f"{ready}/{expected} pods ready")

    worst: tuple[int, str, str] | None = None
    for pod in live:
        if _ready(pod):
            continue
        reason, message = _classify(pod)
        rank = _RANK.get(reason, _WORST)
        if worst is None or rank < worst[0]:
            worst = (rank, reason, message)
    progress = f"{ready} of {expected} pods ready"
    if worst is None:  # every live pod is ready, just not enough of them yet
        return Health(False, REASON_PODS_STARTING, progress)
    _, reason, message = worst
    if reason == REASON_PODS_STARTING:
        return Health(False, reason, f"{progress}; {message}")
    return Health(False, reason, message)
