"""The transfer engine: fetches planned files into ``.part`` files with blocking sockets in worker
threads, hashes every byte from the buffer it arrived in, and moves each verified file into place.

Why threads and blocking sockets: ``readinto`` into a large reusable buffer followed by one
``os.pwrite`` per buffer spends its time in the kernel with the GIL released, where a pure-Python
async loop pays interpreter work for every chunk. Large files are cut into ranges handed out in file
order to ``connections`` workers (small files simply run concurrently). A written buffer is handed to
the file's hashing thread (hashlib releases the GIL), which consumes the file in order: a buffer
that arrived ahead of the hash position is held in memory (:mod:`.holding`) and anything not
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

This module plans and coordinates; fetching a range is :mod:`.rangefetch`, the files it plans
:mod:`.filejob`, the buffers
:mod:`.holding`, the part files on disk and their durability :mod:`.disk`, hashing and placing the
files :mod:`.placement`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import threading
from collections import deque
from collections.abc import Callable, Sequence

from aim_cache_jobs.downloader import disk, fetch, partial, rangefetch, writepath
from aim_cache_jobs.downloader.disk import Durability
from aim_cache_jobs.downloader.errors import (
    DOWNLOAD_FAILED,
    DownloadError,
)
from aim_cache_jobs.downloader.filejob import FileJob, FileResult, PlannedFile, new_hasher
from aim_cache_jobs.downloader.holding import Buffers
from aim_cache_jobs.downloader.listing import Digest
from aim_cache_jobs.downloader.placement import Placement
from aim_cache_jobs.downloader.rangefetch import RangeFetcher, Slot
from aim_cache_jobs.downloader.ranges import RangeSet, split
from aimcore.domain.outbound import STRICT, OutboundPolicy

log = logging.getLogger("aim_cache_jobs.downloader")

KiB = 1 << 10
MiB = 1 << 20
CHUNK_SIZE = 8 * MiB
"""Bytes per range request: small enough that ranges complete close to file order (what arrives
ahead of the hash position is held in memory, see
:data:`~aim_cache_jobs.downloader.holding.HOLD_BYTES`) and a retry refetches little,
large enough that request overhead does not matter (hf_transfer uses 10 MiB)."""
PROBE_MIN_BYTES = 256 * MiB
"""A transfer smaller than this does not run a write probe itself (``direct_io=None``): it uses
the verdict if one is known (``download`` probes while listing) and ``O_DIRECT`` otherwise."""


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
        self.buffer_size = buffer_size or rangefetch.BUFFER_SIZE
        self.reusable = reusable or {}
        self.on_change = on_change
        self.direct_io = direct_io
        self.write_path: writepath.Choice | None = None
        """How full buffers are written (set by :meth:`prepare`; ``direct_io=None``: measured)."""
        self.compute = tuple(dict.fromkeys(compute))
        self.before_place = before_place
        self.guard = guard
        self.policy = policy
        self.error: DownloadError | None = None
        self.results: dict[str, FileResult] = {}
        self.total_bytes = sum(p.remote.size for p in self.files)
        self._jobs: list[FileJob] = []
        self._tasks: deque[tuple[FileJob, int, int]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._downloaded = 0
        self._fetched = 0
        self._threads: list[threading.Thread] = []
        self._conns: list[fetch.Connections] = []
        self.buffers = Buffers(self.buffer_size, self._stop)
        self.durability = Durability(self._jobs, self._stop)
        self.fetcher = RangeFetcher(self.stall_timeout, self.buffers, self._stop, self._record, self._lost)
        self.placement = Placement(
            compute=self.compute,
            before_place=before_place,
            buffers=self.buffers,
            stop=self._stop,
            fail=self._fail,
            placed=self._placed,
        )
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
            job = FileJob(plan)
            remote = plan.remote
            ident = partial.identity(remote)
            state = partial.load_state(job.state_file)
            if plan.remote.path in self.reusable and disk.size_of(plan.final) == remote.size:
                partial.save_state(
                    job.state_file, partial.PartialState(ident, RangeSet([(0, remote.size)]), True)
                )
                self._adopt(job, self.reusable[remote.path])
                continue
            if state is not None and state.identity == ident:
                if state.placed and disk.size_of(plan.final) == remote.size:
                    self._adopt(job, remote.digests)
                    continue
                part_size = disk.size_of(job.part)
                done = state.done.clipped(remote.size)
                on_disk = part_size is not None and (not done.ranges() or part_size >= done.ranges()[-1][1])
                if on_disk and (remote.ranges or done.total() == remote.size):
                    job.done = done
            if not job.done.ranges():
                partial.discard(plan.dest, remote.path)
            job.part.parent.mkdir(parents=True, exist_ok=True)
            job.fd = disk.open_part(job.part)
            if direct and remote.size >= disk.ALIGN and not remote.url.startswith("file://"):
                job.direct_fd = disk.open_direct(job.part)
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
            disk.check_space(self.files[0].dest, needed)

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

    def _adopt(self, job: FileJob, known: tuple[Digest, ...]) -> None:
        """A file already in place and verified (by an interrupted run or an earlier revision),
        with the digests ``known`` for it. It is not read again: its computed digests are those
        ``known`` has (an earlier manifest's, passed on by ``reusable``); for a file an interrupted
        run placed (its state records no digests) or one whose earlier manifest lacks them, they
        stay empty."""
        remote = job.remote
        job.finalized = True
        self._downloaded += remote.size
        verified = tuple(d for d in remote.digests if d in known)
        computed = (
            self.placement.computed(remote, {d.algorithm: d.value for d in known}) if self.compute else ()
        )
        self.results[remote.path] = FileResult(remote.path, remote.size, verified, computed)

    # -- running -----------------------------------------------------------------------------

    def start(self) -> None:
        self.placement.start()
        for job in list(self._jobs):
            if job.tasks_left == 0:
                self.placement.bytes_complete(job)
            elif job.hashers and job.done.prefix():
                self.placement.poke(job)  # re-read the resumed prefix while the rest downloads
        n_workers = min(self.connections, max(1, len(self._tasks)))
        for i in range(n_workers if self._tasks else 0):
            conns = fetch.Connections(self.stall_timeout, self.ssl_context, self.guard, self.policy)
            self._conns.append(conns)
            t = threading.Thread(target=self._worker, args=(conns,), name=f"aim-dl-{i}", daemon=True)
            self._threads.append(t)
        checkpoint = threading.Thread(target=self.durability.run, name="aim-dl-checkpoint", daemon=True)
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
        self.placement.shutdown()
        for job in self._jobs:
            if not job.finalized:
                self.durability.checkpoint(job, force=True)
            self.buffers.release(job)
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

    def _placed(self, result: FileResult) -> None:
        with self._lock:
            self.results[result.path] = result
        self._maybe_finish()

    # -- workers -----------------------------------------------------------------------------

    def _next_task(self) -> tuple[FileJob, int, int] | None:
        with self._lock:
            return self._tasks.popleft() if self._tasks and not self._stop.is_set() else None

    def _worker(self, conns: fetch.Connections) -> None:
        slot = Slot(self.buffers.take())
        try:
            while (task := self._next_task()) is not None:
                job, start, end = task
                try:
                    complete = self.fetcher.run_range(conns, slot, job, start, end)
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
                    self.placement.bytes_complete(job)
        finally:
            conns.close()

    def _lost(self, n: int) -> None:
        with self._lock:
            self._downloaded -= n

    def _record(self, job: FileJob, start: int, end: int) -> None:
        with job.lock:
            before = job.done.prefix()
            job.done.add(start, end)
            job.dirty = True
            advanced = job.done.prefix() > before
        with self._lock:
            self._downloaded += end - start
            self._fetched += end - start
        if advanced and job.hashers:
            self.placement.poke(job)
