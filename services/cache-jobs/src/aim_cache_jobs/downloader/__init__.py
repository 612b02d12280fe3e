"""The model downloader: ``hf://``, ``s3://``, ``http(s)://`` and local sources into a directory,
fast (ranged parallel transfers in threads), verified (every digest the source gives, hashed while
downloading), resumable (partial files and their state under ``.aim-partial/``), and never reported
complete unless it is (a manifest written last), through a sequence of protocols when one fails
(:mod:`.protocols`, :mod:`.sequence`). Used in-process by the cache service and as the
``aim-download`` CLI in download Jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aim_cache_jobs.downloader.errors import (
    ADDRESS_NOT_ALLOWED,
    AUTH_ERROR,
    CHECKSUM_MISMATCH,
    DOWNLOAD_FAILED,
    DOWNLOAD_STALLED,
    INVALID_SOURCE,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    STORAGE_FULL,
    DownloadError,
)
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile
from aim_cache_jobs.downloader.manifest import MANIFEST, Manifest, ManifestFile, read_manifest
from aim_cache_jobs.downloader.progress import Progress, RateMeter, progress_fields, summary
from aim_cache_jobs.downloader.run import download, download_listing, probe_size
from aim_cache_jobs.downloader.sources import list_source, model_id_for, parse_source
from aim_cache_jobs.downloader.sourceuri import ParsedSource

if TYPE_CHECKING:
    from aim_cache_jobs.downloader.report import progress_report

__all__ = [
    "ADDRESS_NOT_ALLOWED",
    "AUTH_ERROR",
    "CHECKSUM_MISMATCH",
    "DOWNLOAD_FAILED",
    "DOWNLOAD_STALLED",
    "INVALID_SOURCE",
    "MANIFEST",
    "SOURCE_NOT_FOUND",
    "SOURCE_UNREACHABLE",
    "STORAGE_FULL",
    "Digest",
    "DownloadError",
    "Listing",
    "Manifest",
    "ManifestFile",
    "ParsedSource",
    "Progress",
    "RateMeter",
    "RemoteFile",
    "download",
    "download_listing",
    "list_source",
    "model_id_for",
    "parse_source",
    "probe_size",
    "progress_fields",
    "progress_report",
    "read_manifest",
    "summary",
]


def __getattr__(name: str) -> Any:
    # progress_report needs aimcore's message models (pydantic, ~0.2 s to import): loaded on first
    # use, so ``aim-download`` without progress publishing starts faster.
    if name == "progress_report":
        from aim_cache_jobs.downloader.report import progress_report  # noqa: PLC0415

        return progress_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
