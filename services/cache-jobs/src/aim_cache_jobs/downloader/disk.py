"""The part files on disk: opening them (with a second ``O_DIRECT`` descriptor where the filesystem
allows it), writing a worker's buffer (its whole blocks direct, the rest through the page cache),
and keeping them durable while the transfer runs (:class:`Durability`: writeback started often,
completed ranges synced and recorded every few seconds, so a killed process resumes where it was)."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from aim_cache_jobs.downloader import partial
from aim_cache_jobs.downloader.errors import DOWNLOAD_FAILED, STORAGE_FULL, DownloadError
from aim_cache_jobs.downloader.filejob import FileJob
from aim_cache_jobs.downloader.ranges import RangeSet

log = logging.getLogger("aim_cache_jobs.downloader")

KiB = 1 << 10
MiB = 1 << 20
ALIGN = 4096
"""Offset, length and memory alignment of ``O_DIRECT`` writes (the largest common logical block)."""
WRITE_SIZE = 256 * KiB
"""Bytes per buffered ``pwrite``. The page cache sizes its folios by the write: huge writes ask for
huge folios, which on a VM can mean memory the host must first hand back (measured: 2 GiB in 8 MiB
writes took 4-5 s after an idle period, in 64-256 KiB writes under 1 s)."""
CHECKPOINT_SECONDS = 2.0
"""How often completed ranges are made durable and recorded for resume."""
WRITEBACK_SECONDS = 0.1
"""How often writeback of new bytes is started, so the final fsync has little left to wait for."""
DROP_BEHIND = 32 * MiB
"""Page-cache path: bytes below the hash position further back than this are waited for on disk
and dropped from the cache (``POSIX_FADV_DONTNEED``), in steps of this size. Measured on a VM:
2 GiB through the page cache took 1.3-1.8 s of system time and 5-7 s to fsync without it, 0.6 s
and 1.6-1.8 s with it."""


def write(job: FileJob, data: memoryview, offset: int, *, aligned: bool = False) -> None:
    """Write ``data`` at ``offset``: its whole blocks with ``O_DIRECT`` when ``data`` starts on an
    aligned address (``aligned``: a worker's buffer) at an aligned offset, the rest through the
    page cache."""
    view = data
    at = offset
    try:
        direct_fd = job.direct_fd
        if aligned and direct_fd is not None and not job.direct_refused and at % ALIGN == 0:
            whole = len(view) - len(view) % ALIGN
            while whole:
                try:
                    n = os.pwrite(direct_fd, view[:whole], at)
                except OSError as e:
                    if e.errno != errno.EINVAL:
                        raise
                    # The filesystem refuses direct writes after all (the descriptor stays open
                    # until the file is done: another worker may be writing through it).
                    if not job.direct_refused:
                        job.direct_refused = True
                        log.debug("%s: no direct writes, using the page cache", job.remote.path)
                    break
                view, at, whole = view[n:], at + n, whole - n
                if n % ALIGN:
                    break  # a short write ended mid-block: the rest goes through the cache
        assert job.fd is not None
        while view:
            n = os.pwrite(job.fd, view[:WRITE_SIZE], at)
            view = view[n:]
            at += n
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise storage_full(job) from e
        raise DownloadError(DOWNLOAD_FAILED, f"cannot write {job.remote.path}: {e.strerror}") from e


class Durability:
    """Keeps the part files of ``jobs`` durable until ``stop`` is set (:meth:`run`, in a thread)."""

    def __init__(self, jobs: Sequence[FileJob], stop: threading.Event) -> None:
        self.jobs = jobs
        self.stop = stop

    def run(self) -> None:
        last_checkpoint = time.monotonic()
        while not self.stop.wait(WRITEBACK_SECONDS):
            checkpoint = time.monotonic() - last_checkpoint >= CHECKPOINT_SECONDS
            for job in self.jobs:
                if self.stop.is_set():
                    return
                try:
                    if checkpoint:
                        self.checkpoint(job)
                    else:
                        self.write_back(job)
                except OSError as e:
                    log.warning("cannot record progress of %s: %s", job.remote.path, e.strerror)
            if checkpoint:
                last_checkpoint = time.monotonic()

    def write_back(self, job: FileJob) -> None:
        """Start writeback of new bytes; through the page cache, also wait for and drop the
        ranges the hash is done with (see :data:`DROP_BEHIND`)."""
        with job.lock:
            if job.finalized or job.done.total() == job.written_back:
                return
            job.written_back = job.done.total()
            behind = job.done.prefix()
            if job.hashers:
                behind = min(behind, job.hashed)
            drop_to = behind - DROP_BEHIND
            drop_to -= drop_to % DROP_BEHIND
        buffered = job.direct_fd is None or job.direct_refused
        with job.io_lock:
            if job.fd is None:
                return
            start_writeback(job.fd)
            if buffered and drop_to > job.dropped:
                wait_and_drop(job.fd, job.dropped, drop_to)
                job.dropped = drop_to

    def checkpoint(self, job: FileJob, *, force: bool = False) -> None:
        """fdatasync the part, then record the ranges that were written before the sync."""
        with job.lock:
            if job.finalized or not (job.dirty or force):
                return
            snapshot = RangeSet(job.done.ranges())
            job.dirty = False
        with job.io_lock:
            if job.fd is None:
                return
            os.fdatasync(job.fd)
        partial.save_state(job.state_file, partial.PartialState(partial.identity(job.remote), snapshot))


def _sync_file_range() -> Callable[[int, int, int, int], None]:
    """``sync_file_range(fd, offset, length, flags)`` (Linux); elsewhere a no-op, and the final
    fsync does all the work."""
    try:
        import ctypes  # noqa: PLC0415

        libc = ctypes.CDLL(None, use_errno=True)
        func = libc.sync_file_range
        func.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    except (OSError, AttributeError):
        return lambda fd, offset, length, flags: None

    def call(fd: int, offset: int, length: int, flags: int) -> None:
        func(fd, offset, length, flags)

    return call


_sync_range = _sync_file_range()
_WAIT_BEFORE, _WRITE, _WAIT_AFTER = 1, 2, 4


def start_writeback(fd: int) -> None:
    """Start writeback of a file's dirty pages without waiting."""
    _sync_range(fd, 0, 0, _WRITE)


def wait_and_drop(fd: int, start: int, end: int) -> None:
    """Wait until ``[start, end)`` of the file is written back, then drop it from the page cache
    (its pages are freed and reused by the next writes instead of new memory being allocated).
    The final fsync still covers every byte: this only makes it have less to wait for."""
    _sync_range(fd, start, end - start, _WAIT_BEFORE | _WRITE | _WAIT_AFTER)
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, start, end - start, os.POSIX_FADV_DONTNEED)


def storage_full(job: FileJob) -> DownloadError:
    return DownloadError(
        STORAGE_FULL, f"no space left on the device writing {job.remote.path} into {job.plan.dest}"
    )


def size_of(path: Path) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if not os.path.isdir(path) else None


def open_part(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DownloadError(STORAGE_FULL, f"no space left creating {path.name}") from e
        raise DownloadError(DOWNLOAD_FAILED, f"cannot create {path}: {e.strerror}") from e


def open_direct(path: Path) -> int | None:
    """A second descriptor of the part file for ``O_DIRECT`` writes; None where the platform or
    the filesystem has no direct I/O (tmpfs, some FUSE and network filesystems)."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_CLOEXEC | flag)
    except OSError:
        return None


def check_space(dest: Path, needed: int) -> None:
    try:
        free = shutil.disk_usage(dest).free
    except OSError:
        return
    if needed > free:
        from aimcore.domain.units import format_bytes  # noqa: PLC0415

        raise DownloadError(
            STORAGE_FULL,
            f"{dest} has {format_bytes(free)} free but {format_bytes(needed)} more are needed",
        )
