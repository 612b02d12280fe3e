"""The status service's own settings (beyond every service's, :data:`aimcore.runtime.settings.COMMON`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from aim_status.coalesce import DEFAULT_WINDOW
from aimcore.runtime.settings import AimSettings
from aimcore.runtime.settings.base import setting


class StatusSettings(AimSettings):
    """How the status service writes progress."""

    title = "Status service"

    coalesce_seconds: Annotated[float, AfterValidator(lambda v: max(0.0, v))] = setting(
        DEFAULT_WINDOW,
        env="AIM_STATUS_COALESCE_SECONDS",
        form="seconds, a number (0 or less: no coalescing)",
        description="At most one status write per object per this many seconds for `progress` "
        "reports, per replica; the last value always lands.",
    )


SETTINGS = (StatusSettings,)
"""Every concern the status service reads beyond the common ones."""
