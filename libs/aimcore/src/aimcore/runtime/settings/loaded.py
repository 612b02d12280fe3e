"""The settings a process holds: every concern it reads, read and validated once, at start-up
(:meth:`Settings.load`), then carried by the service context and handed to what needs each
concern. Nothing reads a concern again where it is used, so a value cannot differ between two
readers, a bad value can only stop the process at start-up, and a test hands code the settings it
means instead of setting the environment."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar, cast

from aimcore.api.behaviour import Behaviour
from aimcore.runtime.settings.base import AimSettings
from aimcore.runtime.settings.behaviour import BehaviourSettings
from aimcore.runtime.settings.bus import BusSettings
from aimcore.runtime.settings.health import HealthSettings
from aimcore.runtime.settings.process import ProcessSettings, ProxySettings, TracingSettings

COMMON: tuple[type[AimSettings], ...] = (
    ProcessSettings,
    BusSettings,
    TracingSettings,
    ProxySettings,
    HealthSettings,
    BehaviourSettings,
)
"""The concerns every service reads (:func:`aimcore.runtime.service.run_service` loads them)."""

C = TypeVar("C", bound=AimSettings)


@dataclass(frozen=True)
class Settings:
    """Every concern a process read at start-up: the process and its bus (every service's, also as
    attributes), and the others by their class (:meth:`get`)."""

    process: ProcessSettings
    bus: BusSettings
    concerns: Mapping[type[AimSettings], AimSettings] = field(default_factory=dict, repr=False)

    @classmethod
    def load(
        cls, concerns: Iterable[type[AimSettings]] = (), env: Mapping[str, str] | None = None
    ) -> Settings:
        """:data:`COMMON` and ``concerns``, read from ``env`` (default: the process environment)
        and validated; a bad value raises :class:`~aimcore.runtime.settings.base.SettingsError`."""
        loaded = {concern: concern.from_env(env) for concern in dict.fromkeys((*COMMON, *concerns))}
        process, bus = cast(ProcessSettings, loaded[ProcessSettings]), cast(BusSettings, loaded[BusSettings])
        return cls(process, bus, loaded)

    def get(self, concern: type[C]) -> C:
        """The concern read at start-up. One that was not (not in :data:`COMMON` nor in the
        service's ``SETTINGS``) is a programming error, said as such rather than read now."""
        if concern is ProcessSettings:
            return cast(C, self.process)
        if concern is BusSettings:
            return cast(C, self.bus)
        try:
            return cast(C, self.concerns[concern])
        except KeyError:
            raise LookupError(
                f"{concern.__name__} was not read at start-up: list it in the service's SETTINGS"
            ) from None

    @property
    def behaviour(self) -> Behaviour:
        """Which generation of the original the operator follows where the two differ."""
        return self.get(BehaviourSettings).behaviour

    @property
    def kubeconfig(self) -> str | None:
        return self.process.kubeconfig

    @property
    def system_namespace(self) -> str:
        return self.process.system_namespace

    @property
    def resync_seconds(self) -> float:
        return self.process.resync_seconds

    @property
    def log_level(self) -> str:
        return self.process.log_level

    @property
    def log_format(self) -> Literal["text", "json"]:
        return self.process.log_format

    @property
    def reconcile_journal(self) -> str | None:
        return self.process.reconcile_journal

    @property
    def nats_url(self) -> str:
        return self.bus.url
