"""The settings the watcher reads beyond every service's (:data:`aimcore.runtime.settings.COMMON`):
the history its streams keep (it declares them)."""

from __future__ import annotations

from aimcore.runtime.settings.history import HistorySettings

SETTINGS = (HistorySettings,)
