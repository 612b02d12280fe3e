"""Download filters against a real API server and a local Hub-compatible server with a repository
that has subfolders: a model cache's ``spec.downloadFilter``, its runtime config's
``storage.downloadFilter``, the ``hf://`` default (files in subfolders left out) and ``{}`` (every
file) decide which files land in the cache and what its size and progress count; a filter KServe's
storage initializer cannot apply, and one that keeps nothing, get a condition saying so; the CRD
refuses patterns that are not strings, and the cache service a changed filter. The cache service
runs its local executor (the Job mode's filter is tested on the real node: ``tests/node``)."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.local.hub import HubServer, add_repo
from aimcore.api.kinds import by_kind
from aimcore.runtime import ApiException, Kube
from tests.helpers import condition, has, manifest, status_of
from tests.integration.conftest import Services, ensure_service

AIM = "aim.eai.amd.com"
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
ARTIFACT = by_kind(AIM, "AIMArtifact")
RUNTIME_CONFIG = by_kind(AIM, "AIMRuntimeConfig")
DOWNLOADER = "registry.example/aim-engine/cache:dev"  # aim-download's image (the executor runs it in-process)

FILES = {
    "config.json": b'{"architectures": ["LlamaForCausalLM"]}',
    "model.safetensors": bytes(range(256)) * 64,
    "tokenizer/tokenizer.json": b'{"version": "1.0"}' * 10,
    "original/consolidated.pth": bytes(range(256)) * 128,
}


@pytest.fixture
async def cache_root(
    running: Services, js: JetStreamContext, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The cache service with its local executor; the directory its caches land in (the session's
    cache service may have been started by another module, with its own directory)."""
    env = {
        "AIM_CACHE_EXECUTOR": "local",
        "AIM_CACHE_DIR": str(tmp_path_factory.mktemp("model-cache")),
        "AIM_DOWNLOAD_STALL_SECONDS": "5",
    }
    await ensure_service(running, js, "cache", env=env)
    started = running.service_env["cache"]
    assert started.get("AIM_CACHE_EXECUTOR") == "local", started
    return Path(started["AIM_CACHE_DIR"])


def subfolder_repo(hub: HubServer) -> tuple[str, list[dict[str, str]]]:
    """A new repository of :data:`FILES` on ``hub``, and the env that points a cache at it."""
    repo = f"acme/sub-{secrets.token_hex(3)}"
    add_repo(hub.root, repo, FILES, lfs_threshold=1024)
    return repo, [{"name": "HF_ENDPOINT", "value": hub.endpoint}]


def files_in(root: Path) -> set[str]:
    return {
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith(".aim")
    }


def size_of(paths: set[str]) -> int:
    return sum(len(FILES[p]) for p in paths)


async def test_filters_decide_the_files_the_size_and_the_progress(
    cache_root: Path, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    repo, env = subfolder_repo(hub_server)
    config = {"storage": {"downloadFilter": {"exclude": ["original/*"]}}}
    await kube.create(RUNTIME_CONFIG, manifest(RUNTIME_CONFIG, "filtered", namespace, config), namespace)

    def spec(**extra: Any) -> dict[str, Any]:
        return {"sourceUri": f"hf://{repo}", "env": env, "modelDownloadImage": DOWNLOADER, **extra}

    caches = {
        # the hf:// default: files in subfolders left out
        "default": (MODEL_CACHE, spec(), {"config.json", "model.safetensors"}),
        # {} is no filter at all
        "every": (ARTIFACT, spec(downloadFilter={}), set(FILES)),
        # * matches / as fnmatch does: the tokenizer in its subfolder is a *.json
        "json": (
            MODEL_CACHE,
            spec(downloadFilter={"include": ["*.json"]}),
            {"config.json", "tokenizer/tokenizer.json"},
        ),
        # the runtime config's filter, for a cache that sets none
        "configured": (
            ARTIFACT,
            spec(runtimeConfigName="filtered"),
            {"config.json", "model.safetensors", "tokenizer/tokenizer.json"},
        ),
    }
    for name, (ref, body, _) in caches.items():
        await kube.create(ref, manifest(ref, name, namespace, body), namespace)

    async def ready(name: str, ref: Any) -> dict[str, Any]:
        return await status_of(
            kube, ref, namespace, name, lambda s: s.get("status") == "Ready", f"{name} Ready"
        )

    done = await asyncio.gather(*(ready(name, ref) for name, (ref, _, _) in caches.items()))
    for (name, (_, _, expected)), obj in zip(caches.items(), done, strict=True):
        status = obj["status"]
        assert files_in(cache_root / namespace / name) == expected, name
        progress = status["progress"]
        assert progress["totalBytes"] == progress["downloadedBytes"] == size_of(expected), name
        assert condition(status, "DownloadReady")["reason"] == "Verified", name
    # the filtered caches are smaller than the whole repository
    assert size_of(caches["default"][2]) < size_of(set(FILES))


async def test_a_filter_that_cannot_apply_or_keeps_nothing_is_a_condition(
    cache_root: Path, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    repo, env = subfolder_repo(hub_server)
    # KServe's storage initializer (the seeds' default image) downloads every file
    kserve = {"sourceUri": f"hf://{repo}", "env": env, "downloadFilter": {"exclude": ["*/*"]}}
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "kserve", namespace, kserve), namespace)
    nothing = {
        "sourceUri": f"hf://{repo}",
        "env": env,
        "modelDownloadImage": DOWNLOADER,
        "downloadFilter": {"include": ["*.gguf"]},
    }
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "nothing", namespace, nothing), namespace)

    refused = await status_of(
        kube,
        MODEL_CACHE,
        namespace,
        "kserve",
        has("SourceReady", "False", "DownloadFilterUnsupported"),
        "unsupported",
    )
    message = condition(refused["status"], "SourceReady")["message"]
    assert "exclude */*" in message and "storage initializer" in message
    assert refused["status"]["status"] == "Failed"
    empty = await status_of(
        kube, MODEL_CACHE, namespace, "nothing", has("SourceReady", "False", "InvalidSource"), "keeps none"
    )
    assert "keeps none of the 4 files" in condition(empty["status"], "SourceReady")["message"]
    assert not (cache_root / namespace / "nothing").exists() or not files_in(
        cache_root / namespace / "nothing"
    )


async def test_a_changed_filter_is_refused_and_patterns_must_be_strings(
    cache_root: Path, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    """The CRD's CEL rule (``downloadFilter is immutable``) needs an API server with CEL; this one
    (1.20) stores the change, so the cache service refuses it: ``ImmutableFieldChanged`` naming
    both values, nothing downloaded again, until the filter is set back."""
    repo, env = subfolder_repo(hub_server)
    spec = {
        "sourceUri": f"hf://{repo}",
        "env": env,
        "modelDownloadImage": DOWNLOADER,
        "downloadFilter": {"include": ["*.json"]},
    }
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "fixed", namespace, spec), namespace)
    await status_of(kube, MODEL_CACHE, namespace, "fixed", lambda s: s.get("status") == "Ready", "Ready")
    await kube.patch(MODEL_CACHE, namespace, "fixed", {"spec": {"downloadFilter": {"include": ["*"]}}})
    refused = await status_of(
        kube, MODEL_CACHE, namespace, "fixed", has("SourceReady", "False", "ImmutableFieldChanged"), "refused"
    )
    message = condition(refused["status"], "SourceReady")["message"]
    assert 'spec.downloadFilter is immutable once set (was {"include":["*.json"]}' in message
    assert files_in(cache_root / namespace / "fixed") == {"config.json", "tokenizer/tokenizer.json"}
    await kube.patch(MODEL_CACHE, namespace, "fixed", {"spec": {"downloadFilter": {"include": ["*.json"]}}})
    await status_of(kube, MODEL_CACHE, namespace, "fixed", lambda s: s.get("status") == "Ready", "set back")

    paused = {"aim.eai.amd.com/reconciliation-paused": "true"}
    bad = {"sourceUri": "hf://acme/none", "downloadFilter": {"exclude": [42]}}
    with pytest.raises(ApiException) as not_strings:
        await kube.create(
            MODEL_CACHE, manifest(MODEL_CACHE, "bad", namespace, bad, annotations=paused), namespace
        )
    assert not_strings.value.status == 422
    assert "downloadFilter.exclude" in str(not_strings.value.body)
    config = {"storage": {"downloadFilter": {"include": "*.json"}}}
    with pytest.raises(ApiException) as not_a_list:
        await kube.create(RUNTIME_CONFIG, manifest(RUNTIME_CONFIG, "bad", namespace, config), namespace)
    assert not_a_list.value.status == 422
    assert "storage.downloadFilter.include" in str(not_a_list.value.body)
