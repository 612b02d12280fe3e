"""A Hugging-Face-Hub-compatible HTTP server over a directory, run as its own process.

Tests and the laptop demo point real clients (``huggingface_hub``, curl, the cache service's
downloader) at it instead of huggingface.co: model repos only, revision ``main`` or the commit sha,
private repos with a bearer token, and the wire format that ``HfApi.model_info``,
``HfApi.list_repo_tree`` (with ``Link`` pagination), ``HfApi.get_paths_info``,
``get_hf_file_metadata`` and ``hf_hub_download`` parse, errors included (``X-Error-Code`` /
``X-Error-Message``). File bodies go out with ``sendfile`` and honour ``Range``. Faults (a corrupted
byte, a dropped connection, a stall, a ``Range`` ignored) can be armed per file over HTTP, and a
log of resolve requests shows whether a client resumed with a ``Range`` or started over.

Layout on disk: ``ROOT/<org>/<name>/`` is a repo's working tree and ``ROOT/<org>/<name>/.hub.json``
its index (token, commit, per-file size / sha256 / git blob id / LFS flag), written by
:func:`add_repo`, :func:`add_file` or :func:`index_repo`. The server lists and serves only indexed
files and never writes; a directory without an index is not a repo (``--index-missing`` indexes
such directories at startup, for hand-made demo roots).

Run it with ``python -m aim_dev.local.hub --root DIR [--host 127.0.0.1] [--port 0]``; once bound it
prints one JSON line ``{"port": N, ...}`` on stdout (and writes it to ``--port-file`` if given).
:class:`HubServer` does that as a managed child process that dies with its parent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import signal
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import quote, unquote

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter

from aim_dev.local.processes import ManagedProcess, SingleProcessServer, start_with_retries

META_NAME = ".hub.json"
"""Per-repo index file; never listed, never served."""

DEFAULT_LFS_THRESHOLD = 1024 * 1024
DEFAULT_PAGE_SIZE = 1000
"""Entries per ``list_repo_tree`` page before a ``Link: <...>; rel="next"`` header is added."""

LFS_POINTER_VERSION = "https://git-lfs.github.com/spec/v1"
_HASH_CHUNK = 4 * 1024 * 1024
_STREAM_CHUNK = 64 * 1024
_SENDFILE_CHUNK = 64 * 1024 * 1024
_REQUEST_LOG_MAX = 100_000
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_RANGE_RE = re.compile(r"^\s*bytes\s*=\s*(\d{0,18})\s*-\s*(\d{0,18})\s*$", re.IGNORECASE | re.ASCII)
_CURSOR_RE = re.compile(r"^\d{1,18}$", re.ASCII)
_UNSAFE_HEADER_CHARS = re.compile(r"[^\x20-\x7e]")
_EPOCH = "1970-01-01T00:00:00.000Z"

log = logging.getLogger("aim_dev.local.hub")


# ---------------------------------------------------------------------------------------------
# Repo content: hashing and the on-disk index (usable without the server)
# ---------------------------------------------------------------------------------------------


def git_blob_sha1(data: bytes) -> str:
    """Git's blob id: sha1 of ``b"blob <size>\\0"`` + content."""
    h = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
    h.update(data)
    return h.hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The git-lfs pointer file git would store for an LFS file."""
    return f"version {LFS_POINTER_VERSION}\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class FileInfo:
    """One file of a repo as the Hub describes it."""

    path: str
    size: int
    sha256: str
    git_sha1: str
    """Git blob id of the content (sha1 of ``b"blob <size>\\0" + content``)."""
    lfs: bool
    mtime_ns: int = 0

    @property
    def pointer_size(self) -> int:
        return len(lfs_pointer(self.sha256, self.size))

    @property
    def blob_id(self) -> str:
        """What the Hub reports as the file's ``oid`` / ``blobId``: the content's git blob id, or for
        an LFS file the blob id of its pointer file (git stores the pointer, not the content)."""
        return git_blob_sha1(lfs_pointer(self.sha256, self.size)) if self.lfs else self.git_sha1

    @property
    def etag(self) -> str:
        """Unquoted ``ETag`` of a resolve response: sha256 for LFS files, the git blob id otherwise."""
        return self.sha256 if self.lfs else self.git_sha1

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "sha256": self.sha256,
            "git_sha1": self.git_sha1,
            "lfs": self.lfs,
            "mtime_ns": self.mtime_ns,
        }


@dataclass(frozen=True)
class RepoInfo:
    """A repo's index: what ``.hub.json`` records."""

    repo_id: str
    commit: str
    files: Mapping[str, FileInfo]
    token: str | None = field(default=None, repr=False)
    lfs_threshold: int = DEFAULT_LFS_THRESHOLD
    last_modified: str = _EPOCH

    @property
    def private(self) -> bool:
        return self.token is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "repo_id": self.repo_id,
            "commit": self.commit,
            "token": self.token,
            "lfs_threshold": self.lfs_threshold,
            "last_modified": self.last_modified,
            "files": {p: f.to_json() for p, f in sorted(self.files.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RepoInfo:
        files = {
            str(p): FileInfo(
                path=str(p),
                size=int(f["size"]),
                sha256=str(f["sha256"]),
                git_sha1=str(f["git_sha1"]),
                lfs=bool(f["lfs"]),
                mtime_ns=int(f.get("mtime_ns", 0)),
            )
            for p, f in dict(data["files"]).items()
        }
        token = data.get("token")
        return cls(
            repo_id=str(data["repo_id"]),
            commit=str(data["commit"]),
            files=files,
            token=None if token is None else str(token),
            lfs_threshold=int(data.get("lfs_threshold", DEFAULT_LFS_THRESHOLD)),
            last_modified=str(data.get("last_modified", _EPOCH)),
        )


def valid_repo_id(repo_id: str) -> bool:
    parts = repo_id.split("/")
    return len(parts) == 2 and all(_NAME_RE.match(p) and ".." not in p for p in parts)


def clean_repo_path(path: str) -> str | None:
    """``path`` if it is a safe relative file path inside a repo, else None (absolute, ``..``, empty
    segments, backslashes, NULs and the index file are refused)."""
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        return None
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts) or parts[0].startswith(META_NAME):
        return None
    return path


def repo_dir(root: Path, repo_id: str) -> Path:
    if not valid_repo_id(repo_id):
        raise ValueError(f"invalid repo id {repo_id!r} (expected <org>/<name>)")
    return root / repo_id


def commit_of(files: Mapping[str, FileInfo]) -> str:
    """A deterministic 40-hex commit id for the content (paths, blob ids and LFS flags)."""
    h = hashlib.sha1(b"aim-local-hub commit v1\n", usedforsecurity=False)
    for path in sorted(files):
        f = files[path]
        h.update(f"{path}\x00{f.blob_id}\x00{int(f.lfs)}\n".encode())
    return h.hexdigest()


def load_repo(root: Path, repo_id: str) -> RepoInfo | None:
    """The repo's index, or None if ``root/<repo_id>`` has none."""
    try:
        data = json.loads((repo_dir(root, repo_id) / META_NAME).read_text())
    except (FileNotFoundError, NotADirectoryError):
        return None
    return RepoInfo.from_json(data)


def _write_index(root: Path, info: RepoInfo) -> RepoInfo:
    directory = repo_dir(root, info.repo_id)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f"{META_NAME}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.write_text(json.dumps(info.to_json(), indent=1))
    os.replace(tmp, directory / META_NAME)
    return info


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _make_info(
    repo_id: str, files: Mapping[str, FileInfo], token: str | None, lfs_threshold: int
) -> RepoInfo:
    return RepoInfo(
        repo_id=repo_id,
        commit=commit_of(files),
        files=dict(files),
        token=token,
        lfs_threshold=lfs_threshold,
        last_modified=_now_iso(),
    )


def _file_info(path: str, hashes: tuple[int, str, str], threshold: int, mtime_ns: int) -> FileInfo:
    """``hashes`` is (size, sha256, git blob sha1)."""
    size, sha256, git_sha1 = hashes
    return FileInfo(path, size, sha256, git_sha1, size >= threshold, mtime_ns)


def add_repo(
    root: Path,
    repo_id: str,
    files: Mapping[str, bytes],
    *,
    token: str | None = None,
    lfs_threshold: int = DEFAULT_LFS_THRESHOLD,
) -> RepoInfo:
    """Create (or replace) ``repo_id`` under ``root`` with exactly ``files`` (path -> content; nested
    paths make directories). ``token`` makes it private; files of ``lfs_threshold`` bytes or more
    are LFS files. Works whether or not a server is running on ``root``."""
    directory = repo_dir(root, repo_id)
    for path in files:
        if clean_repo_path(path) is None:
            raise ValueError(f"invalid file path {path!r}")
    with contextlib.suppress(FileNotFoundError):
        (directory / META_NAME).unlink()
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    infos: dict[str, FileInfo] = {}
    for path, content in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        sha256 = hashlib.sha256(content).hexdigest()
        hashes = (len(content), sha256, git_blob_sha1(content))
        infos[path] = _file_info(path, hashes, lfs_threshold, target.stat().st_mtime_ns)
    return _write_index(root, _make_info(repo_id, infos, token, lfs_threshold))


def _hash_file(path: Path) -> tuple[int, str, str]:
    """(size, sha256, git blob sha1) of a file, read in chunks."""
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    sha1 = hashlib.sha1(b"blob %d\x00" % size, usedforsecurity=False)
    read = 0
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            sha256.update(chunk)
            sha1.update(chunk)
            read += len(chunk)
    if read != size:
        raise RuntimeError(f"{path} changed while hashing")
    return size, sha256.hexdigest(), sha1.hexdigest()


def add_file(
    root: Path,
    repo_id: str,
    path_in_repo: str,
    source: Path | Iterable[bytes],
    *,
    link: bool = False,
    size: int | None = None,
) -> RepoInfo:
    """Add or replace one file without holding it in memory: ``source`` is a file on disk (copied, or
    hard-linked with ``link=True``) or an iterable of byte chunks (e.g. a generator making a
    multi-GiB file; give its ``size`` to hash it in a single pass). The repo keeps its token and LFS
    threshold; a new repo is public with the default threshold (call :func:`add_repo` with no files
    first to choose). Not safe to call concurrently for the same repo."""
    if clean_repo_path(path_in_repo) is None:
        raise ValueError(f"invalid file path {path_in_repo!r}")
    directory = repo_dir(root, repo_id)
    current = load_repo(root, repo_id)
    token = current.token if current else None
    threshold = current.lfs_threshold if current else DEFAULT_LFS_THRESHOLD
    files = dict(current.files) if current else {}
    target = directory / path_in_repo
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{secrets.token_hex(4)}")
    try:
        if isinstance(source, Path):
            if link:
                os.link(source, tmp)
            else:
                shutil.copyfile(source, tmp)
            size, sha256, sha1 = _hash_file(tmp)
        else:
            h256 = hashlib.sha256()
            # the git blob id hashes the size first: one pass if it is known, else a second read
            h1 = hashlib.sha1(b"blob %d\x00" % size, usedforsecurity=False) if size is not None else None
            written = 0
            with tmp.open("wb") as out:
                for chunk in source:
                    out.write(chunk)
                    h256.update(chunk)
                    if h1 is not None:
                        h1.update(chunk)
                    written += len(chunk)
            if h1 is not None:
                if written != size:
                    raise ValueError(f"{path_in_repo}: got {written} bytes, size said {size}")
                sha256, sha1 = h256.hexdigest(), h1.hexdigest()
            else:
                size, sha256, sha1 = _hash_file(tmp)
                if sha256 != h256.hexdigest():
                    raise RuntimeError(f"{tmp} changed while writing")
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    files[path_in_repo] = _file_info(path_in_repo, (size, sha256, sha1), threshold, target.stat().st_mtime_ns)
    return _write_index(root, _make_info(repo_id, files, token, threshold))


def index_repo(
    root: Path, repo_id: str, *, token: str | None = None, lfs_threshold: int = DEFAULT_LFS_THRESHOLD
) -> RepoInfo:
    """(Re)index the working tree of ``root/<repo_id>`` as it is on disk (``.git`` directories, the
    index itself, temporary files and symlinks are skipped). Files whose size and mtime match the
    previous index are not hashed again."""
    directory = repo_dir(root, repo_id)
    if not directory.is_dir():
        raise FileNotFoundError(directory)
    previous = load_repo(root, repo_id)
    old = previous.files if previous else {}
    files: dict[str, FileInfo] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        rel_dir = Path(dirpath).relative_to(directory).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = prefix + name
            full = Path(dirpath) / name
            if clean_repo_path(path) is None or full.is_symlink() or ".tmp-" in name:
                continue
            st = full.stat()
            known = old.get(path)
            if known and known.size == st.st_size and known.mtime_ns == st.st_mtime_ns:
                hashes = (known.size, known.sha256, known.git_sha1)
                files[path] = _file_info(path, hashes, lfs_threshold, st.st_mtime_ns)
                continue
            files[path] = _file_info(path, _hash_file(full), lfs_threshold, st.st_mtime_ns)
    return _write_index(root, _make_info(repo_id, files, token, lfs_threshold))


def remove_repo(root: Path, repo_id: str) -> None:
    directory = repo_dir(root, repo_id)
    with contextlib.suppress(FileNotFoundError):
        (directory / META_NAME).unlink()
    shutil.rmtree(directory, ignore_errors=True)


def index_missing(root: Path) -> list[str]:
    """Index every ``root/<org>/<name>/`` directory that has no index yet (public, default
    threshold); returns the repo ids indexed."""
    done: list[str] = []
    for org in sorted(root.iterdir()) if root.is_dir() else []:
        if not org.is_dir() or not _NAME_RE.match(org.name):
            continue
        for repo in sorted(org.iterdir()):
            repo_id = f"{org.name}/{repo.name}"
            if repo.is_dir() and valid_repo_id(repo_id) and not (repo / META_NAME).exists():
                index_repo(root, repo_id)
                done.append(repo_id)
    return done


# ---------------------------------------------------------------------------------------------
# Faults and the request log
# ---------------------------------------------------------------------------------------------

FaultKind = Literal["corrupt", "drop_after", "stall_after", "ignore_range"]
FAULT_KINDS: tuple[FaultKind, ...] = ("corrupt", "drop_after", "stall_after", "ignore_range")


@dataclass
class Fault:
    """An armed fault for GET resolve requests of one file; applies to the next ``count`` of them.

    - ``corrupt``: the byte at absolute file offset ``offset`` is flipped (xor 0xff) if the response
      covers it; headers (ETag, sizes) are unchanged.
    - ``drop_after``: ``bytes`` body bytes are sent, then the connection is closed (the body is short).
      If the body is not longer than ``bytes`` it is sent whole.
    - ``stall_after``: ``bytes`` body bytes are sent, then nothing while the connection stays open, for
      ``seconds`` or until the client goes away; then the connection is closed, or with ``resume``
      the rest of the body is sent.
    - ``ignore_range``: the ``Range`` header is ignored: ``200`` and the whole file, as from a
      server or proxy that does not do ranges.
    """

    id: int
    repo_id: str
    path: str
    kind: FaultKind
    count: int = 1
    offset: int = 0
    bytes: int = 0
    seconds: float = 30.0
    resume: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "repo_id": self.repo_id,
            "path": self.path,
            "kind": self.kind,
            "count": self.count,
            "offset": self.offset,
            "bytes": self.bytes,
            "seconds": self.seconds,
            "resume": self.resume,
        }


class BadRequest(ValueError):
    pass


def _int_field(spec: Mapping[str, Any], name: str, default: int, minimum: int) -> int:
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BadRequest(f"{name} must be an integer >= {minimum}")
    return value


def parse_fault(spec: Any, fault_id: int) -> Fault:
    if not isinstance(spec, dict):
        raise BadRequest("a fault is a JSON object")
    unknown = set(spec) - {"repo_id", "path", "kind", "count", "offset", "bytes", "seconds", "resume"}
    if unknown:
        raise BadRequest(f"unknown fault fields: {sorted(unknown)}")
    repo_id, path, kind = spec.get("repo_id"), spec.get("path"), spec.get("kind")
    if not isinstance(repo_id, str) or not valid_repo_id(repo_id):
        raise BadRequest("repo_id must be <org>/<name>")
    if not isinstance(path, str) or clean_repo_path(path) is None:
        raise BadRequest("path must be a file path in the repo")
    if kind not in FAULT_KINDS:
        raise BadRequest(f"kind must be one of {list(FAULT_KINDS)}")
    seconds = spec.get("seconds", 30.0)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 86400:
        raise BadRequest("seconds must be a number in [0, 86400]")
    resume = spec.get("resume", False)
    if not isinstance(resume, bool):
        raise BadRequest("resume must be a boolean")
    return Fault(
        id=fault_id,
        repo_id=repo_id,
        path=path,
        kind=kind,
        count=_int_field(spec, "count", 1, 1),
        offset=_int_field(spec, "offset", 0, 0),
        bytes=_int_field(spec, "bytes", 0, 0),
        seconds=float(seconds),
        resume=resume,
    )


class _Unsatisfiable(Exception):
    pass


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``(start, end_exclusive)`` of a single ``bytes=`` range, None for the whole file (no header,
    or one we ignore as RFC 9110 allows: malformed, multiple ranges); :class:`_Unsatisfiable` for 416."""
    if header is None:
        return None
    m = _RANGE_RE.match(header)
    if not m:
        return None
    first, last = m.group(1), m.group(2)
    if first:
        start = int(first)
        end = int(last) + 1 if last else size
        if last and int(last) < start:
            return None  # invalid range-spec: ignored
        if start >= size:
            raise _Unsatisfiable
        return start, min(end, size)
    if last:
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise _Unsatisfiable
        return max(size - suffix, 0), size
    return None


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes")


def _error(
    status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None
) -> web.Response:
    # printable ASCII only: paths and revisions come from the client (CR/LF, NUL, non-UTF-8...)
    safe = _UNSAFE_HEADER_CHARS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)
    h = {"X-Error-Message": safe, **(headers or {})}
    if code:
        h["X-Error-Code"] = code
    return web.json_response({"error": safe}, status=status, headers=h)


def _bearer(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


@dataclass
class _Tree:
    """Files and directories of a repo at its commit, derived from the index."""

    info: RepoInfo
    dirs: dict[str, str]  # directory path -> tree oid
    paths: list[str] = field(default_factory=list)  # every file and directory, sorted

    @classmethod
    def build(cls, info: RepoInfo) -> _Tree:
        members: dict[str, list[str]] = {}
        for path, f in info.files.items():
            parts = path.split("/")
            for i in range(1, len(parts)):
                members.setdefault("/".join(parts[:i]), []).append(f"{path}\x00{f.blob_id}")
        dirs = {
            d: hashlib.sha1(("\n".join(sorted(m))).encode(), usedforsecurity=False).hexdigest()
            for d, m in members.items()
        }
        return cls(info, dirs, sorted([*dirs, *info.files]))

    def entry(self, path: str, expand: bool) -> dict[str, Any]:
        commit = {"id": self.info.commit, "title": "aim local hub", "date": self.info.last_modified}
        if path in self.dirs:
            out: dict[str, Any] = {"type": "directory", "oid": self.dirs[path], "size": 0, "path": path}
        else:
            f = self.info.files[path]
            out = {"type": "file", "oid": f.blob_id, "size": f.size, "path": path}
            if f.lfs:
                out["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": f.pointer_size}
        if expand:
            out["lastCommit"] = commit
        return out

    def listing(self, base: str, recursive: bool) -> list[str] | None:
        """Paths under directory ``base`` ("" = root); None if ``base`` is not a directory."""
        if base and base not in self.dirs:
            return None
        prefix = base + "/" if base else ""
        everything = [p for p in self.paths if p.startswith(prefix)]
        if recursive:
            return everything
        return [p for p in everything if "/" not in p[len(prefix) :]]


class HubApp:
    """The aiohttp application: one catch-all route that parses the raw path itself, so that
    ``%2F``-encoded revisions and encoded traversal attempts are handled explicitly."""

    def __init__(self, root: Path, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self.root = root.resolve()
        self.page_size = max(1, page_size)
        self.faults: list[Fault] = []
        self.request_log: deque[dict[str, Any]] = deque(maxlen=_REQUEST_LOG_MAX)
        self._next_fault_id = 1
        self._cache: dict[str, tuple[tuple[int, int, int], _Tree]] = {}

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        return app

    # -- repos ------------------------------------------------------------------------------

    def _tree(self, repo_id: str) -> _Tree | None:
        meta = self.root / repo_id / META_NAME
        try:
            st = meta.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._cache.get(repo_id)
        if cached and cached[0] == key:
            return cached[1]
        try:
            info = RepoInfo.from_json(json.loads(meta.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            log.exception("bad index %s", meta)
            return None
        tree = _Tree.build(info)
        self._cache[repo_id] = (key, tree)
        return tree

    def _open_repo(
        self, request: web.Request, org: str, name: str, revision: str | None
    ) -> _Tree | web.Response:
        """The repo's tree after the checks the Hub makes, in its order: repo exists, auth, revision."""
        repo_id = f"{org}/{name}"
        if not valid_repo_id(repo_id):
            return _error(400, f"Invalid repo id {repo_id!r}")
        tree = self._tree(repo_id)
        if tree is None:
            return _error(404, "Repository not found", "RepoNotFound")
        token = tree.info.token
        if token is not None:
            given = _bearer(request)
            if given is None:
                return _error(401, "Repository not found", "RepoNotFound")
            if not hmac.compare_digest(given.encode(), token.encode()):
                return _error(401, "Invalid credentials in Authorization header")
        if revision is not None and revision not in ("main", tree.info.commit):
            return _error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return tree

    # -- routing ----------------------------------------------------------------------------

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        raw = request.raw_path.split("?", 1)[0]
        segs = raw.split("/")[1:]
        try:
            if segs and segs[0] == "_admin":
                return await self._admin(request, segs[1:])
            if len(segs) >= 4 and segs[0] == "api" and segs[1] == "models":
                return await self._api(request, unquote(segs[2]), unquote(segs[3]), segs[4:])
            if len(segs) >= 5 and segs[2] == "resolve":
                if request.method not in ("GET", "HEAD"):
                    return _error(405, "Method not allowed")
                rev = unquote(segs[3])
                return await self._resolve(
                    request, unquote(segs[0]), unquote(segs[1]), rev, "/".join(segs[4:])
                )
        except BadRequest as e:
            return _error(400, str(e))
        return _error(404, "Not found")

    async def _api(self, request: web.Request, org: str, name: str, rest: list[str]) -> web.StreamResponse:
        if rest in ([], [""]) and request.method == "GET":
            return self._model_info(request, org, name, None)
        if len(rest) == 2 and rest[0] == "revision" and request.method == "GET":
            return self._model_info(request, org, name, unquote(rest[1]))
        if len(rest) >= 2 and rest[0] == "tree" and request.method == "GET":
            return self._list_tree(request, org, name, unquote(rest[1]), unquote("/".join(rest[2:])))
        if len(rest) == 2 and rest[0] == "paths-info" and request.method == "POST":
            form = await request.post()
            paths = [str(p) for p in form.getall("paths", [])]
            expand = _truthy(str(form.get("expand")))
            return self._paths_info(request, org, name, unquote(rest[1]), paths=paths, expand=expand)
        return _error(404, "Not found")

    # -- API endpoints ----------------------------------------------------------------------

    def _model_info(self, request: web.Request, org: str, name: str, revision: str | None) -> web.Response:
        tree = self._open_repo(request, org, name, revision)
        if isinstance(tree, web.Response):
            return tree
        info = tree.info
        blobs = _truthy(request.query.get("blobs"))
        siblings: list[dict[str, Any]] = []
        for path in sorted(info.files):
            f = info.files[path]
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                sibling["size"] = f.size
                sibling["blobId"] = f.blob_id
                if f.lfs:
                    sibling["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": f.pointer_size}
            siblings.append(sibling)
        body = {
            "_id": info.commit[:24],
            "id": info.repo_id,
            "modelId": info.repo_id,
            "author": info.repo_id.split("/")[0],
            "sha": info.commit,
            "lastModified": info.last_modified,
            "createdAt": info.last_modified,
            "private": info.private,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "library_name": None,
            "siblings": siblings,
            "spaces": [],
            "usedStorage": sum(f.size for f in info.files.values()),
        }
        return web.json_response(body)

    def _list_tree(self, request: web.Request, org: str, name: str, revision: str, path: str) -> web.Response:
        tree = self._open_repo(request, org, name, revision)
        if isinstance(tree, web.Response):
            return tree
        base = path.strip("/")
        if base and clean_repo_path(base) is None:
            return _error(400, f"Invalid path {path!r}")
        listing = tree.listing(base, _truthy(request.query.get("recursive")))
        if listing is None:
            return _error(404, f"{path} does not exist on {revision}", "EntryNotFound")
        cursor_raw = request.query.get("cursor", "0")
        if not _CURSOR_RE.match(cursor_raw):
            return _error(400, "Invalid cursor")
        cursor = int(cursor_raw)
        page = listing[cursor : cursor + self.page_size]
        expand = _truthy(request.query.get("expand"))
        headers: dict[str, str] = {}
        if cursor + self.page_size < len(listing):
            try:
                next_url = str(request.url.update_query({"cursor": str(cursor + self.page_size)}))
            except ValueError:  # an unusable Host header: a relative link is the best we can do
                next_url = str(request.rel_url.update_query({"cursor": str(cursor + self.page_size)}))
            headers["Link"] = f'<{next_url}>; rel="next"'
        return web.json_response([tree.entry(p, expand) for p in page], headers=headers)

    def _paths_info(
        self, request: web.Request, org: str, name: str, revision: str, *, paths: list[str], expand: bool
    ) -> web.Response:
        tree = self._open_repo(request, org, name, revision)
        if isinstance(tree, web.Response):
            return tree
        out = []
        for raw in paths:
            p = raw.strip("/")
            if clean_repo_path(p) is not None and (p in tree.info.files or p in tree.dirs):
                out.append(tree.entry(p, expand))
        return web.json_response(out)

    # -- resolve ----------------------------------------------------------------------------

    async def _resolve(
        self, request: web.Request, org: str, name: str, revision: str, raw_path: str
    ) -> web.StreamResponse:
        path = unquote(raw_path, errors="replace")
        entry: dict[str, Any] = {
            "time": time.time(),
            "method": request.method,
            "repo_id": f"{org}/{name}",
            "revision": revision,
            "path": path,
            "range": request.headers.get("Range"),
            "status": None,
            "bytes_sent": 0,
            "fault": None,
            "error": None,
            "done": False,
        }
        self.request_log.append(entry)
        try:
            response = await self._resolve_file(request, f"{org}/{name}", revision, path=path, entry=entry)
            if entry["status"] is None:
                entry["status"] = response.status
            return response
        finally:
            entry["done"] = True

    async def _resolve_file(
        self, request: web.Request, repo_id: str, revision: str, *, path: str, entry: dict[str, Any]
    ) -> web.StreamResponse:
        org, name = repo_id.split("/", 1)
        tree = self._open_repo(request, org, name, revision)
        if isinstance(tree, web.Response):
            return tree
        info = tree.info
        commit_header = {"X-Repo-Commit": info.commit}
        clean = clean_repo_path(path)
        if clean is None:
            return _error(400, f"Invalid path {path!r}", headers=commit_header)
        f = info.files.get(clean)
        directory = self.root / info.repo_id
        file_path = directory / clean
        if f is None or not await asyncio.to_thread(_inside_regular_file, directory, file_path, f.size):
            return _error(404, f"{clean} does not exist on {revision}", "EntryNotFound", commit_header)

        headers = {
            **commit_header,
            "ETag": f'"{f.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if f.lfs:
            headers["X-Linked-Etag"] = f'"{f.sha256}"'
            headers["X-Linked-Size"] = str(f.size)
        try:
            rng = parse_range(request.headers.get("Range"), f.size)
        except _Unsatisfiable:  # answered before a fault is taken: a 416 would waste it
            headers["Content-Range"] = f"bytes */{f.size}"
            return web.Response(status=416, headers=headers)
        fault = self._take_fault(info.repo_id, clean) if request.method == "GET" else None
        if fault is not None and fault.kind == "ignore_range":
            entry["fault"], fault, rng = fault.kind, None, None
        start, end = rng if rng else (0, f.size)
        status = 200
        if rng is not None:
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{f.size}"
        response = web.StreamResponse(status=status, headers=headers)
        response.content_length = end - start
        entry["status"] = status

        writer = await response.prepare(request)
        if request.method == "HEAD" or end == start or writer is None:
            await response.write_eof()
            return response
        transfer = _Transfer(request, response, writer, file_path, start, end, entry)
        try:
            if fault is not None:
                entry["fault"] = fault.kind
                await transfer.faulted(fault)
            else:
                await transfer.sendfile()
        except (ConnectionError, RuntimeError) as e:
            entry["error"] = str(e) or type(e).__name__
            _close(request)
            return response
        if entry["error"] is None:
            await response.write_eof()
        return response

    def _take_fault(self, repo_id: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.repo_id == repo_id and fault.path == path:
                fault.count -= 1
                if fault.count <= 0:
                    self.faults.remove(fault)
                return fault
        return None

    # -- admin ------------------------------------------------------------------------------

    async def _admin(self, request: web.Request, rest: list[str]) -> web.StreamResponse:
        what = "/".join(rest)
        if what == "health" and request.method == "GET":
            return web.json_response({"ok": True, "root": str(self.root)})
        if what == "faults":
            if request.method == "GET":
                return web.json_response([f.to_json() for f in self.faults])
            if request.method == "DELETE":
                self.faults.clear()
                return web.json_response([])
            if request.method == "POST":
                try:
                    body = await request.json()
                except ValueError as e:
                    raise BadRequest(f"invalid JSON: {e}") from e
                specs = body if isinstance(body, list) else [body]
                added = []
                for spec in specs:
                    added.append(parse_fault(spec, self._next_fault_id))
                    self._next_fault_id += 1
                self.faults.extend(added)
                return web.json_response([f.to_json() for f in added])
        if what == "requests":
            if request.method == "GET":
                return web.json_response(list(self.request_log))
            if request.method == "DELETE":
                self.request_log.clear()
                return web.json_response([])
        return _error(404, "Not found")


@dataclass
class _Transfer:
    """Sending bytes ``[start, end)`` of a file as the body of a prepared response."""

    request: web.Request
    response: web.StreamResponse
    writer: AbstractStreamWriter
    path: Path
    start: int
    end: int
    entry: dict[str, Any]
    sent: int = 0

    async def sendfile(self) -> None:
        """The fast path: ``sendfile(2)`` through the event loop (as ``web.FileResponse`` does), in
        chunks so the request log can follow progress."""
        loop = asyncio.get_running_loop()
        fobj: IO[bytes] = await asyncio.to_thread(self.path.open, "rb")
        try:
            count = self.end - self.start
            while self.sent < count:
                transport = self.request.transport
                if transport is None or transport.is_closing():
                    raise ConnectionResetError("client went away")
                try:
                    n = await loop.sendfile(
                        transport, fobj, self.start + self.sent, min(count - self.sent, _SENDFILE_CHUNK)
                    )
                except NotImplementedError:
                    await self._copy(fobj, self.end, None)
                    return
                if n == 0:
                    raise RuntimeError(f"{self.path} shrank while serving it")
                self.sent += n
                self.entry["bytes_sent"] = self.sent
        finally:
            await asyncio.to_thread(fobj.close)

    async def faulted(self, fault: Fault) -> None:
        """Stream by hand, applying ``fault``."""
        fobj: IO[bytes] = await asyncio.to_thread(self.path.open, "rb")
        try:
            if fault.kind == "corrupt":
                await self._copy(fobj, self.end, fault.offset)
                return
            cut = min(self.start + fault.bytes, self.end)
            await self._copy(fobj, cut, None)
            if cut == self.end:
                return  # the body is not longer than the fault's byte count: nothing to cut
            await self.writer.drain()
            if fault.kind == "drop_after":
                self.entry["error"] = "dropped by fault"
                _close(self.request)
                return
            gone = await _stall(self.request, fault.seconds)
            if gone or not fault.resume:
                self.entry["error"] = "client went away during stall" if gone else "closed after stall"
                _close(self.request)
                return
            await self._copy(fobj, self.end, None)
        finally:
            await asyncio.to_thread(fobj.close)

    async def _copy(self, fobj: IO[bytes], until: int, flip: int | None) -> None:
        """Write file bytes from the current position up to absolute offset ``until``; the byte at
        absolute offset ``flip`` (if any, and if covered) goes out xor 0xff."""
        pos = self.start + self.sent
        while pos < until:
            chunk = await asyncio.to_thread(_read_at, fobj, pos, min(_STREAM_CHUNK, until - pos))
            if not chunk:
                raise RuntimeError(f"{self.path} shrank while serving it")
            if flip is not None and pos <= flip < pos + len(chunk):
                i = flip - pos
                chunk = chunk[:i] + bytes([chunk[i] ^ 0xFF]) + chunk[i + 1 :]
            await self.response.write(chunk)
            pos += len(chunk)
            self.sent += len(chunk)
            self.entry["bytes_sent"] = self.sent


def _inside_regular_file(directory: Path, file_path: Path, size: int) -> bool:
    """The file resolves (symlinks included) to a regular file inside the repo, of the indexed size."""
    try:
        real = file_path.resolve(strict=True)
        if not real.is_relative_to(directory.resolve(strict=True)) or not real.is_file():
            return False
        if real.stat().st_size != size:
            log.error("%s has changed on disk since it was indexed; re-run index_repo", file_path)
            return False
    except OSError:
        return False
    return True


def _read_at(fobj: IO[bytes], pos: int, n: int) -> bytes:
    fobj.seek(pos)
    return fobj.read(n)


def _close(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.close()


async def _stall(request: web.Request, seconds: float) -> bool:
    """Wait ``seconds`` or until the client closes the connection; True if it did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        transport = request.transport
        if transport is None or transport.is_closing():
            return True
        await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    return False


async def serve(
    root: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    port_file: Path | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT when run as a program)."""
    hub = HubApp(root, page_size)
    runner = web.AppRunner(hub.app(), handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    bound = runner.addresses[0][1]
    hello = json.dumps({"port": bound, "host": host, "pid": os.getpid(), "root": str(hub.root)})
    if port_file is not None:
        tmp = port_file.with_name(port_file.name + ".tmp")
        tmp.write_text(hello + "\n")
        os.replace(tmp, port_file)
    print(hello, flush=True)
    log.info("serving %s on http://%s:%d", hub.root, host, bound)
    done = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    if stop is None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, done.set)
    try:
        await done.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m aim_dev.local.hub",
        description="A Hugging-Face-Hub-compatible server over a directory.",
    )
    parser.add_argument("--root", type=Path, required=True, help="directory holding <org>/<name>/ repos")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--page-size", type=int, default=DEFAULT_PAGE_SIZE, help="tree entries per page")
    parser.add_argument("--port-file", type=Path, help='also write the {"port": N} line here once bound')
    parser.add_argument("--index-missing", action="store_true", help="index repo dirs lacking .hub.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args.root.mkdir(parents=True, exist_ok=True)
    if args.index_missing:
        for repo_id in index_missing(args.root):
            log.info("indexed %s", repo_id)
    asyncio.run(serve(args.root, args.host, args.port, page_size=args.page_size, port_file=args.port_file))


# ---------------------------------------------------------------------------------------------
# The process manager
# ---------------------------------------------------------------------------------------------


@dataclass
class HubServer(SingleProcessServer):
    """``python -m aim_dev.local.hub`` as a child process that dies with its parent. The first start
    binds a free port; :meth:`restart` comes back on the same one. Logs and the port file live in
    ``workdir`` (default ``root/.hub``, which no repo id can name)."""

    root: Path
    workdir: Path | None = None
    host: str = "127.0.0.1"
    port: int = 0
    page_size: int = DEFAULT_PAGE_SIZE
    process: ManagedProcess | None = None
    die_with_parent: bool = True

    @property
    def endpoint(self) -> str:
        if not self.port:
            raise RuntimeError("the hub server has not been started")
        return f"http://{self.host}:{self.port}"

    @property
    def _workdir(self) -> Path:
        return self.workdir or self.root / ".hub"

    @property
    def log_path(self) -> Path | None:
        return self.process.log_path if self.process else None

    def start(self, timeout: float = 30.0, attempts: int = 3) -> HubServer:
        def new_port() -> None:
            self.port = 0

        return start_with_retries(lambda: self._start(timeout), self.stop, new_port, attempts)

    def _start(self, timeout: float) -> HubServer:
        self.root.mkdir(parents=True, exist_ok=True)
        port_file = self._workdir / "port.json"
        port_file.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            port_file.unlink()
        self.process = ManagedProcess(
            "aim-hub",
            [
                sys.executable,
                "-m",
                "aim_dev.local.hub",
                "--root",
                str(self.root),
                "--host",
                self.host,
                "--port",
                str(self.port),
                "--page-size",
                str(self.page_size),
                "--port-file",
                str(port_file),
            ],
            self._workdir / "logs",
            die_with_parent=self.die_with_parent,
        ).start()
        self.process.wait_until(port_file.exists, timeout, "the hub's port file")
        self.port = int(json.loads(port_file.read_text())["port"])
        self.process.wait_until(self._healthy, timeout, "GET /_admin/health")
        return self

    def _healthy(self) -> bool:
        try:
            return bool(self._admin("GET", "health").get("ok"))
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _admin(self, method: str, what: str, body: object = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.endpoint}/_admin/{what}", data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise ValueError(
                f"hub admin {method} {what}: {e.code} {e.read().decode(errors='replace')}"
            ) from e

    # -- convenience ------------------------------------------------------------------------

    def url(self, repo_id: str, path: str, revision: str = "main") -> str:
        """The resolve URL ``hf_hub_url`` would build."""
        return f"{self.endpoint}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"

    def add_fault(
        self,
        repo_id: str,
        path: str,
        kind: FaultKind,
        *,
        count: int = 1,
        offset: int = 0,
        nbytes: int = 0,
        seconds: float = 30.0,
        resume: bool = False,
    ) -> dict[str, Any]:
        """Arm a fault (see :class:`Fault`) for the next ``count`` GETs of ``repo_id/path``."""
        spec = {
            "repo_id": repo_id,
            "path": path,
            "kind": kind,
            "count": count,
            "offset": offset,
            "bytes": nbytes,
            "seconds": seconds,
            "resume": resume,
        }
        added: list[dict[str, Any]] = self._admin("POST", "faults", spec)
        return added[0]

    def corrupt(self, repo_id: str, path: str, offset: int, *, count: int = 1) -> dict[str, Any]:
        return self.add_fault(repo_id, path, "corrupt", offset=offset, count=count)

    def drop_after(self, repo_id: str, path: str, nbytes: int, *, count: int = 1) -> dict[str, Any]:
        return self.add_fault(repo_id, path, "drop_after", nbytes=nbytes, count=count)

    def stall_after(
        self,
        repo_id: str,
        path: str,
        nbytes: int,
        *,
        seconds: float = 30.0,
        resume: bool = False,
        count: int = 1,
    ) -> dict[str, Any]:
        return self.add_fault(
            repo_id, path, "stall_after", nbytes=nbytes, seconds=seconds, resume=resume, count=count
        )

    def faults(self) -> list[dict[str, Any]]:
        """The faults still armed (with their remaining counts)."""
        armed: list[dict[str, Any]] = self._admin("GET", "faults")
        return armed

    def clear_faults(self) -> None:
        self._admin("DELETE", "faults")

    def requests(self) -> list[dict[str, Any]]:
        """The resolve request log, oldest first: method, repo_id, revision, path, range (the raw
        header or None), status, bytes_sent, fault, error, done."""
        entries: list[dict[str, Any]] = self._admin("GET", "requests")
        return entries

    def clear_requests(self) -> None:
        self._admin("DELETE", "requests")


if __name__ == "__main__":
    main()
