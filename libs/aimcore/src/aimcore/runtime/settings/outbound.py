"""The operator-wide outbound address policy's settings (the policy itself, and what it refuses, is
:mod:`aimcore.domain.outbound`)."""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BeforeValidator

from aimcore.runtime.settings.base import AimSettings, setting, split_commas, strict_flag

ALLOWED_HOSTS_ENV: Final = "AIM_OUTBOUND_ALLOWED_HOSTS"
ALLOW_PRIVATE_ENV: Final = "AIM_OUTBOUND_ALLOW_PRIVATE"
PLAIN_HTTP_ENV: Final = "AIM_REGISTRY_PLAIN_HTTP"


class OutboundSettings(AimSettings):
    """Which hosts and addresses the operator's own pods may connect to when a spec or a server
    names them (see [security.md](security.md#outbound-address-policy)). The cache service passes its
    policy to the download Jobs it creates; a model cache's `env` cannot change it."""

    title = "Outbound address policy"

    allowed_hosts: Annotated[tuple[str, ...], BeforeValidator(split_commas)] = setting(
        (),
        env=ALLOWED_HOSTS_ENV,
        form="comma-separated host names or addresses",
        description="Hosts that skip every address check (exact match, any case, trailing dot "
        "ignored), e.g. an in-cluster mirror.",
    )
    allow_private: Annotated[bool, BeforeValidator(strict_flag)] = setting(
        False,
        env=ALLOW_PRIVATE_ENV,
        form="true or false (also 1/0, yes/no, on/off)",
        description="Allow loopback, private and carrier-grade NAT addresses (in-cluster "
        "registries and mirrors); link-local and cloud metadata addresses stay refused.",
    )
    plain_http_registries: Annotated[tuple[str, ...], BeforeValidator(split_commas)] = setting(
        (),
        env=PLAIN_HTTP_ENV,
        form="comma-separated registry hosts (host or host:port, as image references name them)",
        description="Registries the operator reads image metadata from over plain HTTP, e.g. an "
        "in-cluster registry without TLS (which the outbound policy must also admit); every other "
        "registry is spoken to over HTTPS, loopback ones excepted.",
    )
