"""``oci://`` model sources against a real registry (Debian's docker-registry, anonymous and with
basic auth), artifacts pushed with oras-py as their publishers push them: the downloader pulls a
Docker model and a plain ORAS artifact, verifies every blob (a corrupted stored blob is refused),
uses the pull secret (wrong credentials refused), and names every failure: an unknown tag, an
artifact that is not a model's files, an unreachable registry, and a redirect (or token realm) at
the metadata service, refused before anything connects there."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from aim_cache_jobs.downloader import DownloadError, download, list_source, read_manifest
from aim_cache_jobs.downloader.ocisource import CONFIG_FILE, select_blobs
from aim_dev.local.registry import Registry
from aimcore.domain.outbound import OutboundPolicy
from tests.helpers import LOOPBACK
from tests.oci_models import (
    Pushed,
    dockerconfigjson,
    push_docker_model,
    push_files,
    repo,
    stored_blob,
    tiny_gguf,
)
from tests.oci_servers import METADATA_URL, registry_servers, sha


def data(path: Path) -> bytes:
    return path.read_bytes()


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    return tiny_gguf(tmp_path / "push")


@pytest.fixture
def docker_model(oci_registry: Registry, gguf: Path) -> Pushed:
    return push_docker_model(oci_registry, repo(), "q4", gguf, "Apache-2.0")


def pull_secret_env(registry: Registry, password: str) -> dict[str, str]:
    """The env a cache's ``imagePullSecrets`` becomes in the download Job."""
    return {"AIM_OCI_PULL_SECRET_0": dockerconfigjson(registry, password)}


async def test_a_docker_model_is_pulled_and_every_blob_verified(
    docker_model: Pushed, gguf: Path, tmp_path: Path
) -> None:
    progress: list[str] = []
    done = await download(
        docker_model.uri,
        tmp_path / "out",
        env={},
        policy=LOOPBACK,
        on_progress=lambda p: progress.append(p.phase),
    )
    assert {f.path for f in done.files} == {"model.gguf", "LICENSE", CONFIG_FILE}
    assert data(tmp_path / "out" / "model.gguf") == data(gguf)
    assert data(tmp_path / "out" / "LICENSE") == b"Apache-2.0"
    assert json.loads(data(tmp_path / "out" / CONFIG_FILE))["config"]["format"] == "gguf"
    assert tuple(done.verified) == ("sha256",)
    assert done.revision == docker_model.digest
    for f in done.files:
        assert "sha256:" + str(f.digest("sha256")) == docker_model.blobs[f.path]
    assert progress[0] == "listing" and progress[-1] == "done"
    # pinned by digest: the same files; a second pull finds them complete
    again = await download(docker_model.pinned, tmp_path / "out", env={}, policy=LOOPBACK)
    assert again.source == docker_model.pinned
    assert read_manifest(tmp_path / "out") is not None


async def test_a_plain_oras_artifact_is_pulled_by_title(oci_registry: Registry, tmp_path: Path) -> None:
    files = []
    for name, text in (("config.json", "{}"), ("tokenizer.json", '{"t": 1}'), ("weights.bin", "w" * 5000)):
        (tmp_path / name).write_text(text)
        files.append(tmp_path / name)
    pushed = push_files(oci_registry, repo(), "v1", files, "application/octet-stream")
    done = await download(pushed.uri, tmp_path / "out", env={}, policy=LOOPBACK)
    assert sorted(f.path for f in done.files) == ["config.json", "tokenizer.json", "weights.bin"]
    assert data(tmp_path / "out" / "weights.bin") == b"w" * 5000


async def test_a_corrupted_blob_is_refused(oci_registry: Registry, tmp_path: Path) -> None:
    gguf = tiny_gguf(tmp_path / "push", big_tensor_bytes=4096 + secrets.randbelow(4096))
    pushed = push_docker_model(oci_registry, repo(), "bad", gguf, f"license {secrets.token_hex(4)}")
    stored = stored_blob(oci_registry, pushed.blobs["model.gguf"])
    data = bytearray(stored.read_bytes())
    data[-1] ^= 0xFF
    stored.write_bytes(bytes(data))
    with pytest.raises(DownloadError) as err:
        await download(pushed.uri, tmp_path / "out", env={}, policy=LOOPBACK)
    assert err.value.reason == "ChecksumMismatch", err.value
    assert not (tmp_path / "out" / "model.gguf").exists()


async def test_a_private_repository_needs_its_pull_secret(
    oci_registry_auth: Registry, gguf: Path, tmp_path: Path
) -> None:
    pushed = push_docker_model(oci_registry_auth, repo(), "private", gguf, "MIT")
    assert oci_registry_auth.password is not None
    await download(
        pushed.uri,
        tmp_path / "out",
        env=pull_secret_env(oci_registry_auth, oci_registry_auth.password),
        policy=LOOPBACK,
    )
    assert data(tmp_path / "out" / "model.gguf") == data(gguf)
    with pytest.raises(DownloadError) as err:
        await list_source(pushed.uri, pull_secret_env(oci_registry_auth, "wrong"), policy=LOOPBACK)
    assert err.value.reason == "AuthError" and "refused" in err.value.message
    assert "wrong" not in err.value.message and oci_registry_auth.password not in err.value.message
    with pytest.raises(DownloadError) as err:
        await list_source(pushed.uri, {}, policy=LOOPBACK)
    assert err.value.reason == "AuthError" and "none were given" in err.value.message


async def test_an_unknown_tag_is_source_not_found(docker_model: Pushed) -> None:
    with pytest.raises(DownloadError) as err:
        await list_source(docker_model.uri.rsplit(":", 1)[0] + ":missing", {}, policy=LOOPBACK)
    assert err.value.reason == "SourceNotFound" and "MANIFEST_UNKNOWN" in err.value.message
    assert err.value.transient is False


async def test_a_container_image_is_not_a_model(oci_registry: Registry, tmp_path: Path) -> None:
    layer = tmp_path / "layer.tar.gz"
    layer.write_bytes(b"\x1f\x8b" + secrets.token_bytes(64))
    pushed = push_files(oci_registry, repo(), "img", [layer], "application/vnd.oci.image.layer.v1.tar+gzip")
    # the same layer without its title is what an image's filesystem layer looks like
    manifest = {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(b"{}"), "size": 2},
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": pushed.blobs["layer.tar.gz"],
                "size": 66,
            }
        ],
    }
    with pytest.raises(DownloadError) as err:
        select_blobs(manifest, "", pushed.uri)
    assert (
        err.value.reason == "UnsupportedMediaType" and "org.opencontainers.image.title" in err.value.message
    )
    index = {"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}
    with pytest.raises(DownloadError) as err:
        select_blobs(index, "", pushed.uri)
    assert err.value.reason == "UnsupportedMediaType" and "index" in err.value.message
    docker_without_gguf = {
        **manifest,
        "config": {**manifest["config"], "mediaType": "application/vnd.docker.ai.model.config.v0.1+json"},
    }
    with pytest.raises(DownloadError) as err:
        select_blobs(docker_without_gguf, "", pushed.uri)
    assert err.value.reason == "UnsupportedMediaType" and "GGUF" in err.value.message


async def test_a_blob_redirect_or_token_realm_at_the_metadata_service_is_refused(tmp_path: Path) -> None:
    async with registry_servers() as servers:
        blob = b"weights"
        servers.manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": sha(b"{}"), "size": 2},
                "layers": [
                    {
                        "mediaType": "application/octet-stream",
                        "digest": sha(blob),
                        "size": len(blob),
                        "annotations": {"org.opencontainers.image.title": "weights.bin"},
                    }
                ],
            }
        ).encode()
        servers.blob_location = METADATA_URL
        with pytest.raises(DownloadError) as err:
            await download(f"oci://{servers.registry}/models/x:v1", tmp_path / "out", env={}, policy=LOOPBACK)
        assert err.value.reason == "AddressNotAllowed"
        servers.realm = "http://169.254.169.254/token"
        with pytest.raises(DownloadError) as err:
            await list_source(f"oci://{servers.registry}/models/x:v1", {}, policy=LOOPBACK)
        assert err.value.reason == "AddressNotAllowed"
        # a realm on another host over plain HTTP never gets the pull secret
        servers.realm = f"{servers.other}/token"
        env = {"OCI_USERNAME": "robot", "OCI_PASSWORD": "pull-secret-DO-NOT-LEAK"}
        with pytest.raises(DownloadError) as err:
            await list_source(
                f"oci://{servers.registry}/models/x:v1", env, policy=OutboundPolicy(allow_private=True)
            )
        assert err.value.reason == "InsecureTokenRealm"
        assert servers.other_log == []
