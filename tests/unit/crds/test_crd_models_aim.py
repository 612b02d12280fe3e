"""The ``aim.eai.amd.com/v1alpha1`` models: wire round trips, seed defaults, the CEL rules that are
also enforced in Python, patterns, unknown fields, kind metadata and explicit wire aliases."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from aimcore.api.crds import aim
from aimcore.api.crds.base import IMMUTABLE, K8sModel
from tests.helpers import missing_or_changed

GPU_ONLY = {"gpu": {"requests": 1, "resourceName": "amd.com/gpu"}}  # defaults spelled out
SOURCE = {"modelId": "meta-llama/Llama-3-8B", "sourceUri": "hf://meta-llama/Llama-3-8B", "size": "16Gi"}


def _service(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "llama", "namespace": "ml"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


FULL_SERVICE = _service(
    {
        "model": {"name": "meta-llama-3-8b"},
        "template": {"name": "llama-latency", "allowUnoptimized": True},
        "caching": {"mode": "Always"},
        "replicas": 2,
        "minReplicas": 1,
        "maxReplicas": 4,
        "autoScaling": {
            "metrics": [
                {
                    "type": "PodMetric",
                    "podmetric": {
                        "metric": {
                            "backend": "opentelemetry",
                            "metricNames": ["vllm:num_requests_running"],
                            "query": "vllm:num_requests_running",
                            "operationOverTime": "avg",
                        },
                        "target": {"type": "Value", "value": "1"},
                    },
                }
            ]
        },
        "runtimeConfigName": "default",
        "storage": {"defaultStorageClassName": "fast", "pvcHeadroomPercent": 15},
        "routing": {
            "enabled": True,
            "gatewayRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"},
            "pathTemplate": "/{.metadata.namespace}/{.metadata.name}",
            "requestTimeout": "60s",
            "annotations": {"a": "b"},
        },
        "env": [
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
            {"name": "PLAIN", "value": "1"},
        ],
        "resources": {"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"amd.com/gpu": 1}},
        "overrides": {
            "metric": "latency",
            "precision": "fp8",
            "gpu": {"requests": 2, "model": "MI300X", "resourceName": "amd.com/gpu"},
        },
        "imagePullSecrets": [{"name": "regcred"}],
        "serviceAccountName": "inference",
    },
    {
        "observedGeneration": 3,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "observedGeneration": 3,
                "lastTransitionTime": "2025-01-01T00:00:00Z",
                "reason": "Running",
                "message": "",
            }
        ],
        "resolvedRuntimeConfig": {"name": "default", "scope": "Merged"},
        "resolvedModel": {"name": "meta-llama-3-8b", "namespace": "ml", "scope": "Namespace", "uid": "u-1"},
        "status": "Running",
        "routing": {"path": "/ml/llama"},
        "resolvedTemplate": {"name": "llama-latency", "kind": "AIMServiceTemplate"},
        "cache": {"templateCacheRef": {"name": "llama-latency"}, "retryAttempts": 0},
    },
)


def _errors(exc: pytest.ExceptionInfo[ValidationError]) -> str:
    return str(exc.value)


# ---------------------------------------------------------------------------------------------
# Round trips and defaults
# ---------------------------------------------------------------------------------------------


def test_full_service_round_trips() -> None:
    svc = aim.AIMService.model_validate(copy.deepcopy(FULL_SERVICE))
    assert svc.wire() == FULL_SERVICE
    assert svc.spec.model.name == "meta-llama-3-8b"
    assert svc.spec.caching is not None and svc.spec.caching.mode is aim.AIMCachingMode.ALWAYS
    assert svc.spec.overrides is not None and svc.spec.overrides.precision is aim.AIMPrecision.FP8
    assert svc.status is not None and svc.status.status is aim.AIMStatus.RUNNING


def test_service_defaults_land() -> None:
    svc = aim.AIMService.model_validate(_service({"model": {"image": "ghcr.io/x/llama:1"}}))
    assert svc.spec.replicas == 1
    assert svc.spec.caching is None  # nil means Auto at run time; the seed gives no CRD default
    assert svc.spec.min_replicas is None and svc.spec.max_replicas is None
    assert svc.wire()["spec"] == {"model": {"image": "ghcr.io/x/llama:1"}, "replicas": 1}

    svc = aim.AIMService.model_validate(_service({"model": {"name": "m"}, "caching": {}}, status={}))
    assert svc.spec.caching is not None and svc.spec.caching.mode is aim.AIMCachingMode.AUTO
    assert svc.status is not None and svc.status.status is aim.AIMStatus.PENDING

    metric = aim.AIMServicePodMetric.model_validate({})
    assert metric.backend is aim.AIMServiceMetricBackend.OPENTELEMETRY
    assert metric.operation_over_time == "last_one"


@pytest.mark.parametrize(
    ("model", "data", "attr", "expected"),
    [
        (aim.AIMStorageConfig, {}, "pvc_headroom_percent", 10),
        (aim.AIMGpuRequirements, {}, "resource_name", "amd.com/gpu"),
        (aim.AIMTemplateCachingConfig, {}, "enabled", False),
        (aim.AIMModelDiscoveryConfig, {}, "extract_metadata", True),
        (aim.AIMModelDiscoveryConfig, {}, "create_service_templates", True),
        (aim.AIMRuntimeConfigLabelPropagationSpec, {}, "enabled", False),
        (aim.AIMCustomTemplate, {}, "type", aim.AIMProfileType.UNOPTIMIZED),
        (aim.AIMTemplateCacheSpec, {"templateName": "t"}, "mode", aim.AIMTemplateCacheMode.SHARED),
        (aim.AIMTemplateCacheStatus, {}, "status", aim.AIMStatus.PENDING),
        (aim.AIMModelStatus, {}, "status", aim.AIMStatus.PENDING),
        (aim.AIMServiceTemplateStatus, {}, "status", aim.AIMStatus.PENDING),
        (aim.AIMModelCacheStatus, {}, "status", aim.AIMStatus.PENDING),
        (
            aim.AIMModelCacheSpec,
            {"sourceUri": "hf://org/model"},
            "model_download_image",
            "kserve/storage-initializer:v0.16.0",
        ),
        (aim.AIMClusterModelSourceSpec, {"filters": [{"image": "a/b*"}]}, "registry", "docker.io"),
        (aim.AIMClusterModelSourceSpec, {"filters": [{"image": "a/b*"}]}, "sync_interval", "1h"),
        (aim.AIMClusterModelSourceSpec, {"filters": [{"image": "a/b*"}]}, "max_models", 100),
        (aim.ParentReference, {"name": "gw"}, "kind", "Gateway"),
    ],
)
def test_seed_defaults(model: type[BaseModel], data: dict[str, Any], attr: str, expected: object) -> None:
    assert getattr(model.model_validate(data), attr) == expected


def test_no_invented_defaults_on_templates() -> None:
    spec = aim.AIMServiceTemplateSpec.model_validate({"modelName": "m"})
    assert spec.metric is None and spec.precision is None and spec.gpu is None and spec.type is None
    assert spec.wire() == {"modelName": "m"}


def test_runtime_config_spec_is_optional() -> None:
    rc = aim.AIMClusterRuntimeConfig.model_validate({"metadata": {"name": "default"}})
    assert rc.spec.storage is None
    assert rc.wire() == {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMClusterRuntimeConfig",
        "metadata": {"name": "default"},
        "spec": {},
    }


def test_model_and_template_round_trip() -> None:
    model = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModel",
        "metadata": {"name": "llama", "namespace": "ml"},
        "spec": {
            "image": "amdenterpriseai/aim-base:latest",
            "modelSources": [SOURCE],
            "custom": {"hardware": GPU_ONLY | {"cpu": {"requests": "4"}}, "type": "preview"},
            "customTemplates": [
                {
                    "name": "hi",
                    "type": "unoptimized",
                    "profile": {"metric": "throughput", "precision": "bf16"},
                }
            ],
            "discovery": {"extractMetadata": False, "createServiceTemplates": True},
        },
        "status": {
            "status": "Ready",
            "sourceType": "Custom",
            "imageMetadata": {
                "model": {
                    "canonicalName": "meta-llama/Llama-3-8B",
                    "hfTokenRequired": True,
                    "recommendedDeployments": [{"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8"}],
                },
                "oci": {"title": "Llama"},
                "originalLabels": {"org.opencontainers.image.title": "Llama"},
            },
        },
    }
    assert aim.AIMModel.model_validate(copy.deepcopy(model)).wire() == model
    cluster = model | {"kind": "AIMClusterModel", "metadata": {"name": "llama"}}
    assert aim.AIMClusterModel.model_validate(copy.deepcopy(cluster)).wire() == cluster


# ---------------------------------------------------------------------------------------------
# CEL rules enforced in Python
# ---------------------------------------------------------------------------------------------


def _rules(model: type[BaseModel]) -> list[Any]:
    extra = model.model_config.get("json_schema_extra")
    assert isinstance(extra, dict)
    rules = extra["x-kubernetes-validations"]
    assert isinstance(rules, list)
    return rules


@pytest.mark.parametrize(
    "model",
    [
        {},
        {"name": "a", "image": "b"},
        {"image": "b", "custom": {"modelSources": [SOURCE], "hardware": GPU_ONLY}},
        {"name": "a", "image": "b", "custom": {"modelSources": [SOURCE], "hardware": GPU_ONLY}},
    ],
)
def test_service_model_needs_exactly_one_reference(model: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as exc:
        aim.AIMService.model_validate(_service({"model": model}))
    assert aim.SERVICE_MODEL_ONE_OF_MESSAGE in _errors(exc)


@pytest.mark.parametrize(
    "model",
    [
        {"name": "a"},
        {"image": "ghcr.io/x/y:1"},
        {"custom": {"modelSources": [SOURCE], "hardware": GPU_ONLY}},
    ],
)
def test_service_model_accepts_each_single_reference(model: dict[str, Any]) -> None:
    assert aim.AIMService.model_validate(_service({"model": model})).spec.model.wire() == model


def test_service_custom_model_sources_are_exactly_one() -> None:
    for sources in ([], [SOURCE, SOURCE]):
        with pytest.raises(ValidationError):
            aim.AIMServiceModelCustom.model_validate({"modelSources": sources, "hardware": GPU_ONLY})
    with pytest.raises(ValidationError):  # hardware is required for an inline custom model
        aim.AIMServiceModelCustom.model_validate({"modelSources": [SOURCE]})


def test_hardware_needs_gpu_or_cpu() -> None:
    with pytest.raises(ValidationError) as exc:
        aim.AIMHardwareRequirements.model_validate({})
    assert aim.HARDWARE_ONE_OF_MESSAGE in _errors(exc)
    assert aim.AIMHardwareRequirements.model_validate({"cpu": {"requests": "2"}}).gpu is None
    assert aim.AIMHardwareRequirements.model_validate(GPU_ONLY).cpu is None
    # nested in a service custom model, the rule still applies
    with pytest.raises(ValidationError):
        aim.AIMService.model_validate(
            _service({"model": {"custom": {"modelSources": [SOURCE], "hardware": {}}}})
        )


def test_gpu_model_and_min_vram_are_exclusive() -> None:
    with pytest.raises(ValidationError) as exc:
        aim.AIMGpuRequirements.model_validate({"model": "MI300X", "minVram": "64Gi"})
    assert aim.GPU_MODEL_XOR_VRAM_MESSAGE in _errors(exc)
    assert aim.AIMGpuRequirements.model_validate({"model": "MI300X"}).min_vram is None
    assert aim.AIMGpuRequirements.model_validate({"minVram": "64Gi"}).min_vram == "64Gi"
    with pytest.raises(ValidationError):
        aim.AIMServiceTemplateSpec.model_validate(
            {"modelName": "m", "gpu": {"model": "MI300X", "minVram": "64Gi"}}
        )


@pytest.mark.parametrize(
    "spec",
    [
        {"modelSources": [SOURCE]},
        {"modelSources": [SOURCE], "custom": {"type": "preview"}},
        {"modelSources": [SOURCE], "customTemplates": []},
        {"modelSources": [SOURCE], "customTemplates": [{"hardware": GPU_ONLY}, {"name": "no-hw"}]},
    ],
)
def test_custom_model_needs_hardware(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as exc:
        aim.AIMModelSpec.model_validate({"image": "base:1"} | spec)
    assert aim.CUSTOM_MODEL_HARDWARE_MESSAGE in _errors(exc)


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"modelSources": []},
        {"customTemplates": [{"name": "no-hw"}]},
        {"modelSources": [SOURCE], "custom": {"hardware": GPU_ONLY}},
        {"modelSources": [SOURCE], "customTemplates": [{"hardware": GPU_ONLY}, {"hardware": GPU_ONLY}]},
        {
            "modelSources": [SOURCE],
            "custom": {"hardware": GPU_ONLY},
            "customTemplates": [{"name": "inherits"}],
        },
    ],
)
def test_custom_model_hardware_accepted(spec: dict[str, Any]) -> None:
    given = {"image": "base:1"} | spec
    assert missing_or_changed(given, aim.AIMModelSpec.model_validate(given).wire()) == []


def test_python_rules_match_cel_messages() -> None:
    pairs: list[tuple[type[BaseModel], str, str]] = [
        (aim.AIMServiceModel, aim.SERVICE_MODEL_ONE_OF_RULE, aim.SERVICE_MODEL_ONE_OF_MESSAGE),
        (aim.AIMHardwareRequirements, aim.HARDWARE_ONE_OF_RULE, aim.HARDWARE_ONE_OF_MESSAGE),
        (aim.AIMGpuRequirements, aim.GPU_MODEL_XOR_VRAM_RULE, aim.GPU_MODEL_XOR_VRAM_MESSAGE),
        (aim.AIMModelSpec, aim.CUSTOM_MODEL_HARDWARE_RULE, aim.CUSTOM_MODEL_HARDWARE_MESSAGE),
        (aim.AIMServiceSpec, aim.REPLICA_BOUNDS_RULE, aim.REPLICA_BOUNDS_MESSAGE),
        (aim.AIMServiceOverrides, aim.OVERRIDE_MIN_VRAM_RULE, aim.OVERRIDE_MIN_VRAM_MESSAGE),
    ]
    for model, rule, message in pairs:
        assert {"rule": rule, "message": message} in _rules(model)
        assert "oldSelf" not in rule


def _field_rules(model: type[BaseModel], attr: str) -> list[Any]:
    extra = model.model_fields[attr].json_schema_extra
    assert isinstance(extra, dict), f"{model.__name__}.{attr} has no CEL rule"
    rules = extra["x-kubernetes-validations"]
    assert isinstance(rules, list)
    return rules


@pytest.mark.parametrize(
    ("model", "attr"),
    [
        (aim.AIMServiceSpec, "model"),
        (aim.AIMServiceSpec, "template"),
        (aim.AIMServiceSpec, "caching"),
        (aim.AIMServiceOverrides, "metric"),
        (aim.AIMServiceOverrides, "precision"),
        (aim.AIMServiceOverrides, "gpu"),
        (aim.AIMServiceTemplateSpec, "model_name"),
        (aim.AIMServiceTemplateSpec, "metric"),
        (aim.AIMServiceTemplateSpec, "precision"),
        (aim.AIMServiceTemplateSpec, "gpu"),
        (aim.AIMClusterServiceTemplateSpec, "model_name"),
        (aim.AIMModelCacheSpec, "source_uri"),
    ],
)
def test_immutable_fields_carry_transition_rule(model: type[BaseModel], attr: str) -> None:
    assert [r["rule"] for r in _field_rules(model, attr)] == [IMMUTABLE[0]]


# ---------------------------------------------------------------------------------------------
# Patterns, bounds, enums, unknown fields
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (aim.AIMModelCacheSpec, {"sourceUri": "http://example.com/model"}),
        (aim.AIMModelCacheSpec, {"sourceUri": "hf://org/model with space"}),
        (aim.AIMModelCacheSpec, {"sourceUri": ""}),
        (aim.AIMModelCacheSpec, {"sourceUri": "s3://b/k", "modelId": "no-slash"}),
        (aim.AIMModelSource, {"modelId": "org/name", "sourceUri": "gs://bucket/key"}),
        (aim.AIMModelSource, {"modelId": "org/na me", "sourceUri": "hf://org/name"}),
        (aim.AIMServiceTemplateSpec, {"modelName": ""}),
        (aim.AIMGpuRequirements, {"requests": -1}),
        (aim.AIMGpuRequirements, {"model": "x" * 65}),
        (aim.AIMCustomTemplate, {"name": "x" * 64}),
        (aim.DownloadProgress, {"percentage": 101}),
        (aim.AIMStorageConfig, {"pvcHeadroomPercent": -1}),
        (aim.AIMClusterModelSourceSpec, {"filters": []}),
        (aim.AIMClusterModelSourceSpec, {"filters": [{"image": "a"}], "maxModels": 0}),
        (aim.AIMClusterModelSourceSpec, {"filters": [{"image": "a"}], "maxModels": 10001}),
        (aim.ModelSourceFilter, {"image": "x" * 513}),
        (aim.AIMModelSpec, {"image": "base:1", "modelSources": [SOURCE, SOURCE]}),
        (aim.AIMModelSpec, {"image": "base:1", "customTemplates": [{}] * 17}),
        (aim.AIMModelSpec, {"image": ""}),
        (aim.AIMServiceSpec, {"model": {"name": "a"}, "minReplicas": -1}),  # 0 scales to zero (0.2.5)
        (aim.ParentReference, {"name": "gw", "namespace": "Not_A_Label"}),
    ],
)
def test_constraints_reject(model: type[BaseModel], data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(data)


# ---------------------------------------------------------------------------------------------
# Hostile values that used to be adjusted or ignored later (issue 15, item 7)
# ---------------------------------------------------------------------------------------------


SVC = aim.AIMServiceSpec


def _svc(**spec: Any) -> dict[str, Any]:
    return {"model": {"name": "llama"}, **spec}


def _target(target: dict[str, Any]) -> dict[str, Any]:
    metric = {"query": "vllm:num_requests_running"}
    return {
        "metrics": [
            {"type": "PodMetric", "podmetric": {"metric": metric, "target": {"type": "Value", **target}}}
        ]
    }


@pytest.mark.parametrize(
    ("model", "data", "says"),
    [
        (SVC, _svc(replicas=0), "greater than or equal to 1"),
        (SVC, _svc(replicas=-5), "greater than or equal to 1"),
        (SVC, _svc(minReplicas=5, maxReplicas=2), aim.REPLICA_BOUNDS_MESSAGE),
        (SVC, _svc(resources={"requests": {"cpu": "-2"}}), "is negative"),
        (SVC, _svc(resources={"limits": {"memory": -5}}), "is negative"),
        (
            SVC,
            _svc(resources={"limits": {"memory": "1e40"}}),
            "larger than Kubernetes",
        ),
        (SVC, _svc(resources={"limits": {"cpu": "0.5n"}}), "finer than 1n"),
        (
            SVC,
            _svc(resources={"limits": {"cpu": "2 cores"}}),
            "not a Kubernetes quantity",
        ),
        (
            SVC,
            _svc(resources={"requests": {"cpu": "8"}, "limits": {"cpu": "2"}}),
            "requests.cpu '8' is more than limits.cpu '2'",
        ),
        (
            SVC,
            _svc(resources={"limits": {"amd.com/gpu": "0.5"}}),
            "not a whole number",
        ),
        (
            SVC,
            _svc(resources={"requests": {"amd.com/gpu": 1}, "limits": {"amd.com/gpu": 2}}),
            "must equal",
        ),
        (SVC, _svc(autoScaling=_target({"value": "-1"})), "is negative"),
        (
            SVC,
            _svc(autoScaling=_target({"averageValue": "lots"})),
            "not a Kubernetes",
        ),
        (
            SVC,
            _svc(autoScaling=_target({"averageUtilization": 0})),
            "greater than or equal",
        ),
        (aim.AIMCpuRequirements, {"requests": "0"}, "requests must be > 0"),
        (aim.AIMCpuRequirements, {"requests": "4", "limits": "2"}, "limits '2' is less than requests '4'"),
        (aim.AIMGpuRequirements, {"minVram": "-64Gi"}, "is negative"),
        (aim.AIMModelSource, {**SOURCE, "size": "-16Gi"}, "is negative"),
        (aim.AIMModelCacheSpec, {"sourceUri": "hf://a/b", "size": -1}, "is negative"),
        (aim.AIMRuntimeConfigSpec, {"pvcHeadroomPercent": -50}, "greater than or equal to 0"),
        (aim.AIMModelSpec, {"image": "ghcr.io/acme/llama:1.0\n"}, "should match pattern"),
        (aim.AIMModelSpec, {"image": "ghcr.io:99999/acme/llama:1.0"}, "port 99999"),
        (aim.AIMModelSpec, {"image": "ghcr.io/acme/Llama:1.0"}, "must be lower case"),
        (aim.AIMServiceModel, {"image": "ghcr.io/acme/llama:1.0\n"}, "should match pattern"),
        (
            aim.AIMServiceModelCustom,
            {"baseImage": "ghcr.io:0/acme/base:1", "modelSources": [SOURCE], "hardware": GPU_ONLY},
            "port 0",
        ),
        (aim.AIMModelCacheSpec, {"sourceUri": "hf://a/b", "modelDownloadImage": "busybox\t"}, "pattern"),
        (aim.AIMTemplateCacheSpec, {"templateName": "t", "downloadImage": "UPPER/case"}, "lower case"),
        (
            aim.AIMClusterModelSourceSpec,
            {"filters": [{"image": "a"}], "syncInterval": "-5m"},
            "not a duration",
        ),
        (
            aim.AIMClusterModelSourceSpec,
            {"filters": [{"image": "a"}], "syncInterval": "1d"},
            "not a duration",
        ),
        (
            aim.AIMClusterModelSourceSpec,
            {"filters": [{"image": "a"}], "syncInterval": "1h\n"},
            "not a duration",
        ),
        (aim.AIMRuntimeRoutingConfig, {"requestTimeout": "ten seconds"}, "not a duration"),
        (SVC, _svc(overrides={"gpu": {"minVram": "128Gi"}}), aim.OVERRIDE_MIN_VRAM_MESSAGE),
    ],
)
def test_hostile_values_are_refused(model: type[BaseModel], data: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    assert says in _errors(exc)


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (SVC, _svc(replicas=1)),
        (SVC, _svc(minReplicas=2, maxReplicas=2)),
        (SVC, _svc(minReplicas=2)),  # the maximum defaults to the minimum
        (SVC, _svc(resources={"requests": {"cpu": "500m"}, "limits": {"cpu": 1}})),
        (SVC, _svc(resources={"limits": {"amd.com/gpu": "2", "memory": "1.5Gi"}})),
        (SVC, _svc(resources={"limits": {"cpu": "+1", "memory": "1e3"}})),
        (SVC, _svc(autoScaling=_target({"value": "100m"}))),
        (aim.AIMCpuRequirements, {"requests": "250m", "limits": "1"}),
        (aim.AIMModelSpec, {"image": "localhost:5000/acme/llama@sha256:" + "a" * 64}),
        (aim.AIMModelSpec, {"image": "[::1]:65535/acme/llama:1.0"}),
        (aim.AIMRuntimeConfigSpec, {"pvcHeadroomPercent": 0}),
        (aim.AIMClusterModelSourceSpec, {"filters": [{"image": "a"}], "syncInterval": "1ms"}),  # clamped
        (aim.AIMClusterModelSourceSpec, {"filters": [{"image": "a"}], "syncInterval": "1.5h"}),
        (aim.AIMRuntimeRoutingConfig, {"requestTimeout": "2m30s"}),
    ],
)
def test_sane_values_pass(model: type[K8sModel], data: dict[str, Any]) -> None:
    assert missing_or_changed(data, model.model_validate(data).wire()) == []  # kept as written


def test_patterns_accept_valid_values() -> None:
    spec = aim.AIMModelCacheSpec.model_validate(
        {"sourceUri": "s3://bucket/models/llama", "modelId": "my-team/fine-tuned.llama_2"}
    )
    assert spec.model_id == "my-team/fine-tuned.llama_2"
    assert aim.AIMModelSpec.model_validate({"image": "base:1", "customTemplates": [{}] * 16})


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (aim.AIMServiceStatus, {"status": "Ready"}),  # services use Running, not Ready
        (aim.AIMModelStatus, {"status": "Running"}),
        (aim.AIMTemplateCacheStatus, {"status": "Starting"}),
        (aim.AIMServiceTemplateSpec, {"modelName": "m", "metric": "speed"}),
        (aim.AIMServiceTemplateSpec, {"modelName": "m", "precision": "fp64"}),
        (aim.AIMProfileMetadata, {"precision": "fp4"}),  # profile metadata has the narrower enum
        (aim.AIMServiceCachingConfig, {"mode": "Private"}),
        (aim.AIMServiceMetricTarget, {"type": "Percent"}),
        (aim.AIMServicePodMetric, {"backend": "prometheus"}),
    ],
)
def test_enums_reject(model: type[BaseModel], data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(data)


def test_enum_values() -> None:
    assert [m.value for m in aim.AIMPrecision] == [
        "auto",
        "fp4",
        "fp8",
        "fp16",
        "fp32",
        "bf16",
        "int4",
        "int8",
    ]
    assert (
        aim.AIMServiceTemplateSpec.model_validate({"modelName": "m", "precision": "fp4"}).precision == "fp4"
    )
    assert aim.AIMClusterModelSourceStatus.model_validate({"status": "Running"}).status == "Running"
    assert aim.AIMClusterModelSourceStatus().status is None  # no default in the seed


def test_unknown_fields_are_rejected() -> None:
    bad = copy.deepcopy(FULL_SERVICE)
    bad["spec"]["replica"] = 3
    with pytest.raises(ValidationError) as exc:
        aim.AIMService.model_validate(bad)
    assert "replica" in _errors(exc)
    bad = copy.deepcopy(FULL_SERVICE)
    bad["spec"]["overrides"]["hardware"] = GPU_ONLY  # the seed calls it gpu
    with pytest.raises(ValidationError):
        aim.AIMService.model_validate(bad)
    with pytest.raises(ValidationError):
        aim.AIMModelCacheSpec.model_validate({"sourceURI": "hf://org/model"})


# ---------------------------------------------------------------------------------------------
# Explicit wire names
# ---------------------------------------------------------------------------------------------


def test_discovery_profile_metadata_uses_snake_case_gpu_count() -> None:
    raw = {"engine": "vllm", "gpu": "MI300X", "gpu_count": 2, "metric": "latency", "precision": "fp8"}
    meta = aim.AIMDiscoveryProfileMetadata.model_validate(raw)
    assert meta.gpu_count == 2
    assert meta.wire() == raw
    with pytest.raises(ValidationError):
        aim.AIMDiscoveryProfileMetadata.model_validate({"gpuCount": 2})


def test_profile_uses_snake_case_engine_args_and_env_vars() -> None:
    raw = {
        "engine_args": {"max-model-len": 8192, "enforce-eager": True},
        "env_vars": {"VLLM_USE_TRITON": "1"},
        "metadata": {"engine": "vllm", "gpuCount": 1, "metric": "throughput", "precision": "bf16"},
        "originalDiscoveryOutput": {"anything": [1, "two"]},
    }
    profile = aim.AIMProfile.model_validate(raw)
    assert profile.engine_args == {"max-model-len": 8192, "enforce-eager": True}
    assert profile.metadata is not None and profile.metadata.gpu_count == 1
    assert profile.wire() == raw
    with pytest.raises(ValidationError):
        aim.AIMProfile.model_validate({"engineArgs": {}})
    # the template status variant of the same metadata is camelCase on the wire
    assert aim.AIMProfileMetadata(gpu_count=4).wire() == {"gpuCount": 4}
    assert aim.AIMDiscoveryProfileMetadata(gpu_count=4).wire() == {"gpu_count": 4}


def test_pod_metric_wire_name_is_lowercase() -> None:
    raw = {"type": "PodMetric", "podmetric": {"target": {"type": "AverageValue", "averageValue": "100m"}}}
    spec = aim.AIMServiceMetricsSpec.model_validate(raw)
    assert spec.pod_metric is not None and spec.pod_metric.target is not None
    assert spec.wire() == raw
    with pytest.raises(ValidationError):
        aim.AIMServiceMetricsSpec.model_validate({"podMetric": {}})


# ---------------------------------------------------------------------------------------------
# Kinds
# ---------------------------------------------------------------------------------------------

EXPECTED_KINDS = {
    "AIMService": ("aimservices", "Namespaced", "aimsvc"),
    "AIMModel": ("aimmodels", "Namespaced", "aimmdl"),
    "AIMClusterModel": ("aimclustermodels", "Cluster", "aimclmdl"),
    "AIMServiceTemplate": ("aimservicetemplates", "Namespaced", "aimtpl"),
    "AIMClusterServiceTemplate": ("aimclusterservicetemplates", "Cluster", "aimcltpl"),
    "AIMTemplateCache": ("aimtemplatecaches", "Namespaced", "aimtc"),
    "AIMModelCache": ("aimmodelcaches", "Namespaced", "aimmc"),
    "AIMArtifact": ("aimartifacts", "Namespaced", "aimart"),
    "AIMRuntimeConfig": ("aimruntimeconfigs", "Namespaced", "aimrc"),
    "AIMClusterRuntimeConfig": ("aimclusterruntimeconfigs", "Cluster", "aimclrc"),
    "AIMClusterModelSource": ("aimclustermodelsources", "Cluster", "aimclsrc"),
}


def test_kinds_metadata() -> None:
    assert len(aim.KINDS) == 11  # the seed's ten and AIMArtifact, the released name of the model cache
    assert len({(k.crd.group, k.crd.plural) for k in aim.KINDS}) == 11
    seen = {}
    for kind in aim.KINDS:
        info = kind.crd
        assert info.group == "aim.eai.amd.com"
        assert info.version == "v1alpha1"
        assert info.categories == ("aim", "all")
        assert info.description
        seen[info.kind] = (info.plural, info.scope, *info.short_names)
        assert kind.__name__ == info.kind
    assert seen == EXPECTED_KINDS


def test_status_printer_column_on_kinds_with_status_enum() -> None:
    for kind in aim.KINDS:
        paths = [c.json_path for c in kind.crd.printer_columns]
        if kind.crd.kind.endswith("RuntimeConfig"):
            assert paths == []
        else:
            assert ".status.status" in paths
    svc_columns = {c.name: c.json_path for c in aim.AIMService.crd.printer_columns}
    assert svc_columns["Model"] == ".status.resolvedModel.name"
    assert svc_columns["Template"] == ".status.resolvedTemplate.name"


def test_kind_wire_sets_api_version_and_kind() -> None:
    cache = aim.AIMModelCache.model_validate(
        {"metadata": {"name": "c", "namespace": "ml"}, "spec": {"sourceUri": "hf://org/model"}}
    )
    wire = cache.wire()
    assert wire["apiVersion"] == "aim.eai.amd.com/v1alpha1"
    assert wire["kind"] == "AIMModelCache"
    assert wire["spec"] == {
        "sourceUri": "hf://org/model",
        "modelDownloadImage": "kserve/storage-initializer:v0.16.0",
    }
    with pytest.raises(ValidationError):  # spec is required where it has required fields
        aim.AIMModelCache.model_validate({"metadata": {"name": "c"}})
