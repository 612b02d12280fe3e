"""The model catalog: ``AIMModel`` and ``AIMClusterModel``.

A catalog entry names an AIM image (or custom model sources) and carries what discovery writes back:
the image metadata read from its OCI labels, custom templates and hardware. Its own module because
the OCI label parser and discovery read these types without caring about services or caches.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Self

from pydantic import Field, ValidationInfo, model_validator

from aimcore.api.crds.aim.common import (
    CATEGORIES,
    GROUP,
    AIMHardwareRequirements,
    AIMMetric,
    AIMModelSource,
    AIMPrecision,
    AIMProfileType,
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
    Resource,
    ResourceRequirements,
    cel,
    k8s_config,
)
from aimcore.api.decoding import decoding

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMModelSourceType(enum.StrEnum):
    """AIMModelSourceType indicates how a model's artifacts are sourced.

    - ``Image``: AIMModelSourceTypeImage indicates the model is discovered from container image labels.
    - ``Custom``: AIMModelSourceTypeCustom indicates the model uses explicit spec.modelSources.
    """

    IMAGE = "Image"
    CUSTOM = "Custom"


# ---------------------------------------------------------------------------------------------
# CEL rules (those without ``oldSelf`` are also enforced by the model validators below)
# ---------------------------------------------------------------------------------------------

CUSTOM_MODEL_HARDWARE_RULE = (
    "!has(self.modelSources) || size(self.modelSources) == 0"
    " || (has(self.custom) && has(self.custom.hardware))"
    " || (has(self.customTemplates) && size(self.customTemplates) > 0"
    " && self.customTemplates.all(t, has(t.hardware)))"
)


CUSTOM_MODEL_HARDWARE_MESSAGE = (
    "hardware must be set in custom.hardware or in every customTemplates entry when modelSources is set"
)


# ---------------------------------------------------------------------------------------------
# AIMModel / AIMClusterModel
# ---------------------------------------------------------------------------------------------


class AIMModelDiscoveryConfig(K8sModel):
    """AIMModelDiscoveryConfig controls discovery behavior for a model."""

    extract_metadata: bool = Field(
        default=True,
        description=(
            "ExtractMetadata controls whether metadata extraction runs for this model.\n"
            "During metadata extraction, the controller connects to the image registry and\n"
            "extracts the image's labels."
        ),
    )
    create_service_templates: bool = Field(
        default=True,
        description=(
            "CreateServiceTemplates controls whether (cluster) service templates are auto-created"
            " from the image metadata."
        ),
    )


class AIMTemplateProfile(K8sModel):
    """AIMTemplateProfile declares profile variables for template selection.
    Used in AIMCustomTemplate to specify optimization targets.
    """

    metric: AIMMetric | None = Field(
        default=None, description="Metric specifies the optimization target (e.g., latency, throughput)."
    )
    precision: AIMPrecision | None = Field(
        default=None, description="Precision specifies the numerical precision (e.g., fp8, fp16, bf16)."
    )


class AIMCustomTemplate(K8sModel):
    """AIMCustomTemplate defines a custom template configuration for a model.
    When modelSources are specified directly on AIMModel, customTemplates allow
    defining explicit hardware requirements and profiles, skipping the discovery job.
    """

    name: str | None = Field(
        default=None,
        max_length=63,
        description="Name is the template name. If not provided, auto-generated from model name + profile.",
    )
    type: AIMProfileType = Field(
        default=AIMProfileType.UNOPTIMIZED,
        description=(
            "Type indicates the optimization status of this template.\n"
            "- optimized: Template has been tuned for performance\n"
            "- preview: Template is experimental/pre-release\n"
            "- unoptimized: Default, no specific optimizations applied"
        ),
    )
    env: list[EnvVar] | None = Field(
        default=None,
        max_length=64,
        description="Env specifies environment variable overrides when this template is selected.",
    )
    hardware: AIMHardwareRequirements | None = Field(
        default=None,
        description=(
            "Hardware specifies GPU and CPU requirements for this template.\n"
            "Optional when spec.hardware is set (inherits from spec).\n"
            "When both are set, values are merged field-by-field with template taking precedence."
        ),
    )
    profile: AIMTemplateProfile | None = Field(
        default=None,
        description=(
            "Profile declares runtime profile variables for template selection.\n"
            "Used when multiple templates exist to select based on metric/precision."
        ),
    )


class AIMCustomModelSpec(K8sModel):
    """AIMCustomModelSpec contains configuration for custom models.
    These fields are only used when modelSources is specified (custom models).
    For image-based models, these settings come from discovery.
    """

    hardware: AIMHardwareRequirements | None = Field(
        default=None,
        description=(
            "Hardware specifies default hardware requirements for all templates.\n"
            "Individual templates can override these defaults.\n"
            "Required when modelSources is set and customTemplates is empty."
        ),
    )
    type: AIMProfileType | None = Field(
        default=None,
        description=(
            "Type specifies default type for all templates.\n"
            "Individual templates can override this default.\n"
            'When nil, templates default to "unoptimized".'
        ),
    )


class RecommendedDeployment(K8sModel):
    """RecommendedDeployment describes a recommended deployment configuration for a model."""

    gpu_model: str | None = Field(
        default=None, description="GPUModel is the GPU model name (e.g., MI300X, MI325X)"
    )
    gpu_count: int | None = Field(default=None, description="GPUCount is the number of GPUs required")
    precision: str | None = Field(
        default=None, description="Precision is the recommended precision (e.g., fp8, fp16, bf16)"
    )
    metric: str | None = Field(
        default=None, description="Metric is the optimization target (e.g., latency, throughput)"
    )
    profile_id: str | None = Field(
        default=None,
        description=(
            "ProfileId is the unique identifier of the AIM profile for this deployment.\n"
            "When set, templates created from this deployment will use this profile ID\n"
            "to deterministically select the correct runtime profile in the AIM container."
        ),
    )
    description: str | None = Field(
        default=None,
        description="Description provides additional context about this deployment configuration",
    )


class ModelMetadata(K8sModel):
    """ModelMetadata contains AMD Silogen model-specific metadata extracted from image labels."""

    canonical_name: str | None = Field(
        default=None,
        description=(
            "CanonicalName is the canonical model identifier (e.g., "
            "mistralai/Mixtral-8x22B-Instruct-v0.1).\n"
            "Extracted from: org.amd.silogen.model.canonicalName"
        ),
    )
    source: str | None = Field(
        default=None,
        description=(
            "Source is the URL where the model can be found.\nExtracted from: org.amd.silogen.model.source"
        ),
    )
    tags: list[str] | None = Field(
        default=None,
        description=(
            'Tags are descriptive tags (e.g., ["text-generation", "chat", "instruction"]).\n'
            "Extracted from: org.amd.silogen.model.tags (comma-separated)"
        ),
    )
    versions: list[str] | None = Field(
        default=None,
        description=(
            "Versions lists available versions.\n"
            "Extracted from: org.amd.silogen.model.versions (comma-separated)"
        ),
    )
    variants: list[str] | None = Field(
        default=None,
        description=(
            "Variants lists model variants.\nExtracted from: org.amd.silogen.model.variants (comma-separated)"
        ),
    )
    hf_token_required: bool | None = Field(
        default=None,
        description=(
            "HFTokenRequired indicates if a HuggingFace token is required.\n"
            "Extracted from: org.amd.silogen.hfToken.required"
        ),
    )
    title: str | None = Field(
        default=None,
        description=(
            "Title is the Silogen-specific title for the model.\nExtracted from: org.amd.silogen.title"
        ),
    )
    description_full: str | None = Field(
        default=None,
        description=(
            "DescriptionFull is the full description.\nExtracted from: org.amd.silogen.description.full"
        ),
    )
    release_notes: str | None = Field(
        default=None,
        description=(
            "ReleaseNotes contains release notes for this version.\n"
            "Extracted from: org.amd.silogen.release.notes"
        ),
    )
    recommended_deployments: list[RecommendedDeployment] | None = Field(
        default=None,
        description=(
            "RecommendedDeployments contains recommended deployment configurations.\n"
            "Extracted from: org.amd.silogen.model.recommendedDeployments (parsed from JSON "
            "array)"
        ),
    )


class OCIMetadata(K8sModel):
    """OCIMetadata contains standard OCI image metadata extracted from image labels."""

    title: str | None = Field(
        default=None,
        description="Title is the human-readable title.\nExtracted from: org.opencontainers.image.title",
    )
    description: str | None = Field(
        default=None,
        description=(
            "Description is a brief description.\nExtracted from: org.opencontainers.image.description"
        ),
    )
    licenses: str | None = Field(
        default=None,
        description=(
            "Licenses is the SPDX license identifier(s).\nExtracted from: org.opencontainers.image.licenses"
        ),
    )
    vendor: str | None = Field(
        default=None,
        description=(
            "Vendor is the organization that produced the image.\n"
            "Extracted from: org.opencontainers.image.vendor"
        ),
    )
    authors: str | None = Field(
        default=None,
        description=(
            "Authors is contact details of the authors.\nExtracted from: org.opencontainers.image.authors"
        ),
    )
    source: str | None = Field(
        default=None,
        description=(
            "Source is the URL to the source code repository.\n"
            "Extracted from: org.opencontainers.image.source"
        ),
    )
    documentation: str | None = Field(
        default=None,
        description=(
            "Documentation is the URL to documentation.\n"
            "Extracted from: org.opencontainers.image.documentation"
        ),
    )
    created: str | None = Field(
        default=None,
        description="Created is the creation timestamp.\nExtracted from: org.opencontainers.image.created",
    )
    revision: str | None = Field(
        default=None,
        description=(
            "Revision is the source control revision.\nExtracted from: org.opencontainers.image.revision"
        ),
    )
    version: str | None = Field(
        default=None,
        description="Version is the image version.\nExtracted from: org.opencontainers.image.version",
    )


class ImageMetadata(K8sModel):
    """ImageMetadata contains metadata extracted from or provided for a container image."""

    model: ModelMetadata | None = Field(
        default=None, description="Model contains AMD Silogen model-specific metadata."
    )
    oci: OCIMetadata | None = Field(default=None, description="OCI contains standard OCI image metadata.")
    original_labels: dict[str, str] | None = Field(
        default=None,
        description=(
            "OriginalLabels contains the raw OCI image labels as a JSON object.\n"
            "This preserves all labels from the image, including those not mapped to structured "
            "fields."
        ),
    )


class AIMModelSpec(RuntimeConfigRef):
    """AIMModelSpec defines the desired state of AIMModel."""

    model_config = k8s_config(cel((CUSTOM_MODEL_HARDWARE_RULE, CUSTOM_MODEL_HARDWARE_MESSAGE)))

    image: ImageReference = Field(
        min_length=1,
        pattern=IMAGE_PATTERN,
        description=(
            "Image is the container image URI for this AIM model.\n"
            "This image is inspected by the operator to select runtime profiles used by "
            "templates.\n"
            "Discovery behavior is controlled by the discovery field and runtime config's "
            "AutoDiscovery setting."
        ),
    )
    discovery: AIMModelDiscoveryConfig | None = Field(
        default=None,
        description=(
            "Discovery controls discovery behavior for this model.\nWhen unset, uses runtime config defaults."
        ),
    )
    default_service_template: str | None = Field(
        default=None,
        description=(
            "DefaultServiceTemplate specifies the default AIMServiceTemplate to use when creating"
            " services for this model.\n"
            "When set, services that reference this model will use this template if no template "
            "is explicitly specified.\n"
            "If this is not set, a template will be automatically selected."
        ),
    )
    custom: AIMCustomModelSpec | None = Field(
        default=None,
        description=(
            "Custom contains configuration for custom models (models with inline modelSources).\n"
            "Only used when modelSources are specified; ignored for image-based models."
        ),
    )
    custom_templates: list[AIMCustomTemplate] | None = Field(
        default=None,
        max_length=16,
        description=(
            "CustomTemplates defines explicit template configurations for this model.\n"
            "These templates are created directly without running a discovery job.\n"
            "Can be used with or without modelSources to define custom deployment configurations.\n"
            "If omitted when modelSources is set, a single template is auto-generated\n"
            "using the custom.hardware requirements."
        ),
    )
    model_sources: list[AIMModelSource] | None = Field(
        default=None,
        max_length=1,
        description=(
            "ModelSources specifies the model sources to use for this model.\n"
            "When specified, these sources are used instead of auto-discovery from the container "
            "image.\n"
            "This enables pre-creating custom models with explicit model sources.\n"
            "For custom models, modelSources[].size is required (discovery does not run).\n"
            "AIM runtime currently supports only one model source."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None,
        description=(
            "ImagePullSecrets lists secrets containing credentials for pulling the model "
            "container image.\n"
            "These secrets are used for:\n"
            "- OCI registry metadata extraction during discovery\n"
            "- Pulling the image for inference services\n"
            "The secrets are merged with any runtime config defaults.\n"
            "For namespace-scoped models, secrets must exist in the same namespace.\n"
            "For cluster-scoped models, secrets must exist in the operator namespace."
        ),
    )
    env: list[EnvVar] | None = Field(
        default=None,
        description=(
            "Env specifies environment variables for authentication during model discovery and "
            "metadata extraction.\n"
            "These variables are used for authentication with model registries (e.g., HuggingFace"
            " tokens)."
        ),
    )
    service_account_name: str | None = Field(
        default=None,
        description=(
            "ServiceAccountName specifies the Kubernetes service account to use for workloads "
            "related to this model.\n"
            "This includes metadata extraction jobs and any other model-related operations.\n"
            "If empty, the default service account for the namespace is used."
        ),
    )
    resources: ResourceRequirements | None = Field(
        default=None,
        description=(
            "Resources defines the default resource requirements for services using this model.\n"
            "Template- or service-level values override these defaults."
        ),
    )
    image_metadata: ImageMetadata | None = Field(
        default=None,
        description=(
            "ImageMetadata is the metadata that is used to determine which recommended service "
            "templates to create,\n"
            "and to drive clients with richer metadata regarding this particular model. For most "
            "cases the user does\n"
            "not need to set this field manually, for images that have the supported labels "
            "embedded in them\n"
            "the `AIM(Cluster)Model.status.imageMetadata` field is automatically filled from the "
            "container image labels.\n"
            "This field is intended to be used when there are network restrictions, or in other "
            "similar situations.\n"
            "If this field is set, the remote extraction will not be performed at all."
        ),
    )

    @model_validator(mode="after")
    def _check_custom_model_hardware(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if not self.model_sources:
            return self
        if self.custom is not None and self.custom.hardware is not None:
            return self
        templates = self.custom_templates or []
        if templates and all(t.hardware is not None for t in templates):
            return self
        raise ValueError(CUSTOM_MODEL_HARDWARE_MESSAGE)


class AIMModelStatus(K8sModel):
    """AIMModelStatus defines the observed state of AIMModel."""

    observed_generation: int | None = Field(
        default=None,
        description="ObservedGeneration is the most recent generation observed by the controller",
    )
    status: AIMResourceStatusValue = Field(
        default=AIMStatus.PENDING,
        description="Status represents the overall status of the image based on its templates",
    )
    conditions: list[Condition] | None = Field(
        default=None,
        description="Conditions represent the latest available observations of the model's state",
    )
    resolved_runtime_config: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedRuntimeConfig captures metadata about the runtime config that was resolved.",
    )
    image_metadata: ImageMetadata | None = Field(
        default=None, description="ImageMetadata is the metadata extracted from an AIM image"
    )
    source_type: AIMModelSourceType | None = Field(
        default=None,
        description=(
            "SourceType indicates how this model's artifacts are sourced.\n"
            '- "Image": Model discovered from container image labels\n'
            '- "Custom": Model uses explicit spec.modelSources\n'
            "Set by the controller based on whether spec.modelSources is populated."
        ),
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------

_MODEL_COLUMNS = (
    STATUS,
    PrinterColumn("Source", ".status.sourceType"),
    PrinterColumn("Image", ".spec.image"),
    PrinterColumn("Model", ".status.imageMetadata.model.canonicalName"),
    AGE,
)


class AIMModel(Resource):
    """AIMModel is the Schema for namespace-scoped AIM model catalog entries."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMModel",
        plural="aimmodels",
        scope="Namespaced",
        short_names=("aimmdl",),
        categories=CATEGORIES,
        printer_columns=_MODEL_COLUMNS,
        description="AIMModel is the Schema for namespace-scoped AIM model catalog entries.",
    )

    spec: AIMModelSpec
    status: AIMModelStatus | None = None


class AIMClusterModel(Resource):
    """AIMClusterModel is a cluster-scoped model catalog entry for AIM container images."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMClusterModel",
        plural="aimclustermodels",
        scope="Cluster",
        short_names=("aimclmdl",),
        categories=CATEGORIES,
        printer_columns=_MODEL_COLUMNS,
        description=(
            "AIMClusterModel is a cluster-scoped model catalog entry for AIM container images.\n"
            "\n"
            "Cluster-scoped models can be referenced by AIMServices in any namespace, making them"
            " ideal for\n"
            "shared model deployments across teams and projects. Like namespace-scoped AIMModels,"
            " cluster models\n"
            "trigger discovery jobs to extract metadata and generate service templates.\n"
            "\n"
            "When both cluster and namespace models exist for the same container image, services "
            "will preferentially\n"
            "use the namespace-scoped AIMModel when referenced by image URI."
        ),
    )

    spec: AIMModelSpec
    status: AIMModelStatus | None = None
