"""Kubernetes Events written by the status service (a real process) on condition transitions, read
back the way ``kubectl describe`` reads them: core/v1 Events listed with the field selector
``involvedObject.uid``.

Objects are AIMTemplateCaches with the cache service stopped (it owns the kind), so the test's
reporter is the only source of reports; the cluster-scoped case uses an AIMClusterRuntimeConfig and
a condition type no service reports.
"""

from __future__ import annotations

import json

import pytest
from nats.js import JetStreamContext

from aim_dev.local.cluster import ControlPlane
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import KindRef, by_kind, status_owner
from aimcore.api.types import Obj
from aimcore.runtime import Kube, Reporter
from tests.helpers import eventually, kubectl, manifest
from tests.integration.conftest import Services, health_get

TEMPLATE_CACHE = by_kind("aim.eai.amd.com", "AIMTemplateCache")
CLUSTER_RUNTIME_CONFIG = by_kind("aim.eai.amd.com", "AIMClusterRuntimeConfig")

Cond = tuple[str, str, str, str]

SECRET = "hf_SuperSecretTokenValue1234567890"
NOT_FOUND: tuple[Cond, ...] = (
    ("ServiceTemplateReady", "False", "ReferenceNotFound", f"template t not found: token={SECRET} rejected"),
)
CREATING: tuple[Cond, ...] = (
    ("ServiceTemplateReady", "True", "TemplateReady", ""),
    ("ArtifactsReady", "False", "CreatingCaches", "creating 1 cache"),
)


@pytest.fixture
def without_cache(running: Services) -> Services:
    """The session's services with the cache service stopped: it owns the template caches."""
    proc = running.procs.pop("cache", None)
    if proc is not None:
        proc.stop()
    return running


def events_of(cluster: ControlPlane, uid: str) -> list[Obj]:
    """The core/v1 Events about the object with ``uid``, in every namespace (as kubectl describe
    finds them), oldest first."""
    out = kubectl(
        "get",
        "events",
        "--all-namespaces",
        f"--field-selector=involvedObject.uid={uid}",
        "-o",
        "json",
        kubeconfig=cluster.kubeconfig_path,
    )
    items: list[Obj] = json.loads(out)["items"]
    return sorted(items, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))


def occurrences(events: list[Obj]) -> int:
    return sum(int(e.get("count") or 1) for e in events)


class Subject:
    """One object, reported on by the test, with its status awaited after each report."""

    def __init__(
        self, kube: Kube, js: JetStreamContext, ref: KindRef, namespace: str | None, name: str
    ) -> None:
        self.kube, self.ref, self.namespace, self.name = kube, ref, namespace, name
        owner = status_owner(ref.group, ref.kind)
        assert owner is not None
        self.reporter = Reporter(js, owner)  # the status service believes only the kind's owner

    async def obj(self) -> Obj:
        obj = await self.kube.get(self.ref, self.namespace, self.name)
        assert obj is not None
        return obj

    async def report(self, conditions: tuple[Cond, ...]) -> None:
        conds = [ConditionReport(type=t, status=s, reason=r, message=m) for t, s, r, m in conditions]
        assert await self.reporter.report(self.ref, await self.obj(), conds)

        async def landed() -> bool:
            status = (await self.obj()).get("status") or {}
            have = {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}
            return all(have.get(t) == (s, r) for t, s, r, _ in conditions)

        await eventually(landed, what=f"{conditions} in the status of {self.name}")


async def test_a_failure_is_a_warning_and_progress_is_normal(  # type: ignore[no-untyped-def]
    without_cache, kube: Kube, js: JetStreamContext, namespace: str, aim_cluster: ControlPlane
) -> None:
    created = await kube.create(
        TEMPLATE_CACHE, manifest(TEMPLATE_CACHE, "tc", namespace, {"templateName": "t"})
    )
    uid = created["metadata"]["uid"]
    subject = Subject(kube, js, TEMPLATE_CACHE, namespace, "tc")

    # A transition to Failed: Warning Events, reason = the condition's reason.
    await subject.report(NOT_FOUND)

    async def warned() -> list[Obj] | None:
        found = events_of(aim_cluster, uid)
        return found if len(found) >= 2 else None

    failed = await eventually(warned, what="the Warning Events of the failure")
    assert [(e["type"], e["reason"]) for e in failed] == [("Warning", "ReferenceNotFound")] * 2
    for event in failed:
        assert event["metadata"]["namespace"] == namespace
        assert event["involvedObject"] == {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMTemplateCache",
            "namespace": namespace,
            "name": "tc",
            "uid": uid,
            "resourceVersion": event["involvedObject"]["resourceVersion"],
        }
        assert event["source"]["component"] == "aim-status"
        assert event["count"] == 1
        assert SECRET not in event["message"], event["message"]
    assert sorted(e["message"] for e in failed) == [
        "Component ServiceTemplate is not ready: template t not found: token=*** rejected",
        "template t not found: token=*** rejected",
    ]

    # Progress: Normal Events for the conditions that changed (three of them).
    await subject.report(CREATING)

    async def progressed() -> list[Obj] | None:
        found = events_of(aim_cluster, uid)
        return found if len(found) >= 5 else None

    progress = [e for e in await eventually(progressed, what="the Normal Events") if e["type"] == "Normal"]
    assert sorted(e["reason"] for e in progress) == ["CreatingCaches", "Progressing", "TemplateReady"]
    assert len(events_of(aim_cluster, uid)) == 5

    # What a user sees.
    described = kubectl(
        "describe", "aimtemplatecache", "tc", "-n", namespace, kubeconfig=aim_cluster.kubeconfig_path
    )
    assert "Warning  ReferenceNotFound" in described, described
    assert "Normal   CreatingCaches" in described, described
    assert "aim-status" in described
    assert SECRET not in described


async def test_a_flapping_condition_makes_few_events_with_counts(  # type: ignore[no-untyped-def]
    without_cache, kube: Kube, js: JetStreamContext, namespace: str, aim_cluster: ControlPlane
) -> None:
    created = await kube.create(
        TEMPLATE_CACHE, manifest(TEMPLATE_CACHE, "flap", namespace, {"templateName": "t"})
    )
    uid = created["metadata"]["uid"]
    subject = Subject(kube, js, TEMPLATE_CACHE, namespace, "flap")
    flaps = 50
    for _ in range(flaps):
        await subject.report(NOT_FOUND)
        await subject.report(CREATING)

    async def bucket_empty() -> list[Obj] | None:
        found = events_of(aim_cluster, uid)
        return found if occurrences(found) >= 25 else None

    found = await eventually(bucket_empty, timeout=60, what="the spam filter's 25 Events")
    # 100 status writes with two or three transitions each; the token bucket lets 25 through (plus
    # one per five minutes), aggregated into one Event per (type, reason, message).
    assert 25 <= occurrences(found) <= 27, [(e["reason"], e["count"]) for e in found]
    keys = {(e["type"], e["reason"], e["message"]) for e in found}
    assert len(found) == len(keys) <= 5, [(e["reason"], e["count"]) for e in found]
    assert max(e["count"] for e in found) > 1
    repeated = next(e for e in found if e["count"] > 1)
    assert repeated["lastTimestamp"] >= repeated["firstTimestamp"]

    # what the spam filter held back is counted on the status service's /metrics: the counters move
    # in the status service after its writes, not before the test sees the Events (so they are
    # waited for, not read once)
    async def counted() -> bool:
        status, metrics = await health_get(without_cache, "status", "/metrics")
        assert status == 200
        return _sample(metrics, 'aim_events_total{outcome="filtered"}') > 0 and _sample(
            metrics, 'aim_events_total{outcome="created"}'
        ) >= len(found)

    await eventually(counted, timeout=30, what="the filtered and created Events counted")


def _sample(metrics: str, name: str) -> float:
    return next(
        (float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(name + " ")), 0.0
    )


async def test_cluster_scoped_objects_have_their_events_in_default(  # type: ignore[no-untyped-def]
    without_cache, kube: Kube, js: JetStreamContext, aim_cluster: ControlPlane, namespace: str
) -> None:
    name = f"events-{namespace}"
    created = await kube.create(CLUSTER_RUNTIME_CONFIG, manifest(CLUSTER_RUNTIME_CONFIG, name, None, {}))
    try:
        subject = Subject(kube, js, CLUSTER_RUNTIME_CONFIG, None, name)
        await subject.report((("ProbeReady", "False", "ProbeFailed", "the probe failed"),))

        async def warned() -> Obj | None:
            found = [
                e for e in events_of(aim_cluster, created["metadata"]["uid"]) if e["reason"] == "ProbeFailed"
            ]
            return found[0] if found else None

        event = await eventually(warned, what="the cluster-scoped object's Event")
        assert event["type"] == "Warning"
        assert event["metadata"]["namespace"] == "default"
        assert "namespace" not in event["involvedObject"]
    finally:
        await kube.delete(CLUSTER_RUNTIME_CONFIG, None, name)
