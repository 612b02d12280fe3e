"""The cache service's own settings (beyond every service's, :data:`aimcore.runtime.settings.COMMON`):
:class:`CacheServiceSettings` is what its environment says (the operator's Deployment or the embedded
stack sets it), :class:`CacheSettings` what the service works with, resolved from it, the process
settings (the bus URL and seed) and the operator-wide outbound policy
(:class:`~aimcore.runtime.settings.outbound.OutboundSettings`), which the service applies to every
connection it opens for a model cache and passes to the download Jobs it creates. A model cache's own
env cannot change that policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator

from aim_cache.llmkube.settings import LLMKubeSettings
from aim_cache.plan import JobBus
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus import progress
from aimcore.domain.outbound import OutboundPolicy
from aimcore.runtime.settings import AimSettings, Settings
from aimcore.runtime.settings.base import setting, stripped_or
from aimcore.runtime.settings.outbound import OutboundSettings

DEFAULT_CACHE_DIR = "~/.cache/aim-engine/models"
PASS_THROUGH = ("hf_endpoint", "aws_endpoint_url", "aws_endpoint_url_s3", "aws_region", "aws_default_region")
"""The fields of the service's own endpoint settings that local downloads get (never credentials)."""


def _pairs(value: Any) -> Any:
    """``A=1, B=2`` → ``{"A": "1", "B": "2"}`` (items without ``=`` and empty names dropped)."""
    if not isinstance(value, str):
        return value
    pairs = (item.split("=", 1) for item in value.split(",") if "=" in item)
    return {k.strip(): v.strip() for k, v in pairs if k.strip()}


def _read(path: str) -> str:
    return Path(path).read_text().strip()


class CacheServiceSettings(AimSettings):
    """How the cache service downloads models: download Jobs or in-process (local), and how the
    Jobs report progress."""

    title = "Cache service"

    executor: Annotated[Literal["job", "local"], BeforeValidator(stripped_or("job", str.lower))] = setting(
        "job",
        env="AIM_CACHE_EXECUTOR",
        form="job or local (any case)",
        description="`job`: PVCs and download Jobs (real clusters); `local`: no kubelet, the service "
        "downloads into `AIM_CACHE_DIR` itself (the embedded stack).",
    )
    cache_dir: Annotated[Path, AfterValidator(Path.expanduser)] = setting(
        Path(DEFAULT_CACHE_DIR).expanduser(),
        env="AIM_CACHE_DIR",
        form="a path",
        shown_default=f"`{DEFAULT_CACHE_DIR}`",
        description="The local executor's cache directory.",
    )
    downloader_nats_url: str | None = setting(
        env="AIM_DOWNLOADER_NATS_URL",
        empty_is_value=True,
        form="a NATS URL, or empty",
        shown_default="the service's `AIM_NATS_URL`",
        description="The NATS URL download pods offer progress on; empty disables progress from pods.",
    )
    downloader_nats_seed_file: str | None = setting(
        env="AIM_DOWNLOADER_NATS_SEED_FILE",
        form="a path",
        description="The bus role `download`'s seed, a file, given to download Jobs; all it lets a "
        "Job do is offer progress, which the service checks against the object's token before "
        "relaying it.",
    )
    downloader_nats_seed: str | None = setting(
        env="AIM_DOWNLOADER_NATS_SEED",
        secret=True,
        form="an NKey seed",
        description="The seed itself, when there is no `AIM_DOWNLOADER_NATS_SEED_FILE`.",
    )
    download_image: str | None = setting(
        env="AIM_CACHE_DOWNLOAD_IMAGE",
        form="an image reference",
        description="The download image of the model caches a template cache creates when the "
        "template cache names none (`spec.downloadImage`). Unset: the model cache's own default "
        "(the seed's `kserve/storage-initializer:v0.16.0`); the operator's image (`aim-cache`) "
        "carries `aim-download`, which verifies every file and reports progress. Under "
        "`AIM_BEHAVIOUR=released` also the image of an `AIMArtifact` that names only that default.",
    )
    stall_seconds: float = setting(
        60.0,
        env="AIM_DOWNLOAD_STALL_SECONDS",
        gt=0,
        form="seconds, a number > 0",
        description="A download that receives no data for this long has stalled (download Jobs, "
        "local downloads and LLMKube fetches).",
    )
    local_downloads: int = setting(
        2,
        env="AIM_LOCAL_DOWNLOADS",
        ge=1,
        description="Local downloads running at once.",
    )
    local_download_env: Annotated[dict[str, str], BeforeValidator(_pairs)] = setting(
        {},
        env="AIM_LOCAL_DOWNLOAD_ENV",
        form="comma-separated NAME=value pairs",
        description="Extra environment of local downloads (a model cache's own env wins).",
    )
    hf_endpoint: str | None = setting(
        env="HF_ENDPOINT",
        form="a URL",
        description="Passed to local downloads (a model cache's own env wins), as the variables "
        "below: the service's endpoint settings, never its credentials.",
    )
    aws_endpoint_url: str | None = setting(
        env="AWS_ENDPOINT_URL", form="a URL", description="As `HF_ENDPOINT`."
    )
    aws_endpoint_url_s3: str | None = setting(
        env="AWS_ENDPOINT_URL_S3", form="a URL", description="As `HF_ENDPOINT`."
    )
    aws_region: str | None = setting(env="AWS_REGION", description="As `HF_ENDPOINT`.")
    aws_default_region: str | None = setting(env="AWS_DEFAULT_REGION", description="As `HF_ENDPOINT`.")

    def local_env(self) -> dict[str, str]:
        """The environment of local downloads: the endpoint settings passed through, then
        ``AIM_LOCAL_DOWNLOAD_ENV``."""
        passed = {v.names[0]: getattr(self, v.field) for v in self.variables() if v.field in PASS_THROUGH}
        return {**{k: v for k, v in passed.items() if v}, **self.local_download_env}

    def job_nats_seed(self) -> str | None:
        """``AIM_DOWNLOADER_NATS_SEED_FILE``'s content, or ``AIM_DOWNLOADER_NATS_SEED``."""
        path = self.downloader_nats_seed_file
        return _read(path) if path else self.downloader_nats_seed


SETTINGS = (OutboundSettings, CacheServiceSettings, LLMKubeSettings)
"""Every concern the cache service reads beyond the common ones."""


@dataclass(frozen=True)
class CacheSettings:
    executor: str = "job"
    cache_dir: Path = field(default_factory=lambda: Path(DEFAULT_CACHE_DIR).expanduser())
    job_nats_url: str | None = None
    job_nats_seed: str | None = field(default=None, repr=False)
    progress_key: bytes = field(default=b"", repr=False)  # this service's token key (from its seed)
    stall_timeout: float = 60.0
    local_downloads: int = 2
    local_env: dict[str, str] = field(default_factory=dict)
    outbound: OutboundPolicy = field(default_factory=OutboundPolicy)
    log_format: str = "text"  # the service's own AIM_LOG_FORMAT, passed to its download Jobs
    download_image: str | None = None  # of the model caches template caches create (if they name none)
    behaviour: Behaviour = Behaviour.SEEDS  # AIM_BEHAVIOUR (plan.download_image)

    def job_bus(self) -> JobBus | None:
        if not self.job_nats_url:
            return None
        return JobBus(self.job_nats_url, self.job_nats_seed, self.progress_key)

    @classmethod
    def of(cls, base: Settings) -> CacheSettings:
        """What the service works with, from the settings it read at start-up (its own
        :class:`CacheServiceSettings`, the bus, the outbound policy)."""
        own = base.get(CacheServiceSettings)
        nats_url = base.nats_url if own.downloader_nats_url is None else own.downloader_nats_url
        return cls(
            executor=own.executor,
            cache_dir=own.cache_dir,
            job_nats_url=nats_url or None,
            job_nats_seed=own.job_nats_seed(),
            progress_key=progress.key_from_seed(
                _read(base.bus.seed_file) if base.bus.seed_file else base.bus.seed or ""
            ),
            stall_timeout=own.stall_seconds,
            local_downloads=own.local_downloads,
            local_env=own.local_env(),
            outbound=OutboundPolicy.configured(base),
            log_format=base.log_format,
            download_image=(own.download_image or "").strip() or None,
            behaviour=base.behaviour,
        )
