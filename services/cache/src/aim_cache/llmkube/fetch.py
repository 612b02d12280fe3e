"""The I/O the Model controller does against a source: probing its fingerprint (HEAD or ``stat``),
listing its files for the cache's downloader, and reading a remote GGUF header early.

Every network call here goes to a URL the policy already accepted (:func:`sources.check_source`);
redirects are checked again host by host (``guard``), so a public URL cannot bounce the operator
into the cluster network or the metadata service; and every connection applies the same policy
again at connect time (``outbound``: :mod:`aimcore.domain.outbound.connect`), so a DNS answer that changes
after the check is refused too. Blocking calls run in threads.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

from aim_cache.downloader import SOURCE_UNREACHABLE, DownloadError, Listing, RemoteFile, list_source
from aim_cache.downloader.errors import redact_url
from aim_cache.downloader.sources import Digest
from aim_cache.llmkube import drift, gguf
from aim_cache.llmkube.sources import (
    SOURCE_NOT_ALLOWED,
    Policy,
    Source,
    SourceError,
    SourceUnreachable,
    check_remote,
)
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


# -- fingerprints ------------------------------------------------------------------------------


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
            expected = expected_sha256.lower()
            known = f.digest("sha256")
            if known is not None and known != expected:
                raise DownloadError(
                    "ChecksumMismatch",
                    f"{staged.relative}: the source says sha256 {known}, spec.sha256 is {expected}",
                )
            digests = (
                *(d for d in digests if d.algorithm != "sha256"),
                Digest("sha256", expected),
            )
        files.append(
            RemoteFile(staged.relative, f.size, f.url, f.headers, digests, f.etag, f.ranges, f.signer)
        )
        tls = sub.tls_verify
    return Listing(source_identity(source, raw), revision, tuple(files), tls)


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
