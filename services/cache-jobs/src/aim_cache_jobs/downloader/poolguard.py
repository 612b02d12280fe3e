"""The outbound address policy for clients built on urllib3 (botocore's S3 client, the ``requests``
session oras-py talks to a registry with), at connect time: a connection resolves its host once,
every address is judged (:func:`aimcore.domain.outbound.connect.resolve`), and it connects to exactly
the judged addresses (TLS still verifies the certificate for the host name). A connection to the
operator's forward proxy is not judged (the proxy is the operator's); the target it tunnels to is,
before the request is sent (:class:`GuardedAdapter`)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NameResolutionError

from aimcore.domain.outbound import OutboundPolicy
from aimcore.domain.outbound.connect import judge_target, resolve


def guarded_new_conn(
    conn: Any, policy: OutboundPolicy, connect: Callable[[], socket.socket]
) -> socket.socket:
    """``connect()`` (a urllib3 connection's own ``_new_conn``) to each judged address of the
    connection's host in turn; the first that answers wins."""
    host = conn._dns_host
    try:
        targets = resolve(host, conn.port, policy)
    except socket.gaierror as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    if targets is None:
        return connect()
    error: Exception | None = None
    for target in targets:
        conn._dns_host = target  # connect to the judged address; TLS still uses conn.host
        try:
            return connect()
        except Exception as exc:  # urllib3 wraps socket errors; try the next address
            error = exc
        finally:
            conn._dns_host = host
    assert error is not None
    raise error


def _pools(policy: OutboundPolicy) -> dict[str, type[HTTPConnectionPool]]:
    class Connection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            if self.proxy is not None:  # the operator's proxy: its target was judged in send()
                return super()._new_conn()
            return guarded_new_conn(self, policy, super()._new_conn)

    class SecureConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            if self.proxy is not None:
                return super()._new_conn()
            return guarded_new_conn(self, policy, super()._new_conn)

    class Pool(HTTPConnectionPool):
        ConnectionCls = Connection

    class SecurePool(HTTPSConnectionPool):
        ConnectionCls = SecureConnection

    return {"http": Pool, "https": SecurePool}


class GuardedAdapter(HTTPAdapter):
    """A ``requests`` transport under ``policy``: every connection (first request, every redirect
    hop, a token realm) judged when it is made; the policy's forward proxy used where it applies."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self.policy = policy
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _pools(self.policy)

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, proxies: Mapping[str, str] | None = None, **kwargs: Any
    ) -> requests.Response:
        parts = urlsplit(request.url or "")
        scheme = parts.scheme.lower()
        port = parts.port or (443 if scheme == "https" else 80)
        proxy = self.policy.proxies.url_for(scheme, parts.hostname or "", port)
        if proxy is not None:
            judge_target(parts.hostname or "", port, self.policy)
        return super().send(request, proxies={scheme: proxy} if proxy else {}, **kwargs)


def guarded_session(policy: OutboundPolicy) -> requests.Session:
    """A ``requests`` session whose every connection applies ``policy``; the process environment's
    proxy variables and ``.netrc`` are not read (the policy carries the operator's proxies)."""
    session = requests.Session()
    session.trust_env = False
    adapter = GuardedAdapter(policy)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
