"""The registry client for blocking callers: the downloader, which resolves an ``oci://`` model's
manifest in a thread and authenticates each blob request of its transfer threads (a token renewed
when it expires). The same protocol and token exchange as the async client
(:mod:`aimcore.domain.oci.protocol`, :mod:`aimcore.domain.oci.exchange`), sent over the operator's
guarded blocking connections (:func:`aimcore.domain.outbound.connect.http_connection`: every address
judged at connect time, the policy's forward proxy where it applies, the target still judged),
one request per connection. A refusal is :class:`AddressNotAllowed`, anything else the network
does :class:`RegistryUnreachable`."""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse
from collections.abc import Collection
from typing import TypeVar

from aimcore.api.imageref import ImageReference
from aimcore.domain.oci import exchange
from aimcore.domain.oci.auth import DockerConfig
from aimcore.domain.oci.documents import Manifest, too_large
from aimcore.domain.oci.errors import AddressNotAllowed, OCIError, RegistryUnreachable
from aimcore.domain.oci.exchange import Answer, Done, Exchange, Flow, Send, Serialised, advance
from aimcore.domain.oci.protocol import RegistryProtocol, blob_path, pull_scope
from aimcore.domain.outbound import STRICT, OutboundPolicy, OutboundRefused, check_url
from aimcore.domain.outbound.connect import http_connection

T = TypeVar("T")


class BlockingRegistryClient:
    """``credentials`` and ``plain_http`` as for the async client; ``context`` verifies the
    registries' TLS certificates (default: the system's CAs); ``timeout`` bounds each connect and
    read. Thread-safe: one token fetch at a time."""

    def __init__(
        self,
        credentials: DockerConfig | None = None,
        *,
        plain_http: Collection[str] = (),
        context: ssl.SSLContext | None = None,
        timeout: float = 30.0,
        policy: OutboundPolicy = STRICT,
    ) -> None:
        self.exchange = Exchange(credentials, plain_http)
        self.api = RegistryProtocol(self.exchange)
        self.context = context
        self.timeout = timeout
        self.policy = policy
        self._token_lock = threading.Lock()

    def manifest(self, ref: ImageReference) -> Manifest:
        """The manifest or index ``ref`` names (by tag or digest), as served, digest verified."""
        return self._run(self.api.manifest(ref))

    def authorization(self, ref: ImageReference) -> str | None:
        """The ``Authorization`` a request to ``ref``'s repository carries now (after
        :meth:`manifest` met the registry's challenge), a token renewed when it has expired."""
        return self._run(self.exchange.authorization(ref.registry, pull_scope(ref)))

    def blob_url(self, ref: ImageReference, digest: str) -> str:
        return self.exchange.base_url(ref.registry) + blob_path(ref, digest)

    def _run(self, flow: Flow[T]) -> T:
        step = advance(flow, None)
        while not isinstance(step, Done):
            if isinstance(step, Serialised):
                with self._token_lock:
                    step = advance(flow, self._run(step.flow))
            else:
                step = advance(flow, self._send(step))
        return step.value

    def _send(self, step: Send) -> Answer:
        parts = urllib.parse.urlsplit(step.url)
        what, https = step.what, parts.scheme.lower() == "https"
        try:
            check_url(step.url, self.policy)
            assert parts.hostname is not None  # check_url refuses a URL without one
            conn = http_connection(
                parts.scheme,
                parts.hostname,
                parts.port,
                policy=self.policy,
                timeout=self.timeout,
                context=(self.context or ssl.create_default_context()) if https else None,
            )
        except OutboundRefused as e:
            raise AddressNotAllowed(f"{what}: {e.message}") from None
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            conn.request(step.method, target, headers={"User-Agent": exchange.USER_AGENT, **step.headers})
            resp = conn.getresponse()
            headers = dict(resp.getheaders())
            challenges = resp.msg.get_all("WWW-Authenticate") or []
            location = resp.getheader("Location")
            if resp.status in exchange.REDIRECTS and location:
                return Answer(resp.status, headers, challenges, b"", step.url, location)
            ok = 200 <= resp.status < 300
            limit = step.max_bytes if ok else exchange.MAX_ERROR_BYTES
            body = b"" if step.method == "HEAD" else _read_limited(resp, limit, ok, what)
            return Answer(resp.status, headers, challenges, body, step.url)
        except OCIError:
            raise
        except OutboundRefused as e:  # judged at connect time: nothing was sent
            raise AddressNotAllowed(f"{what}: {e.message}") from None
        except (OSError, http.client.HTTPException) as e:
            raise RegistryUnreachable(f"{what}: {parts.netloc}: {_describe(e)}") from None
        finally:
            conn.close()


def _read_limited(resp: http.client.HTTPResponse, limit: int, strict: bool, what: str) -> bytes:
    if strict and resp.length is not None and resp.length > limit:
        raise too_large(what, limit, resp.length)
    body = resp.read(limit + 1)
    if len(body) > limit:
        if strict:
            raise too_large(what, limit)
        return body[:limit]
    return body


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted ({error.reason})"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
