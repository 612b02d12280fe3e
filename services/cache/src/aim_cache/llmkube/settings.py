"""Settings of the LLMKube ``Model`` controller, from the cache service's environment.

- ``AIM_LLMKUBE_CACHE_DIR``: where models are staged, one directory per cache key (default:
  ``$AIM_CACHE_DIR/_llmkube``: no namespace can be named so, so it never meets a model cache's
  ``<namespace>/<name>`` directory). On a real cluster mount a persistent volume here (the operator's own
  model volume, as LLMKube's controller mounts ``<release>-model-cache``).
- ``AIM_LLMKUBE_ALLOWED_ROOTS``: colon- or comma-separated directories local sources (``file://``,
  absolute paths) must resolve under. Empty (the default) disables local sources.
- ``AIM_LLMKUBE_ALLOWED_HOSTS``: comma-separated hosts fetched without the address check, added to
  the operator-wide ``AIM_OUTBOUND_ALLOWED_HOSTS`` for this path only.
- ``AIM_LLMKUBE_ALLOW_PRIVATE``: ``true`` lets remote sources resolve to loopback, private and
  CGNAT addresses (in-cluster mirrors); when set (``true`` or ``false``) it overrides the
  operator-wide ``AIM_OUTBOUND_ALLOW_PRIVATE`` for this path. Link-local and cloud metadata
  addresses stay refused unless the host is explicitly allow-listed (see ``docs/deploy.md``,
  "Outbound address policy").
- ``AIM_LLMKUBE_REVALIDATE_SECONDS`` (default 3600): how often a Ready model's source is probed.
- ``AIM_LLMKUBE_RETRY_SECONDS`` (default 30) and ``AIM_LLMKUBE_RETRY_MAX_SECONDS`` (default 900):
  the first retry after a failed fetch, doubling per attempt up to the maximum; a failure only a
  user can fix (missing source, wrong credentials, a checksum mismatch) waits the maximum at once.
- ``AIM_LLMKUBE_DOWNLOADS`` (default 2): fetches running at once in this replica.
- ``AIM_LLMKUBE_VERIFY_IMAGE`` (default ``aim-cache:0.1.0``, the cache service's image): the image of
  the Jobs that read ``pvc://`` sources in place (it must carry ``aim-model-inspect``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from aim_cache.llmkube.sources import Policy
from aimcore.domain.outbound import OutboundPolicy
from aimcore.domain.outbound.policy import split_hosts

DEFAULT_VERIFY_IMAGE = "aim-cache:0.1.0"


def _list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in re.split(r"[,:]", text) if item.strip())


def _flag(text: str | None) -> bool:
    return (text or "").strip().lower() in ("1", "true", "yes", "on")


def _positive(name: str, default: float) -> float:
    value = float(os.environ.get(name) or default)
    if value <= 0:
        raise ValueError(f"{name} must be positive, not {value}")
    return value


@dataclass(frozen=True)
class ModelSettings:
    cache_dir: Path = field(default_factory=lambda: Path("~/.cache/aim-engine/models/_llmkube").expanduser())
    policy: Policy = field(default_factory=Policy)
    revalidate_seconds: float = 3600.0
    retry_seconds: float = 30.0
    retry_max_seconds: float = 900.0
    downloads: int = 2
    verify_image: str = DEFAULT_VERIFY_IMAGE

    @classmethod
    def from_env(cls, cache_dir: Path) -> ModelSettings:
        base = OutboundPolicy.from_env()
        hosts = split_hosts(os.environ.get("AIM_LLMKUBE_ALLOWED_HOSTS", ""))
        private = (os.environ.get("AIM_LLMKUBE_ALLOW_PRIVATE") or "").strip()
        return cls(
            cache_dir=Path(os.environ.get("AIM_LLMKUBE_CACHE_DIR") or cache_dir / "_llmkube").expanduser(),
            policy=Policy(
                allowed_roots=_list(os.environ.get("AIM_LLMKUBE_ALLOWED_ROOTS", "")),
                allowed_hosts=base.allowed_hosts | frozenset(hosts),
                allow_private=_flag(private) if private else base.allow_private,
            ),
            revalidate_seconds=_positive("AIM_LLMKUBE_REVALIDATE_SECONDS", 3600.0),
            retry_seconds=_positive("AIM_LLMKUBE_RETRY_SECONDS", 30.0),
            retry_max_seconds=_positive("AIM_LLMKUBE_RETRY_MAX_SECONDS", 900.0),
            downloads=max(1, int(os.environ.get("AIM_LLMKUBE_DOWNLOADS") or 2)),
            verify_image=os.environ.get("AIM_LLMKUBE_VERIFY_IMAGE") or DEFAULT_VERIFY_IMAGE,
        )
