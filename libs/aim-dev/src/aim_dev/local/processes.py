"""Child processes that never outlive their parent.

Every server is started in its own process group with ``PR_SET_PDEATHSIG`` = SIGKILL, so a test run
or ``aimctl up`` that is killed -9 takes its servers with it (no orphans), and :meth:`stop` sends
SIGTERM, waits, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # not Linux: fall back to the process group kill in stop()
        pass


_LOWEST_PORT = 10000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_low() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A loopback TCP port that was free a moment ago, below the kernel's ephemeral range.

    A port ``bind(0)`` hands out comes from the same range the kernel takes the local port of every
    outgoing connection from, so a port kept for a later restart (a service killed -9 and started
    again on its health port) can meanwhile be the local end of any client's connection; CI saw
    exactly that. Ports below the range are only ever taken by an explicit bind. Where the range
    leaves no room below it, ``bind(0)`` as before.
    """
    low = _ephemeral_low()
    rng = random.SystemRandom()
    for _ in range(100 if low > _LOWEST_PORT else 0):
        port = rng.randrange(_LOWEST_PORT, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        found: int = s.getsockname()[1]
        return found


def free_ports(count: int) -> list[int]:
    """``count`` different ports, each as :func:`free_port` finds one."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class ProcessFailed(RuntimeError):
    pass


T = TypeVar("T")


def start_with_retries(
    start: Callable[[], T], stop: Callable[[], None], new_ports: Callable[[], None], attempts: int = 3
) -> T:
    """Run ``start``; if a server fails (typically a port taken between choosing and binding it),
    stop what started, pick new ports and try again."""
    for attempt in range(1, attempts + 1):
        try:
            return start()
        except ProcessFailed:
            stop()
            if attempt == attempts:
                raise
            new_ports()
    raise AssertionError("unreachable")


class ManagedProcess:
    """One server process with its log file."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_dir: Path,
        env: dict[str, str] | None = None,
        *,
        die_with_parent: bool = True,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_dir / f"{name}.log"
        self.env = env
        self.die_with_parent = die_with_parent
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(self.env or {})},
            start_new_session=True,
            preexec_fn=_die_with_parent if self.die_with_parent else None,  # noqa: PLW1509
        )
        log.close()
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``check`` until true; fail fast (with the log) if the process dies."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ProcessFailed(f"{self.name} exited while waiting for {what}:\n{self.log_tail()}")
            if check():
                return
            time.sleep(0.1)
        raise ProcessFailed(f"{self.name}: timed out after {timeout}s waiting for {what}:\n{self.log_tail()}")

    def terminate(self) -> None:
        """Ask the process to stop (SIGTERM to its group) without waiting: :meth:`stop` waits."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


class SingleProcessServer:
    """A server that is one managed process: stop, kill and restart on the same ports and data.
    Subclasses set ``process`` in their ``_start``."""

    process: ManagedProcess | None

    def _start(self, timeout: float) -> object:
        raise NotImplementedError

    def stop(self) -> None:
        if self.process:
            self.process.stop()

    def kill(self) -> None:
        if self.process:
            self.process.kill()

    def restart(self, timeout: float = 30.0) -> None:
        """Stop and start again on the same ports and data (for reliability tests)."""
        self.stop()
        self._start(timeout)
