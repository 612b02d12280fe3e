"""Settings of the LLMKube ``Model`` controller, from the cache service's environment:
:class:`LLMKubeSettings` is what the environment says, :class:`ModelSettings` what the controller
works with (the staging directory resolved against ``AIM_CACHE_DIR``, the source policy against the
operator-wide outbound policy). On a real cluster mount a persistent volume at the staging
directory (the operator's own model volume, as LLMKube's controller mounts
``<release>-model-cache``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator

from aim_cache.llmkube.sources import Policy
from aimcore.domain.outbound import OutboundPolicy
from aimcore.runtime.settings import AimSettings, Settings
from aimcore.runtime.settings.base import lenient_flag, setting, split_commas, split_commas_or_colons

DEFAULT_VERIFY_IMAGE = "aim-cache:0.1.0"


class LLMKubeSettings(AimSettings):
    """LLMKube `Model`s (cache service): where models are staged, which sources may be fetched,
    how often they are revalidated and retried (see [llmkube.md](llmkube.md))."""

    title = "LLMKube models"

    cache_dir: Path | None = setting(
        env="AIM_LLMKUBE_CACHE_DIR",
        form="a path",
        shown_default="`$AIM_CACHE_DIR/_llmkube`",
        description="Where models are staged, one directory per cache key (`_llmkube`: no namespace "
        "can be named so, so it never meets a model cache's `<namespace>/<name>` directory).",
    )
    allowed_roots: Annotated[tuple[str, ...], BeforeValidator(split_commas_or_colons)] = setting(
        (),
        env="AIM_LLMKUBE_ALLOWED_ROOTS",
        form="directories separated by colons or commas",
        shown_default="unset: no local sources",
        description="Directories local sources (`file://`, absolute paths) must resolve under.",
    )
    allowed_hosts: Annotated[tuple[str, ...], BeforeValidator(split_commas)] = setting(
        (),
        env="AIM_LLMKUBE_ALLOWED_HOSTS",
        form="comma-separated host names or addresses",
        description="Hosts fetched without the address check, added to `AIM_OUTBOUND_ALLOWED_HOSTS` "
        "for this path only.",
    )
    allow_private: Annotated[bool | None, BeforeValidator(lenient_flag)] = setting(
        env="AIM_LLMKUBE_ALLOW_PRIVATE",
        form="true (also 1, yes, on); any other value is false",
        shown_default="unset: `AIM_OUTBOUND_ALLOW_PRIVATE`",
        description="Lets remote sources resolve to loopback, private and CGNAT addresses "
        "(in-cluster mirrors); when set (true or false) it overrides `AIM_OUTBOUND_ALLOW_PRIVATE` "
        "for this path. Link-local and cloud metadata addresses stay refused unless the host is "
        "allow-listed.",
    )
    revalidate_seconds: float = setting(
        3600.0,
        env="AIM_LLMKUBE_REVALIDATE_SECONDS",
        gt=0,
        form="seconds, a number > 0",
        description="How often a Ready model's source is probed.",
    )
    retry_seconds: float = setting(
        30.0,
        env="AIM_LLMKUBE_RETRY_SECONDS",
        gt=0,
        form="seconds, a number > 0",
        description="The first retry after a failed fetch, doubling per attempt up to "
        "`AIM_LLMKUBE_RETRY_MAX_SECONDS`.",
    )
    retry_max_seconds: float = setting(
        900.0,
        env="AIM_LLMKUBE_RETRY_MAX_SECONDS",
        gt=0,
        form="seconds, a number > 0",
        description="The longest wait between fetch attempts; a failure only a user can fix (missing "
        "source, wrong credentials, a checksum mismatch) waits this long at once.",
    )
    downloads: Annotated[int, AfterValidator(lambda v: max(1, v))] = setting(
        2,
        env="AIM_LLMKUBE_DOWNLOADS",
        form="a whole number (less than 1 counts as 1)",
        description="Fetches running at once in this replica.",
    )
    verify_image: str | None = setting(
        env="AIM_LLMKUBE_VERIFY_IMAGE",
        form="an image reference",
        shown_default=f"the cache service's own image (see `AIM_POD_NAME`); else `{DEFAULT_VERIFY_IMAGE}`",
        description="The image of the Jobs that read `pvc://` sources in place: LLMKube Models' "
        "verify Jobs and the import Jobs of `pvc://` model caches (it must carry "
        "`aim-model-inspect`). Leave it unset in a cluster: the Jobs then run the image the "
        "cache service runs, whatever an overlay made it.",
    )
    pod_name: str | None = setting(
        env="AIM_POD_NAME",
        form="a pod name (the downward API's `metadata.name`)",
        description="The cache service's own pod, in `AIM_SYSTEM_NAMESPACE`: at start-up the service "
        "reads the image of its `cache` container (`get pods`) and uses it as the verify Jobs' "
        f"default image. Unset or unreadable: `{DEFAULT_VERIFY_IMAGE}` (with one warning).",
    )


@dataclass(frozen=True)
class ModelSettings:
    cache_dir: Path = field(default_factory=lambda: Path("~/.cache/aim-engine/models/_llmkube").expanduser())
    policy: Policy = field(default_factory=Policy)
    revalidate_seconds: float = 3600.0
    retry_seconds: float = 30.0
    retry_max_seconds: float = 900.0
    downloads: int = 2
    verify_image: str = DEFAULT_VERIFY_IMAGE
    verify_image_set: bool = False  # AIM_LLMKUBE_VERIFY_IMAGE given: no look-up of the own image
    pod_name: str | None = None

    @classmethod
    def of(cls, settings: Settings, cache_dir: Path) -> ModelSettings:
        """The controller's settings, from the settings the service read at start-up;
        ``cache_dir`` is the cache service's (``AIM_CACHE_DIR``)."""
        own = settings.get(LLMKubeSettings)
        base = OutboundPolicy.configured(settings)
        return cls(
            cache_dir=(own.cache_dir or cache_dir / "_llmkube").expanduser(),
            policy=Policy(
                allowed_roots=own.allowed_roots,
                allowed_hosts=base.allowed_hosts | frozenset(own.allowed_hosts),
                allow_private=base.allow_private if own.allow_private is None else own.allow_private,
                proxies=base.proxies,
            ),
            revalidate_seconds=own.revalidate_seconds,
            retry_seconds=own.retry_seconds,
            retry_max_seconds=own.retry_max_seconds,
            downloads=own.downloads,
            verify_image=own.verify_image or DEFAULT_VERIFY_IMAGE,
            verify_image_set=bool(own.verify_image),
            pod_name=own.pod_name,
        )
