"""What the runtime itself reports about an object it cannot hand to a reconcile: a spec that does
not read as its kind (``InvalidSpec``), an object too large for the bus (``ObjectTooLarge``), and the
report that withdraws either once the object is usable again. A controller never reports these."""

from __future__ import annotations

from typing import Any

from aimcore.api.bus import mirror
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.crds.validation import INVALID_SPEC
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime.composer import Composer

FAILED = "Failed"


def failed_fields(ref: KindRef, composer: Composer) -> dict[str, Any]:
    """The top-level status field that says "failed" for a kind (its rules name the field)."""
    return {composer.state_field(ref): FAILED}


def invalid_spec_conditions(message: str, reason: str = INVALID_SPEC) -> list[ConditionReport]:
    return [
        ConditionReport(type="ConfigValid", status="False", reason=reason, message=message),
        ConditionReport(type="Ready", status="False", reason=reason, message=message),
    ]


RUNTIME_VERDICTS = frozenset({INVALID_SPEC, mirror.OBJECT_TOO_LARGE})
"""The ``ConfigValid`` reasons the runtime itself reports (and withdraws), not a controller."""


def spec_valid_again(ref: KindRef, composer: Composer) -> tuple[list[ConditionReport], dict[str, Any]]:
    """What undoes the runtime's own verdict (``InvalidSpec``, ``ObjectTooLarge``) once the object
    is usable again; the controller's reconcile, which runs right after, reports the real state."""
    conditions = [
        ConditionReport(type="ConfigValid", status="True", reason="ConfigurationValid"),
        ConditionReport(
            type="Ready", status="False", reason="Reconciling", message="The spec is valid again"
        ),
    ]
    return conditions, {composer.state_field(ref): "Pending"}


def rejected_by_runtime(obj: Obj) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "ConfigValid" and c.get("reason") in RUNTIME_VERDICTS for c in conditions)
