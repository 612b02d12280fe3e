"""What to download: a model URI (``hf://``, ``s3://``, ``oci://``, ``http(s)://``, a local path)
parsed and listed by the module of its scheme (:mod:`.hfsource`, :mod:`.s3source`,
:mod:`.ocisource`, :mod:`.httpsource`, :mod:`.localsource`) as files with sizes, URLs and the
digests the source vouches for (:mod:`.listing`). Every source becomes plain HTTP(S) URLs (S3 and
OCI blobs with per-request credentials) or local paths, so one transfer engine serves all.

Parsing is pure; the listings do network I/O (blocking client calls run in threads). Error messages
never carry credentials or signed query strings. The ``oci://`` module is imported only for an
``oci://`` source (it loads the registry client).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping

from aim_cache_jobs.downloader.errors import INVALID_SOURCE, DownloadError
from aim_cache_jobs.downloader.filters import NONE, DownloadFilter
from aim_cache_jobs.downloader.hfsource import list_hf, parse_hf
from aim_cache_jobs.downloader.httpsource import list_http, parse_http
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile
from aim_cache_jobs.downloader.localsource import list_local, parse_file_uri, parse_local
from aim_cache_jobs.downloader.s3source import list_s3, parse_s3
from aim_cache_jobs.downloader.sourceuri import ParsedSource, invalid_source
from aimcore.domain.outbound import STRICT, OutboundPolicy

_HEX = re.compile(r"^[0-9a-f]+$")


def parse_source(uri: str) -> ParsedSource:
    """Parse a model URI; ``DownloadError(InvalidSource)`` on anything malformed."""
    if not isinstance(uri, str) or not uri.strip():
        raise DownloadError(INVALID_SOURCE, "empty model source")
    uri = uri.strip()
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in uri):
        raise invalid_source(uri, "contains control characters")
    lowered = uri.lower()
    if lowered.startswith("hf://"):
        return parse_hf(uri)
    if lowered.startswith("s3://"):
        return parse_s3(uri)
    if lowered.startswith("oci://"):
        from aim_cache_jobs.downloader.ocisource import parse_oci  # noqa: PLC0415 - the registry client

        uri = "oci://" + uri[len("oci://") :]
        parse_oci(uri)
        return ParsedSource(uri=uri, scheme="oci")
    if lowered.startswith(("http://", "https://")):
        return parse_http(uri)
    if lowered.startswith("file://"):
        return parse_file_uri(uri)
    if uri.startswith("/"):
        return parse_local(uri, uri)
    if "://" in uri:
        raise invalid_source(
            uri, "unsupported scheme (expected hf://, s3://, oci://, http(s)://, file:// or /path)"
        )
    raise invalid_source(
        uri, "expected hf://org/model[@revision], s3://bucket/prefix, a URL or an absolute path"
    )


def model_id_for(uri: str) -> str | None:
    """``org/name`` for ``hf://org/name[@rev]``; None for other (or invalid) sources."""
    try:
        parsed = parse_source(uri)
    except DownloadError:
        return None
    return parsed.repo_id if parsed.scheme == "hf" else None


def normalize_sha256(value: str | None) -> str | None:
    if value is None:
        return None
    cleaned = value.strip().lower().removeprefix("sha256:")
    if len(cleaned) != 64 or not _HEX.match(cleaned):
        raise DownloadError(INVALID_SOURCE, "expected sha256 must be 64 hex digits")
    return cleaned


async def list_source(
    uri: str,
    env: Mapping[str, str],
    *,
    expected_sha256: str | None = None,
    guard: Callable[[str], None] | None = None,
    policy: OutboundPolicy = STRICT,
    keep: DownloadFilter = NONE,
) -> Listing:
    """List ``uri``'s files (sizes, URLs, digests), those ``keep`` keeps (:mod:`.filters`; default:
    all). ``expected_sha256`` adds a sha256 digest to a single-file source (an error for a
    multi-file one, after filtering). ``guard`` vets every origin an http(s) probe connects to (see
    :class:`fetch.Connections`). ``policy`` (the process's outbound policy, never from ``env``,
    which is the user's; default: the strict one) is
    applied to every connection the listing opens: the Hub API, the S3 endpoint, a URL, and every
    redirect; a refusal is ``AddressNotAllowed``."""
    parsed = parse_source(uri)
    expected = normalize_sha256(expected_sha256)
    if parsed.scheme == "hf":
        listing = await asyncio.to_thread(list_hf, parsed, env, policy)
    elif parsed.scheme == "s3":
        listing = await asyncio.to_thread(list_s3, parsed, env, policy)
    elif parsed.scheme == "oci":
        from aim_cache_jobs.downloader.ocisource import list_oci  # noqa: PLC0415 - the registry client

        listing = await asyncio.to_thread(list_oci, parsed, env, policy)
    elif parsed.scheme in ("http", "https"):
        listing = await asyncio.to_thread(list_http, parsed, env, guard, policy)
    else:
        listing = await asyncio.to_thread(list_local, parsed)
    listing = keep.apply(listing)
    if expected is not None:
        listing = _with_expected(listing, expected)
    return listing


def _with_expected(listing: Listing, expected: str) -> Listing:
    if len(listing.files) != 1:
        raise DownloadError(
            INVALID_SOURCE,
            f"an expected sha256 applies to a single file; {listing.source} has {len(listing.files)} files",
        )
    f = listing.files[0]
    known = f.digest("sha256")
    if known is not None and known != expected:
        raise DownloadError(
            INVALID_SOURCE, f"{f.path}: the source says sha256 {known}, but {expected} was expected"
        )
    digests = (*(d for d in f.digests if d.algorithm != "sha256"), Digest("sha256", expected))
    return Listing(
        listing.source,
        listing.revision,
        (RemoteFile(f.path, f.size, f.url, f.headers, digests, f.etag, f.ranges, f.signer),),
        listing.tls_verify,
    )
