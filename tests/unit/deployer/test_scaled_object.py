"""Scale to zero (the released original's 0.2.5): which services the operator scales itself
(``aim_deployer.inference.owns_scaler``), the ScaledObject it writes for them
(``aim_deployer.scaled_object.build``), how KEDA's HPA reads as ``HPAReady``, and the spec's new
refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from aim_deployer import inference, scaled_object
from aim_deployer.service_view import ServiceView
from aimcore.api.behaviour import Behaviour
from aimcore.api.crds.aim import AIMServiceSpec
from aimcore.api.kinds import by_kind
from aimcore.api.types import Obj

AIM = "aim.eai.amd.com"
SERVICE = by_kind(AIM, "AIMService")
LEGACY_SERVICE = by_kind("aim.silogen.ai", "AIMService")
ADDRESS = "keda-otel-scaler.keda.svc:4318"
ISVC = "chat-a04542d9"
PREDICTOR = f"{ISVC}-predictor"
METRIC = {
    "type": "PodMetric",
    "podmetric": {
        "metric": {"query": "vllm:num_requests_running", "operationOverTime": "avg"},
        "target": {"type": "Value", "value": "2"},
    },
}


def view(spec: Obj, ref: Any = SERVICE) -> ServiceView:
    return ServiceView(
        ref,
        {
            "apiVersion": ref.api_version,
            "kind": "AIMService",
            "metadata": {"name": "chat", "namespace": "ml-team", "uid": "svc-uid"},
            "spec": {"model": {"name": "m"}, **spec},
        },
    )


def build(spec: Obj, memory: str | None = None) -> Obj | None:
    resources = {"requests": {"memory": memory}} if memory else {}
    return scaled_object.build(view(spec), ISVC, resources, address=ADDRESS, seconds_per_gib=5)


# -- who scales ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "behaviour", "owned"),
    [
        ({"minReplicas": 0, "maxReplicas": 3}, Behaviour.SEEDS, True),
        ({"minReplicas": 0, "maxReplicas": 3}, Behaviour.RELEASED, True),
        ({"minReplicas": 1, "maxReplicas": 3, "autoScaling": {"metrics": [METRIC]}}, Behaviour.SEEDS, False),
        (
            {"minReplicas": 1, "maxReplicas": 3, "autoScaling": {"metrics": [METRIC]}},
            Behaviour.RELEASED,
            True,
        ),
        # the release writes no ScaledObject without a trigger; KServe's own (the seeds') is kept
        ({"minReplicas": 1, "maxReplicas": 3}, Behaviour.RELEASED, False),
        ({"replicas": 2}, Behaviour.RELEASED, False),
    ],
)
def test_the_operator_scales_what_scales_to_zero_and_under_released_what_has_metrics(
    spec: Obj, behaviour: Behaviour, owned: bool
) -> None:
    assert inference.owns_scaler(view(spec), behaviour) is owned


def test_the_legacy_group_keeps_kserves_scaler() -> None:
    legacy = view({"minReplicas": 1, "maxReplicas": 3, "autoScaling": {"metrics": [METRIC]}}, LEGACY_SERVICE)
    assert not inference.owns_scaler(legacy, Behaviour.RELEASED)


def test_zero_is_a_minimum_and_the_maximum_defaults_to_one() -> None:
    assert inference.replica_bounds(view({"minReplicas": 0}).spec) == (0, 1)
    assert inference.replica_bounds(view({"minReplicas": 0, "maxReplicas": 4}).spec) == (0, 4)


# -- the ScaledObject --------------------------------------------------------------------------------


def test_scale_to_zero_gets_the_gateway_activation_trigger_and_the_defaults() -> None:
    body = build({"minReplicas": 0, "maxReplicas": 3}, memory="16Gi")
    assert body is not None
    assert body["apiVersion"] == "keda.sh/v1alpha1"
    assert body["kind"] == "ScaledObject"
    assert body["metadata"]["name"] == PREDICTOR
    assert body["metadata"]["namespace"] == "ml-team"
    assert body["metadata"]["labels"]["app.kubernetes.io/component"] == "autoscaling"
    assert body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "aim-engine"
    assert body["metadata"]["labels"]["aim.eai.amd.com/service"] == "chat"
    owner = body["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("AIMService", "svc-uid", True)
    assert body["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": PREDICTOR},
        "minReplicaCount": 0,
        "maxReplicaCount": 3,
        "pollingInterval": 5,
        "cooldownPeriod": 380,  # 300 + 5 s for each of 16 GiB
        "triggers": [
            {
                "type": "external",
                "metadata": {
                    "scalerAddress": ADDRESS,
                    "query": (
                        "sum(envoy_cluster_external_upstream_rq_completed"
                        f'{{namespace="ml-team",deployment="{PREDICTOR}"}})'
                    ),
                    "targetValue": "1000000000",
                    "operationOverTime": "avg",
                },
            }
        ],
    }


def test_metrics_follow_the_activation_trigger_scoped_to_the_predictor() -> None:
    selector = {
        "type": "PodMetric",
        "podmetric": {
            "metric": {"metricNames": ['x{pod=~"a.*"}'], "serverAddress": "otel.example:4318"},
            "target": {"type": "AverageValue", "averageValue": "5"},
        },
    }
    spec = {
        "minReplicas": 0,
        "maxReplicas": 2,
        "autoScaling": {"metrics": [METRIC, selector], "pollingInterval": 7, "cooldownPeriod": 30},
    }
    body = build(spec)
    assert body is not None
    assert (body["spec"]["pollingInterval"], body["spec"]["cooldownPeriod"]) == (7, 30)
    _, first, second = body["spec"]["triggers"]
    assert first["metadata"] == {
        "scalerAddress": ADDRESS,
        "query": f'sum(vllm:num_requests_running{{namespace="ml-team",deployment="{PREDICTOR}"}})',
        "targetValue": "2",
        "operationOverTime": "avg",
    }
    assert second["metadata"]["query"] == 'x{pod=~"a.*"}'  # its own selector: used as written
    assert second["metadata"]["scalerAddress"] == "otel.example:4318"
    assert second["metadata"]["targetValue"] == "5"
    assert second["metadata"]["operationOverTime"] == "last_one"


def test_without_scale_to_zero_only_what_is_written_is_set_and_no_trigger_means_no_object() -> None:
    body = build({"minReplicas": 1, "maxReplicas": 3, "autoScaling": {"metrics": [METRIC]}})
    assert body is not None
    assert "pollingInterval" not in body["spec"]
    assert "cooldownPeriod" not in body["spec"]
    assert [t["metadata"]["targetValue"] for t in body["spec"]["triggers"]] == ["2"]
    assert build({"minReplicas": 1, "maxReplicas": 3}) is None


@pytest.mark.parametrize(
    ("memory", "cooldown"),
    [(None, 300), (0, 300), (16 << 30, 380), (100 << 30, 800), (1000 << 30, 1200), (1 << 29, 302)],
)
def test_the_default_cooldown_grows_with_memory_between_300_and_1200(
    memory: int | None, cooldown: int
) -> None:
    assert scaled_object.cooldown_default(memory, 5) == cooldown


# -- HPAReady and idleness ------------------------------------------------------------------------


def hpa(**conditions: tuple[str, str]) -> Obj:
    return {
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": f"{t} says {r}"}
                for t, (s, r) in conditions.items()
            ]
        }
    }


def deployment(replicas: int) -> Obj:
    return {"spec": {"replicas": replicas}}


HPA_NAME = f"keda-hpa-{PREDICTOR}"


@pytest.mark.parametrize(
    ("found", "deploy", "low", "expected"),
    [
        (None, deployment(1), 0, (False, "HPANotFound")),
        (
            hpa(AbleToScale=("True", "SucceededGetScale"), ScalingActive=("False", "ScalingDisabled")),
            deployment(0),
            0,
            (True, "ScaledToZero"),
        ),
        # KEDA set the Deployment to 0 before the HPA controller noticed
        (hpa(AbleToScale=("True", "ReadyForNewScale")), deployment(0), 0, (True, "ScaledToZero")),
        (
            hpa(AbleToScale=("True", "ReadyForNewScale"), ScalingActive=("False", "FailedGetExternalMetric")),
            deployment(1),
            0,
            (True, "HPAOperational"),
        ),
        (
            hpa(AbleToScale=("False", "FailedGetScale"), ScalingActive=("True", "ValidMetricFound")),
            deployment(1),
            1,
            (False, "ScaleTargetNotReady"),
        ),
        (
            hpa(AbleToScale=("True", "ReadyForNewScale"), ScalingActive=("False", "FailedGetExternalMetric")),
            deployment(1),
            1,
            (False, "WaitingForMetrics"),
        ),
        (
            hpa(AbleToScale=("True", "ReadyForNewScale"), ScalingActive=("True", "ValidMetricFound")),
            deployment(2),
            1,
            (True, "HPAOperational"),
        ),
    ],
)
def test_hpa_ready_reads_kedas_hpa(
    found: Obj | None, deploy: Obj, low: int, expected: tuple[bool, str]
) -> None:
    health = scaled_object.hpa_health(HPA_NAME, found, deploy, low)
    assert (health.ok, health.reason) == expected
    assert health.message


def test_the_hpas_own_words_are_quoted_when_it_waits() -> None:
    found = hpa(AbleToScale=("True", "ReadyForNewScale"), ScalingActive=("False", "FailedGetExternalMetric"))
    message = scaled_object.hpa_health(HPA_NAME, found, deployment(1), 1).message
    assert "FailedGetExternalMetric: ScalingActive says FailedGetExternalMetric" in message


def test_an_hpa_read_as_autoscaling_v1_keeps_its_conditions_in_an_annotation() -> None:
    conditions = [
        {"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale"},
        {"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled"},
    ]
    v1 = {"metadata": {"annotations": {"autoscaling.alpha.kubernetes.io/conditions": json.dumps(conditions)}}}
    assert scaled_object.idle(0, deployment(1), v1)
    assert scaled_object.hpa_health(HPA_NAME, v1, deployment(0), 0).reason == "ScaledToZero"
    broken = {"metadata": {"annotations": {"autoscaling.alpha.kubernetes.io/conditions": "{not json"}}}
    assert scaled_object.hpa_health(HPA_NAME, broken, deployment(1), 1).reason == "ScaleTargetNotReady"


def test_only_a_service_that_scales_to_zero_is_ever_idle() -> None:
    disabled = hpa(ScalingActive=("False", "ScalingDisabled"))
    assert scaled_object.idle(0, deployment(0), None)
    assert scaled_object.idle(0, deployment(1), disabled)
    assert not scaled_object.idle(0, deployment(1), None)
    assert not scaled_object.idle(1, deployment(0), disabled)


# -- refusals (the release's CEL; the local API server has none, so the model checks them) ----------


def spec(**fields: Any) -> Obj:
    return {"model": {"name": "m"}, **fields}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"autoScaling": {}}, "autoScaling must set at least one of"),
        (
            {
                "autoScaling": {
                    "metrics": [
                        {"type": "PodMetric", "podmetric": {"target": {"type": "Value", "value": "1"}}}
                    ]
                }
            },
            "needs podmetric.metric.query or podmetric.metric.metricNames",
        ),
        ({"minReplicas": 2, "maxReplicas": 1}, "minReplicas must not be greater than maxReplicas"),
        ({"autoScaling": {"pollingInterval": 0}}, "greater than or equal to 1"),
        ({"minReplicas": -1}, "greater than or equal to 0"),
    ],
)
def test_bad_scaling_is_refused(fields: Obj, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AIMServiceSpec.model_validate(spec(**fields))


def test_scale_to_zero_specs_are_accepted() -> None:
    parsed = AIMServiceSpec.model_validate(
        spec(minReplicas=0, maxReplicas=3, autoScaling={"cooldownPeriod": 0, "metrics": [METRIC]})
    )
    assert parsed.min_replicas == 0
    assert parsed.auto_scaling is not None
    assert parsed.auto_scaling.model_dump(by_alias=True, exclude_none=True)["cooldownPeriod"] == 0
