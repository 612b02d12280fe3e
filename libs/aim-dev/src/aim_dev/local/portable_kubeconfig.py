"""A kubeconfig that works wherever the file alone is mounted: the embedded control plane's names its
CA certificate by path under ``$AIM_HOME/cluster/pki``, which a container (docker-compose.yml) can
neither see nor, as its non-root user, read under root's home. This one carries the certificate
inline (``certificate-authority-data``) and the token, so it is one self-contained file.

It is written into a directory only its owner may enter (0700), the file itself world-readable
(0644): the services' image runs as uid 65532, which must read the bind-mounted file, while other
users of the host cannot reach it through the directory."""

from __future__ import annotations

import base64
import copy
import os
from pathlib import Path
from typing import Any

import yaml


def portable(kubeconfig: dict[str, Any]) -> dict[str, Any]:
    """``kubeconfig`` with every cluster's ``certificate-authority`` file inlined."""
    out = copy.deepcopy(kubeconfig)
    for entry in out.get("clusters") or []:
        cluster = entry["cluster"]
        path = cluster.pop("certificate-authority", None)
        if path is not None:
            cluster["certificate-authority-data"] = base64.b64encode(Path(path).read_bytes()).decode()
    return out


def write(kubeconfig: dict[str, Any], path: Path) -> Path:
    """Write :func:`portable` ``kubeconfig`` to ``path`` (directory 0700, file 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(portable(kubeconfig)))
    os.chmod(tmp, 0o644)
    tmp.replace(path)
    return path
