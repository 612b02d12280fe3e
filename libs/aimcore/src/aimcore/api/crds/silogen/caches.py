"""Legacy caches: ``AIMTemplateCache`` and ``AIMModelCache``, the model artifacts downloaded ahead of
time onto volumes.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from pydantic import Field

from aimcore.api.crds.aim import SOURCE_URI_PATTERN, CacheSize
from aimcore.api.crds.base import (
    AGE,
    IMAGE_PATTERN,
    STATUS,
    Condition,
    CRDInfo,
    EnvVar,
    ImageReference,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    Resource,
    Time,
)
from aimcore.api.crds.silogen.common import (
    _conditions_field,
    _download_env,
    _legacy_crd,
    _ObservedStatus,
    _pull_secrets,
    _runtime_config_name,
)
from aimcore.api.sourcerules import SourceUri

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMCacheStatusEnum(enum.StrEnum):
    """Status of a template cache or a model cache."""

    PENDING = "Pending"
    PROGRESSING = "Progressing"
    AVAILABLE = "Available"
    FAILED = "Failed"


# ---------------------------------------------------------------------------------------------
# Caches
# ---------------------------------------------------------------------------------------------


class AIMTemplateCacheSpec(K8sModel):
    """The desired state of an AIMTemplateCache: pre-warm the model caches of one template."""

    template_ref: str = Field(
        min_length=1,
        description=(
            "TemplateRef is the name of the AIMServiceTemplate or AIMClusterServiceTemplate to cache;\n"
            "a namespace-scoped template of that name takes priority over a cluster-scoped one."
        ),
    )
    env: list[EnvVar] | None = _download_env()
    image_pull_secrets: list[LocalObjectReference] | None = _pull_secrets()
    storage_class_name: str | None = Field(
        default=None, description="StorageClassName is the name for the storage class to use for this cache"
    )
    runtime_config_name: str = _runtime_config_name("cache")


class AIMTemplateCacheStatus(_ObservedStatus):
    """The observed state of an AIMTemplateCache."""

    status: AIMCacheStatusEnum = Field(
        default=AIMCacheStatusEnum.PENDING,
        description="Status represents the current high-level status of the template cache.",
    )
    resolved_template_kind: str | None = Field(
        default=None,
        description='ResolvedTemplateKind is "AIMServiceTemplate" or "AIMClusterServiceTemplate".',
    )


class AIMModelCacheSpec(K8sModel):
    """The desired state of an AIMModelCache: one model downloaded into a PVC."""

    source_uri: SourceUri = Field(
        min_length=1,
        pattern=SOURCE_URI_PATTERN,
        description="SourceURI is the source of the model to be downloaded. This is the only identifier",
    )
    storage_class_name: str | None = Field(
        default=None, description="StorageClassName specifies the storage class for the cache volume"
    )
    size: CacheSize | None = Field(default=None, description="Size specifies the size of the cache volume")
    env: list[EnvVar] | None = Field(
        default=None,
        description="Env lists the environment variables used for authentication when downloading models.",
    )
    model_download_image: ImageReference = Field(
        default="kserve/storage-initializer:v0.16.0-rc0",
        pattern=IMAGE_PATTERN,
        description="ModelDownloadImage is the image used to download the model",
    )
    image_pull_secrets: list[LocalObjectReference] | None = _pull_secrets()


class AIMModelCacheStatus(K8sModel):
    """The observed state of an AIMModelCache."""

    observed_generation: int | None = Field(
        default=None, description="ObservedGeneration is the last reconciled generation."
    )
    conditions: list[Condition] | None = _conditions_field(
        "Conditions represent the latest available observations of the model cache's state"
    )
    status: AIMCacheStatusEnum = Field(
        default=AIMCacheStatusEnum.PENDING,
        description="Status represents the current status of the model cache",
    )
    last_used: Time | None = Field(
        default=None,
        description="LastUsed represents the last time a model was deployed that used this cache",
    )
    persistent_volume_claim: str | None = Field(
        default=None, description="PersistentVolumeClaim represents the name of the created PVC"
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------


class AIMTemplateCache(Resource):
    """Pre-warms model caches for a template. No short name: aimtc is the current group's."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMTemplateCache",
        "Namespaced",
        "AIMTemplateCache pre-warms model caches for a specified template.",
        (
            PrinterColumn("Template", ".spec.templateRef"),
            STATUS,
            PrinterColumn("Kind", ".status.resolvedTemplateKind"),
            AGE,
        ),
    )
    spec: AIMTemplateCacheSpec
    status: AIMTemplateCacheStatus | None = None


class AIMModelCache(Resource):
    """One model downloaded into a volume. No short name: aimmc is the current group's."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMModelCache",
        "Namespaced",
        "AIMModelCache is the Schema for the modelcaches API",
        (
            PrinterColumn("Cache Size", ".spec.size"),
            STATUS,
            PrinterColumn("PVC", ".status.persistentVolumeClaim"),
            AGE,
        ),
    )
    spec: AIMModelCacheSpec
    status: AIMModelCacheStatus | None = None
