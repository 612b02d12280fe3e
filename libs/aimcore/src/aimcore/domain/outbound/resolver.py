"""The outbound policy at connect time, for aiohttp clients: a resolver that judges every address
a host name resolves to before aiohttp connects to it (aiohttp connects to exactly the addresses
its resolver returns, so DNS rebinding between check and connect is impossible; the resolver's
answers are what aiohttp's DNS cache keeps). aiohttp does not ask the resolver about IP literals:
callers check each URL with :func:`aimcore.domain.outbound.policy.check_url` before sending it (a literal
cannot rebind), which also refuses metadata host names without a DNS query.
"""

from __future__ import annotations

import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from aimcore.domain.outbound.policy import OutboundPolicy, check_addresses, check_host, normalize_host


class GuardedResolver(AbstractResolver):
    """Resolves with ``inner`` (default: aiohttp's threaded resolver) and raises
    :class:`~aimcore.domain.outbound.policy.OutboundRefused` when the policy refuses any address."""

    def __init__(self, policy: OutboundPolicy, inner: AbstractResolver | None = None) -> None:
        self.policy = policy
        self._inner = inner or aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        check_host(host, self.policy)
        results = await self._inner.resolve(host, port, family)
        if not self.policy.allows_host(host):
            check_addresses(normalize_host(host), [str(r["host"]) for r in results], self.policy)
        return results

    async def close(self) -> None:
        await self._inner.close()


def connector(policy: OutboundPolicy, **kwargs: Any) -> aiohttp.TCPConnector:
    """A ``TCPConnector`` that connects only where ``policy`` allows (call inside a running loop)."""
    return aiohttp.TCPConnector(resolver=GuardedResolver(policy), **kwargs)
