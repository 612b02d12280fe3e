"""The operator's images pushed to a registry and pinned by digest in a kustomize overlay: what
``aimctl images build --push`` does for a user's cluster and what the node stack installs from
(``aim_dev.local.deployed``), so the install the docs show is the one the node tier runs.

The images are the six services' (``aim-<service>``; the cache's also runs the download and verify
Jobs, and the status service's the bus-credentials Job) and optionally the llama.cpp CPU model
server ``aim-llamacpp`` that custom CPU models are made from, as :mod:`aim_dev.images` builds them.
The overlay is pure data: its ``resources`` is the kustomization it builds on (a path relative to
the overlay, as kustomize needs) and its ``images`` the digests the registry answered, nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from aim_dev import images, llamacpp

OVERLAY_FILE = "kustomization.yaml"
RUNTIME = "llamacpp"
RUNTIME_REPOSITORY = "aim-llamacpp"


@dataclass(frozen=True)
class Pushed:
    """One image as the cluster will pull it: the name deploy/ gives it, and where it now is."""

    name: str
    """The image name deploy/ uses (``aim-<service>``), which kustomize's ``images:`` rewrites."""
    repository: str
    """``REGISTRY/aim-<service>``."""
    digest: str
    tag: str


def wanted(runtime: bool) -> list[tuple[str, str, str]]:
    """(what aim_dev.images builds, the name deploy/ uses, the tag pushed) for each image."""
    found = [(f"service-{s}", f"aim-{s}", "0.1.0") for s in images.SERVICES]
    if runtime:
        found.append((RUNTIME, RUNTIME_REPOSITORY, llamacpp.VERSION))
    return found


def overlay(base: Path, directory: Path, pushed: Sequence[Pushed]) -> dict[str, object]:
    """The kustomization that builds ``base`` with every image pinned by digest (only the images
    deploy/ names: the runtime is for model images, which no manifest of deploy/ names)."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(base.resolve(), directory.resolve())],
        "images": [
            {"name": p.name, "newName": p.repository, "digest": p.digest}
            for p in pushed
            if p.name != RUNTIME_REPOSITORY
        ],
    }


HEADER = (
    "# Written by `aimctl images build --push`: the operator with each image pinned by the digest\n"
    "# the registry answered. Install it with `kubectl apply -k {directory}` (kubectl 1.21 or later;\n"
    "# else `kustomize build {directory} | kubectl apply -f -`). Rewritten by the next push.\n"
)


def write_overlay(base: Path, directory: Path, pushed: Sequence[Pushed]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / OVERLAY_FILE
    body = yaml.safe_dump(overlay(base, directory, pushed), sort_keys=False)
    path.write_text(HEADER.format(directory=directory) + body)
    return path


def push(
    builder: images.Builder,
    registry: str,
    *,
    runtime: bool = False,
    pull_from: str | None = None,
    insecure: bool = False,
) -> list[Pushed]:
    """Push each built image to ``registry``; the repositories answered are under ``pull_from``
    when the cluster's nodes reach that registry by another name (a port-forward, a mirror)."""
    registry = registry.rstrip("/")
    pulled = (pull_from or registry).rstrip("/")
    pushed = []
    for name, repository, tag in wanted(runtime):
        digest = builder.push(
            name, f"{registry}/{repository}:{tag}", insecure=insecure, compress=not insecure
        )
        pushed.append(Pushed(repository, f"{pulled}/{repository}", digest, tag))
    return pushed
