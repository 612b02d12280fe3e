"""How a handler's outcome maps to a JetStream acknowledgement (DESIGN §2.7).

- success → ack;
- :class:`PermanentError` (invalid spec, a reference that cannot exist) → ack, the caller reports a
  condition; never redelivered in a hot loop;
- :class:`TransientError` or any unexpected exception → nak with an exponential delay, until the
  consumer's ``max_deliver`` gives up (the periodic resync brings the object back later).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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


BASE_DELAY = 0.5
MAX_DELAY = 60.0


def backoff(attempt: int, base: float = BASE_DELAY, cap: float = MAX_DELAY) -> float:
    """Delay before delivery number ``attempt + 1`` (attempt counts from 1)."""
    return float(min(cap, base * (2 ** max(0, attempt - 1))))


def decide(error: BaseException | None, attempt: int) -> AckDecision:
    """The acknowledgement for a handler that finished with ``error`` on delivery ``attempt``."""
    if error is None or isinstance(error, PermanentError):
        return AckDecision(AckAction.ACK)
    if isinstance(error, TransientError) and error.delay is not None:
        return AckDecision(AckAction.NAK, error.delay)
    return AckDecision(AckAction.NAK, backoff(attempt))
