"""Resumable partial files. Bytes in flight live under ``dest/.aim-partial/`` (never at the final
path): ``<path>.part`` plus ``<path>.state.json`` recording the file's identity (URL without its
query, size, digests, ETag) and the byte ranges known to be on disk. A later download continues the
missing ranges when the identity matches and starts the file over when it does not. A state with
``placed`` marks a file already verified and moved into place by an interrupted run."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_cache_jobs.downloader.errors import redact_url
from aim_cache_jobs.downloader.listing import PARTIAL_DIR, RemoteFile
from aim_cache_jobs.downloader.ranges import RangeSet

PART_SUFFIX = ".part"
STATE_SUFFIX = ".state.json"


def identity(remote: RemoteFile) -> dict[str, Any]:
    """What must be equal for partial bytes to be reused: same content at the same place."""
    url = remote.url if remote.url.startswith("file://") else redact_url(remote.url)
    return {
        "path": remote.path,
        "url": url,
        "size": remote.size,
        "digests": {d.algorithm: d.value for d in sorted(remote.digests, key=lambda d: d.algorithm)},
        "etag": remote.etag,
        "ranges": remote.ranges,
    }


@dataclass
class PartialState:
    identity: dict[str, Any]
    done: RangeSet = field(default_factory=RangeSet)
    placed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.identity, "done": self.done.ranges(), "placed": self.placed}


def partial_dir(dest: Path) -> Path:
    return dest / PARTIAL_DIR


def part_path(dest: Path, rel: str) -> Path:
    return partial_dir(dest) / (rel + PART_SUFFIX)


def state_path(dest: Path, rel: str) -> Path:
    return partial_dir(dest) / (rel + STATE_SUFFIX)


def load_state(path: Path) -> PartialState | None:
    try:
        data = json.loads(path.read_text())
        done = RangeSet((int(s), int(e)) for s, e in data.get("done", ()))
        return PartialState(identity=dict(data["identity"]), done=done, placed=bool(data.get("placed")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_state(path: Path, state: PartialState) -> None:
    """Atomic replace (the ranges it claims must already be on disk: fdatasync the part first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{secrets.token_hex(4)}")
    try:
        tmp.write_text(json.dumps(state.to_json()))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def discard(dest: Path, rel: str) -> None:
    """Forget a file's partial bytes and state."""
    for p in (part_path(dest, rel), state_path(dest, rel)):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
