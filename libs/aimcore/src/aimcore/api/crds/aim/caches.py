"""Caches: ``AIMTemplateCache`` and ``AIMModelCache``, the model artifacts downloaded ahead of time
onto volumes, which the cache service reconciles; and ``AIMArtifact``, the released original's name
for the model cache (v0.2.1): the same spec, and a status that also says which download protocol is
in use (``status.download``). ``AIMModelCache`` stays exactly as the seed defines it.
"""

from __future__ import annotations

import enum
from typing import Annotated, ClassVar

from pydantic import Field, ValidationInfo, field_validator

from aimcore.api.crds.aim.common import (
    _DOWNLOAD_ENV_DESCRIPTION,
    CATEGORIES,
    GROUP,
    MODEL_ID_PATTERN,
    SOURCE_URI_PATTERN,
    AIMDownloadFilter,
    AIMModelSource,
    AIMResolvedReference,
    AIMResourceStatusValue,
    AIMStatus,
    RuntimeConfigRef,
)
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
    Quantity,
    Resource,
    Time,
    immutable,
)
from aimcore.api.decoding import decoding, rule
from aimcore.api.quantities import amount
from aimcore.api.sourcerules import SourceUri, check_model_id

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMModelCacheMode(enum.StrEnum):
    """AIMModelCacheMode indicates the ownership mode of a model cache, derived from owner references.

    - ``Dedicated``: ModelCacheModeDedicated indicates the cache has owner references and will be
      garbage collected when its owners are deleted.
    - ``Shared``: ModelCacheModeShared indicates the cache has no owner references and persists
      independently, available for sharing across services.
    """

    DEDICATED = "Dedicated"
    SHARED = "Shared"


class AIMTemplateCacheMode(enum.StrEnum):
    """AIMTemplateCacheMode controls the ownership behavior of model caches created by a template cache.

    - ``Dedicated``: TemplateCacheModeDedicated means model caches have owner references to the template
    cache.
      When the template cache is deleted, all its model caches are garbage collected.
      Use this mode for service-specific caches that should be cleaned up with the service.
    - ``Shared``: TemplateCacheModeShared means model caches have no owner references.
      Model caches persist independently of template cache lifecycle and can be shared.
      This is the default mode for long-lived, reusable caches.
    """

    DEDICATED = "Dedicated"
    SHARED = "Shared"


class AIMServiceTemplateScope(enum.StrEnum):
    """AIMServiceTemplateScope is retained for backwards compatibility with existing consumers."""

    NAMESPACE = "Namespace"
    CLUSTER = "Cluster"
    UNKNOWN = "Unknown"


# ---------------------------------------------------------------------------------------------
# AIMTemplateCache / AIMModelCache
# ---------------------------------------------------------------------------------------------


def check_cache_size(value: int | str | None) -> int | str | None:
    """A cache's ``size`` is the volume asked for: 0 is no volume (the PVC was made at the 1 GiB
    minimum, or an integer 0 was read as unset and the source listed instead, without a word)."""
    if value is not None and amount(value) == 0:
        raise ValueError(
            f"size must be more than 0 (is {value!r}): give the model's size, e.g. 20Gi, or leave size "
            "out to size the volume from the source"
        )
    return value


CacheSize = Annotated[Quantity, rule(check_cache_size)]
"""A cache's ``size``: a quantity held to :func:`check_cache_size` (both API groups)."""


class AIMTemplateCacheSpec(RuntimeConfigRef):
    """AIMTemplateCacheSpec defines the desired state of AIMTemplateCache"""

    template_name: str = Field(
        min_length=1,
        description=(
            "TemplateName is the name of the AIMServiceTemplate or AIMClusterServiceTemplate to "
            "cache.\n"
            "The controller will first look for a namespace-scoped AIMServiceTemplate in the same"
            " namespace.\n"
            "If not found, it will look for a cluster-scoped AIMClusterServiceTemplate with the "
            "same name.\n"
            "Namespace-scoped templates take priority over cluster-scoped templates."
        ),
    )
    template_scope: AIMServiceTemplateScope | None = Field(
        default=None,
        description=(
            "TemplateScope indicates whether the template is namespace-scoped or cluster-scoped.\n"
            "This field is set by the controller during template resolution."
        ),
    )
    env: list[EnvVar] | None = Field(default=None, description=_DOWNLOAD_ENV_DESCRIPTION)
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None, description="ImagePullSecrets references secrets for pulling AIM container images."
    )
    storage_class_name: str | None = Field(
        default=None,
        description=(
            "StorageClassName specifies the storage class for cache volumes.\n"
            "When not specified, uses the cluster default storage class."
        ),
    )
    download_image: ImageReference | None = Field(
        default=None,
        pattern=IMAGE_PATTERN,
        description=(
            "DownloadImage specifies the container image used to download and initialize model "
            "caches.\n"
            "When not specified, the controller uses the default model download image."
        ),
    )
    model_sources: list[AIMModelSource] | None = Field(
        default=None,
        description=(
            "ModelSources specifies the model sources to cache for this template.\n"
            "These sources are typically copied from the resolved template's model sources."
        ),
    )
    mode: AIMTemplateCacheMode = Field(
        default=AIMTemplateCacheMode.SHARED,
        description=(
            "Mode controls the ownership behavior of model caches created by this template cache.\n"
            "- Dedicated: Model caches are owned by this template cache and garbage collected "
            "when it's deleted.\n"
            "- Shared (default): Model caches have no owner references and persist independently.\n"
            "When a Shared template cache encounters model caches with owner references, it "
            "promotes them\n"
            "to shared by removing the owner references, ensuring they persist for long-term use."
        ),
    )


class AIMResolvedModelCache(K8sModel):
    """AIMResolvedModelCache describes one AIMModelCache a template cache resolved to."""

    uid: str | None = Field(default=None, description="UID of the AIMModelCache resource")
    name: str | None = Field(default=None, description="Name of the AIMModelCache resource")
    model: str | None = Field(default=None, description="Model is the name of the model that is cached")
    status: AIMStatus | None = Field(default=None, description="Status of the model cache")
    persistent_volume_claim: str | None = Field(
        default=None, description="PersistentVolumeClaim name if available"
    )
    mount_point: str | None = Field(
        default=None, description="MountPoint is the mount point for the model cache"
    )


class AIMTemplateCacheStatus(K8sModel):
    """AIMTemplateCacheStatus defines the observed state of AIMTemplateCache"""

    observed_generation: int | None = Field(
        default=None,
        description="ObservedGeneration is the most recent generation observed by the controller.",
    )
    conditions: list[Condition] | None = Field(
        default=None, description="Conditions represent the latest observations of the template cache state."
    )
    resolved_runtime_config: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedRuntimeConfig captures metadata about the runtime config that was resolved.",
    )
    status: AIMResourceStatusValue = Field(
        default=AIMStatus.PENDING,
        description="Status represents the current high-level status of the template cache.",
    )
    resolved_template_kind: str | None = Field(
        default=None,
        description=(
            "ResolvedTemplateKind indicates whether the template resolved to a namespace-scoped\n"
            "AIMServiceTemplate or cluster-scoped AIMClusterServiceTemplate.\n"
            'Values: "AIMServiceTemplate", "AIMClusterServiceTemplate"'
        ),
    )
    model_caches: dict[str, AIMResolvedModelCache] | None = Field(
        default=None, description="ModelCaches maps model names to their resolved AIMModelCache resources."
    )
    # The released original's name of the field (v0.2.1), written beside it with the same entries
    # (an addition to the seed's schema: docs/status.md#two-generations-of-the-original).
    artifacts: dict[str, AIMResolvedModelCache] | None = Field(
        default=None,
        description=(
            "Artifacts maps model names to their resolved model caches (AIMArtifact or AIMModelCache);\n"
            "the same entries as ModelCaches, under the released AIM Engine's name."
        ),
    )


class AIMModelCacheSpec(RuntimeConfigRef):
    """AIMModelCacheSpec defines the desired state of AIMModelCache"""

    source_uri: SourceUri = Field(
        min_length=1,
        pattern=SOURCE_URI_PATTERN,
        json_schema_extra=immutable("sourceUri is immutable"),
        description=(
            "SourceURI specifies the source location of the model to download.\n"
            "Supported protocols: hf:// (HuggingFace) and s3:// (S3-compatible storage)\n"
            "(and oci:// (OCI registry artifacts) and pvc://claim/path (a volume already filled,\n"
            "imported in place), this operator's extensions).\n"
            "This field uniquely identifies the model cache and is immutable after creation.\n"
            "Example: hf://meta-llama/Llama-3-8B"
        ),
    )
    model_id: str | None = Field(
        default=None,
        pattern=MODEL_ID_PATTERN,
        description=(
            "ModelID is the canonical identifier in {org}/{name} format.\n"
            "Determines the cache download path: /workspace/model-cache/{modelId}\n"
            "For HuggingFace sources, this is typically derived from the URI (e.g., "
            '"meta-llama/Llama-3-8B").\n'
            'For S3 sources, this must be explicitly provided (e.g., "my-team/fine-tuned-llama").\n'
            "When not specified, derived from SourceURI for HuggingFace sources."
        ),
    )
    storage_class_name: str | None = Field(
        default=None,
        description=(
            "StorageClassName specifies the storage class for the cache volume.\n"
            "When not specified, uses the cluster default storage class."
        ),
    )
    size: CacheSize | None = Field(default=None, description="Size specifies the size of the cache volume")
    env: list[EnvVar] | None = Field(
        default=None,
        description=(
            "Env lists the environment variables to use for authentication when downloading "
            "models.\n"
            "These variables are used for authentication with model registries (e.g., HuggingFace"
            " tokens)."
        ),
    )
    model_download_image: ImageReference = Field(
        default="kserve/storage-initializer:v0.16.0",
        pattern=IMAGE_PATTERN,
        description=(
            "ModelDownloadImage specifies the container image used to download and initialize the"
            " model cache.\n"
            "This image runs as a job to download model artifacts from the source URI to the "
            "cache volume.\n"
            "When not specified, defaults to kserve/storage-initializer:v0.16.0."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None, description="ImagePullSecrets references secrets for pulling AIM container images."
    )
    retention_priority: int | None = Field(
        default=None,
        ge=0,
        le=2147483647,
        description=(
            "RetentionPriority ranks the cache for eviction under a storage quota: a cache with a\n"
            "lower priority is evicted first (then the older). When unset, the runtime config's\n"
            "artifact.defaultRetentionPriority applies; a cache with neither is never evicted."
        ),
    )
    download_filter: AIMDownloadFilter | None = Field(
        default=None,
        json_schema_extra=immutable("downloadFilter is immutable"),
        description=(
            "DownloadFilter selects the files of the source that are downloaded (and counted in the\n"
            "cache's size). When unset, the runtime config's storage.downloadFilter applies, else hf://\n"
            'sources leave out files in subfolders (exclude ["*/*"]); {} downloads every file.\n'
            "Immutable once set."
        ),
    )

    @field_validator("model_id")
    @classmethod
    def _check_model_id(cls, value: str | None, info: ValidationInfo) -> str | None:
        if decoding(info):
            return value
        return None if value is None else check_model_id(value)


class DownloadProgress(K8sModel):
    """DownloadProgress represents the download progress for a model cache"""

    total_bytes: int | None = Field(
        default=None, description="TotalBytes is the expected total size of the download in bytes"
    )
    downloaded_bytes: int | None = Field(
        default=None, description="DownloadedBytes is the number of bytes downloaded so far"
    )
    percentage: int | None = Field(
        default=None, ge=0, le=100, description="Percentage is the download progress as a percentage (0-100)"
    )
    display_percentage: str | None = Field(
        default=None,
        description=(
            'DisplayPercentage is a human-readable progress string (e.g., "45 %")\n'
            "This field is automatically populated from Progress.Percentage"
        ),
    )
    # Extensions over the seed (issue 5): what no peer reports. Optional, so the seed's API is intact.
    bytes_per_second: int | None = Field(
        default=None, ge=0, description="BytesPerSecond is the recent download rate (sliding window)"
    )
    eta_seconds: int | None = Field(
        default=None, ge=0, description="EtaSeconds is the estimated time left at the recent rate"
    )
    display_rate: str | None = Field(
        default=None, description='DisplayRate is a human-readable rate (e.g., "310 MiB/s")'
    )
    display_eta: str | None = Field(
        default=None, description='DisplayEta is a human-readable time left (e.g., "5m10s")'
    )


class AIMModelCacheStatus(K8sModel):
    """AIMModelCacheStatus defines the observed state of AIMModelCache"""

    observed_generation: int | None = Field(default=None)
    conditions: list[Condition] | None = Field(
        default=None,
        description="Conditions represent the latest available observations of the model cache's state",
    )
    status: AIMResourceStatusValue = Field(
        default=AIMStatus.PENDING, description="Status represents the current status of the model cache"
    )
    progress: DownloadProgress | None = Field(
        default=None, description="Progress represents the download progress when Status is Progressing"
    )
    last_used: Time | None = Field(
        default=None,
        description="LastUsed represents the last time a model was deployed that used this cache",
    )
    persistent_volume_claim: str | None = Field(
        default=None, description="PersistentVolumeClaim represents the name of the created PVC"
    )
    allocated_size: Quantity | None = Field(
        default=None,
        description=(
            "AllocatedSize is the size of the cache's volume as requested (what it takes of a storage quota)"
        ),
    )
    headroom_percent: int | None = Field(
        default=None, description="HeadroomPercent is the headroom the volume was sized with"
    )
    discovered_size_bytes: int | None = Field(
        default=None,
        description="DiscoveredSizeBytes is the model size its source listed (download filter applied)",
    )
    mode: AIMModelCacheMode | None = Field(
        default=None,
        description=(
            "Mode indicates the ownership mode of this model cache, derived from owner "
            "references.\n"
            "- Dedicated: Has owner references, will be garbage collected when owners are "
            "deleted.\n"
            "- Shared: No owner references, persists independently and can be shared."
        ),
    )


class DownloadState(K8sModel):
    """DownloadState represents the current download attempt state of an AIMArtifact"""

    protocol: str | None = Field(
        default=None, description="Protocol is the download protocol of the current attempt (e.g. HTTP)"
    )
    attempt: int | None = Field(
        default=None, description="Attempt is the current attempt number (1-based) in the protocol sequence"
    )
    total_attempts: int | None = Field(
        default=None, description="TotalAttempts is the number of protocols in the sequence"
    )
    protocol_sequence: str | None = Field(
        default=None, description='ProtocolSequence is the protocols tried in order (e.g. "XET,HTTP")'
    )
    message: str | None = Field(default=None, description="Message is a short note on the download state")


class AIMArtifactStatus(AIMModelCacheStatus):
    """AIMArtifactStatus defines the observed state of AIMArtifact: the model cache's, and the
    current download attempt."""

    download: DownloadState | None = Field(
        default=None, description="Download is the current download attempt, while and after it runs"
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------


class AIMTemplateCache(Resource):
    """AIMTemplateCache pre-warms model caches for a specified template."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMTemplateCache",
        plural="aimtemplatecaches",
        scope="Namespaced",
        short_names=("aimtc",),
        categories=CATEGORIES,
        printer_columns=(
            PrinterColumn("Template", ".spec.templateName"),
            PrinterColumn("Mode", ".spec.mode"),
            STATUS,
            PrinterColumn("Kind", ".status.resolvedTemplateKind"),
            AGE,
        ),
        description="AIMTemplateCache pre-warms model caches for a specified template.",
    )

    spec: AIMTemplateCacheSpec
    status: AIMTemplateCacheStatus | None = None


# The model cache's columns (AIMArtifact adds the download's between the two parts).
_MODEL_CACHE_COLUMNS = (
    STATUS,
    PrinterColumn("Mode", ".status.mode"),
    PrinterColumn("Model Size", ".spec.size"),
    PrinterColumn("Progress", ".status.progress.displayPercentage"),
)
_MODEL_CACHE_WIDE = (
    PrinterColumn("Source", ".spec.sourceUri", priority=1),
    PrinterColumn("PVC", ".status.persistentVolumeClaim", priority=1),
    AGE,
)


class AIMModelCache(Resource):
    """AIMModelCache is the Schema for the modelcaches API"""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMModelCache",
        plural="aimmodelcaches",
        scope="Namespaced",
        short_names=("aimmc",),
        categories=CATEGORIES,
        printer_columns=(*_MODEL_CACHE_COLUMNS, *_MODEL_CACHE_WIDE),
        description="AIMModelCache is the Schema for the modelcaches API",
    )

    spec: AIMModelCacheSpec
    status: AIMModelCacheStatus | None = None


class AIMArtifact(Resource):
    """AIMArtifact is the Schema for the artifacts API: the released AIM Engine's name of the model
    cache (the same spec as AIMModelCache; the status also carries the download attempt)."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMArtifact",
        plural="aimartifacts",
        scope="Namespaced",
        short_names=("aimart",),
        categories=CATEGORIES,
        printer_columns=(
            *_MODEL_CACHE_COLUMNS,
            PrinterColumn("Protocol", ".status.download.protocol", priority=1),
            PrinterColumn("Attempt", ".status.download.attempt", priority=1),
            *_MODEL_CACHE_WIDE,
        ),
        description="AIMArtifact is the Schema for the artifacts API",
    )

    spec: AIMModelCacheSpec
    status: AIMArtifactStatus | None = None
