"""The buffers a transfer's workers read into, and those held for the hashing threads: a written
buffer that arrived ahead of a file's hash position is kept in memory (up to :data:`HOLD_BYTES`), so
its bytes are hashed without being read back from the part file; a buffer that does not fit is
dropped and its bytes read back instead."""

from __future__ import annotations

import mmap
import threading
import time

from aim_cache_jobs.downloader.filejob import FileJob

MiB = 1 << 20
HOLD_BYTES = 64 * MiB
"""Written buffers kept in memory for the hashing thread, per transfer, when they arrived ahead of
the hash position (several connections). A worker whose buffer does not fit waits for room (the
connection that holds the hash back then has the bandwidth to itself), up to :data:`HOLD_WAIT`;
then the buffer is dropped and the hashing thread reads those bytes back from the part file."""
HOLD_WAIT = 2.0


class Buffers:
    """The free buffers (``buffer_size`` bytes each, page-aligned) and the budget of held ones; a
    worker waiting for room gives up when ``stop`` is set."""

    def __init__(self, buffer_size: int, stop: threading.Event) -> None:
        self.buffer_size = buffer_size
        self.stop = stop
        self._free: list[mmap.mmap] = []
        self._held_bytes = 0
        self._buffers_lock = threading.Lock()
        self._room = threading.Condition(self._buffers_lock)

    def take(self) -> mmap.mmap:
        with self._buffers_lock:
            if self._free:
                return self._free.pop()
        return mmap.mmap(-1, self.buffer_size)

    def give_back(self, buf: mmap.mmap, n: int) -> None:
        with self._room:
            self._held_bytes -= n
            if len(buf) == self.buffer_size:
                self._free.append(buf)
            self._room.notify_all()

    def hold(self, job: FileJob, buf: mmap.mmap, pos: int, n: int) -> bool:
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
                if left <= 0 or self.stop.is_set():
                    return False
                self._room.wait(min(left, 0.05))

    def release(self, job: FileJob) -> None:
        with job.lock:
            held = list(job.held.values())
            job.held.clear()
        for buf, n in held:
            self.give_back(buf, n)
