"""Typed models of the current AIM API, ``aim.eai.amd.com/v1alpha1``.

AMD's AIM Engine operator serves ten kinds in this group (models, model sources, service templates,
services, template and model caches, runtime configs) and users' manifests, kubectl columns and
tooling are written against exactly that API. These pydantic classes mirror its API reference (the
seed) field for field, with its enums, defaults, patterns, bounds, descriptions and CEL rules, so one
set of classes is both the runtime type every service parses an object into (parsing is validating:
the CEL rules that need no ``oldSelf`` are also checked here, because the 1.20 test API server
ignores CEL) and the source the CRD YAML is generated from.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Literal, Self

from pydantic import Field, model_validator

from aimcore.api.crds.base import (
    AGE,
    IMAGE_PATTERN,
    STATUS,
    Condition,
    CRDInfo,
    Duration,
    EnvVar,
    ImageReference,
    JSONValue,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    Quantity,
    QuantityString,
    Resource,
    ResourceRequirements,
    Time,
    cel,
    immutable,
    k8s_config,
)
from aimcore.api.kinds import GROUP_AIM
from aimcore.api.quantities import amount

GROUP = GROUP_AIM
CATEGORIES = ("aim", "all")

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMStatus(enum.StrEnum):
    """AIMStatus is the high-level lifecycle status of an AIM resource (``status.status``).
    Each kind allows a subset of these values; see the per-kind aliases below.
    """

    PENDING = "Pending"
    STARTING = "Starting"
    PROGRESSING = "Progressing"
    READY = "Ready"
    RUNNING = "Running"
    DEGRADED = "Degraded"
    NOT_AVAILABLE = "NotAvailable"
    FAILED = "Failed"


class AIMMetric(enum.StrEnum):
    """AIMMetric enumerates the targeted service characteristic"""

    LATENCY = "latency"
    THROUGHPUT = "throughput"


class AIMPrecision(enum.StrEnum):
    """AIMPrecision enumerates supported numeric precisions"""

    AUTO = "auto"
    FP4 = "fp4"
    FP8 = "fp8"
    FP16 = "fp16"
    FP32 = "fp32"
    BF16 = "bf16"
    INT4 = "int4"
    INT8 = "int8"


class AIMProfileType(enum.StrEnum):
    """AIMProfileType indicates the optimization level of a deployment profile.

    - ``optimized``: AIMProfileTypeOptimized indicates the profile has been fully optimized.
    - ``preview``: AIMProfileTypePreview indicates the profile is in preview/beta state.
    - ``unoptimized``: AIMProfileTypeUnoptimized indicates the profile has not been optimized.
    """

    OPTIMIZED = "optimized"
    PREVIEW = "preview"
    UNOPTIMIZED = "unoptimized"


class AIMCachingMode(enum.StrEnum):
    """AIMCachingMode controls caching behavior for a service.

    - ``Auto``: CachingModeAuto uses cache if it exists, but doesn't create one.
      This is the default mode.
    - ``Always``: CachingModeAlways always uses cache, creating one if it doesn't exist.
    - ``Never``: CachingModeNever never uses cache, even if one exists.
    """

    AUTO = "Auto"
    ALWAYS = "Always"
    NEVER = "Never"


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


class AIMModelSourceType(enum.StrEnum):
    """AIMModelSourceType indicates how a model's artifacts are sourced.

    - ``Image``: AIMModelSourceTypeImage indicates the model is discovered from container image labels.
    - ``Custom``: AIMModelSourceTypeCustom indicates the model uses explicit spec.modelSources.
    """

    IMAGE = "Image"
    CUSTOM = "Custom"


class AIMResolutionScope(enum.StrEnum):
    """AIMResolutionScope describes the scope of a resolved reference.

    - ``Namespace``: AIMResolutionScopeNamespace denotes a namespace-scoped resource.
    - ``Cluster``: AIMResolutionScopeCluster denotes a cluster-scoped resource.
    - ``Merged``: AIMResolutionScopeMerged denotes that both cluster and namespace configs were merged.
    - ``Unknown``: AIMResolutionScopeUnknown denotes that the scope could not be determined.
    """

    NAMESPACE = "Namespace"
    CLUSTER = "Cluster"
    MERGED = "Merged"
    UNKNOWN = "Unknown"


class AIMServiceTemplateScope(enum.StrEnum):
    """AIMServiceTemplateScope is retained for backwards compatibility with existing consumers."""

    NAMESPACE = "Namespace"
    CLUSTER = "Cluster"
    UNKNOWN = "Unknown"


class AIMServiceMetricSourceType(enum.StrEnum):
    """Source type of an autoscaling metric (``AIMServiceMetricsSpec.type``; a plain enum-restricted
    string in the seed)."""

    POD_METRIC = "PodMetric"


class AIMServiceMetricBackend(enum.StrEnum):
    """Metrics backend of a pod metric (``AIMServicePodMetric.backend``; a plain enum-restricted string
    in the seed)."""

    OPENTELEMETRY = "opentelemetry"


class AIMServiceMetricTargetType(enum.StrEnum):
    """How an autoscaling metric target is interpreted (``AIMServiceMetricTarget.type``; a plain
    enum-restricted string in the seed)."""

    VALUE = "Value"
    AVERAGE_VALUE = "AverageValue"
    UTILIZATION = "Utilization"


AIMServiceStatusValue = Literal[
    AIMStatus.PENDING, AIMStatus.STARTING, AIMStatus.RUNNING, AIMStatus.DEGRADED, AIMStatus.FAILED
]
"""``status.status`` values an AIMService may take."""

AIMResourceStatusValue = Literal[
    AIMStatus.PENDING,
    AIMStatus.PROGRESSING,
    AIMStatus.READY,
    AIMStatus.DEGRADED,
    AIMStatus.FAILED,
    AIMStatus.NOT_AVAILABLE,
]
"""``status.status`` values of models, templates, template caches and model caches."""

AIMProfilePrecision = Literal[AIMPrecision.BF16, AIMPrecision.FP16, AIMPrecision.FP8, AIMPrecision.INT8]
"""The narrower precision enum the seed gives for discovered/cached profile metadata."""

# ---------------------------------------------------------------------------------------------
# CEL rules (those without ``oldSelf`` are also enforced by the model validators below)
# ---------------------------------------------------------------------------------------------

SERVICE_MODEL_ONE_OF_RULE = (
    "(has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0) + (has(self.custom) ? 1 : 0) == 1"
)
SERVICE_MODEL_ONE_OF_MESSAGE = "exactly one of name, image, or custom must be specified"
HARDWARE_ONE_OF_RULE = "has(self.gpu) || has(self.cpu)"
HARDWARE_ONE_OF_MESSAGE = "at least one of gpu or cpu must be specified"
GPU_MODEL_XOR_VRAM_RULE = "!(has(self.model) && has(self.minVram))"
GPU_MODEL_XOR_VRAM_MESSAGE = "model and minVram are mutually exclusive"
CUSTOM_MODEL_HARDWARE_RULE = (
    "!has(self.modelSources) || size(self.modelSources) == 0"
    " || (has(self.custom) && has(self.custom.hardware))"
    " || (has(self.customTemplates) && size(self.customTemplates) > 0"
    " && self.customTemplates.all(t, has(t.hardware)))"
)
REPLICA_BOUNDS_RULE = (
    "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas"
)
REPLICA_BOUNDS_MESSAGE = "minReplicas must not be greater than maxReplicas"
OVERRIDE_MIN_VRAM_RULE = "!has(self.gpu) || !has(self.gpu.minVram)"
OVERRIDE_MIN_VRAM_MESSAGE = (
    "gpu.minVram cannot be overridden (the deployer would ignore it): choose the GPU with gpu.model"
)
CUSTOM_MODEL_HARDWARE_MESSAGE = (
    "hardware must be set in custom.hardware or in every customTemplates entry when modelSources is set"
)

_DOWNLOAD_ENV_DESCRIPTION = (
    "Env specifies environment variables to use for authentication when downloading models.\n"
    "These variables are used for authentication with model registries (e.g., HuggingFace tokens)."
)

MODEL_ID_PATTERN = r"^[a-zA-Z0-9_-]+/[a-zA-Z0-9._-]+$"
SOURCE_URI_PATTERN = r"^(hf|s3)://[^ \t\r\n]+$"

# ---------------------------------------------------------------------------------------------
# Shared building blocks
# ---------------------------------------------------------------------------------------------


class RuntimeConfigRef(K8sModel):
    """RuntimeConfigRef names the runtime config a resource uses."""

    runtime_config_name: str | None = Field(
        default=None,
        description=(
            "Name is the name of the runtime config to use for this resource. If a runtime config"
            " with this name exists both\n"
            "as a namespace and a cluster runtime config, the values are merged together, the "
            "namespace config taking priority\n"
            "over the cluster config when there are conflicts. If this field is empty or set to "
            "`default`, the namespace / cluster\n"
            "runtime config with the name `default` is used, if it exists."
        ),
    )


class AIMResolvedReference(K8sModel):
    """AIMResolvedReference captures metadata about a resolved reference."""

    name: str | None = Field(
        default=None, description="Name is the resource name that satisfied the reference."
    )
    namespace: str | None = Field(
        default=None,
        description=(
            "Namespace identifies where the resource was found when namespace-scoped.\n"
            "Empty indicates a cluster-scoped resource."
        ),
    )
    scope: AIMResolutionScope | None = Field(
        default=None,
        description="Scope indicates whether the resolved resource was namespace or cluster scoped.",
    )
    kind: str | None = Field(
        default=None, description="Kind is the fully-qualified kind of the resolved reference, when known."
    )
    uid: str | None = Field(
        default=None, description="UID captures the unique identifier of the resolved reference, when known."
    )


class ParentReference(K8sModel):
    """Gateway API (``gateway.networking.k8s.io/v1``) ParentReference: the Gateway (or other parent)
    an HTTPRoute attaches to. Not part of the seed; modelled after the Gateway API type it names.
    """

    group: str = Field(
        default="gateway.networking.k8s.io",
        max_length=253,
        pattern=r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        description=(
            'Group is the group of the referent.\nWhen unspecified, "gateway.networking.k8s.io" is inferred.'
        ),
    )
    kind: str = Field(
        default="Gateway",
        min_length=1,
        max_length=63,
        pattern=r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$",
        description="Kind is the kind of the referent.",
    )
    namespace: str | None = Field(
        default=None,
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description=(
            "Namespace is the namespace of the referent. When unspecified, this refers\n"
            "to the local namespace of the Route."
        ),
    )
    name: str = Field(min_length=1, max_length=253, description="Name is the name of the referent.")
    section_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        description=(
            "SectionName is the name of a section within the target resource\n"
            "(for a Gateway, a listener name)."
        ),
    )
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Port is the network port this Route targets."
    )


class AIMStorageConfig(K8sModel):
    """AIMStorageConfig configures storage defaults for model caches and PVCs."""

    default_storage_class_name: str | None = Field(
        default=None,
        description=(
            "DefaultStorageClassName specifies the storage class to use for model caches and PVCs\n"
            "when the consuming resource (AIMModelCache, AIMTemplateCache, AIMServiceTemplate) "
            "does not\n"
            "specify a storage class. If this field is empty, the cluster's default storage class"
            " is used."
        ),
    )
    pvc_headroom_percent: int = Field(
        default=10,
        ge=0,
        description=(
            "PVCHeadroomPercent specifies the percentage of extra space to add to PVCs\n"
            "for model storage. This accounts for filesystem overhead and temporary files\n"
            "during model loading. The value represents a percentage (e.g., 10 means 10% extra "
            "space).\n"
            "If not specified, defaults to 10%."
        ),
    )


class AIMRuntimeRoutingConfig(K8sModel):
    """AIMRuntimeRoutingConfig configures HTTP routing defaults for inference services.
    These settings control how Gateway API HTTPRoutes are created and configured.
    """

    enabled: bool | None = Field(
        default=None,
        description=(
            "Enabled controls whether HTTP routing is managed for inference services using this "
            "config.\n"
            "When true, the operator creates HTTPRoute resources for services that reference this"
            " config.\n"
            "When false or unset, routing must be explicitly enabled on each service.\n"
            "This provides a namespace or cluster-wide default that individual services can "
            "override."
        ),
    )
    gateway_ref: ParentReference | None = Field(
        default=None,
        description=(
            "GatewayRef specifies the Gateway API Gateway resource that should receive "
            "HTTPRoutes.\n"
            "This identifies the parent gateway for routing traffic to inference services.\n"
            "The gateway can be in any namespace (cross-namespace references are supported).\n"
            "If routing is enabled but GatewayRef is not specified, service reconciliation will "
            "fail\n"
            "with a validation error."
        ),
    )
    path_template: str | None = Field(
        default=None,
        description=(
            "PathTemplate defines the HTTP path template for routes, evaluated using JSONPath "
            "expressions.\n"
            "The template is rendered against the AIMService object to generate unique paths.\n"
            "Example templates:\n"
            "- `/{.metadata.namespace}/{.metadata.name}` - namespace and service name\n"
            "- `/{.metadata.namespace}/{.metadata.labels['team']}/inference` - with label\n"
            "- `/models/{.spec.aimModelName}` - based on model name\n"
            "The template must:\n"
            "- Use valid JSONPath expressions wrapped in {...}\n"
            "- Reference fields that exist on the service\n"
            "- Produce a path ≤ 200 characters after rendering\n"
            "- Result in valid URL path segments (lowercase, RFC 1123 compliant)\n"
            "If evaluation fails, the service enters Degraded state with PathTemplateInvalid "
            "reason.\n"
            "Individual services can override this template via spec.routing.pathTemplate."
        ),
    )
    request_timeout: Duration | None = Field(
        default=None,
        description=(
            "RequestTimeout defines the HTTP request timeout for routes.\n"
            "This sets the maximum duration for a request to complete before timing out.\n"
            "The timeout applies to the entire request/response cycle.\n"
            "If not specified, no timeout is set on the route.\n"
            "Individual services can override this value via spec.routing.requestTimeout."
        ),
    )
    annotations: dict[str, str] | None = Field(
        default=None,
        description=(
            "Annotations defines default annotations to add to all HTTPRoute resources.\n"
            "Services can add additional annotations or override these via "
            "spec.routingAnnotations.\n"
            "When both are specified, service annotations take precedence for conflicting keys.\n"
            "Common use cases include ingress controller settings, rate limiting, monitoring "
            "labels,\n"
            "and security policies that should apply to all services using this config."
        ),
    )


class AIMServiceRuntimeConfig(K8sModel):
    """AIMServiceRuntimeConfig contains runtime configuration fields that apply to services.
    This struct is shared between AIMService.spec (inlined) and AIMRuntimeConfigCommon,
    allowing services to override these specific runtime settings while inheriting defaults
    from namespace/cluster RuntimeConfigs.
    """

    storage: AIMStorageConfig | None = Field(
        default=None,
        description=(
            "Storage configures storage defaults for this service's PVCs and caches.\n"
            "When set, these values override namespace/cluster runtime config defaults."
        ),
    )
    routing: AIMRuntimeRoutingConfig | None = Field(
        default=None,
        description=(
            "Routing controls HTTP routing configuration for this service.\n"
            "When set, these values override namespace/cluster runtime config defaults."
        ),
    )
    env: list[EnvVar] | None = Field(
        default=None,
        description=(
            "Env specifies environment variables for inference containers.\n"
            "When set on AIMService, these take highest precedence in the merge hierarchy.\n"
            "When set on RuntimeConfig, these provide namespace/cluster-level defaults.\n"
            "Merge order (highest to lowest): Service.Env > RuntimeConfig.Env > Template.Env > "
            "Profile.Env"
        ),
    )


class AIMGpuRequirements(K8sModel):
    """AIMGpuRequirements specifies GPU resource requirements."""

    model_config = k8s_config(cel((GPU_MODEL_XOR_VRAM_RULE, GPU_MODEL_XOR_VRAM_MESSAGE)))

    requests: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Requests is the number of GPUs to set as requests/limits.\n"
            "Set to 0 to target GPU nodes without consuming GPU resources (useful for testing)."
        ),
    )
    model: str | None = Field(
        default=None,
        max_length=64,
        description='Model limits deployment to a specific GPU model.\nExample: "MI300X"',
    )
    min_vram: Quantity | None = Field(
        default=None,
        description=(
            "MinVRAM limits deployment to GPUs having at least this much VRAM.\n"
            "Used for capacity planning when model size is known."
        ),
    )
    resource_name: str = Field(
        default="amd.com/gpu",
        description=(
            "ResourceName is the Kubernetes resource name for GPU resources.\n"
            'Defaults to "amd.com/gpu" if not specified.'
        ),
    )

    @model_validator(mode="after")
    def _check_model_xor_min_vram(self) -> Self:
        if self.model is not None and self.min_vram is not None:
            raise ValueError(GPU_MODEL_XOR_VRAM_MESSAGE)
        return self


class AIMCpuRequirements(K8sModel):
    """AIMCpuRequirements specifies CPU resource requirements."""

    requests: Quantity = Field(
        description="Requests is the number of CPU cores to request. Required and must be > 0."
    )
    limits: Quantity | None = Field(
        default=None, description="Limits is the maximum number of CPU cores to allow."
    )

    @model_validator(mode="after")
    def _check_cores(self) -> Self:
        if amount(self.requests) <= 0:
            raise ValueError(f"requests must be > 0 (is {self.requests!r})")
        if self.limits is not None and amount(self.limits) < amount(self.requests):
            raise ValueError(f"limits {self.limits!r} is less than requests {self.requests!r}")
        return self


class AIMHardwareRequirements(K8sModel):
    """AIMHardwareRequirements specifies compute resource requirements for custom models.
    Used in AIMModelSpec and AIMCustomTemplate to define GPU and CPU needs.
    """

    model_config = k8s_config(cel((HARDWARE_ONE_OF_RULE, HARDWARE_ONE_OF_MESSAGE)))

    gpu: AIMGpuRequirements | None = Field(
        default=None,
        description="GPU specifies GPU requirements. If not set, no GPUs are requested (CPU-only model).",
    )
    cpu: AIMCpuRequirements | None = Field(default=None, description="CPU specifies CPU requirements.")

    @model_validator(mode="after")
    def _check_gpu_or_cpu(self) -> Self:
        if self.gpu is None and self.cpu is None:
            raise ValueError(HARDWARE_ONE_OF_MESSAGE)
        return self


class AIMRuntimeParameters(K8sModel):
    """AIMRuntimeParameters contains the runtime configuration parameters shared
    across templates and services. Fields use pointers to allow optional usage
    in different contexts (required in templates, optional in service overrides).
    """

    metric: AIMMetric | None = Field(
        default=None,
        json_schema_extra=immutable("metric is immutable"),
        description=(
            "Metric selects the optimization goal.\n"
            "- `latency`: prioritize low end\u2011to\u2011end latency\n"
            "- `throughput`: prioritize sustained requests/second"
        ),
    )
    precision: AIMPrecision | None = Field(
        default=None,
        json_schema_extra=immutable("precision is immutable"),
        description="Precision selects the numeric precision used by the runtime.",
    )
    gpu: AIMGpuRequirements | None = Field(
        default=None,
        json_schema_extra=immutable("gpu is immutable"),
        description=(
            "Gpu specifies GPU requirements for each replica.\n"
            "Defines the GPU count and model types required for deployment.\n"
            "When multiple models are specified, the template is ready if any are available,\n"
            "and node affinity ensures pods land on nodes with matching GPUs.\n"
            "This field is immutable after creation."
        ),
    )


class AIMModelSource(K8sModel):
    """AIMModelSource describes a model artifact that must be downloaded for inference.
    Discovery extracts these from the container's configuration to enable caching and validation.
    """

    model_id: str = Field(
        pattern=MODEL_ID_PATTERN,
        description=(
            "ModelID is the canonical identifier in {org}/{name} format.\n"
            "Determines the cache mount path: /workspace/model-cache/{modelId}\n"
            "For HuggingFace sources, this typically mirrors the URI path (e.g., "
            "meta-llama/Llama-3-8B).\n"
            "For S3 sources, users define their own organizational structure."
        ),
    )
    source_uri: str = Field(
        pattern=SOURCE_URI_PATTERN,
        description=(
            "SourceURI is the location from which the model should be downloaded.\n"
            "Supported schemes:\n"
            "- hf://org/model - Hugging Face Hub model\n"
            "- s3://bucket/key - S3-compatible storage"
        ),
    )
    size: Quantity | None = Field(
        default=None,
        description=(
            "Size is the expected storage space required for this model artifact.\n"
            "Used for PVC sizing and capacity planning during cache creation.\n"
            "Required for custom models (discovery does not run for inline sources).\n"
            "For image-based models, this is populated by the discovery job."
        ),
    )
    env: list[EnvVar] | None = Field(
        default=None,
        description=(
            "Env specifies per-source credential overrides.\n"
            "These variables are used for authentication when downloading this specific source.\n"
            "Takes precedence over base-level env for the same variable name."
        ),
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
    def _check_custom_model_hardware(self) -> Self:
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
# AIMClusterModelSource
# ---------------------------------------------------------------------------------------------


class ModelSourceFilter(K8sModel):
    """ModelSourceFilter defines a pattern for discovering images.
    Supports multiple formats:
    - Repository patterns: "org/repo*" - matches repositories with wildcards
    - Repository with tag: "org/repo:1.0.0" - exact tag match
    - Full URI: "ghcr.io/org/repo:1.0.0" - overrides registry and tag
    - Full URI with wildcard: "ghcr.io/org/repo*" - overrides registry, matches pattern
    """

    image: str = Field(
        max_length=512,
        description=(
            "Image pattern with wildcard and full URI support.\n"
            "Supported formats:\n"
            '- Repository pattern: "amdenterpriseai/aim-*"\n'
            '- Repository with tag: "silogen/aim-llama:1.0.0" (overrides versions field)\n'
            '- Full URI: "ghcr.io/silogen/aim-google-gemma-3-1b-it:0.8.1-rc1" (overrides '
            "spec.registry and versions)\n"
            '- Full URI with wildcard: "ghcr.io/silogen/aim-*" (overrides spec.registry)\n'
            "When a full URI is specified (including registry like ghcr.io), only images from "
            "that\n"
            "registry will match. When a tag is included, it takes precedence over the versions "
            "field.\n"
            "Wildcard: * matches any sequence of characters."
        ),
    )
    exclude: list[str] | None = Field(
        default=None,
        description=(
            "Exclude lists specific repository names to skip (exact match on repository name "
            "only, not registry).\n"
            "Useful for excluding base images or experimental versions.\n"
            "Examples:\n"
            '- ["amdenterpriseai/aim-base", "amdenterpriseai/aim-experimental"]\n'
            '- ["silogen/aim-base"] - works with "ghcr.io/silogen/aim-*" (registry is not checked'
            " in exclusion)\n"
            'Note: Exclusions match against repository names (e.g., "silogen/aim-base"), not full'
            " URIs."
        ),
    )
    versions: list[str] | None = Field(
        default=None,
        description=(
            "Versions specifies semantic version constraints for this filter.\n"
            "If specified, overrides the global Versions field.\n"
            "Only tags that parse as valid semver are considered (including prereleases like "
            "0.8.1-rc1).\n"
            'Ignored if the Image field includes an explicit tag (e.g., "repo:1.0.0").\n'
            'Examples: ">=1.0.0", "<2.0.0", "~1.2.0" (patch updates), "^1.0.0" (minor updates)\n'
            "Prerelease versions (e.g., 0.8.1-rc1) are supported and follow semver rules:\n"
            '- 0.8.1-rc1 matches ">=0.8.0" (prerelease is part of version 0.8.1)\n'
            '- Use ">=0.8.1-rc1" to match only that prerelease or higher\n'
            "- Leave empty to match all tags (including prereleases and non-semver tags)"
        ),
    )


class AIMClusterModelSourceSpec(K8sModel):
    """AIMClusterModelSourceSpec defines the desired state of AIMClusterModelSource."""

    registry: str = Field(
        default="docker.io",
        description=(
            "Registry to sync from (e.g., docker.io, ghcr.io, gcr.io).\n"
            "Defaults to docker.io if not specified."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None,
        description=(
            "ImagePullSecrets contains references to secrets for authenticating to private "
            "registries.\n"
            "Secrets must exist in the operator namespace (typically aim-engine-system).\n"
            "Used for both registry catalog listing and image metadata extraction."
        ),
    )
    filters: list[ModelSourceFilter] = Field(
        min_length=1,
        max_length=100,
        description=(
            "Filters define which images to discover and sync.\n"
            "Each filter specifies an image pattern with optional version constraints and "
            "exclusions.\n"
            "Multiple filters are combined with OR logic (any match includes the image)."
        ),
    )
    sync_interval: Duration = Field(
        default="1h",
        description=(
            "SyncInterval defines how often to sync with the registry.\n"
            "Defaults to 1h. Minimum recommended interval is 15m to avoid rate limiting.\n"
            'Format: duration string (e.g., "30m", "1h", "2h30m").'
        ),
    )
    versions: list[str] | None = Field(
        default=None,
        description=(
            "Versions specifies global semantic version constraints applied to all filters.\n"
            "Individual filters can override this with their own version constraints.\n"
            "Constraints use semver syntax: >=1.0.0, <2.0.0, ~1.2.0, ^1.0.0, etc.\n"
            'Non-semver tags (e.g., "latest", "dev") are silently skipped.\n'
            "Version ranges work on all registries (including ghcr.io, gcr.io) when combined with\n"
            "exact repository names (no wildcards). The controller uses the Tags List API to "
            "fetch\n"
            "all tags for the repository and filters them by the semver constraint.\n"
            'Example: registry=ghcr.io, filters=[{image: "silogen/aim-llama"}], '
            'versions=[">=1.0.0"]\n'
            "will fetch all tags from ghcr.io/silogen/aim-llama and include only those >=1.0.0."
        ),
    )
    max_models: int = Field(
        default=100,
        ge=1,
        le=10000,
        description=(
            "MaxModels is the maximum number of AIMClusterModel resources to create from this "
            "source.\n"
            "Once this limit is reached, no new models will be created, even if more matching "
            "images are discovered.\n"
            "Existing models are never deleted.\n"
            "This prevents runaway model creation from overly broad filters."
        ),
    )


class AIMClusterModelSourceStatus(K8sModel):
    """AIMClusterModelSourceStatus defines the observed state of AIMClusterModelSource."""

    status: AIMStatus | None = Field(
        default=None, description="Status represents the overall state of the model source."
    )
    last_sync_time: Time | None = Field(
        default=None,
        description=(
            "LastSyncTime is the timestamp of the last successful registry sync.\n"
            "Updated after each successful sync operation."
        ),
    )
    discovered_models: int | None = Field(
        default=None,
        description=(
            "DiscoveredModels is the count of AIMClusterModel resources managed by this source.\n"
            "Includes both existing and newly created models."
        ),
    )
    available_models: int | None = Field(
        default=None,
        description=(
            "AvailableModels is the total count of images discovered in the registry that match "
            "the filters.\n"
            "This may be higher than DiscoveredModels if maxModels limit was reached."
        ),
    )
    models_limit_reached: bool | None = Field(
        default=None,
        description=(
            "ModelsLimitReached indicates whether the maxModels limit has been reached.\n"
            "When true, no new models will be created even if more matching images are "
            "discovered."
        ),
    )
    conditions: list[Condition] | None = Field(
        default=None,
        description=(
            "Conditions represent the latest available observations of the source's state.\n"
            "Standard conditions: Ready, Syncing, RegistryReachable."
        ),
    )
    observed_generation: int | None = Field(
        default=None,
        description="ObservedGeneration reflects the generation of the most recently observed spec.",
    )


# ---------------------------------------------------------------------------------------------
# AIMServiceTemplate / AIMClusterServiceTemplate
# ---------------------------------------------------------------------------------------------


class AIMServiceTemplateSpecCommon(AIMRuntimeParameters, RuntimeConfigRef):
    """AIMServiceTemplateSpecCommon holds the spec fields shared by AIMServiceTemplate and
    AIMClusterServiceTemplate.
    """

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
    env: list[EnvVar] | None = Field(default=None, description=_DOWNLOAD_ENV_DESCRIPTION)


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


class _ResolutionStatus(K8sModel):
    """Status fields AIMServiceTemplateStatus and AIMServiceStatus share, word for word in the seed."""

    observed_generation: int | None = Field(
        default=None,
        description="ObservedGeneration is the most recent generation observed by the controller.",
    )
    conditions: list[Condition] | None = Field(
        default=None, description="Conditions represent the latest observations of template state."
    )
    resolved_runtime_config: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedRuntimeConfig captures metadata about the runtime config that was resolved.",
    )
    resolved_model: AIMResolvedReference | None = Field(
        default=None, description="ResolvedModel captures metadata about the image that was resolved."
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
# AIMService
# ---------------------------------------------------------------------------------------------


class AIMServiceModelCustom(K8sModel):
    """AIMServiceModelCustom specifies a custom model configuration with explicit base image,
    model sources, and hardware requirements. Used for ad-hoc custom model deployments.
    """

    base_image: ImageReference | None = Field(
        default=None,
        pattern=IMAGE_PATTERN,
        description=(
            "BaseImage is the container image URI for the AIM base image.\n"
            "This will be used as the image for the auto-created AIMModel.\n"
            "Example: `ghcr.io/silogen/aim-base:0.7.0`"
        ),
    )
    model_sources: list[AIMModelSource] = Field(
        min_length=1,
        max_length=1,
        description=(
            "ModelSources specifies the model sources to use.\n"
            "The controller will search for or create an AIMModel with these sources.\n"
            "For custom models, modelSources[].size should be specified (discovery does not run).\n"
            "AIM runtime currently supports only one model source."
        ),
    )
    hardware: AIMHardwareRequirements = Field(
        description=(
            "Hardware specifies the GPU and CPU requirements for this custom model.\n"
            "GPU is optional - if not set, no GPUs are requested (CPU-only model)."
        )
    )


class AIMServiceModel(K8sModel):
    """AIMServiceModel specifies which model to deploy. Exactly one field must be set."""

    model_config = k8s_config(cel((SERVICE_MODEL_ONE_OF_RULE, SERVICE_MODEL_ONE_OF_MESSAGE)))

    name: str | None = Field(
        default=None,
        description=(
            "Name references an existing AIMModel or AIMClusterModel by metadata.name.\n"
            "The controller looks for a namespace-scoped AIMModel first, then falls back to "
            "cluster-scoped AIMClusterModel.\n"
            "Example: `meta-llama-3-8b`"
        ),
    )
    image: str | None = Field(
        default=None,
        pattern=IMAGE_PATTERN,
        description=(
            "Image specifies a container image URI directly.\n"
            "The controller searches for an existing model with this image, or creates one if "
            "none exists.\n"
            "The scope of the created model is controlled by the runtime config's "
            "ModelCreationScope field.\n"
            "Example: `ghcr.io/silogen/llama-3-8b:v1.2.0`"
        ),
    )
    custom: AIMServiceModelCustom | None = Field(
        default=None,
        description=(
            "Custom specifies a custom model configuration with explicit base image,\n"
            "model sources, and hardware requirements. The controller will search for\n"
            "an existing matching AIMModel or auto-create one if not found."
        ),
    )

    @model_validator(mode="after")
    def _check_exactly_one(self) -> Self:
        if sum(v is not None for v in (self.name, self.image, self.custom)) != 1:
            raise ValueError(SERVICE_MODEL_ONE_OF_MESSAGE)
        return self


class AIMServiceTemplateConfig(K8sModel):
    """AIMServiceTemplateConfig contains template selection configuration for AIMService."""

    name: str | None = Field(
        default=None,
        description=(
            "Name is the name of the AIMServiceTemplate or AIMClusterServiceTemplate to use.\n"
            "The template selects the runtime profile and GPU parameters.\n"
            "When not specified, a template will be automatically selected based on the model."
        ),
    )
    allow_unoptimized: bool | None = Field(
        default=None,
        description=(
            "AllowUnoptimized, if true, will allow automatic selection of templates\n"
            "that resolve to an unoptimized profile."
        ),
    )


class AIMServiceCachingConfig(K8sModel):
    """AIMServiceCachingConfig controls caching behavior for a service."""

    mode: AIMCachingMode = Field(
        default=AIMCachingMode.AUTO,
        description=(
            "Mode controls when to use caching.\n"
            "- Auto (default): Use cache if it exists, but don't create one\n"
            "- Always: Always use cache, create if it doesn't exist\n"
            "- Never: Don't use cache even if it exists"
        ),
    )


class AIMServiceOverrides(AIMRuntimeParameters):
    """AIMServiceOverrides allows overriding template parameters at the service level.
    All fields are optional. When specified, they override the corresponding values
    from the referenced AIMServiceTemplate.
    """

    model_config = k8s_config(cel((OVERRIDE_MIN_VRAM_RULE, OVERRIDE_MIN_VRAM_MESSAGE)))

    @model_validator(mode="after")
    def _check_no_min_vram(self) -> Self:
        if self.gpu is not None and self.gpu.min_vram is not None:
            raise ValueError(OVERRIDE_MIN_VRAM_MESSAGE)
        return self


class AIMServicePodMetric(K8sModel):
    """AIMServicePodMetric identifies the pod metric and its backend.
    Supports multiple metrics backends including OpenTelemetry.
    """

    backend: AIMServiceMetricBackend = Field(
        default=AIMServiceMetricBackend.OPENTELEMETRY,
        description=(
            'Backend defines the metrics backend to use.\nIf not specified, defaults to "opentelemetry".'
        ),
    )
    server_address: str | None = Field(
        default=None,
        description=(
            "ServerAddress specifies the address of the metrics backend server.\n"
            'If not specified, defaults to "keda-otel-scaler.keda.svc:4317" for OpenTelemetry '
            "backend."
        ),
    )
    metric_names: list[str] | None = Field(
        default=None,
        description=(
            "MetricNames specifies which metrics to collect from pods and send to ServerAddress.\n"
            'Example: ["vllm:num_requests_running"]'
        ),
    )
    query: str | None = Field(
        default=None,
        description=(
            "Query specifies the query to run to retrieve metrics from the backend.\n"
            "The query syntax depends on the backend being used.\n"
            'Example: "vllm:num_requests_running" for OpenTelemetry.'
        ),
    )
    operation_over_time: str = Field(
        default="last_one",
        description=(
            "OperationOverTime specifies the operation to aggregate metrics over time.\n"
            'Valid values: "last_one", "avg", "max", "min", "rate", "count"\n'
            'Default: "last_one"'
        ),
    )


class AIMServiceMetricTarget(K8sModel):
    """AIMServiceMetricTarget defines the target value for a metric.
    Specifies how the metric value should be interpreted and what target to maintain.
    """

    type: AIMServiceMetricTargetType | None = Field(
        default=None,
        description=(
            "Type specifies how to interpret the metric value.\n"
            '"Value": absolute value target (use Value field)\n'
            '"AverageValue": average value across all pods (use AverageValue field)\n'
            '"Utilization": percentage utilization for resource metrics (use AverageUtilization '
            "field)"
        ),
    )
    value: QuantityString | None = Field(
        default=None,
        description=(
            "Value is the target value of the metric (as a quantity).\n"
            'Used when Type is "Value".\n'
            'Example: "1" for 1 request, "100m" for 100 millicores'
        ),
    )
    average_value: QuantityString | None = Field(
        default=None,
        description=(
            "AverageValue is the target value of the average of the metric across all relevant "
            "pods (as a quantity).\n"
            'Used when Type is "AverageValue".\n'
            'Example: "100m" for 100 millicores per pod'
        ),
    )
    average_utilization: int | None = Field(
        default=None,
        ge=1,
        description=(
            "AverageUtilization is the target value of the average of the resource metric across "
            "all relevant pods,\n"
            "represented as a percentage of the requested value of the resource for the pods.\n"
            'Used when Type is "Utilization". Only valid for Resource metric source type.\n'
            "Example: 80 for 80% utilization"
        ),
    )


class AIMServicePodMetricSource(K8sModel):
    """AIMServicePodMetricSource defines pod-level metrics configuration.
    Specifies the metric identification and target values for pod-based autoscaling.
    """

    metric: AIMServicePodMetric | None = Field(
        default=None,
        description=(
            "Metric contains the metric identification and backend configuration.\n"
            "Defines which metrics to collect and how to query them."
        ),
    )
    target: AIMServiceMetricTarget | None = Field(
        default=None,
        description=(
            "Target specifies the target value for the metric.\n"
            "The autoscaler will scale to maintain this target value."
        ),
    )


class AIMServiceMetricsSpec(K8sModel):
    """AIMServiceMetricsSpec defines a single metric for autoscaling.
    Specifies the metric source type and configuration.
    """

    type: AIMServiceMetricSourceType | None = Field(
        default=None,
        description=(
            'Type is the type of metric source.\nValid values: "PodMetric" (per-pod custom metrics).'
        ),
    )
    pod_metric: AIMServicePodMetricSource | None = Field(
        default=None,
        alias="podmetric",
        description=(
            "PodMetric refers to a metric describing each pod in the current scale target.\n"
            'Used when Type is "PodMetric". Supports backends like OpenTelemetry for custom '
            "metrics."
        ),
    )


class AIMServiceAutoScaling(K8sModel):
    """AIMServiceAutoScaling configures KEDA-based autoscaling with custom metrics.
    This enables automatic scaling based on metrics collected from OpenTelemetry.
    """

    metrics: list[AIMServiceMetricsSpec] | None = Field(
        default=None,
        description=(
            "Metrics is a list of metrics to be used for autoscaling.\n"
            "Each metric defines a source (PodMetric) and target values."
        ),
    )


def check_replica_bounds(low: int | None, high: int | None) -> None:
    """The Python side of :data:`REPLICA_BOUNDS_RULE` (the deployer used to drop such a maximum)."""
    if low is not None and high is not None and low > high:
        raise ValueError(f"{REPLICA_BOUNDS_MESSAGE} (minReplicas {low}, maxReplicas {high})")


class AIMServiceSpec(AIMServiceRuntimeConfig, RuntimeConfigRef):
    """AIMServiceSpec defines the desired state of AIMService.

    Binds a canonical model to an AIMServiceTemplate and configures replicas,
    caching behavior, and optional overrides. The template governs the base
    runtime selection knobs, while the overrides field allows service-specific
    customization.
    """

    model_config = k8s_config(cel((REPLICA_BOUNDS_RULE, REPLICA_BOUNDS_MESSAGE)))

    model: AIMServiceModel = Field(
        json_schema_extra=immutable("model is immutable"),
        description=(
            "Model specifies which model to deploy using one of the available reference methods.\n"
            "Use `ref` to reference an existing AIMModel/AIMClusterModel by name, or use `image`\n"
            "to specify a container image URI directly (which will auto-create a model if "
            "needed)."
        ),
    )
    template: AIMServiceTemplateConfig | None = Field(
        default=None,
        json_schema_extra=immutable("template is immutable"),
        description=(
            "Template contains template selection and configuration.\n"
            "Use Template.Name to specify an explicit template, or omit to auto-select."
        ),
    )
    caching: AIMServiceCachingConfig | None = Field(
        default=None,
        json_schema_extra=immutable("caching is immutable"),
        description=(
            "Caching controls caching behavior for this service.\n"
            "When nil, defaults to Auto mode (use cache if available, don't create)."
        ),
    )
    cache_model: bool | None = Field(
        default=None,
        description=(
            "DEPRECATED: Use Caching.Mode instead. This field will be removed in a future "
            "version.\n"
            "For backward compatibility, if Caching is not set, this field is used.\n"
            "Tri-state logic: nil=Auto, true=Always, false=Never"
        ),
    )
    replicas: int = Field(
        default=1,
        ge=1,
        description=(
            "Replicas specifies the number of replicas for this service.\n"
            "When not specified, defaults to 1 replica.\n"
            "This value overrides any replica settings from the template.\n"
            "For autoscaling, use MinReplicas and MaxReplicas instead."
        ),
    )
    min_replicas: int | None = Field(
        default=None,
        ge=1,
        description=(
            "MinReplicas specifies the minimum number of replicas for autoscaling.\n"
            "Defaults to 1. Scale to zero is not supported.\n"
            "When specified with MaxReplicas, enables autoscaling for the service."
        ),
    )
    max_replicas: int | None = Field(
        default=None,
        ge=1,
        description=(
            "MaxReplicas specifies the maximum number of replicas for autoscaling.\n"
            "Required when MinReplicas is set or when AutoScaling configuration is provided."
        ),
    )
    auto_scaling: AIMServiceAutoScaling | None = Field(
        default=None,
        description=(
            "AutoScaling configures advanced autoscaling behavior using KEDA.\n"
            "Supports custom metrics from OpenTelemetry backend.\n"
            "When specified, MinReplicas and MaxReplicas should also be set."
        ),
    )
    resources: ResourceRequirements | None = Field(
        default=None,
        description=(
            "Resources overrides the container resource requirements for this service.\n"
            "When specified, these values take precedence over the template and image defaults."
        ),
    )
    overrides: AIMServiceOverrides | None = Field(
        default=None,
        description=(
            "Overrides allows overriding specific template parameters for this service.\n"
            "When specified, these values take precedence over the template values."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None, description="ImagePullSecrets references secrets for pulling AIM container images."
    )
    service_account_name: str | None = Field(
        default=None,
        description=(
            "ServiceAccountName specifies the Kubernetes service account to use for the inference"
            " workload.\n"
            "This service account is used by the deployed inference pods.\n"
            "If empty, the default service account for the namespace is used."
        ),
    )

    @model_validator(mode="after")
    def _check_replica_bounds(self) -> Self:
        check_replica_bounds(self.min_replicas, self.max_replicas)
        return self


class AIMServiceRoutingStatus(K8sModel):
    """AIMServiceRoutingStatus captures observed routing details."""

    path: str | None = Field(
        default=None,
        description=(
            "Path is the HTTP path prefix used when routing is enabled.\nExample: `/tenant/svc-uuid`"
        ),
    )


class AIMServiceCacheStatus(K8sModel):
    """AIMServiceCacheStatus captures cache-related status for an AIMService."""

    template_cache_ref: AIMResolvedReference | None = Field(
        default=None, description="TemplateCacheRef references the TemplateCache being used, if any."
    )
    retry_attempts: int | None = Field(
        default=None,
        description=(
            "RetryAttempts tracks how many times this service has attempted to retry a failed "
            "cache.\n"
            "Each service gets exactly one retry attempt. When a TemplateCache enters Failed "
            "state,\n"
            "this counter is incremented from 0 to 1 after deleting failed ModelCaches.\n"
            "If the retry fails (cache enters Failed again with attempts == 1), the service "
            "degrades."
        ),
    )


class AIMServiceStatus(_ResolutionStatus):
    """AIMServiceStatus defines the observed state of AIMService."""

    status: AIMServiceStatusValue = Field(
        default=AIMStatus.PENDING,
        description=(
            "Status represents the current high\u2011level status of the service lifecycle.\n"
            "Values: `Pending`, `Starting`, `Running`, `Degraded`, `Failed`."
        ),
    )
    routing: AIMServiceRoutingStatus | None = Field(
        default=None,
        description="Routing surfaces information about the configured HTTP routing, when enabled.",
    )
    resolved_template: AIMResolvedReference | None = Field(
        default=None,
        description="ResolvedTemplate captures metadata about the template that satisfied the reference.",
    )
    cache: AIMServiceCacheStatus | None = Field(
        default=None, description="Cache captures cache-related status for this service."
    )


# ---------------------------------------------------------------------------------------------
# AIMTemplateCache / AIMModelCache
# ---------------------------------------------------------------------------------------------


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


class AIMModelCacheSpec(RuntimeConfigRef):
    """AIMModelCacheSpec defines the desired state of AIMModelCache"""

    source_uri: str = Field(
        min_length=1,
        pattern=SOURCE_URI_PATTERN,
        json_schema_extra=immutable("sourceUri is immutable"),
        description=(
            "SourceURI specifies the source location of the model to download.\n"
            "Supported protocols: hf:// (HuggingFace) and s3:// (S3-compatible storage).\n"
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
    size: Quantity | None = Field(default=None, description="Size specifies the size of the cache volume")
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


# ---------------------------------------------------------------------------------------------
# AIMRuntimeConfig / AIMClusterRuntimeConfig
# ---------------------------------------------------------------------------------------------


class AIMModelCreationScope(enum.StrEnum):
    """Scope of the model a service auto-creates from spec.model.image."""

    NAMESPACE = "Namespace"
    CLUSTER = "Cluster"


class AIMModelConfig(K8sModel):
    """AIMModelConfig controls model creation and discovery defaults of a runtime config."""

    creation_scope: AIMModelCreationScope | None = Field(
        default=None,
        description=(
            "CreationScope says whether models a service auto-creates from spec.model.image are\n"
            "namespaced AIMModels (Namespace, the default) or AIMClusterModels (Cluster).\n"
            "An extension of this project: the concept guide documents the field, the API\n"
            "reference omits it."
        ),
    )

    auto_discovery: bool | None = Field(
        default=None,
        description=(
            "AutoDiscovery controls whether models run discovery by default.\n"
            "When true, models run discovery jobs to extract metadata and auto-create templates.\n"
            "When false, discovery is skipped. Discovery failures are non-fatal and reported via "
            "conditions."
        ),
    )


class AIMRuntimeConfigLabelPropagationSpec(K8sModel):
    """AIMRuntimeConfigLabelPropagationSpec controls which labels of a parent AIM resource
    are copied to the child resources it creates.
    """

    enabled: bool = Field(
        default=False,
        description=(
            "Enabled, if true, allows propagating parent labels to all child resources it creates"
            " directly\n"
            "Only label keys that match the ones in Match are propagated."
        ),
    )
    match: list[str] | None = Field(
        default=None,
        description=(
            "Match is a list of label keys that will be propagated to any child resources "
            "created.\n"
            "Wildcards are supported, so for example `org.my/my-key-*` would match any label with"
            " that prefix."
        ),
    )


class AIMRuntimeConfigCommon(AIMServiceRuntimeConfig):
    """AIMRuntimeConfigCommon captures configuration fields shared across cluster and namespace scopes.
    These settings apply to both AIMRuntimeConfig (namespace-scoped) and AIMClusterRuntimeConfig
    (cluster-scoped).
    It embeds AIMServiceRuntimeConfig which contains fields that can also be overridden at the service
    level.
    """

    model: AIMModelConfig | None = Field(
        default=None,
        description=(
            "Model controls model creation and discovery defaults.\n"
            "This field only applies to RuntimeConfig/ClusterRuntimeConfig and is not available "
            "for services."
        ),
    )
    label_propagation: AIMRuntimeConfigLabelPropagationSpec | None = Field(
        default=None,
        description=(
            "LabelPropagation controls how labels from parent AIM resources are propagated to "
            "child resources.\n"
            "When enabled, labels matching the specified patterns are automatically copied from "
            "parent resources\n"
            "(e.g., AIMService, AIMTemplateCache) to their child resources (e.g., Deployments, "
            "Services, PVCs).\n"
            "This is useful for propagating organizational metadata like cost centers, team "
            "identifiers,\n"
            "or compliance labels through the resource hierarchy."
        ),
    )
    default_storage_class_name: str | None = Field(
        default=None,
        description=(
            "DEPRECATED: Use Storage.DefaultStorageClassName instead. This field will be removed "
            "in a future version.\n"
            "For backward compatibility, if this field is set and Storage.DefaultStorageClassName"
            " is not set,\n"
            "the value will be automatically migrated."
        ),
    )
    pvc_headroom_percent: int | None = Field(
        default=None,
        ge=0,
        description=(
            "DEPRECATED: Use Storage.PVCHeadroomPercent instead. This field will be removed in a "
            "future version.\n"
            "For backward compatibility, if this field is set and Storage.PVCHeadroomPercent is "
            "not set,\n"
            "the value will be automatically migrated."
        ),
    )


class AIMRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """AIMRuntimeConfigSpec defines namespace-scoped overrides for AIM resources."""


class AIMClusterRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """AIMClusterRuntimeConfigSpec defines cluster-wide defaults for AIM resources."""


class AIMRuntimeConfigStatus(K8sModel):
    """AIMRuntimeConfigStatus records the resolved config reference surfaced to consumers."""

    observed_generation: int | None = Field(
        default=None, description="ObservedGeneration is the last reconciled generation."
    )
    conditions: list[Condition] | None = Field(
        default=None, description="Conditions communicate reconciliation progress."
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
_TEMPLATE_COLUMNS = (
    PrinterColumn("Model", ".spec.modelName"),
    STATUS,
    PrinterColumn("GPU", ".status.resolvedHardware.gpu.model"),
    PrinterColumn("GPUs", ".status.resolvedHardware.gpu.requests", type="integer"),
    PrinterColumn("Metric", ".status.profile.metadata.metric"),
    PrinterColumn("Precision", ".status.profile.metadata.precision"),
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


class AIMClusterModelSource(Resource):
    """AIMClusterModelSource automatically discovers and syncs AI model images from container registries."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMClusterModelSource",
        plural="aimclustermodelsources",
        scope="Cluster",
        short_names=("aimclsrc",),
        categories=CATEGORIES,
        printer_columns=(
            STATUS,
            PrinterColumn("Models", ".status.discoveredModels", type="integer"),
            PrinterColumn("LastSync", ".status.lastSyncTime", type="date"),
            AGE,
        ),
        description=(
            "AIMClusterModelSource automatically discovers and syncs AI model images from "
            "container registries."
        ),
    )

    spec: AIMClusterModelSourceSpec
    status: AIMClusterModelSourceStatus | None = None


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


class AIMService(Resource):
    """AIMService manages a KServe-based AIM inference service for the selected model and template."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMService",
        plural="aimservices",
        scope="Namespaced",
        short_names=("aimsvc",),
        categories=CATEGORIES,
        printer_columns=(
            STATUS,
            PrinterColumn("Model", ".status.resolvedModel.name"),
            PrinterColumn("Template", ".status.resolvedTemplate.name"),
            PrinterColumn("Replicas", ".spec.replicas", type="integer"),
            AGE,
        ),
        description=(
            "AIMService manages a KServe-based AIM inference service for the selected model and "
            "template.\n"
            "Note: KServe uses {name}-{namespace} format which must not exceed 63 characters.\n"
            "This constraint is validated at runtime since CEL cannot access metadata.namespace."
        ),
    )

    spec: AIMServiceSpec
    status: AIMServiceStatus | None = None


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


class AIMModelCache(Resource):
    """AIMModelCache is the Schema for the modelcaches API"""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMModelCache",
        plural="aimmodelcaches",
        scope="Namespaced",
        short_names=("aimmc",),
        categories=CATEGORIES,
        printer_columns=(
            STATUS,
            PrinterColumn("Mode", ".status.mode"),
            PrinterColumn("Model Size", ".spec.size"),
            PrinterColumn("Progress", ".status.progress.displayPercentage"),
            PrinterColumn("Source", ".spec.sourceUri", priority=1),
            PrinterColumn("PVC", ".status.persistentVolumeClaim", priority=1),
            AGE,
        ),
        description="AIMModelCache is the Schema for the modelcaches API",
    )

    spec: AIMModelCacheSpec
    status: AIMModelCacheStatus | None = None


class AIMRuntimeConfig(Resource):
    """AIMRuntimeConfig is the Schema for namespace-scoped AIM runtime configurations."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMRuntimeConfig",
        plural="aimruntimeconfigs",
        scope="Namespaced",
        short_names=("aimrc",),
        categories=CATEGORIES,
        description="AIMRuntimeConfig is the Schema for namespace-scoped AIM runtime configurations.",
    )

    spec: AIMRuntimeConfigSpec = Field(default_factory=AIMRuntimeConfigSpec)
    status: AIMRuntimeConfigStatus | None = None


class AIMClusterRuntimeConfig(Resource):
    """A cluster-scoped runtime configuration for AIM services, models, and templates."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMClusterRuntimeConfig",
        plural="aimclusterruntimeconfigs",
        scope="Cluster",
        short_names=("aimclrc",),
        categories=CATEGORIES,
        description=(
            "AIMClusterRuntimeConfig is a cluster-scoped runtime configuration for AIM services, "
            "models, and templates.\n"
            "\n"
            "Cluster-scoped runtime configs provide platform-wide defaults that apply to all "
            "namespaces,\n"
            "making them ideal for organization-level policies such as storage classes, discovery"
            " behavior,\n"
            "model creation scope, and routing configuration.\n"
            "\n"
            "When both cluster and namespace runtime configs exist with the same name, the "
            "configs are merged, and\n"
            "the namespace-scoped AIMRuntimeConfig takes precedence for any field that is set in "
            "both."
        ),
    )

    spec: AIMClusterRuntimeConfigSpec = Field(default_factory=AIMClusterRuntimeConfigSpec)
    status: AIMRuntimeConfigStatus | None = None


KINDS: tuple[type[Resource], ...] = (
    AIMModel,
    AIMClusterModel,
    AIMClusterModelSource,
    AIMServiceTemplate,
    AIMClusterServiceTemplate,
    AIMService,
    AIMTemplateCache,
    AIMModelCache,
    AIMRuntimeConfig,
    AIMClusterRuntimeConfig,
)
