"""How much history the bus keeps (read by the watcher, which declares the streams; the retention
itself is part of the bus contract, :class:`aimcore.api.bus.topology.Retention`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from aimcore.api.bus.topology import DAY, GIB, Retention
from aimcore.runtime.settings.base import AimSettings, setting


def _whole(value: Any) -> Any:
    """Bytes may be written as any number (``1e9``); the fraction is dropped."""
    return int(float(value)) if isinstance(value, str) else value


class HistorySettings(AimSettings):
    """History kept for audit and replay in each of the `AIM_EVENTS`, `AIM_STATUS` and
    `AIM_DECISIONS` streams (see [audit.md](audit.md)); changing them updates the streams when
    the watcher restarts."""

    title = "History retention"

    max_age: float = setting(
        7 * DAY,
        env="AIM_HISTORY_MAX_AGE",
        ge=0,
        form="seconds, a number >= 0 (0: no age limit)",
        shown_default="`604800` (7 days)",
        description="How long a record is kept.",
    )
    max_bytes: Annotated[int, BeforeValidator(_whole)] = setting(
        GIB,
        env="AIM_HISTORY_MAX_BYTES",
        form="bytes, a number (0 or less: no size limit)",
        shown_default="`1073741824` (1 GiB)",
        description="The maximum size of each stream; the oldest records go first.",
    )

    def retention(self) -> Retention:
        return Retention(max_age=self.max_age, max_bytes=self.max_bytes)
