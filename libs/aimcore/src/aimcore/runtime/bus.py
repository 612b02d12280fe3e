"""Every client of the bus connects here: with its role's NKey, its role's inbox prefix, TLS when
configured, and quiet reconnect logging (one line when the bus goes away and one when it is back,
instead of nats-py's traceback per attempt).

Settings (environment):

- ``AIM_NATS_URL`` (``nats://127.0.0.1:4222``; ``tls://`` also works);
- ``AIM_NATS_SEED_FILE``: the role's NKey seed, a file (a mounted Secret), or ``AIM_NATS_SEED``: the
  seed itself (download Jobs get theirs so); without either the client connects anonymously, which
  a server with authorization refuses;
- ``AIM_NATS_ROLE``: the role the seed belongs to (services: their name; ``aimctl``: ``reader``), for
  the inbox prefix the role may subscribe to;
- ``AIM_NATS_TLS_CA_FILE`` (verify the server), ``AIM_NATS_TLS_CERT_FILE`` and
  ``AIM_NATS_TLS_KEY_FILE`` (a client certificate, where the server asks for one).
"""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import nats
from nats.aio.client import Client as NatsClient

from aimcore.api.bus.auth import inbox_prefix

log = logging.getLogger(__name__)

DEFAULT_URL = "nats://127.0.0.1:4222"


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


@dataclass(frozen=True)
class BusSettings:
    url: str = field(default_factory=lambda: _env("AIM_NATS_URL") or DEFAULT_URL)
    role: str | None = field(default_factory=lambda: _env("AIM_NATS_ROLE"))
    seed_file: str | None = field(default_factory=lambda: _env("AIM_NATS_SEED_FILE"))
    seed: str | None = field(default_factory=lambda: _env("AIM_NATS_SEED"), repr=False)
    tls_ca_file: str | None = field(default_factory=lambda: _env("AIM_NATS_TLS_CA_FILE"))
    tls_cert_file: str | None = field(default_factory=lambda: _env("AIM_NATS_TLS_CERT_FILE"))
    tls_key_file: str | None = field(default_factory=lambda: _env("AIM_NATS_TLS_KEY_FILE"))

    def as_role(self, role: str) -> BusSettings:
        """These settings for ``role`` unless a role was configured explicitly."""
        return self if self.role else replace(self, role=role)

    def tls_context(self) -> ssl.SSLContext | None:
        if not (self.tls_ca_file or self.tls_cert_file or self.url.startswith("tls://")):
            return None
        context = ssl.create_default_context(cafile=self.tls_ca_file)
        if self.tls_cert_file:
            context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context

    def env(self) -> dict[str, str]:
        """The environment that gives a child process these settings."""
        pairs = {
            "AIM_NATS_URL": self.url,
            "AIM_NATS_ROLE": self.role,
            "AIM_NATS_SEED_FILE": self.seed_file,
            "AIM_NATS_SEED": self.seed,
            "AIM_NATS_TLS_CA_FILE": self.tls_ca_file,
            "AIM_NATS_TLS_CERT_FILE": self.tls_cert_file,
            "AIM_NATS_TLS_KEY_FILE": self.tls_key_file,
        }
        return {k: v for k, v in pairs.items() if v}


class OutageLog:
    """One warning when the connection drops and one when it is back; the errors in between (one per
    reconnect attempt) go to debug, never as tracebacks."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.down = False
        self.errors = 0  # since the connection was last up
        self.client: NatsClient | None = None  # set once connected: a deliberate close is no outage

    async def error(self, exc: Exception) -> None:
        level = logging.WARNING if self.errors == 0 else logging.DEBUG
        self.errors += 1
        log.log(level, "%s: NATS connection problem: %s", self.name, _describe(exc))

    async def disconnected(self) -> None:
        if self.client is not None and (self.client.is_closed or self.client.is_draining):
            return
        if not self.down:
            log.warning("%s: NATS disconnected; reconnecting", self.name)
        self.down = True

    async def reconnected(self) -> None:
        self.down, self.errors = False, 0
        log.info("%s: NATS reconnected", self.name)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def connect_bus(
    settings: BusSettings,
    name: str,
    *,
    forever: bool = True,
    on_error: Callable[[Exception], Awaitable[None]] | None = None,
    **options: Any,
) -> NatsClient:
    """Connect as ``name`` with ``settings``' credentials. ``forever``: keep reconnecting (services);
    otherwise a few attempts (command-line tools)."""
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
        kwargs["nkeys_seed"] = settings.seed_file
    elif settings.seed:
        kwargs["nkeys_seed_str"] = settings.seed
    context = settings.tls_context()
    if context is not None:
        kwargs["tls"] = context
    kwargs.update(options)
    nc = await nats.connect(settings.url, **kwargs)
    outages.client = nc
    return nc
