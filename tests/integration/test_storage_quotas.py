"""Storage quotas on model caches against a real API server (with the garbage collector), the
cache service in Job mode and the test playing the kubelet: a cache over its namespace's quota
evicts Ready Shared caches by retention priority (lowest, then oldest; protected and priority-less
caches never), each with a Warning Event ``Evicted``, and gets its volume once their volumes are
gone; with nothing evictable it is blocked with the figures, no volume and Ready False (not
Failed) until the quota is raised; two caches racing for the last room get one volume between
them; a cluster limit blocks with its own reason, and a bad namespace annotation is a warning in
the message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aim_cache.plan import pvc_name
from aimcore.api.kinds import EVENT, NAMESPACE, PVC, by_kind
from aimcore.runtime import ApiException, Kube
from tests.helpers import condition, eventually, has, manifest, status_of
from tests.integration.jobmode import Cluster, get, make_ready, new_namespace

AIM = "aim.eai.amd.com"
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
ARTIFACT = by_kind(AIM, "AIMArtifact")
CLUSTER_CONFIG = by_kind(AIM, "AIMClusterRuntimeConfig")
IMAGE = "ghcr.io/acme/aim-engine:test"
QUOTA = "aim.eai.amd.com/artifact-storage-quota"
GIB = 1024**3


def spec(**extra: Any) -> dict[str, Any]:
    """A 1 GiB cache (no headroom: the cluster config below sets 0)."""
    return {"sourceUri": "hf://acme/weights", "size": "1Gi", "modelDownloadImage": IMAGE, **extra}


async def setup(
    kube: Kube,
    *,
    quota: dict[str, Any] | None = None,
    namespace_quota: str | None = None,
    default_priority: int | None = 5,
) -> str:
    """The cluster runtime config ``default`` (no headroom, the default retention priority, the
    cluster quota) and a namespace with its quota annotation."""
    config: dict[str, Any] = {"storage": {"pvcHeadroomPercent": 0}}
    if default_priority is not None:
        config["artifact"] = {"defaultRetentionPriority": default_priority}
    if quota is not None:
        config["artifactStorageQuota"] = quota
    await kube.create(CLUSTER_CONFIG, manifest(CLUSTER_CONFIG, "default", None, config))
    ns = await new_namespace(kube)
    if namespace_quota is not None:
        await annotate(kube, ns, namespace_quota)
    return ns


async def annotate(kube: Kube, namespace: str, value: str) -> None:
    await kube.patch(NAMESPACE, None, namespace, {"metadata": {"annotations": {QUOTA: value}}})


async def claims(kube: Kube, namespace: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in (await kube.list(PVC, namespace))[0])


async def blocked_by(kube: Kube, ref: Any, namespace: str, name: str, reason: str) -> tuple[Any, str]:
    """The cache once its quota blocks it with ``reason``, and the message with the figures (the
    same on both quota conditions)."""
    obj = await status_of(
        kube, ref, namespace, name, has("StorageQuotaReady", "False", reason), f"{name} blocked"
    )
    exceeded = condition(obj["status"], "StorageQuotaExceeded")
    assert (exceeded["status"], exceeded["reason"]) == ("True", reason)
    assert condition(obj["status"], "StorageQuotaReady")["message"] == exceeded["message"]
    return obj, str(exceeded["message"])


async def gone(kube: Kube, ref: Any, namespace: str, name: str) -> None:
    async def deleted() -> bool:
        return await kube.get(ref, namespace, name) is None

    await eventually(deleted, timeout=60, what=f"{name} deleted")


async def test_over_quota_evicts_the_lowest_priority_oldest_first_and_never_a_protected_one(
    cluster: Cluster,
) -> None:
    kube = cluster.kube
    ns = await setup(kube, namespace_quota="4Gi")
    protected = {"aim.eai.amd.com/eviction-protected": "true"}
    # in order of age; the default priority is 5
    await make_ready(cluster, MODEL_CACHE, ns, "protected", spec(retentionPriority=0), annotations=protected)
    await make_ready(cluster, ARTIFACT, ns, "default-prio", spec())
    await make_ready(cluster, MODEL_CACHE, ns, "older-50", spec(retentionPriority=50))
    await make_ready(cluster, ARTIFACT, ns, "keep-100", spec(retentionPriority=100))
    assert len(await claims(kube, ns)) == 4  # 4Gi of 4Gi

    created = await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "new", ns, spec()), ns)
    # room for 1Gi more: the default-priority cache goes (the protected one, at 0, stays)
    await gone(kube, ARTIFACT, ns, "default-prio")
    admitted = await get(kube, PVC, ns, pvc_name("new", created["metadata"]["uid"]))
    assert admitted["spec"]["resources"]["requests"]["storage"] in ("1Gi", str(GIB))
    for name, ref in (("protected", MODEL_CACHE), ("older-50", MODEL_CACHE), ("keep-100", ARTIFACT)):
        assert await kube.get(ref, ns, name) is not None, name
    events = [e for e in (await kube.list(EVENT, ns))[0] if e["reason"] == "Evicted"]
    assert [(e["type"], e["involvedObject"]["name"], e["involvedObject"]["kind"]) for e in events] == [
        ("Warning", "default-prio", "AIMArtifact")
    ]
    assert events[0]["message"] == f"Evicted to free storage quota for artifact {ns}/new"
    within = await status_of(
        kube, MODEL_CACHE, ns, "new", has("StorageQuotaReady", "True", "WithinQuota"), "within quota"
    )
    assert condition(within["status"], "StorageQuotaExceeded")["status"] == "False"
    assert within["status"]["allocatedSize"] == "1Gi"
    assert within["status"]["headroomPercent"] == 0

    # full again: of the evictable caches left (50, 100) the lower priority goes
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "newer", ns, spec()), ns)
    await gone(kube, MODEL_CACHE, ns, "older-50")
    assert await kube.get(ARTIFACT, ns, "keep-100") is not None


async def test_with_nothing_evictable_a_cache_waits_with_the_figures_until_the_quota_is_raised(
    cluster: Cluster,
) -> None:
    kube = cluster.kube
    # no default retention priority: a cache without its own is never evicted
    ns = await setup(kube, namespace_quota="1Gi", default_priority=None)
    await make_ready(cluster, MODEL_CACHE, ns, "held", spec())
    created = await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "waits", ns, spec()), ns)
    blocked, message = await blocked_by(kube, MODEL_CACHE, ns, "waits", "NamespaceQuotaExceeded")
    assert message == "Namespace quota exceeded: 1Gi used + 1Gi needed > 1Gi limit"
    assert condition(blocked["status"], "Ready")["status"] == "False"
    assert blocked["status"]["status"] == "Pending"  # waiting for room, not a failure
    assert pvc_name("waits", created["metadata"]["uid"]) not in await claims(kube, ns)
    assert await kube.get(MODEL_CACHE, ns, "held") is not None

    # raising the quota admits it, with no other change
    await annotate(kube, ns, "2Gi")

    async def admitted() -> bool:
        return pvc_name("waits", created["metadata"]["uid"]) in await claims(kube, ns)

    await eventually(admitted, timeout=90, what="the volume once the quota is raised")
    await status_of(
        kube, MODEL_CACHE, ns, "waits", has("StorageQuotaReady", "True", "WithinQuota"), "admitted"
    )


async def test_two_caches_racing_for_the_last_room_get_one_volume(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = await setup(kube, namespace_quota="2Gi", default_priority=None)
    await make_ready(cluster, MODEL_CACHE, ns, "held", spec())
    made = await asyncio.gather(
        *(kube.create(MODEL_CACHE, manifest(MODEL_CACHE, name, ns, spec()), ns) for name in ("a", "b"))
    )
    uids = {obj["metadata"]["name"]: obj["metadata"]["uid"] for obj in made}

    async def decided() -> dict[str, str] | None:
        said = {}
        for name in uids:
            obj = await kube.get(MODEL_CACHE, ns, name)
            found = [
                c
                for c in (obj or {}).get("status", {}).get("conditions") or ()
                if c["type"] == "StorageQuotaReady"
            ]
            if not found:
                return None
            said[name] = found[0]["reason"]
        return said

    reasons = await eventually(decided, timeout=60, what="both caches judged")
    assert sorted(reasons.values()) == ["NamespaceQuotaExceeded", "WithinQuota"], reasons
    [winner] = [n for n, r in reasons.items() if r == "WithinQuota"]
    [loser] = [n for n, r in reasons.items() if r != "WithinQuota"]
    held = await claims(kube, ns)
    assert pvc_name(winner, uids[winner]) in held and pvc_name(loser, uids[loser]) not in held
    assert len(held) == 2
    loser_obj = await kube.get(MODEL_CACHE, ns, loser)
    assert loser_obj is not None
    message = condition(loser_obj["status"], "StorageQuotaExceeded")["message"]
    assert message == "Namespace quota exceeded: 2Gi used + 1Gi needed > 2Gi limit"


async def test_a_cluster_limit_blocks_with_its_reason_and_a_bad_annotation_is_a_warning(
    cluster: Cluster,
) -> None:
    kube = cluster.kube
    ns = await setup(kube, quota={"clusterLimit": "1Gi"}, namespace_quota="lots", default_priority=None)
    await make_ready(cluster, MODEL_CACHE, ns, "held", spec())
    other = await new_namespace(kube)
    await kube.create(ARTIFACT, manifest(ARTIFACT, "elsewhere", other, spec()), other)
    _, message = await blocked_by(kube, ARTIFACT, other, "elsewhere", "ClusterQuotaExceeded")
    assert message == "Cluster quota exceeded: 1Gi used + 1Gi needed > 1Gi limit"
    assert (await kube.list(PVC, other))[0] == []
    # the namespace whose annotation does not parse: the warning rides along, the limits still apply
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "here", ns, spec()), ns)
    _, warned = await blocked_by(kube, MODEL_CACHE, ns, "here", "ClusterQuotaExceeded")
    assert warned.startswith("Cluster quota exceeded: 1Gi used + 1Gi needed > 1Gi limit (warning: invalid ")
    assert f'annotation "lots" on namespace {ns}' in warned
    # a negative limit is refused by the API server, not stored to block everything
    with pytest.raises(ApiException) as negative:
        await kube.patch(
            CLUSTER_CONFIG, None, "default", {"spec": {"artifactStorageQuota": {"clusterLimit": "-1Gi"}}}
        )
    assert negative.value.status == 422
    assert "artifactStorageQuota.clusterLimit" in str(negative.value.body)


async def test_two_replicas_and_a_kill_mid_burst_never_admit_more_than_the_quota(cluster: Cluster) -> None:
    """Eight caches at once, two cache service replicas judging them, one killed (SIGKILL) in the
    middle and started again: exactly the three that fit get a volume, the other five wait. The
    lock is the bus's, so a replica that dies holding it delays the others by its TTL at most."""
    kube, services = cluster.kube, cluster.services
    services.start("cache", replica=1, env={"AIM_CACHE_EXECUTOR": "job"})
    ns = await setup(kube, namespace_quota="3Gi", default_priority=None)
    names = [f"burst-{i}" for i in range(8)]
    made = await asyncio.gather(
        *(kube.create(MODEL_CACHE, manifest(MODEL_CACHE, n, ns, spec()), ns) for n in names)
    )
    services.kill("cache")
    services.restart("cache")
    uids = {obj["metadata"]["name"]: obj["metadata"]["uid"] for obj in made}

    async def settled() -> tuple[list[str], list[str]] | None:
        held = set(await claims(kube, ns))
        admitted = [n for n in names if pvc_name(n, uids[n]) in held]
        blocked = []
        for n in names:
            obj = await kube.get(MODEL_CACHE, ns, n)
            status = (obj or {}).get("status") or {}
            if has("StorageQuotaReady", "False", "NamespaceQuotaExceeded")(status):
                blocked.append(n)
        return (admitted, blocked) if len(admitted) + len(blocked) == len(names) else None

    admitted, blocked = await eventually(settled, timeout=120, what="every cache admitted or blocked")
    assert len(admitted) == 3, (admitted, blocked)
    assert sorted(admitted + blocked) == sorted(names)
    assert len(await claims(kube, ns)) == 3
