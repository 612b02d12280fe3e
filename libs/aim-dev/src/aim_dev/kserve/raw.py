"""What KServe's controller makes of an InferenceService in RawDeployment mode, as pure functions
(the stand-in's I/O is :mod:`aim_dev.kserve.controller`; docs/node.md lists what is and is not
emulated).

KServe cannot be built here, and the operator's readiness logic (``aim_deployer.readiness``) reads
what KServe writes: the InferenceService's ``Ready`` condition and ``status.url``, its
``modelStatus``, and the predictor pods found by the ``serving.kserve.io/inferenceservice`` label.
These functions follow KServe's raw reconcilers (``predictor.go``, ``deployment_reconciler.go``,
``service_reconciler.go``, ``inference_service_status.go``):

- :func:`deployment`: ``<isvc>-predictor``, labels = the InferenceService's labels, the predictor's
  ``labels``, ``serving.kserve.io/inferenceservice=<isvc>`` and ``component=predictor`` (pods get
  those plus ``app=isvc.<isvc>-predictor``, the selector); annotations = the InferenceService's and
  the predictor's; the pod spec is the predictor's pod fields with KServe's defaults (a TCP
  readiness probe on the first port of ``kserve-container`` when it has none, ``IfNotPresent``);
  replicas = ``minReplicas`` (default 1, 0 allowed) when it is created; rewritten with every
  ``autoscalerClass`` but ``none``, it keeps the live Deployment's replicas (the scaler's number),
  as KServe's update patch leaves ``replicas`` out; the predictor's ``deploymentStrategy`` or
  rolling 25 %/25 %; owned by the InferenceService.
- :func:`scaler`: with ``autoscalerClass: keda``, the HPA KEDA would make
  (``keda-hpa-<isvc>-predictor``), so the HPA controller bounds the predictor as it would; with
  ``external`` KServe makes no autoscaler (the ScaledObject is someone else's:
  :mod:`aim_dev.keda` plays KEDA for it);
- :func:`service`: ``<isvc>-predictor`` selecting ``app=isvc.<isvc>-predictor``, port 80 to the first
  container port (named as it is), the other ports as they are.
- :func:`status`: ``PredictorReady`` from the Deployment's ``Available``/``Progressing``/
  ``ReplicaFailure`` conditions, ``IngressReady=True`` (ingress creation disabled, as with an
  HTTPRoute of one's own), ``Ready`` when both are; ``url`` (``http://<isvc>-<namespace>.<domain>``),
  ``address.url`` (the predictor Service's cluster name), ``components.predictor``,
  ``deploymentMode: RawDeployment``, and ``modelStatus`` from the pods (``Pending`` without pods,
  ``Loaded``/``UpToDate`` when Ready, ``FailedToLoad``/``BlockedByFailedLoad`` with
  ``lastFailureInfo`` when ``kserve-container`` crash-loops or terminated with an error, else
  ``Pending``/``InProgress``).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aimcore.api.types import Obj

ISVC_LABEL = "serving.kserve.io/inferenceservice"
COMPONENT_LABEL = "component"
APP_LABEL = "app"
DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
AUTOSCALER_CLASS_ANNOTATION = "serving.kserve.io/autoscalerClass"
RAW_MODES = ("RawDeployment", "Standard")
CONTAINER = "kserve-container"
SPEC_HASH_ANNOTATION = "aim.eai.amd.com/kserve-standin-spec"
"""On the children only: the hash of what the stand-in last wrote (its own mark, not KServe's)."""
DEFAULT_DOMAIN = "example.com"

# The predictor's fields that are not pod fields (ComponentExtensionSpec and the model forms).
_EXTENSION_FIELDS = frozenset(
    {
        "minReplicas",
        "maxReplicas",
        "scaleTarget",
        "scaleMetric",
        "scaleMetricType",
        "autoScaling",
        "containerConcurrency",
        "timeout",
        "canaryTrafficPercent",
        "logger",
        "batcher",
        "labels",
        "annotations",
        "deploymentStrategy",
        "workerSpec",
        "storageUri",
        "storage",
        "storageUris",
        "model",
        "name",
    }
)
_MODEL_FORMS = frozenset(
    {
        "model",
        "sklearn",
        "xgboost",
        "tensorflow",
        "pytorch",
        "triton",
        "onnx",
        "huggingface",
        "pmml",
        "lightgbm",
        "paddle",
    }
)


class Unsupported(ValueError):
    """An InferenceService this stand-in does not emulate (its message says why)."""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def predictor_name(isvc_name: str) -> str:
    return f"{isvc_name}-predictor"


def raw_mode(isvc: Mapping[str, Any]) -> bool:
    mode = _map(_map(isvc.get("metadata")).get("annotations")).get(DEPLOYMENT_MODE_ANNOTATION)
    return mode in RAW_MODES


def _predictor(isvc: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_map(isvc.get("spec")).get("predictor"))


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _map(value).items()}


def labels(isvc: Mapping[str, Any]) -> dict[str, str]:
    meta = _map(isvc.get("metadata"))
    out = _strings(meta.get("labels"))
    out.update(_strings(_predictor(isvc).get("labels")))
    out[ISVC_LABEL] = str(meta["name"])
    out[COMPONENT_LABEL] = "predictor"
    return dict(sorted(out.items()))


def child_annotations(isvc: Mapping[str, Any]) -> dict[str, str]:
    out = _strings(_map(isvc.get("metadata")).get("annotations"))
    out.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    out.update(_strings(_predictor(isvc).get("annotations")))
    return dict(sorted(out.items()))


def _app(isvc_name: str) -> str:
    return f"isvc.{predictor_name(isvc_name)}"


def pod_spec(isvc: Mapping[str, Any]) -> Obj:
    """The predictor's pod fields with KServe's defaults; :class:`Unsupported` for the model forms
    (a ServingRuntime would supply the container)."""
    predictor = _predictor(isvc)
    forms = sorted(_MODEL_FORMS & set(predictor))
    if forms:
        raise Unsupported(
            f"predictor.{forms[0]} needs a ServingRuntime, which the KServe stand-in does not "
            "emulate; give the predictor its containers"
        )
    spec = {k: copy.deepcopy(v) for k, v in predictor.items() if k not in _EXTENSION_FIELDS}
    containers = spec.get("containers") or []
    if not containers:
        raise Unsupported("predictor has no containers")
    for c in containers:
        c.setdefault("imagePullPolicy", "IfNotPresent")
        if c.get("name") in (CONTAINER, "transformer-container") and "readinessProbe" not in c:
            ports = c.get("ports") or []
            port = ports[0].get("containerPort", 8080) if ports else 8080
            c["readinessProbe"] = {
                "tcpSocket": {"port": port},
                "timeoutSeconds": 1,
                "periodSeconds": 10,
                "successThreshold": 1,
                "failureThreshold": 3,
            }
    return spec


def owner_reference(isvc: Mapping[str, Any]) -> Obj:
    meta = _map(isvc.get("metadata"))
    return {
        "apiVersion": str(isvc.get("apiVersion") or "serving.kserve.io/v1beta1"),
        "kind": "InferenceService",
        "name": str(meta["name"]),
        "uid": str(meta["uid"]),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_meta(isvc: Mapping[str, Any], name: str) -> Obj:
    """A child's metadata: ``name`` in the InferenceService's namespace, its labels and
    annotations, owned by it."""
    return {
        "name": name,
        "namespace": str(_map(isvc.get("metadata"))["namespace"]),
        "labels": labels(isvc),
        "annotations": child_annotations(isvc),
        "ownerReferences": [owner_reference(isvc)],
    }


def _hash(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def _with_hash(body: Obj) -> Obj:
    body["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = _hash(body)
    return body


def spec_hash(child: Mapping[str, Any] | None) -> str | None:
    return _map(_map(_map(child).get("metadata")).get("annotations")).get(SPEC_HASH_ANNOTATION)


def replicas(isvc: Mapping[str, Any]) -> int:
    value = _predictor(isvc).get("minReplicas")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 1


def autoscaler_class(isvc: Mapping[str, Any]) -> str | None:
    value = _map(_map(isvc.get("metadata")).get("annotations")).get(AUTOSCALER_CLASS_ANNOTATION)
    return None if value is None else str(value)


def scaler_owns_replicas(isvc: Mapping[str, Any]) -> bool:
    """Whether a scaler, not KServe, owns the predictor Deployment's replicas once it exists: every
    ``autoscalerClass`` but ``none`` (KServe's deployment reconciler drops ``replicas`` from its
    update patch unless the class is ``none``)."""
    return autoscaler_class(isvc) != "none"


def deployment(isvc: Mapping[str, Any], live: Mapping[str, Any] | None = None) -> Obj:
    """The predictor Deployment. Its hash (:func:`spec_hash`) says what the InferenceService asks
    for, so a scaler's change of the live replicas never makes it differ. With ``live`` (the
    Deployment as last read) and a scaler owning the replicas (:func:`scaler_owns_replicas`), the
    body carries the live replicas instead of ``minReplicas``, and the live ``resourceVersion`` so
    the write fails (409) rather than undo a scaler's change made since the read."""
    body = _deployment(isvc)
    live_replicas = _map(_map(live).get("spec")).get("replicas")
    if live is not None and scaler_owns_replicas(isvc) and isinstance(live_replicas, int):
        body["spec"]["replicas"] = live_replicas
        version = _map(live.get("metadata")).get("resourceVersion")
        if version:
            body["metadata"]["resourceVersion"] = str(version)
    return body


def _deployment(isvc: Mapping[str, Any]) -> Obj:
    meta = _map(isvc.get("metadata"))
    name = str(meta["name"])
    pod_labels = {**labels(isvc), APP_LABEL: _app(name)}
    strategy = copy.deepcopy(dict(_map(_predictor(isvc).get("deploymentStrategy")))) or {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    return _with_hash(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": child_meta(isvc, predictor_name(name)),
            "spec": {
                "replicas": replicas(isvc),
                "selector": {"matchLabels": {APP_LABEL: _app(name)}},
                "strategy": strategy,
                "template": {
                    "metadata": {
                        "labels": dict(sorted(pod_labels.items())),
                        "annotations": child_annotations(isvc),
                    },
                    "spec": pod_spec(isvc),
                },
            },
        }
    )


def service(isvc: Mapping[str, Any]) -> Obj:
    meta = _map(isvc.get("metadata"))
    name = str(meta["name"])
    containers = _predictor(isvc).get("containers") or []
    ports: list[Obj] = []
    container_ports = list(_map(containers[0]).get("ports") or []) if containers else []
    if container_ports:
        first = container_ports[0]
        ports.append(
            {
                "name": first.get("name") or predictor_name(name),
                "port": 80,
                "targetPort": first["containerPort"],
                "protocol": first.get("protocol") or "TCP",
            }
        )
        for p in container_ports[1:]:
            entry = {"port": p["containerPort"], "targetPort": p["containerPort"]}
            entry["protocol"] = p.get("protocol") or "TCP"
            if p.get("name"):
                entry["name"] = p["name"]
            ports.append(entry)
    else:
        ports.append({"name": predictor_name(name), "port": 80, "targetPort": 8080, "protocol": "TCP"})
    return _with_hash(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": child_meta(isvc, predictor_name(name)),
            "spec": {"selector": {APP_LABEL: _app(name)}, "ports": ports},
        }
    )


def scaler_name(isvc_name: str) -> str:
    """The HPA KEDA makes for the ScaledObject KServe creates for the predictor."""
    return f"keda-hpa-{predictor_name(isvc_name)}"


def scaler(isvc: Mapping[str, Any]) -> Obj | None:
    """With ``autoscalerClass: keda``, the HPA KEDA would end up with (KServe's ScaledObject and
    KEDA's controller in one step): ``keda-hpa-<isvc>-predictor`` over the predictor Deployment with
    the predictor's bounds and labels. autoscaling/v1 with a CPU target: the metrics KEDA would feed
    it (OpenTelemetry) do not exist here, so the HPA controller acts on the bounds only. ``None``
    for any other class (with ``external`` KServe leaves the scaler to whoever wrote the
    ScaledObject)."""
    meta = _map(isvc.get("metadata"))
    if autoscaler_class(isvc) != "keda":
        return None
    name = str(meta["name"])
    predictor = _predictor(isvc)
    low = max(replicas(isvc), 1)
    high = predictor.get("maxReplicas")
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": predictor_name(name)}
    return _with_hash(
        {
            "apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler",
            "metadata": child_meta(isvc, scaler_name(name)),
            "spec": {
                "scaleTargetRef": target,
                "minReplicas": low,
                "maxReplicas": high if isinstance(high, int) and high >= low else low,
                "targetCPUUtilizationPercentage": 80,
            },
        }
    )


# -- status ----------------------------------------------------------------------------------------


def _condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in _map(obj.get("status")).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == type_:
            return c
    return None


def predictor_ready(deploy: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """``(status, reason, message)`` of ``PredictorReady`` from the Deployment's conditions, as
    KServe's ``PropagateRawStatus`` reads them."""
    if not deploy:
        return "Unknown", "DeploymentNotCreated", "the predictor Deployment does not exist yet"
    result = ("False", "", "")
    available = _condition(deploy, "Available")
    if available is not None and available.get("status") == "True":
        result = ("True", str(available.get("reason") or ""), str(available.get("message") or ""))
    progressing = _condition(deploy, "Progressing")
    if progressing is not None:
        reason = str(progressing.get("reason") or "")
        message = str(progressing.get("message") or "")
        if progressing.get("status") == "False":
            if message:
                result = ("False", reason, message)
        elif progressing.get("status") == "True":
            result = (
                ("True", reason, message)
                if reason == "NewReplicaSetAvailable"
                else ("Unknown", reason, message)
            )
    if available is not None and available.get("status") == "False":
        result = ("False", str(available.get("reason") or ""), str(available.get("message") or ""))
    failure = _condition(deploy, "ReplicaFailure")
    if failure is not None and failure.get("status") == "True":
        result = ("False", str(failure.get("reason") or ""), str(failure.get("message") or ""))
    return result


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    ready = _condition(pod, "Ready")
    return (
        _map(pod.get("status")).get("phase") == "Running"
        and ready is not None
        and ready.get("status") == "True"
    )


def _failure(cs: Mapping[str, Any]) -> Obj | None:
    """KServe's ``lastFailureInfo`` for a container that errored or crash-loops, else ``None``."""
    state = _map(cs.get("state"))
    terminated = _map(state.get("terminated"))
    if terminated and terminated.get("reason") == "Error":
        return _info(terminated)
    waiting = _map(state.get("waiting"))
    if waiting.get("reason") == "CrashLoopBackOff":
        return _info(_map(_map(cs.get("lastState")).get("terminated")))
    return None


def _info(terminated: Mapping[str, Any]) -> Obj:
    info: Obj = {"reason": "ModelLoadFailed"}
    if terminated.get("message"):
        info["message"] = str(terminated["message"])
    if terminated.get("exitCode"):
        info["exitCode"] = int(terminated["exitCode"])
    return info


def model_status(ready: bool, pods: Sequence[Mapping[str, Any]], previous: Mapping[str, Any]) -> Obj:
    """``modelStatus`` as KServe's ``PropagateModelStatus`` writes it (raw mode, no storage
    initializer): the first pod's ``kserve-container`` decides a failure."""
    states = dict(_map(previous.get("states")))
    out: Obj = {"copies": {"failedCopies": 0, "totalCopies": sum(1 for p in pods if _pod_ready(p))}}
    if previous.get("lastFailureInfo"):
        out["lastFailureInfo"] = copy.deepcopy(dict(previous["lastFailureInfo"]))

    def target(state: str, transition: str) -> Obj:
        states["targetModelState"] = state
        states.setdefault("activeModelState", "")
        if state == "Loaded":
            states["activeModelState"] = "Loaded"
        out["states"] = states
        out["transitionStatus"] = transition
        return out

    if not pods:
        return target("Pending", "InProgress")
    if ready:
        return target("Loaded", "UpToDate")
    for cs in _map(pods[0].get("status")).get("containerStatuses") or []:
        if isinstance(cs, Mapping) and cs.get("name") == CONTAINER:
            info = _failure(cs)
            if info is not None:
                out["lastFailureInfo"] = info
                return target("FailedToLoad", "BlockedByFailedLoad")
            return target("Pending", "InProgress")
    return target(
        states.get("targetModelState") or "Pending", str(previous.get("transitionStatus") or "InProgress")
    )


def _merge_condition(previous: Sequence[Mapping[str, Any]], new: Obj, now: str) -> Obj:
    for c in previous:
        if c.get("type") == new["type"] and c.get("status") == new["status"] and c.get("lastTransitionTime"):
            new["lastTransitionTime"] = c["lastTransitionTime"]
            return new
    new["lastTransitionTime"] = now
    return new


def status(
    isvc: Mapping[str, Any],
    deploy: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    *,
    now: str,
    domain: str = DEFAULT_DOMAIN,
) -> Obj:
    """The InferenceService's status for its Deployment and predictor pods (see the module
    docstring). ``now`` stamps conditions whose status changed."""
    meta = _map(isvc.get("metadata"))
    name, namespace = str(meta["name"]), str(meta["namespace"])
    previous = _map(isvc.get("status"))
    old_conditions = [c for c in previous.get("conditions") or [] if isinstance(c, Mapping)]
    pred_status, pred_reason, pred_message = predictor_ready(deploy)
    predictor: Obj = {"type": "PredictorReady", "status": pred_status, "severity": "Info"}
    if pred_status != "True":
        predictor.update({k: v for k, v in (("reason", pred_reason), ("message", pred_message)) if v})
    ingress: Obj = {"type": "IngressReady", "status": "True", "severity": "Info"}
    if pred_status == "True":
        ready: Obj = {"type": "Ready", "status": "True", "severity": "Info"}
    else:
        ready = {"type": "Ready", "status": pred_status, "severity": "Info"}
        ready.update({k: v for k, v in (("reason", pred_reason), ("message", pred_message)) if v})
    conditions = [
        _merge_condition(old_conditions, c, now)
        for c in sorted((ingress, predictor, ready), key=lambda c: c["type"])
    ]
    component: Obj = {}
    if pred_status == "True":
        component["url"] = f"http://{predictor_name(name)}-{namespace}.{domain}"
    out: Obj = {
        "conditions": conditions,
        "url": f"http://{name}-{namespace}.{domain}",
        "address": {"url": f"http://{predictor_name(name)}.{namespace}.svc.cluster.local"},
        "components": {"predictor": component},
        "modelStatus": model_status(pred_status == "True", pods, _map(previous.get("modelStatus"))),
        "deploymentMode": "RawDeployment",
    }
    if deploy is not None:
        out["observedGeneration"] = int(_map(deploy.get("status")).get("observedGeneration") or 0)
    return out


def unsupported_status(isvc: Mapping[str, Any], message: str, *, now: str) -> Obj:
    """``PredictorReady=False/ReconcileFailed`` (and ``Ready``) with ``message``: what KServe
    writes when its reconcile of the predictor fails."""
    previous = [c for c in _map(isvc.get("status")).get("conditions") or [] if isinstance(c, Mapping)]
    conditions = [
        _merge_condition(
            previous, {"type": t, "status": "False", "reason": "ReconcileFailed", "message": message}, now
        )
        for t in ("PredictorReady", "Ready")
    ]
    return {"conditions": conditions, "deploymentMode": "RawDeployment"}
