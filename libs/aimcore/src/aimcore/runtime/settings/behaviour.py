"""The operator-wide choice between the seeds' behaviour and the released original's where they
differ (:class:`aimcore.api.behaviour.Behaviour`). Every service reads it, so a mixed deployment
cannot follow two generations at once."""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BeforeValidator

from aimcore.api.behaviour import Behaviour
from aimcore.runtime.settings.base import AimSettings, setting

BEHAVIOUR_ENV: Final = "AIM_BEHAVIOUR"


def _behaviour(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return value.strip().lower() or Behaviour.SEEDS.value


class BehaviourSettings(AimSettings):
    """Where the seeds and the released AIM Engine (v0.2.1 on) disagree, which one the operator
    follows (see [status.md](status.md#two-generations-of-the-original))."""

    title = "Behaviour"

    behaviour: Annotated[Behaviour, BeforeValidator(_behaviour)] = setting(
        Behaviour.SEEDS,
        env=BEHAVIOUR_ENV,
        form="seeds or released",
        description="`seeds`: the seeds' behaviour where the two generations differ (the default). "
        "`released`: the released original's (the default caching mode `Shared`, the cache mount "
        "path `/workspace/cache`, `AIMArtifact` created for template caches, the legacy caching "
        "values mapped to Shared/Dedicated, custom-model images inspected). Set it to the same "
        "value on every service.",
    )
