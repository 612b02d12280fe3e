"""The composition of the AIM kinds' status: the runtime's composition
(:mod:`aimcore.runtime.composer`) with the AIM rules (:mod:`aimcore.domain.status.rules`).
:data:`AIM_STATUS` is the composer every service's controller and the status service are given;
the functions below are its methods, for readers that compose one report at a time."""

from __future__ import annotations

from aimcore.domain.status.rules import AimRules
from aimcore.runtime.composer import Composer, from_the_future, merge_conditions, rfc3339

AIM_STATUS = Composer(AimRules())
"""How a report becomes the status of an object of an AIM kind (or of an LLMKube ``Model``, which
derives nothing)."""

compose = AIM_STATUS.compose
compose_all = AIM_STATUS.compose_all
is_current = AIM_STATUS.is_current
status_change = AIM_STATUS.status_change
status_patch = AIM_STATUS.status_patch

__all__ = [
    "AIM_STATUS",
    "compose",
    "compose_all",
    "from_the_future",
    "is_current",
    "merge_conditions",
    "rfc3339",
    "status_change",
    "status_patch",
]
