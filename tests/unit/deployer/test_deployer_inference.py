"""The InferenceService an AIMService becomes (``aim_deployer.inference``): name, env layers,
resources, replicas/autoscaling, labels, annotations, volumes and affinity, in both API groups."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from aim_deployer import inference
from aim_deployer.inference import CacheMount, Inputs, NameTooLong
from aim_deployer.service_view import ServiceView
from aimcore.api.behaviour import Behaviour
from aimcore.api.kinds import by_kind
from aimcore.api.types import Obj
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template
from aimcore.domain.gpu import Inventory, check_gpu

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
SERVICE = by_kind(AIM, "AIMService")
MODEL = by_kind(AIM, "AIMClusterModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
CLUSTER_TEMPLATE = by_kind(AIM, "AIMClusterServiceTemplate")
LEGACY_SERVICE = by_kind(LEGACY, "AIMService")
LEGACY_IMAGE = by_kind(LEGACY, "AIMClusterImage")
LEGACY_TEMPLATE = by_kind(LEGACY, "AIMServiceTemplate")


def service(spec: Obj | None = None, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": SERVICE.api_version,
        "kind": "AIMService",
        "metadata": {
            "name": "qwen3-chat",
            "namespace": "ml-team",
            "uid": "svc-uid",
            "labels": labels or {},
        },
        "spec": {"model": {"name": "Qwen3-32B:0.8.5"}, **(spec or {})},
    }


def model(spec: Obj | None = None) -> Obj:
    return {
        "metadata": {"name": "Qwen3-32B:0.8.5", "uid": "model-uid"},
        "spec": {"image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5", **(spec or {})},
    }


def template(spec: Obj | None = None, status: Obj | None = None) -> Obj:
    return {
        "metadata": {"name": "qwen3-mi300x-lat", "namespace": "ml-team", "uid": "tpl-uid"},
        "spec": {"modelName": "Qwen3-32B:0.8.5", **(spec or {})},
        "status": status or {},
    }


def inputs(
    *,
    svc: Obj | None = None,
    mdl: Obj | None = None,
    tpl: Obj | None = None,
    config_env: list[Obj] | None = None,
    **kwargs: Any,
) -> Inputs:
    return Inputs(
        service=ServiceView(SERVICE, svc if svc is not None else service()),
        model=Model(MODEL, mdl if mdl is not None else model()),
        template=Template(TEMPLATE, tpl if tpl is not None else template()),
        config_env=config_env or [],
        propagated_labels=kwargs.pop("propagated_labels", {}),
        **kwargs,
    )


def env_map(env: list[Obj]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in env}


def predictor(obj: Obj) -> Obj:
    result: Obj = obj["spec"]["predictor"]
    return result


# -- names -----------------------------------------------------------------------------------------


def test_isvc_name_known_value() -> None:
    assert inference.isvc_name("qwen3-chat", "ml-team") == "qwen3-chat-a04542d9"


def test_isvc_name_is_always_hashed_and_leaves_room_for_the_predictor_host() -> None:
    namespace = "n" * 40
    name = inference.isvc_name("a-rather-long-service-name-for-testing", namespace)
    assert len(f"{name}-predictor-{namespace}") <= 63
    assert len(name) == 63 - 11 - 40
    assert name.rsplit("-", 1)[1] == inference.isvc_name("x", namespace).rsplit("-", 1)[1]


def test_isvc_name_too_long_namespace() -> None:
    ok = "n" * 42  # leaves exactly 10
    assert len(inference.isvc_name("svc", ok)) <= 10
    with pytest.raises(NameTooLong, match="too long"):
        inference.isvc_name("svc", "n" * 43)


def test_build_propagates_name_too_long() -> None:
    svc = service()
    svc["metadata"]["namespace"] = "n" * 50
    with pytest.raises(NameTooLong):
        inference.build(inputs(svc=svc))


def test_route_name() -> None:
    name = inference.route_name("qwen3-chat", "ml-team")
    assert name.startswith("qwen3-chat-") and len(name) == len("qwen3-chat-") + 8
    assert name == inference.route_name("qwen3-chat", "ml-team")
    assert name != inference.route_name("qwen3-chat", "other")
    assert len(inference.route_name("s" * 80, "ml-team")) == 63


# -- env -------------------------------------------------------------------------------------------

LAYERS = {
    # lowest first, above the operator defaults
    Behaviour.RELEASED: ("config", "profile", "template", "model_id", "service"),
    Behaviour.SEEDS: ("profile", "template", "config", "model_id", "service"),
}


def layered(top: str, name: str, behaviour: Behaviour) -> Inputs:
    """Inputs where every layer up to ``top`` (in ``behaviour``'s order) sets ``name`` to the
    layer's name."""
    order = LAYERS[behaviour]
    upto = order[: order.index(top) + 1]
    tspec: Obj = {}
    tstatus: Obj = {}
    sspec: Obj = {}
    config_env = [{"name": name, "value": "config"}] if "config" in upto else []
    if "profile" in upto:
        tspec["metric"] = "latency"
    if "template" in upto:
        tspec["env"] = [{"name": name, "value": "template"}]
    if "model_id" in upto:
        tspec["modelSources"] = [{"modelId": "org/model", "sourceUri": "hf://org/model"}]
    if "service" in upto:
        sspec["env"] = [{"name": name, "value": "service"}]
    return inputs(
        svc=service(sspec), tpl=template(tspec, tstatus), config_env=config_env, behaviour=behaviour
    )


@pytest.mark.parametrize(
    ("behaviour", "name", "top", "expected"),
    [
        *(
            (b, "AIM_CACHE_PATH", top, want)
            for b in Behaviour
            for top, want in ((None, "/workspace/model-cache"), ("config", "config"))
        ),
        (Behaviour.RELEASED, "AIM_METRIC", "config", "config"),
        (Behaviour.RELEASED, "AIM_METRIC", "profile", "latency"),
        (Behaviour.RELEASED, "AIM_METRIC", "template", "template"),
        (Behaviour.RELEASED, "AIM_MODEL_ID", "template", "template"),
        (Behaviour.SEEDS, "AIM_METRIC", "profile", "latency"),
        (Behaviour.SEEDS, "AIM_METRIC", "template", "template"),
        (Behaviour.SEEDS, "AIM_METRIC", "config", "config"),
        (Behaviour.SEEDS, "AIM_MODEL_ID", "config", "config"),
        *((b, "AIM_MODEL_ID", "model_id", "org/model") for b in Behaviour),
        *((b, "AIM_MODEL_ID", "service", "service") for b in Behaviour),
        *((b, "VLLM_ENABLE_METRICS", "service", "service") for b in Behaviour),
    ],
)
def test_env_each_layer_beats_the_one_below(
    behaviour: Behaviour, name: str, top: str | None, expected: str
) -> None:
    env = inference.container_env(layered(top, name, behaviour) if top else inputs(behaviour=behaviour))
    assert env_map(env)[name] == expected
    names = [e["name"] for e in env]
    assert len(names) == len(set(names))
    assert names == sorted(names)


@pytest.mark.parametrize("behaviour", list(Behaviour))
def test_env_layers_order_of_the_generation(behaviour: Behaviour) -> None:
    """The pure merge: one variable set by every layer takes the highest layer's value, and each
    layer beats exactly the ones below it in the generation's order."""
    values = {
        layer: [{"name": "X", "value": layer}] for layer in ("config", "profile", "template", "service")
    }
    order = [layer for layer in LAYERS[behaviour] if layer != "model_id"]
    for top in range(len(order)):
        present = {layer: values[layer] if layer in order[: top + 1] else [] for layer in values}
        env = inference.env_layers(
            config=present["config"],
            profile=present["profile"],
            template=present["template"],
            model_id=None,
            service=present["service"],
            behaviour=behaviour,
        )
        assert env_map(env)["X"] == order[top]
    model = inference.env_layers(
        config=[{"name": "AIM_MODEL_ID", "value": "config"}],
        profile=[],
        template=[{"name": "AIM_MODEL_ID", "value": "template"}],
        model_id="org/model",
        service=[],
        behaviour=behaviour,
    )
    assert env_map(model)["AIM_MODEL_ID"] == "org/model"


def test_env_defaults_and_profile_from_spec() -> None:
    tpl = template({"profileId": "vllm-mi300x-fp8-tp1-latency", "metric": "latency", "precision": "fp8"})
    assert inference.container_env(inputs(tpl=tpl)) == [
        {"name": "AIM_CACHE_PATH", "value": "/workspace/model-cache"},
        {"name": "AIM_METRIC", "value": "latency"},
        {"name": "AIM_PRECISION", "value": "fp8"},
        {"name": "AIM_PROFILE_ID", "value": "vllm-mi300x-fp8-tp1-latency"},
        {"name": "VLLM_ENABLE_METRICS", "value": "true"},
    ]


def test_env_metric_and_precision_fall_back_to_discovered_profile() -> None:
    tpl = template(status={"profile": {"metadata": {"metric": "throughput", "precision": "bf16"}}})
    env = env_map(inference.container_env(inputs(tpl=tpl)))
    assert (env["AIM_METRIC"], env["AIM_PRECISION"]) == ("throughput", "bf16")
    assert "AIM_PROFILE_ID" not in env
    spec_wins = template({"metric": "latency"}, {"profile": {"metadata": {"metric": "throughput"}}})
    assert env_map(inference.container_env(inputs(tpl=spec_wins)))["AIM_METRIC"] == "latency"


def test_env_metric_and_precision_only_from_the_spec_when_released() -> None:
    """The released original sets AIM_METRIC/AIM_PRECISION from the template's spec only."""
    tpl = template(status={"profile": {"metadata": {"metric": "throughput", "precision": "bf16"}}})
    env = env_map(inference.container_env(inputs(tpl=tpl, behaviour=Behaviour.RELEASED)))
    assert "AIM_METRIC" not in env and "AIM_PRECISION" not in env
    spec = template({"metric": "latency", "precision": "fp8", "profileId": "p-1"}, tpl["status"])
    env = env_map(inference.container_env(inputs(tpl=spec, behaviour=Behaviour.RELEASED)))
    assert (env["AIM_METRIC"], env["AIM_PRECISION"], env["AIM_PROFILE_ID"]) == ("latency", "fp8", "p-1")


def test_env_model_id_from_model_spec_for_custom_models() -> None:
    mdl = model({"modelSources": [{"modelId": "meta/llama", "sourceUri": "hf://meta/llama"}]})
    assert env_map(inference.container_env(inputs(mdl=mdl)))["AIM_MODEL_ID"] == "meta/llama"
    tpl = template({"modelSources": [{"modelId": "from/template", "sourceUri": "hf://from/template"}]})
    both = inference.container_env(inputs(mdl=mdl, tpl=tpl))
    assert env_map(both)["AIM_MODEL_ID"] == "from/template"
    assert "AIM_MODEL_ID" not in env_map(inference.container_env(inputs()))


@pytest.mark.parametrize(("behaviour", "winner"), [(Behaviour.RELEASED, "latency"), (Behaviour.SEEDS, "cfg")])
def test_env_runtime_config_and_profile_without_duplicates(behaviour: Behaviour, winner: str) -> None:
    # The original appended AIM_METRIC after the runtime config's, producing two entries.
    env = inference.container_env(
        inputs(
            tpl=template({"metric": "latency"}),
            config_env=[{"name": "AIM_METRIC", "value": "cfg"}],
            behaviour=behaviour,
        )
    )
    assert [e for e in env if e["name"] == "AIM_METRIC"] == [{"name": "AIM_METRIC", "value": winner}]


@pytest.mark.parametrize(("behaviour", "y"), [(Behaviour.RELEASED, 2), (Behaviour.SEEDS, 1)])
def test_env_engine_args_deep_merged_across_layers(behaviour: Behaviour, y: int) -> None:
    cfg = [{"name": "AIM_ENGINE_ARGS", "value": json.dumps({"a": 1, "nested": {"x": 1, "y": 1}})}]
    tpl = template({"env": [{"name": "AIM_ENGINE_ARGS", "value": json.dumps({"b": 2, "nested": {"y": 2}})}]})
    svc = service({"env": [{"name": "AIM_ENGINE_ARGS", "value": json.dumps({"nested": {"z": 3}, "a": 9})}]})
    env = inference.container_env(inputs(svc=svc, tpl=tpl, config_env=cfg, behaviour=behaviour))
    args = [e for e in env if e["name"] == "AIM_ENGINE_ARGS"]
    assert len(args) == 1
    assert json.loads(args[0]["value"]) == {"a": 9, "b": 2, "nested": {"x": 1, "y": y, "z": 3}}


def test_env_of_a_cluster_template() -> None:
    """``spec.env`` is in the common template spec: a cluster template's reaches the predictor."""
    spec = {"modelName": "Qwen3-32B:0.8.5", "env": [{"name": "FROM_CLUSTER", "value": "1"}], "profileId": "p"}
    tpl = Template(CLUSTER_TEMPLATE, {"metadata": {"name": "c", "uid": "u"}, "spec": spec})
    assert [e.name for e in tpl.resource.spec.env or []] == ["FROM_CLUSTER"]
    env = env_map(inference.container_env(dataclasses.replace(inputs(), template=tpl)))
    assert (env["FROM_CLUSTER"], env["AIM_PROFILE_ID"]) == ("1", "p")


def test_env_value_from_is_kept() -> None:
    secret = {"secretKeyRef": {"name": "hf", "key": "token"}}
    svc = service({"env": [{"name": "HF_TOKEN", "valueFrom": secret}]})
    assert {"name": "HF_TOKEN", "valueFrom": secret} in inference.container_env(inputs(svc=svc))


def test_env_inputs_are_not_mutated() -> None:
    cfg = [{"name": "AIM_ENGINE_ARGS", "value": '{"a":1}'}]
    svc = service({"env": [{"name": "AIM_ENGINE_ARGS", "value": '{"b":2}'}]})
    before = (copy.deepcopy(cfg), copy.deepcopy(svc))
    inference.container_env(inputs(svc=svc, config_env=cfg))
    assert (cfg, svc) == before


# -- resources -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        ({"gpu": {"requests": 2}}, {"resolvedHardware": {"gpu": {"requests": 4}}}, 4),
        ({"gpu": {"requests": 2}}, {"resolvedHardware": {"gpu": {"requests": 0}}}, 0),
        ({"gpu": {"requests": 2}}, {"profile": {"metadata": {"gpuCount": 8}}}, 8),
        ({"gpu": {"requests": 2}}, {"profile": {"metadata": {"gpu_count": 3}}}, 3),
        ({"gpu": {"requests": 2}}, {}, 2),
        ({}, {}, 0),
    ],
)
def test_gpu_count_discovery_over_profile_over_spec(spec: Obj, status: Obj, expected: int) -> None:
    assert inference.gpu_count(TEMPLATE, template(spec, status)) == expected


def test_gpu_count_legacy_gpu_selector() -> None:
    tpl = {"metadata": {"name": "t"}, "spec": {"aimImageName": "img", "gpuSelector": {"count": 2}}}
    assert inference.gpu_count(LEGACY_TEMPLATE, tpl) == 2


def test_resources_defaults_scale_with_gpus() -> None:
    tpl = template({"gpu": {"requests": 2}})
    assert inference.container_resources(inputs(tpl=tpl)) == {
        "requests": {"amd.com/gpu": "2", "cpu": "8", "memory": "64Gi"},
        "limits": {"amd.com/gpu": "2", "memory": "96Gi"},
    }


def test_resources_cpu_only_template_has_no_defaults() -> None:
    assert inference.container_resources(inputs()) == {}
    tpl = template({"resources": {"requests": {"cpu": 2}, "limits": {"cpu": "2"}}})
    assert inference.container_resources(inputs(tpl=tpl)) == {
        "requests": {"cpu": "2"},
        "limits": {"cpu": "2"},
    }


def test_resources_custom_gpu_resource_name() -> None:
    tpl = template({"gpu": {"requests": 1, "resourceName": "amd.com/mi300x"}})
    res = inference.container_resources(inputs(tpl=tpl))
    assert res["requests"]["amd.com/mi300x"] == res["limits"]["amd.com/mi300x"] == "1"
    assert "amd.com/gpu" not in res["requests"]


@pytest.mark.parametrize(
    ("layers", "expected_memory", "expected_cpu"),
    [
        ((), "32Gi", "4"),
        (("model",), "m", "model-cpu"),
        (("model", "template"), "t", "model-cpu"),
        (("model", "template", "service"), "s", "model-cpu"),
        (("template", "service"), "s", "4"),
    ],
)
def test_resources_service_over_template_over_model_over_defaults(
    layers: tuple[str, ...], expected_memory: str, expected_cpu: str
) -> None:
    mdl = model({"resources": {"requests": {"memory": "m", "cpu": "model-cpu"}}} if "model" in layers else {})
    tspec: Obj = {"gpu": {"requests": 1}}
    if "template" in layers:
        tspec["resources"] = {"requests": {"memory": "t"}}
    sspec = {"resources": {"requests": {"memory": "s"}}} if "service" in layers else {}
    res = inference.container_resources(inputs(svc=service(sspec), mdl=mdl, tpl=template(tspec)))
    assert res["requests"]["memory"] == expected_memory
    assert res["requests"]["cpu"] == expected_cpu
    assert res["limits"]["memory"] == "48Gi"  # requests and limits merge separately


def test_resources_gpu_override_is_mirrored_to_the_other_side() -> None:
    tpl = template({"gpu": {"requests": 1}})
    svc = service({"resources": {"limits": {"amd.com/gpu": 2}}})
    res = inference.container_resources(inputs(svc=svc, tpl=tpl))
    assert res["requests"]["amd.com/gpu"] == res["limits"]["amd.com/gpu"] == "2"
    svc = service({"resources": {"requests": {"amd.com/gpu": "4"}}})
    res = inference.container_resources(inputs(svc=svc, tpl=tpl))
    assert res["requests"]["amd.com/gpu"] == res["limits"]["amd.com/gpu"] == "4"


def test_resources_gpu_unset_after_merge_comes_from_discovery() -> None:
    # The seed: "If GPU quantities remain unset after merging, the controller copies them from
    # discovery metadata recorded on the template".
    tpl = template(
        {"resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}},
        {"profile": {"metadata": {"gpuCount": 2}}},
    )
    res = inference.container_resources(inputs(tpl=tpl))
    assert res == {
        "requests": {"amd.com/gpu": "2", "cpu": "2", "memory": "8Gi"},
        "limits": {"amd.com/gpu": "2", "memory": "8Gi"},
    }


def test_resources_no_cpu_limit_by_default() -> None:
    res = inference.container_resources(inputs(tpl=template({"gpu": {"requests": 1}})))
    assert "cpu" not in res["limits"]


# -- replicas and autoscaling ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "scaling", "bounds"),
    [
        ({}, False, (1, 1)),
        ({"replicas": 3}, False, (3, 3)),
        ({"minReplicas": 2}, True, (2, 2)),
        ({"maxReplicas": 4}, True, (1, 4)),
        ({"minReplicas": 2, "maxReplicas": 5, "replicas": 9}, True, (2, 5)),
        ({"autoScaling": {}}, True, (1, 1)),
        # refused by the spec's validation before the deployer runs; built as written, not adjusted
        ({"minReplicas": 3, "maxReplicas": 2}, True, (3, 2)),
    ],
)
def test_replica_bounds(spec: Obj, scaling: bool, bounds: tuple[int, int]) -> None:
    assert inference.autoscaling(spec) is scaling
    obj = inference.build(inputs(svc=service(spec)))
    assert (predictor(obj)["minReplicas"], predictor(obj)["maxReplicas"]) == bounds
    annotations = obj["metadata"]["annotations"]
    assert annotations["serving.kserve.io/autoscalerClass"] == ("keda" if scaling else "none")


def test_fixed_replicas_annotations() -> None:
    obj = inference.build(inputs(svc=service({"replicas": 2})))
    assert obj["metadata"]["annotations"] == {
        "serving.kserve.io/autoscalerClass": "none",
        "serving.kserve.io/deploymentMode": "RawDeployment",
    }
    assert "autoScaling" not in predictor(obj)


def test_keda_annotations() -> None:
    obj = inference.build(inputs(svc=service({"minReplicas": 1, "maxReplicas": 3})))
    assert obj["metadata"]["annotations"] == {
        "prometheus.kserve.io/port": "8000",
        "serving.kserve.io/autoscalerClass": "keda",
        "serving.kserve.io/deploymentMode": "RawDeployment",
        "sidecar.opentelemetry.io/inject": "qwen3-chat-a04542d9-predictor",
    }


@pytest.mark.parametrize("behaviour", list(Behaviour))
def test_scale_to_zero_hands_scaling_to_the_operators_scaled_object(behaviour: Behaviour) -> None:
    obj = inference.build(inputs(svc=service({"minReplicas": 0, "maxReplicas": 3}), behaviour=behaviour))
    assert obj["metadata"]["annotations"] == {
        "prometheus.kserve.io/port": "8000",
        "serving.kserve.io/autoscalerClass": "external",
        "serving.kserve.io/deploymentMode": "RawDeployment",
        "sidecar.opentelemetry.io/inject": "qwen3-chat-a04542d9-predictor",
    }
    assert (predictor(obj)["minReplicas"], predictor(obj)["maxReplicas"]) == (0, 3)


def test_autoscaling_metrics_converted_with_defaults() -> None:
    spec = {
        "minReplicas": 1,
        "maxReplicas": 4,
        "autoScaling": {
            "metrics": [
                {
                    "type": "PodMetric",
                    "podmetric": {
                        "metric": {"query": "vllm:num_requests_running"},
                        "target": {"type": "Value", "value": "1"},
                    },
                },
                {
                    "type": "PodMetric",
                    "podmetric": {
                        "metric": {
                            "backend": "opentelemetry",
                            "serverAddress": "otel.example:4317",
                            "metricNames": ["vllm:num_requests_waiting"],
                            "operationOverTime": "avg",
                        },
                        "target": {"type": "AverageValue", "averageValue": "100m"},
                    },
                },
                {
                    "type": "PodMetric",
                    "podmetric": {"target": {"type": "Utilization", "averageUtilization": 80}},
                },
            ]
        },
    }
    obj = inference.build(inputs(svc=service(spec)))
    assert predictor(obj)["autoScaling"] == {
        "metrics": [
            {
                "type": "PodMetric",
                "podmetric": {
                    "metric": {
                        "backend": "opentelemetry",
                        "serverAddress": "keda-otel-scaler.keda.svc:4317",
                        "query": "vllm:num_requests_running",
                        "operationOverTime": "last_one",
                    },
                    "target": {"type": "Value", "value": "1"},
                },
            },
            {
                "type": "PodMetric",
                "podmetric": {
                    "metric": {
                        "backend": "opentelemetry",
                        "serverAddress": "otel.example:4317",
                        "metricNames": ["vllm:num_requests_waiting"],
                        "operationOverTime": "avg",
                    },
                    "target": {"type": "AverageValue", "averageValue": "100m"},
                },
            },
            {
                "type": "PodMetric",
                "podmetric": {
                    "metric": {
                        "backend": "opentelemetry",
                        "serverAddress": "keda-otel-scaler.keda.svc:4317",
                        "operationOverTime": "last_one",
                    },
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            },
        ]
    }


# -- the object ------------------------------------------------------------------------------------


def test_labels() -> None:
    svc = service(
        labels={"aim.eai.amd.com/team": "ml", "team": "ml", "aim.eai.amd.com/service": "spoofed"},
    )
    tpl = template({"metric": "latency"}, {"profile": {"metadata": {"precision": "fp8"}}})
    obj = inference.build(
        inputs(svc=svc, tpl=tpl, propagated_labels={"team": "ml", "app.kubernetes.io/component": "x"})
    )
    assert obj["metadata"]["labels"] == {
        "aim.eai.amd.com/team": "ml",
        "team": "ml",
        "app.kubernetes.io/component": "inference",
        "app.kubernetes.io/managed-by": "aim-engine",
        "app.kubernetes.io/part-of": "aim-engine",
        "aim.eai.amd.com/service": "qwen3-chat",
        "aim.eai.amd.com/template": "qwen3-mi300x-lat",
        "aim.eai.amd.com/model": "qwen3-32b_0.8.5",
        "aim.eai.amd.com/metric": "latency",
        "aim.eai.amd.com/precision": "fp8",
    }


def test_labels_omit_unknown_metric_and_precision() -> None:
    labels = inference.build(inputs())["metadata"]["labels"]
    assert "aim.eai.amd.com/metric" not in labels and "aim.eai.amd.com/precision" not in labels


@pytest.mark.parametrize("mode", ["RawDeployment", "Standard"])
def test_deployment_mode_spellings(mode: str) -> None:
    obj = inference.build(inputs(deployment_mode=mode))
    assert obj["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == mode


def test_full_object() -> None:
    svc = service(
        {
            "replicas": 2,
            "imagePullSecrets": [{"name": "ghcr"}],
            "serviceAccountName": "inference",
            "env": [{"name": "X", "value": "1"}],
        }
    )
    tpl = template({"gpu": {"requests": 1}})
    obj = inference.build(inputs(svc=svc, tpl=tpl))
    assert obj["apiVersion"] == "serving.kserve.io/v1beta1"
    assert obj["kind"] == "InferenceService"
    assert obj["metadata"]["name"] == "qwen3-chat-a04542d9"
    assert obj["metadata"]["namespace"] == "ml-team"
    assert obj["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMService",
            "name": "qwen3-chat",
            "uid": "svc-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert predictor(obj) == {
        "minReplicas": 2,
        "maxReplicas": 2,
        "imagePullSecrets": [{"name": "ghcr"}],
        "serviceAccountName": "inference",
        "containers": [
            {
                "name": "kserve-container",
                "image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5",
                "imagePullPolicy": "IfNotPresent",
                "env": inference.container_env(inputs(svc=svc, tpl=tpl)),
                "resources": {
                    "requests": {"amd.com/gpu": "1", "cpu": "4", "memory": "32Gi"},
                    "limits": {"amd.com/gpu": "1", "memory": "48Gi"},
                },
                "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
                "readinessProbe": {
                    "httpGet": {"path": "/health", "port": "http"},
                    "periodSeconds": 2,
                    "timeoutSeconds": 1,
                    "failureThreshold": 3,
                },
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
    }


def test_volumes_per_cache() -> None:
    caches = (
        CacheMount("Llama_3.8B", "llama-cache-1234", "/workspace/model-cache/meta-llama/Llama-3-8B"),
        CacheMount("draft", "draft-cache-5678", "/workspace/model-cache/a/draft"),
    )
    pred = predictor(inference.build(inputs(caches=caches)))
    assert pred["containers"][0]["volumeMounts"] == [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "draft", "mountPath": "/workspace/model-cache/a/draft"},
        {"name": "llama-3-8b", "mountPath": "/workspace/model-cache/meta-llama/Llama-3-8B"},
    ]
    assert pred["volumes"][1:] == [
        {"name": "draft", "persistentVolumeClaim": {"claimName": "draft-cache-5678"}},
        {"name": "llama-3-8b", "persistentVolumeClaim": {"claimName": "llama-cache-1234"}},
    ]
    # Same caches in another order: the same object.
    again = predictor(inference.build(inputs(caches=tuple(reversed(caches)))))
    assert again == pred


def test_volume_names_stay_unique_and_valid() -> None:
    caches = (
        CacheMount("A" * 80, "c1", "/m/1"),
        CacheMount("a" * 80, "c2", "/m/2"),
        CacheMount("dshm", "c3", "/m/3"),
    )
    names = [v["name"] for v in predictor(inference.build(inputs(caches=caches)))["volumes"]]
    assert len(names) == len(set(names)) == 4
    assert all(len(n) <= 63 for n in names)


@pytest.mark.parametrize(
    ("resolved", "expected"),
    [
        (None, None),
        ({}, None),
        (
            {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": ["term"]}},
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": ["term"]}
                }
            },
        ),
        (
            {"nodeSelectorTerms": ["term"]},
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": ["term"]}
                }
            },
        ),
    ],
)
def test_affinity(resolved: Obj | None, expected: Obj | None) -> None:
    status = {} if resolved is None else {"resolvedNodeAffinity": resolved}
    pred = predictor(inference.build(inputs(tpl=template(status=status))))
    assert pred.get("affinity") == expected


def test_affinity_from_gpu_check_shape() -> None:
    check = check_gpu(model="MI300X", requests=1, min_vram=None, inventory=Inventory(()))
    assert check.node_affinity is not None
    pred = predictor(
        inference.build(inputs(tpl=template(status={"resolvedNodeAffinity": check.node_affinity})))
    )
    assert pred["affinity"] == {"nodeAffinity": check.node_affinity}


def test_deterministic_and_inputs_untouched() -> None:
    svc = service({"minReplicas": 1, "maxReplicas": 2, "env": [{"name": "B", "value": "1"}]})
    tpl = template({"gpu": {"requests": 1}, "env": [{"name": "A", "value": "2"}]})
    before = copy.deepcopy((svc, tpl))
    first = inference.build(inputs(svc=svc, tpl=tpl))
    second = inference.build(inputs(svc=copy.deepcopy(svc), tpl=copy.deepcopy(tpl)))
    assert first == second
    assert json.dumps(first, sort_keys=False) == json.dumps(second, sort_keys=False)
    assert (svc, tpl) == before


# -- legacy group ----------------------------------------------------------------------------------


def test_legacy_service_template_and_image() -> None:
    svc = {
        "metadata": {"name": "legacy-svc", "namespace": "ml-team", "uid": "u1", "labels": {}},
        "spec": {
            "aimImageName": "llama",
            "templateRef": "llama-tpl",
            "replicas": 2,
            "env": [{"name": "S", "value": "s"}],
        },
    }
    image = {
        "metadata": {"name": "llama"},
        "spec": {"image": "ghcr.io/x/llama:1", "resources": {"requests": {"cpu": "3"}}},
    }
    tpl = {
        "metadata": {"name": "llama-tpl", "namespace": "ml-team"},
        "spec": {
            "aimImageName": "llama",
            "metric": "throughput",
            "precision": "fp16",
            "gpuSelector": {"count": 2, "model": "MI300X"},
        },
        "status": {},
    }
    obj = inference.build(
        Inputs(
            service=ServiceView(LEGACY_SERVICE, svc),
            model=Model(LEGACY_IMAGE, image),
            template=Template(LEGACY_TEMPLATE, tpl),
            config_env=[],
            propagated_labels={},
        )
    )
    pred = predictor(obj)
    container = pred["containers"][0]
    assert container["image"] == "ghcr.io/x/llama:1"
    assert container["resources"] == {
        "requests": {"amd.com/gpu": "2", "cpu": "3", "memory": "64Gi"},
        "limits": {"amd.com/gpu": "2", "memory": "96Gi"},
    }
    env = env_map(container["env"])
    assert (env["AIM_METRIC"], env["AIM_PRECISION"], env["S"]) == ("throughput", "fp16", "s")
    assert (pred["minReplicas"], pred["maxReplicas"]) == (2, 2)
    assert obj["metadata"]["ownerReferences"][0]["apiVersion"] == "aim.silogen.ai/v1alpha1"
    assert obj["metadata"]["labels"]["aim.eai.amd.com/template"] == "llama-tpl"
    assert obj["metadata"]["labels"]["aim.eai.amd.com/model"] == "llama"


def test_cluster_template_ref_reads_the_same() -> None:
    tpl = template({"gpu": {"requests": 1}})
    obj = inference.build(
        Inputs(
            service=ServiceView(SERVICE, service()),
            model=Model(MODEL, model()),
            template=Template(CLUSTER_TEMPLATE, tpl),
            config_env=[],
            propagated_labels={},
        )
    )
    assert predictor(obj)["containers"][0]["resources"]["limits"]["amd.com/gpu"] == "1"


# -- annotations propagated from the service -----------------------------------------------------


def test_only_allowed_annotations_of_the_service_reach_the_inference_service() -> None:
    svc = service()
    svc["metadata"]["annotations"] = {
        "example.com/team": "ml",
        "example.com/cost-center": "42",
        "cost-center": "7",
        "other.org/x": "no",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "serving.kserve.io/deploymentMode": "Serverless",  # would steer KServe
        "aim.eai.amd.com/recorded": "ours",
        "node.kubernetes.io/x": "reserved subdomain",
    }
    globs = ("example.com/*", "cost-center", "*.io/*", "serving.kserve.io/*", "aim.eai.amd.com/*")
    body = inference.build(inputs(svc=svc, annotation_globs=globs))
    annotations = body["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if not k.startswith("serving.kserve.io/")} == {
        "cost-center": "7",
        "example.com/cost-center": "42",
        "example.com/team": "ml",
    }
    assert annotations["serving.kserve.io/deploymentMode"] == "RawDeployment"  # the operator's wins
    assert list(annotations) == sorted(annotations)


def test_no_annotation_propagates_without_an_allow_list() -> None:
    svc = service()
    svc["metadata"]["annotations"] = {"example.com/team": "ml"}
    assert "example.com/team" not in inference.build(inputs(svc=svc))["metadata"]["annotations"]
    assert inference.propagated_annotations({"example.com/team": "ml"}, ()) == {}
