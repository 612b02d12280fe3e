"""Which generation of the original the operator behaves as where the two disagree: the seeds'
(early 2026, the default) or the released AIM Engine's (v0.2.1 onwards). One value, read once by
every service (:class:`aimcore.runtime.settings.behaviour.BehaviourSettings`) and handed to the code
whose answer depends on it, so no two services can disagree about it. docs/status.md lists every
difference it selects."""

from __future__ import annotations

from enum import StrEnum


class Behaviour(StrEnum):
    """The generation the operator follows where the seeds and the released original differ."""

    SEEDS = "seeds"
    """The seeds' behaviour (the default)."""
    RELEASED = "released"
    """The released original's (aim-engine v0.2.1 and later)."""

    @property
    def released(self) -> bool:
        return self is Behaviour.RELEASED
