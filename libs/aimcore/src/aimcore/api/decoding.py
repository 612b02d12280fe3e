"""Reading a stored object is not judging it: the validation context of a read, and field rules
that step aside for it.

Why: every process reads objects it does not own (the deployer reads models and templates, the
status service reads what the others wrote) as the API server stored them, as a Go controller
decodes an object into its struct; the rules only the services check (reference syntax,
quantities, a source's identifiers) are reported once, by the object's owner
(:mod:`aimcore.api.crds.validation`). This module imports no CRD model, so the rule modules under
:mod:`aimcore.api` (:mod:`aimcore.api.sourcerules`) can use it as the models do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import AfterValidator, ValidationInfo

T = TypeVar("T")

DECODE: dict[str, Any] = {"decode": True}
"""The validation context of a read (``model_validate(obj, context=DECODE)``)."""


def decoding(info: ValidationInfo) -> bool:
    """Whether a stored object is being read, not judged: the rules only services check (CEL,
    reference syntax, quantities) are reported by the object's owner, and every other reader
    reads it as the API server stored it, as a Go controller decodes it into its struct."""
    return isinstance(info.context, dict) and bool(info.context.get("decode"))


def rule(check: Callable[[T], T]) -> AfterValidator:
    """``check`` (returns the value or raises ``ValueError``) as a field rule that a read skips."""

    def judge(value: T, info: ValidationInfo) -> T:
        return value if decoding(info) else check(value)

    return AfterValidator(judge)
