"""The one root of the operator's errors, and how a handler's outcome maps to a JetStream
acknowledgement (docs/design.md#acks-and-backoff).

Every error the operator raises on purpose derives from :class:`AimError`, which says two things
about it, spelled the same everywhere:

- ``reason``: the condition reason a service reports for it (``ImageNotFound``, ``InvalidSpec``...;
  a class-level default, which an instance may override);
- ``transient``: whether retrying later, with the same input, may help (a dropped connection, a
  registry answering 503, a conflict) or not (an invalid spec, missing credentials, a refusal only
  a user or an administrator can lift).

The acknowledgement of a message (:func:`decide`):

- success → ack;
- a permanent error (an :class:`AimError` that is not ``transient``, such as :class:`PermanentError`:
  invalid spec, a reference that cannot exist) → ack, the caller reports a condition; never
  redelivered in a hot loop;
- a transient error (:class:`TransientError`, any ``transient`` :class:`AimError`) or any unexpected
  exception → nak with a jittered exponential delay (:data:`NAK_BACKOFF`), until the consumer's
  ``max_deliver`` gives up (the periodic resync brings the object back later).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypeGuard

from aimcore.api.backoff import Backoff

INTERNAL_ERROR = "InternalError"


class AimError(Exception):
    """The root of every domain error: ``reason`` (the condition reason reported for it) and
    ``transient`` (whether retrying later with the same input may help) are class-level defaults an
    instance may override; ``message`` is safe to show anywhere (status, events, logs)."""

    reason: str = INTERNAL_ERROR
    """A class without a reason of its own is never reported as a condition (or an unexpected
    failure): ``InternalError``, which the status rules read as Degraded."""
    transient: bool = False

    def __init__(
        self, message: str = "", *, reason: str | None = None, transient: bool | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason
        if transient is not None:
            self.transient = transient


class PermanentError(AimError):
    """Retrying cannot help until the input changes."""

    transient = False

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, reason=reason)


class TransientError(AimError):
    """Retrying later may help (network, conflicts, a dependency not there yet); ``delay`` (seconds),
    when given, replaces the backoff."""

    transient = True

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class AckAction(StrEnum):
    ACK = "ack"
    NAK = "nak"


@dataclass(frozen=True)
class AckDecision:
    action: AckAction
    delay: float = 0.0


NAK_BACKOFF = Backoff(base=0.5, cap=60.0)
"""Redeliveries of a failed message: 0.5 s doubling to 60 s (equal jitter: each delay is between
half and all of that)."""


def is_permanent(error: BaseException) -> TypeGuard[AimError]:
    """An error the operator raised on purpose that retrying with the same input cannot fix."""
    return isinstance(error, AimError) and not error.transient


def decide(error: BaseException | None, attempt: int) -> AckDecision:
    """The acknowledgement for a handler that finished with ``error`` on delivery ``attempt``."""
    if error is None or is_permanent(error):
        return AckDecision(AckAction.ACK)
    if isinstance(error, TransientError) and error.delay is not None:
        return AckDecision(AckAction.NAK, error.delay)
    return AckDecision(AckAction.NAK, NAK_BACKOFF.delay(attempt))
