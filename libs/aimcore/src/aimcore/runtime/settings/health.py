"""Where a service answers its probes and its metrics (:mod:`aimcore.runtime.health`): the port
and address of its small HTTP server, and how long its event loop may stall before the liveness
probe fails."""

from __future__ import annotations

from aimcore.runtime.settings.base import AimSettings, setting

DEFAULT_PORT = 8080


class HealthSettings(AimSettings):
    """Health and metrics: every service serves `/healthz`, `/readyz` and `/metrics` on one port
    (see [operations.md](operations.md#health-and-metrics))."""

    title = "Health and metrics"

    port: int = setting(
        DEFAULT_PORT,
        env="AIM_HEALTH_PORT",
        ge=0,
        le=65535,
        form="a TCP port, 0 to 65535 (0: no health or metrics server)",
        description="The port of `/healthz`, `/readyz` and `/metrics`.",
    )
    address: str = setting(
        "0.0.0.0",
        env="AIM_HEALTH_ADDRESS",
        min_length=1,
        form="an IP address or host name to bind",
        description="The address the health and metrics server listens on (`0.0.0.0`: every "
        "interface, as a pod needs for its probes; `127.0.0.1`: this machine only).",
    )
    stall_seconds: float = setting(
        30.0,
        env="AIM_HEALTH_STALL_SECONDS",
        gt=0,
        form="seconds, a number > 0",
        description="How long the event loop may go without running its heartbeat before "
        "`/healthz` fails and the stuck loop's stack is logged.",
    )
