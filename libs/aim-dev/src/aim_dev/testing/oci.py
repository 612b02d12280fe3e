"""Push tiny images to a real registry through the distribution API (no Docker engine needed).

Independent of :mod:`aimcore.domain.oci` on purpose (stdlib ``urllib`` only), so tests of the client do not
test it against itself. Each image is a config blob (with ``config.Labels``), one small gzipped
layer and a manifest (OCI or Docker v2 schema 2); with ``platforms`` one image per platform plus an
image index (OCI index or Docker manifest list) under the tag. Blobs are uploaded monolithically:
``POST /v2/<repo>/blobs/uploads/`` then ``PUT <location>?digest=...``. Auth: basic only (what the
local :class:`aim_dev.local.registry.Registry` speaks).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"

Format = Literal["oci", "docker"]


class PushError(RuntimeError):
    pass


@dataclass(frozen=True)
class PushedManifest:
    platform: str | None
    digest: str
    media_type: str
    config_digest: str
    layer_digests: tuple[str, ...]


@dataclass(frozen=True)
class PushedImage:
    host: str
    repository: str
    tag: str
    digest: str  # of what the tag points at (the index when there are platforms)
    media_type: str
    manifests: tuple[PushedManifest, ...]

    @property
    def reference(self) -> str:
        return f"{self.host}/{self.repository}:{self.tag}"

    @property
    def layer_digests(self) -> set[str]:
        return {d for m in self.manifests for d in m.layer_digests}

    def for_platform(self, platform: str) -> PushedManifest:
        for m in self.manifests:
            if m.platform == platform:
                return m
        raise KeyError(platform)


def push_image(
    registry_url: str,
    repo: str,
    tag: str,
    labels: Mapping[str, str] | None = None,
    *,
    platforms: Sequence[str] | None = None,
    auth: tuple[str, str] | None = None,
    manifest_format: Format = "oci",
    platform_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> PushedImage:
    """Push a tiny image ``repo:tag`` with ``labels`` to the registry at ``registry_url``
    (``http://127.0.0.1:5000`` or ``127.0.0.1:5000``).

    ``platforms`` (``["linux/arm64", "linux/amd64"]``): one image each and an index under ``tag``;
    ``platform_labels`` adds labels to one platform's image."""
    pusher = _Pusher(registry_url, auth)
    if not platforms:
        single = pusher.push_single(
            repo, tag, dict(labels or {}), "linux/amd64", manifest_format, reference=tag
        )
        return PushedImage(pusher.host, repo, tag, single.digest, single.media_type, (single,))
    pushed: list[PushedManifest] = []
    for platform in platforms:
        extra = dict((platform_labels or {}).get(platform, {}))
        image_labels = {**(labels or {}), **extra}
        pushed.append(pusher.push_single(repo, tag, image_labels, platform, manifest_format, reference=None))
    index_type = OCI_INDEX if manifest_format == "oci" else DOCKER_LIST
    index = {
        "schemaVersion": 2,
        "mediaType": index_type,
        "manifests": [
            {
                "mediaType": m.media_type,
                "digest": m.digest,
                "size": pusher.sizes[m.digest],
                "platform": _platform_dict(m.platform or "linux/amd64"),
            }
            for m in pushed
        ],
    }
    digest = pusher.put_manifest(repo, tag, index_type, _canonical(index))
    return PushedImage(pusher.host, repo, tag, digest, index_type, tuple(pushed))


def delete_tag_manifest(
    registry_url: str, repo: str, digest: str, *, auth: tuple[str, str] | None = None
) -> None:
    """``DELETE /v2/<repo>/manifests/<digest>`` (the registry runs with deletes enabled)."""
    pusher = _Pusher(registry_url, auth)
    pusher.call("DELETE", f"/v2/{repo}/manifests/{digest}", expect=(202,))


class _Pusher:
    def __init__(self, registry_url: str, auth: tuple[str, str] | None) -> None:
        url = registry_url if "://" in registry_url else f"http://{registry_url}"
        self.base = url.rstrip("/")
        self.host = urllib.parse.urlsplit(self.base).netloc
        self.headers: dict[str, str] = {}
        if auth:
            raw = f"{auth[0]}:{auth[1]}".encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(raw).decode("ascii")
        self.sizes: dict[str, int] = {}

    def push_single(
        self,
        repo: str,
        tag: str,
        labels: dict[str, str],
        platform: str,
        manifest_format: Format,
        *,
        reference: str | None,
    ) -> PushedManifest:
        plat = _platform_dict(platform)
        layer_tar = _layer_tar(f"{repo}:{tag} {platform}\n")
        layer = gzip.compress(layer_tar, mtime=0)
        config = {
            "architecture": plat["architecture"],
            "os": plat["os"],
            **({"variant": plat["variant"]} if "variant" in plat else {}),
            "created": "2026-01-01T00:00:00Z",
            "config": {"Labels": labels, "Cmd": ["/hello.txt"]},
            "rootfs": {"type": "layers", "diff_ids": [_sha256(layer_tar)]},
            "history": [{"created": "2026-01-01T00:00:00Z", "created_by": "aim_dev.testing.oci"}],
        }
        config_bytes = _canonical(config)
        config_digest = self.upload_blob(repo, config_bytes)
        layer_digest = self.upload_blob(repo, layer)
        oci = manifest_format == "oci"
        manifest_type = OCI_MANIFEST if oci else DOCKER_MANIFEST
        manifest = {
            "schemaVersion": 2,
            "mediaType": manifest_type,
            "config": {
                "mediaType": OCI_CONFIG if oci else DOCKER_CONFIG,
                "digest": config_digest,
                "size": len(config_bytes),
            },
            "layers": [
                {"mediaType": OCI_LAYER if oci else DOCKER_LAYER, "digest": layer_digest, "size": len(layer)}
            ],
        }
        body = _canonical(manifest)
        digest = self.put_manifest(repo, reference or _sha256(body), manifest_type, body)
        return PushedManifest(platform, digest, manifest_type, config_digest, (layer_digest,))

    def upload_blob(self, repo: str, data: bytes) -> str:
        digest = _sha256(data)
        status, _, _ = self.call("HEAD", f"/v2/{repo}/blobs/{digest}", expect=(200, 404))
        if status == 200:
            return digest
        _, headers, _ = self.call("POST", f"/v2/{repo}/blobs/uploads/", expect=(202,))
        location = headers.get("Location")
        if not location:
            raise PushError(f"blob upload for {repo}: no Location")
        target = urllib.parse.urljoin(self.base + "/", location)
        target += ("&" if "?" in target else "?") + urllib.parse.urlencode({"digest": digest})
        self.call(
            "PUT", target, data, {"Content-Type": "application/octet-stream"}, expect=(201,), absolute=True
        )
        return digest

    def put_manifest(self, repo: str, reference: str, media_type: str, body: bytes) -> str:
        digest = _sha256(body)
        self.sizes[digest] = len(body)
        _, headers, _ = self.call(
            "PUT", f"/v2/{repo}/manifests/{reference}", body, {"Content-Type": media_type}, expect=(201,)
        )
        served = headers.get("Docker-Content-Digest")
        if served and served != digest:
            raise PushError(f"manifest {repo}:{reference}: registry computed {served}, expected {digest}")
        return digest

    def call(
        self,
        method: str,
        target: str,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        expect: tuple[int, ...],
        absolute: bool = False,
    ) -> tuple[int, Mapping[str, str], bytes]:
        url = target if absolute else self.base + target
        request = urllib.request.Request(
            url, data=data, method=method, headers={**self.headers, **(headers or {})}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                status, resp_headers, body = resp.status, dict(resp.headers.items()), resp.read()
        except urllib.error.HTTPError as e:
            status, resp_headers, body = e.code, dict(e.headers.items()), e.read()
        if status not in expect:
            text = body[:500].decode(errors="replace")
            raise PushError(f"{method} {url.split('?', 1)[0]}: {status} {text}")
        return status, resp_headers, body


def _platform_dict(platform: str) -> dict[str, str]:
    parts = platform.split("/")
    if len(parts) not in (2, 3):
        raise ValueError(f"platform {platform!r} is not os/arch[/variant]")
    out = {"os": parts[0], "architecture": parts[1]}
    if len(parts) == 3:
        out["variant"] = parts[2]
    return out


def _layer_tar(content: str) -> bytes:
    buf = io.BytesIO()
    data = content.encode()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("hello.txt")
        info.size, info.mtime, info.mode = len(data), 0, 0o644
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _canonical(doc: object) -> bytes:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
