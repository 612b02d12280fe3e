"""How ``aimctl up`` ends, with or without ``--node``: detached, it leaves the stack running and
returns; in the foreground, it supervises the stack until Ctrl-C or SIGTERM, then stops it."""

from __future__ import annotations

import signal
from typing import Protocol


class Supervised(Protocol):
    def supervise(self, stop: list[bool]) -> None: ...

    def stop(self) -> None: ...


def finish(stack: Supervised, *, ok: bool, detach: bool, detached_message: str) -> int:
    """The exit code of ``aimctl up`` (1 when its demo failed) once the stack is done with."""
    code = 0 if ok else 1
    if detach:
        print(f"\n{detached_message}")
        return code
    print("\nPress Ctrl-C to stop.", flush=True)
    stop = [False]

    def on_signal(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        stack.supervise(stop)
    finally:
        print("Stopping ...", flush=True)
        stack.stop()
    return code
