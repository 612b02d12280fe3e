"""Legacy service templates: ``AIMServiceTemplate`` and ``AIMClusterServiceTemplate``, keyed by
``aimImageName`` with a GPU selector, and the profile their status carries.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from pydantic import Field

from aimcore.api.crds import aim as current
from aimcore.api.crds.aim import (
    AIMDiscoveryProfileMetadata,
    AIMResolvedReference,
    AIMTemplateCachingConfig,
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
    immutable,
)
from aimcore.api.crds.silogen.common import (
    AIMRuntimeParameters,
    _download_env,
    _legacy_crd,
    _ObservedStatus,
    _pull_secrets,
    _runtime_config_name,
)

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMTemplateStatusEnum(enum.StrEnum):
    """Coarse-grained states of a service template."""

    PENDING = "Pending"
    PROGRESSING = "Progressing"
    AVAILABLE = "Available"
    DEGRADED = "Degraded"
    FAILED = "Failed"


# ---------------------------------------------------------------------------------------------
# Rules (CEL for the API server, the same check in Python for the services)
# ---------------------------------------------------------------------------------------------

IMAGE_NAME_IMMUTABLE_MESSAGE = "image name is immutable"


# ---------------------------------------------------------------------------------------------
# Nested types
# ---------------------------------------------------------------------------------------------


class AIMDiscoveredModelSource(current.AIMModelSource):
    """A model artifact a template needs, as recorded in its status; generation 1 also named it."""

    name: str | None = Field(default=None, description="Name is the name of the model (generation 1).")


class AIMProfile(K8sModel):
    """The discovery result cached in a template's status."""

    engine_args: JSONValue = Field(
        default=None,
        alias="engine_args",
        description="EngineArgs contains runtime-specific engine configuration as a free-form JSON object.",
    )
    env_vars: dict[str, str] | None = Field(
        default=None,
        alias="env_vars",
        description="EnvVars contains environment variables required by the runtime.",
    )
    metadata: AIMDiscoveryProfileMetadata | None = Field(
        default=None, description="Metadata describes the characteristics of this profile."
    )


# ---------------------------------------------------------------------------------------------
# Service templates
# ---------------------------------------------------------------------------------------------


class AIMServiceTemplateSpecCommon(AIMRuntimeParameters):
    """Fields shared by cluster- and namespace-scoped service templates."""

    aim_image_name: str = Field(
        min_length=1,
        json_schema_extra=immutable(IMAGE_NAME_IMMUTABLE_MESSAGE),
        description=(
            "AIMImageName is the AIM image name: metadata.name of an AIMImage (or, with generation 2,\n"
            "an AIMModel). Immutable."
        ),
    )
    runtime_config_name: str = _runtime_config_name("template")
    resources: ResourceRequirements | None = Field(
        default=None,
        description=(
            "Resources are the default container requirements of services derived from this template."
        ),
    )


class AIMClusterServiceTemplateSpec(AIMServiceTemplateSpecCommon):
    """A cluster-scoped template that selects a runtime profile for a given AIM model."""


class AIMServiceTemplateSpec(AIMServiceTemplateSpecCommon):
    """A namespaced template; unlike cluster templates it can cache models and carry credentials."""

    caching: AIMTemplateCachingConfig | None = Field(
        default=None,
        description="Caching configures model caching behavior for this namespace-scoped template.",
    )
    env: list[EnvVar] | None = _download_env()
    image_pull_secrets: list[LocalObjectReference] | None = _pull_secrets()


class AIMServiceTemplateStatus(_ObservedStatus):
    """The observed state of a service template."""

    resolved_image: AIMResolvedReference | None = Field(
        default=None, description="ResolvedImage captures metadata about the image that was resolved."
    )
    status: AIMTemplateStatusEnum = Field(
        default=AIMTemplateStatusEnum.PENDING,
        description="Status represents the current high-level status of the template lifecycle.",
    )
    model_sources: list[AIMDiscoveredModelSource] | None = Field(
        default=None, description="ModelSources list the models that this template requires to run."
    )
    profile: AIMProfile | None = Field(
        default=None, description="Profile contains the full discovery result profile."
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------

_PROFILE = ".status.profile.metadata"
_TEMPLATE_PROFILE_COLUMNS = (
    PrinterColumn("Engine", f"{_PROFILE}.engine"),
    PrinterColumn("Metric", f"{_PROFILE}.metric"),
    PrinterColumn("Precision", f"{_PROFILE}.precision"),
    PrinterColumn("GPUs/replica", f"{_PROFILE}.gpu_count", type="integer"),
    PrinterColumn("GPU", f"{_PROFILE}.gpu"),
)


class AIMClusterServiceTemplate(Resource):
    """A cluster-scoped template selecting a runtime profile for an AIM model."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMClusterServiceTemplate",
        "Cluster",
        "AIMClusterServiceTemplate is a cluster-scoped template that selects a runtime profile "
        "for a given AIM model.",
        (STATUS, *_TEMPLATE_PROFILE_COLUMNS),
        short_name="aimclst",
    )
    spec: AIMClusterServiceTemplateSpec
    status: AIMServiceTemplateStatus | None = None


class AIMServiceTemplate(Resource):
    """A namespaced template selecting a runtime profile for an AIM model."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMServiceTemplate",
        "Namespaced",
        "AIMServiceTemplate is a namespaced template that selects a runtime profile for a given AIM model.",
        (STATUS, PrinterColumn("Model", ".spec.aimImageName"), *_TEMPLATE_PROFILE_COLUMNS),
        short_name="aimst",
    )
    spec: AIMServiceTemplateSpec
    status: AIMServiceTemplateStatus | None = None
