"""The I/O the Model controller does against a source: probing its fingerprint (HEAD or ``stat``),
listing its files for the cache's downloader, and reading a remote GGUF header early.

Every network call here goes to a URL the policy already accepted (:func:`sources.check_source`);
redirects are checked again host by host (``guard``), so a public URL cannot bounce the operator
into the cluster network or the metadata service; and every connection applies the same policy
again at connect time (``outbound``: :mod:`aimcore.domain.outbound.connect`), so a DNS answer that changes
after the check is refused too. Blocking calls run in threads.

An ``oci://`` source is listed by the downloader (:mod:`aim_cache_jobs.downloader.ocisource`: the
manifest chooses the files, every blob carries its digest); its primary file is the first ``.gguf``
of that listing (:func:`primary_of`), and its fingerprint is the manifest's digest (a re-pushed tag
is drift; a reference pinned ``@sha256:`` never drifts).
"""

from __future__ import annotations

import asyncio
import http.client
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urljoin, urlsplit

from aim_cache.llmkube import drift
from aim_cache.llmkube.sources import (
    SOURCE_NOT_ALLOWED,
    Policy,
    Source,
    SourceError,
    SourceUnreachable,
    check_remote,
)
from aim_cache_jobs import gguf
from aim_cache_jobs.downloader import SOURCE_UNREACHABLE, DownloadError, Listing, RemoteFile, list_source
from aim_cache_jobs.downloader.errors import ADDRESS_NOT_ALLOWED, redact_url
from aim_cache_jobs.downloader.listing import Digest
from aim_cache_jobs.downloader.sources import parse_source as parse_uri
from aimcore.domain.outbound import STRICT, OutboundPolicy, OutboundRefused
from aimcore.domain.outbound.connect import http_connection

log = logging.getLogger(__name__)

Guard = Callable[[str], None]
PROBE_TIMEOUT = 30.0
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def guard_for(policy: Policy) -> Guard:
    """A check of one URL against ``policy`` (raises :class:`SourceError` or :class:`SourceUnreachable`)."""

    def guard(url: str) -> None:
        check_remote(url, policy)

    return guard


def download_guard(guard: Guard) -> Guard:
    """``guard`` in the downloader's terms: a refusal is a :class:`DownloadError` (not retried)."""

    def check(url: str) -> None:
        try:
            guard(url)
        except SourceError as exc:
            raise DownloadError(exc.reason, exc.message, transient=False) from None
        except SourceUnreachable as exc:
            raise DownloadError(SOURCE_UNREACHABLE, str(exc)) from None

    return check


def source_identity(source: Source, raw: str) -> str:
    """What the downloader's manifest records as the source: the spec's source and its file set."""
    return f"{raw} [{source.cache_key}]"


def primary_of(paths: Sequence[str]) -> str:
    """An ``oci://`` artifact's primary file among its ``paths`` (listing or manifest order): the
    first ``.gguf``, else the first file (a safetensors or MLX artifact)."""
    return next((p for p in paths if p.lower().endswith(".gguf")), paths[0])


def _oci_listing(raw: str, outbound: OutboundPolicy) -> Listing:
    from aim_cache_jobs.downloader.ocisource import list_oci  # noqa: PLC0415 - the registry client

    return list_oci(parse_uri(raw), {}, outbound)


# -- fingerprints ------------------------------------------------------------------------------


def _oci_probe(raw: str, outbound: OutboundPolicy) -> drift.Fingerprint | None:
    try:
        return drift.Fingerprint(etag=_oci_listing(raw, outbound).revision)
    except DownloadError as exc:
        if exc.reason == ADDRESS_NOT_ALLOWED:
            raise SourceError(SOURCE_NOT_ALLOWED, exc.message) from None
        log.info("probing %s failed: %s: %s", raw, exc.reason, exc.message)
        return None


def _head(url: str, guard: Guard, timeout: float, outbound: OutboundPolicy) -> Mapping[str, str] | None:
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        guard(current)
        parts = urlsplit(current)
        assert parts.hostname is not None
        conn = http_connection(parts.scheme, parts.hostname, parts.port, policy=outbound, timeout=timeout)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            conn.request("HEAD", target, headers={"User-Agent": "aim-engine", "Accept-Encoding": "identity"})
            resp = conn.getresponse()
            resp.read()
            headers = {k: v for k, v in resp.getheaders()}
            lower = {k.lower() for k in headers}
            if resp.status in _REDIRECTS:
                if "x-linked-etag" in lower or "x-linked-size" in lower:
                    return headers  # Hugging Face: the LFS blob's identity is on the redirect itself
                location = resp.getheader("Location")
                if not location:
                    return None
                current = urljoin(current, location)
                continue
            return headers if 200 <= resp.status < 300 else None
        finally:
            conn.close()
    return None


def _probe(
    source: Source, local_paths: tuple[str, ...], guard: Guard, timeout: float, outbound: OutboundPolicy
) -> drift.Fingerprint | None:
    if source.kind == "oci":
        assert source.url is not None
        return _oci_probe(source.url, outbound)
    primary = source.files[0]
    if primary.local is not None:
        try:
            return drift.local_fingerprint(local_paths[0] if local_paths else primary.local)
        except OSError:
            return None
    assert primary.url is not None
    try:
        headers = _head(primary.url, guard, timeout, outbound)
    except OutboundRefused as exc:  # the answer changed since the check: refused all the same
        raise SourceError(SOURCE_NOT_ALLOWED, exc.message) from None
    except (OSError, http.client.HTTPException, SourceUnreachable) as exc:
        log.info("probing %s failed: %s", redact_url(primary.url), exc)
        return None
    return None if headers is None else drift.http_fingerprint(headers)


async def probe(
    source: Source,
    local_paths: tuple[str, ...],
    guard: Guard,
    *,
    timeout: float = PROBE_TIMEOUT,
    outbound: OutboundPolicy = STRICT,
) -> drift.Fingerprint | None:
    """The primary file's fingerprint now, or None when the probe says nothing (indeterminate).
    Raises :class:`SourceError` when a redirect leads somewhere the policy refuses. ``outbound``
    (the service's policy; default: the strict one) is applied when connecting."""
    return await asyncio.to_thread(_probe, source, local_paths, guard, timeout, outbound)


def revision_of(fp: drift.Fingerprint | None) -> str | None:
    """The fingerprint as the downloader's ``revision``: a changed upstream never matches an old copy."""
    if fp is None or fp.empty:
        return None
    return "|".join(str(v) for v in (fp.etag, fp.length, fp.mtime))


# -- listing -----------------------------------------------------------------------------------


async def listing(
    source: Source,
    raw: str,
    local_paths: tuple[str, ...],
    *,
    expected_sha256: str | None,
    revision: str | None,
    guard: Guard | None = None,
    outbound: OutboundPolicy = STRICT,
) -> Listing:
    """The downloader's listing of every staged file (sizes from HEAD or ``stat``), each placed at
    its staged relative path; ``expected_sha256`` is checked on the primary file."""
    if source.kind == "oci":
        return await _oci_files(source, raw, expected_sha256, outbound)
    files: list[RemoteFile] = []
    tls: bool | str = True
    locals_iter = iter(local_paths)
    for staged in source.files:
        where = next(locals_iter) if staged.local is not None else staged.url
        assert where is not None
        sub = await list_source(
            where, {}, guard=None if guard is None else download_guard(guard), policy=outbound
        )
        if len(sub.files) != 1:
            raise DownloadError("InvalidSource", f"{staged.relative} is not a single file")
        f = sub.files[0]
        digests = f.digests
        if staged.primary and expected_sha256:
            digests = _expected(f, staged.relative, expected_sha256)
        files.append(
            RemoteFile(staged.relative, f.size, f.url, f.headers, digests, f.etag, f.ranges, f.signer)
        )
        tls = sub.tls_verify
    return Listing(source_identity(source, raw), revision, tuple(files), tls)


def _expected(f: RemoteFile, relative: str, expected_sha256: str) -> tuple[Digest, ...]:
    """``f``'s digests with ``spec.sha256`` as its sha256 (a different known one is refused now)."""
    expected = expected_sha256.lower()
    known = f.digest("sha256")
    if known is not None and known != expected:
        raise DownloadError(
            "ChecksumMismatch", f"{relative}: the source says sha256 {known}, spec.sha256 is {expected}"
        )
    return (*(d for d in f.digests if d.algorithm != "sha256"), Digest("sha256", expected))


async def _oci_files(
    source: Source, raw: str, expected_sha256: str | None, outbound: OutboundPolicy
) -> Listing:
    """The registry's listing as is (revision: the manifest digest), ``spec.sha256`` checked
    against the primary's blob digest before a byte is fetched."""
    assert source.url is not None
    sub = await asyncio.to_thread(_oci_listing, source.url, outbound)
    files = sub.files
    if expected_sha256:
        primary = primary_of([f.path for f in files])
        files = tuple(
            replace(f, digests=_expected(f, f.path, expected_sha256)) if f.path == primary else f
            for f in files
        )
    return Listing(source_identity(source, raw), sub.revision, files, sub.tls_verify)


# -- GGUF ----------------------------------------------------------------------------------------


def _remote_header(url: str, guard: Guard, outbound: OutboundPolicy) -> dict[str, Any] | None:
    try:
        guard(url)
        header = gguf.read_remote(url, timeout=PROBE_TIMEOUT, guard=guard, policy=outbound)
        return gguf.status_fields(header)
    except (gguf.GGUFError, SourceError, SourceUnreachable, OutboundRefused) as exc:
        log.info("no GGUF header from %s: %s", redact_url(url), exc)
        return None


async def remote_header(
    url: str, guard: Guard, *, outbound: OutboundPolicy = STRICT
) -> dict[str, Any] | None:
    """``status.gguf`` read with range requests before the download completes (None on failure)."""
    return await asyncio.to_thread(_remote_header, url, guard, outbound)


def local_header(path: str) -> dict[str, Any] | None:
    try:
        return gguf.status_fields(gguf.read_local(path))
    except gguf.GGUFError as exc:
        log.info("no GGUF header in %s: %s", path, exc)
        return None
