"""The legacy ``AIMService``: the union of generation 1 (``aimImageName``, ``templateRef``,
``cacheModel``) and generation 2 (``model.{ref|name|image|custom}``, ``template``), with the rules
that forbid naming one thing twice.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Self

from pydantic import Field, ValidationInfo, model_validator

from aimcore.api.crds import aim as current
from aimcore.api.crds.aim import (
    MAX_REPLICAS,
    REPLICA_BOUNDS_MESSAGE,
    REPLICA_BOUNDS_RULE,
    AIMResolvedReference,
    AIMServiceAutoScaling,
    AIMServiceRoutingStatus,
    AIMServiceTemplateConfig,
    check_replica_bounds,
)
from aimcore.api.crds.base import (
    AGE,
    IMAGE_PATTERN,
    STATUS,
    CRDInfo,
    EnvVar,
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
    AIMRuntimeParameters,
    _download_env,
    _legacy_crd,
    _ObservedStatus,
    _pull_secrets,
    _RoutingCommon,
    _runtime_config_name,
)
from aimcore.api.decoding import decoding

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMServiceStatusEnum(enum.StrEnum):
    """Coarse-grained states of a service."""

    PENDING = "Pending"
    STARTING = "Starting"
    RUNNING = "Running"
    FAILED = "Failed"
    DEGRADED = "Degraded"


# ---------------------------------------------------------------------------------------------
# Rules (CEL for the API server, the same check in Python for the services)
# ---------------------------------------------------------------------------------------------

SERVICE_MODEL_RULE = (
    "(has(self.ref) ? 1 : 0) + (has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0)"
    " + (has(self.custom) ? 1 : 0) == 1"
)
SERVICE_MODEL_MESSAGE = "exactly one of ref, name, image or custom must be specified"

SERVICE_TARGET_RULE = "has(self.aimImageName) != has(self.model)"
SERVICE_TARGET_MESSAGE = "exactly one of aimImageName or model must be specified"

SERVICE_TEMPLATE_RULE = "!(has(self.templateRef) && has(self.template) && has(self.template.name))"
SERVICE_TEMPLATE_MESSAGE = "templateRef and template.name are mutually exclusive"


# ---------------------------------------------------------------------------------------------
# Nested types
# ---------------------------------------------------------------------------------------------


class AIMServiceOverrides(AIMRuntimeParameters):
    """Service-level overrides of the referenced template's parameters. All fields are optional."""


class AIMServiceRouting(_RoutingCommon):
    """Optional HTTP routing of one service (Gateway API HTTPRoute)."""

    enabled: bool = Field(default=False, description="Enabled toggles HTTP routing management.")
    annotations: dict[str, str] | None = Field(
        default=None, description="Annotations to add to the HTTPRoute resource."
    )


# ---------------------------------------------------------------------------------------------
# Services
# ---------------------------------------------------------------------------------------------


class AIMServiceModelCustom(current.AIMServiceModelCustom):
    """An inline custom model (the service auto-creates an AIMModel it owns), with the
    generation-2 hardware requirements."""

    hardware: AIMHardwareRequirements = Field(
        description="Hardware specifies the GPU and CPU requirements of this custom model."
    )


class AIMServiceModel(K8sModel):
    """Which model a generation-2 service deploys. Exactly one field must be set."""

    model_config = k8s_config(cel((SERVICE_MODEL_RULE, SERVICE_MODEL_MESSAGE)))

    ref: str | None = Field(
        default=None,
        description="Ref references an existing AIMModel, then AIMClusterModel, by metadata.name.",
    )
    name: str | None = Field(default=None, description="Name is the later spelling of ref.")
    image: str | None = Field(
        default=None,
        pattern=IMAGE_PATTERN,
        description=(
            "Image is a container image URI; the controller uses a model with this image or creates one\n"
            "(scope from the runtime config's model.creationScope)."
        ),
    )
    custom: AIMServiceModelCustom | None = Field(
        default=None, description="Custom is an inline custom model with explicit sources and hardware."
    )

    @model_validator(mode="after")
    def _check_exactly_one(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if sum(v is not None for v in (self.ref, self.name, self.image, self.custom)) != 1:
            raise ValueError(SERVICE_MODEL_MESSAGE)
        return self


class AIMServiceSpec(K8sModel):
    """The desired state of an AIMService: a model bound to a template, with replicas and overrides.

    Generation 1 names the image with aimImageName and the template with templateRef;
    generation 2 uses model and template."""

    model_config = k8s_config(
        cel(
            (SERVICE_TARGET_RULE, SERVICE_TARGET_MESSAGE),
            (SERVICE_TEMPLATE_RULE, SERVICE_TEMPLATE_MESSAGE),
            (REPLICA_BOUNDS_RULE, REPLICA_BOUNDS_MESSAGE),
        )
    )

    aim_image_name: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "AIMImageName is the canonical model name (including version/revision) to deploy,\n"
            "matching metadata.name of an AIMImage (generation 1)."
        ),
    )
    model: AIMServiceModel | None = Field(
        default=None,
        description="Model selects the model to deploy by ref/name, image or custom (generation 2).",
    )
    template_ref: str | None = Field(
        default=None,
        description="TemplateRef is the name of the AIMServiceTemplate or AIMClusterServiceTemplate to use.",
    )
    template: AIMServiceTemplateConfig | None = Field(
        default=None, description="Template contains template selection and configuration (generation 2)."
    )
    cache_model: bool = Field(
        default=False,
        description=(
            "CacheModel requests that model sources be cached when starting the service\n"
            "if the template itself does not warm the cache."
        ),
    )
    replicas: int = Field(
        default=1, ge=1, le=MAX_REPLICAS, description="Replicas is the number of replicas for this service."
    )
    min_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="MinReplicas is the minimum number of replicas for autoscaling.",
    )
    max_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="MaxReplicas is the maximum number of replicas for autoscaling.",
    )
    auto_scaling: AIMServiceAutoScaling | None = Field(
        default=None, description="AutoScaling configures KEDA-based autoscaling with custom metrics."
    )
    runtime_config_name: str = _runtime_config_name("service")
    resources: ResourceRequirements | None = Field(
        default=None,
        description=(
            "Resources override the container requirements; they take precedence over template and image."
        ),
    )
    overrides: AIMServiceOverrides | None = Field(
        default=None, description="Overrides allows overriding specific template parameters for this service."
    )
    env: list[EnvVar] | None = _download_env()
    image_pull_secrets: list[LocalObjectReference] | None = _pull_secrets()
    routing: AIMServiceRouting | None = Field(
        default=None, description="Routing enables HTTP routing through Gateway API for this service."
    )

    @model_validator(mode="after")
    def _check_targets(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if (self.aim_image_name is None) == (self.model is None):
            raise ValueError(SERVICE_TARGET_MESSAGE)
        if self.template_ref is not None and self.template is not None and self.template.name is not None:
            raise ValueError(SERVICE_TEMPLATE_MESSAGE)
        check_replica_bounds(self.min_replicas, self.max_replicas)
        return self


class AIMServiceStatus(_ObservedStatus):
    """The observed state of an AIMService."""

    resolved_image: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedImage captures metadata about the image (or model) that was resolved.",
    )
    status: AIMServiceStatusEnum = Field(
        default=AIMServiceStatusEnum.PENDING,
        description="Status represents the current high-level status of the service lifecycle.",
    )
    routing: AIMServiceRoutingStatus | None = Field(
        default=None,
        description="Routing surfaces information about the configured HTTP routing, when enabled.",
    )
    resolved_template: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedTemplate captures metadata about the template that satisfied the reference.",
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------


class AIMService(Resource):
    """A KServe-based AIM inference service. No short name: aimsvc is the current group's."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMService",
        "Namespaced",
        "AIMService manages a KServe-based AIM inference service for the selected model and template.",
        (
            STATUS,
            PrinterColumn("Model", ".status.resolvedImage.name"),
            PrinterColumn("Template", ".status.resolvedTemplate.name"),
            PrinterColumn("Replicas", ".spec.replicas", type="integer"),
            AGE,
        ),
    )
    spec: AIMServiceSpec
    status: AIMServiceStatus | None = None
