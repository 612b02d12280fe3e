"""Which of a source's files a download keeps: a model cache's download filter (``include`` and
``exclude`` glob patterns on repository-relative paths, as the released AIM Engine's
``downloadFilter`` and ``hf download --include/--exclude`` write them). The size probe and the
download apply the same filter to the same listing, so a cache's size, its progress and the files
on its volume are the filtered ones. Pure.

Matching is Python's :func:`fnmatch.fnmatchcase` on the POSIX path (``*`` also matches ``/``, so
``*.safetensors`` keeps weights in subfolders too, and ``*/*`` is every file in a subfolder): a
file is kept when no ``include`` is given or one matches, and no ``exclude`` matches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from aim_cache_jobs.downloader.errors import INVALID_SOURCE, DownloadError
from aim_cache_jobs.downloader.listing import Listing

SUBFOLDERS = "*/*"
"""The released original's default exclude for ``hf://`` sources: files in a repository's
subfolders (``original/`` consolidated checkpoints, ``onnx/`` exports...), which servers load
from the repository's top level."""


@dataclass(frozen=True)
class DownloadFilter:
    """``include`` and ``exclude`` patterns; both empty is no filtering (:data:`NONE`)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def off(self) -> bool:
        return not self.include and not self.exclude

    def keeps(self, path: str) -> bool:
        """Whether the file at repository-relative ``path`` is downloaded."""
        if self.include and not any(fnmatchcase(path, p) for p in self.include):
            return False
        return not any(fnmatchcase(path, p) for p in self.exclude)

    def apply(self, listing: Listing) -> Listing:
        """``listing`` with only the files this filter keeps; ``DownloadError(InvalidSource)`` when
        it keeps none of a source that has files (a filter that empties a cache is a mistake, and a
        volume of nothing would be called Ready)."""
        if self.off:
            return listing
        kept = tuple(f for f in listing.files if self.keeps(f.path))
        if listing.files and not kept:
            raise DownloadError(
                INVALID_SOURCE,
                f"the download filter ({self.describe()}) keeps none of the {len(listing.files)} files "
                f"of {listing.source}",
            )
        return dataclasses.replace(listing, files=kept)

    def describe(self) -> str:
        """``include *.json, *.safetensors; exclude */*``, or ``none``."""
        parts = []
        if self.include:
            parts.append("include " + ", ".join(self.include))
        if self.exclude:
            parts.append("exclude " + ", ".join(self.exclude))
        return "; ".join(parts) or "none"

    @classmethod
    def of(cls, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> DownloadFilter:
        return cls(tuple(include), tuple(exclude))

    @classmethod
    def from_spec(cls, written: Mapping[str, Any]) -> DownloadFilter:
        """The filter as written in a spec (``{include: [...], exclude: [...]}``); entries that are
        not non-empty strings are refused with ``ValueError`` (the CRDs refuse them first)."""
        return cls(_patterns(written, "include"), _patterns(written, "exclude"))


NONE = DownloadFilter()


def _patterns(written: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = written.get(key)
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ValueError(f"downloadFilter.{key} must be a list of glob patterns, not {value!r}")
    bad = [p for p in value if not isinstance(p, str) or not p]
    if bad:
        raise ValueError(f"downloadFilter.{key} has entries that are not patterns: {bad!r}")
    return tuple(value)
