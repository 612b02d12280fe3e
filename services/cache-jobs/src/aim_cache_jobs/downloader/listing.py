"""What a source lists: its files, each with its size, where to fetch it (an http(s) URL, with
per-request credentials where the source needs them, or a local path), the digests the source
vouches for and a version marker for resuming; and the names the downloader keeps for itself in a
destination. Every source module (:mod:`.hfsource`, :mod:`.s3source`, :mod:`.httpsource`,
:mod:`.ocisource`, :mod:`.localsource`) produces these, so one transfer engine serves all. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aim_cache_jobs.downloader.errors import INVALID_SOURCE, DownloadError

MANIFEST_NAME = ".aim-manifest.json"
PARTIAL_DIR = ".aim-partial"
RESERVED_NAMES = frozenset({MANIFEST_NAME, PARTIAL_DIR, PARTIAL_DIR + ".lock"})
DIGEST_ALGORITHMS = ("sha256", "git-sha1", "md5")

_HEX = re.compile(r"^[0-9a-f]+$")
_HEX_LEN = {"sha256": 64, "git-sha1": 40, "md5": 32}


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
