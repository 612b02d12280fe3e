"""The one retry delay of the operator: exponential backoff with jitter.

Every retry loop (a nak'd message, a broken watch, a bus that is down, a failed byte range of a
download, a failed Job, a registry that does not answer) waits :func:`backoff`: ``base`` doubling
with each failure, at most ``cap``, with **equal jitter** — a delay is drawn between half and all of
that, so replicas, workers and objects that failed together do not retry together, and a delay never
exceeds the documented schedule nor falls below half of it (a schedule documented as "30 s doubling
to 15 min" waits 15-30 s after the first failure and 7.5-15 min once capped).

Where the jitter comes from (``jitter``):

- a callable returning a uniform number in ``[0, 1)`` (default :func:`random.random`): for a loop
  that sleeps right away;
- a string key (an object's uid, a Job's name): the draw is derived from the key and the attempt, so
  the same attempt of the same object always waits the same time — in every replica, after a restart
  and on every reconcile that recomputes a deadline from a recorded failure time (a status message
  naming the next attempt's time then stays the same across reconciles);
- ``None``: no jitter, the exact schedule (tests that assert delays, and the documentation).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Backoff", "Jitter", "backoff", "exponential", "jitter_key"]

Jitter = Callable[[], float] | str | None
"""A source of uniform draws in ``[0, 1)``, a stable key, or ``None`` (no jitter)."""

_MAX_EXPONENT = 1000  # far past any cap; keeps ``2.0 ** n`` from overflowing


def exponential(attempt: int, base: float, cap: float) -> float:
    """``base``·2^(attempt-1), at most ``cap``; 0 before any failure (``attempt`` < 1)."""
    if attempt < 1:
        return 0.0
    return float(min(base * 2.0 ** min(attempt - 1, _MAX_EXPONENT), cap))


def _draw(jitter: Callable[[], float] | str, attempt: int) -> float:
    if isinstance(jitter, str):
        digest = hashlib.sha256(f"{jitter}\0{attempt}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2.0**64
    return min(max(float(jitter()), 0.0), 1.0)


def backoff(attempt: int, base: float, cap: float, *, jitter: Jitter = random.random) -> float:
    """The delay after failure number ``attempt`` (counting from 1): :func:`exponential`, then with
    equal jitter a value between half and all of it (see the module docstring for ``jitter``)."""
    delay = exponential(attempt, base, cap)
    if jitter is None or delay <= 0.0:
        return delay
    return delay * (0.5 + 0.5 * _draw(jitter, attempt))


def jitter_key(obj: Mapping[str, Any]) -> str:
    """The stable jitter key of a Kubernetes object: its uid (``namespace/name`` without one)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace') or ''}/{meta.get('name') or ''}")


@dataclass(frozen=True)
class Backoff:
    """A named schedule (``base`` doubling to ``cap``), declared once next to what it retries."""

    base: float
    cap: float

    def delay(self, attempt: int, *, jitter: Jitter = random.random) -> float:
        return backoff(attempt, self.base, self.cap, jitter=jitter)
