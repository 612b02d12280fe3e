"""The distribution API, as flows over :class:`~aimcore.domain.oci.exchange.Exchange` (free of I/O; a
client runs them over its transport): a manifest or index by tag or digest, the digest a tag points
at, the image manifest of a platform (an index resolved to it, else its first image that is not an
attestation), an image's config blob (manifest and config only, never a layer), small blobs,
``/v2/`` itself, and the catalog and tags, following ``Link: <...>; rel="next"`` pagination."""

from __future__ import annotations

import re
import urllib.parse

from aimcore.api.imageref import ImageReference, InvalidReference, normalize_registry
from aimcore.domain.oci.documents import (
    IMAGE_TYPES,
    MANIFEST_ACCEPT,
    MAX_CONFIG_BYTES,
    MAX_INDEX_DEPTH,
    MAX_MANIFEST_BYTES,
    SCHEMA1_TYPES,
    ImageConfig,
    Manifest,
    Platform,
    config_descriptor,
    json_object,
    schema1_config,
    select_platform,
    served_manifest,
    valid_digest,
    verified_blob,
)
from aimcore.domain.oci.errors import RegistryError
from aimcore.domain.oci.exchange import MAX_ERROR_BYTES, Answer, Exchange, Flow

MAX_LIST_BYTES = 16 * 1024 * 1024
MAX_PAGES = 10_000

_LINK_RE = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")


class RegistryProtocol:
    """The API calls, each a flow over ``exchange`` (whose credentials and learnt authentication
    they share)."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange

    def manifest(self, ref: ImageReference) -> Flow[Manifest]:
        """The manifest or index ``ref`` names (by tag or digest), as served."""
        response = yield from self._manifest_request("GET", ref, MAX_MANIFEST_BYTES)
        return served_manifest(ref, response.body, response.headers.get("Content-Type", ""))

    def digest(self, ref: ImageReference) -> Flow[str]:
        """The digest ``ref`` (a tag) currently points at, from a HEAD request when the registry
        sends ``Docker-Content-Digest``."""
        if ref.digest:
            return ref.digest
        response = yield from self._manifest_request("HEAD", ref, 0)
        header = response.headers.get("Docker-Content-Digest", "")
        if re.fullmatch(r"sha256:[0-9a-f]{64}", header):
            return header
        return (yield from self.manifest(ref)).digest

    def image_manifest(self, ref: ImageReference, want: Platform) -> Flow[tuple[Manifest, str | None]]:
        """The image manifest for ``want``: ``ref`` itself, or the entry of its index (the second
        value is then the index digest)."""
        manifest = yield from self.manifest(ref)
        index_digest: str | None = None
        depth = 0
        while manifest.is_index:
            depth += 1
            if depth > MAX_INDEX_DEPTH:
                raise RegistryError(f"image {manifest.reference}: image indexes nested too deeply")
            index_digest = index_digest or manifest.digest
            chosen = select_platform(manifest.content, want, str(manifest.reference))
            manifest = yield from self.manifest(manifest.reference.with_digest(chosen))
        if manifest.media_type not in IMAGE_TYPES and manifest.media_type not in SCHEMA1_TYPES:
            raise RegistryError(
                f"image {manifest.reference}: unsupported manifest media type {manifest.media_type!r}"
            )
        return manifest, index_digest

    def config(self, ref: ImageReference, want: Platform) -> Flow[ImageConfig]:
        """The image's config blob (manifest and config only; layers are never fetched)."""
        manifest, index_digest = yield from self.image_manifest(ref, want)
        if manifest.media_type in SCHEMA1_TYPES:
            return ImageConfig(ref, manifest, None, schema1_config(manifest), index_digest)
        digest = config_descriptor(manifest, ref)
        blob = yield from self.blob(ref, digest, max_bytes=MAX_CONFIG_BYTES)
        content = json_object(blob, f"config blob of {ref}")
        return ImageConfig(ref, manifest, digest, content, index_digest)

    def blob(self, ref: ImageReference, digest: str, *, max_bytes: int) -> Flow[bytes]:
        """A (small) blob of ``ref``'s repository, digest verified."""
        if not valid_digest(digest):
            raise InvalidReference(f"invalid digest {digest!r}")
        what = f"blob {digest} of {ref.name}"
        response = yield from self.exchange.request(
            "GET", ref.registry, blob_path(ref, digest), scope=pull_scope(ref), what=what, max_bytes=max_bytes
        )
        return verified_blob(response.body, digest, what)

    def ping(self, registry: str) -> Flow[None]:
        """``GET /v2/`` (authenticating if asked to); raises when the registry is not usable."""
        yield from self.exchange.request(
            "GET",
            normalize_registry(registry),
            "/v2/",
            scope="",
            what=f"registry {registry}",
            max_bytes=MAX_ERROR_BYTES,
        )

    def catalog(self, registry: str, page_size: int | None, limit: int | None) -> Flow[list[str]]:
        """Repository names of ``registry`` (``/v2/_catalog``, every page unless ``limit``)."""
        host = normalize_registry(registry)
        return (
            yield from self._paginate(
                host,
                "/v2/_catalog",
                "repositories",
                scope="registry:catalog:*",
                what=f"catalog of {host}",
                page_size=page_size,
                limit=limit,
            )
        )

    def tags(self, ref: ImageReference, page_size: int | None, limit: int | None) -> Flow[list[str]]:
        """Tags of ``ref``'s repository (its tag or digest is ignored)."""
        return (
            yield from self._paginate(
                ref.registry,
                f"/v2/{ref.repository}/tags/list",
                "tags",
                scope=pull_scope(ref),
                what=f"repository {ref.name}",
                page_size=page_size,
                limit=limit,
            )
        )

    def _manifest_request(self, method: str, ref: ImageReference, max_bytes: int) -> Flow[Answer]:
        return self.exchange.request(
            method,
            ref.registry,
            manifest_path(ref),
            scope=pull_scope(ref),
            what=f"image {ref}",
            accept=MANIFEST_ACCEPT,
            max_bytes=max_bytes,
        )

    def _paginate(
        self,
        registry: str,
        path: str,
        key: str,
        *,
        scope: str,
        what: str,
        page_size: int | None,
        limit: int | None,
    ) -> Flow[list[str]]:
        items: list[str] = []
        target: str | None = path + (f"?n={int(page_size)}" if page_size else "")
        seen: set[str] = set()
        pages = 0
        while target is not None:
            if target in seen or pages >= MAX_PAGES:
                raise RegistryError(f"{what}: pagination does not end")
            seen.add(target)
            pages += 1
            response = yield from self.exchange.request(
                "GET", registry, target, scope=scope, what=what, max_bytes=MAX_LIST_BYTES
            )
            doc = json_object(response.body, what)
            page = doc.get(key) or []
            if not isinstance(page, list) or not all(isinstance(i, str) for i in page):
                raise RegistryError(f"{what}: {key!r} is not a list of strings")
            items.extend(page)
            if limit is not None and len(items) >= limit:
                return items[:limit]
            target = _next_link(response.headers.get("Link", ""), response.url, what)
        return items


def pull_scope(ref: ImageReference) -> str:
    return f"repository:{ref.repository}:pull"


def manifest_path(ref: ImageReference) -> str:
    return f"/v2/{ref.repository}/manifests/{urllib.parse.quote(ref.reference, safe=':')}"


def blob_path(ref: ImageReference, digest: str) -> str:
    return f"/v2/{ref.repository}/blobs/{digest}"


def _next_link(header: str, current_url: str, what: str) -> str | None:
    """The path+query of the ``rel="next"`` link, which must stay on the same origin."""
    for match in _LINK_RE.finditer(header):
        params = match.group(2)
        if re.search(r';\s*rel\s*=\s*"?next"?', params):
            url = urllib.parse.urljoin(current_url, match.group(1))
            here, there = urllib.parse.urlsplit(current_url), urllib.parse.urlsplit(url)
            if (here.scheme, here.netloc) != (there.scheme, there.netloc):
                raise RegistryError(f"{what}: pagination link leaves the registry")
            target: str = there.path + (f"?{there.query}" if there.query else "")
            return target
    return None
