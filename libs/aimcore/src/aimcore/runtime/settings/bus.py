"""How a client reaches the bus (:mod:`aimcore.runtime.bus` connects with these): the server, the
role's NKey seed, and TLS."""

from __future__ import annotations

import ssl
from typing import Any

from aimcore.runtime.settings.base import AimSettings, setting

DEFAULT_URL = "nats://127.0.0.1:4222"


class BusSettings(AimSettings):
    """The NATS connection of a service (and of `aimctl`)."""

    title = "Bus (NATS)"

    url: str = setting(
        DEFAULT_URL,
        env="AIM_NATS_URL",
        form="a NATS URL (nats:// or tls://)",
        description="The NATS server.",
    )
    role: str | None = setting(
        env="AIM_NATS_ROLE",
        shown_default="the service's name",
        description="The bus role the seed belongs to (services: their name; `aimctl`: `reader`), "
        "for the inbox prefix the role may subscribe to.",
    )
    seed_file: str | None = setting(
        env="AIM_NATS_SEED_FILE",
        form="a path",
        description="The role's NKey seed, a file (a mounted Secret). Without a seed the client "
        "connects anonymously, which a server with authorization refuses.",
    )
    seed: str | None = setting(
        env="AIM_NATS_SEED",
        secret=True,
        form="an NKey seed",
        description="The seed itself, when there is no `AIM_NATS_SEED_FILE` (download Jobs get theirs so).",
    )
    tls_ca_file: str | None = setting(
        env="AIM_NATS_TLS_CA_FILE",
        form="a path",
        description="The CA that verifies the server (TLS is also used for a `tls://` URL, "
        "verified against the system's CAs).",
    )
    tls_cert_file: str | None = setting(
        env="AIM_NATS_TLS_CERT_FILE",
        form="a path",
        description="A client certificate, where the server asks for one.",
    )
    tls_key_file: str | None = setting(
        env="AIM_NATS_TLS_KEY_FILE",
        form="a path",
        description="The client certificate's key.",
    )

    def replace(self, **changes: Any) -> BusSettings:
        """These settings with ``changes`` (field names)."""
        return self.model_copy(update=changes)

    def as_role(self, role: str) -> BusSettings:
        """These settings for ``role`` unless a role was configured explicitly."""
        return self if self.role else self.replace(role=role)

    def tls_context(self) -> ssl.SSLContext | None:
        if not (self.tls_ca_file or self.tls_cert_file or self.url.startswith("tls://")):
            return None
        context = ssl.create_default_context(cafile=self.tls_ca_file)
        if self.tls_cert_file:
            context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context

    def env(self) -> dict[str, str]:
        """The environment that gives a child process these settings."""
        pairs = {v.names[0]: getattr(self, v.field) for v in self.variables()}
        return {k: v for k, v in pairs.items() if v}
