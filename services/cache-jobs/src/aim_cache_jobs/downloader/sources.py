"""What to download: parsing a model URI (``hf://``, ``s3://``, ``oci://``, ``http(s)://``, a local
path) and listing it as files with sizes, URLs and the digests the source vouches for. Every source
becomes plain HTTP(S) URLs (S3 and OCI blobs with per-request credentials) or local paths, so one
transfer engine serves all (``oci://``: :mod:`.ocisource`).

Parsing and path validation are pure; the listing functions do network I/O (blocking client calls
run in threads). Error messages never carry credentials or signed query strings.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import http.client
import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from aim_cache_jobs.downloader import fetch
from aim_cache_jobs.downloader.errors import (
    ADDRESS_NOT_ALLOWED,
    AUTH_ERROR,
    DOWNLOAD_FAILED,
    INVALID_SOURCE,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    DownloadError,
    redact_url,
)
from aimcore.domain.outbound import STRICT, OutboundPolicy, refusal_in

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
MANIFEST_NAME = ".aim-manifest.json"
PARTIAL_DIR = ".aim-partial"
RESERVED_NAMES = frozenset({MANIFEST_NAME, PARTIAL_DIR, PARTIAL_DIR + ".lock"})
PRESIGN_SECONDS = 12 * 3600
DIGEST_ALGORITHMS = ("sha256", "git-sha1", "md5")

_HF_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
_HEX = re.compile(r"^[0-9a-f]+$")
_HEX_LEN = {"sha256": 64, "git-sha1": 40, "md5": 32}


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Digest:
    algorithm: str  # "sha256" | "git-sha1" | "md5"
    value: str  # lowercase hex

    def __post_init__(self) -> None:
        value = self.value.lower()
        object.__setattr__(self, "value", value)
        if self.algorithm not in _HEX_LEN:
            raise ValueError(f"unknown digest algorithm {self.algorithm!r}")
        if len(value) != _HEX_LEN[self.algorithm] or not _HEX.match(value):
            raise ValueError(f"invalid {self.algorithm} digest {self.value!r}")


def validate_path(path: str) -> str:
    """``path`` if it is a safe relative POSIX path, else ``DownloadError(InvalidSource)``."""
    bad = (
        not path
        or path.startswith("/")
        or "\\" in path
        or "\x00" in path
        or any(part in ("", ".", "..") for part in path.split("/"))
    )
    if bad:
        raise DownloadError(INVALID_SOURCE, f"unsafe file path in source: {path!r}")
    if path.split("/", 1)[0] in RESERVED_NAMES:
        raise DownloadError(INVALID_SOURCE, f"file path {path!r} is reserved by the downloader")
    return path


Signer = Callable[[str, str, Mapping[str, str]], dict[str, str]]
"""(method, url, headers) -> the headers to send, authenticated for that one request."""


@dataclass(frozen=True)
class RemoteFile:
    """One file to fetch. ``url`` is ``http(s)://`` (may carry a signature: never log it whole) or
    ``file://`` + an absolute local path. ``etag`` is an opaque version marker (ETag, git blob id)
    used only to recognise the same content when resuming; ``ranges`` says the server honours
    ``Range`` (so the file may be split and resumed); ``signer`` authenticates each request (S3)."""

    path: str
    size: int
    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    digests: tuple[Digest, ...] = ()
    etag: str | None = None
    ranges: bool = True
    signer: Signer | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_path(self.path)
        if self.size < 0:
            raise DownloadError(INVALID_SOURCE, f"{self.path}: negative size {self.size}")

    def digest(self, algorithm: str) -> str | None:
        return next((d.value for d in self.digests if d.algorithm == algorithm), None)


@dataclass(frozen=True)
class Listing:
    """The files of one source at one revision (for hf, the commit sha every file is fetched at)."""

    source: str
    revision: str | None
    files: tuple[RemoteFile, ...]
    tls_verify: bool | str = True

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class ParsedSource:
    uri: str
    scheme: str  # "hf" | "s3" | "oci" | "http" | "https" | "file"
    repo_id: str | None = None
    revision: str | None = None
    bucket: str | None = None
    prefix: str | None = None
    url: str | None = None
    path: str | None = None

    @property
    def display(self) -> str:
        """The URI safe to show (no query string or credentials)."""
        return redact_url(self.uri) if self.scheme in ("http", "https") else self.uri


# ---------------------------------------------------------------------------------------------
# Parsing (pure)
# ---------------------------------------------------------------------------------------------


def _invalid(uri: str, why: str) -> DownloadError:
    shown = redact_url(uri) if uri.lower().startswith(("http://", "https://")) else uri
    return DownloadError(INVALID_SOURCE, f"invalid model source {shown!r}: {why}")


def parse_source(uri: str) -> ParsedSource:
    """Parse a model URI; ``DownloadError(InvalidSource)`` on anything malformed."""
    if not isinstance(uri, str) or not uri.strip():
        raise DownloadError(INVALID_SOURCE, "empty model source")
    uri = uri.strip()
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in uri):
        raise _invalid(uri, "contains control characters")
    lowered = uri.lower()
    if lowered.startswith("hf://"):
        return _parse_hf(uri)
    if lowered.startswith("s3://"):
        return _parse_s3(uri)
    if lowered.startswith("oci://"):
        from aim_cache_jobs.downloader.ocisource import parse_oci  # noqa: PLC0415 - oras, requests

        uri = "oci://" + uri[len("oci://") :]
        parse_oci(uri)
        return ParsedSource(uri=uri, scheme="oci")
    if lowered.startswith(("http://", "https://")):
        parts = urlsplit(uri)
        if not parts.hostname:
            raise _invalid(uri, "no host")
        return ParsedSource(uri=uri, scheme=parts.scheme.lower(), url=uri)
    if lowered.startswith("file://"):
        parts = urlsplit(uri)
        if parts.netloc not in ("", "localhost"):
            raise _invalid(uri, "file URIs must name a local path (file:///abs/path)")
        return _parse_local(uri, unquote(parts.path))
    if uri.startswith("/"):
        return _parse_local(uri, uri)
    if "://" in uri:
        raise _invalid(
            uri, "unsupported scheme (expected hf://, s3://, oci://, http(s)://, file:// or /path)"
        )
    raise _invalid(uri, "expected hf://org/model[@revision], s3://bucket/prefix, a URL or an absolute path")


def _parse_hf(uri: str) -> ParsedSource:
    rest = uri[len("hf://") :]
    repo_part, at, revision = rest.partition("@")
    repo_id = repo_part.strip("/")
    if at and not revision:
        raise _invalid(uri, "empty revision after '@'")
    parts = repo_id.split("/")
    if not repo_id or len(parts) > 2 or not all(_HF_NAME.match(p) and ".." not in p for p in parts):
        raise _invalid(uri, "expected hf://org/model[@revision]")
    if revision and (len(revision) > 255 or any(c.isspace() for c in revision) or ".." in revision):
        raise _invalid(uri, "invalid revision")
    return ParsedSource(uri=uri, scheme="hf", repo_id=repo_id, revision=revision or None)


def _parse_s3(uri: str) -> ParsedSource:
    rest = uri[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise _invalid(uri, "invalid bucket name")
    prefix = prefix.strip("/")
    if prefix and any(part in (".", "..") for part in prefix.split("/")):
        raise _invalid(uri, "prefix must not contain '.' or '..' segments")
    return ParsedSource(uri=uri, scheme="s3", bucket=bucket, prefix=prefix)


def _parse_local(uri: str, path: str) -> ParsedSource:
    if not path.startswith("/"):
        raise _invalid(uri, "local paths must be absolute")
    if "\x00" in path:
        raise _invalid(uri, "NUL in path")
    return ParsedSource(uri=uri, scheme="file", path=os.path.normpath(path))


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


def truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def falsy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("0", "false", "no", "off")


def tls_verify(parsed: ParsedSource, env: Mapping[str, str]) -> bool | str:
    """TLS verification for the transfer: a CA bundle path, False, or True (system CAs)."""
    if parsed.scheme == "s3":
        if falsy(env.get("S3_VERIFY_SSL")) or falsy(env.get("AWS_S3_VERIFY_SSL")):
            return False
        if bundle := env.get("AWS_CA_BUNDLE"):
            return bundle
    if bundle := env.get("REQUESTS_CA_BUNDLE") or env.get("SSL_CERT_FILE"):
        return bundle
    return True


# ---------------------------------------------------------------------------------------------
# Listing
# ---------------------------------------------------------------------------------------------


async def list_source(
    uri: str,
    env: Mapping[str, str],
    *,
    expected_sha256: str | None = None,
    guard: Callable[[str], None] | None = None,
    policy: OutboundPolicy = STRICT,
) -> Listing:
    """List ``uri``'s files (sizes, URLs, digests). ``expected_sha256`` adds a sha256 digest to a
    single-file source (an error for a multi-file one). ``guard`` vets every origin an http(s)
    probe connects to (see :class:`fetch.Connections`). ``policy`` (the process's outbound policy,
    never from ``env``, which is the user's; default: the strict one) is
    applied to every connection the listing opens: the Hub API, the S3 endpoint, a URL, and every
    redirect; a refusal is ``AddressNotAllowed``."""
    parsed = parse_source(uri)
    expected = normalize_sha256(expected_sha256)
    if parsed.scheme == "hf":
        listing = await asyncio.to_thread(_list_hf, parsed, env, policy)
    elif parsed.scheme == "s3":
        listing = await asyncio.to_thread(_list_s3, parsed, env, policy)
    elif parsed.scheme == "oci":
        from aim_cache_jobs.downloader.ocisource import list_oci  # noqa: PLC0415 - oras, requests

        listing = await asyncio.to_thread(list_oci, parsed, env, policy)
    elif parsed.scheme in ("http", "https"):
        listing = await asyncio.to_thread(_list_http, parsed, env, guard, policy)
    else:
        listing = await asyncio.to_thread(_list_local, parsed)
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


# -- Hugging Face ------------------------------------------------------------------------------


def hf_token(env: Mapping[str, str]) -> str | None:
    token = (env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or "").strip()
    return token or None


def hf_endpoint(env: Mapping[str, str]) -> str:
    return (env.get("HF_ENDPOINT") or DEFAULT_HF_ENDPOINT).strip().rstrip("/")


def hf_file_url(endpoint: str, repo_id: str, revision: str, path: str) -> str:
    """What ``huggingface_hub.hf_hub_url`` returns for a model file at ``endpoint``."""
    return f"{endpoint}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"


def hf_info_entries(info: Any) -> tuple[str, list[tuple[str, int, str, str | None]]] | None:
    """(commit, [(path, size, blob id, LFS sha256)]) from the JSON of ``GET /api/models/<repo>
    [/revision/<rev>]?blobs=True`` (what ``HfApi.model_info(files_metadata=True)`` reads); None
    when anything expected is missing."""
    if not isinstance(info, dict) or not isinstance(info.get("sha"), str) or not info["sha"]:
        return None
    siblings = info.get("siblings")
    if not isinstance(siblings, list):
        return None
    entries: list[tuple[str, int, str, str | None]] = []
    for s in siblings:
        if not isinstance(s, dict):
            return None
        path, size, blob, lfs = s.get("rfilename"), s.get("size"), s.get("blobId"), s.get("lfs")
        sha256 = lfs.get("sha256") if isinstance(lfs, dict) else None
        if not isinstance(path, str) or not isinstance(blob, str):
            return None
        if type(size) is not int or (lfs is not None and not isinstance(sha256, str)):
            return None
        entries.append((path, size, blob, sha256))
    return info["sha"], entries


def _list_hf_direct(parsed: ParsedSource, env: Mapping[str, str], policy: OutboundPolicy) -> Listing | None:
    """The listing in one stdlib request, without importing ``huggingface_hub`` (a fifth of a
    second of the downloader's start-up). None on any failure or unexpected answer: the caller then
    lists through ``huggingface_hub``, which also maps every error to its reason. A connection the
    outbound policy refuses is not such a failure: it is raised (``AddressNotAllowed``)."""
    if parsed.repo_id is None or truthy(env.get("HF_HUB_OFFLINE")):
        return None
    endpoint = hf_endpoint(env)
    token = hf_token(env)
    url = f"{endpoint}/api/models/{parsed.repo_id}"
    if parsed.revision is not None:
        url += f"/revision/{quote(parsed.revision, safe='')}"
    url += "?blobs=True"
    headers = {"Accept": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    verify = tls_verify(parsed, env)
    conns = fetch.Connections(
        30.0, fetch.make_ssl_context(verify) if url.startswith("https:") else None, policy=policy
    )
    try:
        opened = fetch.open_url(conns, url, headers)
        if opened.response.status != 200:
            return None
        found = hf_info_entries(json.loads(opened.response.read()))
    except DownloadError as e:
        if e.reason == ADDRESS_NOT_ALLOWED:
            raise
        return None
    except (fetch.Transient, OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conns.close()
    if found is None:
        return None
    commit, entries = found
    return _hf_listing(parsed, endpoint, token, commit, entries)


def _hf_listing(
    parsed: ParsedSource,
    endpoint: str,
    token: str | None,
    commit: str,
    entries: list[tuple[str, int, str, str | None]],
) -> Listing:
    assert parsed.repo_id is not None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    files: list[RemoteFile] = []
    for path, size, blob_id, lfs_sha256 in sorted(entries):
        digests = (Digest("sha256", lfs_sha256),) if lfs_sha256 else (Digest("git-sha1", blob_id),)
        url = hf_file_url(endpoint, parsed.repo_id, commit, path)
        files.append(RemoteFile(path, size, url, headers, digests, etag=lfs_sha256 or blob_id))
    if not files:
        raise DownloadError(SOURCE_NOT_FOUND, f"{parsed.display} has no files at revision {commit}")
    return Listing(source=parsed.display, revision=commit, files=tuple(files))


def _list_hf(parsed: ParsedSource, env: Mapping[str, str], policy: OutboundPolicy) -> Listing:
    fast = _list_hf_direct(parsed, env, policy)
    if fast is not None:
        return fast
    from huggingface_hub import HfApi  # noqa: PLC0415 - heavy import, only for hf
    from huggingface_hub.hf_api import RepoFile  # noqa: PLC0415

    from aim_cache_jobs.downloader.hubclient import guarded  # noqa: PLC0415 - imports huggingface_hub

    assert parsed.repo_id is not None
    endpoint = hf_endpoint(env)
    token = hf_token(env)
    api = HfApi(endpoint=endpoint, token=token or False, library_name="aim-download")
    try:
        with guarded(policy):
            # One call resolves the revision to a commit and lists every file at that commit.
            info = api.model_info(parsed.repo_id, revision=parsed.revision, files_metadata=True)
            commit = info.sha
            if not commit:
                raise DownloadError(
                    DOWNLOAD_FAILED, f"{endpoint} did not resolve {parsed.display} to a commit"
                )
            entries: list[tuple[str, int | None, str | None, str | None]] = [
                (s.rfilename, s.size, s.blob_id, s.lfs.sha256 if s.lfs else None) for s in info.siblings or ()
            ]
            if any(size is None or blob is None for _, size, blob, _ in entries):
                entries = []
                for item in api.list_repo_tree(parsed.repo_id, recursive=True, revision=commit):
                    if isinstance(item, RepoFile):
                        lfs = item.lfs
                        entries.append((item.path, item.size, item.blob_id, lfs.sha256 if lfs else None))
    except DownloadError:
        raise
    except Exception as e:
        refusal = refusal_in(e)
        if refusal is not None:
            raise fetch.refused(refusal) from None
        raise hf_error(e, parsed, endpoint, has_token=token is not None) from e

    complete = [(p, s, b, h) for p, s, b, h in entries if s is not None and b is not None]
    assert len(complete) == len(entries)
    return _hf_listing(parsed, endpoint, token, commit, complete)


def _http_status(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _is_transport_error(error: BaseException) -> bool:
    names = {cls.__name__ for cls in type(error).__mro__}
    transport = {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError", "TransportError"}
    return bool(names & transport) or isinstance(error, ConnectionError | TimeoutError)


def hf_error(error: BaseException, parsed: ParsedSource, endpoint: str, *, has_token: bool) -> DownloadError:
    """Map a huggingface_hub exception to a download reason (messages hold no token)."""
    from huggingface_hub import errors as hf  # noqa: PLC0415

    repo = parsed.repo_id
    status = _http_status(error)
    if isinstance(error, hf.GatedRepoError):
        return DownloadError(
            AUTH_ERROR, f"{repo} is gated: accept its terms on the Hub and set an HF_TOKEN that has access"
        )
    if isinstance(error, hf.RepositoryNotFoundError):
        if status == 401 and not has_token:
            return DownloadError(
                SOURCE_NOT_FOUND,
                f"repository {repo} not found on {endpoint}; it may be private and need HF_TOKEN",
            )
        if status in (401, 403):
            return DownloadError(
                AUTH_ERROR, f"the token was refused for {repo} on {endpoint} (HTTP {status})"
            )
        return DownloadError(SOURCE_NOT_FOUND, f"repository {repo} not found on {endpoint}")
    if isinstance(error, hf.RevisionNotFoundError):
        return DownloadError(SOURCE_NOT_FOUND, f"revision {parsed.revision} not found in {repo}")
    if isinstance(error, hf.EntryNotFoundError):
        return DownloadError(SOURCE_NOT_FOUND, f"a file of {repo} was not found on {endpoint}")
    if isinstance(error, hf.DisabledRepoError):
        return DownloadError(SOURCE_NOT_FOUND, f"repository {repo} is disabled on {endpoint}")
    if isinstance(error, hf.HFValidationError):
        return DownloadError(INVALID_SOURCE, f"invalid Hugging Face repo id or revision in {parsed.display}")
    if status in (401, 403):
        if has_token:
            return DownloadError(
                AUTH_ERROR, f"the token was refused for {repo} on {endpoint} (HTTP {status})"
            )
        return DownloadError(AUTH_ERROR, f"{endpoint} refused access to {repo} (HTTP {status}); set HF_TOKEN")
    if status == 404:
        return DownloadError(SOURCE_NOT_FOUND, f"repository {repo} not found on {endpoint}")
    if status is not None and (status >= 500 or status == 429):
        return DownloadError(SOURCE_UNREACHABLE, f"{endpoint} answered HTTP {status} listing {repo}")
    if status is not None:
        return DownloadError(DOWNLOAD_FAILED, f"{endpoint} answered HTTP {status} listing {repo}")
    if _is_transport_error(error):
        return DownloadError(SOURCE_UNREACHABLE, f"cannot reach {endpoint}: {type(error).__name__}")
    return DownloadError(DOWNLOAD_FAILED, f"listing {parsed.display} failed: {type(error).__name__}")


# -- S3 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class S3Signer:
    """SigV4 ``Authorization`` headers for one S3 GET at a time (the Range header included), so every
    range request is signed when it is sent and never expires mid-download. Signing headers
    rather than presigning URLs also works with S3 servers that refuse query-string auth."""

    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    token: str | None = field(repr=False)
    region: str

    def __call__(self, method: str, url: str, headers: Mapping[str, str]) -> dict[str, str]:
        from botocore.auth import S3SigV4Auth  # noqa: PLC0415
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415
        from botocore.credentials import Credentials  # noqa: PLC0415

        request = AWSRequest(method=method, url=url, headers=dict(headers))
        S3SigV4Auth(Credentials(self.access_key, self.secret_key, self.token), "s3", self.region).add_auth(
            request
        )
        return dict(request.headers.items())


def s3_signer(env: Mapping[str, str]) -> S3Signer | None:
    """The signer for ``env``'s credentials; None for anonymous access."""
    access_key = env.get("AWS_ACCESS_KEY_ID") or None
    secret_key = env.get("AWS_SECRET_ACCESS_KEY") or None
    if not (access_key and secret_key):
        return None
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    return S3Signer(access_key, secret_key, env.get("AWS_SESSION_TOKEN") or None, region)


def s3_client(env: Mapping[str, str], policy: OutboundPolicy = STRICT) -> Any:
    """A boto3 S3 client configured only from ``env`` (never the process environment's endpoint
    settings; with no keys it is anonymous rather than searching instance metadata), whose every
    connection applies ``policy`` (default: the strict one)."""
    import boto3  # noqa: PLC0415 - heavy import, only for s3
    from botocore import UNSIGNED  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    no_ssl = truthy(env.get("S3_NO_SSL"))
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip() or None
    if endpoint and "://" not in endpoint:
        endpoint = ("http://" if no_ssl else "https://") + endpoint
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    access_key = env.get("AWS_ACCESS_KEY_ID") or None
    secret_key = env.get("AWS_SECRET_ACCESS_KEY") or None
    anonymous = not (access_key and secret_key)
    style = env.get("S3_ADDRESSING_STYLE") or ("path" if endpoint else "auto")
    config = Config(
        signature_version=UNSIGNED if anonymous else "s3v4",
        s3={"addressing_style": style},
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=10,
        read_timeout=60,
        ignore_configured_endpoint_urls=True,
    )
    verify: bool | str = True
    if falsy(env.get("S3_VERIFY_SSL")) or falsy(env.get("AWS_S3_VERIFY_SSL")):
        verify = False
    elif env.get("AWS_CA_BUNDLE"):
        verify = env["AWS_CA_BUNDLE"]
    session = boto3.session.Session(
        # Explicit (placeholder) keys stop botocore from probing instance metadata when anonymous.
        aws_access_key_id=access_key or "anonymous",
        aws_secret_access_key=secret_key or "anonymous",
        aws_session_token=None if anonymous else (env.get("AWS_SESSION_TOKEN") or None),
        region_name=region,
    )
    client = session.client("s3", endpoint_url=endpoint, config=config, use_ssl=not no_ssl, verify=verify)
    from aim_cache_jobs.downloader.s3connect import guard_client  # noqa: PLC0415 - imports botocore

    guard_client(client, policy)
    return client


_S3_NOT_FOUND = {"NoSuchBucket", "NoSuchKey", "NotFound", "404"}
_S3_AUTH = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AccessDenied",
    "403",
    "401",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AllAccessDisabled",
    "AccountProblem",
    "Forbidden",
}


def s3_error(error: BaseException, parsed: ParsedSource, endpoint: str | None) -> DownloadError:
    refusal = refusal_in(error)
    if refusal is not None:
        return fetch.refused(refusal)
    where = parsed.display
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = str(response.get("Error", {}).get("Code", ""))
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _S3_NOT_FOUND or status == 404:
            what = "bucket" if code == "NoSuchBucket" else "object"
            return DownloadError(SOURCE_NOT_FOUND, f"{where}: {what} not found ({code or status})")
        if code in _S3_AUTH or status in (401, 403):
            return DownloadError(
                AUTH_ERROR, f"{where}: access refused ({code or status}); check the S3 credentials"
            )
        if isinstance(status, int) and (status >= 500 or status == 429):
            return DownloadError(SOURCE_UNREACHABLE, f"{where}: S3 answered {code or status}")
        return DownloadError(DOWNLOAD_FAILED, f"{where}: S3 error {code or status}")
    names = {cls.__name__ for cls in type(error).__mro__}
    if names & {"NoCredentialsError", "PartialCredentialsError"}:
        return DownloadError(AUTH_ERROR, f"{where}: incomplete S3 credentials")
    if names & {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ConnectionClosedError",
        "ReadTimeoutError",
    }:
        return DownloadError(SOURCE_UNREACHABLE, f"cannot reach S3 endpoint {endpoint or 'AWS'} for {where}")
    if _is_transport_error(error):
        return DownloadError(SOURCE_UNREACHABLE, f"cannot reach S3 endpoint {endpoint or 'AWS'} for {where}")
    return DownloadError(DOWNLOAD_FAILED, f"listing {where} failed: {type(error).__name__}")


def _s3_digests(head: Mapping[str, Any]) -> tuple[tuple[Digest, ...], str | None]:
    """Digests from a HEAD: a full-object ChecksumSHA256, and the ETag as md5 when it is one."""
    digests: list[Digest] = []
    checksum = head.get("ChecksumSHA256")
    if (
        isinstance(checksum, str)
        and "-" not in checksum
        and head.get("ChecksumType", "FULL_OBJECT") == "FULL_OBJECT"
    ):
        try:
            raw = base64.b64decode(checksum, validate=True)
            if len(raw) == 32:
                digests.append(Digest("sha256", raw.hex()))
        except (binascii.Error, ValueError):
            pass
    etag = str(head.get("ETag", "")).strip('"') or None
    encrypted = head.get("SSECustomerAlgorithm") or head.get("ServerSideEncryption") == "aws:kms"
    if etag and not encrypted and re.fullmatch(r"[0-9a-fA-F]{32}", etag):
        digests.append(Digest("md5", etag))
    return tuple(digests), etag


def _list_s3(parsed: ParsedSource, env: Mapping[str, str], policy: OutboundPolicy) -> Listing:
    assert parsed.bucket is not None and parsed.prefix is not None
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip() or None
    bucket, prefix = parsed.bucket, parsed.prefix
    try:
        client = s3_client(env, policy)
        signer = s3_signer(env)
        objects: dict[str, int] = {}
        exact: int | None = None
        paginator = client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket, Prefix=f"{prefix}/" if prefix else ""):
            for obj in page.get("Contents", ()):
                key = str(obj["Key"])
                if not key.endswith("/"):
                    objects[key] = int(obj["Size"])
        if prefix and not objects:
            try:
                exact = int(client.head_object(Bucket=bucket, Key=prefix)["ContentLength"])
                objects[prefix] = exact
            except Exception as e:
                if s3_error(e, parsed, endpoint).reason != SOURCE_NOT_FOUND:
                    raise
        if not objects:
            raise DownloadError(SOURCE_NOT_FOUND, f"no objects under {parsed.display}")

        def describe(key: str) -> RemoteFile:
            head = client.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
            digests, etag = _s3_digests(head)
            rel = key.rsplit("/", 1)[-1] if exact is not None else key[len(prefix) + 1 :] if prefix else key
            # The object's plain URL as the client addresses it (endpoint, addressing style, key
            # quoting); each request is signed with headers by the signer, or anonymous.
            url = client.generate_presigned_url(
                "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=PRESIGN_SECONDS
            ).split("?", 1)[0]
            return RemoteFile(rel, int(head["ContentLength"]), url, {}, digests, etag, signer=signer)

        with ThreadPoolExecutor(max_workers=min(8, len(objects))) as pool:
            files = sorted(pool.map(describe, sorted(objects)), key=lambda f: f.path)
    except DownloadError:
        raise
    except Exception as e:
        raise s3_error(e, parsed, endpoint) from e
    return Listing(
        source=parsed.display, revision=None, files=tuple(files), tls_verify=tls_verify(parsed, env)
    )


# -- HTTP(S) -----------------------------------------------------------------------------------


def _list_http(
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


# -- Local paths -------------------------------------------------------------------------------


def _list_local(parsed: ParsedSource) -> Listing:
    assert parsed.path is not None
    root = Path(parsed.path)
    try:
        st = root.stat()
    except FileNotFoundError as e:
        raise DownloadError(SOURCE_NOT_FOUND, f"{root} does not exist") from e
    except PermissionError as e:
        raise DownloadError(AUTH_ERROR, f"{root}: permission denied") from e
    if stat.S_ISREG(st.st_mode):
        name = root.name
        return Listing(parsed.display, None, (_local_file(name, root, st),))
    if not stat.S_ISDIR(st.st_mode):
        raise DownloadError(INVALID_SOURCE, f"{root} is neither a file nor a directory")
    real_root = root.resolve()
    files: list[RemoteFile] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        if not prefix:  # a previous download's bookkeeping is not part of the model
            dirnames[:] = [d for d in dirnames if d not in RESERVED_NAMES]
        for name in sorted(filenames):
            if not prefix and name in RESERVED_NAMES:
                continue
            full = Path(dirpath) / name
            if full.is_symlink():
                target = full.resolve()
                if not target.is_relative_to(real_root):
                    raise DownloadError(INVALID_SOURCE, f"{prefix}{name} is a symlink leading outside {root}")
            try:
                fst = full.stat()
            except OSError as e:
                raise DownloadError(DOWNLOAD_FAILED, f"cannot read {full}: {e.strerror}") from e
            if stat.S_ISREG(fst.st_mode):
                files.append(_local_file(prefix + name, full, fst))
        for d in list(dirnames):
            link = Path(dirpath) / d
            if link.is_symlink() and not link.resolve().is_relative_to(real_root):
                raise DownloadError(INVALID_SOURCE, f"{prefix}{d} is a symlink leading outside {root}")
    if not files:
        raise DownloadError(SOURCE_NOT_FOUND, f"{root} holds no files")
    return Listing(parsed.display, None, tuple(sorted(files, key=lambda f: f.path)))


def _local_file(rel: str, full: Path, st: os.stat_result) -> RemoteFile:
    etag = f"{st.st_size}-{st.st_mtime_ns}-{st.st_ino}"
    return RemoteFile(rel, st.st_size, "file://" + str(full.absolute()), {}, (), etag)
