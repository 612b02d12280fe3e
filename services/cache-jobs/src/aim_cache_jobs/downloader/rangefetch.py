"""Fetching one byte range of a file into its part file: a request per attempt (following and
caching redirects, re-signing where the source signs), the body read into the worker's buffer and
written as it arrives (:mod:`.disk`), every written buffer recorded at once; a range that stalls or
drops is retried from the last byte written, a few times with exponential backoff. A ``file://``
source is copied by the kernel instead."""

from __future__ import annotations

import errno
import http.client
import logging
import mmap
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from aim_cache_jobs.downloader import disk, fetch
from aim_cache_jobs.downloader.errors import DOWNLOAD_FAILED, SOURCE_NOT_FOUND, DownloadError, host_of
from aim_cache_jobs.downloader.fetch import idle
from aim_cache_jobs.downloader.filejob import FileJob
from aim_cache_jobs.downloader.holding import Buffers
from aim_cache_jobs.downloader.listing import RemoteFile
from aim_cache_jobs.downloader.ranges import RangeSet
from aimcore.api.backoff import Backoff, Jitter
from aimcore.api.errors import AimError

log = logging.getLogger("aim_cache_jobs.downloader")

MiB = 1 << 20
BUFFER_SIZE = 1 * MiB
"""One worker's read buffer (a multiple of :data:`.disk.ALIGN`): one ``pwrite`` and one hash update each."""
FLUSH_SECONDS = 0.5
"""A partly filled buffer is written at least this often (progress and resume state on slow links)."""
IDLE_WAIT = 0.1
"""A partly filled buffer is also written when the socket has been quiet this long, so bytes that
arrived before a stall are on disk (and resumable) while the read waits."""
MAX_ATTEMPTS = 4
MAX_TOTAL_ATTEMPTS = 20

_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", re.IGNORECASE)


RANGE_RETRY = Backoff(base=0.25, cap=8.0)
"""A byte range that failed without progress is fetched again after 0.25 s, 0.5 s, 1 s ... at most
8 s (with jitter, so the workers of one download do not hit the server together)."""
RANGE_JITTER: Jitter = random.random
"""Where that jitter comes from (a test timing the retries sets ``None``: the exact schedule)."""


@dataclass
class Slot:
    """A worker's current read buffer (page-aligned, so full buffers qualify for ``O_DIRECT``); it
    is replaced when the buffer is handed to the hashing thread."""

    buf: mmap.mmap


class _Failed(AimError):
    """An attempt ended at ``pos`` (bytes before it are written) because of ``error`` (whose reason
    and transient it carries)."""

    def __init__(self, pos: int, error: fetch.Transient | DownloadError) -> None:
        super().__init__(str(error), reason=error.reason, transient=error.transient)
        self.pos = pos
        self.error = error


@dataclass(eq=False)
class RangeFetcher:
    """Fetches ranges for a transfer's workers until ``stop`` is set. ``record`` is told of every
    range written, ``lost`` of the bytes dropped when a source without Range support starts a file
    over."""

    stall_timeout: float
    buffers: Buffers
    stop: threading.Event
    record: Callable[[FileJob, int, int], None]
    lost: Callable[[int], None]

    def run_range(self, conns: fetch.Connections, slot: Slot, job: FileJob, start: int, end: int) -> bool:
        """Fetch ``[start, end)`` with retries; False if stopped before the end."""
        pos = start
        attempts = total = 0
        while pos < end:
            if self.stop.is_set():
                return False
            before = pos
            try:
                pos = self._attempt(conns, slot, job, pos, end)
                continue
            except _Failed as f:
                pos, error = f.pos, f.error
            if self.stop.is_set():
                return False  # cancelled, or another file failed: not this range's error
            if isinstance(error, DownloadError):
                raise error
            if not job.remote.ranges and pos > 0:
                pos = start = 0  # no Range support: start the file over
                self._reset(job)
            attempts = 1 if pos > before else attempts + 1
            total += 1
            if attempts >= MAX_ATTEMPTS or total >= MAX_TOTAL_ATTEMPTS:
                raise error.error
            delay = (
                error.retry_after
                if error.retry_after is not None
                else RANGE_RETRY.delay(attempts, jitter=RANGE_JITTER)
            )
            log.warning(
                "%s: %s; retrying from byte %d in %.2gs (attempt %d of %d)",
                job.remote.path,
                error.error.message,
                pos,
                delay,
                attempts + 1,
                MAX_ATTEMPTS,
            )
            if self.stop.wait(delay):
                return False
        return True

    def _reset(self, job: FileJob) -> None:
        self.buffers.release(job)
        with job.lock:
            lost = job.done.total()
            job.done = RangeSet()
            job.dirty = True
        self.lost(lost)

    def _target(self, job: FileJob) -> tuple[str, dict[str, str], bool]:
        """(url, headers, from the redirect cache)."""
        cached = job.resolved
        if cached is not None:
            return cached[0], dict(cached[1]), True
        return job.remote.url, dict(job.remote.headers), False

    def _attempt(self, conns: fetch.Connections, slot: Slot, job: FileJob, pos: int, end: int) -> int:
        """One request for ``[pos, end)``; returns the position reached (raises :class:`_Failed`)."""
        remote = job.remote
        if remote.url.startswith("file://"):
            return self._copy_local(job, pos, end)
        url, headers, cached = self._target(job)
        if remote.ranges:
            headers["Range"] = f"bytes={pos}-{end - 1}"
        try:
            if remote.signer is not None and not cached:
                headers = remote.signer("GET", url, headers)
            opened = fetch.open_url(conns, url, headers)
        except (fetch.Transient, DownloadError) as e:
            raise _Failed(pos, e) from e
        resp = opened.response
        status = resp.status
        if cached and status in (401, 403, 404, 410):
            # A signed redirect target (e.g. a CDN URL) expired: go through the original URL again.
            job.resolved = None
            fetch.drain(conns, opened.key, resp)
            error = DownloadError(DOWNLOAD_FAILED, f"redirect target answered HTTP {status}")
            raise _Failed(pos, fetch.Transient(error, retry_after=0.0))
        if status == 206:
            match = _CONTENT_RANGE.match(resp.getheader("Content-Range") or "")
            total = match.group(3) if match else None
            if (
                match is None
                or int(match.group(1)) != pos
                or (total != "*" and int(total or 0) != remote.size)
            ):
                conns.discard(opened.key)
                raise _Failed(pos, _changed(remote, resp.getheader("Content-Range")))
            stop_at = min(end, int(match.group(2)) + 1)
            body_end = int(match.group(2)) + 1
        elif status == 200:
            if pos != 0 or (resp.length is not None and resp.length != remote.size):
                conns.discard(opened.key)
                if pos != 0:
                    error = DownloadError(
                        DOWNLOAD_FAILED, f"{host_of(url)} ignored the Range header for {remote.path}"
                    )
                    raise _Failed(pos, error)
                raise _Failed(pos, _changed(remote, f"length {resp.length}"))
            stop_at, body_end = end, remote.size
        else:
            error_or_transient = fetch.status_error(
                status, url, had_token=bool(remote.headers) or remote.signer is not None
            )
            fetch.drain(conns, opened.key, resp)
            raise _Failed(pos, error_or_transient)
        if opened.url != url and not cached and remote.signer is None:
            job.resolved = (opened.url, {k: v for k, v in opened.headers.items() if k.lower() != "range"})
        reached = self._stream(conns, opened, slot, job, pos=pos, stop_at=stop_at)
        if stop_at < body_end:
            conns.discard(opened.key)  # the rest of the body is not ours to read
        return reached

    def _stream(
        self,
        conns: fetch.Connections,
        opened: fetch.Opened,
        slot: Slot,
        job: FileJob,
        *,
        pos: int,
        stop_at: int,
    ) -> int:
        """Read the body into the slot's buffer and write it at ``pos``..``stop_at``; returns the
        position reached. Every written buffer is recorded (and offered to the hashing thread) at
        once, however the loop ends. A buffer is filled up to the next :data:`disk.ALIGN` boundary of the
        file, so after a partial write (a flush, a resume point) the next full buffer is aligned
        again."""
        resp = opened.response
        # One raw read per call (readinto1): when a read fails, every byte before it is accounted
        # for, so a retry resumes at the exact byte. Chunked bodies need http.client's decoding.
        exact = not resp.chunked and resp.fp is not None and resp.length is not None
        read = resp.fp.readinto1 if exact else resp.readinto
        mv = memoryview(slot.buf)
        size = len(mv)
        limit = size - pos % disk.ALIGN
        filled = 0
        flushed_at = time.monotonic()
        try:
            while pos + filled < stop_at:
                if filled and idle(opened.conn, IDLE_WAIT):
                    mv = self._commit(job, slot, pos, filled)
                    pos, filled, flushed_at = pos + filled, 0, time.monotonic()
                    limit = size - pos % disk.ALIGN
                n = read(mv[filled : min(limit, stop_at - pos)])
                if not n:
                    raise http.client.IncompleteRead(b"", stop_at - pos - filled)
                if exact:
                    resp.length -= n  # type: ignore[operator]
                filled += n
                if filled == limit or pos + filled == stop_at:
                    mv = self._commit(job, slot, pos, filled)
                    pos, filled = pos + filled, 0
                    limit = size - pos % disk.ALIGN
                elif (now := time.monotonic()) - flushed_at >= FLUSH_SECONDS:
                    mv = self._commit(job, slot, pos, filled)
                    pos, filled, flushed_at = pos + filled, 0, now
                    limit = size - pos % disk.ALIGN
            if exact and not resp.length:
                resp.read()  # marks the response complete so the connection can be reused
        except DownloadError as e:
            conns.discard(opened.key)
            raise _Failed(pos, e) from e
        except (OSError, http.client.HTTPException, ValueError) as e:
            conns.discard(opened.key)
            if filled:  # what arrived before the failure is good: keep it
                try:
                    self._commit(job, slot, pos, filled)
                except DownloadError as w:
                    raise _Failed(pos, w) from e
                pos += filled
            raise _Failed(pos, fetch.transient(e, opened.url, self.stall_timeout)) from e
        return pos

    def _commit(self, job: FileJob, slot: Slot, pos: int, n: int) -> memoryview:
        """Write the first ``n`` bytes of the slot's buffer at ``pos``, record them, and hand the
        buffer to the hashing thread when it is worth holding (the slot then gets a fresh one).
        Returns a view of the slot's buffer to read into next."""
        buf = slot.buf
        with memoryview(buf) as view:
            disk.write(job, view[:n], pos, aligned=True)
        if job.hashers and self.buffers.hold(job, buf, pos, n):
            slot.buf = self.buffers.take()
        self.record(job, pos, pos + n)
        return memoryview(slot.buf)

    def _copy_local(self, job: FileJob, pos: int, end: int) -> int:
        """A range of a local source file (kernel copy where available)."""
        src_path = job.remote.url[len("file://") :]
        with job.lock:
            if job.src_fd is None:
                try:
                    job.src_fd = os.open(src_path, os.O_RDONLY)
                except FileNotFoundError as e:
                    raise DownloadError(SOURCE_NOT_FOUND, f"{src_path} disappeared") from e
            src = job.src_fd
        assert job.fd is not None
        while pos < end:
            if self.stop.is_set():
                return pos
            n_want = min(BUFFER_SIZE, end - pos)
            try:
                n = os.copy_file_range(src, job.fd, n_want, pos, pos)
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise _Failed(pos, disk.storage_full(job)) from e
                if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    raise _Failed(
                        pos, DownloadError(DOWNLOAD_FAILED, f"copying {src_path}: {e.strerror}")
                    ) from e
                data = os.pread(src, n_want, pos)
                n = len(data)
                if n:
                    disk.write(job, memoryview(data), pos)
                    self.record(job, pos, pos + n)
                    pos += n
                    continue
            if n == 0:
                raise _Failed(pos, DownloadError(DOWNLOAD_FAILED, f"{src_path} changed while copying"))
            self.record(job, pos, pos + n)
            pos += n
        return pos


def _changed(remote: RemoteFile, what: str | None) -> DownloadError:
    return DownloadError(
        DOWNLOAD_FAILED,
        f"{remote.path} changed at the source while downloading (expected {remote.size} bytes, got {what})",
    )
