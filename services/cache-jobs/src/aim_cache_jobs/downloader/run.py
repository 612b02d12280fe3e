"""``download()``: list a source, fetch it into a destination directory, verify it, and record the
manifest last, from asyncio. The transfer runs in threads (:mod:`.transfer`); this module drives it
from the event loop: progress callbacks come from the loop thread (a few per second plus one per
phase change), cancellation stops the threads and keeps partial data for the next attempt, and a
destination whose manifest already matches the listing is returned without transferring anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import functools
import logging
import os
import shutil
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from aim_cache_jobs.downloader import manifest as manifests
from aim_cache_jobs.downloader import writepath
from aim_cache_jobs.downloader.errors import DOWNLOAD_FAILED, INVALID_SOURCE, DownloadError
from aim_cache_jobs.downloader.fetch import make_ssl_context
from aim_cache_jobs.downloader.filejob import PlannedFile
from aim_cache_jobs.downloader.filters import NONE, DownloadFilter
from aim_cache_jobs.downloader.listing import DIGEST_ALGORITHMS, PARTIAL_DIR, Digest, Listing
from aim_cache_jobs.downloader.manifest import Manifest, ManifestFile
from aim_cache_jobs.downloader.partial import partial_dir
from aim_cache_jobs.downloader.progress import Progress
from aim_cache_jobs.downloader.sources import list_source
from aim_cache_jobs.downloader.transfer import Transfer
from aimcore.domain.outbound import STRICT, OutboundPolicy

log = logging.getLogger("aim_cache_jobs.downloader")

PROGRESS_INTERVAL = 0.5
"""Minimum seconds between two ``on_progress`` calls of the same phase."""
POLL_INTERVAL = 0.25
STRONG_DIGESTS = frozenset({"sha256", "git-sha1"})
"""Digests trusted to recognise a file an earlier download already verified (not md5)."""

ProgressCallback = Callable[[Progress], None]


class _Emitter:
    """Calls ``on_progress`` at most every :data:`PROGRESS_INTERVAL`, and always on a new phase."""

    def __init__(self, callback: ProgressCallback | None) -> None:
        self.callback = callback
        self.last_phase: str | None = None
        self.last_time = 0.0
        self.last: Progress | None = None

    def __call__(self, p: Progress, *, force: bool = False) -> None:
        if self.callback is None:
            return
        now = time.monotonic()
        new_phase = p.phase != self.last_phase
        if not (force or new_phase) and (now - self.last_time < PROGRESS_INTERVAL or p == self.last):
            return
        self.last_phase, self.last_time, self.last = p.phase, now, p
        try:
            self.callback(p)
        except Exception:  # a broken progress consumer must not break the download
            log.exception("progress callback failed")


async def probe_size(
    uri: str, env: Mapping[str, str], *, policy: OutboundPolicy = STRICT, keep: DownloadFilter = NONE
) -> int:
    """Total bytes of the files of ``uri`` that ``keep`` keeps, from its listing (for sizing a
    volume before downloading: the download applies the same filter)."""
    return (await list_source(uri, env, policy=policy, keep=keep)).total_bytes


async def download(
    uri: str,
    dest: Path,
    *,
    env: Mapping[str, str],
    on_progress: ProgressCallback | None = None,
    stall_timeout: float = 60.0,
    connections: int = 8,
    expected_sha256: str | None = None,
    direct_io: bool | None = None,
    compute: Sequence[str] = (),
    policy: OutboundPolicy = STRICT,
    ranges: bool = True,
    keep: DownloadFilter = NONE,
) -> Manifest:
    """Download the files of ``uri`` that ``keep`` keeps (default: all) into ``dest`` and return
    its manifest (see the package docstring); files of an earlier download of ``dest`` that the
    filter leaves out are removed when it completes.
    ``direct_io=False`` writes through the page cache even where ``O_DIRECT`` works, ``True`` uses
    ``O_DIRECT`` where it works, ``None`` (the default) measures which is faster on the
    destination's filesystem (:mod:`aim_cache_jobs.downloader.writepath`). ``policy``
    is the outbound address policy every connection applies (the process's, read at start-up;
    default: the strict one; ``env`` is the model's own and never changes it).

    ``compute`` names digest algorithms (``sha256``, ``git-sha1``, ``md5``) to compute for every
    file the source gives no such digest for, while its bytes arrive (no second pass): they are
    the manifest files' ``computed`` digests (:meth:`ManifestFile.digest` reads either kind).
    Files are not read again to compute them: a file kept from an earlier download has the
    digests that download recorded, so one may lack an algorithm (e.g. a destination completed
    without ``compute`` is returned as it is)."""
    emit = _Emitter(on_progress)
    emit(Progress(0, 0, 0, 0, "listing"), force=True)
    # The write probe (direct_io=None) runs while the source is listed, behind its round trips.
    probing = asyncio.create_task(asyncio.to_thread(writepath.warm, dest)) if direct_io is None else None
    try:
        listing = await list_source(uri, env, expected_sha256=expected_sha256, policy=policy, keep=keep)
    finally:
        if probing is not None:
            with contextlib.suppress(Exception):
                await probing
    return await download_listing(
        listing,
        dest,
        on_progress=on_progress,
        stall_timeout=stall_timeout,
        connections=connections,
        direct_io=direct_io,
        compute=compute,
        policy=policy,
        ranges=ranges,
        _emit=emit,
    )


async def download_listing(
    listing: Listing,
    dest: Path,
    *,
    on_progress: ProgressCallback | None = None,
    stall_timeout: float = 60.0,
    connections: int = 8,
    direct_io: bool | None = None,
    compute: Sequence[str] = (),
    guard: Callable[[str], None] | None = None,
    policy: OutboundPolicy = STRICT,
    ranges: bool = True,
    _emit: _Emitter | None = None,
) -> Manifest:
    """:func:`download` for a listing obtained earlier (e.g. by a size probe). ``guard`` is called
    with ``scheme://host:port/`` before any connection to a new origin (redirects included) and
    raises :class:`DownloadError` to refuse it; ``policy`` (as for :func:`download`) is then
    applied when connecting; ``ranges`` as for :func:`download`."""
    _check_options(stall_timeout, connections, compute)
    if not ranges:
        listing = dataclasses.replace(
            listing, files=tuple(dataclasses.replace(f, ranges=False) for f in listing.files)
        )
    emit = _emit or _Emitter(on_progress)
    dest = await asyncio.to_thread(_make_dest, dest)
    total, n_files = listing.total_bytes, len(listing.files)
    existing = await asyncio.to_thread(manifests.read_manifest, dest)
    if existing is not None and await asyncio.to_thread(manifests.matches, existing, listing, dest):
        log.info("%s is already complete in %s", listing.source, dest)
        emit(Progress(total, total, n_files, n_files, "done"), force=True)
        return existing

    lock_fd = await asyncio.to_thread(_lock, dest)
    try:
        plans, reusable = await asyncio.to_thread(_plan, listing, dest, existing)
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def on_change() -> None:
            loop.call_soon_threadsafe(wake.set)

        engine = Transfer(
            plans,
            connections=connections,
            stall_timeout=stall_timeout,
            ssl_context=make_ssl_context(listing.tls_verify) if _needs_tls(listing) else None,
            reusable=reusable,
            on_change=on_change,
            direct_io=direct_io,
            compute=compute,
            guard=guard,
            policy=policy,
            # The old manifest describes the destination until a file in it is replaced: a
            # download that fails before (e.g. a checksum mismatch) leaves it, and its files, as
            # they were.
            before_place=None if existing is None else functools.partial(manifests.remove_manifest, dest),
        )
        await _transfer(engine, wake, emit, total, n_files)
        done = manifests.build(
            listing,
            (ManifestFile(r.path, r.size, r.verified, r.computed) for r in engine.results.values()),
            completed_at=time.time(),
        )
        await asyncio.to_thread(_complete, dest, listing, existing, done)
    finally:
        await asyncio.to_thread(os.close, lock_fd)
    log.info(
        "%s: %d files, %d bytes in %s, verified %s",
        listing.source,
        len(done.files),
        done.total_bytes,
        dest,
        ", ".join(done.verified) or "nothing (the source gives no digests)",
    )
    emit(Progress(total, total, n_files, n_files, "done"), force=True)
    return done


def _check_options(stall_timeout: float, connections: int, compute: Sequence[str]) -> None:
    if stall_timeout <= 0 or connections < 1:
        raise DownloadError(INVALID_SOURCE, "stall_timeout must be positive and connections at least 1")
    unknown = [a for a in compute if a not in DIGEST_ALGORITHMS]
    if unknown:
        raise DownloadError(
            INVALID_SOURCE, f"cannot compute {', '.join(unknown)} (known: {', '.join(DIGEST_ALGORITHMS)})"
        )


async def _transfer(engine: Transfer, wake: asyncio.Event, emit: _Emitter, total: int, n_files: int) -> None:
    """Run ``engine`` to its end, offering progress whenever it says something changed (``wake``)
    and at least every :data:`POLL_INTERVAL`; its threads are joined and its partial state kept
    however it ends (cancelled included); its error is raised."""
    try:
        await asyncio.to_thread(engine.prepare)
        engine.start()
        emit(_snapshot(engine, n_files, "downloading"), force=True)
        while not engine.finished:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), POLL_INTERVAL)
            wake.clear()
            phase = "verifying" if engine.downloaded_bytes >= total else "downloading"
            emit(_snapshot(engine, n_files, phase))
    finally:
        # On success, failure or cancellation alike: join the threads, persist partial state.
        await _shielded(asyncio.to_thread(engine.close))
    if engine.error is not None:
        raise engine.error
    emit(_snapshot(engine, n_files, "verifying"))


async def _shielded(work: Coroutine[Any, Any, None]) -> None:
    """Await ``work`` to the end even if the caller is cancelled meanwhile (then re-raise)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
    task.result()
    if cancelled:
        raise asyncio.CancelledError


def _snapshot(engine: Transfer, n_files: int, phase: str) -> Progress:
    return Progress(engine.downloaded_bytes, engine.total_bytes, engine.files_done, n_files, phase)


def _needs_tls(listing: Listing) -> bool:
    return listing.tls_verify is not True or any(f.url.startswith("https://") for f in listing.files)


def _make_dest(dest: Path) -> Path:
    """Create ``dest``; returns it as an absolute path."""
    dest = Path(dest).absolute()
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DownloadError(DOWNLOAD_FAILED, f"cannot create {dest}: {e.strerror}") from e
    return dest


def _lock(dest: Path) -> int:
    """An exclusive lock on ``dest`` for this process (a second downloader fails fast)."""
    fd = os.open(dest / (PARTIAL_DIR + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        os.close(fd)
        raise DownloadError(DOWNLOAD_FAILED, f"another download into {dest} is in progress") from e
    return fd


def _plan(
    listing: Listing, dest: Path, existing: Manifest | None
) -> tuple[list[PlannedFile], dict[str, tuple[Digest, ...]]]:
    """Validate every final path (inside ``dest``, after following what already exists), make the
    directories, and find files an earlier complete download already verified with the same strong
    digest (a new revision that changed only some files fetches only those). A digest the earlier
    download computed counts like a verified one: it is the hash of the bytes in place. A reusable
    file maps to the digests known for it: the source's that match, then the other recorded ones
    (which can supply computed digests without reading the file)."""
    real_dest = dest.resolve()
    plans: list[PlannedFile] = []
    for remote in listing.files:
        final = dest / remote.path
        outside = DownloadError(INVALID_SOURCE, f"{remote.path} would be written outside {dest}")
        # Check what exists before creating anything: a symlinked directory must not lead out.
        ancestor = final.parent
        while not os.path.lexists(ancestor):
            ancestor = ancestor.parent
        if not ancestor.resolve().is_relative_to(real_dest):
            raise outside
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DownloadError(DOWNLOAD_FAILED, f"cannot create the directory of {remote.path}: {e}") from e
        if not final.parent.resolve().is_relative_to(real_dest) or (
            final.is_symlink() and not final.resolve().is_relative_to(real_dest)
        ):
            raise outside
        plans.append(PlannedFile(remote, final, dest))
    reusable: dict[str, tuple[Digest, ...]] = {}
    if existing is not None:
        recorded = {f.path: f for f in existing.files}
        for remote in listing.files:
            old = recorded.get(remote.path)
            if old is None or old.size != remote.size:
                continue
            known = (*old.digests, *old.computed)
            strong = [d for d in remote.digests if d.algorithm in STRONG_DIGESTS]
            if strong and all(d in known for d in strong):
                confirmed = tuple(d for d in remote.digests if d in known)
                algorithms = {d.algorithm for d in confirmed}
                reusable[remote.path] = (*confirmed, *(d for d in known if d.algorithm not in algorithms))
        # The old manifest stays until a file is replaced (``before_place``) or removed (_complete).
    partial_dir(dest).mkdir(exist_ok=True)
    return plans, reusable


def _complete(dest: Path, listing: Listing, existing: Manifest | None, done: Manifest) -> None:
    """Drop files of the previous download that the new listing lacks, make the placements durable,
    write the manifest (last), and clean up the partial directory."""
    wanted = {f.path for f in listing.files}
    if existing is not None:
        manifests.remove_manifest(dest)  # still there if no file was replaced
        for old in existing.files:
            if old.path not in wanted:
                with contextlib.suppress(FileNotFoundError):
                    (dest / old.path).unlink()
    for directory in sorted({(dest / f.path).parent for f in listing.files}):
        manifests.fsync_dir(directory)
    manifests.write_manifest(dest, done)
    shutil.rmtree(partial_dir(dest), ignore_errors=True)
