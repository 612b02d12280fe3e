"""The connections ``huggingface_hub`` opens (the Hub listing's fallback path: error mapping, and
repositories whose quick listing lacks sizes) under the operator's outbound address policy.

``huggingface_hub`` talks through one process-wide ``httpx2`` client, which follows redirects
itself. The client installed here (once per process, with the library's public
``set_client_factory``) is otherwise like the library's own: its event hooks, taken from the
client the library made (``get_session``: offline mode, request ids), redirects, no timeout. Its
transport, inside :func:`guarded`, opens every connection, redirects included, through
:func:`aimcore.domain.outbound.connect.http_connection` (the address judged is the address connected
to), with the policy of the listing running in the current thread (a context variable;
``asyncio.to_thread`` carries it into the listing's thread). Bodies are then read whole (listings
are small JSON documents) and requested without compression. Outside :func:`guarded` (other users
of ``huggingface_hub`` in the process) the transport is httpx's default.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import http.client
import ssl
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
from huggingface_hub import get_session, set_client_factory

from aimcore.domain.outbound import OutboundPolicy, OutboundRefused
from aimcore.domain.outbound.connect import http_connection

TIMEOUT = 30.0

_current: contextvars.ContextVar[OutboundPolicy | None] = contextvars.ContextVar(
    "aim_hub_policy", default=None
)
_install = threading.Lock()
_installed = False


class GuardedTransport(httpx2.BaseTransport):
    """Inside :func:`guarded`: one request per call over a fresh guarded connection (no pooling: a
    listing is a handful of requests). Outside: httpx's default transport."""

    def __init__(self) -> None:
        self._default = httpx2.HTTPTransport()

    def close(self) -> None:
        self._default.close()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        policy = _current.get()
        if policy is None:
            return self._default.handle_request(request)
        url = request.url
        target = url.raw_path.decode("ascii")
        headers = {k: v for k, v in request.headers.items() if k.lower() != "accept-encoding"}
        headers["Accept-Encoding"] = "identity"
        body = request.read() or None
        context = ssl.create_default_context() if url.scheme == "https" else None
        conn = http_connection(
            url.scheme, url.host, url.port, policy=policy, timeout=TIMEOUT, context=context
        )
        try:
            conn.request(request.method, target, body=body, headers=headers)
            response = conn.getresponse()
            content = response.read()
        except OutboundRefused:
            raise
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(f"timed out talking to {url.host}", request=request) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise httpx2.ConnectError(f"{type(exc).__name__} talking to {url.host}", request=request) from exc
        finally:
            conn.close()
        return httpx2.Response(
            response.status, headers=response.getheaders(), content=content, request=request
        )


def _client(hooks: dict[str, list[Callable[..., Any]]]) -> httpx2.Client:
    return httpx2.Client(event_hooks=hooks, transport=GuardedTransport(), follow_redirects=True, timeout=None)


def _library_hooks() -> dict[str, list[Callable[..., Any]]]:
    """The event hooks of the client ``huggingface_hub`` made for itself (its request hook refuses
    requests in offline mode and gives each a request id)."""
    return {name: list(hooks) for name, hooks in get_session().event_hooks.items()}


@contextlib.contextmanager
def guarded(policy: OutboundPolicy) -> Iterator[None]:
    """Within the block, ``huggingface_hub`` connects (in this thread) only where ``policy`` allows."""
    global _installed  # noqa: PLW0603 - one process-wide client factory, installed once
    with _install:
        if not _installed:
            set_client_factory(functools.partial(_client, _library_hooks()))
            _installed = True
    token = _current.set(policy)
    try:
        yield
    finally:
        _current.reset(token)
