"""The cache service's own settings, from the environment (the operator's Deployment or the embedded
stack sets them):

- ``AIM_CACHE_EXECUTOR``: ``job`` (default: PVCs and download Jobs, for real clusters) or ``local``
  (no kubelet: the service downloads into ``AIM_CACHE_DIR`` itself);
- ``AIM_CACHE_DIR``: the local executor's cache directory;
- ``AIM_DOWNLOADER_NATS_URL``: the NATS URL download pods offer progress on (default: the
  service's own ``AIM_NATS_URL``; empty disables progress from pods);
- ``AIM_DOWNLOADER_NATS_SEED_FILE`` (or ``AIM_DOWNLOADER_NATS_SEED``): the bus role ``download``'s
  seed, given to download Jobs; the only thing it lets a Job do is offer progress, which this service
  checks against the object's token (:mod:`aimcore.api.bus.progress`) before relaying it;
- ``AIM_DOWNLOAD_STALL_SECONDS`` (default 60): no data for this long is a stall;
- ``AIM_LOCAL_DOWNLOADS`` (default 2): concurrent local downloads;
- ``AIM_LOCAL_DOWNLOAD_ENV``: extra ``NAME=value`` pairs (comma-separated) for local downloads; the
  service's own endpoint settings (``HF_ENDPOINT``, ``AWS_ENDPOINT_URL``, region) pass through too,
  never its credentials. A model cache's own env wins;
- ``AIM_OUTBOUND_ALLOWED_HOSTS`` / ``AIM_OUTBOUND_ALLOW_PRIVATE``: the operator-wide outbound address
  policy (:mod:`aimcore.domain.outbound`), applied to every connection the service opens for a model cache
  (listing a source to size its volume, local downloads) and passed to the download Jobs it creates,
  whose downloader enforces it too. A model cache's env cannot change it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from aim_cache.plan import JobBus
from aimcore.api.bus import progress
from aimcore.domain.outbound import OutboundPolicy
from aimcore.runtime.settings import Settings

PASS_THROUGH = ("HF_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION")


def _pairs(text: str) -> dict[str, str]:
    pairs = (item.split("=", 1) for item in text.split(",") if "=" in item)
    return {k.strip(): v.strip() for k, v in pairs if k.strip()}


def _read(path: str) -> str:
    return Path(path).read_text().strip()


def _seed(name: str) -> str | None:
    """``<name>_FILE`` (a mounted Secret) or ``<name>`` (the seed itself)."""
    path = os.environ.get(f"{name}_FILE")
    return _read(path) if path else os.environ.get(name) or None


@dataclass(frozen=True)
class CacheSettings:
    executor: str = "job"
    cache_dir: Path = field(default_factory=lambda: Path("~/.cache/aim-engine/models").expanduser())
    job_nats_url: str | None = None
    job_nats_seed: str | None = field(default=None, repr=False)
    progress_key: bytes = field(default=b"", repr=False)  # this service's token key (from its seed)
    stall_timeout: float = 60.0
    local_downloads: int = 2
    local_env: dict[str, str] = field(default_factory=dict)
    outbound: OutboundPolicy = field(default_factory=OutboundPolicy)

    def job_bus(self) -> JobBus | None:
        if not self.job_nats_url:
            return None
        return JobBus(self.job_nats_url, self.job_nats_seed, self.progress_key)

    @classmethod
    def from_env(cls, base: Settings) -> CacheSettings:
        executor = os.environ.get("AIM_CACHE_EXECUTOR", "job").strip().lower() or "job"
        if executor not in ("job", "local"):
            raise ValueError(f"AIM_CACHE_EXECUTOR must be 'job' or 'local', not {executor!r}")
        nats_url = os.environ.get("AIM_DOWNLOADER_NATS_URL", base.nats_url)
        return cls(
            executor=executor,
            cache_dir=Path(os.environ.get("AIM_CACHE_DIR") or "~/.cache/aim-engine/models").expanduser(),
            job_nats_url=nats_url or None,
            job_nats_seed=_seed("AIM_DOWNLOADER_NATS_SEED"),
            progress_key=progress.key_from_seed(
                _read(base.bus.seed_file) if base.bus.seed_file else base.bus.seed or ""
            ),
            stall_timeout=float(os.environ.get("AIM_DOWNLOAD_STALL_SECONDS", "60")),
            local_downloads=int(os.environ.get("AIM_LOCAL_DOWNLOADS", "2")),
            local_env={
                **{k: os.environ[k] for k in PASS_THROUGH if os.environ.get(k)},
                **_pairs(os.environ.get("AIM_LOCAL_DOWNLOAD_ENV", "")),
            },
            outbound=OutboundPolicy.from_env(),
        )
