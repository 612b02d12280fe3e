"""Typed models of the legacy ``aim.silogen.ai/v1alpha1`` API group (AIM as it lived in kaiwo).

Why this module exists: before AIM moved to ``aim.eai.amd.com`` (:mod:`aimcore.api.crds.aim`) its API was
served under ``aim.silogen.ai``, and users still hold manifests written for it. We serve that group
too, so those manifests apply unchanged; these classes are both the runtime type of such an object
and the source its CRD YAML is generated from (:mod:`aim_dev.crdgen`).

The legacy group went through two generations, and one CRD has to accept manifests of both:

- Generation 1 (seed 001, seed 002): images as the catalog (``AIMImage`` / ``AIMClusterImage``),
  templates keyed by ``aimImageName`` with a ``gpuSelector``, ``AIMService`` with
  ``aimImageName`` / ``templateRef`` / ``cacheModel``, runtime configs with ``routeTemplate``.
- Generation 2 (seed 003): the catalog renamed to ``AIMModel`` / ``AIMClusterModel`` (same spec
  plus ``imagePullSecrets``, ``serviceAccountName``, ``modelSources`` and ``custom`` models),
  ``AIMService.spec.model.{ref|name|image|custom}`` and ``spec.template``, runtime configs with
  ``model.{creationScope,autoDiscovery}``.

So every kind here is the *union* of what either generation accepts (11 kinds: seed 001's nine plus
the two model kinds). Where a generation-2 field is used but not described by the legacy seeds,
its type follows the current group's reference (seed 000) unless the legacy examples contradict it:
legacy hardware lists GPU ``models`` (a list, and it may be combined with ``minVram``) where the
current API has a single ``model``, and custom templates live under ``custom.templates``, not
``customTemplates``.

Reuse of :mod:`aimcore.api.crds.aim`: types identical to the current group's are imported. Where a legacy
type is a current one plus fields (GPU requirements with ``models``, hardware and custom templates
using them, the custom-model spec with ``templates``, the runtime config's ``model`` with
``creationScope``) it subclasses the current type, so code written against the current types also
takes legacy objects. Statuses are written only by our own status service, so their nested types are
the current ones even where those are slightly wider than generation 1's (a resolved reference's
``scope`` may also be ``Merged``, ``imageMetadata`` may carry ``originalLabels``, profile metadata a
``type``); spec types, which users write, follow the legacy seeds.

Where the two generations name one thing twice, both names are accepted and a rule forbids
setting both: ``aimImageName`` vs ``model``, ``templateRef`` vs ``template.name``, ``routeTemplate``
vs ``pathTemplate`` (the later kaiwo name, whose failures the legacy suite reports as
``PathTemplateInvalid``).

Short names never clash with the current group's (``kubectl get aimsvc`` must stay unambiguous):
the legacy names are kept where they are free (``aimst``, ``aimclst``, ``aimrcfg``, ``aimcrcfg``,
``aimimg``, ``aimclimg``) and dropped where they clash (service, models, caches). The category is
``aim-legacy`` (plus ``all``), so ``kubectl get aim`` lists only the current group.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, model_validator

from aimcore.api.crds import aim as current
from aimcore.api.crds.aim import (
    GPU_MODEL_XOR_VRAM_MESSAGE,
    GPU_MODEL_XOR_VRAM_RULE,
    REPLICA_BOUNDS_MESSAGE,
    REPLICA_BOUNDS_RULE,
    SOURCE_URI_PATTERN,
    AIMDiscoveryProfileMetadata,
    AIMMetric,
    AIMModelSource,
    AIMModelSourceType,
    AIMPrecision,
    AIMResolvedReference,
    AIMRuntimeConfigStatus,
    AIMServiceAutoScaling,
    AIMServiceRoutingStatus,
    AIMServiceTemplateConfig,
    AIMTemplateCachingConfig,
    ImageMetadata,
    ParentReference,
    check_replica_bounds,
)
from aimcore.api.crds.base import (
    AGE,
    IMAGE_PATTERN,
    STATUS,
    Condition,
    CRDInfo,
    EnvVar,
    ImageReference,
    JSONValue,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    Quantity,
    Resource,
    ResourceRequirements,
    Time,
    cel,
    immutable,
    k8s_config,
)
from aimcore.api.kinds import GROUP_LEGACY

GROUP = GROUP_LEGACY
CATEGORIES = ("aim-legacy", "all")

_CONDITIONS: dict[str, Any] = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}


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


class AIMTemplateStatusEnum(enum.StrEnum):
    """Coarse-grained states of a service template."""

    PENDING = "Pending"
    PROGRESSING = "Progressing"
    AVAILABLE = "Available"
    DEGRADED = "Degraded"
    FAILED = "Failed"


class AIMServiceStatusEnum(enum.StrEnum):
    """Coarse-grained states of a service."""

    PENDING = "Pending"
    STARTING = "Starting"
    RUNNING = "Running"
    FAILED = "Failed"
    DEGRADED = "Degraded"


class AIMCacheStatusEnum(enum.StrEnum):
    """Status of a template cache or a model cache."""

    PENDING = "Pending"
    PROGRESSING = "Progressing"
    AVAILABLE = "Available"
    FAILED = "Failed"


AIMModelCreationScope = current.AIMModelCreationScope


# ---------------------------------------------------------------------------------------------
# Rules (CEL for the API server, the same check in Python for the services)
# ---------------------------------------------------------------------------------------------

ROUTE_TEMPLATE_RULE = "!(has(self.routeTemplate) && has(self.pathTemplate))"
ROUTE_TEMPLATE_MESSAGE = (
    "routeTemplate and pathTemplate are mutually exclusive (pathTemplate is its later name)"
)

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

SERVICE_MODEL_RULE = (
    "(has(self.ref) ? 1 : 0) + (has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0)"
    " + (has(self.custom) ? 1 : 0) == 1"
)
SERVICE_MODEL_MESSAGE = "exactly one of ref, name, image or custom must be specified"

SERVICE_TARGET_RULE = "has(self.aimImageName) != has(self.model)"
SERVICE_TARGET_MESSAGE = "exactly one of aimImageName or model must be specified"

SERVICE_TEMPLATE_RULE = "!(has(self.templateRef) && has(self.template) && has(self.template.name))"
SERVICE_TEMPLATE_MESSAGE = "templateRef and template.name are mutually exclusive"

GPU_MODEL_XOR_MODELS_RULE = "!(has(self.model) && has(self.models))"
GPU_MODEL_XOR_MODELS_MESSAGE = "model and models are mutually exclusive"

IMAGE_NAME_IMMUTABLE_MESSAGE = "image name is immutable"


def _conditions_field(description: str) -> Any:
    return Field(default=None, json_schema_extra=_CONDITIONS, description=description)


def _runtime_config_name(consumer: str) -> Any:
    return Field(
        default="default",
        description=f"RuntimeConfigName names the AIM runtime configuration to use for this {consumer}.",
    )


def _pull_secrets() -> Any:
    return Field(
        default=None, description="ImagePullSecrets references secrets for pulling container images."
    )


def _download_env() -> Any:
    return Field(
        default=None,
        description=(
            "Env specifies environment variables to use for authentication when downloading models\n"
            "(e.g. HuggingFace tokens)."
        ),
    )


# ---------------------------------------------------------------------------------------------
# Shared nested types
# ---------------------------------------------------------------------------------------------


class AimGpuSelector(K8sModel):
    """The strategy used to choose the GPUs given to each replica (generation 1)."""

    count: int | None = Field(
        default=None, ge=1, description="Count is the number of the GPU resources requested per replica"
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description="Model is the model name of the GPU that is supported by this template",
    )


class AIMRuntimeParameters(K8sModel):
    """Runtime parameters shared by templates and service overrides."""

    metric: AIMMetric | None = Field(
        default=None,
        description=(
            "Metric selects the optimization goal.\n"
            "- latency: prioritize low end-to-end latency\n"
            "- throughput: prioritize sustained requests/second"
        ),
    )
    precision: AIMPrecision | None = Field(
        default=None, description="Precision selects the numeric precision used by the runtime."
    )
    gpu_selector: AimGpuSelector | None = Field(
        default=None,
        description="GpuSelector contains the strategy to choose the resources to give each replica",
    )


class AIMServiceOverrides(AIMRuntimeParameters):
    """Service-level overrides of the referenced template's parameters. All fields are optional."""


class AIMGpuRequirements(current.AIMGpuRequirements):
    """GPU requirements of a custom model: the current type plus generation 2's list of acceptable
    GPU models (which, unlike the single model, may be combined with minVram)."""

    model_config = k8s_config(
        cel(
            (GPU_MODEL_XOR_VRAM_RULE, GPU_MODEL_XOR_VRAM_MESSAGE),
            (GPU_MODEL_XOR_MODELS_RULE, GPU_MODEL_XOR_MODELS_MESSAGE),
        )
    )

    models: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None,
        max_length=8,
        description=(
            "Models limits deployment to specific GPU models (node affinity); any of them may be used.\n"
            "When empty, the workload can run on any available GPU."
        ),
    )

    @model_validator(mode="after")
    def _check_model_xor_models(self) -> Self:
        if self.model is not None and self.models is not None:
            raise ValueError(GPU_MODEL_XOR_MODELS_MESSAGE)
        return self


class AIMHardwareRequirements(current.AIMHardwareRequirements):
    """Compute requirements of a custom model, with the generation-2 GPU requirements."""

    gpu: AIMGpuRequirements | None = Field(
        default=None,
        description="GPU specifies GPU requirements. If not set, no GPUs are requested (CPU-only model).",
    )


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


class AIMDiscoveredModelSource(current.AIMModelSource):
    """A model artifact a template needs, as recorded in its status; generation 1 also named it."""

    name: str | None = Field(default=None, description="Name is the name of the model (generation 1).")


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


class _ObservedStatus(K8sModel):
    """What every legacy status reports: the generation it reflects, its conditions and the runtime
    config that was resolved for it."""

    observed_generation: int | None = Field(
        default=None,
        description="ObservedGeneration is the most recent generation observed by the controller.",
    )
    conditions: list[Condition] | None = _conditions_field(
        "Conditions represent the latest observations of the object's state."
    )
    resolved_runtime_config: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedRuntimeConfig captures metadata about the runtime config that was resolved.",
    )


# ---------------------------------------------------------------------------------------------
# Routing and runtime configs
# ---------------------------------------------------------------------------------------------


class _RoutingCommon(K8sModel):
    """Gateway and path template, shared by runtime-config defaults and the service's own routing."""

    model_config = k8s_config(cel((ROUTE_TEMPLATE_RULE, ROUTE_TEMPLATE_MESSAGE)))

    gateway_ref: ParentReference | None = Field(
        default=None,
        description=(
            "GatewayRef identifies the Gateway parent that should receive HTTPRoutes.\n"
            "When omitted while routing is enabled, reconciliation reports a failure."
        ),
    )
    route_template: str | None = Field(
        default=None,
        description=(
            "RouteTemplate renders the HTTP path prefix from JSONPath fragments wrapped in {...},\n"
            "evaluated against the AIMService. Example: /{.metadata.namespace}/{.metadata.labels['team']}/"
        ),
    )
    path_template: str | None = Field(
        default=None, description="PathTemplate is the later legacy name of routeTemplate; set at most one."
    )

    @model_validator(mode="after")
    def _check_one_template(self) -> Self:
        if self.route_template is not None and self.path_template is not None:
            raise ValueError(ROUTE_TEMPLATE_MESSAGE)
        return self


class AIMRuntimeRoutingConfig(_RoutingCommon):
    """Routing defaults applied to services using a runtime config."""

    enabled: bool | None = Field(
        default=None,
        description="Enabled toggles HTTP routing management for consumers of this runtime config.",
    )


class AIMServiceRouting(_RoutingCommon):
    """Optional HTTP routing of one service (Gateway API HTTPRoute)."""

    enabled: bool = Field(default=False, description="Enabled toggles HTTP routing management.")
    annotations: dict[str, str] | None = Field(
        default=None, description="Annotations to add to the HTTPRoute resource."
    )


class AIMModelConfig(current.AIMModelConfig):
    """The current group's model defaults; generation 2 declares creationScope with a default."""

    creation_scope: AIMModelCreationScope = Field(
        default=AIMModelCreationScope.NAMESPACE,
        description=(
            "CreationScope says whether auto-created models are AIMClusterModels or namespaced AIMModels."
        ),
    )


class AIMRuntimeConfigCommon(K8sModel):
    """Runtime-config fields shared by the cluster and namespace scopes."""

    default_storage_class_name: str | None = Field(
        default=None,
        description=(
            "DefaultStorageClassName is the storage class used for model caches when one is not\n"
            "specified directly on the consumer resource."
        ),
    )
    routing: AIMRuntimeRoutingConfig | None = Field(
        default=None, description="Routing controls HTTP routing defaults applied to AIM resources."
    )
    model: AIMModelConfig | None = Field(
        default=None, description="Model controls creation and discovery of auto-created models."
    )
    cache_base_images: bool | None = Field(
        default=None, description="CacheBaseImages asks the operator to pre-cache AIM base images."
    )


class AIMClusterRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """Cluster-wide defaults for AIM resources."""


class AIMRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """Namespace-scoped overrides for AIM resources, plus the namespace's credentials."""

    service_account_name: str | None = Field(
        default=None,
        description=(
            "ServiceAccountName is the service account used for discovery jobs, cache warmers and any\n"
            "other workloads spawned by the operator on behalf of this runtime config."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None,
        description=(
            "ImagePullSecrets are merged with controller defaults for pods that pull model or runtime images."
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
    def _check_resources(self) -> Self:
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
    def _check_custom(self) -> Self:
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
    def _check_exactly_one(self) -> Self:
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
    replicas: int = Field(default=1, ge=1, description="Replicas is the number of replicas for this service.")
    min_replicas: int | None = Field(
        default=None, ge=1, description="MinReplicas is the minimum number of replicas for autoscaling."
    )
    max_replicas: int | None = Field(
        default=None, ge=1, description="MaxReplicas is the maximum number of replicas for autoscaling."
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
    def _check_targets(self) -> Self:
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

    source_uri: str = Field(
        min_length=1,
        pattern=SOURCE_URI_PATTERN,
        description="SourceURI is the source of the model to be downloaded. This is the only identifier",
    )
    storage_class_name: str | None = Field(
        default=None, description="StorageClassName specifies the storage class for the cache volume"
    )
    size: Quantity | None = Field(default=None, description="Size specifies the size of the cache volume")
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

_IMAGE_COLUMNS = (STATUS, PrinterColumn("Image", ".spec.image"), AGE)
_PROFILE = ".status.profile.metadata"
_TEMPLATE_PROFILE_COLUMNS = (
    PrinterColumn("Engine", f"{_PROFILE}.engine"),
    PrinterColumn("Metric", f"{_PROFILE}.metric"),
    PrinterColumn("Precision", f"{_PROFILE}.precision"),
    PrinterColumn("GPUs/replica", f"{_PROFILE}.gpu_count", type="integer"),
    PrinterColumn("GPU", f"{_PROFILE}.gpu"),
)
_CACHE_BASE_IMAGES = PrinterColumn("CacheBaseImages", ".spec.cacheBaseImages", type="boolean")


def _legacy_crd(
    kind: str,
    scope: Literal["Namespaced", "Cluster"],
    description: str,
    columns: tuple[PrinterColumn, ...],
    short_name: str | None = None,
) -> CRDInfo:
    """CRDInfo of a legacy kind: plural is the lowercased kind plus "s", as kubebuilder made it."""
    return CRDInfo(
        group=GROUP,
        kind=kind,
        plural=f"{kind.lower()}s",
        scope=scope,
        short_names=(short_name,) if short_name else (),
        categories=CATEGORIES,
        printer_columns=columns,
        description=description,
    )


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


class AIMClusterRuntimeConfig(Resource):
    """Cluster-scoped runtime defaults for AIM resources."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMClusterRuntimeConfig",
        "Cluster",
        "AIMClusterRuntimeConfig defines cluster-scoped runtime defaults for AIM resources.",
        (_CACHE_BASE_IMAGES, PrinterColumn("DefaultStorageClass", ".spec.defaultStorageClassName"), AGE),
        short_name="aimcrcfg",
    )
    spec: AIMClusterRuntimeConfigSpec
    status: AIMRuntimeConfigStatus | None = None


class AIMRuntimeConfig(Resource):
    """Namespace-scoped runtime overrides for AIM resources."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMRuntimeConfig",
        "Namespaced",
        "AIMRuntimeConfig defines namespace-scoped runtime overrides for AIM resources.",
        (PrinterColumn("ServiceAccount", ".spec.serviceAccountName"), _CACHE_BASE_IMAGES, AGE),
        short_name="aimrcfg",
    )
    spec: AIMRuntimeConfigSpec
    status: AIMRuntimeConfigStatus | None = None


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


KINDS: tuple[type[Resource], ...] = (
    AIMClusterImage,
    AIMImage,
    AIMClusterModel,
    AIMModel,
    AIMClusterRuntimeConfig,
    AIMRuntimeConfig,
    AIMClusterServiceTemplate,
    AIMServiceTemplate,
    AIMService,
    AIMTemplateCache,
    AIMModelCache,
)
