"""An async client for the OCI distribution API: manifests, config blobs, catalog and tags.

What discovery and registry-sync need and nothing more: :meth:`RegistryClient.config` /
:meth:`~RegistryClient.labels` / :meth:`~RegistryClient.image_metadata` read an image's manifest
and its config blob only (never a layer), :meth:`~RegistryClient.catalog` and
:meth:`~RegistryClient.tags` list. The requests and their authentication are the protocol's
(:mod:`aimcore.domain.oci.protocol` over :mod:`aimcore.domain.oci.exchange`, which the blocking
client of :mod:`aimcore.domain.oci.blocking` runs too); this client sends them with aiohttp.

Outbound address policy (:mod:`aimcore.domain.outbound`): every request, token-realm requests and
every redirect hop included, goes only where the policy allows. URLs are checked before they are
sent (metadata host names, address literals) and host names when aiohttp resolves them (a resolver
that refuses before connecting, so the address judged is the address connected to). A refusal is
:class:`AddressNotAllowed`; no connection is made.

Every failure is one of :data:`aimcore.domain.oci.errors.OCI_ERRORS`: :class:`ImageNotFound`,
:class:`AuthFailed`, :class:`RegistryUnreachable`, :class:`RegistryError`, :class:`AddressNotAllowed`,
:class:`InsecureTokenRealm` (and :class:`LabelError` from the label parser), or the API layer's
:class:`aimcore.api.imageref.InvalidReference`. Messages never contain credentials.
"""

from __future__ import annotations

import ssl as ssl_module
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Collection
from types import TracebackType
from typing import TypeVar

import aiohttp

from aimcore.api.crds.aim import ImageMetadata
from aimcore.api.imageref import ImageReference, is_loopback, parse_reference
from aimcore.domain.oci import exchange
from aimcore.domain.oci import labels as aim_labels
from aimcore.domain.oci.auth import DockerConfig
from aimcore.domain.oci.documents import (
    DEFAULT_PLATFORM,
    MAX_CONFIG_BYTES,
    ImageConfig,
    Manifest,
    Platform,
    select_platform,
    too_large,
)
from aimcore.domain.oci.errors import AddressNotAllowed, OCIError, RegistryError, RegistryUnreachable
from aimcore.domain.oci.exchange import Answer, Done, Exchange, Flow, Send, Serialised, advance
from aimcore.domain.oci.protocol import RegistryProtocol
from aimcore.domain.outbound import STRICT, OutboundPolicy, OutboundRefused, check_url
from aimcore.domain.outbound.resolver import connector
from aimcore.runtime.keyedlock import KeyedLock

T = TypeVar("T")


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
        user_agent: str = exchange.USER_AGENT,
        request_log_size: int = 1000,
        policy: OutboundPolicy = STRICT,
    ) -> None:
        self.exchange = Exchange(credentials, plain_http)
        self.api = RegistryProtocol(self.exchange)
        self.credentials = self.exchange.credentials
        self.plain_http = self.exchange.plain_http
        self.policy = policy
        self.platform = Platform.parse(platform) if isinstance(platform, str) else platform
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout)
        self.ssl = ssl
        self.trust_env = trust_env
        self.user_agent = user_agent
        self.request_log: deque[tuple[str, str]] = deque(maxlen=request_log_size)
        self._session = session
        self._own_session = session is None
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
        return await self._run(self.api.manifest(_ref(image)))

    async def digest(self, image: str | ImageReference) -> str:
        """The digest ``image`` (a tag) currently points at, from a HEAD request when the
        registry sends ``Docker-Content-Digest``."""
        return await self._run(self.api.digest(_ref(image)))

    async def image_manifest(
        self, image: str | ImageReference, platform: Platform | str | None = None
    ) -> tuple[Manifest, str | None]:
        """The image manifest for ``platform``: ``image`` itself, or the entry of its index (the
        second value is then the index digest)."""
        return await self._run(self.api.image_manifest(_ref(image), self._platform(platform)))

    async def config(
        self, image: str | ImageReference, platform: Platform | str | None = None
    ) -> ImageConfig:
        """The image's config blob (manifest and config only; layers are never fetched)."""
        return await self._run(self.api.config(_ref(image), self._platform(platform)))

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
        return await self._run(self.api.blob(_ref(image), digest, max_bytes=max_bytes))

    # -- listings ---------------------------------------------------------------------------

    async def ping(self, registry: str) -> None:
        """``GET /v2/`` (authenticating if asked to); raises when the registry is not usable."""
        await self._run(self.api.ping(registry))

    async def catalog(
        self, registry: str, *, page_size: int | None = None, limit: int | None = None
    ) -> list[str]:
        """Repository names of ``registry`` (``/v2/_catalog``, every page unless ``limit``)."""
        return await self._run(self.api.catalog(registry, page_size, limit))

    async def tags(
        self, repository: str | ImageReference, *, page_size: int | None = None, limit: int | None = None
    ) -> list[str]:
        """Tags of a repository (``registry/repo`` as in a reference; a tag/digest is ignored)."""
        return await self._run(self.api.tags(_ref(repository), page_size, limit))

    # -- transport --------------------------------------------------------------------------

    def base_url(self, registry: str) -> str:
        return self.exchange.base_url(registry)

    def _platform(self, platform: Platform | str | None) -> Platform:
        return Platform.parse(platform) if isinstance(platform, str) else (platform or self.platform)

    async def _run(self, flow: Flow[T]) -> T:
        """Run ``flow``: send what it asks for, a token fetch with no other of its scope at once."""
        step = advance(flow, None)
        while not isinstance(step, Done):
            if isinstance(step, Serialised):
                async with self._token_locks.hold(step.key):
                    step = advance(flow, await self._run(step.flow))
            else:
                step = advance(flow, await self._send(step))
        return step.value

    async def _send(self, step: Send) -> Answer:
        what = step.what
        try:
            check_url(step.url, self.policy)
        except OutboundRefused as e:
            raise AddressNotAllowed(f"{what}: {e.message}") from None
        self.request_log.append((step.method, step.url.split("?", 1)[0]))
        try:
            async with self._http().request(
                step.method,
                step.url,
                headers=dict(step.headers),
                allow_redirects=False,
                ssl=self.ssl,
                proxy=self._proxy_for(step.url),
            ) as resp:
                headers = {k: v for k, v in resp.headers.items()}
                challenges = resp.headers.getall("WWW-Authenticate", [])
                if resp.status in exchange.REDIRECTS and "Location" in resp.headers:
                    location = resp.headers["Location"]
                    return Answer(resp.status, headers, challenges, b"", str(resp.url), location)
                ok = 200 <= resp.status < 300
                limit = step.max_bytes if ok else exchange.MAX_ERROR_BYTES
                body = b"" if step.method == "HEAD" else await _read_limited(resp, limit, ok, what)
                return Answer(resp.status, headers, challenges, body, str(resp.url))
        except OCIError:
            raise
        except OutboundRefused as e:  # refused by the resolver: nothing was connected
            raise AddressNotAllowed(f"{what}: {e.message}") from None
        except aiohttp.InvalidURL as e:
            raise RegistryError(f"{what}: invalid URL {e}") from None
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise RegistryUnreachable(
                f"{what}: {urllib.parse.urlsplit(step.url).netloc}: {_describe(e)}"
            ) from None

    def _proxy_for(self, url: str) -> str | None:
        if not self.trust_env:
            return None
        host = urllib.parse.urlsplit(url).hostname or ""
        if is_loopback(host) or urllib.request.proxy_bypass(host):
            return None
        proxies = urllib.request.getproxies()
        proxy = proxies.get(urllib.parse.urlsplit(url).scheme)
        return proxy if isinstance(proxy, str) else None


def _ref(image: str | ImageReference) -> ImageReference:
    return image if isinstance(image, ImageReference) else parse_reference(image)


async def _read_limited(resp: aiohttp.ClientResponse, limit: int, strict: bool, what: str) -> bytes:
    length = resp.content_length
    if strict and length is not None and length > limit:
        raise too_large(what, limit, length)
    chunks: list[bytes] = []
    total = 0
    async for chunk in resp.content.iter_chunked(65536):
        total += len(chunk)
        if total > limit:
            if strict:
                raise too_large(what, limit)
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
