"""The outbound policy at connect time, for blocking HTTP clients (``http.client`` and the clients
built on ``socket.create_connection``): resolve the host once, judge every address, then connect
to exactly the judged addresses. Checking a URL and letting the client resolve the name again
would leave a window in which DNS can answer differently (DNS rebinding); here the address judged
is the address connected to. TLS is unaffected: the client still verifies the certificate for,
and sends SNI with, the host name.

:func:`resolve` is the shared step; :func:`create_connection` wraps it like
``socket.create_connection``; :func:`http_connection` gives an ``http.client`` connection that uses
it for every (re)connect.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Callable
from typing import Any

from aimcore.domain.outbound.policy import (
    OutboundPolicy,
    OutboundRefused,
    UnresolvedHost,
    check_addresses,
    check_host,
    normalize_host,
)
from aimcore.domain.outbound.proxy import Proxy

CreateConnection = Callable[..., socket.socket]


def resolve(host: str, port: int, policy: OutboundPolicy) -> list[str] | None:
    """The addresses to connect to for ``host``, every one judged by ``policy``; None when the
    host is allow-listed (connect to it by name, unchecked). Raises
    :class:`~aimcore.domain.outbound.policy.OutboundRefused` or ``OSError`` (DNS failure)."""
    literal = check_host(host, policy)
    name = normalize_host(host)
    if policy.allows_host(name):
        return None
    if literal is not None:
        bare = name.split("%", 1)[0]
        try:
            ipaddress.ip_address(bare)
        except ValueError:
            return [str(literal)]  # a legacy IPv4 spelling (0x7f.1): the address it means
        return [bare]
    infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    found = [str(info[4][0]) for info in infos]
    if not found:
        raise UnresolvedHost(f"{name} has no addresses")
    return check_addresses(name, found, policy)


def create_connection(policy: OutboundPolicy) -> CreateConnection:
    """A ``socket.create_connection`` that applies ``policy`` (see the module docstring)."""

    def create(
        address: tuple[str, int],
        timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,  # type: ignore[attr-defined]
        source_address: tuple[str, int] | None = None,
        **kwargs: Any,
    ) -> socket.socket:
        host, port = address[0], address[1]
        targets = resolve(host, port, policy)
        if targets is None:
            return socket.create_connection(address, timeout, source_address, **kwargs)
        error: OSError | None = None
        for target in targets:
            try:
                return socket.create_connection((target, port), timeout, source_address, **kwargs)
            except OSError as exc:
                error = exc
        assert error is not None
        raise error

    return create


class GuardedHTTPConnection(http.client.HTTPConnection):
    """An ``http.client.HTTPConnection`` whose every connect applies the policy."""

    def __init__(self, host: str, port: int | None = None, *, policy: OutboundPolicy, **kwargs: Any) -> None:
        super().__init__(host, port, **kwargs)
        self._create_connection = create_connection(policy)


class GuardedHTTPSConnection(http.client.HTTPSConnection):
    """An ``http.client.HTTPSConnection`` whose every connect applies the policy (the certificate
    is still verified for the host name)."""

    def __init__(self, host: str, port: int | None = None, *, policy: OutboundPolicy, **kwargs: Any) -> None:
        super().__init__(host, port, **kwargs)
        self._create_connection = create_connection(policy)


def judge_target(host: str, port: int, policy: OutboundPolicy) -> None:
    """The policy's judgement of a host reached through a proxy (the proxy connects to it, so the
    policy cannot choose the address): a refused name, literal or resolved address is refused
    here, before anything is sent. A name this pod cannot resolve is left to the proxy (in a
    proxied network only the proxy may know it); DNS can still answer the proxy differently."""
    try:
        resolve(host, port, policy)
    except UnresolvedHost:
        return
    except OutboundRefused:
        raise
    except OSError:
        return


class ProxiedHTTPConnection(http.client.HTTPConnection):
    """A plain-HTTP request through a forward proxy: sent to the proxy in absolute form
    (``GET http://host:port/path``), the target judged by the policy first."""

    def __init__(self, host: str, port: int, proxy: Proxy, *, policy: OutboundPolicy, **kwargs: Any) -> None:
        super().__init__(proxy.host, proxy.port, **kwargs)
        self.target = (host, port)
        self.proxy = proxy
        self.policy = policy

    def connect(self) -> None:
        judge_target(*self.target, self.policy)
        super().connect()

    def putrequest(
        self, method: str, url: str, skip_host: bool = False, skip_accept_encoding: bool = False
    ) -> None:
        if url.startswith("/"):
            host, port = self.target
            netloc = f"[{host}]" if ":" in host else host
            url = f"http://{netloc}{'' if port == 80 else f':{port}'}{url}"
        super().putrequest(method, url, skip_host=skip_host, skip_accept_encoding=skip_accept_encoding)
        if self.proxy.authorization:
            self.putheader("Proxy-Authorization", self.proxy.authorization)


class ProxiedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection tunnelled through a forward proxy (``CONNECT host:port``): TLS end to
    end with the target (its certificate verified for its name), the target judged by the policy
    first."""

    def __init__(self, host: str, port: int, proxy: Proxy, *, policy: OutboundPolicy, **kwargs: Any) -> None:
        super().__init__(proxy.host, proxy.port, **kwargs)
        headers = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else None
        self.set_tunnel(host, port, headers=headers)
        self.target = (host, port)
        self.policy = policy

    def connect(self) -> None:
        judge_target(*self.target, self.policy)
        super().connect()


def http_connection(
    scheme: str,
    host: str,
    port: int | None,
    *,
    policy: OutboundPolicy,
    timeout: float,
    context: ssl.SSLContext | None = None,
) -> http.client.HTTPConnection:
    """A guarded connection for ``scheme`` (``http`` or ``https``), through the policy's forward
    proxy when one applies to the host (``HTTPS_PROXY``/``HTTP_PROXY``, ``NO_PROXY``; their form
    is checked when the settings are read)."""
    https = scheme.lower() == "https"
    port = port or (443 if https else 80)
    proxy_url = policy.proxies.url_for(scheme, host, port)
    if proxy_url is not None:
        proxy = Proxy.parse(proxy_url)
        if https:
            return ProxiedHTTPSConnection(
                host,
                port,
                proxy,
                policy=policy,
                timeout=timeout,
                context=context or ssl.create_default_context(),
            )
        return ProxiedHTTPConnection(host, port, proxy, policy=policy, timeout=timeout)
    if https:
        return GuardedHTTPSConnection(
            host, port, policy=policy, timeout=timeout, context=context or ssl.create_default_context()
        )
    return GuardedHTTPConnection(host, port, policy=policy, timeout=timeout)
