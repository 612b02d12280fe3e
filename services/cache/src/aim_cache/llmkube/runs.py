"""Fetches of LLMKube Models running in this process, one per cache directory.

A fetch probes the source's fingerprint, reads a remote GGUF header early (so ``status.gguf``
shows while a large file downloads), lists the staged files and hands them to the cache's
downloader, which writes each file beside the cache, hashes every byte as it arrives (sha256 always;
``spec.sha256`` checked on the primary file), and only then renames it into place and writes its
manifest. A mismatch discards the new bytes: the good copy already in place is never truncated.
Last, a small record of the upstream fingerprint the bytes came from (``.aim-source.json``) is
written next to the manifest: drift is measured against what is on disk, not against status.

Runs are keyed by cache key, so Models sharing a source share one fetch; when a run ends every
Model with that key is woken (level-triggered: the reconcile reads the outcome).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aim_cache.download_metrics import DownloadMeter
from aim_cache.inprocess import Run, Runs
from aim_cache.llmkube import drift, fetch
from aim_cache.llmkube.sources import SOURCE_NOT_ALLOWED, Source, SourceError, SourceUnreachable
from aim_cache_jobs.downloader import (
    ADDRESS_NOT_ALLOWED,
    SOURCE_UNREACHABLE,
    DownloadError,
    Progress,
    download_listing,
)
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.domain.outbound import STRICT, OutboundPolicy

DOWNLOADS = DownloadMeter("llmkube")

SIDECAR = ".aim-source.json"
Wake = Callable[[str], Awaitable[None]]


async def _no_wake(key: str) -> None:
    return None


@dataclass(frozen=True)
class Recorded:
    """What upstream looked like when the bytes on disk were fetched."""

    fingerprint: drift.Fingerprint
    recorded_at: float  # wall clock


def read_sidecar(dest: Path) -> Recorded | None:
    """The record in ``dest``, or None if there is none or it is damaged (then the next probe
    records a new baseline)."""
    try:
        data = json.loads((dest / SIDECAR).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    etag, length, mtime, at = (data.get(k) for k in ("etag", "length", "mtime", "recordedAt"))
    if etag is not None and not isinstance(etag, str):
        return None
    if length is not None and (not isinstance(length, int) or isinstance(length, bool)):
        return None
    if mtime is not None and (not isinstance(mtime, int | float) or isinstance(mtime, bool)):
        return None
    if not isinstance(at, int | float) or isinstance(at, bool):
        return None
    return Recorded(drift.Fingerprint(etag=etag, length=length, mtime=mtime), float(at))


def write_sidecar(dest: Path, recorded: Recorded) -> None:
    """Atomically (temp file and rename)."""
    fp = recorded.fingerprint
    tmp = dest / f"{SIDECAR}.tmp-{os.getpid()}"
    payload = {"etag": fp.etag, "length": fp.length, "mtime": fp.mtime, "recordedAt": recorded.recorded_at}
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, dest / SIDECAR)


def spec_hash(model: LLMKubeModel) -> str:
    """What a fetch depends on: the source, the file set and the expected digest, as written (a run
    or a verify round made for another spec is not this one's)."""
    relevant = model.fetch_inputs
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Order:
    """Everything a run needs, decided by the reconcile."""

    source: Source
    raw: str
    local_paths: tuple[str, ...]
    expected_sha256: str | None
    read_header: bool
    guard: fetch.Guard
    outbound: OutboundPolicy = STRICT  # the reconcile gives the service's (default: the strict one)


class Fetches:
    """The fetches of LLMKube Models in this process, one per cache directory (the registry of this
    process's runs, :mod:`aim_cache.inprocess`, keyed by cache key)."""

    def __init__(
        self, root: Path, wake: Wake = _no_wake, *, concurrency: int = 2, stall_timeout: float = 60.0
    ) -> None:
        self.root = root
        self.wake = wake
        self.stall_timeout = stall_timeout
        self.runs = Runs(concurrency=concurrency, what="fetch")

    def dest(self, key: str) -> Path:
        return self.root / key

    def get(self, key: str) -> Run | None:
        return self.runs.get(key)

    def start(self, order: Order, *, spec_hash: str, attempt: int) -> Run:
        key = order.source.cache_key
        old = self.runs.get(key)
        if old is not None and old.running:
            raise RuntimeError(f"a fetch into {key} is already running")
        kind: Literal["download", "copy"] = "copy" if order.source.kind == "file" else "download"

        async def work(run: Run) -> None:
            await self._fetch(order, run)

        async def ended(run: Run) -> None:
            await self.wake(run.key)

        run = Run(key=key, spec_hash=spec_hash, attempt=attempt, kind=kind)
        return self.runs.start(run, work, ended, label=f"fetch into {self.dest(key)}")

    async def close(self) -> None:
        await self.runs.close()

    async def _fetch(self, order: Order, run: Run) -> None:
        """Probe, read the header, list and download; every failure as a :class:`DownloadError`
        (a refusal at connect time as this path's ``SourceNotAllowed``)."""
        try:
            await self._fetch_into(self.dest(run.key), order, run)
        except DownloadError as exc:
            if exc.reason == ADDRESS_NOT_ALLOWED:  # refused at connect time: this path's reason
                raise DownloadError(SOURCE_NOT_ALLOWED, exc.message, transient=False) from None
            raise
        except SourceError as exc:  # a redirect to a refused address
            raise DownloadError(exc.reason, exc.message, transient=False) from None
        except SourceUnreachable as exc:
            raise DownloadError(SOURCE_UNREACHABLE, str(exc)) from None

    async def _fetch_into(self, dest: Path, order: Order, run: Run) -> None:
        def on_progress(progress: Progress) -> None:
            run.progressed(progress, DOWNLOADS)

        run.summary = "probing the source"
        fp = await fetch.probe(order.source, order.local_paths, order.guard, outbound=order.outbound)
        primary = order.source.files[0] if order.source.files else None  # oci: once Ready
        if order.read_header and primary is not None and primary.url is not None:
            run.gguf = await fetch.remote_header(primary.url, order.guard, outbound=order.outbound)
        listing = await fetch.listing(
            order.source,
            order.raw,
            order.local_paths,
            expected_sha256=order.expected_sha256,
            revision=fetch.revision_of(fp),
            guard=order.guard,
            outbound=order.outbound,
        )
        run.manifest = await download_listing(
            listing,
            dest,
            on_progress=on_progress,
            stall_timeout=self.stall_timeout,
            compute=("sha256",),
            guard=fetch.download_guard(order.guard),
            policy=order.outbound,
        )
        if fp is not None:
            await asyncio.to_thread(write_sidecar, dest, Recorded(fp, time.time()))
