"""The transfer engine: fetches planned files into ``.part`` files with blocking sockets in worker
threads, hashes every byte from the buffer it arrived in, and moves each verified file into place.

Why threads and blocking sockets: ``readinto`` into a large reusable buffer followed by one
``os.pwrite`` per buffer spends its time in the kernel with the GIL released, where a pure-Python
async loop pays interpreter work for every chunk. Large files are cut into ranges handed out in file
order to ``connections`` workers (small files simply run concurrently). A written buffer is handed to
the file's hashing thread (hashlib releases the GIL), which consumes the file in order: a buffer
that arrived ahead of the hash position is held in memory (up to :data:`HOLD_BYTES`) and anything not
held is read back from the part file, so the digest is complete when the last byte lands, without a
second pass over the file. Full, aligned buffers are written with ``O_DIRECT`` where the filesystem
allows it and a short probe at the start found it at least as fast as the page cache (see
:mod:`writepath`): the file is synced before it is placed anyway, and skipping the page cache saves
allocating and copying into it (on some VMs, most of a buffered download's CPU time). Through the
page cache, written ranges are flushed and dropped from the cache behind the hash position, so a
download dirties a bounded window of memory and its pages are reused while still warm. The same pass can
also compute digests the source does not give (``compute``, e.g. every file's sha256): every file is
then hashed this way. A range that stalls or drops is retried from the last byte written, a few
times with exponential backoff. Every few seconds the completed ranges are made durable
(``fdatasync``) and recorded in the file's state, so a killed process resumes where it was.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import http.client
import logging
import mmap
import os
import random
import re
import shutil
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_cache.downloader import fetch, partial, writepath
from aim_cache.downloader.errors import (
    CHECKSUM_MISMATCH,
    DOWNLOAD_FAILED,
    SOURCE_NOT_FOUND,
    STORAGE_FULL,
    DownloadError,
    host_of,
)
from aim_cache.downloader.fetch import idle
from aim_cache.downloader.ranges import RangeSet, split
from aim_cache.downloader.sources import Digest, RemoteFile
from aimcore.api.backoff import Backoff, Jitter
from aimcore.api.errors import AimError
from aimcore.domain.outbound import STRICT, OutboundPolicy

log = logging.getLogger("aim_cache.downloader")

KiB = 1 << 10
MiB = 1 << 20
CHUNK_SIZE = 8 * MiB
"""Bytes per range request: small enough that ranges complete close to file order (what arrives
ahead of the hash position is held in memory, see :data:`HOLD_BYTES`) and a retry refetches little,
large enough that request overhead does not matter (hf_transfer uses 10 MiB)."""
BUFFER_SIZE = 1 * MiB
"""One worker's read buffer (a multiple of :data:`ALIGN`): one ``pwrite`` and one hash update each."""
ALIGN = 4096
"""Offset, length and memory alignment of ``O_DIRECT`` writes (the largest common logical block)."""
HOLD_BYTES = 64 * MiB
"""Written buffers kept in memory for the hashing thread, per transfer, when they arrived ahead of
the hash position (several connections). A worker whose buffer does not fit waits for room (the
connection that holds the hash back then has the bandwidth to itself), up to :data:`HOLD_WAIT`;
then the buffer is dropped and the hashing thread reads those bytes back from the part file."""
HOLD_WAIT = 2.0
WRITE_SIZE = 256 * KiB
"""Bytes per buffered ``pwrite``. The page cache sizes its folios by the write: huge writes ask for
huge folios, which on a VM can mean memory the host must first hand back (measured: 2 GiB in 8 MiB
writes took 4-5 s after an idle period, in 64-256 KiB writes under 1 s)."""
FLUSH_SECONDS = 0.5
"""A partly filled buffer is written at least this often (progress and resume state on slow links)."""
IDLE_WAIT = 0.1
"""A partly filled buffer is also written when the socket has been quiet this long, so bytes that
arrived before a stall are on disk (and resumable) while the read waits."""
HASH_BUFFER = 1 * MiB
HASH_THREADS = 2
MAX_ATTEMPTS = 4
MAX_TOTAL_ATTEMPTS = 20
CHECKPOINT_SECONDS = 2.0
"""How often completed ranges are made durable and recorded for resume."""
WRITEBACK_SECONDS = 0.1
"""How often writeback of new bytes is started, so the final fsync has little left to wait for."""
DROP_BEHIND = 32 * MiB
"""Page-cache path: bytes below the hash position further back than this are waited for on disk
and dropped from the cache (``POSIX_FADV_DONTNEED``), in steps of this size. Measured on a VM:
2 GiB through the page cache took 1.3-1.8 s of system time and 5-7 s to fsync without it, 0.6 s
and 1.6-1.8 s with it."""
PROBE_MIN_BYTES = 256 * MiB
"""A transfer smaller than this does not run a write probe itself (``direct_io=None``): it uses
the verdict if one is known (``download`` probes while listing) and ``O_DIRECT`` otherwise."""

_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", re.IGNORECASE)


RANGE_RETRY = Backoff(base=0.25, cap=8.0)
"""A byte range that failed without progress is fetched again after 0.25 s, 0.5 s, 1 s ... at most
8 s (with jitter, so the workers of one download do not hit the server together)."""
RANGE_JITTER: Jitter = random.random
"""Where that jitter comes from (a test timing the retries sets ``None``: the exact schedule)."""


def new_hasher(algorithm: str, size: int) -> Any:
    if algorithm == "sha256":
        return hashlib.sha256()
    if algorithm == "md5":
        return hashlib.md5(usedforsecurity=False)
    if algorithm == "git-sha1":
        h = hashlib.sha1(usedforsecurity=False)
        h.update(b"blob %d\x00" % size)
        return h
    raise ValueError(f"unknown digest algorithm {algorithm}")


@dataclass(frozen=True)
class PlannedFile:
    remote: RemoteFile
    final: Path
    dest: Path


@dataclass
class _Job:
    """One file: its part file, completed ranges, hashing position, the buffers held for hashing
    (offset -> buffer, length) and the redirect cache."""

    plan: PlannedFile
    done: RangeSet = field(default_factory=RangeSet)
    fd: int | None = None
    direct_fd: int | None = None
    direct_refused: bool = False
    dropped: int = 0
    src_fd: int | None = None
    tasks_left: int = 0
    hashed: int = 0
    hashers: dict[str, Any] = field(default_factory=dict)
    held: dict[int, tuple[mmap.mmap, int]] = field(default_factory=dict)
    hash_running: bool = False
    finalized: bool = False
    dirty: bool = False
    written_back: int = 0
    resolved: tuple[str, dict[str, str]] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    io_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def remote(self) -> RemoteFile:
        return self.plan.remote

    @property
    def part(self) -> Path:
        return partial.part_path(self.plan.dest, self.remote.path)

    @property
    def state_file(self) -> Path:
        return partial.state_path(self.plan.dest, self.remote.path)


@dataclass
class _Slot:
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


@dataclass(frozen=True)
class FileResult:
    """A placed file: the source's digests it was verified against, and the digests computed for
    the algorithms of ``Transfer.compute`` the source gives no value for."""

    path: str
    size: int
    verified: tuple[Digest, ...]
    computed: tuple[Digest, ...] = ()


class Transfer:
    """Download ``files`` (call :meth:`prepare` then :meth:`start`; wait for :attr:`finished`; then
    :meth:`close`). ``on_change`` is called from worker threads when the transfer finishes or fails.

    ``compute`` names digest algorithms (see :func:`new_hasher`) to compute for every downloaded
    file besides those the source gives, in the same pass (:attr:`FileResult.computed`).
    ``reusable`` maps paths of files already in place (verified by an earlier download) to the
    digests known for them: those the source gives count as verified, the others can supply
    ``compute`` (the file is not read again). ``before_place`` is called once, before the first
    file is moved into place (e.g. to drop a manifest that will then no longer describe the
    destination); an error it raises fails the transfer. ``guard`` vets every origin a worker
    connects to, redirect targets included, and ``policy`` is the outbound address policy every
    connection applies (see :class:`fetch.Connections`)."""

    def __init__(
        self,
        files: Sequence[PlannedFile],
        *,
        connections: int = 8,
        stall_timeout: float = 60.0,
        ssl_context: ssl.SSLContext | None = None,
        chunk_size: int | None = None,
        buffer_size: int | None = None,
        reusable: dict[str, tuple[Digest, ...]] | None = None,
        on_change: Callable[[], None] | None = None,
        direct_io: bool | None = None,
        compute: Sequence[str] = (),
        before_place: Callable[[], None] | None = None,
        guard: Callable[[str], None] | None = None,
        policy: OutboundPolicy = STRICT,
    ) -> None:
        for algorithm in compute:
            new_hasher(algorithm, 0)  # ValueError for an unknown algorithm
        self.files = list(files)
        self.connections = max(1, connections)
        self.stall_timeout = stall_timeout
        self.ssl_context = ssl_context
        self.chunk_size = chunk_size or CHUNK_SIZE
        self.buffer_size = buffer_size or BUFFER_SIZE
        self.reusable = reusable or {}
        self.on_change = on_change
        self.direct_io = direct_io
        self.write_path: writepath.Choice | None = None
        """How full buffers are written (set by :meth:`prepare`; ``direct_io=None``: measured)."""
        self.compute = tuple(dict.fromkeys(compute))
        self.before_place = before_place
        self.guard = guard
        self.policy = policy
        self._placing = False
        self._place_lock = threading.Lock()
        self.error: DownloadError | None = None
        self.results: dict[str, FileResult] = {}
        self.total_bytes = sum(p.remote.size for p in self.files)
        self._jobs: list[_Job] = []
        self._tasks: deque[tuple[_Job, int, int]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._downloaded = 0
        self._fetched = 0
        self._threads: list[threading.Thread] = []
        self._conns: list[fetch.Connections] = []
        self._hash_pool: ThreadPoolExecutor | None = None
        self._free: list[mmap.mmap] = []
        self._held_bytes = 0
        self._buffers_lock = threading.Lock()
        self._room = threading.Condition(self._buffers_lock)
        self._closed = False

    # -- state -------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    @property
    def downloaded_bytes(self) -> int:
        """Bytes on disk for this download (resumed and reused ones included)."""
        return self._downloaded

    @property
    def fetched_bytes(self) -> int:
        """Bytes fetched by this run (what throughput is measured on)."""
        return self._fetched

    @property
    def files_done(self) -> int:
        return len(self.results)

    # -- preparation (blocking I/O: run it in a thread) --------------------------------------

    def prepare(self) -> None:
        """Load resume state, open part files, plan ranges, check free space."""
        needed = 0
        self.write_path = self._choose_write_path()
        direct = self.write_path.path == "direct"
        for plan in self.files:
            job = _Job(plan)
            remote = plan.remote
            ident = partial.identity(remote)
            state = partial.load_state(job.state_file)
            if plan.remote.path in self.reusable and _size_of(plan.final) == remote.size:
                partial.save_state(
                    job.state_file, partial.PartialState(ident, RangeSet([(0, remote.size)]), True)
                )
                self._adopt(job, self.reusable[remote.path])
                continue
            if state is not None and state.identity == ident:
                if state.placed and _size_of(plan.final) == remote.size:
                    self._adopt(job, remote.digests)
                    continue
                part_size = _size_of(job.part)
                done = state.done.clipped(remote.size)
                on_disk = part_size is not None and (not done.ranges() or part_size >= done.ranges()[-1][1])
                if on_disk and (remote.ranges or done.total() == remote.size):
                    job.done = done
            if not job.done.ranges():
                partial.discard(plan.dest, remote.path)
            job.part.parent.mkdir(parents=True, exist_ok=True)
            job.fd = _open_part(job.part)
            if direct and remote.size >= ALIGN and not remote.url.startswith("file://"):
                job.direct_fd = _open_direct(job.part)
            partial.save_state(job.state_file, partial.PartialState(ident, job.done))
            job.hashers = {d.algorithm: new_hasher(d.algorithm, remote.size) for d in remote.digests}
            for algorithm in self.compute:
                # With anything to compute every file is hashed (empty ones too: their digest is
                # that of no bytes), so ``job.hashers`` decides holding and finalising as for
                # verification.
                if algorithm not in job.hashers:
                    job.hashers[algorithm] = new_hasher(algorithm, remote.size)
            gaps = job.done.missing(remote.size)
            pieces = list(split(gaps, self.chunk_size)) if remote.ranges else gaps[:1]
            job.tasks_left = len(pieces)
            self._tasks.extend((job, s, e) for s, e in pieces)
            self._downloaded += job.done.total()
            needed += remote.size - job.done.total()
            self._jobs.append(job)
            if job.done.total():
                log.info(
                    "resuming %s: %d of %d bytes already on disk", remote.path, job.done.total(), remote.size
                )
        if self.files:
            _check_space(self.files[0].dest, needed)

    def _choose_write_path(self) -> writepath.Choice:
        requested: writepath.Requested = (
            "auto" if self.direct_io is None else "direct" if self.direct_io else "buffered"
        )
        if not self.files:
            return writepath.Choice("direct" if requested == "auto" else requested, "nothing to write")
        dest = self.files[0].dest
        dest.mkdir(parents=True, exist_ok=True)
        small = sum(p.remote.size for p in self.files) < PROBE_MIN_BYTES
        choice = writepath.resolve(dest, requested, small=small)
        log.info("writing with %s: %s", choice.path, choice.why)
        return choice

    def _adopt(self, job: _Job, known: tuple[Digest, ...]) -> None:
        """A file already in place and verified (by an interrupted run or an earlier revision),
        with the digests ``known`` for it. It is not read again: its computed digests are those
        ``known`` has (an earlier manifest's, passed on by ``reusable``); for a file an interrupted
        run placed (its state records no digests) or one whose earlier manifest lacks them, they
        stay empty."""
        remote = job.remote
        job.finalized = True
        self._downloaded += remote.size
        verified = tuple(d for d in remote.digests if d in known)
        computed = self._computed(remote, {d.algorithm: d.value for d in known}) if self.compute else ()
        self.results[remote.path] = FileResult(remote.path, remote.size, verified, computed)

    def _computed(self, remote: RemoteFile, values: dict[str, str]) -> tuple[Digest, ...]:
        """The digests of :attr:`compute` the source does not give, from ``values`` (algorithm ->
        hex digest) where known."""
        given = {d.algorithm for d in remote.digests}
        return tuple(
            Digest(algorithm, values[algorithm])
            for algorithm in self.compute
            if algorithm not in given and algorithm in values
        )

    # -- running -----------------------------------------------------------------------------

    def start(self) -> None:
        self._hash_pool = ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="aim-dl-hash")
        for job in list(self._jobs):
            if job.tasks_left == 0:
                self._bytes_complete(job)
            elif job.hashers and job.done.prefix():
                self._poke_hash(job)  # re-read the resumed prefix while the rest downloads
        n_workers = min(self.connections, max(1, len(self._tasks)))
        for i in range(n_workers if self._tasks else 0):
            conns = fetch.Connections(self.stall_timeout, self.ssl_context, self.guard, self.policy)
            self._conns.append(conns)
            t = threading.Thread(target=self._worker, args=(conns,), name=f"aim-dl-{i}", daemon=True)
            self._threads.append(t)
        checkpoint = threading.Thread(target=self._checkpoint_loop, name="aim-dl-checkpoint", daemon=True)
        self._threads.append(checkpoint)
        for t in self._threads:
            t.start()
        self._maybe_finish()

    def cancel(self) -> None:
        """Stop every worker (blocked reads return at once); partial data is kept."""
        self._stop.set()
        for conns in self._conns:
            conns.abort()

    def wait(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    def close(self) -> None:
        """Join the threads and persist the state of unfinished files (blocking)."""
        if self._closed:
            return
        self._closed = True
        if not self._finished.is_set():
            self.cancel()
        else:
            self._stop.set()
        for t in self._threads:
            t.join()
        if self._hash_pool is not None:
            self._hash_pool.shutdown(wait=True, cancel_futures=True)
        for job in self._jobs:
            if not job.finalized:
                self._checkpoint(job, force=True)
            self._release_held(job)
            with job.io_lock:
                for attr in ("fd", "direct_fd", "src_fd"):
                    fd = getattr(job, attr)
                    if fd is not None:
                        with contextlib.suppress(OSError):
                            os.close(fd)
                        setattr(job, attr, None)

    def _fail(self, error: DownloadError) -> None:
        with self._lock:
            if self.error is not None or self._finished.is_set():
                return
            self.error = error
        log.debug("download failing: %s", error)
        self.cancel()
        self._finished.set()
        if self.on_change:
            self.on_change()

    def _maybe_finish(self) -> None:
        with self._lock:
            if self.error is not None or len(self.results) < len(self.files):
                return
        self._stop.set()
        self._finished.set()
        if self.on_change:
            self.on_change()

    # -- workers -----------------------------------------------------------------------------

    def _next_task(self) -> tuple[_Job, int, int] | None:
        with self._lock:
            return self._tasks.popleft() if self._tasks and not self._stop.is_set() else None

    def _worker(self, conns: fetch.Connections) -> None:
        slot = _Slot(self._take_buffer())
        try:
            while (task := self._next_task()) is not None:
                job, start, end = task
                try:
                    complete = self._run_range(conns, slot, job, start, end)
                except DownloadError as e:
                    self._fail(e)
                    return
                except Exception as e:  # a bug or an unexpected OS error: fail, never hang
                    log.exception("unexpected error fetching %s", job.remote.path)
                    self._fail(DownloadError(DOWNLOAD_FAILED, f"{job.remote.path}: {type(e).__name__}"))
                    return
                if not complete:
                    return
                with job.lock:
                    job.tasks_left -= 1
                    last = job.tasks_left == 0
                if last:
                    self._bytes_complete(job)
        finally:
            conns.close()

    def _run_range(self, conns: fetch.Connections, slot: _Slot, job: _Job, start: int, end: int) -> bool:
        """Fetch ``[start, end)`` with retries; False if stopped before the end."""
        pos = start
        attempts = total = 0
        while pos < end:
            if self._stop.is_set():
                return False
            before = pos
            try:
                pos = self._attempt(conns, slot, job, pos, end)
                continue
            except _Failed as f:
                pos, error = f.pos, f.error
            if self._stop.is_set():
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
            if self._stop.wait(delay):
                return False
        return True

    def _reset(self, job: _Job) -> None:
        self._release_held(job)
        with job.lock:
            lost = job.done.total()
            job.done = RangeSet()
            job.dirty = True
        with self._lock:
            self._downloaded -= lost

    def _target(self, job: _Job) -> tuple[str, dict[str, str], bool]:
        """(url, headers, from the redirect cache)."""
        cached = job.resolved
        if cached is not None:
            return cached[0], dict(cached[1]), True
        return job.remote.url, dict(job.remote.headers), False

    def _attempt(self, conns: fetch.Connections, slot: _Slot, job: _Job, pos: int, end: int) -> int:
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
        slot: _Slot,
        job: _Job,
        *,
        pos: int,
        stop_at: int,
    ) -> int:
        """Read the body into the slot's buffer and write it at ``pos``..``stop_at``; returns the
        position reached. Every written buffer is recorded (and offered to the hashing thread) at
        once, however the loop ends. A buffer is filled up to the next :data:`ALIGN` boundary of the
        file, so after a partial write (a flush, a resume point) the next full buffer is aligned
        again."""
        resp = opened.response
        # One raw read per call (readinto1): when a read fails, every byte before it is accounted
        # for, so a retry resumes at the exact byte. Chunked bodies need http.client's decoding.
        exact = not resp.chunked and resp.fp is not None and resp.length is not None
        read = resp.fp.readinto1 if exact else resp.readinto
        mv = memoryview(slot.buf)
        size = len(mv)
        limit = size - pos % ALIGN
        filled = 0
        flushed_at = time.monotonic()
        try:
            while pos + filled < stop_at:
                if filled and idle(opened.conn, IDLE_WAIT):
                    mv = self._commit(job, slot, pos, filled)
                    pos, filled, flushed_at = pos + filled, 0, time.monotonic()
                    limit = size - pos % ALIGN
                n = read(mv[filled : min(limit, stop_at - pos)])
                if not n:
                    raise http.client.IncompleteRead(b"", stop_at - pos - filled)
                if exact:
                    resp.length -= n  # type: ignore[operator]
                filled += n
                if filled == limit or pos + filled == stop_at:
                    mv = self._commit(job, slot, pos, filled)
                    pos, filled = pos + filled, 0
                    limit = size - pos % ALIGN
                elif (now := time.monotonic()) - flushed_at >= FLUSH_SECONDS:
                    mv = self._commit(job, slot, pos, filled)
                    pos, filled, flushed_at = pos + filled, 0, now
                    limit = size - pos % ALIGN
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

    def _commit(self, job: _Job, slot: _Slot, pos: int, n: int) -> memoryview:
        """Write the first ``n`` bytes of the slot's buffer at ``pos``, record them, and hand the
        buffer to the hashing thread when it is worth holding (the slot then gets a fresh one).
        Returns a view of the slot's buffer to read into next."""
        buf = slot.buf
        with memoryview(buf) as view:
            self._write(job, view[:n], pos, aligned=True)
        if job.hashers and self._hold(job, buf, pos, n):
            slot.buf = self._take_buffer()
        self._record(job, pos, pos + n)
        return memoryview(slot.buf)

    def _hold(self, job: _Job, buf: mmap.mmap, pos: int, n: int) -> bool:
        """Hand a written buffer to the hashing thread if it has room (see :data:`HOLD_BYTES`);
        False if the bytes will be read back from the part file instead."""
        deadline = time.monotonic() + HOLD_WAIT
        while True:
            with job.lock:
                if job.finalized or pos < job.hashed or pos in job.held:
                    return False
                # A buffer that extends the contiguous prefix is hashed next: it may use a second
                # budget, and its worker (the one the hash waits for) never waits.
                next_up = pos == job.done.prefix()
                with self._room:
                    if self._held_bytes + n <= HOLD_BYTES * (2 if next_up else 1):
                        self._held_bytes += n
                        job.held[pos] = (buf, n)
                        return True
                if next_up:
                    return False
            with self._room:
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    return False
                self._room.wait(min(left, 0.05))

    def _take_buffer(self) -> mmap.mmap:
        with self._buffers_lock:
            if self._free:
                return self._free.pop()
        return mmap.mmap(-1, self.buffer_size)

    def _give_back(self, buf: mmap.mmap, n: int) -> None:
        with self._room:
            self._held_bytes -= n
            if len(buf) == self.buffer_size:
                self._free.append(buf)
            self._room.notify_all()

    def _release_held(self, job: _Job) -> None:
        with job.lock:
            held = list(job.held.values())
            job.held.clear()
        for buf, n in held:
            self._give_back(buf, n)

    def _copy_local(self, job: _Job, pos: int, end: int) -> int:
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
            if self._stop.is_set():
                return pos
            n_want = min(BUFFER_SIZE, end - pos)
            try:
                n = os.copy_file_range(src, job.fd, n_want, pos, pos)
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise _Failed(pos, _storage_full(job)) from e
                if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    raise _Failed(
                        pos, DownloadError(DOWNLOAD_FAILED, f"copying {src_path}: {e.strerror}")
                    ) from e
                data = os.pread(src, n_want, pos)
                n = len(data)
                if n:
                    self._write(job, memoryview(data), pos)
                    self._record(job, pos, pos + n)
                    pos += n
                    continue
            if n == 0:
                raise _Failed(pos, DownloadError(DOWNLOAD_FAILED, f"{src_path} changed while copying"))
            self._record(job, pos, pos + n)
            pos += n
        return pos

    def _write(self, job: _Job, data: memoryview, offset: int, *, aligned: bool = False) -> None:
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
                raise _storage_full(job) from e
            raise DownloadError(DOWNLOAD_FAILED, f"cannot write {job.remote.path}: {e.strerror}") from e

    def _record(self, job: _Job, start: int, end: int) -> None:
        with job.lock:
            before = job.done.prefix()
            job.done.add(start, end)
            job.dirty = True
            advanced = job.done.prefix() > before
        with self._lock:
            self._downloaded += end - start
            self._fetched += end - start
        if advanced and job.hashers:
            self._poke_hash(job)

    # -- hashing and placement ---------------------------------------------------------------

    def _poke_hash(self, job: _Job) -> None:
        with job.lock:
            if job.hash_running or job.done.prefix() <= job.hashed or job.finalized:
                return
            job.hash_running = True
        assert self._hash_pool is not None
        try:
            self._hash_pool.submit(self._hash_step, job)
        except RuntimeError:  # pool shut down: the transfer is over
            with job.lock:
                job.hash_running = False

    def _hash_step(self, job: _Job) -> None:
        try:
            buf = bytearray(HASH_BUFFER)
            mv = memoryview(buf)
            while True:
                with job.lock:
                    target = job.done.prefix()
                    if target <= job.hashed or self._stop.is_set():
                        job.hash_running = False
                        complete = job.hashed == job.remote.size and not self._stop.is_set()
                        break
                pos = job.hashed
                while pos < target:
                    if self._stop.is_set():
                        break
                    with job.lock:
                        held = job.held.pop(pos, None)
                        upto = target if held else min((k for k in job.held if k > pos), default=target)
                    if held is not None:
                        # The bytes are still in the buffer they arrived in: no read-back.
                        held_buf, n = held
                        try:
                            with memoryview(held_buf) as view, view[:n] as data:
                                for h in job.hashers.values():
                                    h.update(data)
                        finally:
                            self._give_back(held_buf, n)
                        pos += n
                        job.hashed = pos
                        continue
                    while pos < min(upto, target):
                        if self._stop.is_set():
                            break
                        with job.io_lock:
                            if job.fd is None:
                                return
                            n = os.preadv(job.fd, [mv[: min(HASH_BUFFER, min(upto, target) - pos)]], pos)
                        if n <= 0:
                            raise DownloadError(DOWNLOAD_FAILED, f"{job.part.name} is shorter than recorded")
                        for h in job.hashers.values():
                            h.update(mv[:n])
                        pos += n
                    job.hashed = pos
            if complete:
                self._finalize(job)
        except DownloadError as e:
            self._fail(e)
        except Exception as e:
            log.exception("hashing %s failed", job.remote.path)
            self._fail(DownloadError(DOWNLOAD_FAILED, f"hashing {job.remote.path}: {type(e).__name__}"))
        finally:
            with job.lock:
                job.hash_running = False
            # bytes may have arrived between the last check and clearing the flag
            if not self._stop.is_set():
                self._poke_hash(job)

    def _bytes_complete(self, job: _Job) -> None:
        """Every byte of ``job`` is on disk: place it now, or once hashing has caught up."""
        if not job.hashers or job.remote.size == 0:
            try:
                self._finalize(job)
            except DownloadError as e:
                self._fail(e)
            return
        self._poke_hash(job)

    def _finalize(self, job: _Job) -> None:
        with job.lock:
            if job.finalized or job.done.total() != job.remote.size:
                return
            job.finalized = True
        remote = job.remote
        verified: list[Digest] = []
        self._release_held(job)
        for d in remote.digests:
            got = job.hashers[d.algorithm].hexdigest()
            if got != d.value:
                with job.io_lock:
                    for attr in ("fd", "direct_fd"):
                        fd = getattr(job, attr)
                        if fd is not None:
                            os.close(fd)
                            setattr(job, attr, None)
                partial.discard(job.plan.dest, remote.path)
                raise DownloadError(
                    CHECKSUM_MISMATCH, f"{remote.path}: {d.algorithm} expected {d.value}, got {got}"
                )
            verified.append(d)
        computed = (
            self._computed(remote, {a: job.hashers[a].hexdigest() for a in self.compute})
            if self.compute
            else ()
        )
        try:
            with job.io_lock:
                assert job.fd is not None
                os.ftruncate(job.fd, remote.size)
                os.fsync(job.fd)
                os.close(job.fd)
                job.fd = None
                if job.direct_fd is not None:
                    os.close(job.direct_fd)
                    job.direct_fd = None
                if job.src_fd is not None:
                    os.close(job.src_fd)
                    job.src_fd = None
            if job.plan.final.is_dir() and not job.plan.final.is_symlink():
                raise DownloadError(DOWNLOAD_FAILED, f"{remote.path}: a directory is in the way")
            self._before_first_placement()
            os.replace(job.part, job.plan.final)
            ident = partial.identity(remote)
            partial.save_state(
                job.state_file, partial.PartialState(ident, RangeSet([(0, remote.size)]), True)
            )
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise _storage_full(job) from e
            raise DownloadError(DOWNLOAD_FAILED, f"placing {remote.path}: {e.strerror}") from e
        with self._lock:
            self.results[remote.path] = FileResult(remote.path, remote.size, tuple(verified), computed)
        log.debug(
            "placed %s (%d bytes, verified %s)", remote.path, remote.size, [d.algorithm for d in verified]
        )
        self._maybe_finish()

    def _before_first_placement(self) -> None:
        if self.before_place is None or self._placing:
            return
        with self._place_lock:
            if not self._placing:
                self.before_place()
                self._placing = True

    # -- durability --------------------------------------------------------------------------

    def _checkpoint_loop(self) -> None:
        last_checkpoint = time.monotonic()
        while not self._stop.wait(WRITEBACK_SECONDS):
            checkpoint = time.monotonic() - last_checkpoint >= CHECKPOINT_SECONDS
            for job in self._jobs:
                if self._stop.is_set():
                    return
                try:
                    if checkpoint:
                        self._checkpoint(job)
                    else:
                        self._start_writeback(job)
                except OSError as e:
                    log.warning("cannot record progress of %s: %s", job.remote.path, e.strerror)
            if checkpoint:
                last_checkpoint = time.monotonic()

    def _start_writeback(self, job: _Job) -> None:
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

    def _checkpoint(self, job: _Job, *, force: bool = False) -> None:
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


def _changed(remote: RemoteFile, what: str | None) -> DownloadError:
    return DownloadError(
        DOWNLOAD_FAILED,
        f"{remote.path} changed at the source while downloading (expected {remote.size} bytes, got {what})",
    )


def _storage_full(job: _Job) -> DownloadError:
    return DownloadError(
        STORAGE_FULL, f"no space left on the device writing {job.remote.path} into {job.plan.dest}"
    )


def _size_of(path: Path) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if not os.path.isdir(path) else None


def _open_part(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DownloadError(STORAGE_FULL, f"no space left creating {path.name}") from e
        raise DownloadError(DOWNLOAD_FAILED, f"cannot create {path}: {e.strerror}") from e


def _open_direct(path: Path) -> int | None:
    """A second descriptor of the part file for ``O_DIRECT`` writes; None where the platform or
    the filesystem has no direct I/O (tmpfs, some FUSE and network filesystems)."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_CLOEXEC | flag)
    except OSError:
        return None


def _check_space(dest: Path, needed: int) -> None:
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
