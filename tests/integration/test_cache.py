"""The cache service as a real process with its local executor (the embedded default: no kubelet),
against a real API server (with the garbage collector), a local Hub-compatible server and an
S3-compatible server (moto): model caches download, verify and report; bad input gets a clear
reason; template caches reuse, isolate, promote and clean up model caches as the seed describes;
an AIMArtifact (the released name of the model cache) reports its download as the released original
does, and under ``AIM_BEHAVIOUR=released`` template caches create AIMArtifacts.

Sources point at the local servers through the caches' own env (``HF_ENDPOINT``,
``AWS_ENDPOINT_URL``), as a user would point them at a mirror."""

from __future__ import annotations

import base64
import contextlib
import secrets
from pathlib import Path
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.local.hub import HubServer, add_repo
from aim_dev.local.registry import Registry
from aim_dev.local.s3 import S3Server
from aimcore.api.kinds import NAMESPACE, SECRET, by_kind
from aimcore.runtime import ApiException, Kube
from tests.file_server import FileServer
from tests.helpers import condition, eventually, has, lift_quota, manifest, quota_of_none, status_of
from tests.integration.conftest import ensure_service, health_get
from tests.oci_models import pull_secret, push_docker_model, repo, tiny_gguf

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
ARTIFACT = by_kind(AIM, "AIMArtifact")
TEMPLATE_CACHE = by_kind(AIM, "AIMTemplateCache")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
PAUSED = {"aim.eai.amd.com/reconciliation-paused": "true"}
MODEL = by_kind(AIM, "AIMModel")
LEGACY_MODEL_CACHE = by_kind(LEGACY, "AIMModelCache")

FILES = {
    "config.json": b'{"architectures": ["LlamaForCausalLM"]}',
    "model.safetensors": bytes(range(256)) * 64,  # 16 KiB: an LFS file (threshold below)
    "tokenizer/tokenizer.json": b'{"version": "1.0"}' * 10,
}


def suffix() -> str:
    return secrets.token_hex(3)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture
async def cache(running, js: JetStreamContext, cache_dir: Path):  # type: ignore[no-untyped-def]
    """The session's services plus the cache service with its local executor."""
    env = {"AIM_CACHE_EXECUTOR": "local", "AIM_CACHE_DIR": str(cache_dir), "AIM_DOWNLOAD_STALL_SECONDS": "5"}
    return await ensure_service(running, js, "cache", env=env)


def hf_repo(hub: HubServer, files: dict[str, bytes] = FILES, token: str | None = None) -> str:
    repo = f"acme/tiny-{suffix()}"
    add_repo(hub.root, repo, files, token=token, lfs_threshold=1024)
    return repo


def hf_env(hub: HubServer, token: str | None = None) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": "HF_ENDPOINT", "value": hub.endpoint}]
    if token:
        env.append({"name": "HF_TOKEN", "value": token})
    return env


async def wait_status(kube: Kube, ref: Any, namespace: str, name: str, state: str) -> dict[str, Any]:
    return await status_of(kube, ref, namespace, name, lambda s: s.get("status") == state, f"{name} {state}")


async def test_hf_model_cache_downloads_verifies_and_reports_progress(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer, cache_dir: Path
) -> None:
    repo = hf_repo(hub_server)
    spec = {"sourceUri": f"hf://{repo}", "env": hf_env(hub_server)}
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "tiny", namespace, spec), namespace)
    done = await wait_status(kube, MODEL_CACHE, namespace, "tiny", "Ready")
    status = done["status"]
    download = condition(status, "DownloadReady")
    assert download["reason"] == "Verified"
    assert "sha256" in download["message"] and "git-sha1" in download["message"]
    total = sum(len(b) for b in FILES.values())
    assert status["progress"]["percentage"] == 100
    assert status["progress"]["downloadedBytes"] == status["progress"]["totalBytes"] == total
    assert status["mode"] == "Shared"
    assert condition(status, "Ready")["observedGeneration"] == done["metadata"]["generation"]
    root = cache_dir / namespace / "tiny"
    for path, data in FILES.items():
        assert (root / path).read_bytes() == data
    assert not list(root.rglob("*.part"))


async def test_s3_model_cache_with_credentials_from_a_secret(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, s3_server: S3Server
) -> None:
    bucket = f"models-{suffix()}"
    s3_server.put_model(bucket, "acme/s3-tiny", FILES)
    data = {
        "AWS_ACCESS_KEY_ID": base64.b64encode(s3_server.access_key.encode()).decode(),
        "AWS_SECRET_ACCESS_KEY": base64.b64encode(s3_server.secret_key.encode()).decode(),
    }
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s3-creds"}, "data": data}
    await kube.create(SECRET, secret, namespace)
    env = [
        {"name": "AWS_ENDPOINT_URL", "value": s3_server.endpoint},
        *(
            {"name": key, "valueFrom": {"secretKeyRef": {"name": "s3-creds", "key": key}}}
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
        ),
    ]
    spec = {"sourceUri": f"s3://{bucket}/acme/s3-tiny", "modelId": "acme/s3-tiny", "env": env}
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "s3-tiny", namespace, spec), namespace)
    done = await wait_status(kube, MODEL_CACHE, namespace, "s3-tiny", "Ready")
    download = condition(done["status"], "DownloadReady")
    assert download["reason"] == "Verified"
    assert "sha256" in download["message"]
    # the credentials never reach the status
    assert s3_server.secret_key not in str(done["status"])


async def test_an_oci_model_from_a_private_registry_with_its_pull_secret(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    cache, kube: Kube, namespace: str, oci_registry_auth: Registry, cache_dir: Path, tmp_path: Path
) -> None:
    """A GGUF pushed as a Docker model (OCI artifact) to a registry with basic auth becomes a Ready
    cache with the cache's ``imagePullSecrets``; an unknown tag fails with ``SourceNotFound``."""
    gguf = tiny_gguf(tmp_path / "push")
    pushed = push_docker_model(oci_registry_auth, repo(), "q4", gguf, "Apache-2.0")
    assert oci_registry_auth.password is not None
    await kube.create(SECRET, pull_secret(oci_registry_auth, "regcred"), namespace)
    pulls = [{"name": "regcred"}]
    for name, uri in (("oci-tiny", pushed.uri), ("oci-missing", pushed.uri.rsplit(":", 1)[0] + ":missing")):
        spec = {"sourceUri": uri, "modelId": "models/tiny", "imagePullSecrets": pulls}
        await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, name, namespace, spec), namespace)
    done = await wait_status(kube, MODEL_CACHE, namespace, "oci-tiny", "Ready")
    assert condition(done["status"], "DownloadReady")["reason"] == "Verified"
    assert done["status"]["progress"]["percentage"] == 100
    root = cache_dir / namespace / "oci-tiny"
    assert (root / "model.gguf").read_bytes() == gguf.read_bytes()
    assert (root / "LICENSE").read_text() == "Apache-2.0"
    assert oci_registry_auth.password not in str(done["status"])
    failed = await wait_status(kube, MODEL_CACHE, namespace, "oci-missing", "Failed")
    source = condition(failed["status"], "SourceReady")
    assert source["reason"] == "SourceNotFound" and "MANIFEST_UNKNOWN" in source["message"], source


async def test_a_corrupted_byte_is_caught_and_the_cache_never_turns_ready(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer, cache_dir: Path
) -> None:
    repo = hf_repo(hub_server)
    hub_server.corrupt(repo, "model.safetensors", 1000, count=100)
    spec = {"sourceUri": f"hf://{repo}", "env": hf_env(hub_server)}
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "corrupt", namespace, spec), namespace)
    failed = await wait_status(kube, MODEL_CACHE, namespace, "corrupt", "Failed")
    download = condition(failed["status"], "DownloadReady")
    assert download["reason"] == "ChecksumMismatch"
    assert "model.safetensors" in download["message"]
    assert "next attempt at" in download["message"]
    assert condition(failed["status"], "Ready")["status"] == "False"
    root = cache_dir / namespace / "corrupt"
    assert not (root / "model.safetensors").exists()
    assert not (root / ".aim-manifest.json").exists()


async def test_wrong_credentials_and_missing_sources_give_distinct_reasons(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer, s3_server: S3Server
) -> None:
    token = f"hf_{secrets.token_hex(12)}"
    private = hf_repo(hub_server, token=token)
    cases = {
        "hf-wrong-token": (f"hf://{private}", hf_env(hub_server, token=f"hf_{secrets.token_hex(12)}")),
        "hf-missing": (f"hf://acme/missing-{suffix()}", hf_env(hub_server, token=token)),
    }
    bucket = f"models-{suffix()}"
    s3_server.put_model(bucket, "acme/m", {"config.json": b"{}"})
    s3_env = [{"name": "AWS_ENDPOINT_URL", "value": s3_server.endpoint}]
    cases["s3-wrong-secret"] = (
        f"s3://{bucket}/acme/m",
        [
            *s3_env,
            {"name": "AWS_ACCESS_KEY_ID", "value": s3_server.access_key},
            {"name": "AWS_SECRET_ACCESS_KEY", "value": "not-the-secret"},
        ],
    )
    cases["s3-missing"] = (
        f"s3://missing-{suffix()}/acme/m",
        [
            *s3_env,
            {"name": "AWS_ACCESS_KEY_ID", "value": s3_server.access_key},
            {"name": "AWS_SECRET_ACCESS_KEY", "value": s3_server.secret_key},
        ],
    )
    for name, (uri, env) in cases.items():
        spec = {"sourceUri": uri, "modelId": "acme/m", "env": env}
        await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, name, namespace, spec), namespace)
    expected = {
        "hf-wrong-token": "AuthError",
        "hf-missing": "SourceNotFound",
        "s3-wrong-secret": "AuthError",
        "s3-missing": "SourceNotFound",
    }
    for name, reason in expected.items():
        failed = await status_of(
            kube, MODEL_CACHE, namespace, name, has("SourceReady", "False", reason), f"{name}: {reason}"
        )
        assert failed["status"]["status"] == "Failed"
        assert condition(failed["status"], "Ready")["reason"] == reason
        assert token not in str(failed["status"])


async def test_legacy_model_cache_becomes_available(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    repo = hf_repo(hub_server)
    spec = {"sourceUri": f"hf://{repo}", "env": hf_env(hub_server)}
    await kube.create(LEGACY_MODEL_CACHE, manifest(LEGACY_MODEL_CACHE, "old", namespace, spec), namespace)
    done = await wait_status(kube, LEGACY_MODEL_CACHE, namespace, "old", "Available")
    assert condition(done["status"], "DownloadReady")["reason"] == "Verified"
    assert "progress" not in done["status"]


# -- template caches -------------------------------------------------------------------------------


async def model_caches(kube: Kube, namespace: str, uri: str) -> list[dict[str, Any]]:
    """The model caches of ``uri`` in ``namespace``, of both kinds (AIMModelCache, and AIMArtifact
    which a template cache creates under ``AIM_BEHAVIOUR=released``)."""
    found: list[dict[str, Any]] = []
    for kind in (MODEL_CACHE, ARTIFACT):
        items, _ = await kube.list(kind, namespace)
        found += [c for c in items if c["spec"]["sourceUri"] == uri]
    return found


async def template_cache(  # noqa: PLR0917
    kube: Kube, namespace: str, name: str, template: str, sources: list[dict[str, Any]], mode: str = "Shared"
) -> None:
    spec = {"templateName": template, "modelSources": sources, "mode": mode}
    await kube.create(TEMPLATE_CACHE, manifest(TEMPLATE_CACHE, name, namespace, spec), namespace)


async def a_template(kube: Kube, namespace: str, name: str) -> None:
    spec = {"modelName": "absent", "modelSources": [{"sourceUri": "hf://acme/x", "modelId": "acme/x"}]}
    await kube.create(TEMPLATE, manifest(TEMPLATE, name, namespace, spec), namespace)


async def test_shared_template_caches_share_and_dedicated_ones_are_isolated(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    repo = hf_repo(hub_server)
    uri = f"hf://{repo}"
    sources = [{"modelId": repo, "sourceUri": uri, "env": hf_env(hub_server)}]
    await a_template(kube, namespace, "tpl")
    await template_cache(kube, namespace, "shared-a", "tpl", sources)
    await template_cache(kube, namespace, "shared-b", "tpl", sources)
    done = {
        name: await wait_status(kube, TEMPLATE_CACHE, namespace, name, "Ready")
        for name in ("shared-a", "shared-b")
    }
    # (created once the shared cache exists: a Shared template cache that meets only a dedicated
    # cache promotes it, as the seed says; that case is the next test's)
    await template_cache(kube, namespace, "dedicated", "tpl", sources, mode="Dedicated")
    done["dedicated"] = await wait_status(kube, TEMPLATE_CACHE, namespace, "dedicated", "Ready")
    shared = {done[n]["status"]["modelCaches"][repo]["name"] for n in ("shared-a", "shared-b")}
    assert len(shared) == 1, shared
    dedicated_name = done["dedicated"]["status"]["modelCaches"][repo]["name"]
    assert dedicated_name not in shared
    entry = done["shared-a"]["status"]["modelCaches"][repo]
    assert entry["mountPoint"] == f"/workspace/model-cache/{repo}"
    assert entry["status"] == "Ready"
    assert done["shared-a"]["status"]["resolvedTemplateKind"] == "AIMServiceTemplate"
    caches = {c["metadata"]["name"]: c for c in await model_caches(kube, namespace, uri)}
    assert set(caches) == {*shared, dedicated_name}
    (shared_name,) = shared
    assert not caches[shared_name]["metadata"].get("ownerReferences")
    owner = caches[dedicated_name]["metadata"]["ownerReferences"][0]
    assert owner["uid"] == done["dedicated"]["metadata"]["uid"]

    # Dedicated: collected with its template cache; Shared: outlives both of its users
    for name in ("dedicated", "shared-a", "shared-b"):
        await kube.delete(TEMPLATE_CACHE, namespace, name)

    async def collected() -> bool:
        names = {c["metadata"]["name"] for c in await model_caches(kube, namespace, uri)}
        gone = [await kube.get(TEMPLATE_CACHE, namespace, n) for n in ("dedicated", "shared-a", "shared-b")]
        return names == {shared_name} and gone == [None, None, None]

    await eventually(collected, timeout=45, what="the dedicated model cache collected, the shared one kept")


async def dedicated_then_shared(
    kube: Kube, namespace: str, hub: HubServer
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A Dedicated template cache made Ready, then a Shared one of the same template and source:
    the source's URI and both template caches once Ready."""
    repo = hf_repo(hub)
    uri = f"hf://{repo}"
    sources = [{"modelId": repo, "sourceUri": uri, "env": hf_env(hub)}]
    await a_template(kube, namespace, "tpl")
    await template_cache(kube, namespace, "dedicated", "tpl", sources, mode="Dedicated")
    dedicated = await wait_status(kube, TEMPLATE_CACHE, namespace, "dedicated", "Ready")
    await template_cache(kube, namespace, "shared", "tpl", sources)
    shared = await wait_status(kube, TEMPLATE_CACHE, namespace, "shared", "Ready")
    return uri, dedicated, shared


def cache_name_of(template_cache: dict[str, Any]) -> str:
    """The one model cache a template cache's status lists."""
    (entry,) = template_cache["status"]["modelCaches"].values()
    return str(entry["name"])


async def test_a_shared_template_cache_promotes_a_dedicated_model_cache(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    uri, ready, shared = await dedicated_then_shared(kube, namespace, hub_server)
    owned = cache_name_of(ready)
    assert cache_name_of(shared) == owned  # adopted, not downloaded again

    async def promoted() -> dict[str, Any] | None:
        obj = await kube.get(MODEL_CACHE, namespace, owned)
        return obj if obj is not None and not obj["metadata"].get("ownerReferences") else None

    await eventually(promoted, timeout=30, what="owner references removed")
    await kube.delete(TEMPLATE_CACHE, namespace, "dedicated")

    async def dedicated_gone() -> bool:
        return await kube.get(TEMPLATE_CACHE, namespace, "dedicated") is None

    await eventually(dedicated_gone, timeout=30, what="the dedicated template cache deleted")
    # promoted: the former owner's deletion leaves it (and the dedicated one never re-owns it)
    still = await kube.get(MODEL_CACHE, namespace, owned)
    assert still is not None and not still["metadata"].get("ownerReferences")
    assert (await model_caches(kube, namespace, uri)) == [still]


async def test_deleting_a_template_cache_deletes_only_its_caches_that_are_not_ready(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    good = hf_repo(hub_server)
    missing = f"acme/missing-{suffix()}"
    sources = [
        {"modelId": good, "sourceUri": f"hf://{good}", "env": hf_env(hub_server)},
        {"modelId": missing, "sourceUri": f"hf://{missing}", "env": hf_env(hub_server)},
    ]
    await a_template(kube, namespace, "tpl")
    await template_cache(kube, namespace, "mixed", "tpl", sources)

    def settled(status: dict[str, Any]) -> bool:
        # Failed as soon as the bad source fails; the good one may still be downloading then
        entries = status.get("modelCaches") or {}
        return status.get("status") == "Failed" and (entries.get(good) or {}).get("status") == "Ready"

    failed = await status_of(kube, TEMPLATE_CACHE, namespace, "mixed", settled, "Failed, good cache Ready")
    assert "aim.eai.amd.com/artifactcleanup" in failed["metadata"]["finalizers"]
    assert condition(failed["status"], "ModelCachesReady")["reason"] == "SourceNotFound"
    caches = failed["status"]["modelCaches"]
    assert caches[good]["status"] == "Ready" and caches[missing]["status"] == "Failed"
    await kube.delete(TEMPLATE_CACHE, namespace, "mixed")

    async def cleaned() -> bool:
        gone = await kube.get(TEMPLATE_CACHE, namespace, "mixed") is None
        bad = await kube.get(MODEL_CACHE, namespace, caches[missing]["name"])
        return gone and bad is None

    await eventually(cleaned, timeout=30, what="the finalizer's cleanup")
    assert await kube.get(MODEL_CACHE, namespace, caches[good]["name"]) is not None


async def test_a_missing_template_fails_the_template_cache(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str
) -> None:
    spec = {"templateName": "nowhere", "templateScope": "Namespace"}
    await kube.create(TEMPLATE_CACHE, manifest(TEMPLATE_CACHE, "lost", namespace, spec), namespace)
    failed = await wait_status(kube, TEMPLATE_CACHE, namespace, "lost", "Failed")
    # the original's vocabulary: every missing upstream object is ReferenceNotFound with
    # ConfigValid=False; the message keeps the specific cause (issue 18)
    ready = condition(failed["status"], "Ready")
    assert ready["reason"] == "ReferenceNotFound"
    assert "AIMServiceTemplate in namespace" in ready["message"]
    config = condition(failed["status"], "ConfigValid")
    assert (config["status"], config["reason"]) == ("False", "ReferenceNotFound")
    assert condition(failed["status"], "ServiceTemplateReady")["reason"] == "ReferenceNotFound"


async def test_a_model_cache_the_api_server_refuses_fails_the_template_cache(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str
) -> None:
    """A namespace quota of no model caches: the API server refuses the template cache's model
    cache (403, exceeded quota). The refusal is ``ModelCachesReady`` with the server's message,
    the entry in ``status.modelCaches`` Failed; once the quota allows it, the next reconcile
    creates it (issue 26: before, the refused write was retried in a loop with no condition)."""
    quota = await quota_of_none(kube, namespace, "count/aimmodelcaches.aim.eai.amd.com")
    await a_template(kube, namespace, "tpl")
    sources = [{"sourceUri": "hf://acme/x", "modelId": "acme/x"}]
    spec = {"templateName": "tpl", "modelSources": sources}
    await kube.create(TEMPLATE_CACHE, manifest(TEMPLATE_CACHE, "quota", namespace, spec), namespace)
    failed = await wait_status(kube, TEMPLATE_CACHE, namespace, "quota", "Failed")
    caches = condition(failed["status"], "ModelCachesReady")
    assert caches.get("reason") == "ModelCacheCreateForbidden", failed["status"]
    assert "refused to create AIMModelCache" in caches["message"] and "quota" in caches["message"]
    assert failed["status"]["modelCaches"]["acme/x"]["status"] == "Failed"
    assert await model_caches(kube, namespace, "hf://acme/x") == []

    async def created() -> bool:
        return len(await model_caches(kube, namespace, "hf://acme/x")) == 1

    what = "the model cache created once the quota allows it"
    await lift_quota(kube, namespace, quota, poke=(TEMPLATE_CACHE, "quota"), until=created, what=what)


async def test_a_template_cache_with_an_oci_source_fills_a_model_cache(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, oci_registry: Registry, tmp_path: Path
) -> None:
    pushed = push_docker_model(oci_registry, repo(), "v1", tiny_gguf(tmp_path / "push"), "MIT")
    await a_template(kube, namespace, "tpl")
    await template_cache(
        kube, namespace, "oci", "tpl", [{"modelId": "models/oci", "sourceUri": pushed.pinned}]
    )
    done = await wait_status(kube, TEMPLATE_CACHE, namespace, "oci", "Ready")
    entry = done["status"]["modelCaches"]["models/oci"]
    assert entry["status"] == "Ready"
    (model_cache,) = await model_caches(kube, namespace, pushed.pinned)
    assert model_cache["metadata"]["name"] == entry["name"]
    assert condition(model_cache["status"], "DownloadReady")["reason"] == "Verified"


async def test_a_template_with_caching_enabled_ends_with_ready_caches(  # type: ignore[no-untyped-def]
    cache, js: JetStreamContext, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    """Discovery creates the template's AIMTemplateCache; the cache service fills it."""
    if await kube.get(NAMESPACE, None, "aim-system") is None:
        with contextlib.suppress(ApiException):
            await kube.create(
                NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aim-system"}}
            )
    await ensure_service(cache, js, "discovery")
    repo = hf_repo(hub_server)
    sources = [{"modelId": repo, "sourceUri": f"hf://{repo}"}]
    model_spec = {"image": "example.invalid/aim-base:1.0", "modelSources": sources}
    await kube.create(MODEL, manifest(MODEL, "custom", namespace, model_spec), namespace)
    spec = {
        "modelName": "custom",
        "modelSources": sources,
        "caching": {"enabled": True, "env": hf_env(hub_server)},
    }
    await kube.create(TEMPLATE, manifest(TEMPLATE, "cached", namespace, spec), namespace)
    done = await wait_status(kube, TEMPLATE_CACHE, namespace, "cached", "Ready")
    entry = done["status"]["modelCaches"][repo]
    assert entry["status"] == "Ready"
    model_cache = await kube.get(MODEL_CACHE, namespace, entry["name"])
    assert condition(model_cache["status"], "DownloadReady")["reason"] == "Verified"
    assert done["metadata"]["ownerReferences"][0]["name"] == "cached"


async def test_sources_where_the_outbound_policy_refuses_fail_with_the_reason(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, other_host: FileServer
) -> None:
    """A Hub or S3 endpoint on the metadata service or on a host the operator does not allow fails
    the cache with ``AddressNotAllowed``, before anything connects; a cache's own env cannot lift the
    operator's policy."""
    keys = [{"name": "AWS_ACCESS_KEY_ID", "value": "k"}, {"name": "AWS_SECRET_ACCESS_KEY", "value": "s"}]

    def endpoint(url: str) -> dict[str, str]:
        return {"name": "AWS_ENDPOINT_URL", "value": url}

    cases = {
        "hf-metadata": ("hf://acme/m", [{"name": "HF_ENDPOINT", "value": "http://169.254.169.254"}]),
        "hf-other-host": (
            "hf://acme/m",
            [
                {"name": "HF_ENDPOINT", "value": other_host.base},
                {"name": "AIM_OUTBOUND_ALLOW_PRIVATE", "value": "true"},  # not the user's to say
                {"name": "AIM_OUTBOUND_ALLOWED_HOSTS", "value": "127.0.0.2"},
            ],
        ),
        "s3-other-host": (
            "s3://bucket/acme/m",
            [{"name": "AWS_ENDPOINT_URL", "value": other_host.base}, *keys],
        ),
        "s3-metadata": (
            "s3://bucket/acme/m",
            [{"name": "AWS_ENDPOINT_URL", "value": "http://169.254.169.254"}],
        ),
    }
    for name, (uri, env) in cases.items():
        spec = {"sourceUri": uri, "modelId": "acme/m", "env": env}
        await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, name, namespace, spec), namespace)
    for name in cases:
        failed = await status_of(
            kube, MODEL_CACHE, namespace, name, has("SourceReady", "False", "AddressNotAllowed"), name
        )
        assert failed["status"]["status"] == "Failed", (name, failed["status"])
        assert condition(failed["status"], "Ready")["reason"] == "AddressNotAllowed"
        assert "not allowed" in condition(failed["status"], "SourceReady")["message"]
    assert other_host.requests == []


async def test_a_template_still_in_progress_keeps_the_template_cache_pending(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str
) -> None:
    """Issue 18, item 1: as in the original, a template cache waits (Pending) for a template that is
    still in progress, and fails with one that failed (the template's state named in the message)."""
    spec = {"modelName": "m", "modelSources": [{"sourceUri": "hf://acme/x", "modelId": "acme/x"}]}
    await kube.create(TEMPLATE, manifest(TEMPLATE, "coming", namespace, spec, annotations=PAUSED), namespace)
    await kube.patch_status(TEMPLATE, namespace, "coming", {"status": {"status": "Progressing"}})
    tc = {"templateName": "coming", "templateScope": "Namespace"}
    await kube.create(TEMPLATE_CACHE, manifest(TEMPLATE_CACHE, "waits", namespace, tc), namespace)
    waiting = await wait_status(kube, TEMPLATE_CACHE, namespace, "waits", "Pending")
    template = condition(waiting["status"], "ServiceTemplateReady")
    assert (template["status"], template["reason"]) == ("False", "TemplateNotReady")
    assert template["message"].startswith("template coming is Progressing"), template
    await kube.patch_status(TEMPLATE, namespace, "coming", {"status": {"status": "Failed"}})
    failed = await wait_status(kube, TEMPLATE_CACHE, namespace, "waits", "Failed")
    assert condition(failed["status"], "Ready")["reason"] == "TemplateNotReady"


# -- AIMArtifact, the released name of the model cache ----------------------------------------------


async def test_an_artifact_downloads_and_says_how_as_the_released_original_does(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    """An AIMArtifact is served by the model-cache controller: Ready with the model cache's
    conditions, plus ``DownloadComplete=True/Verified`` and ``status.download``; an AIMModelCache of
    the same source keeps the seed's status (neither)."""
    repo = hf_repo(hub_server)
    spec = {"sourceUri": f"hf://{repo}", "env": hf_env(hub_server)}
    await kube.create(ARTIFACT, manifest(ARTIFACT, "tiny", namespace, spec), namespace)
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "tiny-seed", namespace, spec), namespace)
    done = await wait_status(kube, ARTIFACT, namespace, "tiny", "Ready")
    status = done["status"]
    assert condition(status, "DownloadReady")["reason"] == "Verified"
    complete = condition(status, "DownloadComplete")
    assert (complete["status"], complete["reason"], complete["message"]) == (
        "True",
        "Verified",
        "Download and verification complete",
    )
    assert status["download"] == {
        "protocol": "HF_TRANSFER",
        "attempt": 1,
        "totalAttempts": 2,
        "protocolSequence": "HF_TRANSFER,HTTP",
        "message": "Complete",
    }
    assert status["progress"]["percentage"] == 100
    assert status["progress"]["displayPercentage"] == "100 %"
    seed = (await wait_status(kube, MODEL_CACHE, namespace, "tiny-seed", "Ready"))["status"]
    assert "download" not in seed
    assert not condition(seed, "DownloadComplete")


async def test_an_artifact_that_fails_says_before_or_after_every_byte_was_in(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    """A corrupted byte fails verification (``VerificationFailed``); a missing source fails before
    any byte (``Downloading`` "Download failed before completion"); both show progress ``N/A``, the
    download ``Failed`` and the downloader's reason on ``DownloadReady``."""
    corrupt = hf_repo(hub_server)
    hub_server.corrupt(corrupt, "model.safetensors", 1000, count=100)
    cases = {
        "corrupt": (f"hf://{corrupt}", "ChecksumMismatch", "VerificationFailed"),
        "missing": (f"hf://acme/missing-{suffix()}", "SourceNotFound", "Downloading"),
    }
    for name, (uri, _, _) in cases.items():
        spec = {"sourceUri": uri, "modelId": "acme/m", "env": hf_env(hub_server)}
        await kube.create(ARTIFACT, manifest(ARTIFACT, name, namespace, spec), namespace)
    messages = {
        "VerificationFailed": "Download completed but verification failed",
        "Downloading": "Download failed before completion",
    }
    for name, (_, reason, complete) in cases.items():
        said = has("DownloadComplete", "False", complete)
        failed = await status_of(
            kube,
            ARTIFACT,
            namespace,
            name,
            lambda s, said=said: s.get("status") == "Failed" and said(s),
            f"{name}: Failed, {complete}",
        )
        status = failed["status"]
        assert condition(status, "DownloadComplete")["message"] == messages[complete]
        assert condition(status, "DownloadReady")["reason"] == reason
        assert status["status"] == "Failed"
        assert status["progress"]["displayPercentage"] == "N/A"
        assert status["download"]["message"] == "Failed"


@pytest.fixture
async def released_cache(cache, js: JetStreamContext):  # type: ignore[no-untyped-def]
    """The cache service restarted with ``AIM_BEHAVIOUR=released`` for one test, then back to the
    session's setting (one cache process at a time: two would split the events between them)."""
    services = cache
    env = dict(services.service_env.get("cache", {}))

    async def restart(with_env: dict[str, str]) -> None:
        services.procs["cache"].stop()
        services.start("cache", env=with_env)

        async def ready() -> bool:
            services.assert_alive()
            code, _ = await health_get(services, "cache", "/readyz")
            return code == 200

        await eventually(ready, timeout=60, what="the cache service ready")

    await restart({**env, "AIM_BEHAVIOUR": "released"})
    try:
        yield services
    finally:
        await restart(env)


async def test_under_released_a_template_cache_creates_artifacts_and_uses_either_kind(  # type: ignore[no-untyped-def]
    released_cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    """``AIM_BEHAVIOUR=released``: the model cache a template cache creates is an AIMArtifact; an
    AIMModelCache already there for a source is used, not duplicated; the status carries
    ``status.artifacts`` and ``ArtifactsReady`` beside the seeds' names; the older finalizer name is
    honoured on delete."""
    fresh, cached = hf_repo(hub_server), hf_repo(hub_server)
    env = hf_env(hub_server)
    await kube.create(
        MODEL_CACHE,
        manifest(MODEL_CACHE, "pre", namespace, {"sourceUri": f"hf://{cached}", "env": env}),
        namespace,
    )
    await wait_status(kube, MODEL_CACHE, namespace, "pre", "Ready")
    sources = [
        {"modelId": fresh, "sourceUri": f"hf://{fresh}", "env": env},
        {"modelId": cached, "sourceUri": f"hf://{cached}", "env": env},
    ]
    await a_template(kube, namespace, "tpl")
    await template_cache(kube, namespace, "released", "tpl", sources)
    done = await wait_status(kube, TEMPLATE_CACHE, namespace, "released", "Ready")
    status = done["status"]
    assert status["artifacts"] == status["modelCaches"]
    assert status["modelCaches"][cached]["name"] == "pre"  # the AIMModelCache already there
    created = status["modelCaches"][fresh]["name"]
    artifact = await kube.get(ARTIFACT, namespace, created)
    assert artifact is not None and artifact["status"]["status"] == "Ready"
    assert await kube.get(MODEL_CACHE, namespace, created) is None
    assert condition(artifact["status"], "DownloadComplete")["reason"] == "Verified"
    said = condition(status, "ArtifactsReady")
    seeds = condition(status, "ModelCachesReady")
    assert (said["status"], said["reason"], said["message"]) == (
        seeds["status"],
        seeds["reason"],
        seeds["message"],
    )
    assert said["status"] == "True"

    # the older name of the finalizer is honoured: the delete finishes with both on it
    older = "aim.eai.amd.com/model-cache-cleanup"
    await kube.patch(
        TEMPLATE_CACHE,
        namespace,
        "released",
        {"metadata": {"finalizers": [*done["metadata"]["finalizers"], older]}},
    )
    await kube.delete(TEMPLATE_CACHE, namespace, "released")

    async def gone() -> bool:
        return await kube.get(TEMPLATE_CACHE, namespace, "released") is None

    await eventually(gone, timeout=30, what="the template cache deleted, both finalizers removed")
