"""How downloaded bytes reach the disk: ``O_DIRECT`` or the page cache, chosen by measuring.

Which is faster depends on the machine, not the code: on one VM direct writes ran at twice the
speed of page-cache writes (copying into freshly allocated page-cache memory is slow there), on
another of the same kind the page cache won. A constant tuned on one machine is wrong on the next,
so at the start of a download (once per filesystem and process) a short probe writes the same
bytes both ways into the destination's filesystem, each ending with ``fsync`` as a download does,
and the cheaper way is used. Cheaper counts the CPU a way of writing takes as well as its wall
time: on a small machine a download is CPU-bound (receiving, hashing and page-cache copies share
the cores), so a page-cache write that finishes as soon as a direct one but keeps a core busy
copying is slower in a download; the probe runs alone and would not see that by its clock.
:func:`choose` is the decision (pure), :func:`probe` the measurement, :func:`resolve` both with the
per-filesystem cache.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

WritePath = Literal["direct", "buffered"]
Requested = Literal["auto", "direct", "buffered"]

MiB = 1 << 20
PROBE_BYTES = 8 * MiB
"""Bytes written each way per round (four rounds, alternating, the cheapest round of each counts:
a noisy neighbour rarely spoils all four): about 50 ms in all on a disk that takes a GiB/s,
against seconds for a model."""
PROBE_ROUNDS = 4
PROBE_BUFFER = 1 * MiB
PROBE_WRITE = 256 * 1024
"""Bytes per page-cache ``pwrite``, as the transfer writes them (``transfer.WRITE_SIZE``)."""
DIRECT_MARGIN = 1.25
"""The page cache is chosen only when its probe was this much cheaper: it also costs memory (and
a page-cache download's dirty pages compete with everything else on the node), and on a busy
machine one probe can be off by 20 % (measured: a machine where direct writes are clearly better
in downloads gave page-cache probes up to 1.22x cheaper in 2 of 10 probes)."""


@dataclass(frozen=True)
class ProbeResult:
    """Cost in seconds (wall time plus the CPU time it took) of writing and fsyncing ``size``
    bytes each way (None: not possible, e.g. a filesystem without ``O_DIRECT``)."""

    size: int
    direct_s: float | None
    buffered_s: float | None

    def rate(self, seconds: float | None) -> int | None:
        return None if not seconds else round(self.size / seconds)


@dataclass(frozen=True)
class Choice:
    path: WritePath
    why: str
    probe: ProbeResult | None = None

    def describe(self) -> dict[str, object]:
        """The choice as the JSON result line reports it (the probe's figures as bytes per second
        of its cost, wall plus CPU time)."""
        out: dict[str, object] = {"write_path": self.path, "write_path_reason": self.why}
        if self.probe is not None:
            out["probe_direct_bytes_per_s"] = self.probe.rate(self.probe.direct_s)
            out["probe_buffered_bytes_per_s"] = self.probe.rate(self.probe.buffered_s)
        return out


def choose(probe: ProbeResult) -> Choice:
    """The write path a probe's figures call for (see :data:`DIRECT_MARGIN`)."""
    if probe.direct_s is None and probe.buffered_s is None:
        return Choice("direct", "the probe could not write (O_DIRECT where it works)", probe)
    if probe.direct_s is None:
        return Choice("buffered", "the filesystem refuses O_DIRECT", probe)
    if probe.buffered_s is None:
        return Choice("direct", "page-cache writes failed in the probe", probe)
    if probe.buffered_s * DIRECT_MARGIN < probe.direct_s:
        return Choice("buffered", "the page cache was faster in the probe", probe)
    return Choice("direct", "O_DIRECT was as fast or faster in the probe", probe)


def _open_unlinked(path: Path, flags: int) -> int | None:
    """A new file at ``path``, unlinked at once: nothing is left behind whatever happens next."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | flags, 0o600)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        os.unlink(path)
    return fd


def _write(fd: int, buf: mmap.mmap, size: int, step: int) -> float | None:
    """Write ``size`` bytes of ``buf`` (repeated) in ``step``-byte writes and fsync; the cost."""
    try:
        started, cpu = time.monotonic(), time.thread_time()
        with memoryview(buf) as view:
            for offset in range(0, size, len(buf)):
                for at in range(0, len(buf), step):
                    os.pwrite(fd, view[at : at + step], offset + at)
        os.fsync(fd)
        return time.monotonic() - started + time.thread_time() - cpu
    except OSError:
        return None  # e.g. EINVAL: the filesystem opened it with O_DIRECT but refuses direct writes


def _close_later(fds: list[int]) -> None:
    """Close the probe's files off the download's path (freeing their blocks takes a while)."""

    def close() -> None:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    threading.Thread(target=close, name="aim-dl-probe-close", daemon=True).start()


def probe(directory: Path, size: int = PROBE_BYTES, rounds: int = PROBE_ROUNDS) -> ProbeResult:
    """Write ``size`` bytes (random, so a compressing filesystem cannot cheat) both ways into
    ``directory``, alternating, ``rounds`` times; the lowest cost of each way."""
    buf = mmap.mmap(-1, PROBE_BUFFER)
    buf.write(random.Random(size).randbytes(PROBE_BUFFER))
    size = max(PROBE_BUFFER, size - size % PROBE_BUFFER)
    name = f".aim-write-probe-{os.getpid()}-{threading.get_ident()}"
    direct: list[float | None] = []
    buffered: list[float | None] = []
    opened: list[int] = []
    flag = getattr(os, "O_DIRECT", 0)
    try:
        for i in range(rounds):
            fd = _open_unlinked(directory / f"{name}-{i}.direct", flag) if flag else None
            if fd is not None:
                opened.append(fd)
            direct.append(None if fd is None else _write(fd, buf, size, PROBE_BUFFER))
            fd = _open_unlinked(directory / f"{name}-{i}.buffered", 0)
            if fd is not None:
                opened.append(fd)
            buffered.append(None if fd is None else _write(fd, buf, size, PROBE_WRITE))
    finally:
        buf.close()
        _close_later(opened)
    return ProbeResult(size, _best(direct), _best(buffered))


def _best(times: list[float | None]) -> float | None:
    if not times or any(t is None for t in times):
        return None
    return min(t for t in times if t is not None)


_verdicts: dict[int, Choice] = {}
"""Probe verdicts by filesystem (``st_dev``)."""
_last: dict[int, Choice] = {}
"""The write path last used by filesystem, requested or measured (what :func:`chosen` reports)."""
_verdicts_lock = threading.Lock()


def resolve(directory: Path, requested: Requested = "auto", *, small: bool = False) -> Choice:
    """The write path for files created in ``directory``: ``requested`` unless it is ``auto``,
    then the probe's verdict for the directory's filesystem (measured once per process; a
    ``small`` download is not worth a probe and uses ``O_DIRECT`` where it works, unless a verdict
    is known)."""
    try:
        device = os.stat(directory).st_dev
    except OSError:
        return Choice("direct" if requested == "auto" else requested, "the destination cannot be examined")
    with _verdicts_lock:
        if requested != "auto":
            choice = Choice(requested, "requested")
        elif small and device not in _verdicts:
            choice = Choice("direct", "too small to be worth a probe")
        elif (known := _verdicts.get(device)) is not None:
            choice = known
        else:
            choice = _measure(directory, device)
        _last[device] = choice
    return choice


def _measure(directory: Path, device: int) -> Choice:
    """Probe ``directory`` and keep the verdict for its filesystem (not when the probe could not
    write there at all: a later download may be able to)."""
    result = probe(directory)
    choice = choose(result)
    if result.direct_s is not None or result.buffered_s is not None:
        _verdicts[device] = choice
    return choice


def warm(dest: Path) -> None:
    """Measure the filesystem ``dest`` will be on, ahead of :func:`resolve` (e.g. while the source
    is listed): the nearest existing directory of ``dest`` is on it (a mount point exists)."""
    directory = dest
    while not directory.is_dir():
        if directory.parent == directory:
            return
        directory = directory.parent
    try:
        device = os.stat(directory).st_dev
    except OSError:
        return
    with _verdicts_lock:
        if device not in _verdicts:
            _measure(directory, device)


def chosen(directory: Path) -> Choice | None:
    """The write path last used for ``directory``'s filesystem by this process (for reporting)."""
    try:
        device = os.stat(directory).st_dev
    except OSError:
        return None
    with _verdicts_lock:
        return _last.get(device)
