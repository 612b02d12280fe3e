"""What the health endpoints answer, apart from serving them (:mod:`aimcore.runtime.health` serves
them): the readiness checks the runtime's pieces register and the verdict they add up to, and the
event loop's heartbeat that the liveness answer and the watchdog read.

The pieces that make a replica useful register a check when they start: the NATS connection
(:func:`aimcore.runtime.service.run_service`), each durable consumer (bound or not,
:mod:`aimcore.runtime.consumer`), each informer cache (synced or not, :mod:`aimcore.runtime.informer`),
the watcher's topology and watches. A check answers ``None`` when its piece is ready, or a few
words saying why it is not; ``/readyz`` lists those words. The checks of one process share
:data:`READINESS`, as a process's metrics share one registry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

Check = Callable[[], str | None]
"""``None``: ready; otherwise why not, in a few words."""

OK = 200
UNAVAILABLE = 503


class Readiness:
    """Named checks; adding a check under a name already taken replaces it (a placeholder that
    says "waiting for the stream" is replaced by the consumer's own check once it runs)."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}
        self._lock = threading.Lock()

    def add(self, name: str, check: Check) -> None:
        with self._lock:
            self._checks[name] = check

    def waiting(self, name: str, reason: str) -> None:
        """A placeholder check: ``name`` is not ready for ``reason`` until replaced or removed."""
        self.add(name, lambda: reason)

    def remove(self, name: str) -> None:
        with self._lock:
            self._checks.pop(name, None)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._checks)

    def problems(self) -> list[str]:
        """``name: reason`` of every check not ready, by name."""
        with self._lock:
            checks = sorted(self._checks.items())
        out = []
        for name, check in checks:
            try:
                reason = check()
            except Exception as exc:  # a broken check says so instead of breaking the probe
                reason = f"check failed: {type(exc).__name__}: {exc}"
            if reason:
                out.append(f"{name}: {reason}")
        return out


READINESS = Readiness()
"""The readiness checks of this process."""


def readiness_answer(problems: list[str]) -> tuple[int, str]:
    """The status and plain-text body of ``/readyz``."""
    if not problems:
        return OK, "ready\n"
    return UNAVAILABLE, "not ready:\n" + "".join(f"- {p}\n" for p in problems)


class Heartbeat:
    """When the event loop last ran its heartbeat task. Written on the loop, read by the watchdog
    thread (a float assignment: no lock needed)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.last = clock()

    def beat(self) -> None:
        self.last = self.clock()

    def silent_for(self) -> float:
        return max(0.0, self.clock() - self.last)


def liveness_answer(silent_for: float, limit: float) -> tuple[int, str]:
    """The status and plain-text body of ``/healthz``: the loop answered, and its heartbeat ran
    within ``limit`` seconds."""
    if silent_for > limit:
        return UNAVAILABLE, f"event loop heartbeat silent for {silent_for:.1f}s (limit {limit:g}s)\n"
    return OK, "ok\n"


class StallWatch:
    """The watchdog's bookkeeping: one report per stall (not one per look), and a report again
    once the loop has recovered and stalls anew."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.stalled = False
        self.stalls = 0

    def look(self, silent_for: float) -> bool:
        """True when this look finds a new stall (the watchdog reports it)."""
        if silent_for <= self.limit:
            self.stalled = False
            return False
        if self.stalled:
            return False
        self.stalled = True
        self.stalls += 1
        return True
