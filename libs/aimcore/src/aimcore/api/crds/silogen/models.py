"""The legacy catalog: ``AIMImage`` / ``AIMClusterImage`` (generation 1) and ``AIMModel`` /
``AIMClusterModel`` (generation 2, the same spec plus pull secrets, service account, model sources
and custom models). One module because generation 2 only renamed and extended generation 1.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Self

from pydantic import Field, ValidationInfo, model_validator

from aimcore.api.crds import aim as current
from aimcore.api.crds.aim import (
    AIMModelSource,
    AIMModelSourceType,
    ImageMetadata,
)
from aimcore.api.crds.base import (
    AGE,
    IMAGE_PATTERN,
    STATUS,
    CRDInfo,
    ImageReference,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    Resource,
    ResourceRequirements,
    cel,
    k8s_config,
)
from aimcore.api.crds.silogen.common import (
    AIMHardwareRequirements,
    _legacy_crd,
    _ObservedStatus,
    _runtime_config_name,
)
from aimcore.api.decoding import decoding

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMImageStatusEnum(enum.StrEnum):
    """Overall status of an image or model (generation 2 kept the values)."""

    PENDING = "Pending"
    PROGRESSING = "Progressing"
    READY = "Ready"
    DEGRADED = "Degraded"
    FAILED = "Failed"


# ---------------------------------------------------------------------------------------------
# Rules (CEL for the API server, the same check in Python for the services)
# ---------------------------------------------------------------------------------------------

IMAGE_REQUESTS_RULE = (
    "has(self.resources.requests) && 'cpu' in self.resources.requests && 'memory' in self.resources.requests"
)
IMAGE_REQUESTS_MESSAGE = "resources.requests must include cpu and memory"
IMAGE_LIMITS_RULE = "has(self.resources.limits) && 'memory' in self.resources.limits"
IMAGE_LIMITS_MESSAGE = "resources.limits must include memory"

CUSTOM_HARDWARE_RULE = (
    "!has(self.modelSources) || size(self.modelSources) == 0 || (has(self.custom) && "
    "(has(self.custom.hardware) || (has(self.custom.templates) && size(self.custom.templates) > 0 && "
    "self.custom.templates.all(t, has(t.hardware)))))"
)
CUSTOM_HARDWARE_MESSAGE = (
    "a custom model (spec.modelSources set) needs hardware: set custom.hardware "
    "or hardware on every entry of custom.templates"
)


# ---------------------------------------------------------------------------------------------
# Nested types
# ---------------------------------------------------------------------------------------------


class AIMCustomTemplate(current.AIMCustomTemplate):
    """One template generated for a custom model; inherits custom.hardware unless overridden.
    The generated template is named {modelName}-custom-[{name}][-{precision}][-{gpu}]-{hash}."""

    hardware: AIMHardwareRequirements | None = Field(
        default=None, description="Hardware overrides custom.hardware for this template."
    )


class AIMCustomModelSpec(current.AIMCustomModelSpec):
    """Configuration of a custom model (one with spec.modelSources); generation 2 keeps its custom
    templates here, under templates, where the current group has spec.customTemplates."""

    hardware: AIMHardwareRequirements | None = Field(
        default=None,
        description=(
            "Hardware specifies default hardware requirements for all templates.\n"
            "Required when modelSources is set and templates do not all set their own."
        ),
    )
    templates: list[AIMCustomTemplate] | None = Field(
        default=None,
        description=(
            "Templates are created one per entry, each inheriting custom.hardware unless overridden.\n"
            "Without templates a single template is generated from custom.hardware."
        ),
    )


class AIMImageDiscoverySpec(K8sModel):
    """Metadata discovery and automatic template creation for an image or model."""

    enabled: bool | None = Field(
        default=None,
        description=(
            "Enabled toggles metadata discovery. Generation 1: disabled when unset.\n"
            "Generation 2: when unset, the runtime config's model.autoDiscovery decides."
        ),
    )
    auto_create_templates: bool | None = Field(
        default=None,
        description=(
            "AutoCreateTemplates controls whether recommended deployments from discovery\n"
            "automatically create ServiceTemplates. Enabled when unset and discovery runs."
        ),
    )


# ---------------------------------------------------------------------------------------------
# Images (generation 1) and models (generation 2)
# ---------------------------------------------------------------------------------------------


class _CatalogSpec(K8sModel):
    """What an image (generation 1) and a model (generation 2) catalog entry both say."""

    image: ImageReference = Field(
        min_length=1,
        pattern=IMAGE_PATTERN,
        description=(
            "Image is the container image URI for this AIM model. The operator inspects it\n"
            "to select runtime profiles used by templates."
        ),
    )
    default_service_template: str | None = Field(
        default=None,
        description="DefaultServiceTemplate is the template used when a service does not name one.",
    )
    discovery: AIMImageDiscoverySpec | None = Field(
        default=None, description="Discovery controls metadata extraction and automatic template creation."
    )
    runtime_config_name: str = _runtime_config_name("image or model")


class AIMImageSpec(_CatalogSpec):
    """The desired state of an AIMImage / AIMClusterImage."""

    model_config = k8s_config(
        cel((IMAGE_REQUESTS_RULE, IMAGE_REQUESTS_MESSAGE), (IMAGE_LIMITS_RULE, IMAGE_LIMITS_MESSAGE))
    )

    resources: ResourceRequirements = Field(
        description=(
            "Resources defines the default resource requirements for services using this image.\n"
            "Template- or service-level values override these defaults.\n"
            "Must have both cpu and memory in requests and memory in limits."
        )
    )

    @model_validator(mode="after")
    def _check_resources(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        requests = self.resources.requests or {}
        if "cpu" not in requests or "memory" not in requests:
            raise ValueError(IMAGE_REQUESTS_MESSAGE)
        if "memory" not in (self.resources.limits or {}):
            raise ValueError(IMAGE_LIMITS_MESSAGE)
        return self


class AIMModelSpec(_CatalogSpec):
    """The desired state of an AIMModel / AIMClusterModel (generation 2)."""

    model_config = k8s_config(cel((CUSTOM_HARDWARE_RULE, CUSTOM_HARDWARE_MESSAGE)))

    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None,
        description=(
            "ImagePullSecrets are used to pull the image during discovery and inference. They must exist in\n"
            "the model's namespace (the operator namespace for cluster models)."
        ),
    )
    service_account_name: str | None = Field(
        default=None,
        description="ServiceAccountName is used for discovery jobs; the namespace default when empty.",
    )
    resources: ResourceRequirements | None = Field(
        default=None,
        description="Resources are baseline requirements that templates and services can override.",
    )
    model_sources: list[AIMModelSource] | None = Field(
        default=None,
        description=(
            "ModelSources makes this a custom model: weights are downloaded from these sources\n"
            "instead of being discovered from the image, and discovery is skipped."
        ),
    )
    custom: AIMCustomModelSpec | None = Field(
        default=None, description="Custom configures hardware and templates of a custom model."
    )

    @model_validator(mode="after")
    def _check_custom(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if self.model_sources:
            custom = self.custom
            templates = custom.templates if custom else None
            if custom is None or (
                custom.hardware is None and not (templates and all(t.hardware is not None for t in templates))
            ):
                raise ValueError(CUSTOM_HARDWARE_MESSAGE)
        return self


class AIMImageStatus(_ObservedStatus):
    """The observed state of an image (and, with sourceType, of a model)."""

    status: AIMImageStatusEnum = Field(
        default=AIMImageStatusEnum.PENDING,
        description="Status represents the overall status of the image based on its templates",
    )
    image_metadata: ImageMetadata | None = Field(
        default=None, description="ImageMetadata is the metadata extracted from an AIM image"
    )


class AIMModelStatus(AIMImageStatus):
    """The observed state of an AIMModel / AIMClusterModel."""

    source_type: AIMModelSourceType | None = Field(
        default=None, description="SourceType is Custom when spec.modelSources is set, Image otherwise."
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------

_IMAGE_COLUMNS = (STATUS, PrinterColumn("Image", ".spec.image"), AGE)


class AIMClusterImage(Resource):
    """A cluster-scoped AIM image catalog entry (generation 1)."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMClusterImage",
        "Cluster",
        "AIMClusterImage is the Schema for cluster-scoped AIM image catalog entries.",
        _IMAGE_COLUMNS,
        short_name="aimclimg",
    )
    spec: AIMImageSpec
    status: AIMImageStatus | None = None


class AIMImage(Resource):
    """A namespace-scoped AIM image catalog entry (generation 1)."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMImage",
        "Namespaced",
        "AIMImage is the Schema for namespace-scoped AIM image catalog entries.",
        _IMAGE_COLUMNS,
        short_name="aimimg",
    )
    spec: AIMImageSpec
    status: AIMImageStatus | None = None


class AIMClusterModel(Resource):
    """A cluster-scoped AIM model catalog entry (generation 2). No short name: aimclmdl is the
    current group's."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMClusterModel",
        "Cluster",
        "AIMClusterModel is the Schema for cluster-scoped AIM model catalog entries.",
        _IMAGE_COLUMNS,
    )
    spec: AIMModelSpec
    status: AIMModelStatus | None = None


class AIMModel(Resource):
    """A namespace-scoped AIM model catalog entry (generation 2). No short name: aimmdl is the
    current group's."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMModel",
        "Namespaced",
        "AIMModel is the Schema for namespace-scoped AIM model catalog entries.",
        _IMAGE_COLUMNS,
    )
    spec: AIMModelSpec
    status: AIMModelStatus | None = None
