"""Process settings shared by every service, read from the environment (12-factor)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from aimcore.runtime.bus import BusSettings


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


@dataclass(frozen=True)
class Settings:
    bus: BusSettings = field(default_factory=BusSettings)
    kubeconfig: str | None = field(
        default_factory=lambda: os.environ.get("AIM_KUBECONFIG") or os.environ.get("KUBECONFIG") or None
    )
    system_namespace: str = field(default_factory=lambda: _env("AIM_SYSTEM_NAMESPACE", "aim-system"))
    resync_seconds: float = field(default_factory=lambda: float(_env("AIM_RESYNC_SECONDS", "600")))
    log_level: str = field(default_factory=lambda: _env("AIM_LOG_LEVEL", "INFO"))

    @property
    def nats_url(self) -> str:
        return self.bus.url
