"""The record of a complete download: written last and atomically in the destination, so its
presence means every listed file is in place and verified. A later download of the same source and
revision that finds it (and the files at their sizes) does nothing; anything else starts over
around it. Besides the digests verified against the source, a file may carry digests computed while
it was downloaded (e.g. the sha256 of a file whose source gives none): optional in the JSON, so
manifests without them still load. Pure JSON (de)serialisation plus small, atomic file I/O."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aim_cache_jobs.downloader.listing import MANIFEST_NAME, Digest, Listing, validate_path

MANIFEST = MANIFEST_NAME
SCHEMA = 1


@dataclass(frozen=True)
class ManifestFile:
    path: str
    size: int
    digests: tuple[Digest, ...]  # the digests that were verified
    computed: tuple[Digest, ...] = ()
    """Digests of the bytes as placed, for algorithms the source gives no value for (computed while
    downloading; not a verification). May lack an algorithm that was asked for when the file was
    adopted without being read (see :func:`aim_cache_jobs.downloader.run.download`)."""

    def digest(self, algorithm: str) -> str | None:
        """The file's ``algorithm`` digest: the verified one, else the computed one, else None."""
        for d in self.digests:
            if d.algorithm == algorithm:
                return d.value
        for d in self.computed:
            if d.algorithm == algorithm:
                return d.value
        return None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "size": self.size,
            "digests": {d.algorithm: d.value for d in self.digests},
        }
        if self.computed:
            data["computed"] = {d.algorithm: d.value for d in self.computed}
        return data

    @classmethod
    def from_json(cls, data: Any) -> ManifestFile:
        return cls(
            path=validate_path(str(data["path"])),
            size=int(data["size"]),
            digests=_digests(data.get("digests")),
            computed=_digests(data.get("computed")),
        )


def _digests(data: Any) -> tuple[Digest, ...]:
    return tuple(Digest(str(a), str(v)) for a, v in dict(data or {}).items())


@dataclass(frozen=True)
class Manifest:
    source: str
    revision: str | None
    files: tuple[ManifestFile, ...]
    total_bytes: int
    verified: tuple[str, ...]  # algorithms actually checked against the source, sorted (not computed)
    completed_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "source": self.source,
            "revision": self.revision,
            "totalBytes": self.total_bytes,
            "verified": list(self.verified),
            "completedAt": self.completed_at,
            "files": [f.to_json() for f in self.files],
        }

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError("not a manifest of a known schema")
        files = tuple(ManifestFile.from_json(f) for f in data["files"])
        revision = data.get("revision")
        return cls(
            source=str(data["source"]),
            revision=None if revision is None else str(revision),
            files=files,
            total_bytes=int(data["totalBytes"]),
            verified=tuple(str(v) for v in data.get("verified", ())),
            completed_at=float(data.get("completedAt", 0.0)),
        )


def build(listing: Listing, verified_files: Iterable[ManifestFile], completed_at: float) -> Manifest:
    files = tuple(sorted(verified_files, key=lambda f: f.path))
    algorithms = sorted({d.algorithm for f in files for d in f.digests})
    return Manifest(
        source=listing.source,
        revision=listing.revision,
        files=files,
        total_bytes=sum(f.size for f in files),
        verified=tuple(algorithms),
        completed_at=completed_at,
    )


def read_manifest(dest: Path) -> Manifest | None:
    """The manifest in ``dest``, or None if there is none or it is unreadable."""
    try:
        return Manifest.from_json(json.loads((Path(dest) / MANIFEST).read_text()))
    except Exception:  # missing, unreadable, malformed or naming an unsafe path: no manifest
        return None


def write_manifest(dest: Path, manifest: Manifest) -> None:
    """Atomically (temp file, fsync, rename, fsync the directory)."""
    dest = Path(dest)
    tmp = dest / f"{MANIFEST}.tmp-{secrets.token_hex(4)}"
    try:
        with tmp.open("w") as f:
            json.dump(manifest.to_json(), f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest / MANIFEST)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    fsync_dir(dest)


def remove_manifest(dest: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (Path(dest) / MANIFEST).unlink()
        fsync_dir(Path(dest))


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def matches(manifest: Manifest, listing: Listing, dest: Path) -> bool:
    """The manifest describes exactly this listing and every file is present at its size: nothing
    to download. A digest the source gives must equal the one recorded (verified or computed: a
    computed digest is the hash of the bytes in place, as good a witness as a verified one)."""
    if manifest.source != listing.source or manifest.revision != listing.revision:
        return False
    recorded = {f.path: f for f in manifest.files}
    if set(recorded) != {f.path for f in listing.files}:
        return False
    for remote in listing.files:
        mine = recorded[remote.path]
        if mine.size != remote.size:
            return False
        mine_digests = {d.algorithm: d.value for d in (*mine.computed, *mine.digests)}
        for d in remote.digests:
            if mine_digests.get(d.algorithm) != d.value:
                return False
        try:
            if os.stat(Path(dest) / remote.path).st_size != remote.size:
                return False
        except OSError:
            return False
    return True
