"""The operator's configuration, one settings class per concern (:mod:`.base` says how
they read the environment). The concerns of the runtime library live here: the process and its
bus (every service), tracing, proxies and health (every service), history retention (the watcher,
:mod:`.history`) and the outbound address policy (:mod:`.outbound`), and which generation of the original the
operator follows where the two differ (:mod:`.behaviour`, every service). Each service's own
concerns are in its ``settings`` module, whose ``SETTINGS`` names every concern beyond
:data:`COMMON` that the service reads (validated at start-up, listed in ``docs/settings.md``).

A service reads them all once, at start-up, into one :class:`Settings` (:mod:`.loaded`) that its
context holds; code is handed what it needs from there and never reads a concern itself."""

from __future__ import annotations

from aimcore.runtime.settings.base import AimSettings, SettingsError, Variable
from aimcore.runtime.settings.behaviour import BehaviourSettings
from aimcore.runtime.settings.bus import BusSettings
from aimcore.runtime.settings.health import HealthSettings
from aimcore.runtime.settings.loaded import COMMON, Settings
from aimcore.runtime.settings.process import ProcessSettings, ProxySettings, TracingSettings

__all__ = [
    "COMMON",
    "AimSettings",
    "BehaviourSettings",
    "BusSettings",
    "HealthSettings",
    "ProcessSettings",
    "ProxySettings",
    "Settings",
    "SettingsError",
    "TracingSettings",
    "Variable",
]
