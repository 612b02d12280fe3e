"""How a client reaches the bus (:mod:`aimcore.runtime.bus` connects with these): the server, the
role's NKey seed, and TLS; and how many copies the bus keeps of each stream and bucket (declared by
the watcher, :func:`aimcore.api.bus.topology.ensure_topology`)."""

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
        form="a NATS URL (nats:// or tls://), or several comma-separated",
        description="The NATS server; a clustered bus may be named by several of its servers (the "
        "client learns the others from the one it reaches).",
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

    replicas: int = setting(
        1,
        env="AIM_NATS_REPLICAS",
        ge=1,
        le=5,
        form="a number from 1 to 5 (at most the number of NATS servers)",
        description="How many NATS servers keep each stream and KV bucket (JetStream replicas): 1 "
        "for a single server, 3 for a three-node cluster. The watcher declares them so at start-up "
        "and changes an existing stream or bucket to this count.",
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
        pairs = {v.names[0]: getattr(self, v.field) for v in self.variables() if v.field != "replicas"}
        if self.replicas != 1:  # only the watcher's declaration reads it; passed on when set
            pairs["AIM_NATS_REPLICAS"] = self.replicas
        return {k: str(v) for k, v in pairs.items() if v}
