"""The settings of a download Job's ``aim-download``: what the cache service puts in the Job's
environment besides the model cache's own env (which is the user's, handed to the sources as it is,
and is not configuration): the progress token, how to reach the bus, the log format, and the
outbound policy (:class:`~aimcore.runtime.settings.outbound.OutboundSettings`). :func:`load_job` reads
them all, once, when the program starts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from aim_cache_jobs import contract
from aimcore.domain.outbound import OutboundPolicy
from aimcore.runtime.settings import AimSettings, BusSettings
from aimcore.runtime.settings.base import setting
from aimcore.runtime.settings.outbound import OutboundSettings
from aimcore.runtime.settings.process import LogFormat


class DownloadJobSettings(AimSettings):
    """A download Job (`aim-download`): the cache service sets these on the Jobs it creates. With
    `--object`, `AIM_NATS_URL` and `AIM_PROGRESS_TOKEN` set, progress is offered on NATS; NATS being
    unreachable never fails the download."""

    title = "Download Jobs"

    progress_token: str | None = setting(
        env=contract.PROGRESS_TOKEN_ENV,
        secret=True,
        form="a token",
        description="The token that binds the Job's progress reports to its object (the cache "
        "service checks it before relaying them); without it no progress is published.",
    )
    nats_url: str | None = setting(
        env=contract.NATS_URL_ENV,
        form="a NATS URL",
        shown_default="unset: no progress",
        description="Where progress is offered.",
    )
    nats_role: str = setting(
        contract.DOWNLOAD_ROLE,
        env=contract.NATS_ROLE_ENV,
        description="The bus role of the Job's seed.",
    )
    nats_seed_file: str | None = setting(
        env="AIM_NATS_SEED_FILE", form="a path", description="The role's seed, a file."
    )
    nats_seed: str | None = setting(
        env=contract.NATS_SEED_ENV, secret=True, form="an NKey seed", description="The role's seed itself."
    )
    nats_tls_ca_file: str | None = setting(
        env="AIM_NATS_TLS_CA_FILE", form="a path", description="The CA that verifies the server."
    )
    log_format: LogFormat = setting(
        "text",
        env=contract.LOG_FORMAT_ENV,
        form="text or json (any case)",
        description="The Job's log lines on stderr: plain `text`, or the services' `json` lines "
        "(the cache service passes its own).",
    )

    def bus(self) -> BusSettings:
        """How the Job connects (as the ``download`` role unless told otherwise; no client
        certificate)."""
        return BusSettings(
            url=self.nats_url or "",
            role=self.nats_role,
            seed_file=self.nats_seed_file,
            seed=self.nats_seed,
            tls_ca_file=self.nats_tls_ca_file,
            tls_cert_file=None,
            tls_key_file=None,
        )


SETTINGS = (DownloadJobSettings, OutboundSettings)
"""Every concern ``aim-download`` reads."""


@dataclass(frozen=True)
class JobStart:
    """What ``aim-download`` reads when it starts: its settings, its outbound policy (with the
    proxies), and its environment as a whole, which is also the model cache's env (the user's:
    tokens and endpoints the sources read, handed to them as data, never read as configuration)."""

    job: DownloadJobSettings
    policy: OutboundPolicy
    environment: Mapping[str, str] = field(repr=False)


def load_job(env: Mapping[str, str] | None = None) -> JobStart:
    """Read and validate the Job's settings from ``env`` (default: the process environment); a bad
    value raises :class:`~aimcore.runtime.settings.SettingsError`."""
    environment = os.environ if env is None else env
    return JobStart(
        DownloadJobSettings.from_env(environment), OutboundPolicy.from_env(environment), environment
    )
