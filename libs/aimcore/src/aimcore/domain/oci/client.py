"""An async client for the OCI distribution API: manifests, config blobs, catalog and tags.

What discovery and registry-sync need and nothing more:

- :meth:`RegistryClient.config` / :meth:`~RegistryClient.labels` /
  :meth:`~RegistryClient.image_metadata` read an image's manifest and its config blob only (never a
  layer); an image index (multi-arch) resolves to the wanted platform (``linux/amd64`` by default),
  else its first image that is not an attestation.
- :meth:`~RegistryClient.catalog` and :meth:`~RegistryClient.tags` follow ``Link: <...>; rel="next"``
  pagination.
- Authentication: anonymous, basic, and bearer tokens (``WWW-Authenticate: Bearer realm=...,
  service=..., scope=...`` → the token endpoint, with the registry's credentials when there are any).
  Hosts are remembered, so after the first challenge requests carry their credentials at once;
  tokens are cached per scope until they expire.
- Loopback registries (``localhost``, ``127.0.0.0/8``, ``::1``) are spoken to over plain HTTP, as
  are the hosts in ``plain_http``; everything else over HTTPS.
- Outbound address policy (:mod:`aimcore.domain.outbound`): every request, token-realm requests and every
  redirect hop included, goes only where the policy allows. URLs are checked before they are sent
  (metadata host names, address literals) and host names when aiohttp resolves them (a resolver
  that refuses before connecting, so the address judged is the address connected to). A refusal
  is :class:`AddressNotAllowed`; no connection is made.
- Credentials go only where they belong: the pull secret's to the registry host it names, and to
  its token realm only over HTTPS or on the registry's own host (a realm on another host over plain
  HTTP gets nothing: :class:`InsecureTokenRealm`); the ``Authorization`` header never follows a
  redirect to another origin (scheme, host or port).

Every failure is one of :data:`aimcore.domain.oci.errors.OCI_ERRORS`: :class:`ImageNotFound`,
:class:`AuthFailed`, :class:`RegistryUnreachable`, :class:`RegistryError`, :class:`AddressNotAllowed`,
:class:`InsecureTokenRealm` (and :class:`LabelError` from the label parser), or the API layer's
:class:`aimcore.api.imageref.InvalidReference`. Messages never contain credentials.
"""

from __future__ import annotations

import hashlib
import json
import re
import ssl as ssl_module
import time
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import aiohttp

from aimcore.api.crds.aim import ImageMetadata
from aimcore.api.imageref import (
    ImageReference,
    InvalidReference,
    api_host,
    is_loopback,
    normalize_registry,
    parse_reference,
)
from aimcore.domain.oci import labels as aim_labels
from aimcore.domain.oci.auth import Challenge, Credentials, DockerConfig, parse_www_authenticate
from aimcore.domain.oci.errors import (
    AddressNotAllowed,
    AuthFailed,
    ImageNotFound,
    InsecureTokenRealm,
    OCIError,
    RegistryError,
    RegistryUnreachable,
)
from aimcore.domain.outbound import STRICT, OutboundPolicy, OutboundRefused, check_url, normalize_host
from aimcore.domain.outbound.resolver import connector
from aimcore.runtime.keyedlock import KeyedLock

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
MAX_LIST_BYTES = 16 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
MAX_PAGES = 10_000
MAX_REDIRECTS = 5
MAX_INDEX_DEPTH = 4
DEFAULT_TOKEN_TTL = 60.0
USER_AGENT = "aim-engine-py/0.1 (oci-client)"

_NOT_FOUND_CODES = frozenset({"MANIFEST_UNKNOWN", "NAME_UNKNOWN", "BLOB_UNKNOWN", "NOT_FOUND"})
_AUTH_CODES = frozenset({"UNAUTHORIZED", "DENIED"})
_LINK_RE = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")


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


@dataclass
class _Response:
    status: int
    headers: Mapping[str, str]
    challenges: list[str]
    body: bytes
    url: str


class RegistryClient:
    """A client for any number of registries; use as ``async with RegistryClient(...) as c``.

    ``credentials``: usually :func:`aimcore.domain.oci.auth.credentials_from_secrets` of the object's
    ``imagePullSecrets``; without them access is anonymous. ``platform``: what an image index
    resolves to. ``plain_http``: extra registry hosts (``host:port``) spoken to over HTTP.
    ``policy``: the outbound address policy (default: the strict one; a service passes the one it
    read at start-up; a ``session`` given by the caller must bring its own connector: only URLs are
    checked then).
    ``request_log`` keeps ``(method, URL without query)`` of the latest requests (tests and
    debugging)."""

    def __init__(
        self,
        credentials: DockerConfig | None = None,
        *,
        platform: Platform | str = DEFAULT_PLATFORM,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        plain_http: Collection[str] = (),
        ssl: ssl_module.SSLContext | bool = True,
        trust_env: bool = False,
        session: aiohttp.ClientSession | None = None,
        user_agent: str = USER_AGENT,
        request_log_size: int = 1000,
        policy: OutboundPolicy = STRICT,
    ) -> None:
        self.credentials = credentials or DockerConfig()
        self.policy = policy
        self.platform = Platform.parse(platform) if isinstance(platform, str) else platform
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout)
        self.plain_http = frozenset(normalize_registry(h) for h in plain_http)
        self.ssl = ssl
        self.trust_env = trust_env
        self.user_agent = user_agent
        self.request_log: deque[tuple[str, str]] = deque(maxlen=request_log_size)
        self._session = session
        self._own_session = session is None
        self._basic_hosts: set[str] = set()
        self._bearer: dict[str, Challenge] = {}
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}
        self._token_locks: KeyedLock[tuple[str, str]] = KeyedLock()

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> RegistryClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None and self._own_session:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=connector(self.policy),
                timeout=self.timeout,
                headers={"User-Agent": self.user_agent},
                trust_env=False,
            )
            self._own_session = True
        return self._session

    # -- images -----------------------------------------------------------------------------

    async def manifest(self, image: str | ImageReference) -> Manifest:
        """The manifest or index ``image`` names (by tag or digest), as served."""
        ref = _ref(image)
        response = await self._request(
            "GET",
            ref.registry,
            f"/v2/{ref.repository}/manifests/{_quote(ref.reference)}",
            scope=_pull_scope(ref),
            what=f"image {ref}",
            accept=MANIFEST_ACCEPT,
            max_bytes=MAX_MANIFEST_BYTES,
        )
        digest = _digest_of(response.body, ref.digest)
        if ref.digest and digest != ref.digest:
            raise RegistryError(f"image {ref}: the registry served a manifest with digest {digest}")
        content = _json_object(response.body, f"manifest of {ref}")
        media_type = _media_type(response.headers.get("Content-Type", ""), content)
        return Manifest(ref, digest, media_type, content, response.body)

    async def digest(self, image: str | ImageReference) -> str:
        """The digest ``image`` (a tag) currently points at, from a HEAD request when the
        registry sends ``Docker-Content-Digest``."""
        ref = _ref(image)
        if ref.digest:
            return ref.digest
        response = await self._request(
            "HEAD",
            ref.registry,
            f"/v2/{ref.repository}/manifests/{_quote(ref.reference)}",
            scope=_pull_scope(ref),
            what=f"image {ref}",
            accept=MANIFEST_ACCEPT,
            max_bytes=0,
        )
        header = response.headers.get("Docker-Content-Digest", "")
        if re.fullmatch(r"sha256:[0-9a-f]{64}", header):
            return header
        return (await self.manifest(ref)).digest

    async def image_manifest(
        self, image: str | ImageReference, platform: Platform | str | None = None
    ) -> tuple[Manifest, str | None]:
        """The image manifest for ``platform``: ``image`` itself, or the entry of its index (the
        second value is then the index digest)."""
        want = Platform.parse(platform) if isinstance(platform, str) else (platform or self.platform)
        manifest = await self.manifest(image)
        index_digest: str | None = None
        depth = 0
        while manifest.is_index:
            depth += 1
            if depth > MAX_INDEX_DEPTH:
                raise RegistryError(f"image {manifest.reference}: image indexes nested too deeply")
            index_digest = index_digest or manifest.digest
            chosen = select_platform(manifest.content, want, str(manifest.reference))
            manifest = await self.manifest(manifest.reference.with_digest(chosen))
        if manifest.media_type not in IMAGE_TYPES and manifest.media_type not in SCHEMA1_TYPES:
            raise RegistryError(
                f"image {manifest.reference}: unsupported manifest media type {manifest.media_type!r}"
            )
        return manifest, index_digest

    async def config(
        self, image: str | ImageReference, platform: Platform | str | None = None
    ) -> ImageConfig:
        """The image's config blob (manifest and config only; layers are never fetched)."""
        ref = _ref(image)
        manifest, index_digest = await self.image_manifest(ref, platform)
        if manifest.media_type in SCHEMA1_TYPES:
            return ImageConfig(ref, manifest, None, _schema1_config(manifest), index_digest)
        descriptor = manifest.content.get("config")
        digest = descriptor.get("digest") if isinstance(descriptor, Mapping) else None
        if not isinstance(digest, str) or not _valid_digest(digest):
            raise RegistryError(f"image {ref}: the manifest has no valid config descriptor")
        size = descriptor.get("size") if isinstance(descriptor, Mapping) else None
        if isinstance(size, int) and size > MAX_CONFIG_BYTES:
            raise RegistryError(f"image {ref}: config blob of {size} bytes is too large")
        blob = await self.blob(ref, digest, max_bytes=MAX_CONFIG_BYTES)
        content = _json_object(blob, f"config blob of {ref}")
        return ImageConfig(ref, manifest, digest, content, index_digest)

    async def labels(
        self, image: str | ImageReference, platform: Platform | str | None = None
    ) -> dict[str, str]:
        """The image's labels (``config.Labels``)."""
        return (await self.config(image, platform)).labels

    async def image_metadata(
        self, image: str | ImageReference, platform: Platform | str | None = None
    ) -> ImageMetadata:
        """The AIM metadata of the image's labels (raises :class:`LabelError` on a malformed one)."""
        return aim_labels.image_metadata(await self.labels(image, platform))

    async def blob(
        self, image: str | ImageReference, digest: str, *, max_bytes: int = MAX_CONFIG_BYTES
    ) -> bytes:
        """A (small) blob of ``image``'s repository, digest verified."""
        ref = _ref(image)
        if not _valid_digest(digest):
            raise InvalidReference(f"invalid digest {digest!r}")
        response = await self._request(
            "GET",
            ref.registry,
            f"/v2/{ref.repository}/blobs/{digest}",
            scope=_pull_scope(ref),
            what=f"blob {digest} of {ref.name}",
            max_bytes=max_bytes,
        )
        got = _digest_of(response.body, digest)
        if got != digest:
            raise RegistryError(f"blob {digest} of {ref.name}: content has digest {got}")
        return response.body

    # -- listings ---------------------------------------------------------------------------

    async def ping(self, registry: str) -> None:
        """``GET /v2/`` (authenticating if asked to); raises when the registry is not usable."""
        await self._request(
            "GET",
            normalize_registry(registry),
            "/v2/",
            scope="",
            what=f"registry {registry}",
            max_bytes=MAX_ERROR_BYTES,
        )

    async def catalog(
        self, registry: str, *, page_size: int | None = None, limit: int | None = None
    ) -> list[str]:
        """Repository names of ``registry`` (``/v2/_catalog``, every page unless ``limit``)."""
        host = normalize_registry(registry)
        return await self._paginate(
            host,
            "/v2/_catalog",
            "repositories",
            scope="registry:catalog:*",
            what=f"catalog of {host}",
            page_size=page_size,
            limit=limit,
        )

    async def tags(
        self, repository: str | ImageReference, *, page_size: int | None = None, limit: int | None = None
    ) -> list[str]:
        """Tags of a repository (``registry/repo`` as in a reference; a tag/digest is ignored)."""
        ref = _ref(repository)
        return await self._paginate(
            ref.registry,
            f"/v2/{ref.repository}/tags/list",
            "tags",
            scope=_pull_scope(ref),
            what=f"repository {ref.name}",
            page_size=page_size,
            limit=limit,
        )

    async def _paginate(
        self,
        registry: str,
        path: str,
        key: str,
        *,
        scope: str,
        what: str,
        page_size: int | None,
        limit: int | None,
    ) -> list[str]:
        items: list[str] = []
        target: str | None = path + (f"?n={int(page_size)}" if page_size else "")
        seen: set[str] = set()
        pages = 0
        while target is not None:
            if target in seen or pages >= MAX_PAGES:
                raise RegistryError(f"{what}: pagination does not end")
            seen.add(target)
            pages += 1
            response = await self._request(
                "GET", registry, target, scope=scope, what=what, max_bytes=MAX_LIST_BYTES
            )
            doc = _json_object(response.body, what)
            page = doc.get(key) or []
            if not isinstance(page, list) or not all(isinstance(i, str) for i in page):
                raise RegistryError(f"{what}: {key!r} is not a list of strings")
            items.extend(page)
            if limit is not None and len(items) >= limit:
                return items[:limit]
            target = _next_link(response.headers.get("Link", ""), response.url, what)
        return items

    # -- transport and auth -----------------------------------------------------------------

    def base_url(self, registry: str) -> str:
        scheme = "http" if is_loopback(registry) or registry in self.plain_http else "https"
        return f"{scheme}://{api_host(registry)}"

    async def _request(
        self,
        method: str,
        registry: str,
        target: str,
        *,
        scope: str,
        what: str,
        accept: str | None = None,
        max_bytes: int,
    ) -> _Response:
        url = self.base_url(registry) + target
        repository = _scope_repository(scope)
        creds = self.credentials.lookup(registry, repository)
        headers = {"Accept": accept} if accept else {}
        authorization = await self._known_authorization(registry, scope, creds)
        response = await self._send(
            method, url, headers, authorization=authorization, max_bytes=max_bytes, what=what
        )
        if response.status == 401:
            challenge = _pick_challenge(response.challenges)
            if challenge is None:
                raise AuthFailed(
                    f"{what}: registry {registry} refused the request (401) without a usable challenge"
                )
            self._tokens.pop((registry, scope), None)
            authorization = await self._authenticate(registry, challenge, scope, creds, what)
            response = await self._send(
                method, url, headers, authorization=authorization, max_bytes=max_bytes, what=what
            )
            if response.status == 401:
                raise AuthFailed(
                    f"{what}: registry {registry} rejected the {_how(creds)}{_codes_suffix(response.body)}"
                )
        if 200 <= response.status < 300:
            return response
        raise _status_error(response, what, registry, creds)

    async def _send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        *,
        authorization: str | None,
        max_bytes: int,
        what: str,
    ) -> _Response:
        origin = _origin(url)
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            sent = dict(headers)
            if authorization and _origin(current) == origin:
                sent["Authorization"] = authorization
            if _origin(current)[0] not in ("http", "https"):
                raise RegistryError(f"{what}: redirected to a URL that is not http(s)")
            try:
                check_url(current, self.policy)
            except OutboundRefused as e:
                raise AddressNotAllowed(f"{what}: {e.message}") from None
            self.request_log.append((method, current.split("?", 1)[0]))
            try:
                async with self._http().request(
                    method,
                    current,
                    headers=sent,
                    allow_redirects=False,
                    ssl=self.ssl,
                    proxy=self._proxy_for(current),
                ) as resp:
                    if resp.status in (301, 302, 303, 307, 308) and "Location" in resp.headers:
                        current = urllib.parse.urljoin(current, resp.headers["Location"])
                        continue
                    ok = 200 <= resp.status < 300
                    limit = max_bytes if ok else MAX_ERROR_BYTES
                    body = b"" if method == "HEAD" else await _read_limited(resp, limit, ok, what)
                    return _Response(
                        resp.status,
                        {k: v for k, v in resp.headers.items()},
                        resp.headers.getall("WWW-Authenticate", []),
                        body,
                        str(resp.url),
                    )
            except OCIError:
                raise
            except OutboundRefused as e:  # refused by the resolver: nothing was connected
                raise AddressNotAllowed(f"{what}: {e.message}") from None
            except aiohttp.InvalidURL as e:
                raise RegistryError(f"{what}: invalid URL {e}") from None
            except (aiohttp.ClientError, TimeoutError, OSError) as e:
                raise RegistryUnreachable(
                    f"{what}: {urllib.parse.urlsplit(current).netloc}: {_describe(e)}"
                ) from None
        raise RegistryError(f"{what}: more than {MAX_REDIRECTS} redirects")

    def _proxy_for(self, url: str) -> str | None:
        if not self.trust_env:
            return None
        host = urllib.parse.urlsplit(url).hostname or ""
        if is_loopback(host) or urllib.request.proxy_bypass(host):
            return None
        proxies = urllib.request.getproxies()
        proxy = proxies.get(urllib.parse.urlsplit(url).scheme)
        return proxy if isinstance(proxy, str) else None

    async def _known_authorization(self, registry: str, scope: str, creds: Credentials | None) -> str | None:
        """Credentials for a host whose scheme we already learnt (no 401 round trip)."""
        if registry in self._bearer:
            cached = self._tokens.get((registry, scope))
            if cached and cached[1] > time.monotonic():
                return f"Bearer {cached[0]}"
            return await self._authenticate(
                registry, self._bearer[registry], scope, creds, f"registry {registry}"
            )
        if registry in self._basic_hosts and creds:
            return creds.basic_header()
        return None

    async def _authenticate(
        self, registry: str, challenge: Challenge, scope: str, creds: Credentials | None, what: str
    ) -> str:
        if challenge.scheme == "basic":
            if creds is None:
                raise AuthFailed(
                    f"{what}: registry {registry} requires authentication and no credentials were given"
                )
            self._basic_hosts.add(registry)
            return creds.basic_header()
        realm = challenge.params.get("realm", "")
        if not realm.startswith(("https://", "http://")):
            raise AuthFailed(f"{what}: registry {registry} sent a bearer challenge without a valid realm")
        self._bearer[registry] = Challenge(
            "bearer", {k: v for k, v in challenge.params.items() if k != "scope"}
        )
        key = (registry, scope)
        async with self._token_locks.hold(key):
            cached = self._tokens.get(key)
            if cached and cached[1] > time.monotonic():
                return f"Bearer {cached[0]}"
            token, ttl = await self._fetch_token(registry, challenge, scope, creds, what)
            self._tokens[key] = (token, time.monotonic() + max(1.0, ttl - 5.0))
            return f"Bearer {token}"

    async def _fetch_token(
        self, registry: str, challenge: Challenge, scope: str, creds: Credentials | None, what: str
    ) -> tuple[str, float]:
        params: list[tuple[str, str]] = []
        if challenge.params.get("service"):
            params.append(("service", challenge.params["service"]))
        scopes = [s for s in {challenge.params.get("scope", ""), scope} if s]
        params.extend(("scope", s) for s in sorted(scopes))
        realm = challenge.params["realm"]
        sep = "&" if "?" in realm else "?"
        url = realm + (sep + urllib.parse.urlencode(params) if params else "")
        authorization = None
        if creds is not None:
            if not self._may_send_credentials(registry, realm):
                parts = urllib.parse.urlsplit(realm)
                same = _same_host(realm, self.base_url(registry))
                where = "the registry's https host" if same else "another host"
                raise InsecureTokenRealm(
                    f"{what}: registry {registry} asks for its token at {parts.scheme}://{_hostport(parts)}, "
                    f"plain HTTP on {where}; the credentials given for the registry are not sent there "
                    "(the token service must use https)"
                )
            authorization = creds.basic_header()
        response = await self._send(
            "GET",
            url,
            {"Accept": "application/json"},
            authorization=authorization,
            max_bytes=MAX_ERROR_BYTES,
            what=what,
        )
        if response.status in (401, 403):
            raise AuthFailed(
                f"{what}: the token service of {registry} rejected the {_how(creds)} ({response.status})"
            )
        if response.status >= 500 or response.status == 429:
            raise RegistryUnreachable(f"{what}: the token service of {registry} answered {response.status}")
        if response.status != 200:
            raise AuthFailed(f"{what}: the token service of {registry} answered {response.status}")
        doc = _json_object(response.body, f"token response of {registry}")
        token = doc.get("token") or doc.get("access_token")
        if not isinstance(token, str) or not token:
            raise RegistryError(f"{what}: the token service of {registry} returned no token")
        expires = doc.get("expires_in")
        ttl = float(expires) if isinstance(expires, int | float) and expires > 0 else DEFAULT_TOKEN_TTL
        return token, ttl

    def _may_send_credentials(self, registry: str, realm: str) -> bool:
        """A token realm gets the registry's credentials over HTTPS, or over plain HTTP only on the
        registry's own host when the registry itself is spoken to over plain HTTP."""
        parts = urllib.parse.urlsplit(realm)
        if parts.scheme.lower() == "https":
            return True
        own = self.base_url(registry)
        return own.startswith("http://") and _same_host(realm, own)


# ---------------------------------------------------------------------------------------------
# index selection
# ---------------------------------------------------------------------------------------------


def select_platform(index: Mapping[str, Any], want: Platform, what: str = "image index") -> str:
    """The digest of the index entry for ``want`` (os and architecture, variant when both have
    one), else of the first entry that is not an attestation, else of the first entry."""
    entries = [
        m
        for m in index.get("manifests") or []
        if isinstance(m, Mapping) and isinstance(m.get("digest"), str) and _valid_digest(m["digest"])
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


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _same_host(a: str, b: str) -> bool:
    """Whether two URLs name the same host (any scheme or port)."""
    return normalize_host(urllib.parse.urlsplit(a).hostname or "") == normalize_host(
        urllib.parse.urlsplit(b).hostname or ""
    )


def _hostport(parts: urllib.parse.SplitResult) -> str:
    """``host[:port]`` of a URL, without any user information it carries."""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port else host


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _ref(image: str | ImageReference) -> ImageReference:
    return image if isinstance(image, ImageReference) else parse_reference(image)


def _pull_scope(ref: ImageReference) -> str:
    return f"repository:{ref.repository}:pull"


def _scope_repository(scope: str) -> str | None:
    if scope.startswith("repository:"):
        return scope.split(":")[1]
    return None


def _quote(reference: str) -> str:
    return urllib.parse.quote(reference, safe=":")


def _valid_digest(digest: str) -> bool:
    algorithm, _, hexpart = digest.partition(":")
    return algorithm in ("sha256", "sha384", "sha512") and bool(re.fullmatch(r"[0-9a-f]{64,128}", hexpart))


def _digest_of(body: bytes, like: str | None) -> str:
    algorithm = like.partition(":")[0] if like and like.startswith(("sha384:", "sha512:")) else "sha256"
    return f"{algorithm}:{hashlib.new(algorithm, body).hexdigest()}"


def _json_object(body: bytes, what: str) -> Mapping[str, Any]:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise RegistryError(f"{what} is not valid JSON") from None
    if not isinstance(doc, dict):
        raise RegistryError(f"{what} is not a JSON object")
    return doc


def _media_type(content_type: str, content: Mapping[str, Any]) -> str:
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


def _schema1_config(manifest: Manifest) -> Mapping[str, Any]:
    history = manifest.content.get("history")
    if isinstance(history, list) and history and isinstance(history[0], Mapping):
        v1 = history[0].get("v1Compatibility")
        if isinstance(v1, str):
            return _json_object(v1.encode(), f"schema-1 manifest of {manifest.reference}")
    return {}


def _pick_challenge(headers: list[str]) -> Challenge | None:
    challenges = [c for h in headers for c in parse_www_authenticate(h)]
    for scheme in ("bearer", "basic"):
        for c in challenges:
            if c.scheme == scheme:
                return c
    return None


def _error_codes(body: bytes) -> list[str]:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return []
    errors = doc.get("errors") if isinstance(doc, dict) else None
    if not isinstance(errors, list):
        return []
    return [str(e.get("code")) for e in errors if isinstance(e, dict) and e.get("code")]


def _codes_suffix(body: bytes) -> str:
    codes = _error_codes(body)
    return f" ({', '.join(codes)})" if codes else ""


def _how(creds: Credentials | None) -> str:
    return "credentials given for it" if creds else "anonymous request"


def _status_error(response: _Response, what: str, registry: str, creds: Credentials | None) -> OCIError:
    listed = _error_codes(response.body)
    codes = set(listed)
    detail = " ".join([str(response.status), ", ".join(dict.fromkeys(listed))]).strip()
    if response.status == 404 or codes & _NOT_FOUND_CODES:
        return ImageNotFound(f"{what} not found on {registry} ({detail})")
    if response.status in (401, 403) or codes & _AUTH_CODES:
        return AuthFailed(f"{what}: access denied by registry {registry} for the {_how(creds)} ({detail})")
    if response.status == 429:
        return RegistryUnreachable(f"{what}: registry {registry} is rate limiting ({detail})")
    if response.status >= 500:
        return RegistryUnreachable(f"{what}: registry {registry} answered {detail}")
    return RegistryError(f"{what}: registry {registry} answered {detail}")


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


async def _read_limited(resp: aiohttp.ClientResponse, limit: int, strict: bool, what: str) -> bytes:
    length = resp.content_length
    if strict and length is not None and length > limit:
        raise RegistryError(f"{what}: response of {length} bytes exceeds {limit}")
    chunks: list[bytes] = []
    total = 0
    async for chunk in resp.content.iter_chunked(65536):
        total += len(chunk)
        if total > limit:
            if strict:
                raise RegistryError(f"{what}: response exceeds {limit} bytes")
            chunks.append(chunk[: limit - (total - len(chunk))])
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"cannot connect ({error.os_error.strerror or type(error.os_error).__name__})"
    return str(error) or type(error).__name__


__all__ = [
    "DEFAULT_PLATFORM",
    "ImageConfig",
    "Manifest",
    "Platform",
    "RegistryClient",
    "select_platform",
]
