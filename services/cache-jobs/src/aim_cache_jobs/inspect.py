"""``aim-model-inspect``: what a ``pvc://`` Model's verify Job runs inside the claim, and (``--dir``)
what the import of a ``pvc://`` model cache runs on the directory it imports.

The cache service cannot read a user's claim itself (it would have to mount every claim), so for a
``pvc://`` source it runs a Job that mounts the claim read-only and runs this command on the file.
It prints one JSON line, which the controller reads back from the pod log
(:mod:`aim_cache.llmkube.verify` parses it):

- ``{"result": "ok", "size": …, "mtime": …, "sha256": …, "gguf": {…} | null, "hashed": bool}``
- ``{"result": "error", "reason": "SourceNotFound" | "InvalidSource" | "ReadFailed", "message": …}``
  (exit status 1).

``--dir PATH`` checks a model directory in place (:func:`inspect_dir`): every file the
directory's ``.aim-manifest.json`` lists (an earlier ``aim-download`` wrote it) with its size and
sha256, or, without a manifest, that it holds model weights. It prints
``{"result": "ok", "files": N, "bytes": B, "verified": [...], "manifest": bool}`` or an error
(``SourceNotFound``, ``MissingFiles``, ``SizeMismatch``, ``ChecksumMismatch``, ``ReadFailed``), the
download Job's result line, which the cache service reads alike.

``--known SIZE:MTIME:SHA256`` is the previous round's result: when the file's size and mtime still
match, the recorded digest is reused and the bytes are not read again (``"hashed": false``), so an
hourly revalidation of a 70 GB model costs one ``stat``. The GGUF header is always re-read (a few
kilobytes). No shell is involved; the path is an argument.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO

from aim_cache_jobs import gguf
from aim_cache_jobs.contract import INSPECT_COMMAND, KNOWN_OPTION, Known
from aim_cache_jobs.downloader import manifest as manifests

CHUNK = 4 * 1024 * 1024


def inspect(path: str, known: Known | None) -> dict[str, Any]:
    """The verdict on ``path`` (a dict ready for :func:`json.dumps`)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return _error("SourceNotFound", f"{path} does not exist in the claim")
    except OSError as exc:
        return _error("ReadFailed", f"cannot stat {path}: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return _error("InvalidSource", f"{path} is not a regular file: a Model's source names the model file")
    try:
        with open(path, "rb") as f:  # opened even when the digest is reused: readable is part of the verdict
            st = os.fstat(f.fileno())
            if known is not None and known.size == st.st_size and known.mtime == st.st_mtime:
                sha, hashed = known.sha256, False
            else:
                sha, st = _sha256(f)
                hashed = True
    except OSError as exc:
        return _error("ReadFailed", f"cannot read {path}: {exc.strerror or exc}")
    try:
        header: dict[str, Any] | None = gguf.status_fields(gguf.read_local(path))
    except gguf.GGUFError:
        header = None
    return {
        "result": "ok",
        "size": st.st_size,
        "mtime": st.st_mtime,
        "sha256": sha,
        "gguf": header,
        "hashed": hashed,
    }


WEIGHTS = ("*.safetensors", "*.bin", "*.gguf", "*.pt", "*.pth", "*.onnx")
"""What a directory without a manifest must hold at least one of to be a model."""
SHOWN = 5


def inspect_dir(path: str) -> dict[str, Any]:
    """The verdict on the model directory ``path`` (see the module docstring)."""
    root = Path(path)
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a directory"
        return _error("SourceNotFound", f"{path} {what} in the claim")
    try:
        found = manifests.read_manifest(root)
    except (OSError, ValueError) as exc:
        return _error("ReadFailed", f"cannot read the manifest of {path}: {exc}")
    if found is None:
        return _weights_only(root)
    missing, wrong, bad = [], [], []
    total = 0
    for entry in found.files:
        target = root / entry.path
        try:
            size = target.stat().st_size
        except FileNotFoundError:
            missing.append(entry.path)
            continue
        except OSError as exc:
            return _error("ReadFailed", f"cannot stat {entry.path}: {exc.strerror or exc}")
        if size != entry.size:
            wrong.append(f"{entry.path} ({size} bytes, the manifest says {entry.size})")
            continue
        total += size
        expected = entry.digest("sha256")
        if expected is not None:
            try:
                with open(target, "rb") as f:
                    digest, _ = _sha256(f)
            except OSError as exc:
                return _error("ReadFailed", f"cannot read {entry.path}: {exc.strerror or exc}")
            if digest != expected:
                bad.append(entry.path)
    if missing:
        return _error("MissingFiles", f"{len(missing)} file(s) of the manifest are missing: {_few(missing)}")
    if wrong:
        return _error("SizeMismatch", f"{len(wrong)} file(s) differ in size: {_few(wrong)}")
    if bad:
        return _error("ChecksumMismatch", f"{len(bad)} file(s) fail their sha256: {_few(bad)}")
    verified = ["size", *(["sha256"] if any(e.digest("sha256") for e in found.files) else [])]
    return {"result": "ok", "files": len(found.files), "bytes": total, "verified": verified, "manifest": True}


def _weights_only(root: Path) -> dict[str, Any]:
    """A directory no download described: it must hold model weights; every file is counted."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".aim")]
    if not any(fnmatch.fnmatch(p.name, pattern) for p in files for pattern in WEIGHTS):
        names = ", ".join(WEIGHTS)
        return _error("MissingFiles", f"{root} holds no model weights ({names}) and no .aim-manifest.json")
    total = sum(p.stat().st_size for p in files)
    return {"result": "ok", "files": len(files), "bytes": total, "verified": ["present"], "manifest": False}


def _few(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _sha256(f: BinaryIO) -> tuple[str, os.stat_result]:
    """The file's digest, and its stat taken after reading (so a file replaced while it was read
    is described by what was hashed)."""
    digest = hashlib.sha256()
    while chunk := f.read(CHUNK):
        digest.update(chunk)
    return digest.hexdigest(), os.fstat(f.fileno())


def _error(reason: str, message: str) -> dict[str, Any]:
    return {"result": "error", "reason": reason, "message": message}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=INSPECT_COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the model file (inside the mounted claim), or with --dir its directory")
    parser.add_argument("--dir", action="store_true", help="check a model directory (an import)")
    parser.add_argument(KNOWN_OPTION, help="SIZE:MTIME:SHA256 of the previous round; reused if unchanged")
    args = parser.parse_args(argv)
    try:
        known = Known.parse(args.known) if args.known else None
    except ValueError:
        parser.error(f"--known must be SIZE:MTIME:SHA256, not {args.known!r}")
    verdict = inspect_dir(args.path) if args.dir else inspect(args.path, known)
    sys.stdout.write(json.dumps(verdict, sort_keys=True) + "\n")
    return 0 if verdict["result"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
