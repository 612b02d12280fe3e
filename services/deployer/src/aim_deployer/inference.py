"""The KServe ``InferenceService`` an AIMService becomes, as a pure function of what the deployer
resolved (service, model, template, runtime config, caches), so the controller can build it, compare
it with the live object and apply it without any of that logic touching I/O.

Why one module: the original (``internal/aimservice/kserve.go``,
docs/original.md#the-inferenceservice) spreads the env merge, resource resolution,
replica/autoscaling mode, labels and pod extras over several files; each is a rule users depend on,
so each is a small named function here (:func:`container_env`, :func:`container_resources`,
:func:`autoscaling`, :func:`build`).

Rules and where they differ from the original:

* **Env** (lowest → highest, merged *by name* with :func:`aimcore.domain.runtimeconfig.merge_env`, so
  ``AIM_ENGINE_ARGS`` JSON objects deep-merge; :func:`env_layers`): operator defaults
  (``AIM_CACHE_PATH``, ``VLLM_ENABLE_METRICS``) < merged runtime-config env < the template's
  profile selection (``AIM_PROFILE_ID``, ``AIM_METRIC``, ``AIM_PRECISION``; metric/precision from
  the template spec, and under the seeds' behaviour else its discovered ``status.profile.metadata``)
  < template ``spec.env`` < ``AIM_MODEL_ID`` for custom models (first ``modelSources`` entry of the
  template spec, else the model spec) < service ``spec.env``; sorted by name. That is the released
  original's order; under the seeds' behaviour the runtime config's env sits above the template's
  (the seeds' API reference: Service > RuntimeConfig > Template > Profile). The original *appended*
  the profile variables and ``AIM_MODEL_ID``, producing duplicate names; here every name appears
  once.
* **Resources** (docs/specification.md#resource-resolution): the GPU count is the template's
  ``status.resolvedHardware.gpu.requests`` (discovery's answer, even 0), else
  ``status.profile.metadata.gpuCount`` (``gpu_count`` accepted), else the spec (``gpu.requests``,
  the released spelling ``hardware.gpu.requests``, legacy ``gpuSelector.count``), else 0. Defaults
  for n GPUs: requests ``cpu=4n``, ``memory=32n Gi``; limits ``memory=48n Gi``; no CPU limit. Then
  model < template < service ``spec.resources`` override per resource name (requests and limits
  separately; a template's ``hardware.cpu`` counts as its ``resources`` CPU, and a service's
  ``overrides.hardware.cpu`` as the service's where its ``resources`` give no CPU). The GPU
  resource is filled in last: a GPU quantity set on only one side is mirrored to the other
  (Kubernetes requires request == limit for extended resources), and when neither side sets it and
  n > 0 both become n. Integer quantities are written as strings (what the API server returns).
* **Replicas**: autoscaling mode when any of ``autoScaling``/``minReplicas``/``maxReplicas`` is set
  (KEDA: ``autoscalerClass=keda`` plus the OpenTelemetry sidecar and Prometheus port annotations,
  ``predictor.autoScaling`` converted from the service's metrics with the seed's defaults;
  ``minReplicas`` defaults to 1, ``maxReplicas`` to the minimum; a minimum above the maximum is
  refused by the spec's validation, not adjusted here); ``autoscalerClass=external`` instead when
  the operator writes the ScaledObject itself (:func:`owns_scaler`: scale to zero, or metrics under
  ``released``); else ``replicas`` (default 1, at least 1) fixed, ``autoscalerClass=none``.
* **Pull policy**: written out (:func:`aimcore.api.imageref.pull_policy`, the released original's
  0.2.5 rule and Kubernetes' default): ``Always`` for an untagged or ``:latest`` image,
  ``IfNotPresent`` for any other tag or a digest. The operator's Jobs follow the same rule.
* **Priority**: ``spec.priorityClassName`` on the predictor only (the released original's 0.2.2);
  the operator's Jobs keep the default priority.
* **Annotations**: the service's own annotations whose keys match the deployer's
  ``AIM_PROPAGATE_ANNOTATIONS`` globs (:func:`propagated_annotations`; none by default), never a
  key of :data:`RESERVED_ANNOTATION_PREFIXES` (the operator's, KServe's, kubectl's, the autoscaling
  sidecars'); the operator's own annotations always win.
* **Labels**: propagated labels < the service's ``aim.eai.amd.com/`` labels < ours (component,
  managed-by, part-of, service/template/model, metric/precision when known) — ours always win.
* **Readiness** (not in the original): ``kserve-container`` gets an HTTP readiness probe on
  ``/health`` of its ``http`` port (every 2 s), which AIM containers answer with 200 only once the
  model is loaded (vLLM and llama.cpp alike). Without it KServe's default is a TCP probe, and a
  server that listens while it loads (llama.cpp does) would be Ready, and the service ``Running``,
  before it can answer. Readiness only: no liveness or startup probe, so a long load is never
  killed; a model that fails to load exits, which is the crash the pods condition reports.

Output is deterministic: same inputs, equal dicts (caches are ordered by mount path, env by name).
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aim_deployer.service_view import AnyServiceSpec, ServiceView
from aimcore.api.behaviour import Behaviour
from aimcore.api.crds.aim import (
    AIMModelSource,
    AIMServiceMetricsSpec,
    AIMServiceMetricTarget,
    AIMServicePodMetric,
)
from aimcore.api.crds.base import EnvVar
from aimcore.api.errors import AimError
from aimcore.api.imageref import pull_policy
from aimcore.api.kinds import GROUP_AIM, INFERENCE_SERVICE, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.base import written
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template
from aimcore.domain.gpu import GPU_RESOURCE, parse_quantity
from aimcore.domain.naming import derived_name, label_value, sanitize_part
from aimcore.domain.runtimeconfig import AIM_LABEL_PREFIX, merge_env
from aimcore.runtime import child_labels, owner_reference

__all__ = [
    "AUTOSCALER_CLASS_ANNOTATION",
    "CONTAINER_NAME",
    "DEFAULT_OTEL_SERVER",
    "DEPLOYMENT_MODE_ANNOTATION",
    "CacheMount",
    "Inputs",
    "NameTooLong",
    "autoscaling",
    "build",
    "container_env",
    "container_resources",
    "env_layers",
    "gpu_count",
    "gpus",
    "isvc_name",
    "node_affinity",
    "owns_scaler",
    "predictor_autoscaling",
    "predictor_name",
    "profile_env",
    "propagated_annotations",
    "replica_bounds",
    "route_name",
    "scales",
]


CONTAINER_NAME = "kserve-container"
HTTP_PORT = 8000
HEALTH_PATH = "/health"
READINESS_PROBE: Obj = {
    "httpGet": {"path": HEALTH_PATH, "port": "http"},
    "periodSeconds": 2,
    "timeoutSeconds": 1,
    "failureThreshold": 3,
}
"""Ready means loaded: AIM containers answer ``/health`` with 200 once the weights are loaded."""
CACHE_ROOT = "/workspace/model-cache"
SHM_VOLUME = "dshm"
SHM_SIZE = "8Gi"
MANAGED_BY_VALUE = "aim-engine"

DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
AUTOSCALER_CLASS_ANNOTATION = "serving.kserve.io/autoscalerClass"
OTEL_INJECT_ANNOTATION = "sidecar.opentelemetry.io/inject"
PROMETHEUS_PORT_ANNOTATION = "prometheus.kserve.io/port"
AUTOSCALER_NONE = "none"
AUTOSCALER_KEDA = "keda"
AUTOSCALER_EXTERNAL = "external"  # the operator's own ScaledObject drives the predictor

COMPONENT_LABEL = "app.kubernetes.io/component"
SERVICE_LABEL = "aim.eai.amd.com/service"
TEMPLATE_LABEL = "aim.eai.amd.com/template"
MODEL_LABEL = "aim.eai.amd.com/model"
METRIC_LABEL = "aim.eai.amd.com/metric"
PRECISION_LABEL = "aim.eai.amd.com/precision"

DEFAULT_OTEL_SERVER = "keda-otel-scaler.keda.svc:4317"
DEFAULT_METRIC_BACKEND = "opentelemetry"
DEFAULT_OPERATION_OVER_TIME = "last_one"

_PREDICTOR_SUFFIX = "-predictor-"
_MIN_ISVC_NAME = 10
_CPU_PER_GPU = 4
_MEMORY_GI_PER_GPU = 32
_MEMORY_LIMIT_GI_PER_GPU = 48


class NameTooLong(AimError, ValueError):
    """The namespace is too long to leave room for a usable InferenceService name."""

    reason = "InvalidSpec"
    transient = False


def isvc_name(service: str, namespace: str) -> str:
    """The InferenceService name for AIMService ``service`` in ``namespace``
    (docs/original.md#derived-names):
    ``<service>-<hash8 of namespace>``, shortened so KServe's ``<isvc>-predictor-<ns>`` host label
    stays within 63 characters. Raises :class:`NameTooLong` when that leaves fewer than 10."""
    max_length = 63 - len(_PREDICTOR_SUFFIX) - len(namespace)
    if max_length < _MIN_ISVC_NAME:
        raise NameTooLong(
            f"namespace {namespace!r} is too long ({len(namespace)} characters) for an InferenceService: "
            f"'<name>{_PREDICTOR_SUFFIX}{namespace}' must fit in 63 characters, leaving {max_length} "
            f"for the name (at least {_MIN_ISVC_NAME} needed); use a namespace of at most "
            f"{63 - len(_PREDICTOR_SUFFIX) - _MIN_ISVC_NAME} characters"
        )
    return derived_name([service], [namespace], max_length=max_length)


def predictor_name(isvc: str) -> str:
    """KServe's predictor component (Deployment, HPA target) of InferenceService ``isvc``."""
    return f"{isvc}-predictor"


def route_name(service: str, namespace: str) -> str:
    """The HTTPRoute name for AIMService ``service`` in ``namespace``."""
    return derived_name([service], [namespace])


@dataclass(frozen=True)
class CacheMount:
    """A model cache PVC the inference container mounts."""

    name: str
    """Model cache name; sanitised into the volume name (≤ 63)."""
    claim: str
    """The PersistentVolumeClaim's name."""
    mount_path: str
    """Where it is mounted, e.g. ``/workspace/model-cache/meta-llama/Llama-3-8B``."""
    sub_path: str = ""
    """The directory of the claim mounted (an imported ``pvc://CLAIM/PATH`` cache's PATH)."""
    read_only: bool = False
    """Mounted read-only (an imported cache: the operator never writes a claim it did not make)."""


@dataclass(frozen=True)
class Inputs:
    """Everything :func:`build` needs, already resolved by the controller."""

    service: ServiceView
    model: Model
    template: Template
    config_env: list[Obj]  # the runtime config's env, as written
    propagated_labels: dict[str, str]
    caches: tuple[CacheMount, ...] = ()
    deployment_mode: str = "RawDeployment"
    node_affinity: Obj | None = None  # the GPU's, when the template status has none of its own
    behaviour: Behaviour = Behaviour.SEEDS  # which generation's env order (:func:`env_layers`)
    cache_root: str = CACHE_ROOT  # AIM_CACHE_PATH (the released original's: /workspace/cache)
    annotation_globs: tuple[str, ...] = ()  # AIM_PROPAGATE_ANNOTATIONS


# -- small readers -------------------------------------------------------------------------------


def _env_list(entries: Sequence[EnvVar] | Sequence[Obj]) -> list[Obj]:
    """Env entries as written (copies; entries without a name left out)."""
    out = [written(e) if isinstance(e, EnvVar) else copy.deepcopy(dict(e)) for e in entries]
    return [e for e in out if e.get("name")]


def _count(value: Any) -> int | None:
    """A GPU count from an int or a quantity string; ``None`` when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, str):
        try:
            return max(parse_quantity(value), 0)
        except ValueError:
            return None
    return None


def _template_setting(template: Template, key: str) -> str | None:
    """``metric`` / ``precision`` of a template: its spec, else the discovered profile."""
    profile = template.profile
    for value in (getattr(template, key), getattr(profile, key)):
        if value:
            return str(value)
    return None


def _first_model_id(sources: Sequence[AIMModelSource]) -> str | None:
    return (sources[0].model_id or None) if sources else None


# -- env -----------------------------------------------------------------------------------------


def profile_env(template: Template, behaviour: Behaviour) -> list[Obj]:
    """``AIM_PROFILE_ID``, ``AIM_METRIC``, ``AIM_PRECISION``: the profile the template selects. The
    id is its ``spec.profileId``; metric and precision its spec's (the released original), else,
    under the seeds' behaviour, the discovered profile's."""
    out: list[Obj] = []
    if template.profile_id:
        out.append({"name": "AIM_PROFILE_ID", "value": template.profile_id})
    for var, key in (("AIM_METRIC", "metric"), ("AIM_PRECISION", "precision")):
        value = getattr(template, key) if behaviour.released else _template_setting(template, key)
        if value:
            out.append({"name": var, "value": str(value)})
    return out


def env_layers(
    *,
    config: list[Obj],
    profile: list[Obj],
    template: list[Obj],
    model_id: str | None,
    service: list[Obj],
    behaviour: Behaviour,
    cache_root: str = CACHE_ROOT,
) -> list[Obj]:
    """The env layers merged by name, lowest first, sorted by name. Released (and the original's
    code): operator defaults < runtime config < profile < template ``spec.env`` < ``AIM_MODEL_ID`` <
    service; the seeds (the API reference: "Service.Env > RuntimeConfig.Env > Template.Env >
    Profile.Env"): defaults < profile < template < runtime config < ``AIM_MODEL_ID`` < service."""
    defaults: list[Obj] = [
        {"name": "AIM_CACHE_PATH", "value": cache_root},
        {"name": "VLLM_ENABLE_METRICS", "value": "true"},
    ]
    middle = [config, profile, template] if behaviour.released else [profile, template, config]
    model = [{"name": "AIM_MODEL_ID", "value": model_id}] if model_id else []
    env: list[Any] = []
    for layer in (defaults, *middle, model, service):
        env = merge_env(env, layer)
    return sorted((dict(e) for e in env), key=lambda e: str(e.get("name")))


def container_env(inputs: Inputs) -> list[Obj]:
    """The inference container's env (:func:`env_layers`), sorted by name."""
    template = inputs.template
    model_id = _first_model_id(template.model_sources) or _first_model_id(inputs.model.model_sources)
    return env_layers(
        config=_env_list(inputs.config_env),
        profile=profile_env(template, inputs.behaviour),
        template=_env_list(template.env),
        model_id=model_id,
        service=_env_list(inputs.service.env),
        behaviour=inputs.behaviour,
        cache_root=inputs.cache_root,
    )


# -- resources -----------------------------------------------------------------------------------


def gpus(template: Template) -> int:
    """GPUs per replica: discovery's resolved hardware, else the profile, else the spec, else 0."""
    for value in (template.resolved_gpu_requests, template.profile.gpu_count, template.gpu.requests):
        count = _count(value)
        if count is not None:
            return count
    return 0


def gpu_count(kind: KindRef, template: Obj) -> int:
    """:func:`gpus` of a template as stored."""
    return gpus(Template(kind, template))


def _quantity(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return str(value)
    return copy.deepcopy(value)


def _overlay(target: dict[str, Obj], resources: Obj | None) -> None:
    """``resources``' requests and limits written over ``target``, per resource name."""
    for side in ("requests", "limits"):
        values = (resources or {}).get(side) or {}
        for name, value in values.items():
            if value is not None:
                target[side][str(name)] = _quantity(value)


def container_resources(inputs: Inputs) -> Obj:
    """The inference container's ``resources`` (see the module docstring): GPU-scaled defaults,
    then model < template < service ``spec.resources``, then the GPU quantities filled in."""
    template = inputs.template
    n = gpus(template)
    gpu = template.gpu.resource_name or GPU_RESOURCE
    merged: dict[str, Obj] = {"requests": {}, "limits": {}}
    if n > 0:
        merged["requests"].update({"cpu": str(_CPU_PER_GPU * n), "memory": f"{_MEMORY_GI_PER_GPU * n}Gi"})
        merged["limits"]["memory"] = f"{_MEMORY_LIMIT_GI_PER_GPU * n}Gi"
    model_resources = inputs.model.resources
    for resources in (
        written(model_resources) if model_resources is not None else None,
        template.resources,
        inputs.service.resources,
    ):
        _overlay(merged, resources)

    requests, limits = merged["requests"], merged["limits"]
    if gpu in requests and gpu not in limits:
        limits[gpu] = requests[gpu]
    elif gpu in limits and gpu not in requests:
        requests[gpu] = limits[gpu]
    elif gpu not in requests and n > 0:
        requests[gpu] = limits[gpu] = str(n)
    return {side: dict(sorted(values.items())) for side, values in merged.items() if values}


# -- replicas and autoscaling --------------------------------------------------------------------


def autoscaling(service_spec: Mapping[str, Any]) -> bool:
    """Whether a spec as written asks for autoscaling (any of autoScaling/minReplicas/maxReplicas)."""
    return any(service_spec.get(k) is not None for k in ("autoScaling", "minReplicas", "maxReplicas"))


def scales(spec: AnyServiceSpec) -> bool:
    """:func:`autoscaling` of a parsed spec."""
    return any(v is not None for v in (spec.auto_scaling, spec.min_replicas, spec.max_replicas))


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def replica_bounds(spec: AnyServiceSpec) -> tuple[int, int]:
    """``(minReplicas, maxReplicas)`` of the predictor: the autoscaling bounds (min defaults to 1,
    0 scales to zero; max defaults to min, at least 1), or ``replicas`` (default 1) for both."""
    if scales(spec):
        low = spec.min_replicas
        if not isinstance(low, int) or isinstance(low, bool) or low < 0:
            low = 1
        # minReplicas > maxReplicas never gets here: the runtime refuses the spec (InvalidSpec).
        return low, _positive(spec.max_replicas) or max(low, 1)
    fixed = _positive(spec.replicas) or 1
    return fixed, fixed


def owns_scaler(service: ServiceView, behaviour: Behaviour) -> bool:
    """Whether the operator writes the predictor's KEDA ScaledObject itself
    (:mod:`aim_deployer.scaled_object`, ``autoscalerClass: external``) rather than leaving it to
    KServe (``keda``, the seeds'): an autoscaled service of the current group that scales to zero
    (``minReplicas: 0``, which only the operator's ScaledObject can do: its first trigger is the
    gateway's request counter), or, under ``AIM_BEHAVIOUR=released``, one with metrics to scale on
    (the released original's 0.2.5 writes no ScaledObject without a trigger)."""
    spec = service.spec
    if service.ref.group != GROUP_AIM or not scales(spec):
        return False
    low, _ = replica_bounds(spec)
    return low == 0 or (behaviour.released and predictor_autoscaling(spec) is not None)


def _drop_none(values: Mapping[str, Any]) -> Obj:
    return {k: copy.deepcopy(v) for k, v in values.items() if v is not None}


def _metric(source: AIMServiceMetricsSpec) -> Obj:
    pod = source.pod_metric
    metric = (pod.metric if pod is not None else None) or AIMServicePodMetric()
    target = (pod.target if pod is not None else None) or AIMServiceMetricTarget()
    return {
        "type": "PodMetric",
        "podmetric": {
            "metric": _drop_none(
                {
                    "backend": str(metric.backend or "") or DEFAULT_METRIC_BACKEND,
                    "serverAddress": metric.server_address or DEFAULT_OTEL_SERVER,
                    "metricNames": list(metric.metric_names or []) or None,
                    "query": metric.query or None,
                    "operationOverTime": metric.operation_over_time or DEFAULT_OPERATION_OVER_TIME,
                }
            ),
            "target": _drop_none(
                {
                    "type": str(target.type) if target.type is not None else None,
                    "value": _quantity(target.value) if target.value is not None else None,
                    "averageValue": _quantity(target.average_value)
                    if target.average_value is not None
                    else None,
                    "averageUtilization": target.average_utilization,
                }
            ),
        },
    }


def predictor_autoscaling(spec: AnyServiceSpec) -> Obj | None:
    """KServe's ``predictor.autoScaling`` from the service's ``autoScaling.metrics`` (PodMetric
    entries only; ``None`` without any)."""
    scaling = spec.auto_scaling
    metrics = [
        _metric(m)
        for m in (scaling.metrics or [] if scaling is not None else [])
        if m.type is None or str(m.type) == "PodMetric"
    ]
    return {"metrics": metrics} if metrics else None


# -- the object ----------------------------------------------------------------------------------


def _labels(inputs: Inputs) -> dict[str, str]:
    service_labels = inputs.service.labels
    labels: dict[str, str] = dict(inputs.propagated_labels)
    labels.update({k: v for k, v in service_labels.items() if k.startswith(AIM_LABEL_PREFIX)})
    labels.update(child_labels(MANAGED_BY_VALUE))
    labels[COMPONENT_LABEL] = "inference"
    labels[SERVICE_LABEL] = label_value(inputs.service.name)
    labels[TEMPLATE_LABEL] = label_value(inputs.template.name)
    labels[MODEL_LABEL] = label_value(inputs.model.name)
    for label, key in ((METRIC_LABEL, "metric"), (PRECISION_LABEL, "precision")):
        value = _template_setting(inputs.template, key)
        if value:
            labels[label] = label_value(value)
    return dict(sorted(labels.items()))


RESERVED_ANNOTATION_PREFIXES = (
    "aim.eai.amd.com/",
    "aim.silogen.ai/",
    "serving.kserve.io/",
    "serving.knative.dev/",
    "autoscaling.knative.dev/",
    "kubectl.kubernetes.io/",
    "kubernetes.io/",
    "k8s.io/",
    "sidecar.opentelemetry.io/",
    "prometheus.kserve.io/",
)
"""Annotation key prefixes never copied from a service: the operator's own, and those that steer
KServe, Knative, kubectl, Kubernetes or the autoscaling sidecars (a user must not reach them
through an annotation on the service)."""


def propagated_annotations(annotations: Mapping[str, str], globs: Sequence[str]) -> dict[str, str]:
    """The service's ``annotations`` the InferenceService carries: keys matching one of ``globs``
    (shell globs, case-sensitive), never one under :data:`RESERVED_ANNOTATION_PREFIXES` or a
    subdomain of one (``node.kubernetes.io/``)."""
    return {
        k: str(v)
        for k, v in sorted(annotations.items())
        if not any(f".{p}" in f".{k}" for p in RESERVED_ANNOTATION_PREFIXES)
        and any(fnmatch.fnmatchcase(k, g) for g in globs)
    }


def _annotations(name: str, inputs: Inputs) -> dict[str, str]:
    annotations = propagated_annotations(inputs.service.annotations, inputs.annotation_globs)
    annotations[DEPLOYMENT_MODE_ANNOTATION] = inputs.deployment_mode
    if scales(inputs.service.spec):
        external = owns_scaler(inputs.service, inputs.behaviour)
        annotations[AUTOSCALER_CLASS_ANNOTATION] = AUTOSCALER_EXTERNAL if external else AUTOSCALER_KEDA
        annotations[OTEL_INJECT_ANNOTATION] = predictor_name(name)
        annotations[PROMETHEUS_PORT_ANNOTATION] = str(HTTP_PORT)
    else:
        annotations[AUTOSCALER_CLASS_ANNOTATION] = AUTOSCALER_NONE
    return dict(sorted(annotations.items()))


def _volume_names(caches: Sequence[CacheMount]) -> list[tuple[str, CacheMount]]:
    """Caches in mount-path order with unique, valid volume names."""
    used = {SHM_VOLUME}
    out: list[tuple[str, CacheMount]] = []
    for cache in sorted(caches, key=lambda c: (c.mount_path, c.name, c.claim)):
        name = sanitize_part(cache.name)
        if name in used:
            name = derived_name([cache.name], [cache.name, cache.claim, cache.mount_path])
        used.add(name)
        out.append((name, cache))
    return out


def cache_mount(volume: str, cache: CacheMount) -> Obj:
    """The inference container's mount of a model cache (an imported one: its directory, read-only)."""
    mount: Obj = {"name": volume, "mountPath": cache.mount_path}
    if cache.sub_path:
        mount["subPath"] = cache.sub_path
    if cache.read_only:
        mount["readOnly"] = True
    return mount


def cache_volume(volume: str, cache: CacheMount) -> Obj:
    claim: Obj = {"claimName": cache.claim}
    if cache.read_only:
        claim["readOnly"] = True
    return {"name": volume, "persistentVolumeClaim": claim}


def node_affinity(template: Template) -> Obj | None:
    """``affinity`` from the template's ``status.resolvedNodeAffinity``: a NodeAffinity is used as
    is; a bare NodeSelector (``nodeSelectorTerms``) becomes its required part."""
    resolved = template.resolved_node_affinity
    if resolved is None:
        return None
    if "nodeSelectorTerms" in resolved:
        return {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": copy.deepcopy(dict(resolved))}
        }
    return {"nodeAffinity": copy.deepcopy(dict(resolved))}


def build(inputs: Inputs) -> Obj:
    """The ``serving.kserve.io/v1beta1`` InferenceService for ``inputs``. Raises
    :class:`NameTooLong` when the namespace leaves no room for a name."""
    service = inputs.service
    name = isvc_name(service.name, str(service.namespace))
    spec = service.spec
    caches = _volume_names(inputs.caches)

    container: Obj = {
        "name": CONTAINER_NAME,
        "image": inputs.model.image,
        "imagePullPolicy": pull_policy(inputs.model.image),
        "env": container_env(inputs),
        "resources": container_resources(inputs),
        "ports": [{"containerPort": HTTP_PORT, "name": "http", "protocol": "TCP"}],
        "readinessProbe": copy.deepcopy(READINESS_PROBE),
        "volumeMounts": [
            {"name": SHM_VOLUME, "mountPath": "/dev/shm"},
            *(cache_mount(vol, cache) for vol, cache in caches),
        ],
    }
    volumes: list[Obj] = [
        {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}},
        *(cache_volume(vol, cache) for vol, cache in caches),
    ]

    low, high = replica_bounds(spec)
    predictor: Obj = {"minReplicas": low, "maxReplicas": high}
    if scales(spec):
        scaling = predictor_autoscaling(spec)
        if scaling is not None:
            predictor["autoScaling"] = scaling
    pull_secrets = [s.name for s in service.pull_secrets if s.name]
    if pull_secrets:
        predictor["imagePullSecrets"] = [{"name": s} for s in pull_secrets]
    if service.service_account:
        predictor["serviceAccountName"] = service.service_account
    if service.priority_class:
        predictor["priorityClassName"] = service.priority_class
    predictor["containers"] = [container]
    predictor["volumes"] = volumes
    affinity = node_affinity(inputs.template)
    if affinity is None and inputs.node_affinity:
        affinity = {"nodeAffinity": copy.deepcopy(inputs.node_affinity)}
    if affinity is not None:
        predictor["affinity"] = affinity

    return {
        "apiVersion": INFERENCE_SERVICE.api_version,
        "kind": INFERENCE_SERVICE.kind,
        "metadata": {
            "name": name,
            "namespace": service.namespace,
            "labels": _labels(inputs),
            "annotations": _annotations(name, inputs),
            "ownerReferences": [owner_reference(service.ref, service.obj)],
        },
        "spec": {"predictor": predictor},
    }
