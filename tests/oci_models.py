"""Models pushed to a real registry as OCI artifacts with oras-py, as their publishers do: a Docker
model (``docker model package``: a GGUF layer, a license layer and Docker's model config, no file
names) and a plain ORAS artifact (``oras push``: every file a layer named by its title). Also the
registry's stored copy of a blob, so a test can corrupt it."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import oras.oci
import oras.provider

from aim_cache_jobs.downloader.ocisource import GGUF, LICENSE, MODEL_CONFIG, OCI_MANIFEST
from aim_dev.local.registry import Registry
from tests.unit.llmkube.test_gguf_reader import write_gguf


@dataclass(frozen=True)
class Pushed:
    uri: str  # oci://host/repo:tag
    digest: str  # the manifest's
    blobs: dict[str, str]  # the downloaded file's name -> its blob digest

    @property
    def pinned(self) -> str:
        return self.uri.rsplit(":", 1)[0] + "@" + self.digest


def repo() -> str:
    """A fresh repository name, so tests sharing the session's registry never meet."""
    return f"models/m-{secrets.token_hex(3)}"


def tiny_gguf(directory: Path, **kwargs: int) -> Path:
    """A small real GGUF (:func:`tests.unit.llmkube.test_gguf_reader.write_gguf`) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return write_gguf(directory / "tiny.gguf", **kwargs)


def dockerconfigjson(registry: Registry, password: str | None = None) -> str:
    """A ``.dockerconfigjson`` logging in to ``registry`` (with ``password``, else its own)."""
    login = f"{registry.username}:{password or registry.password}"
    return json.dumps({"auths": {registry.host: {"auth": base64.b64encode(login.encode()).decode()}}})


def pull_secret(registry: Registry, name: str) -> dict[str, object]:
    """A ``kubernetes.io/dockerconfigjson`` Secret for ``registry``, as ``imagePullSecrets`` name."""
    config = base64.b64encode(dockerconfigjson(registry).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": name},
        "data": {".dockerconfigjson": config},
    }


def _client(registry: Registry) -> oras.provider.Registry:
    client = oras.provider.Registry(hostname=registry.host, insecure=True, auth_backend="basic")
    if registry.auth is not None:
        client.auth.set_basic_auth(*registry.auth)
    return client


def _layer(client: oras.provider.Registry, container: str, path: Path, media_type: str, title: bool) -> dict:  # type: ignore[type-arg]
    layer = oras.oci.NewLayer(str(path), media_type=media_type)
    layer["annotations"] = {oras.defaults.annotation_title: path.name} if title else {}
    client.upload_blob(str(path), container, layer).raise_for_status()
    return dict(layer)


def _manifest(client: oras.provider.Registry, container: str, config: dict, layers: list[dict]) -> str:  # type: ignore[type-arg]
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": layers}
    client.upload_manifest(manifest, client.get_container(container)).raise_for_status()
    body = client.do_request(
        f"http://{client.get_container(container).manifest_url()}", "GET", headers={"Accept": OCI_MANIFEST}
    )
    return "sha256:" + hashlib.sha256(body.content).hexdigest()


def push_docker_model(registry: Registry, repo: str, tag: str, gguf: Path, license_text: str) -> Pushed:
    """``gguf`` and a license as Docker's model-spec packages them (no title annotations)."""
    client = _client(registry)
    container = f"{registry.host}/{repo}:{tag}"
    license_path = gguf.with_name("LICENSE.txt")
    license_path.write_text(license_text)
    layers = [
        _layer(client, container, gguf, GGUF, False),
        _layer(client, container, license_path, LICENSE, False),
    ]
    config_path = gguf.with_name("config.json")
    config_path.write_text(
        json.dumps(
            {
                "config": {"format": "gguf", "format_version": "3", "size": str(gguf.stat().st_size)},
                "files": [{"diffID": layer["digest"], "type": layer["mediaType"]} for layer in layers],
            }
        )
    )
    config = _layer(client, container, config_path, MODEL_CONFIG, False)
    config.pop("annotations")
    digest = _manifest(client, container, config, layers)
    names = {"model.gguf": layers[0]["digest"], "LICENSE": layers[1]["digest"]}
    return Pushed(f"oci://{container}", digest, {**names, "docker-model-config.json": config["digest"]})


def push_files(registry: Registry, repo: str, tag: str, files: list[Path], media_type: str) -> Pushed:
    """``files`` as ``oras push`` pushes them: each a layer named by its title annotation."""
    client = _client(registry)
    container = f"{registry.host}/{repo}:{tag}"
    layers = [_layer(client, container, path, media_type, True) for path in files]
    conf, _ = oras.oci.ManifestConfig()
    empty = Path(files[0]).with_name("empty-config")
    empty.write_text("{}")
    conf["digest"] = "sha256:" + hashlib.sha256(b"{}").hexdigest()
    conf["size"] = 2
    client.upload_blob(str(empty), container, conf).raise_for_status()
    digest = _manifest(client, container, dict(conf), layers)
    return Pushed(
        f"oci://{container}",
        digest,
        {p.name: layer["digest"] for p, layer in zip(files, layers, strict=True)},
    )


def stored_blob(registry: Registry, digest: str) -> Path:
    """Where the registry keeps ``digest``'s bytes (its filesystem storage driver's layout)."""
    hexpart = digest.removeprefix("sha256:")
    return registry.workdir / "data" / "docker/registry/v2/blobs/sha256" / hexpart[:2] / hexpart / "data"
