"""``http(s)://`` URLs: one file, its size (and whether the server honours ``Range``) from a HEAD, or
from a one-byte ranged GET where HEAD is refused (a URL signed for GET only). Blocking: run in a
thread."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import unquote, urlsplit

from aim_cache_jobs.downloader import fetch
from aim_cache_jobs.downloader.errors import DOWNLOAD_FAILED, SOURCE_UNREACHABLE, DownloadError, redact_url
from aim_cache_jobs.downloader.listing import RESERVED_NAMES, Listing, RemoteFile
from aim_cache_jobs.downloader.sourceuri import ParsedSource, invalid_source, tls_verify
from aimcore.domain.outbound import OutboundPolicy


def parse_http(uri: str) -> ParsedSource:
    parts = urlsplit(uri)
    if not parts.hostname:
        raise invalid_source(uri, "no host")
    return ParsedSource(uri=uri, scheme=parts.scheme.lower(), url=uri)


def list_http(
    parsed: ParsedSource,
    env: Mapping[str, str],
    guard: Callable[[str], None] | None,
    policy: OutboundPolicy,
) -> Listing:
    assert parsed.url is not None
    verify = tls_verify(parsed, env)
    conns = fetch.Connections(
        timeout=30.0, ssl_context=fetch.make_ssl_context(verify), guard=guard, policy=policy
    )
    try:
        size, etag, ranges = _probe_http(conns, parsed.url)
    finally:
        conns.close()
    name = unquote(urlsplit(parsed.url).path.rstrip("/").rsplit("/", 1)[-1]) or "download"
    if name in (".", "..") or name in RESERVED_NAMES or "\\" in name or "\x00" in name:
        name = "download"
    remote = RemoteFile(name, size, parsed.url, {}, (), etag, ranges)
    return Listing(source=parsed.display, revision=None, files=(remote,), tls_verify=verify)


def _probe_http(conns: fetch.Connections, url: str) -> tuple[int, str | None, bool]:
    """(size, etag, honours Range) from a HEAD, or a one-byte ranged GET if HEAD is refused."""
    for method, range_header in (("HEAD", None), ("GET", "bytes=0-0")):
        try:
            opened = fetch.open_url(conns, url, {}, method=method, range_header=range_header)
        except fetch.Transient as e:
            raise DownloadError(SOURCE_UNREACHABLE, e.error.message) from e
        resp = opened.response
        status = resp.status
        etag = resp.getheader("ETag")
        accept = (resp.getheader("Accept-Ranges") or "").lower()
        content_range = resp.getheader("Content-Range") or ""
        length = resp.getheader("Content-Length")
        if method == "GET" and status == 200:
            conns.discard(opened.key)  # the server ignored Range and is sending the whole file
        else:
            fetch.drain(conns, opened.key, resp)
        if method == "HEAD" and status in (403, 405, 501):
            continue  # e.g. a URL signed for GET only
        if status == 206 and "/" in content_range:
            total = content_range.rsplit("/", 1)[1].strip()
            if total.isdigit():
                return int(total), etag, True
        if status == 200 and length and length.isdigit():
            return int(length), etag, accept == "bytes"
        if status in (200, 206):
            raise DownloadError(DOWNLOAD_FAILED, f"{redact_url(url)} does not report its size")
        error = fetch.status_error(status, url)
        raise error.error if isinstance(error, fetch.Transient) else error
    raise DownloadError(DOWNLOAD_FAILED, f"{redact_url(url)} refused both HEAD and GET")
