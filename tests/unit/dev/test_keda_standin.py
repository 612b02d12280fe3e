"""The KEDA stand-in's decisions (pure, :mod:`aim_dev.keda.scaledobject`): the HPA KEDA keeps for a
ScaledObject as the deployer writes it for scale to zero, KEDA's check of the ScaledObject, the
activation decision taken from the stand-in's annotation, and the status KEDA writes."""

from __future__ import annotations

from typing import Any

import pytest

from aim_deployer.replica_status import hpa_name as deployer_hpa_name
from aim_dev.keda import scaledobject as keda
from aim_dev.local.passes import Together
from aimcore.api.kinds import HPA


def scaled_object(*, activity: str | None = None, **spec: Any) -> dict[str, Any]:
    annotations = {"aim.eai.amd.com/owner": "chat"}
    if activity is not None:
        annotations[keda.ACTIVITY_ANNOTATION] = activity
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": "chat-1a2b3c4d-predictor",
            "namespace": "team",
            "uid": "so-1",
            "resourceVersion": "7",
            "labels": {"aim.eai.amd.com/service": "chat", "app.kubernetes.io/part-of": "aim-engine"},
            "annotations": annotations,
        },
        "spec": {
            "scaleTargetRef": {"name": "chat-1a2b3c4d-predictor"},
            "minReplicaCount": 0,
            "maxReplicaCount": 3,
            "pollingInterval": 15,
            "cooldownPeriod": 300,
            "triggers": [{"type": "prometheus", "metadata": {"query": "ignored", "threshold": "1"}}],
            **spec,
        },
    }


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "chat-1a2b3c4d-predictor", "resourceVersion": "9"},
        "spec": {"replicas": replicas},
    }


def test_the_hpa_is_keda_s_for_the_scaled_object_within_its_bounds() -> None:
    so = scaled_object(activity="idle")
    plan = keda.plan(so, deployment(1))
    hpa = plan.hpa
    assert hpa is not None
    assert (hpa["apiVersion"], hpa["kind"]) == (HPA.api_version, HPA.kind)  # what the watcher reads
    meta = hpa["metadata"]
    assert meta["name"] == "keda-hpa-chat-1a2b3c4d-predictor"
    assert meta["name"] == deployer_hpa_name("chat-1a2b3c4d-predictor")  # where the deployer looks
    assert meta["namespace"] == "team"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "name": "chat-1a2b3c4d-predictor",
            "uid": "so-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["labels"] == {
        "app.kubernetes.io/name": "keda-hpa-chat-1a2b3c4d-predictor",
        "app.kubernetes.io/part-of": "aim-engine",  # the ScaledObject's labels win, as in KEDA
        "app.kubernetes.io/managed-by": "keda-operator",
        "aim.eai.amd.com/service": "chat",
        "scaledobject.keda.sh/name": "chat-1a2b3c4d-predictor",
    }
    # the ScaledObject's annotations, not the stand-in's input (flipping it rewrites no HPA)
    assert meta["annotations"]["aim.eai.amd.com/owner"] == "chat"
    assert keda.ACTIVITY_ANNOTATION not in meta["annotations"]
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-1a2b3c4d-predictor"},
        "minReplicas": 1,  # minReplicaCount 0: an HPA cannot go below 1, KEDA scales to zero itself
        "maxReplicas": 3,
        "targetCPUUtilizationPercentage": 80,
    }


def test_the_hpa_is_rewritten_only_when_what_it_would_say_changes() -> None:
    first = keda.plan(scaled_object(activity="idle"), deployment(1)).hpa
    assert keda.spec_hash(first) is not None
    assert keda.spec_hash(first) == keda.spec_hash(
        keda.plan(scaled_object(activity="active"), deployment(0)).hpa
    )
    assert keda.spec_hash(first) == keda.spec_hash(keda.plan(scaled_object(), deployment(4)).hpa)
    changed = keda.plan(scaled_object(maxReplicaCount=5), deployment(1)).hpa
    assert keda.spec_hash(first) != keda.spec_hash(changed)
    assert changed is not None and changed["spec"]["maxReplicas"] == 5


def test_keda_s_defaults_and_a_minimum_above_zero() -> None:
    so = scaled_object()
    del so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]
    hpa = keda.plan(so, deployment(1)).hpa
    assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 100)
    hpa = keda.plan(scaled_object(minReplicaCount=2, maxReplicaCount=4), deployment(2)).hpa
    assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 4)


@pytest.mark.parametrize(
    ("activity", "current", "low", "wanted"),
    [
        (None, 3, 0, None),  # no decision: replicas left as they are
        (None, 0, 1, None),
        ("idle", 2, 0, 0),  # KEDA scales to zero itself (cooldown not emulated)
        ("idle", 0, 0, None),  # already there: nothing written
        ("idle", 2, 1, None),  # a minimum above zero: the HPA governs
        ("idle", 0, 2, 2),  # below the minimum: brought to it
        ("active", 0, 0, 1),  # from zero to max(minReplicaCount, 1)
        ("active", 0, 2, 2),
        ("active", 2, 0, None),  # running: the HPA governs 1..max
        ("ACTIVE ", 0, 0, 1),
        ("busy", 0, 0, None),  # anything else is no decision
    ],
)
def test_the_activation_decision_follows_keda_s_scale_executor(
    activity: str | None, current: int, low: int, wanted: int | None
) -> None:
    plan = keda.plan(scaled_object(activity=activity, minReplicaCount=low), deployment(current))
    assert plan.replicas == wanted


def test_the_status_says_ready_and_whether_the_triggers_are_active() -> None:
    def conditions(plan: keda.Plan) -> dict[str, tuple[str, str]]:
        return {c["type"]: (c["status"], c.get("reason", "")) for c in plan.status["conditions"]}

    active = keda.plan(scaled_object(activity="active"), deployment(0))
    assert conditions(active) == {"Ready": ("True", "ScaledObjectReady"), "Active": ("True", "ScalerActive")}
    assert active.status["hpaName"] == "keda-hpa-chat-1a2b3c4d-predictor"
    assert active.status["scaleTargetKind"] == "apps/v1.Deployment"
    idle = keda.plan(scaled_object(activity="idle"), deployment(0))
    assert conditions(idle)["Active"] == ("False", "ScalerNotActive")
    undecided = keda.plan(scaled_object(), deployment(0))
    assert conditions(undecided)["Active"] == ("Unknown", "")
    # written only when it differs
    so = scaled_object(activity="idle")
    assert keda.status_differs(so, idle.status)
    so["status"] = {**idle.status, "lastActiveTime": "kept"}
    assert not keda.status_differs(so, idle.status)
    assert keda.status_differs(so, active.status)


def test_a_missing_target_fails_keda_s_check_and_nothing_is_written() -> None:
    plan = keda.plan(scaled_object(activity="idle"), None)
    assert (plan.hpa, plan.replicas) == (None, None)
    ready, active = plan.status["conditions"]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "False", "ScaledObjectCheckFailed")
    assert ready["message"] == (
        "ScaledObject doesn't have correct scaleTargetRef specification: "
        'deployments.apps "chat-1a2b3c4d-predictor" not found'
    )
    assert (active["status"], active["reason"]) == ("Unknown", "UnknownState")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"minReplicaCount": 4, "maxReplicaCount": 2},
            "MinReplicaCount=4 must be less than MaxReplicaCount=2",
        ),
        ({"minReplicaCount": -1}, "must be counts"),
        ({"scaleTargetRef": {"kind": "StatefulSet", "name": "x"}}, "apps/v1.Deployment only"),
        ({"scaleTargetRef": {}}, "scaleTargetRef specification"),
    ],
)
def test_a_scaled_object_keda_would_refuse_gets_no_hpa_and_no_scaling(
    spec: dict[str, Any], message: str
) -> None:
    plan = keda.plan(scaled_object(activity="idle", **spec), deployment(2))
    assert (plan.hpa, plan.replicas) == (None, None)
    ready = plan.status["conditions"][0]
    assert (ready["type"], ready["status"]) == ("Ready", "False")
    assert message in ready["message"]


def test_a_long_name_is_trimmed_as_keda_trims_it() -> None:
    assert len(keda.hpa_name("x" * 80)) == 63


class Recorder:
    def __init__(self, name: str, calls: list[str], fail: bool = False) -> None:
        self.name, self.calls, self.fail = name, calls, fail

    async def tick(self) -> None:
        self.calls.append(self.name)
        if self.fail:
            raise OSError(f"{self.name} failed")


async def test_one_process_runs_the_kserve_and_keda_passes_whatever_the_first_did() -> None:
    calls: list[str] = []
    both = Together(Recorder("kserve", calls, fail=True), Recorder("keda", calls))
    with pytest.raises(OSError, match="kserve failed"):  # run_passes logs it and goes on
        await both.tick()
    assert calls == ["kserve", "keda"]
