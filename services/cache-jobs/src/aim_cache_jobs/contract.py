"""What the cache service and its Job programs agree on, written once for both sides: the commands,
the arguments the service writes and the programs parse, the variables the service sets in a
download Job besides the model cache's own env, and the previous result a verify round is given.

The service builds its Jobs with these (:mod:`aim_cache.plan`, :mod:`aim_cache.llmkube.verify`); the
programs read them (:mod:`aim_cache_jobs.downloader.cli` and its settings,
:mod:`aim_cache_jobs.inspect`, the ``oci://`` source's credentials). The progress a download offers
is the bus's contract (:mod:`aimcore.api.bus.progress`), and what each program prints last (one
JSON line) is said where it is printed. Light on purpose: ``aim-download`` imports this at start-up,
and no message model is loaded until an object is named.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aim_cache_jobs.downloader.filters import DownloadFilter
    from aimcore.api.bus.messages import ObjectRef

DOWNLOAD_COMMAND = "aim-download"
INSPECT_COMMAND = "aim-model-inspect"

# aim-download SOURCE DEST [options]: the options the cache service passes
STALL_TIMEOUT_OPTION = "--stall-timeout"
OBJECT_OPTION = "--object"
UID_OPTION = "--uid"
INCLUDE_OPTION = "--include"  # repeated: the download filter's patterns (aim_cache_jobs.downloader.filters)
EXCLUDE_OPTION = "--exclude"
# aim-model-inspect PATH [--known SIZE:MTIME:SHA256]
KNOWN_OPTION = "--known"

# What the cache service sets in a download Job's environment (read by the Job's settings)
NATS_URL_ENV = "AIM_NATS_URL"
NATS_ROLE_ENV = "AIM_NATS_ROLE"
NATS_SEED_ENV = "AIM_NATS_SEED"
PROGRESS_TOKEN_ENV = "AIM_PROGRESS_TOKEN"
LOG_FORMAT_ENV = "AIM_LOG_FORMAT"
PROTOCOL_ENV = "AIM_DOWNLOADER_PROTOCOL"  # the protocol sequence (aim_cache_jobs.downloader.protocols)
DOWNLOAD_ROLE = "download"
"""The bus role a download Job offers its progress as."""
PULL_SECRET_ENV = "AIM_OCI_PULL_SECRET_"
"""An ``oci://`` cache's ``imagePullSecrets``, numbered from 0 (``AIM_OCI_PULL_SECRET_<n>``)."""

SHA256 = re.compile(r"[0-9a-f]{64}")


def pull_secret_env(index: int) -> str:
    """The variable of the ``index``-th pull secret (its ``.dockerconfigjson``)."""
    return f"{PULL_SECRET_ENV}{index}"


def download_args(
    source: str, dest: str, *, stall_timeout: float, obj: ObjectRef, uid: str, keep: DownloadFilter
) -> list[str]:
    """``aim-download``'s arguments for the download of ``source`` into ``dest`` for ``obj``, of the
    files ``keep`` keeps (one ``--include=P`` / ``--exclude=P`` per pattern: a pattern may hold a
    comma or start with a dash)."""
    return [
        source,
        dest,
        f"{STALL_TIMEOUT_OPTION}={stall_timeout:g}",
        f"{OBJECT_OPTION}={object_arg(obj)}",
        f"{UID_OPTION}={uid}",
        *(f"{INCLUDE_OPTION}={p}" for p in keep.include),
        *(f"{EXCLUDE_OPTION}={p}" for p in keep.exclude),
    ]


def object_arg(obj: ObjectRef) -> str:
    """``GROUP/VERSION/KIND/NAMESPACE/NAME`` (an empty NAMESPACE for a cluster-scoped object)."""
    return f"{obj.group}/{obj.version}/{obj.kind}/{obj.namespace or ''}/{obj.name}"


def parse_object(text: str) -> ObjectRef:
    """``GROUP/VERSION/KIND/NAMESPACE/NAME`` (empty GROUP for the core group, empty or ``_`` NAMESPACE
    for a cluster-scoped object); ValueError for anything else."""
    from aimcore.api.bus.messages import ObjectRef  # noqa: PLC0415 - the message models cost ~0.2 s

    parts = text.split("/")
    if len(parts) != 5 or not parts[1] or not parts[2] or not parts[4]:
        raise ValueError("expected GROUP/VERSION/KIND/NAMESPACE/NAME")
    group, version, kind, namespace, name = parts
    return ObjectRef(
        group=group,
        version=version,
        kind=kind,
        namespace=None if namespace in ("", "_") else namespace,
        name=name,
    )


@dataclass(frozen=True)
class Known:
    """A file as the previous verify round found it: when its size and mtime still match, its digest
    is reused and the bytes are not read again."""

    size: int
    mtime: float
    sha256: str

    def render(self) -> str:
        return f"{self.size}:{self.mtime!r}:{self.sha256}"

    @classmethod
    def parse(cls, text: str) -> Known:
        """``SIZE:MTIME:SHA256``; ValueError for anything else."""
        size, mtime, sha = text.split(":")
        known = cls(int(size), float(mtime), sha.lower())
        if known.size < 0 or not math.isfinite(known.mtime) or not SHA256.fullmatch(known.sha256):
            raise ValueError(f"not SIZE:MTIME:SHA256: {text!r}")
        return known
