"""Blocking HTTP for the transfer threads: one reusable connection per host and worker, redirects
(the Hub sends LFS files to a CDN; the ``Authorization`` header never follows a redirect to another
host), and the mapping from statuses and socket errors to download reasons. Stdlib ``http.client``
on purpose: reading with ``readinto`` into large buffers costs no Python work per network packet.

Every connection applies the operator's outbound address policy at connect time
(:mod:`aimcore.domain.outbound.connect`: the address judged is the address connected to), for the first
request and every redirect alike; a refusal is ``AddressNotAllowed``, never retried.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from aim_cache_jobs.downloader.errors import (
    ADDRESS_NOT_ALLOWED,
    AUTH_ERROR,
    DOWNLOAD_FAILED,
    DOWNLOAD_STALLED,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    DownloadError,
    host_of,
    redact_url,
)
from aimcore.api.errors import AimError
from aimcore.domain.outbound import STRICT, OutboundPolicy, OutboundRefused
from aimcore.domain.outbound.connect import http_connection

USER_AGENT = "aim-download/1"
MAX_REDIRECTS = 10
REDIRECTS = frozenset({301, 302, 303, 307, 308})
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# Credentials that never follow a redirect to another origin (scheme, host or port).
SENSITIVE = frozenset({"authorization", "proxy-authorization", "cookie", "x-amz-security-token"})

Key = tuple[str, str, int]


def make_ssl_context(verify: bool | str = True) -> ssl.SSLContext:
    """``verify``: True (system CAs), False (no verification) or a CA bundle path."""
    if verify is False:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return ssl.create_default_context()


class Transient(AimError):
    """A failure worth retrying at once, in this process (dropped connection, stall, 5xx): the
    transfer retries the range with its backoff (or ``retry_after``); ``error`` is what to raise when
    the attempts run out (a :class:`DownloadError`, whose own ``transient`` says whether a later
    attempt of the whole download may help). A :class:`DownloadError` raised unwrapped is not
    retried in the process."""

    transient = True

    def __init__(self, error: DownloadError, retry_after: float | None = None) -> None:
        super().__init__(error.message, reason=error.reason)
        self.error = error
        self.retry_after = retry_after


@dataclass
class Opened:
    """A response whose headers have been read; the body is still on the connection."""

    response: http.client.HTTPResponse
    url: str
    headers: dict[str, str]
    key: Key
    conn: http.client.HTTPConnection


def refused(error: OutboundRefused) -> DownloadError:
    """The download reason of a connection the outbound policy refused (not retried)."""
    return DownloadError(ADDRESS_NOT_ALLOWED, error.message, transient=False)


class Connections:
    """One worker's keep-alive connections (one per scheme/host/port). :meth:`abort` may be called
    from another thread: it shuts the sockets down so a blocked read returns at once. ``policy``
    (the process's, read at start-up; default: the strict one) is applied to every connect."""

    def __init__(
        self,
        timeout: float,
        ssl_context: ssl.SSLContext | None = None,
        guard: Callable[[str], None] | None = None,
        policy: OutboundPolicy = STRICT,
    ) -> None:
        self.timeout = timeout
        self.ssl_context = ssl_context
        # Called with ``scheme://host:port/`` before a connection to a new origin is opened (the
        # first request and every redirect): raises DownloadError to refuse it (a caller's own
        # check, e.g. the LLMKube path's, before the policy's at connect time).
        self.guard = guard
        self.policy = policy
        self._conns: dict[Key, http.client.HTTPConnection] = {}
        self._lock = threading.Lock()
        self._aborted = False

    def get(self, key: Key) -> tuple[http.client.HTTPConnection, bool]:
        """The connection for ``key`` and whether it was reused (may have been closed by the peer)."""
        with self._lock:
            if self._aborted:
                raise DownloadError(DOWNLOAD_FAILED, "download cancelled")
            conn = self._conns.get(key)
            if conn is not None:
                return conn, True
            scheme, host, port = key
            if self.guard is not None:
                self.guard(f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}/")
            ctx = (self.ssl_context or make_ssl_context()) if scheme == "https" else None
            conn = http_connection(scheme, host, port, policy=self.policy, timeout=self.timeout, context=ctx)
            self._conns[key] = conn
            return conn, False

    def discard(self, key: Key) -> None:
        with self._lock:
            conn = self._conns.pop(key, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def forget(self, key: Key, conn: http.client.HTTPConnection) -> None:
        """Stop reusing ``conn`` (without closing it: its response is still being read)."""
        with self._lock:
            if self._conns.get(key) is conn:
                del self._conns[key]

    def close(self) -> None:
        with self._lock:
            conns = list(self._conns.values())
            self._conns.clear()
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            conns = list(self._conns.values())
        for conn in conns:
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def split_url(url: str) -> tuple[Key, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise DownloadError(DOWNLOAD_FAILED, f"cannot fetch {redact_url(url)}: not an http(s) URL")
    port = parts.port or (443 if scheme == "https" else 80)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return (scheme, parts.hostname, port), target


def same_host(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.hostname, pa.port) == (pb.scheme, pb.hostname, pb.port)


def open_url(
    conns: Connections,
    url: str,
    headers: Mapping[str, str],
    *,
    method: str = "GET",
    range_header: str | None = None,
) -> Opened:
    """Send the request, follow redirects, and return the final response with its headers read.
    Raises :class:`Transient` for failures worth retrying at once and :class:`DownloadError`
    otherwise; the caller checks the status (anything not a redirect is returned)."""
    current = url
    current_headers = dict(headers)
    for _ in range(MAX_REDIRECTS + 1):
        key, target = split_url(current)
        request_headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **current_headers}
        if range_header:
            request_headers["Range"] = range_header
        conn, response = _send(conns, key, method=method, target=target, headers=request_headers, url=current)
        if response.status in REDIRECTS and response.getheader("Location"):
            location = urljoin(current, response.getheader("Location", ""))
            drain(conns, key, response)
            if not same_host(current, location):
                current_headers = {k: v for k, v in current_headers.items() if k.lower() not in SENSITIVE}
            current = location
            if response.status == 303:
                method = "GET" if method != "HEAD" else method
            continue
        return Opened(response, current, current_headers, key, conn)
    raise DownloadError(DOWNLOAD_FAILED, f"too many redirects fetching {redact_url(url)}")


def _send(
    conns: Connections, key: Key, *, method: str, target: str, headers: Mapping[str, str], url: str
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    for fresh_try in range(2):
        conn, reused = conns.get(key)
        try:
            conn.request(method, target, headers=dict(headers))
            response = conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
            conns.discard(key)
            if reused and fresh_try == 0:
                continue  # the server closed an idle keep-alive connection: retry at once
            raise transient(e, url, conns.timeout) from e
        except DownloadError:
            raise
        except OutboundRefused as e:
            conns.discard(key)
            raise refused(e) from None
        except (OSError, http.client.HTTPException) as e:
            conns.discard(key)
            raise transient(e, url, conns.timeout) from e
        if response.will_close:
            # http.client closes the socket itself once the body is read; forget the connection
            # so the next request opens a fresh one.
            conns.forget(key, conn)
        return conn, response
    raise AssertionError("unreachable")


def idle(conn: http.client.HTTPConnection, wait: float) -> bool:
    """True if no data arrives on ``conn`` within ``wait`` seconds (False when unsure)."""
    sock = conn.sock
    if sock is None:
        return False
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return False
    try:
        readable, _, _ = select.select([sock], [], [], wait)
    except (OSError, ValueError):
        return False
    return not readable


def drain(conns: Connections, key: Key, response: http.client.HTTPResponse, limit: int = 1 << 16) -> None:
    """Read a small body so the connection can be reused; a large or broken one closes it."""
    try:
        length = response.length
        if length is not None and length <= limit:
            response.read()
            return
    except (OSError, http.client.HTTPException):
        pass
    conns.discard(key)
    with contextlib.suppress(Exception):
        response.close()


def status_error(status: int, url: str, *, had_token: bool = False) -> DownloadError | Transient:
    """The failure an unexpected HTTP status means (``url`` only appears redacted)."""
    where = redact_url(url)
    if status in (401, 403):
        hint = "" if had_token else " (no credentials were sent)"
        return DownloadError(AUTH_ERROR, f"HTTP {status} from {host_of(url)} for {where}{hint}")
    if status in (404, 410):
        return DownloadError(SOURCE_NOT_FOUND, f"HTTP {status}: {where} does not exist")
    if status in TRANSIENT_STATUSES:
        reason = DOWNLOAD_FAILED if status < 500 else SOURCE_UNREACHABLE
        return Transient(DownloadError(reason, f"HTTP {status} from {host_of(url)} for {where}"))
    return DownloadError(DOWNLOAD_FAILED, f"unexpected HTTP {status} from {host_of(url)} for {where}")


def transient(
    error: BaseException, url: str, stall_timeout: float | None = None
) -> Transient | DownloadError:
    """The failure a socket error while talking to ``url``'s host is: :class:`Transient` (retried
    at once), or a :class:`DownloadError` for a certificate that is not trusted."""
    host = host_of(url)
    if isinstance(error, TimeoutError | socket.timeout):
        seconds = f"{stall_timeout:g} s" if stall_timeout is not None else "the timeout"
        return Transient(DownloadError(DOWNLOAD_STALLED, f"no data for {seconds} from {host}"))
    if isinstance(error, ConnectionRefusedError | socket.gaierror):
        return Transient(DownloadError(SOURCE_UNREACHABLE, f"cannot connect to {host}: {_describe(error)}"))
    if isinstance(error, ssl.SSLCertVerificationError):
        return DownloadError(SOURCE_UNREACHABLE, f"TLS certificate of {host} not trusted: {error.reason}")
    return Transient(DownloadError(DOWNLOAD_FAILED, f"connection to {host} failed: {_describe(error)}"))


def _describe(error: BaseException) -> str:
    if isinstance(error, http.client.IncompleteRead):
        return "connection closed before the body was complete"
    if isinstance(error, http.client.RemoteDisconnected):
        return "server closed the connection"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return type(error).__name__
