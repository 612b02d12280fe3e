"""Hashing and placement: every file's digests computed as its bytes land (from the buffers held
for it, :mod:`.holding`, or read back from its part file), checked against the source's, and the
verified file synced and moved into place (:meth:`Placement.finalize`). A digest the source does not
give can be computed in the same pass (``compute``)."""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from aim_cache_jobs.downloader import disk, partial
from aim_cache_jobs.downloader.errors import CHECKSUM_MISMATCH, DOWNLOAD_FAILED, DownloadError
from aim_cache_jobs.downloader.filejob import FileJob, FileResult
from aim_cache_jobs.downloader.holding import Buffers
from aim_cache_jobs.downloader.listing import Digest, RemoteFile
from aim_cache_jobs.downloader.ranges import RangeSet

log = logging.getLogger("aim_cache_jobs.downloader")

MiB = 1 << 20
HASH_BUFFER = 1 * MiB
HASH_THREADS = 2


@dataclass(kw_only=True, eq=False)
class Placement:
    """Hashes, verifies and places a transfer's files. ``fail`` is told of an error (the transfer
    fails), ``placed`` of every file in place; ``before_place`` is called once, before the first file
    is moved into place; ``stop`` ends the hashing."""

    compute: tuple[str, ...]
    before_place: Callable[[], None] | None
    buffers: Buffers
    stop: threading.Event
    fail: Callable[[DownloadError], None]
    placed: Callable[[FileResult], None]
    pool: ThreadPoolExecutor | None = None
    _placing: bool = False
    _place_lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        self.pool = ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="aim-dl-hash")

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def computed(self, remote: RemoteFile, values: dict[str, str]) -> tuple[Digest, ...]:
        """The digests of :attr:`compute` the source does not give, from ``values`` (algorithm ->
        hex digest) where known."""
        given = {d.algorithm for d in remote.digests}
        return tuple(
            Digest(algorithm, values[algorithm])
            for algorithm in self.compute
            if algorithm not in given and algorithm in values
        )

    def poke(self, job: FileJob) -> None:
        with job.lock:
            if job.hash_running or job.done.prefix() <= job.hashed or job.finalized:
                return
            job.hash_running = True
        assert self.pool is not None
        try:
            self.pool.submit(self._step, job)
        except RuntimeError:  # pool shut down: the transfer is over
            with job.lock:
                job.hash_running = False

    def _step(self, job: FileJob) -> None:
        try:
            buf = bytearray(HASH_BUFFER)
            mv = memoryview(buf)
            while True:
                with job.lock:
                    target = job.done.prefix()
                    if target <= job.hashed or self.stop.is_set():
                        job.hash_running = False
                        complete = job.hashed == job.remote.size and not self.stop.is_set()
                        break
                pos = job.hashed
                while pos < target:
                    if self.stop.is_set():
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
                            self.buffers.give_back(held_buf, n)
                        pos += n
                        job.hashed = pos
                        continue
                    while pos < min(upto, target):
                        if self.stop.is_set():
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
                self.finalize(job)
        except DownloadError as e:
            self.fail(e)
        except Exception as e:
            log.exception("hashing %s failed", job.remote.path)
            self.fail(DownloadError(DOWNLOAD_FAILED, f"hashing {job.remote.path}: {type(e).__name__}"))
        finally:
            with job.lock:
                job.hash_running = False
            # bytes may have arrived between the last check and clearing the flag
            if not self.stop.is_set():
                self.poke(job)

    def bytes_complete(self, job: FileJob) -> None:
        """Every byte of ``job`` is on disk: place it now, or once hashing has caught up."""
        if not job.hashers or job.remote.size == 0:
            try:
                self.finalize(job)
            except DownloadError as e:
                self.fail(e)
            return
        self.poke(job)

    def finalize(self, job: FileJob) -> None:
        with job.lock:
            if job.finalized or job.done.total() != job.remote.size:
                return
            job.finalized = True
        remote = job.remote
        verified: list[Digest] = []
        self.buffers.release(job)
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
            self.computed(remote, {a: job.hashers[a].hexdigest() for a in self.compute})
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
                raise disk.storage_full(job) from e
            raise DownloadError(DOWNLOAD_FAILED, f"placing {remote.path}: {e.strerror}") from e
        log.debug(
            "placed %s (%d bytes, verified %s)", remote.path, remote.size, [d.algorithm for d in verified]
        )
        self.placed(FileResult(remote.path, remote.size, tuple(verified), computed))

    def _before_first_placement(self) -> None:
        if self.before_place is None or self._placing:
            return
        with self._place_lock:
            if not self._placing:
                self.before_place()
                self._placing = True
