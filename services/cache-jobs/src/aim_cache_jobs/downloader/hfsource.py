"""``hf://org/model[@revision]``: a Hugging Face Hub repository at one commit. Listed with one
request to the Hub API (``HF_ENDPOINT``, ``HF_TOKEN``), falling back to ``huggingface_hub`` (which
also names every error, and lists repositories whose quick listing lacks sizes) through
:mod:`.hubclient`; every file is fetched at the commit the revision resolved to, verified against
its LFS sha256 or git blob id. Blocking: run in a thread."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from aim_cache_jobs.downloader import fetch
from aim_cache_jobs.downloader.errors import (
    ADDRESS_NOT_ALLOWED,
    AUTH_ERROR,
    DOWNLOAD_FAILED,
    INVALID_SOURCE,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    DownloadError,
    is_transport_error,
)
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile
from aim_cache_jobs.downloader.sourceuri import ParsedSource, invalid_source, tls_verify, truthy
from aimcore.domain.outbound import OutboundPolicy, refusal_in

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
_HF_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$")


def parse_hf(uri: str) -> ParsedSource:
    rest = uri[len("hf://") :]
    repo_part, at, revision = rest.partition("@")
    repo_id = repo_part.strip("/")
    if at and not revision:
        raise invalid_source(uri, "empty revision after '@'")
    parts = repo_id.split("/")
    if not repo_id or len(parts) > 2 or not all(_HF_NAME.match(p) and ".." not in p for p in parts):
        raise invalid_source(uri, "expected hf://org/model[@revision]")
    if revision and (len(revision) > 255 or any(c.isspace() for c in revision) or ".." in revision):
        raise invalid_source(uri, "invalid revision")
    return ParsedSource(uri=uri, scheme="hf", repo_id=repo_id, revision=revision or None)


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


def list_hf(parsed: ParsedSource, env: Mapping[str, str], policy: OutboundPolicy) -> Listing:
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
    if is_transport_error(error):
        return DownloadError(SOURCE_UNREACHABLE, f"cannot reach {endpoint}: {type(error).__name__}")
    return DownloadError(DOWNLOAD_FAILED, f"listing {parsed.display} failed: {type(error).__name__}")
