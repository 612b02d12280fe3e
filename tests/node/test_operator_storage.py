"""Model weights on a real node: with caching ``Always`` a real download Job fills a volume (a static
hostPath PersistentVolume the test made, so it can read the bytes) from the local Hub server, and the
predictor pod mounts it (the test model exits without its weights, so ``Running`` proves the mount);
an LLMKube ``pvc://`` Model is verified in place by a real verify Job that mounts the claim; an
AIMArtifact whose source ignores byte ranges is fetched by the second protocol of its sequence, in
the same real Job, without the repository's subfolder (the ``hf://`` default download filter)."""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from typing import Any

import pytest

from aim_deployer.inference import isvc_name
from aim_dev import testmodel
from aim_dev.kserve import raw
from aim_dev.local import deployed
from aim_dev.local.gguf_sample import tiny_gguf
from aim_dev.local.hub import add_repo
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import DEPLOYMENT, JOB, POD, PVC, by_kind
from aimcore.runtime import Kube
from tests.helpers import eventually
from tests.node.helpers import (
    CACHE_ROOT,
    NODE_TIMEOUT,
    aim,
    conditions,
    model_cache_kind,
    ran_on_the_node,
    state,
    summary,
    wait_for,
)

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

MODEL = aim("AIMModel")
TEMPLATE = aim("AIMServiceTemplate")
TEMPLATE_CACHE = aim("AIMTemplateCache")
ARTIFACT = aim("AIMArtifact")
SERVICE = aim("AIMService")
LLMKUBE_MODEL = by_kind("inference.llmkube.dev", "Model")

WEIGHTS = testmodel.WEIGHTS  # the stack's Hub serves them as the test model's source
MOUNT = f"{CACHE_ROOT}/{testmodel.CANONICAL_NAME}"


def user_claim(name: str) -> dict[str, Any]:
    """A claim a user made for a volume they filled (bound to the test's static volume)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


async def test_caching_always_downloads_with_a_real_job_into_a_volume_the_predictor_mounts(
    stack: NodeStack, api: Kube, namespace: str, model_image: str, volumes: Any
) -> None:
    assert stack.hub is not None
    paths: list[Path] = await volumes(2, "2Gi")
    model = {"apiVersion": MODEL.api_version, "kind": MODEL.kind, "metadata": {"name": "cached"}}
    await api.create(MODEL, {**model, "spec": {"image": model_image}}, namespace)

    async def template() -> dict[str, Any] | None:
        found = [t for t in (await api.list(TEMPLATE, namespace))[0] if state(t) == "Ready"]
        return found[0] if found else None

    tpl = (await eventually(template, timeout=180, interval=0.25, what="a Ready template"))["metadata"][
        "name"
    ]
    # The download image of the caches a template cache makes is its spec's: the operator's
    # downloader (the seed's default, KServe's storage initializer, is on no registry here).
    await api.create(
        TEMPLATE_CACHE,
        {
            "apiVersion": TEMPLATE_CACHE.api_version,
            "kind": TEMPLATE_CACHE.kind,
            "metadata": {"name": "weights"},
            "spec": {
                "templateName": tpl,
                "templateScope": "Namespace",
                "mode": "Shared",
                "downloadImage": "aim-cache:0.1.0",
                "env": [{"name": "HF_ENDPOINT", "value": stack.hub_endpoint}],
            },
        },
        namespace,
    )
    env = [{"name": "AIM_TEST_MODEL_REQUIRE", "value": f"{MOUNT}/config.json"}]
    await api.create(
        SERVICE,
        {
            "apiVersion": SERVICE.api_version,
            "kind": SERVICE.kind,
            "metadata": {"name": "cached"},
            "spec": {
                "model": {"name": "cached"},
                "template": {"name": tpl, "allowUnoptimized": True},
                "caching": {"mode": "Always"},
                "env": env,
            },
        },
        namespace,
    )
    svc = await wait_for(
        api, SERVICE, namespace, "cached", lambda s: state(s) == "Running", timeout=300, what="cached Running"
    )
    assert conditions(svc)["CacheReady"]["status"] == "True", summary(svc)

    [cache] = (await api.list(model_cache_kind(), namespace))[0]
    assert state(cache) == "Ready", summary(cache)
    assert conditions(cache)["DownloadReady"]["reason"] == "Verified", summary(cache)
    # the download Job really ran and is kept as the record
    [job] = (await api.list(JOB, namespace, label_selector="aim.eai.amd.com/component=download"))[0]
    assert job["status"].get("succeeded") == 1, job["status"]
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "aim-cache:0.1.0"
    await ran_on_the_node(api, namespace, job["metadata"]["name"], "aim-cache:0.1.0")
    # into a PVC bound to one of the static volumes, whose files are the Hub's
    claim_name = job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    claim = await api.get(PVC, namespace, claim_name)
    assert claim is not None and claim["status"]["phase"] == "Bound"
    [filled] = [p for p in paths if (p / "config.json").exists()]
    for name, data in WEIGHTS.items():
        assert (filled / name).read_bytes() == data

    # the predictor pod mounts that claim where the model server looks
    [pod] = (
        await api.list(POD, namespace, label_selector=f"{raw.ISVC_LABEL}={isvc_name('cached', namespace)}")
    )[0]
    assert pod["status"]["phase"] == "Running"
    volumes_by_name = {v["name"]: v for v in pod["spec"]["volumes"]}
    [mount] = [m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["mountPath"] == MOUNT]
    assert volumes_by_name[mount["name"]]["persistentVolumeClaim"]["claimName"] == claim_name


async def test_an_artifact_whose_source_ignores_ranges_is_fetched_by_the_second_protocol(
    stack: NodeStack, api: Kube, namespace: str, volumes: Any
) -> None:
    """The default sequence (``HF_TRANSFER,HTTP``) in a real download Job: a Hub that answers every
    ranged request of a 12 MiB file with the whole file fails the ranged protocol, the plain
    requests of ``HTTP`` fetch and verify it, and ``status.download`` says so as the released
    original does (``{HTTP, 2, 2, "HF_TRANSFER,HTTP", Complete}``). The repository's subfolder is
    left out by the ``hf://`` default download filter (``exclude */*``): not on the volume, not in
    the cache's size."""
    assert stack.hub is not None
    repo = f"aim-tests/ranges-{secrets.token_hex(3)}"
    files = {"config.json": b"{}", "model.safetensors": bytes(range(256)) * (48 * 1024)}
    excluded = {"onnx/model.onnx": bytes(range(256)) * 4096}
    add_repo(stack.hub.root, repo, {**files, **excluded}, lfs_threshold=1024)
    stack.hub.add_fault(repo, "model.safetensors", "ignore_range", count=1000)
    paths: list[Path] = await volumes(1, "2Gi")
    spec = {
        "sourceUri": f"hf://{repo}",
        "modelDownloadImage": "aim-cache:0.1.0",
        "env": [{"name": "HF_ENDPOINT", "value": stack.hub_endpoint}],
    }
    await api.create(
        ARTIFACT,
        {
            "apiVersion": ARTIFACT.api_version,
            "kind": ARTIFACT.kind,
            "metadata": {"name": "ranges"},
            "spec": spec,
        },
        namespace,
    )
    done = await wait_for(
        api, ARTIFACT, namespace, "ranges", lambda a: state(a) == "Ready", timeout=300, what="ranges Ready"
    )
    assert done["status"]["download"] == {
        "protocol": "HTTP",
        "attempt": 2,
        "totalAttempts": 2,
        "protocolSequence": "HF_TRANSFER,HTTP",
        "message": "Complete",
    }, summary(done)
    assert conditions(done)["DownloadComplete"]["reason"] == "Verified", summary(done)
    [job] = (await api.list(JOB, namespace, label_selector="aim.eai.amd.com/component=download"))[0]
    await ran_on_the_node(api, namespace, job["metadata"]["name"], "aim-cache:0.1.0")
    [filled] = [p for p in paths if (p / "config.json").exists()]
    for name, data in files.items():
        assert (filled / name).read_bytes() == data
    assert not (filled / "onnx").exists()
    assert done["status"]["progress"]["totalBytes"] == sum(len(b) for b in files.values()), summary(done)
    assert "--exclude=*/*" in job["spec"]["template"]["spec"]["containers"][0]["args"]
    gets = [r for r in stack.hub.requests() if r["repo_id"] == repo and r["method"] == "GET"]
    ranged = [r for r in gets if r["path"] == "model.safetensors" and r["range"]]
    assert ranged and all(r["fault"] == "ignore_range" for r in ranged), ranged
    assert [r["range"] for r in gets if r["path"] == "model.safetensors"][-1] is None


async def test_an_llmkube_pvc_model_is_verified_by_a_real_job(
    stack: NodeStack, api: Kube, namespace: str, volumes: Any
) -> None:
    data = tiny_gguf()
    [path] = await volumes(1, "1Gi", access_modes=("ReadWriteOnce",), claim=(namespace, "gguf"))
    (path / "models").mkdir()
    (path / "models" / "tiny.gguf").write_bytes(data)
    await api.create(PVC, user_claim("gguf"), namespace)
    await api.create(
        LLMKUBE_MODEL,
        {
            "apiVersion": LLMKUBE_MODEL.api_version,
            "kind": LLMKUBE_MODEL.kind,
            "metadata": {"name": "tiny"},
            "spec": {
                "source": "pvc://gguf/models/tiny.gguf",
                "sha256": hashlib.sha256(data).hexdigest(),
                "hardware": {"accelerator": "cpu"},
            },
        },
        namespace,
    )
    model = await wait_for(
        api,
        LLMKUBE_MODEL,
        namespace,
        "tiny",
        lambda m: state(m) == "Ready",
        timeout=240,
        what="the Model Ready",
    )
    status = model["status"]
    assert status["sha256"] == hashlib.sha256(data).hexdigest()
    assert status["path"] == "/model-source/models/tiny.gguf"
    assert status["gguf"], summary(model)
    # read in place by a verify Job on the node, from the cache service's image
    jobs = (await api.list(JOB, namespace, label_selector="aim.eai.amd.com/component=llmkube-verify"))[0]
    assert jobs and any(j["status"].get("succeeded") == 1 for j in jobs), [j.get("status") for j in jobs]
    job = next(j for j in jobs if j["status"].get("succeeded") == 1)
    cache = await api.get(DEPLOYMENT, deployed.SYSTEM_NAMESPACE, "aim-cache")
    assert cache is not None
    own_image = cache["spec"]["template"]["spec"]["containers"][0]["image"]  # pinned by digest
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == own_image
    await ran_on_the_node(api, namespace, job["metadata"]["name"])


async def test_a_filled_volume_is_imported_in_place_by_a_real_job(
    stack: NodeStack, api: Kube, namespace: str, volumes: Any
) -> None:
    """A ``pvc://`` model cache on the real node: a claim the user filled (a directory of weights,
    no manifest) is checked by a real Job that mounts it read-only, and the cache is Ready without
    a download or a volume of its own."""
    [path] = await volumes(1, "1Gi", access_modes=("ReadWriteOnce",), claim=(namespace, "weights"))
    files = {"config.json": b"{}", "model.safetensors": bytes(range(256)) * 64}
    (path / "llama").mkdir()
    for name, data in files.items():
        (path / "llama" / name).write_bytes(data)
    await api.create(PVC, user_claim("weights"), namespace)
    cache_kind = model_cache_kind()
    await api.create(
        cache_kind,
        {
            "apiVersion": cache_kind.api_version,
            "kind": cache_kind.kind,
            "metadata": {"name": "imported"},
            "spec": {"sourceUri": "pvc://weights/llama", "modelId": "meta/llama"},
        },
        namespace,
    )
    done = await wait_for(
        api,
        cache_kind,
        namespace,
        "imported",
        lambda c: state(c) == "Ready",
        timeout=240,
        what="the import Ready",
    )
    said = conditions(done)["DownloadReady"]
    assert said["reason"] == "Imported", summary(done)
    assert said["message"].startswith("imported in place: "), summary(done)
    assert "in 2 files; verified: present" in said["message"], summary(done)
    assert done["status"]["persistentVolumeClaim"] == "weights"
    [job] = (await api.list(JOB, namespace, label_selector="aim.eai.amd.com/component=import"))[0]
    await ran_on_the_node(api, namespace, job["metadata"]["name"])
    assert [p["metadata"]["name"] for p in (await api.list(PVC, namespace))[0]] == ["weights"]
    assert sorted(p.name for p in (path / "llama").iterdir()) == sorted(files)  # nothing written
