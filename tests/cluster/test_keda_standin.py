"""The KEDA stand-in (:mod:`aim_dev.keda`) and the KServe stand-in's ``autoscalerClass: external``
against the real kube-apiserver and kube-controller-manager, whose HPA controller reads the HPA the
stand-in keeps: a target scaled to zero by the idle decision is ``ScalingActive=False/
ScalingDisabled`` (what the operator reads as idle), and the active decision brings it back under
the HPA. Passes are run by the test (``tick``), scoped to the test's namespace (the control plane is
shared); no kubelet runs here, so the pods stay Pending, which none of this needs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aim_dev.keda import scaledobject as keda
from aim_dev.keda.controller import KedaStandIn
from aim_dev.kserve import raw
from aim_dev.kserve.controller import StandIn
from aim_dev.local.passes import Passes, Together
from aimcore.api.kinds import DEPLOYMENT, HPA, INFERENCE_SERVICE, SCALED_OBJECT
from aimcore.runtime import Kube
from tests.helpers import eventually

TARGET = "web-predictor"
HPA_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
"""Where autoscaling/v1 (the version the watcher reads) carries the HPA's conditions."""


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def scaled_object(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": SCALED_OBJECT.api_version,
        "kind": SCALED_OBJECT.kind,
        "metadata": {"name": name, "labels": labels or {"app.kubernetes.io/part-of": "aim-engine"}},
        "spec": {
            "scaleTargetRef": {"name": name},
            "minReplicaCount": 0,
            "maxReplicaCount": 3,
            "pollingInterval": 15,
            "cooldownPeriod": 300,
            "triggers": [{"type": "prometheus", "metadata": {"threshold": "1"}}],
        },
    }


async def annotate(kube: Kube, namespace: str, activity: str) -> None:
    patch = {"metadata": {"annotations": {keda.ACTIVITY_ANNOTATION: activity}}}
    await kube.patch(SCALED_OBJECT, namespace, TARGET, patch)


async def replicas(kube: Kube, namespace: str, name: str) -> int:
    dep = await kube.get(DEPLOYMENT, namespace, name)
    assert dep is not None
    return int(dep["spec"]["replicas"])


def scaling_active(hpa: dict[str, Any]) -> dict[str, Any] | None:
    raw_conditions = (hpa["metadata"].get("annotations") or {}).get(HPA_CONDITIONS)
    for c in json.loads(raw_conditions) if raw_conditions else []:
        if c.get("type") == "ScalingActive":
            return dict(c)
    return None


def conditions(so: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (so.get("status") or {}).get("conditions") or []}


async def settled(passes: Passes, kube: Kube, namespace: str, name: str, **labels: str) -> dict[str, Any]:
    """The Deployment once it carries ``labels``, running a pass before each look: a write the
    Deployment controller's own status writes kept refusing (409) is made by a later pass."""

    async def probe() -> dict[str, Any] | None:
        await passes.tick()
        dep = await kube.get(DEPLOYMENT, namespace, name)
        found = (dep or {}).get("metadata", {}).get("labels") or {}
        return dep if all(found.get(k) == v for k, v in labels.items()) else None

    return await eventually(probe, timeout=30, interval=0.2, what=f"Deployment {name} with {labels}")


async def replicas_become(passes: Passes, kube: Kube, namespace: str, name: str, wanted: int) -> None:
    async def probe() -> bool:
        await passes.tick()
        return await replicas(kube, namespace, name) == wanted

    await eventually(probe, timeout=30, interval=0.2, what=f"{name} at {wanted} replicas")


@pytest.mark.timeout(180)  # two resyncs of the HPA controller (15 s each) on a loaded machine
async def test_idle_scales_the_target_to_zero_and_the_real_hpa_controller_disables_scaling(
    kube: Kube, namespace: str
) -> None:
    await kube.create(DEPLOYMENT, deployment(TARGET, 2), namespace)
    so = await kube.create(SCALED_OBJECT, scaled_object(TARGET), namespace)
    passes = KedaStandIn(kube, namespace)
    await passes.tick()

    hpa = await kube.get(HPA, namespace, f"keda-hpa-{TARGET}")
    assert hpa is not None
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": TARGET}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    [owner] = hpa["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("ScaledObject", so["metadata"]["uid"], True)
    assert hpa["metadata"]["labels"][keda.SCALED_OBJECT_LABEL] == TARGET
    assert await replicas(kube, namespace, TARGET) == 2  # no decision yet: left alone
    so = await kube.get(SCALED_OBJECT, namespace, TARGET) or {}
    assert conditions(so) == {"Ready": "True", "Active": "Unknown"}

    # a second pass writes nothing
    await passes.tick()
    again = await kube.get(HPA, namespace, f"keda-hpa-{TARGET}")
    assert again is not None and again["spec"] == hpa["spec"]
    so_again = await kube.get(SCALED_OBJECT, namespace, TARGET) or {}
    assert so_again["metadata"]["resourceVersion"] == so["metadata"]["resourceVersion"]

    await annotate(kube, namespace, keda.IDLE)
    await replicas_become(passes, kube, namespace, TARGET, 0)

    async def disabled() -> dict[str, Any] | None:
        await passes.tick()  # the stand-in and the HPA controller agree: nothing moves
        assert await replicas(kube, namespace, TARGET) == 0
        got = await kube.get(HPA, namespace, f"keda-hpa-{TARGET}")
        active = scaling_active(got) if got else None
        return active if active and active.get("reason") == "ScalingDisabled" else None

    active = await eventually(disabled, timeout=60, interval=0.5, what="ScalingActive=False/ScalingDisabled")
    assert active["status"] == "False"
    so = await kube.get(SCALED_OBJECT, namespace, TARGET) or {}
    assert conditions(so) == {"Ready": "True", "Active": "False"}

    await annotate(kube, namespace, keda.ACTIVE)
    await replicas_become(passes, kube, namespace, TARGET, 1)
    so = await kube.get(SCALED_OBJECT, namespace, TARGET) or {}
    assert conditions(so) == {"Ready": "True", "Active": "True"}

    async def governed() -> dict[str, Any] | None:
        got = await kube.get(HPA, namespace, f"keda-hpa-{TARGET}")
        active = scaling_active(got) if got else None
        return active if active and active.get("reason") != "ScalingDisabled" else None

    # the HPA controller acts again (it has no metrics here, so it says that instead)
    await eventually(governed, timeout=60, interval=0.5, what="ScalingActive no longer ScalingDisabled")
    assert await replicas(kube, namespace, TARGET) == 1


def inference_service(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": INFERENCE_SERVICE.api_version,
        "kind": INFERENCE_SERVICE.kind,
        "metadata": {
            "name": name,
            "labels": {"aim.eai.amd.com/service": "web", **labels},
            "annotations": {
                raw.DEPLOYMENT_MODE_ANNOTATION: "RawDeployment",
                raw.AUTOSCALER_CLASS_ANNOTATION: "external",
            },
        },
        "spec": {
            "predictor": {
                "minReplicas": 0,
                "maxReplicas": 3,
                "containers": [
                    {"name": "kserve-container", "image": "x", "ports": [{"containerPort": 8000}]}
                ],
            }
        },
    }


async def test_kserve_with_class_external_starts_at_zero_and_keeps_the_scalers_replicas(
    kube: Kube, namespace: str
) -> None:
    isvc = await kube.create(INFERENCE_SERVICE, inference_service("web"), namespace)
    # the deployer's ScaledObject over the predictor, with the InferenceService's label
    await kube.create(SCALED_OBJECT, scaled_object(TARGET, {raw.ISVC_LABEL: "web"}), namespace)
    kserve = StandIn(kube, namespace=namespace)
    passes = Together(kserve, KedaStandIn(kube, namespace))
    await passes.tick()
    assert await replicas(kube, namespace, TARGET) == 0  # minReplicas 0
    await passes.tick()  # KEDA's check passes once the Deployment exists: its HPA
    hpa = await kube.get(HPA, namespace, f"keda-hpa-{TARGET}")
    assert hpa is not None and hpa["metadata"]["labels"][raw.ISVC_LABEL] == "web"
    assert hpa["metadata"]["ownerReferences"][0]["kind"] == "ScaledObject"

    # a scaler's number; then the InferenceService changes and KServe rewrites its Deployment
    await kube.patch(DEPLOYMENT, namespace, TARGET, {"spec": {"replicas": 2}})
    before = await kube.get(DEPLOYMENT, namespace, TARGET)
    assert before is not None
    await kube.patch(INFERENCE_SERVICE, namespace, "web", {"metadata": {"labels": {"tier": "a"}}})
    after = await settled(passes, kube, namespace, TARGET, tier="a")  # rewritten
    assert raw.spec_hash(after) != raw.spec_hash(before)
    assert after["spec"]["replicas"] == 2  # the scaler's, kept
    # KServe makes no HPA of its own for `external`, and leaves the ScaledObject's alone
    assert await kube.get(HPA, namespace, f"keda-hpa-{TARGET}") is not None

    # a rewrite from a stale read fails (409) rather than undo a scaler's change made since: the
    # stand-in reads again and writes the scaler's newer number
    stale = after
    await kube.patch(DEPLOYMENT, namespace, TARGET, {"spec": {"replicas": 3}})
    isvc = await kube.patch(INFERENCE_SERVICE, namespace, "web", {"metadata": {"labels": {"tier": "b"}}})
    await kserve.reconcile(isvc, {(namespace, TARGET): stale}, {}, {})
    assert await replicas(kube, namespace, TARGET) == 3  # not the stale read's 2
    current = await settled(passes, kube, namespace, TARGET, tier="b")
    assert current["spec"]["replicas"] == 3
