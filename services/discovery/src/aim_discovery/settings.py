"""The settings discovery reads beyond every service's (:data:`aimcore.runtime.settings.COMMON`):
the outbound address policy of its registry connections."""

from __future__ import annotations

from aimcore.runtime.settings.outbound import OutboundSettings

SETTINGS = (OutboundSettings,)
