"""Every client of the bus connects here: with its role's NKey, its role's inbox prefix, TLS when
configured, and quiet reconnect logging (one line when the bus goes away and one when it is back,
instead of nats-py's traceback per attempt), and permission violations the server reports counted
(``aim_nats_permission_violations_total``). The settings (``AIM_NATS_*``) are
:class:`~aimcore.runtime.settings.bus.BusSettings`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats
from nats import errors as nats_errors
from nats.aio.client import Client as NatsClient

from aimcore.api.backoff import Backoff
from aimcore.api.bus.auth import inbox_prefix
from aimcore.runtime import metrics
from aimcore.runtime.settings.bus import DEFAULT_URL, BusSettings

__all__ = ["BUS_RETRY", "DEFAULT_URL", "BusSettings", "OutageLog", "connect_bus", "until_answered"]

log = logging.getLogger(__name__)
T = TypeVar("T")

BUS_RETRY = Backoff(base=0.2, cap=5.0)
"""A bus that is down, restarting or busy (binding a consumer, fetching, declaring the topology,
writing the mirror): 0.2 s doubling to 5 s, with jitter so the replicas that lost the bus together
do not come back together."""

CONNECTION_ERRORS = (
    OSError,
    TimeoutError,
    nats_errors.UnexpectedEOF,
    nats_errors.StaleConnectionError,
    nats_errors.ConnectionClosedError,
    nats_errors.NoServersError,
    nats_errors.TimeoutError,
)
"""Errors of the connection itself (as opposed to, say, a permission violation on a live one)."""


class OutageLog:
    """One warning when the connection drops (or the first attempt to connect fails) and one line
    when it is back; the errors in between (one per reconnect attempt) go to debug, never as
    tracebacks (nats-py's own error callback logs a traceback per attempt, every 0.5 s)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.down = False
        self.errors = 0  # since the connection was last up
        self.cause: str | None = None  # the connection error an outage began with
        self.client: NatsClient | None = None  # set once connected: a deliberate close is no outage

    async def error(self, exc: Exception) -> None:
        if metrics.is_permission_violation(exc):  # a publish or subscription refused: counted
            metrics.REFUSED_PUBLISHES.inc()
        if isinstance(exc, CONNECTION_ERRORS) and (self.down or self.client is not None):
            # the connection failing once it was up: the outage's one line is the disconnect's
            level = logging.DEBUG
            if not self.down:
                self.cause = _describe(exc)
        else:
            level = logging.WARNING if self.errors == 0 else logging.DEBUG
        self.errors += 1
        log.log(level, "%s: NATS connection problem: %s", self.name, _describe(exc))

    async def disconnected(self) -> None:
        if self.client is not None and (self.client.is_closed or self.client.is_draining):
            return
        if not self.down:
            cause = f" ({self.cause})" if self.cause else ""
            log.warning("%s: NATS disconnected%s; reconnecting", self.name, cause)
        self.down = True

    def connected(self) -> None:
        """The first connection is up: one line if it took more than one attempt."""
        if self.errors:
            log.info("%s: NATS connected after %d failed attempts", self.name, self.errors)
        self.down, self.errors = False, 0

    async def reconnected(self) -> None:
        self.down, self.errors, self.cause = False, 0, None
        log.info("%s: NATS reconnected", self.name)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _read_seed(path: str) -> str:
    """A few bytes from a local file, once per connect (not worth a thread)."""
    with open(path) as f:
        return f.read().strip()


async def connect_bus(
    settings: BusSettings,
    name: str,
    *,
    forever: bool = True,
    on_error: Callable[[Exception], Awaitable[None]] | None = None,
    **options: Any,
) -> NatsClient:
    """Connect as ``name`` with ``settings``' credentials. ``forever``: keep reconnecting (services);
    otherwise a few attempts (command-line tools).

    A seed file is read once, here: every reconnect of this client signs with the seed it started
    with. (nats-py would re-read the file on each reconnect while still announcing the public key
    it read first, so a seed file replaced by a key rotation would fail every reconnect of a
    running service; the rotated seed is taken up when the service restarts.)"""
    outages = OutageLog(name)
    kwargs: dict[str, Any] = {
        "name": name,
        "error_cb": on_error or outages.error,
        "disconnected_cb": outages.disconnected,
        "reconnected_cb": outages.reconnected,
        "max_reconnect_attempts": -1 if forever else 3,
        "reconnect_time_wait": 0.5 if forever else 1.0,
    }
    if settings.role:
        kwargs["inbox_prefix"] = inbox_prefix(settings.role)
    if settings.seed_file:
        kwargs["nkeys_seed_str"] = _read_seed(settings.seed_file)
    elif settings.seed:
        kwargs["nkeys_seed_str"] = settings.seed
    context = settings.tls_context()
    if context is not None:
        kwargs["tls"] = context
    kwargs.update(options)
    servers = [url.strip() for url in settings.url.split(",") if url.strip()]  # a cluster's several
    nc = await nats.connect(servers, **kwargs)
    outages.connected()
    outages.client = nc
    return nc


async def until_answered(
    what: str,
    op: Callable[[], Awaitable[T]],
    stop: asyncio.Event,
    *,
    permanent: tuple[type[Exception], ...] = (),
) -> T | None:
    """``op``'s result once the bus answers it, waiting out (:data:`BUS_RETRY`) a bus that is down,
    still starting or electing its leaders (a timeout, JetStream's 503): a service that starts
    beside a bus that is not ready yet waits for it instead of dying. ``permanent`` errors are
    raised at once; None when ``stop`` is set first."""
    attempt = 0
    while not stop.is_set():
        try:
            return await op()
        except permanent:
            raise
        except (nats_errors.Error, TimeoutError) as exc:
            attempt += 1
            delay = BUS_RETRY.delay(attempt)
            log.warning("%s: the bus did not answer (%s); retrying in %.1fs", what, _describe(exc), delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
    return None
