"""How a handler's outcome maps to a JetStream acknowledgement (DESIGN §2.7).

- success → ack;
- :class:`PermanentError` (invalid spec, a reference that cannot exist) → ack, the caller reports a
  condition; never redelivered in a hot loop;
- :class:`TransientError` or any unexpected exception → nak with a jittered exponential delay
  (:data:`NAK_BACKOFF`), until the consumer's ``max_deliver`` gives up (the periodic resync brings
  the object back later).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from aimcore.api.backoff import Backoff


class PermanentError(Exception):
    """Retrying cannot help until the input changes."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class TransientError(Exception):
    """Retrying later may help (network, conflicts, a dependency not there yet)."""

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


def decide(error: BaseException | None, attempt: int) -> AckDecision:
    """The acknowledgement for a handler that finished with ``error`` on delivery ``attempt``."""
    if error is None or isinstance(error, PermanentError):
        return AckDecision(AckAction.ACK)
    if isinstance(error, TransientError) and error.delay is not None:
        return AckDecision(AckAction.NAK, error.delay)
    return AckDecision(AckAction.NAK, NAK_BACKOFF.delay(attempt))
