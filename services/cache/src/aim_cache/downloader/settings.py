"""The settings of a download Job's ``aim-download``: what the cache service puts in the Job's
environment besides the model cache's own env (which is the user's, handed to the sources as it is,
and is not configuration): the progress token, how to reach the bus, and the outbound policy
(:class:`~aimcore.runtime.settings.outbound.OutboundSettings`)."""

from __future__ import annotations

from aimcore.runtime.settings import AimSettings, BusSettings
from aimcore.runtime.settings.base import setting
from aimcore.runtime.settings.outbound import OutboundSettings


class DownloadJobSettings(AimSettings):
    """A download Job (`aim-download`): the cache service sets these on the Jobs it creates. With
    `--object`, `AIM_NATS_URL` and `AIM_PROGRESS_TOKEN` set, progress is offered on NATS; NATS being
    unreachable never fails the download."""

    title = "Download Jobs"

    progress_token: str | None = setting(
        env="AIM_PROGRESS_TOKEN",
        secret=True,
        form="a token",
        description="The token that binds the Job's progress reports to its object (the cache "
        "service checks it before relaying them); without it no progress is published.",
    )
    nats_url: str | None = setting(
        env="AIM_NATS_URL",
        form="a NATS URL",
        shown_default="unset: no progress",
        description="Where progress is offered.",
    )
    nats_role: str = setting(
        "download",
        env="AIM_NATS_ROLE",
        description="The bus role of the Job's seed.",
    )
    nats_seed_file: str | None = setting(
        env="AIM_NATS_SEED_FILE", form="a path", description="The role's seed, a file."
    )
    nats_seed: str | None = setting(
        env="AIM_NATS_SEED", secret=True, form="an NKey seed", description="The role's seed itself."
    )
    nats_tls_ca_file: str | None = setting(
        env="AIM_NATS_TLS_CA_FILE", form="a path", description="The CA that verifies the server."
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
