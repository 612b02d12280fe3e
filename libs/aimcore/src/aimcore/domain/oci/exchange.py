"""One request to a registry with its authentication, the token exchange included, written once for
every transport and free of I/O: a request is a *flow*, a generator that yields each HTTP request
to send (:class:`Send`, one hop: redirects are followed here) and is sent back its :class:`Answer`.
A token fetch is yielded as a :class:`Serialised` step, which the transport runs while no other
fetch of the same scope runs. The async client (:mod:`aimcore.domain.oci.client`) and the blocking one
(:mod:`aimcore.domain.oci.blocking`) only move the bytes, each under the outbound address policy.

- Authentication: anonymous, basic, and bearer tokens (``WWW-Authenticate: Bearer realm=...,
  service=..., scope=...`` → the token endpoint, with the registry's credentials when there are
  any). Hosts are remembered, so after the first challenge requests carry their credentials at
  once; tokens are cached per scope until they expire.
- Loopback registries (``localhost``, ``127.0.0.0/8``, ``::1``) are spoken to over plain HTTP, as
  are the hosts in ``plain_http``; everything else over HTTPS.
- Credentials go only where they belong: the pull secret's to the registry host it names, and to
  its token realm only over HTTPS or on the registry's own host (a realm on another host over plain
  HTTP gets nothing: :class:`InsecureTokenRealm`); the ``Authorization`` header never follows a
  redirect to another origin (scheme, host or port).

Every error is one of :data:`aimcore.domain.oci.errors.OCI_ERRORS`, with the HTTP status behind it
when there is one; messages never contain credentials.
"""

from __future__ import annotations

import functools
import json
import time
import urllib.parse
from collections.abc import Collection, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aimcore.api.imageref import api_host, is_loopback, normalize_registry
from aimcore.domain.oci.auth import Challenge, Credentials, DockerConfig, parse_www_authenticate
from aimcore.domain.oci.documents import json_object
from aimcore.domain.oci.errors import (
    AuthFailed,
    ImageNotFound,
    InsecureTokenRealm,
    OCIError,
    RegistryError,
    RegistryUnreachable,
)
from aimcore.domain.outbound import normalize_host

T = TypeVar("T")

REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
MAX_ERROR_BYTES = 64 * 1024
DEFAULT_TOKEN_TTL = 60.0
USER_AGENT = "aim-engine-py/0.1 (oci-client)"

_NOT_FOUND_CODES = frozenset({"MANIFEST_UNKNOWN", "NAME_UNKNOWN", "BLOB_UNKNOWN", "NOT_FOUND"})
_AUTH_CODES = frozenset({"UNAUTHORIZED", "DENIED"})


@dataclass(frozen=True)
class Send:
    """One HTTP request, sent as it is (a redirect is answered, not followed). The answer's body is
    read up to ``max_bytes`` when it is a success (a longer one is an error), up to
    :data:`MAX_ERROR_BYTES` otherwise, not at all for a HEAD or a redirect. ``what`` names the
    request in errors."""

    method: str
    url: str
    headers: Mapping[str, str] = field(repr=False)
    max_bytes: int
    what: str


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    challenges: list[str]  # every WWW-Authenticate header
    body: bytes = field(repr=False)
    url: str
    location: str | None = None  # where a redirect points


@dataclass(frozen=True)
class Serialised(Generic[T]):
    """A step the transport runs (as a flow of its own) while no other step of ``key`` runs."""

    key: tuple[str, str]
    flow: Flow[T]


Flow = Generator["Send | Serialised[Any]", Any, T]
"""A request (or several) to run: yields what to send, returns what it came to."""


@dataclass(frozen=True)
class Done(Generic[T]):
    value: T


def advance(flow: Flow[T], answer: Any) -> Send | Serialised[Any] | Done[T]:
    """The next step of ``flow`` once it has ``answer`` (the last step's; None to start it)."""
    try:
        return flow.send(answer)
    except StopIteration as done:
        return Done(done.value)


class Exchange:
    """The authenticated requests of one client: what it learnt of each registry's authentication
    (basic hosts, bearer challenges) and the tokens it holds. ``credentials``: usually
    :func:`aimcore.domain.oci.auth.credentials_from_secrets` of the object's ``imagePullSecrets``;
    ``plain_http``: extra registry hosts (``host:port``) spoken to over HTTP."""

    def __init__(self, credentials: DockerConfig | None = None, plain_http: Collection[str] = ()) -> None:
        self.credentials = credentials or DockerConfig()
        self.plain_http = frozenset(normalize_registry(h) for h in plain_http)
        self._basic_hosts: set[str] = set()
        self._bearer: dict[str, Challenge] = {}
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}

    def base_url(self, registry: str) -> str:
        scheme = "http" if is_loopback(registry) or registry in self.plain_http else "https"
        return f"{scheme}://{api_host(registry)}"

    def request(
        self,
        method: str,
        registry: str,
        target: str,
        *,
        scope: str,
        what: str,
        accept: str | None = None,
        max_bytes: int,
    ) -> Flow[Answer]:
        """``method`` ``target`` (path and query) of ``registry``, authenticated for ``scope``
        (``repository:<name>:pull``...); a success, or the error the answer means."""
        url = self.base_url(registry) + target
        creds = self.credentials.lookup(registry, _scope_repository(scope))
        headers = {"Accept": accept} if accept else {}
        authorization = yield from self._known_authorization(registry, scope, creds)
        send = functools.partial(self._send, method, url, headers, max_bytes=max_bytes, what=what)
        response = yield from send(authorization)
        if response.status == 401:
            challenge = _pick_challenge(response.challenges)
            if challenge is None:
                raise AuthFailed(
                    f"{what}: registry {registry} refused the request (401) without a usable challenge",
                    status=401,
                )
            self._tokens.pop((registry, scope), None)
            authorization = yield from self._authenticate(registry, challenge, scope, creds, what)
            response = yield from send(authorization)
            if response.status == 401:
                raise AuthFailed(
                    f"{what}: registry {registry} rejected the {_how(creds)}{_codes_suffix(response.body)}",
                    status=401,
                )
        if 200 <= response.status < 300:
            return response
        raise status_error(response, what, registry, creds)

    def authorization(self, registry: str, scope: str) -> Flow[str | None]:
        """The ``Authorization`` a request for ``scope`` carries now (a token renewed when it has
        expired), for requests the caller sends itself, after a :meth:`request` that met the
        registry's challenge: the downloader's blob transfers."""
        creds = self.credentials.lookup(registry, _scope_repository(scope))
        return (yield from self._known_authorization(registry, scope, creds))

    def _send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        authorization: str | None,
        *,
        max_bytes: int,
        what: str,
    ) -> Flow[Answer]:
        origin = _origin(url)
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            sent = dict(headers)
            if authorization and _origin(current) == origin:
                sent["Authorization"] = authorization
            if _origin(current)[0] not in ("http", "https"):
                raise RegistryError(f"{what}: redirected to a URL that is not http(s)")
            answer: Answer = yield Send(method, current, sent, max_bytes, what)
            if answer.location is not None:
                current = urllib.parse.urljoin(current, answer.location)
                continue
            return answer
        raise RegistryError(f"{what}: more than {MAX_REDIRECTS} redirects")

    def _known_authorization(self, registry: str, scope: str, creds: Credentials | None) -> Flow[str | None]:
        """Credentials for a host whose scheme we already learnt (no 401 round trip)."""
        if registry in self._bearer:
            cached = self._tokens.get((registry, scope))
            if cached and cached[1] > time.monotonic():
                return f"Bearer {cached[0]}"
            return (
                yield from self._authenticate(
                    registry, self._bearer[registry], scope, creds, f"registry {registry}"
                )
            )
        if registry in self._basic_hosts and creds:
            return creds.basic_header()
        return None

    def _authenticate(
        self, registry: str, challenge: Challenge, scope: str, creds: Credentials | None, what: str
    ) -> Flow[str]:
        if challenge.scheme == "basic":
            if creds is None:
                raise AuthFailed(
                    f"{what}: registry {registry} requires authentication and no credentials were given",
                    status=401,
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
        header: str = yield Serialised(key, self._token(key, challenge, creds, what))
        return header

    def _token(
        self, key: tuple[str, str], challenge: Challenge, creds: Credentials | None, what: str
    ) -> Flow[str]:
        """A token for ``key`` (registry, scope): the cached one (another fetch may just have got
        it), else a new one."""
        cached = self._tokens.get(key)
        if cached and cached[1] > time.monotonic():
            return f"Bearer {cached[0]}"
        token, ttl = yield from self._fetch_token(*key, challenge, creds, what)
        self._tokens[key] = (token, time.monotonic() + max(1.0, ttl - 5.0))
        return f"Bearer {token}"

    def _fetch_token(
        self, registry: str, scope: str, challenge: Challenge, creds: Credentials | None, what: str
    ) -> Flow[tuple[str, float]]:
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
        response = yield from self._send(
            "GET", url, {"Accept": "application/json"}, authorization, max_bytes=MAX_ERROR_BYTES, what=what
        )
        status = response.status
        if status in (401, 403):
            raise AuthFailed(
                f"{what}: the token service of {registry} rejected the {_how(creds)} ({status})",
                status=status,
            )
        if status >= 500 or status == 429:
            raise RegistryUnreachable(
                f"{what}: the token service of {registry} answered {status}", status=status
            )
        if status != 200:
            raise AuthFailed(f"{what}: the token service of {registry} answered {status}", status=status)
        doc = json_object(response.body, f"token response of {registry}")
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


def status_error(response: Answer, what: str, registry: str, creds: Credentials | None) -> OCIError:
    """The error an unexpected answer means (its error codes named)."""
    listed = _error_codes(response.body)
    codes = set(listed)
    detail = " ".join([str(response.status), ", ".join(dict.fromkeys(listed))]).strip()
    status = response.status
    if status == 404 or codes & _NOT_FOUND_CODES:
        return ImageNotFound(f"{what} not found on {registry} ({detail})", status=status)
    if status in (401, 403) or codes & _AUTH_CODES:
        return AuthFailed(
            f"{what}: access denied by registry {registry} for the {_how(creds)} ({detail})", status=status
        )
    if status == 429:
        return RegistryUnreachable(f"{what}: registry {registry} is rate limiting ({detail})", status=status)
    if status >= 500:
        return RegistryUnreachable(f"{what}: registry {registry} answered {detail}", status=status)
    return RegistryError(f"{what}: registry {registry} answered {detail}", status=status)


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


def _scope_repository(scope: str) -> str | None:
    if scope.startswith("repository:"):
        return scope.split(":")[1]
    return None


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
