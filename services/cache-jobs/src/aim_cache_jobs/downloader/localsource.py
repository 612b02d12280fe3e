"""Local paths (``/abs/path`` or ``file:///abs/path``): a file, or every file of a directory tree
(symlinks only within it; a previous download's bookkeeping left out), copied by the transfer
engine. Blocking: run in a thread."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import unquote, urlsplit

from aim_cache_jobs.downloader.errors import (
    AUTH_ERROR,
    DOWNLOAD_FAILED,
    INVALID_SOURCE,
    SOURCE_NOT_FOUND,
    DownloadError,
)
from aim_cache_jobs.downloader.listing import RESERVED_NAMES, Listing, RemoteFile
from aim_cache_jobs.downloader.sourceuri import ParsedSource, invalid_source


def parse_file_uri(uri: str) -> ParsedSource:
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise invalid_source(uri, "file URIs must name a local path (file:///abs/path)")
    return parse_local(uri, unquote(parts.path))


def parse_local(uri: str, path: str) -> ParsedSource:
    if not path.startswith("/"):
        raise invalid_source(uri, "local paths must be absolute")
    if "\x00" in path:
        raise invalid_source(uri, "NUL in path")
    return ParsedSource(uri=uri, scheme="file", path=os.path.normpath(path))


def list_local(parsed: ParsedSource) -> Listing:
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
