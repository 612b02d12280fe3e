"""The OCI client against a real registry (Debian's docker-registry, CNCF distribution 2.8):
labels from manifest + config only, multi-arch indexes, catalog/tags, and every error class."""

from __future__ import annotations

import base64
import json
import secrets
import time
from pathlib import Path

import pytest

from aim_dev.local.registry import Registry
from aim_dev.testing.oci import Format, delete_tag_manifest, push_image
from aimcore.domain.oci import (
    AddressNotAllowed,
    AuthFailed,
    DockerConfig,
    ImageNotFound,
    RegistryClient,
    credentials_from_secret,
    parse_reference,
)
from aimcore.domain.outbound import OutboundPolicy
from tests.helpers import LOOPBACK

AIM_LABELS = {
    "com.amd.aim.model.canonicalName": "meta-llama/Llama-3.1-8B-Instruct",
    "com.amd.aim.model.source": "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct",
    "com.amd.aim.model.tags": "text-generation,chat",
    "com.amd.aim.hfToken.required": "true",
    "org.amd.silogen.model.recommendedDeployments": (
        "{'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency', 'profileId': 'x'}, "
        "{'gpuModel': 'MI300X', 'gpuCount': 8, 'precision': 'fp16', 'metric': 'throughput'}"
    ),
    "org.opencontainers.image.version": "0.7.0",
}


def repo_name(prefix: str = "aim") -> str:
    return f"{prefix}/t-{secrets.token_hex(4)}"


def registry_log(registry: Registry, needle: str, timeout: float = 5.0) -> str:
    """The registry's log once it contains ``needle`` (access-log lines are written after the response)."""
    assert registry.log_path is not None
    deadline = time.monotonic() + timeout
    while True:
        text = Path(registry.log_path).read_text(errors="replace")
        if needle in text or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


@pytest.mark.parametrize("manifest_format", ["oci", "docker"])
async def test_labels_from_manifest_and_config_only(oci_registry: Registry, manifest_format: Format) -> None:
    repo = repo_name()
    pushed = push_image(oci_registry.url, repo, "0.7.0", AIM_LABELS, manifest_format=manifest_format)
    [layer] = pushed.layer_digests
    config_digest = pushed.manifests[0].config_digest
    async with RegistryClient(policy=LOOPBACK) as client:
        meta = await client.image_metadata(f"{oci_registry.host}/{repo}:0.7.0")
        requests = list(client.request_log)

    assert meta.model is not None and meta.oci is not None
    assert meta.model.canonical_name == "meta-llama/Llama-3.1-8B-Instruct"
    assert meta.model.tags == ["text-generation", "chat"]
    assert meta.model.hf_token_required is True
    assert [(d.gpu_count, d.precision) for d in meta.model.recommended_deployments or []] == [
        (1, "fp8"),
        (8, "fp16"),
    ]
    assert meta.oci.version == "0.7.0"
    assert meta.original_labels == AIM_LABELS

    base = f"{oci_registry.url}/v2/{repo}"
    assert requests == [("GET", f"{base}/manifests/0.7.0"), ("GET", f"{base}/blobs/{config_digest}")]
    # and from the registry's side: the config blob was served, the layer never was
    log = registry_log(oci_registry, f'"GET /v2/{repo}/blobs/{config_digest}')
    assert f'"GET /v2/{repo}/blobs/{config_digest}' in log
    assert f'"GET /v2/{repo}/blobs/{layer}' not in log


async def test_by_digest_and_head_digest(oci_registry: Registry) -> None:
    repo = repo_name()
    pushed = push_image(oci_registry.url, repo, "1.0", {"a": "b"})
    async with RegistryClient(policy=LOOPBACK) as client:
        assert await client.digest(f"{oci_registry.host}/{repo}:1.0") == pushed.digest
        assert await client.labels(f"{oci_registry.host}/{repo}@{pushed.digest}") == {"a": "b"}
        manifest = await client.manifest(parse_reference(f"{oci_registry.host}/{repo}:1.0"))
        assert manifest.digest == pushed.digest and not manifest.is_index


@pytest.mark.parametrize("manifest_format", ["oci", "docker"])
async def test_multi_arch_index_resolves_to_linux_amd64(
    oci_registry: Registry, manifest_format: Format
) -> None:
    repo = repo_name()
    platforms = ["linux/arm64", "linux/arm/v7", "linux/amd64"]
    pushed = push_image(
        oci_registry.url,
        repo,
        "2.0",
        {"com.amd.aim.model.canonicalName": "org/model"},
        platforms=platforms,
        manifest_format=manifest_format,
        platform_labels={p: {"built.for": p} for p in platforms},
    )
    amd64 = pushed.for_platform("linux/amd64")
    async with RegistryClient(policy=LOOPBACK) as client:
        config = await client.config(f"{oci_registry.host}/{repo}:2.0")
        assert config.index_digest == pushed.digest
        assert config.manifest.digest == amd64.digest
        assert config.digest == amd64.config_digest
        assert str(config.platform) == "linux/amd64"
        assert config.labels == {"com.amd.aim.model.canonicalName": "org/model", "built.for": "linux/amd64"}
        arm = await client.labels(f"{oci_registry.host}/{repo}:2.0", platform="linux/arm/v7")
        assert arm["built.for"] == "linux/arm/v7"
        fetched_blobs = [url for _, url in client.request_log if "/blobs/" in url]
        assert all(not url.endswith(tuple(pushed.layer_digests)) for url in fetched_blobs)


async def test_index_without_amd64_uses_the_first_image(oci_registry: Registry) -> None:
    repo = repo_name()
    pushed = push_image(
        oci_registry.url,
        repo,
        "3.0",
        {},
        platforms=["linux/s390x", "linux/arm64"],
        platform_labels={"linux/s390x": {"p": "s390x"}, "linux/arm64": {"p": "arm64"}},
    )
    async with RegistryClient(policy=LOOPBACK) as client:
        config = await client.config(f"{oci_registry.host}/{repo}:3.0")
    assert config.manifest.digest == pushed.for_platform("linux/s390x").digest
    assert config.labels == {"p": "s390x"}


async def test_catalog_and_tags_with_pagination(oci_registry: Registry) -> None:
    prefix = f"cat{secrets.token_hex(3)}"
    repos = sorted(f"{prefix}/repo-{i}" for i in range(5))
    for repo in repos:
        push_image(oci_registry.url, repo, "1.0", {})
    tags = [f"1.{i}.0" for i in range(7)]
    for tag in tags:
        push_image(oci_registry.url, repos[0], tag, {"v": tag})

    async with RegistryClient(policy=LOOPBACK) as client:
        everything = await client.catalog(oci_registry.host)
        paged = await client.catalog(oci_registry.host, page_size=2)
        catalog_pages = [u for _, u in client.request_log if u.endswith("/v2/_catalog")]
        assert paged == everything
        assert set(repos) <= set(paged)
        assert len(catalog_pages) >= 1 + len(paged) // 2  # one unpaged call, then pages of two
        assert await client.catalog(oci_registry.host, page_size=2, limit=3) == everything[:3]

        # distribution 2.8 returns every tag in one page whatever ``n`` is (Link pagination of tags
        # is covered in tests/unit/oci/test_oci_client_protocol.py); the client must still get them all
        listed = await client.tags(f"{oci_registry.host}/{repos[0]}", page_size=2)
        assert sorted(listed) == sorted(["1.0", *tags])
        assert len(await client.tags(f"{oci_registry.host}/{repos[0]}", limit=3)) == 3


async def test_missing_image_repository_and_deleted_manifest(oci_registry: Registry) -> None:
    repo = repo_name()
    pushed = push_image(oci_registry.url, repo, "1.0", {})
    async with RegistryClient(policy=LOOPBACK) as client:
        with pytest.raises(ImageNotFound, match="MANIFEST_UNKNOWN"):
            await client.labels(f"{oci_registry.host}/{repo}:9.9")
        with pytest.raises(ImageNotFound, match="no/such-repo"):
            await client.labels(f"{oci_registry.host}/no/such-repo:1.0")
        with pytest.raises(ImageNotFound):
            await client.tags(f"{oci_registry.host}/no/such-repo")
        delete_tag_manifest(oci_registry.url, repo, pushed.digest)
        with pytest.raises(ImageNotFound):
            await client.labels(f"{oci_registry.host}/{repo}:1.0")
        err = ImageNotFound("x")
        assert err.reason == "ImageNotFound" and not err.transient


def dockerconfig_secret(registry: str, username: str, password: str) -> dict[str, object]:
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    config = json.dumps({"auths": {f"http://{registry}": {"auth": auth}}})
    return {
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "pull", "namespace": "t"},
        "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()},
    }


async def test_basic_auth_with_a_pull_secret(oci_registry_auth: Registry) -> None:
    assert oci_registry_auth.username and oci_registry_auth.password
    repo = repo_name()
    push_image(oci_registry_auth.url, repo, "1.0", AIM_LABELS, auth=oci_registry_auth.auth)
    creds = credentials_from_secret(
        dockerconfig_secret(oci_registry_auth.host, oci_registry_auth.username, oci_registry_auth.password)
    )
    async with RegistryClient(creds, policy=LOOPBACK) as client:
        meta = await client.image_metadata(f"{oci_registry_auth.host}/{repo}:1.0")
        assert (
            meta.model is not None
            and meta.model.canonical_name == AIM_LABELS["com.amd.aim.model.canonicalName"]
        )
        assert repo in await client.catalog(oci_registry_auth.host, page_size=1)
        assert await client.tags(f"{oci_registry_auth.host}/{repo}") == ["1.0"]
        before = len(client.request_log)
        await client.labels(f"{oci_registry_auth.host}/{repo}:1.0")
        assert len(client.request_log) - before == 2  # basic auth sent up front now, no 401 round trip


async def test_wrong_password_is_auth_failed_without_the_password(oci_registry_auth: Registry) -> None:
    assert oci_registry_auth.username
    repo = repo_name()
    push_image(oci_registry_auth.url, repo, "1.0", {}, auth=oci_registry_auth.auth)
    wrong = f"wrong-{secrets.token_hex(8)}"
    creds = DockerConfig.single(oci_registry_auth.host, oci_registry_auth.username, wrong)
    async with RegistryClient(creds, policy=LOOPBACK) as client:
        with pytest.raises(AuthFailed) as info:
            await client.labels(f"{oci_registry_auth.host}/{repo}:1.0")
        with pytest.raises(AuthFailed) as catalog_info:
            await client.catalog(oci_registry_auth.host)
    for message in (str(info.value), str(catalog_info.value)):
        assert wrong not in message
        assert str(oci_registry_auth.password) not in message
        assert base64.b64encode(f"{oci_registry_auth.username}:{wrong}".encode()).decode() not in message
    assert info.value.reason == "ImagePullAuthFailure"


async def test_anonymous_access_to_the_auth_registry_is_auth_failed(oci_registry_auth: Registry) -> None:
    repo = repo_name()
    push_image(oci_registry_auth.url, repo, "1.0", {}, auth=oci_registry_auth.auth)
    async with RegistryClient(policy=LOOPBACK) as client:
        with pytest.raises(AuthFailed, match="no credentials"):
            await client.labels(f"{oci_registry_auth.host}/{repo}:1.0")
    # credentials for another registry are not used here
    other = DockerConfig.single("ghcr.io", "someone", "x")
    async with RegistryClient(other, policy=LOOPBACK) as client:
        with pytest.raises(AuthFailed):
            await client.labels(f"{oci_registry_auth.host}/{repo}:1.0")


async def test_the_outbound_policy_decides_which_names_reach_the_registry(
    oci_registry_auth: Registry,
) -> None:
    """One real registry under two names: ``127.0.0.1`` allow-listed, ``localhost`` not (it resolves
    to loopback and is refused before anything connects), and a metadata address. The registry's
    access log shows no request under the refused name, so the pull secret never went there."""
    registry = oci_registry_auth
    repo = repo_name()
    push_image(registry.url, repo, "1.0", {"k": "v"}, auth=registry.auth)
    named = f"localhost:{registry.port}"
    creds = DockerConfig.single(registry.host, registry.username, registry.password).merged(
        DockerConfig.single(named, registry.username, registry.password)
    )
    policy = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}))
    async with RegistryClient(creds, policy=policy) as client:
        with pytest.raises(AddressNotAllowed, match=r"'localhost' resolves to .*\(loopback\)") as info:
            await client.labels(f"{named}/{repo}:1.0")
        assert info.value.reason == "AddressNotAllowed" and not info.value.transient
        with pytest.raises(AddressNotAllowed, match="cloud metadata"):
            await client.labels(f"169.254.169.254:{registry.port}/{repo}:1.0")
        assert await client.labels(f"{registry.host}/{repo}:1.0") == {"k": "v"}
    log = registry_log(registry, f"/v2/{repo}/blobs/")
    assert f"/v2/{repo}/manifests/1.0" in log  # the allowed name was served and logged
    assert named not in log
