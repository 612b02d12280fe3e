"""The status service's own settings (beyond every service's, :data:`aimcore.runtime.settings.COMMON`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from aim_status.coalesce import DEFAULT_WINDOW
from aimcore.runtime.settings import AimSettings
from aimcore.runtime.settings.base import setting


class StatusSettings(AimSettings):
    """How the status service writes progress and Events."""

    title = "Status service"

    coalesce_seconds: Annotated[float, AfterValidator(lambda v: max(0.0, v))] = setting(
        DEFAULT_WINDOW,
        env="AIM_STATUS_COALESCE_SECONDS",
        form="seconds, a number (0 or less: no coalescing)",
        description="At most one status write per object per this many seconds for `progress` "
        "reports, per replica; the last value always lands.",
    )
    events_qps: float = setting(
        20.0,
        env="AIM_STATUS_EVENTS_QPS",
        form="writes per second, a number (0 or less: no limit)",
        description="Kubernetes Event writes (creates and count patches) per second, per replica; "
        "Events beyond it wait in the recorder's queue (1,000; dropped and counted when full).",
    )
    events_burst: int = setting(
        30,
        env="AIM_STATUS_EVENTS_BURST",
        ge=1,
        description="Event writes allowed at once above `AIM_STATUS_EVENTS_QPS`.",
    )


SETTINGS = (StatusSettings,)
"""Every concern the status service reads beyond the common ones."""
