"""Running a download through its protocol sequence (:mod:`.protocols`): each protocol in turn
until one succeeds, the next one only after a failure another protocol might not meet. The caller
is told of every attempt as it starts (the download Job reports it in ``status.download``), and a
failure names the attempt it ended on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from aim_cache_jobs.downloader import protocols
from aim_cache_jobs.downloader.downloadstate import Attempt
from aim_cache_jobs.downloader.errors import DownloadError
from aim_cache_jobs.downloader.filters import NONE, DownloadFilter
from aim_cache_jobs.downloader.manifest import Manifest
from aim_cache_jobs.downloader.run import ProgressCallback, download
from aimcore.domain.outbound import STRICT, OutboundPolicy

log = logging.getLogger("aim_cache_jobs.downloader")


class SequenceFailed(DownloadError):
    """The download failed on ``attempt`` (the last of the sequence, or one whose failure ends it):
    that attempt's error, with the attempt."""

    def __init__(self, error: DownloadError, attempt: Attempt) -> None:
        super().__init__(error.reason, error.message, transient=error.transient)
        self.attempt = attempt


async def download_in_sequence(
    uri: str,
    dest: Path,
    *,
    sequence: tuple[str, ...],
    env: Mapping[str, str],
    on_attempt: Callable[[Attempt], None] | None = None,
    on_progress: ProgressCallback | None = None,
    stall_timeout: float = 60.0,
    connections: int = 8,
    expected_sha256: str | None = None,
    direct_io: bool | None = None,
    compute: Sequence[str] = (),
    policy: OutboundPolicy = STRICT,
    keep: DownloadFilter = NONE,
) -> tuple[Manifest, Attempt]:
    """:func:`~aim_cache_jobs.downloader.run.download` with each protocol of ``sequence`` in turn;
    the manifest and the attempt that made it, or :class:`SequenceFailed`."""
    steps = protocols.attempts(sequence)
    for attempt in steps:
        if on_attempt is not None:
            on_attempt(attempt)
        try:
            way = protocols.transport(attempt.protocol, connections)
            manifest = await download(
                uri,
                dest,
                env=env,
                on_progress=on_progress,
                stall_timeout=stall_timeout,
                connections=way.connections,
                expected_sha256=expected_sha256,
                direct_io=direct_io,
                compute=compute,
                policy=policy,
                ranges=way.ranges,
                keep=keep,
            )
        except DownloadError as e:
            if attempt is steps[-1] or not protocols.goes_on(e):
                raise SequenceFailed(e, attempt) from e
            log.warning(
                "attempt %d/%d with %s failed (%s: %s); trying %s",
                attempt.number,
                len(sequence),
                attempt.protocol,
                e.reason,
                e.message,
                sequence[attempt.number],
            )
            continue
        return manifest, attempt
    raise AssertionError("a protocol sequence is never empty")  # protocols.parse never returns one
