"""What a registry serves, read: manifests and image indexes (their media types, digests verified
over the bytes served), config blobs, and the choice of one platform's manifest from an index.
Pure: the requests are :mod:`aimcore.domain.oci.protocol`'s."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aimcore.api.imageref import ImageReference
from aimcore.domain.oci.errors import DigestMismatch, InvalidDocument, RegistryError

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_V1 = "application/vnd.docker.distribution.manifest.v1+json"
DOCKER_MANIFEST_V1_SIGNED = "application/vnd.docker.distribution.manifest.v1+prettyjws"
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_MANIFEST_LIST})
IMAGE_TYPES = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
SCHEMA1_TYPES = frozenset({DOCKER_MANIFEST_V1, DOCKER_MANIFEST_V1_SIGNED})
MANIFEST_ACCEPT = ", ".join(
    [OCI_INDEX, DOCKER_MANIFEST_LIST, OCI_MANIFEST, DOCKER_MANIFEST, DOCKER_MANIFEST_V1_SIGNED]
)

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_INDEX_DEPTH = 4


@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str | None = None

    @classmethod
    def parse(cls, text: str) -> Platform:
        """``os/arch[/variant]``, e.g. ``linux/amd64`` or ``linux/arm/v7``."""
        parts = text.strip().split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise ValueError(f"platform {text!r} is not os/arch[/variant]")
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else None)

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


DEFAULT_PLATFORM = Platform("linux", "amd64")


@dataclass(frozen=True)
class Manifest:
    """One manifest or index as the registry served it (``digest`` verified over ``raw``)."""

    reference: ImageReference
    digest: str
    media_type: str
    content: Mapping[str, Any] = field(repr=False)
    raw: bytes = field(repr=False)

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES

    @property
    def pinned(self) -> ImageReference:
        """The reference pinned to this manifest's digest."""
        return self.reference.with_digest(self.digest)


@dataclass(frozen=True)
class ImageConfig:
    """An image's config blob, with the manifest it was resolved through."""

    reference: ImageReference
    manifest: Manifest
    digest: str | None  # the config blob's digest (None for a schema-1 manifest)
    content: Mapping[str, Any] = field(repr=False)
    index_digest: str | None = None  # the index the manifest was picked from, if any

    @property
    def labels(self) -> dict[str, str]:
        inner = self.content.get("config")
        found = inner.get("Labels") if isinstance(inner, Mapping) else None
        if not isinstance(found, Mapping):
            return {}
        return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in found.items() if v is not None}

    @property
    def platform(self) -> Platform | None:
        os_, arch = self.content.get("os"), self.content.get("architecture")
        if isinstance(os_, str) and isinstance(arch, str):
            variant = self.content.get("variant")
            return Platform(os_, arch, variant if isinstance(variant, str) else None)
        return None


def served_manifest(ref: ImageReference, body: bytes, content_type: str) -> Manifest:
    """The manifest ``body`` is, its digest checked against the one ``ref`` pins."""
    digest = digest_of(body, ref.digest)
    if ref.digest and digest != ref.digest:
        raise DigestMismatch(f"image {ref}: the registry served a manifest with digest {digest}")
    content = json_object(body, f"manifest of {ref}")
    return Manifest(ref, digest, media_type_of(content_type, content), content, body)


def verified_blob(body: bytes, digest: str, what: str) -> bytes:
    """``body`` if its digest is ``digest``."""
    got = digest_of(body, digest)
    if got != digest:
        raise DigestMismatch(f"{what}: content has digest {got}")
    return body


def config_descriptor(manifest: Manifest, ref: ImageReference) -> str:
    """The digest of an image manifest's config blob (checked to be small enough to read)."""
    descriptor = manifest.content.get("config")
    digest = descriptor.get("digest") if isinstance(descriptor, Mapping) else None
    if not isinstance(digest, str) or not valid_digest(digest):
        raise RegistryError(f"image {ref}: the manifest has no valid config descriptor")
    size = descriptor.get("size") if isinstance(descriptor, Mapping) else None
    if isinstance(size, int) and size > MAX_CONFIG_BYTES:
        raise RegistryError(f"image {ref}: config blob of {size} bytes is too large")
    return digest


def select_platform(index: Mapping[str, Any], want: Platform, what: str = "image index") -> str:
    """The digest of the index entry for ``want`` (os and architecture, variant when both have
    one), else of the first entry that is not an attestation, else of the first entry."""
    entries = [
        m
        for m in index.get("manifests") or []
        if isinstance(m, Mapping) and isinstance(m.get("digest"), str) and valid_digest(m["digest"])
    ]
    if not entries:
        raise RegistryError(f"{what}: the image index lists no manifests")

    def platform_of(entry: Mapping[str, Any]) -> Mapping[str, Any]:
        p = entry.get("platform")
        return p if isinstance(p, Mapping) else {}

    def attestation(entry: Mapping[str, Any]) -> bool:
        annotations = entry.get("annotations")
        if (
            isinstance(annotations, Mapping)
            and annotations.get("vnd.docker.reference.type") == "attestation-manifest"
        ):
            return True
        return platform_of(entry).get("os") == "unknown"

    matching = [
        e
        for e in entries
        if platform_of(e).get("os") == want.os and platform_of(e).get("architecture") == want.architecture
    ]
    if want.variant:
        exact = [e for e in matching if platform_of(e).get("variant") == want.variant]
        matching = exact or [e for e in matching if not platform_of(e).get("variant")] or matching
    chosen = matching[0] if matching else next((e for e in entries if not attestation(e)), entries[0])
    digest: str = chosen["digest"]
    return digest


def valid_digest(digest: str) -> bool:
    algorithm, _, hexpart = digest.partition(":")
    return algorithm in ("sha256", "sha384", "sha512") and bool(re.fullmatch(r"[0-9a-f]{64,128}", hexpart))


def digest_of(body: bytes, like: str | None) -> str:
    algorithm = like.partition(":")[0] if like and like.startswith(("sha384:", "sha512:")) else "sha256"
    return f"{algorithm}:{hashlib.new(algorithm, body).hexdigest()}"


def json_object(body: bytes, what: str) -> Mapping[str, Any]:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise InvalidDocument(f"{what} is not valid JSON") from None
    if not isinstance(doc, dict):
        raise InvalidDocument(f"{what} is not a JSON object")
    return doc


def media_type_of(content_type: str, content: Mapping[str, Any]) -> str:
    declared = content.get("mediaType")
    if isinstance(declared, str) and declared:
        return declared
    header = content_type.split(";", 1)[0].strip().lower()
    if header in INDEX_TYPES | IMAGE_TYPES | SCHEMA1_TYPES:
        return header
    if content.get("schemaVersion") == 1:
        return DOCKER_MANIFEST_V1
    if isinstance(content.get("manifests"), list):
        return OCI_INDEX
    if isinstance(content.get("config"), Mapping):
        return OCI_MANIFEST
    return header or "application/octet-stream"


def schema1_config(manifest: Manifest) -> Mapping[str, Any]:
    history = manifest.content.get("history")
    if isinstance(history, list) and history and isinstance(history[0], Mapping):
        v1 = history[0].get("v1Compatibility")
        if isinstance(v1, str):
            return json_object(v1.encode(), f"schema-1 manifest of {manifest.reference}")
    return {}


def too_large(what: str, limit: int, length: int | None = None) -> InvalidDocument:
    """An answer larger than the client reads (``length``: what the answer announced)."""
    if length is not None:
        return InvalidDocument(f"{what}: response of {length} bytes exceeds {limit}")
    return InvalidDocument(f"{what}: response exceeds {limit} bytes")
