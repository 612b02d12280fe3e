"""Service templates: ``AIMServiceTemplate`` and ``AIMClusterServiceTemplate``.

A template fixes the runtime profile a service runs with (metric, precision, hardware, model
sources); its status carries the profile and hardware that discovery resolved for it.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from aimcore.api.crds.aim.common import (
    _DOWNLOAD_ENV_DESCRIPTION,
    CATEGORIES,
    GROUP,
    AIMHardwareRequirements,
    AIMMetric,
    AIMModelSource,
    AIMPrecision,
    AIMProfileType,
    AIMResolvedReference,
    AIMResourceStatusValue,
    AIMRuntimeParameters,
    AIMStatus,
    RuntimeConfigRef,
    _ResolutionStatus,
)
from aimcore.api.crds.base import (
    STATUS,
    CRDInfo,
    EnvVar,
    JSONValue,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    Resource,
    ResourceRequirements,
    cel,
    immutable,
    k8s_config,
)
from aimcore.api.decoding import decoding
from aimcore.api.hardware import HARDWARE_GPU_MESSAGE, HARDWARE_GPU_RULE
from aimcore.api.hardware import conflicts as hardware_conflicts
from aimcore.api.sourcerules import check_profile_id

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------

AIMProfilePrecision = Literal[AIMPrecision.BF16, AIMPrecision.FP16, AIMPrecision.FP8, AIMPrecision.INT8]
"""The narrower precision enum the seed gives for discovered/cached profile metadata."""


# ---------------------------------------------------------------------------------------------
# CEL rules (those without ``oldSelf`` are also enforced by the model validators below)
# ---------------------------------------------------------------------------------------------

TEMPLATE_HARDWARE_GPU_RULE = HARDWARE_GPU_RULE
TEMPLATE_HARDWARE_GPU_MESSAGE = HARDWARE_GPU_MESSAGE


# ---------------------------------------------------------------------------------------------
# AIMServiceTemplate / AIMClusterServiceTemplate
# ---------------------------------------------------------------------------------------------


class AIMServiceTemplateSpecCommon(AIMRuntimeParameters, RuntimeConfigRef):
    """AIMServiceTemplateSpecCommon holds the spec fields shared by AIMServiceTemplate and
    AIMClusterServiceTemplate.

    ``hardware`` is the original's released (v0.2) spelling of ``gpu`` and the CPU part of
    ``resources``; both spellings are served and mean the same (:mod:`aimcore.api.hardware`).
    """

    model_config = k8s_config(cel((TEMPLATE_HARDWARE_GPU_RULE, TEMPLATE_HARDWARE_GPU_MESSAGE)))

    model_name: str = Field(
        min_length=1,
        json_schema_extra=immutable("modelName is immutable"),
        description=(
            "ModelName is the model name. Matches `metadata.name` of an AIMModel or "
            "AIMClusterModel. Immutable.\n"
            "Example: `meta/llama-3-8b:1.1+20240915`"
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None,
        description=(
            "ImagePullSecrets lists secrets containing credentials for pulling container images.\n"
            "These secrets are used for:\n"
            "- Discovery dry-run jobs that inspect the model container\n"
            "- Pulling the image for inference services\n"
            "The secrets are merged with any model or runtime config defaults.\n"
            "For namespace-scoped templates, secrets must exist in the same namespace.\n"
            "For cluster-scoped templates, secrets must exist in the operator namespace."
        ),
    )
    service_account_name: str | None = Field(
        default=None,
        description=(
            "ServiceAccountName specifies the Kubernetes service account to use for workloads "
            "related to this template.\n"
            "This includes discovery dry-run jobs and inference services created from this "
            "template.\n"
            "If empty, the default service account for the namespace is used."
        ),
    )
    resources: ResourceRequirements | None = Field(
        default=None,
        description=(
            "Resources defines the default container resource requirements applied to services "
            "derived from this template.\n"
            "Service-specific values override the template defaults."
        ),
    )
    model_sources: list[AIMModelSource] | None = Field(
        default=None,
        description=(
            "ModelSources specifies the model sources required to run this template.\n"
            "When provided, the discovery dry-run will be skipped and these sources will be used "
            "directly.\n"
            "This allows users to explicitly declare model dependencies without requiring a "
            "discovery job.\n"
            "If omitted, a discovery job will be run to automatically determine the required "
            "model sources."
        ),
    )
    profile_id: str | None = Field(
        default=None,
        description=(
            "ProfileId is the specific AIM profile ID that this template should use.\n"
            "When set, the discovery job will be instructed to use this specific profile."
        ),
    )
    type: AIMProfileType | None = Field(
        default=None,
        description=(
            "Type indicates the optimization level of this template.\n"
            "- optimized: Template has been tuned for performance\n"
            "- preview: Template is experimental/pre-release\n"
            "- unoptimized: Default, no specific optimizations applied\n"
            "When nil, the type is determined by discovery. When set, overrides discovery."
        ),
    )
    env: list[EnvVar] | None = Field(
        default=None,
        description=(
            _DOWNLOAD_ENV_DESCRIPTION + "\n"
            "They are also set on the inference container of services using this template, and are "
            "the lowest layer of the env of a template cache a service creates for it.\n"
            "Common to namespace and cluster templates (the released AIM Engine's "
            "AIMServiceTemplateSpecCommon)."
        ),
    )
    hardware: AIMHardwareRequirements | None = Field(
        default=None,
        json_schema_extra=immutable("hardware is immutable"),
        description=(
            "Hardware specifies GPU and CPU requirements for each replica, as the released AIM "
            "Engine API (v0.2) spells them.\n"
            "hardware.gpu is equivalent to gpu, and hardware.cpu to the cpu requests/limits of "
            "resources; when both spellings are set they must agree.\n"
            "This field is immutable after creation."
        ),
    )

    @field_validator("profile_id")
    @classmethod
    def _check_profile_id(cls, value: str | None, info: ValidationInfo) -> str | None:
        if decoding(info):
            return value
        return check_profile_id(value)

    @model_validator(mode="after")
    def _check_hardware_agrees(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        found = hardware_conflicts(self.wire())
        if found:
            raise ValueError("; ".join(found))
        return self


class AIMTemplateCachingConfig(K8sModel):
    """AIMTemplateCachingConfig configures model caching behavior for namespace-scoped templates."""

    enabled: bool = Field(
        default=False,
        description="Enabled controls whether caching is enabled for this template.\nDefaults to `false`.",
    )
    env: list[EnvVar] | None = Field(
        default=None,
        description=(
            "Env specifies environment variables to use when downloading the model for caching.\n"
            "These variables are available to the model download process and can be used\n"
            "to configure download behavior, authentication, proxies, etc.\n"
            "If not set, falls back to the template's top-level Env field."
        ),
    )


class AIMServiceTemplateSpec(AIMServiceTemplateSpecCommon):
    """AIMServiceTemplateSpec defines the desired state of AIMServiceTemplate (namespace-scoped).

    A namespaced and versioned template that selects a runtime profile
    for a given AIM model (by canonical name). Templates are intentionally
    narrow: they describe runtime selection knobs for the AIM container and do
    not redefine the full Kubernetes deployment shape.
    """

    caching: AIMTemplateCachingConfig | None = Field(
        default=None,
        description=(
            "Caching configures model caching behavior for this namespace-scoped template.\n"
            "When enabled, models will be cached using the specified environment variables\n"
            "during download."
        ),
    )


class AIMClusterServiceTemplateSpec(AIMServiceTemplateSpecCommon):
    """AIMClusterServiceTemplateSpec defines the desired state of AIMClusterServiceTemplate
    (cluster-scoped).

    A cluster-scoped template that selects a runtime profile for a given AIM model.
    """


class _ProfileCharacteristics(K8sModel):
    """The fields AIMProfileMetadata and AIMDiscoveryProfileMetadata share: all but the GPU count,
    whose wire name differs (``gpuCount`` in template status, ``gpu_count`` in discovery output).
    """

    engine: str | None = Field(
        default=None,
        description='Engine identifies the inference engine used for this profile (e.g., "vllm", "tgi").',
    )
    gpu: str | None = Field(
        default=None,
        description='GPU specifies the GPU model this profile is optimized for (e.g., "MI300X", "MI325X").',
    )
    metric: AIMMetric | None = Field(
        default=None,
        description='Metric indicates the optimization goal for this profile ("latency" or "throughput").',
    )
    precision: AIMProfilePrecision | None = Field(
        default=None,
        description='Precision specifies the numeric precision used in this profile (e.g., "fp16", "fp8").',
    )
    type: AIMProfileType | None = Field(
        default=None,
        description=(
            "Type indicates the optimization level of this profile (optimized, preview, unoptimized)."
        ),
    )


class AIMProfileMetadata(_ProfileCharacteristics):
    """AIMProfileMetadata describes the characteristics of a cached deployment profile.
    This is identical to AIMDiscoveryProfileMetadata but exists in the template status namespace.
    """

    gpu_count: int | None = Field(
        default=None,
        description="GPUCount indicates how many GPUs are required per replica for this profile.",
    )


class AIMDiscoveryProfileMetadata(_ProfileCharacteristics):
    """AIMDiscoveryProfileMetadata describes the characteristics of a discovered deployment profile.
    It is the shape of the discovery job's output, whose GPU count is ``gpu_count`` on the wire.
    """

    gpu_count: int | None = Field(
        default=None,
        alias="gpu_count",
        description="GPUCount indicates how many GPUs are required per replica for this profile.",
    )


class AIMProfile(K8sModel):
    """AIMProfile contains the cached discovery results for a template.
    This is the processed and validated version of AIMDiscoveryProfile that is stored
    in the template's status after successful discovery.

    The profile serves as a cache of runtime configuration, eliminating the need to
    re-run discovery for each service that uses this template. Services and caching
    mechanisms reference this cached profile for deployment parameters and model sources.

    See discovery.go for AIMDiscoveryProfile (the raw discovery output) and the
    relationship between these types.
    """

    engine_args: JSONValue | None = Field(
        default=None,
        alias="engine_args",
        description=(
            "EngineArgs contains runtime-specific engine configuration as a free-form JSON "
            "object.\n"
            "The structure depends on the inference engine being used (e.g., vLLM, TGI).\n"
            "These arguments are passed to the runtime container to configure model loading and "
            "inference."
        ),
    )
    env_vars: dict[str, str] | None = Field(
        default=None,
        alias="env_vars",
        description=(
            "EnvVars contains environment variables required by the runtime for this profile.\n"
            "These may include engine-specific settings, optimization flags, or hardware "
            "configuration."
        ),
    )
    metadata: AIMProfileMetadata | None = Field(
        default=None, description="Metadata describes the characteristics of this profile."
    )
    original_discovery_output: JSONValue | None = Field(
        default=None,
        description=(
            "OriginalDiscoveryOutput contains the raw discovery job JSON output.\n"
            "This preserves the complete discovery result from the dry-run container,\n"
            "including all fields that may not be mapped to structured fields above."
        ),
    )


class AIMServiceTemplateStatus(_ResolutionStatus):
    """AIMServiceTemplateStatus defines the observed state of AIMServiceTemplate."""

    resolved_cache: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedCache captures metadata about which cache is used for this template",
    )
    resolved_hardware: AIMHardwareRequirements | None = Field(
        default=None,
        description=(
            "ResolvedHardware contains the resolved hardware requirements for this template.\n"
            "These values are computed from discovery results and spec defaults, and represent\n"
            "what will actually be used when creating InferenceServices.\n"
            "Resolution order: discovery output > spec values > defaults."
        ),
    )
    hardware_summary: str | None = Field(
        default=None,
        description=(
            "HardwareSummary is a human-readable display string for the hardware requirements.\n"
            'Format: "{count} x {model}" for GPU (e.g., "2 x MI300X") or "CPU" for CPU-only.\n'
            "This is a computed field for display purposes only."
        ),
    )
    status: AIMResourceStatusValue = Field(
        default=AIMStatus.PENDING,
        description=(
            "Status represents the current high\u2011level status of the template lifecycle.\n"
            "Values: `Pending`, `Progressing`, `Ready`, `Degraded`, `Failed`."
        ),
    )
    model_sources: list[AIMModelSource] | None = Field(
        default=None,
        description=(
            "ModelSources list the models that this template requires to run. These are the "
            "models that will be\n"
            "cached, if this template is cached."
        ),
    )
    profile: AIMProfile | None = Field(
        default=None,
        description=(
            "Profile contains the full discovery result profile as a free-form JSON object.\n"
            "This includes metadata, engine args, environment variables, and model details."
        ),
    )
    discovery_job: AIMResolvedReference | None = Field(
        default=None, description="DiscoveryJob is a reference to the job that was run for discovery"
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------

_TEMPLATE_COLUMNS = (
    PrinterColumn("Model", ".spec.modelName"),
    STATUS,
    PrinterColumn("Hardware", ".status.hardwareSummary"),  # "2 x MI300X", "CPU": the original's column
    PrinterColumn("Metric", ".status.profile.metadata.metric"),
    PrinterColumn("Precision", ".status.profile.metadata.precision"),
)


class AIMServiceTemplate(Resource):
    """AIMServiceTemplate is the Schema for namespace-scoped AIM service templates."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMServiceTemplate",
        plural="aimservicetemplates",
        scope="Namespaced",
        short_names=("aimtpl",),
        categories=CATEGORIES,
        printer_columns=_TEMPLATE_COLUMNS,
        description="AIMServiceTemplate is the Schema for namespace-scoped AIM service templates.",
    )

    spec: AIMServiceTemplateSpec
    status: AIMServiceTemplateStatus | None = None


class AIMClusterServiceTemplate(Resource):
    """A cluster-scoped template that defines runtime profiles for AIM services."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMClusterServiceTemplate",
        plural="aimclusterservicetemplates",
        scope="Cluster",
        short_names=("aimcltpl",),
        categories=CATEGORIES,
        printer_columns=_TEMPLATE_COLUMNS,
        description=(
            "AIMClusterServiceTemplate is a cluster-scoped template that defines runtime profiles"
            " for AIM services.\n"
            "\n"
            "Cluster-scoped templates can be used by AIMServices in any namespace, making them "
            "ideal for\n"
            "platform-wide model configurations that should be shared across teams and projects.\n"
            "Unlike namespace-scoped AIMServiceTemplates, cluster templates do not support "
            "caching configuration\n"
            "and must be managed by cluster administrators, since caches themselves are "
            "namespace-scoped.\n"
            "\n"
            "When both cluster and namespace templates exist with the same name, the "
            "namespace-scoped template\n"
            "takes precedence for services in that namespace."
        ),
    )

    spec: AIMClusterServiceTemplateSpec
    status: AIMServiceTemplateStatus | None = None
