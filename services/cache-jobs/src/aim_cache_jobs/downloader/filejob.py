"""What a transfer knows of each file: the plan (source, final path, destination), the file being
downloaded (its part file's descriptors, the ranges on disk, the hashing position and the buffers held
for it), and the result once it is placed."""

from __future__ import annotations

import hashlib
import mmap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_cache_jobs.downloader import partial
from aim_cache_jobs.downloader.listing import Digest, RemoteFile
from aim_cache_jobs.downloader.ranges import RangeSet


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
class FileJob:
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


@dataclass(frozen=True)
class FileResult:
    """A placed file: the source's digests it was verified against, and the digests computed for
    the algorithms of ``Transfer.compute`` the source gives no value for."""

    path: str
    size: int
    verified: tuple[Digest, ...]
    computed: tuple[Digest, ...] = ()
