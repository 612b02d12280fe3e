"""Conditions built one way by every reconciler: a step's verdict (:func:`condition`), and a
child the API server refused (:func:`refused_condition`, :func:`refused_reason`), so a refusal
reads the same whichever service wrote the child (``<Child>CreateRejected`` for its content,
``<Child>CreateForbidden`` for the operator's permissions, with the server's message).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import KindRef
from aimcore.runtime.refusals import Refusal

__all__ = ["condition", "refused_condition", "refused_message", "refused_reason"]


def condition(type_: str, ok: bool, reason: str, message: str = "") -> ConditionReport:
    """A condition that is True or False (``Unknown`` is said with :class:`ConditionReport`)."""
    return ConditionReport(type=type_, status="True" if ok else "False", reason=reason, message=message)


def refused_reason(child: str, found: Refusal) -> str:
    """``<child>CreateForbidden`` (permissions) or ``<child>CreateRejected`` (the body's content)."""
    return f"{child}Create{'Forbidden' if found.forbidden else 'Rejected'}"


def refused_condition(
    type_: str, child: str, kind: KindRef, body: Mapping[str, Any], found: Refusal, *, update: bool
) -> ConditionReport:
    """The step's condition when the API server refused its child (:func:`refused_reason`), with
    the server's message and whether it refused to create or to update ``body``."""
    return condition(
        type_, False, refused_reason(child, found), refused_message(kind, body, found, update=update)
    )


def refused_message(kind: KindRef, body: Mapping[str, Any], found: Refusal, *, update: bool) -> str:
    """What :func:`refused_condition` says: the child, whether it was a create or an update, and
    the API server's message (for a reconciler whose status is not made of conditions)."""
    verb = "update" if update else "create"
    name = (body.get("metadata") or {}).get("name")
    return f"the API server refused to {verb} {kind.kind} {name}: {found.describe()}"
