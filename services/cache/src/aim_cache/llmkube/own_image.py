"""The verify Jobs' default image is the image the cache service itself runs (it carries
``aim-model-inspect``), so that an overlay that changes the service's image (a registry mirror, a
new tag) changes the Jobs' too, without a second setting to keep in step. The service reads its own
pod (``AIM_POD_NAME``, set from the downward API) once at start-up; an explicit
``AIM_LLMKUBE_VERIFY_IMAGE`` wins, and anything that fails leaves the built-in default with one
warning."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from aim_cache.llmkube.settings import ModelSettings
from aimcore.api.kinds import POD
from aimcore.runtime import ApiException, Kube

log = logging.getLogger(__name__)

CONTAINER = "cache"
"""The cache service's container in its Deployment."""


def image_of(pod: dict[str, Any], container: str = CONTAINER) -> str | None:
    """The image of ``container`` in ``pod`` (its only container when none has that name)."""
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    named = [c for c in containers if c.get("name") == container]
    chosen = named or (containers if len(containers) == 1 else [])
    image = chosen[0].get("image") if chosen else None
    return str(image) if image else None


async def with_own_image(settings: ModelSettings, kube: Kube, namespace: str) -> ModelSettings:
    """``settings`` with the verify image resolved (see the module docstring)."""
    if settings.verify_image_set:
        return settings
    if not settings.pod_name:
        log.info(
            "verify Jobs run %s (AIM_POD_NAME is unset: the cache service's own image is unknown)",
            settings.verify_image,
        )
        return settings
    try:
        pod = await kube.get(POD, namespace, settings.pod_name)
    except (ApiException, OSError, TimeoutError) as exc:
        status = getattr(exc, "status", None)
        problem = f"HTTP {status}" if status else type(exc).__name__
        log.warning(
            "cannot read pod %s/%s for its image (%s); verify Jobs run %s",
            namespace,
            settings.pod_name,
            problem,
            settings.verify_image,
        )
        return settings
    image = image_of(pod) if pod is not None else None
    if image is None:
        log.warning(
            "pod %s/%s has no %r container image; verify Jobs run %s",
            namespace,
            settings.pod_name,
            CONTAINER,
            settings.verify_image,
        )
        return settings
    log.info("verify Jobs run the cache service's own image %s", image)
    return dataclasses.replace(settings, verify_image=image)
