"""Importing a filled volume (``pvc://CLAIM/PATH``) against a real API server (with the garbage
collector and the PV controller), the cache service in Job mode and the test playing the kubelet:
a claim that is missing, in another namespace or not bound is a condition saying so; a bound one
is checked in place by a Job that mounts it read-only, and the cache is Ready on its verdict (or
says which files are wrong); no volume is made, and deleting the cache leaves the claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aim_cache.plan import CONTAINER
from aim_dev.local.deployed import PERSISTENT_VOLUME, host_path_volume
from aim_dev.testing.kubelet import bind_pod, finish_pod
from aimcore.api.kinds import JOB, PVC, by_kind
from aimcore.runtime import Kube
from tests.helpers import condition, eventually, has, manifest, status_of
from tests.integration.jobmode import Cluster, job_pod, new_namespace

AIM = "aim.eai.amd.com"
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
ARTIFACT = by_kind(AIM, "AIMArtifact")


def claim(name: str, size: str = "2Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "resources": {"requests": {"storage": size}},
        },
    }


async def import_job(kube: Kube, namespace: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        jobs = (await kube.list(JOB, namespace, label_selector="aim.eai.amd.com/component=import"))[0]
        return jobs[0] if jobs else None

    job: dict[str, Any] = await eventually(found, timeout=30, what="the import Job")
    return job


async def test_an_import_waits_for_its_claim_then_is_checked_in_place_and_never_touches_it(
    cluster: Cluster,
) -> None:
    kube = cluster.kube
    ns, other = await new_namespace(kube), await new_namespace(kube)
    spec = {"sourceUri": "pvc://weights/llama", "modelId": "meta/llama"}
    await kube.create(ARTIFACT, manifest(ARTIFACT, "llama", ns, spec), ns)
    missing = await status_of(
        kube, ARTIFACT, ns, "llama", has("SourceReady", "False", "ClaimNotFound"), "ClaimNotFound"
    )
    assert (
        condition(missing["status"], "SourceReady")["message"]
        == f"no PersistentVolumeClaim weights in namespace {ns}"
    )

    # the claim made in another namespace: named, not imported
    await kube.create(PVC, claim("weights"), other)
    elsewhere = await status_of(
        kube, ARTIFACT, ns, "llama", has("SourceReady", "False", "ClaimInOtherNamespace"), "elsewhere"
    )
    message = condition(elsewhere["status"], "SourceReady")["message"]
    assert f"is in namespace {other}, not {ns}" in message

    # made in the cache's namespace, not bound yet
    await kube.create(PVC, claim("weights"), ns)
    await status_of(kube, ARTIFACT, ns, "llama", has("StorageReady", "False", "ClaimNotBound"), "not bound")

    # bound to a volume: the import Job mounts it read-only and checks the directory
    volume = host_path_volume(f"pv-{ns}", Path("/nonexistent"), "2Gi", claim=(ns, "weights"))
    await kube.create(PERSISTENT_VOLUME, volume)
    job = await import_job(kube, ns)
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["volumes"] == [
        {"name": "model-source", "persistentVolumeClaim": {"claimName": "weights", "readOnly": True}}
    ]
    (container,) = pod_spec["containers"]
    assert container["args"] == ["--dir", "/model-source/llama"]
    assert all(m["readOnly"] for m in container["volumeMounts"])
    bound = await status_of(kube, ARTIFACT, ns, "llama", has("StorageReady", "True", "ClaimBound"), "bound")
    assert bound["status"]["persistentVolumeClaim"] == "weights"
    assert bound["status"]["allocatedSize"] == "2Gi"

    pod = await job_pod(kube, ns, job["metadata"]["name"])
    await bind_pod(kube, ns, pod["metadata"]["name"], "node-1")
    verdict = {"result": "ok", "files": 3, "bytes": 4096, "verified": ["size", "sha256"], "manifest": True}
    cluster.kubelet.set_log(ns, pod["metadata"]["name"], CONTAINER, json.dumps(verdict) + "\n")
    await finish_pod(kube, ns, pod["metadata"]["name"], exit_code=0)
    ready = await status_of(kube, ARTIFACT, ns, "llama", lambda s: s.get("status") == "Ready", "Ready")
    imported = condition(ready["status"], "DownloadReady")
    assert (imported["status"], imported["reason"]) == ("True", "Imported")
    assert imported["message"].startswith("imported in place: 4 KiB in 3 files; verified: size, sha256")
    # no volume of its own; the claim is not the cache's
    assert [p["metadata"]["name"] for p in (await kube.list(PVC, ns))[0]] == ["weights"]
    weights = await kube.get(PVC, ns, "weights")
    assert weights is not None and not weights["metadata"].get("ownerReferences")

    # deleting the cache leaves the claim (its Jobs go with it)
    await kube.delete(ARTIFACT, ns, "llama", propagation="Foreground")

    async def cache_gone() -> bool:
        return await kube.get(ARTIFACT, ns, "llama") is None

    await eventually(cache_gone, timeout=60, what="the cache deleted")
    kept = await kube.get(PVC, ns, "weights")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")


async def test_an_import_whose_files_are_wrong_says_which(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = await new_namespace(kube)
    await kube.create(PVC, claim("weights"), ns)
    await kube.create(
        PERSISTENT_VOLUME, host_path_volume(f"pv-{ns}", Path("/nonexistent"), "2Gi", claim=(ns, "weights"))
    )
    spec = {"sourceUri": "pvc://weights/llama", "modelId": "meta/llama"}
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "llama", ns, spec), ns)
    job = await import_job(kube, ns)
    pod = await job_pod(kube, ns, job["metadata"]["name"])
    await bind_pod(kube, ns, pod["metadata"]["name"], "node-1")
    verdict = {
        "result": "error",
        "reason": "MissingFiles",
        "message": "1 file(s) of the manifest are missing: model-00002.safetensors",
    }
    cluster.kubelet.set_log(ns, pod["metadata"]["name"], CONTAINER, json.dumps(verdict) + "\n")
    await finish_pod(kube, ns, pod["metadata"]["name"], exit_code=1)
    failed = await status_of(
        kube, MODEL_CACHE, ns, "llama", has("DownloadReady", "False", "MissingFiles"), "MissingFiles"
    )
    assert "model-00002.safetensors" in condition(failed["status"], "DownloadReady")["message"]
    assert await kube.get(PVC, ns, "weights") is not None
