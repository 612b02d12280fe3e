"""``aim-model-inspect``: what a ``pvc://`` Model's verify Job runs inside the claim.

The cache service cannot read a user's claim itself (it would have to mount every claim), so for a
``pvc://`` source it runs a Job that mounts the claim read-only and runs this command on the file.
It prints one JSON line, which the controller reads back from the pod log
(:mod:`aim_cache.llmkube.verify` parses it):

- ``{"result": "ok", "size": …, "mtime": …, "sha256": …, "gguf": {…} | null, "hashed": bool}``
- ``{"result": "error", "reason": "SourceNotFound" | "InvalidSource" | "ReadFailed", "message": …}``
  (exit status 1).

``--known SIZE:MTIME:SHA256`` is the previous round's result: when the file's size and mtime still
match, the recorded digest is reused and the bytes are not read again (``"hashed": false``), so an
hourly revalidation of a 70 GB model costs one ``stat``. The GGUF header is always re-read (a few
kilobytes). No shell is involved; the path is an argument.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import sys
from typing import Any, BinaryIO

from aim_cache_jobs import gguf
from aim_cache_jobs.contract import INSPECT_COMMAND, KNOWN_OPTION, Known

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
    parser.add_argument("path", help="the model file (inside the mounted claim)")
    parser.add_argument(KNOWN_OPTION, help="SIZE:MTIME:SHA256 of the previous round; reused if unchanged")
    args = parser.parse_args(argv)
    try:
        known = Known.parse(args.known) if args.known else None
    except ValueError:
        parser.error(f"--known must be SIZE:MTIME:SHA256, not {args.known!r}")
    verdict = inspect(args.path, known)
    sys.stdout.write(json.dumps(verdict, sort_keys=True) + "\n")
    return 0 if verdict["result"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
