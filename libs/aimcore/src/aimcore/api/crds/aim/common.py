"""What the kind families of ``aim.eai.amd.com`` share.

The group and category names, the status, metric, precision and scope enums, the CEL rules and
patterns more than one family checks, and the nested types several kinds embed (the runtime-config
reference, resolved references, storage and routing settings, hardware requirements, runtime
parameters, model sources, the resolution status every resolving kind reports). They live here so
each family module imports them instead of importing another family.
"""

from __future__ import annotations

import enum
from typing import Annotated, Literal, Self

from pydantic import Field, ValidationInfo, model_validator

from aimcore.api.crds.base import (
    Condition,
    Duration,
    EnvVar,
    GatewayHostname,
    K8sModel,
    Quantity,
    cel,
    immutable,
    k8s_config,
)
from aimcore.api.decoding import decoding
from aimcore.api.kinds import GROUP_AIM
from aimcore.api.quantities import amount
from aimcore.api.sourcerules import ModelId, SourceUri

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


AIMResourceStatusValue = Literal[
    AIMStatus.PENDING,
    AIMStatus.PROGRESSING,
    AIMStatus.READY,
    AIMStatus.DEGRADED,
    AIMStatus.FAILED,
    AIMStatus.NOT_AVAILABLE,
]
"""``status.status`` values of models, templates, template caches and model caches."""


# ---------------------------------------------------------------------------------------------
# CEL rules (those without ``oldSelf`` are also enforced by the model validators below)
# ---------------------------------------------------------------------------------------------

HARDWARE_ONE_OF_RULE = "has(self.gpu) || has(self.cpu)"
HARDWARE_ONE_OF_MESSAGE = "at least one of gpu or cpu must be specified"
GPU_MODEL_XOR_VRAM_RULE = "!(has(self.model) && has(self.minVram))"
GPU_MODEL_XOR_VRAM_MESSAGE = "model and minVram are mutually exclusive"


_DOWNLOAD_ENV_DESCRIPTION = (
    "Env specifies environment variables to use for authentication when downloading models.\n"
    "These variables are used for authentication with model registries (e.g., HuggingFace tokens)."
)

MODEL_ID_PATTERN = r"^[a-zA-Z0-9_-]+/[a-zA-Z0-9._-]+$"
SOURCE_URI_PATTERN = r"^(hf|s3|oci|pvc)://[^ \t\r\n]+$"
"""The seed's ``^(hf|s3)://…`` widened by ``oci://`` (issue 30): every value it accepts still is."""


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


GlobPattern = Annotated[str, Field(min_length=1, max_length=1024)]
"""One download-filter pattern (:class:`AIMDownloadFilter`)."""


class AIMDownloadFilter(K8sModel):
    """AIMDownloadFilter selects the files of a model source that are downloaded (the released
    AIM Engine's, 0.2.2). Patterns are globs on repository-relative paths, matched as Python's
    fnmatch does (`*` also matches `/`)."""

    include: list[GlobPattern] | None = Field(
        default=None,
        max_length=256,
        description=(
            "Include lists glob patterns; when set, only files matching at least one are downloaded.\n"
            'Example: ["*.safetensors", "*.json", "tokenizer.model"]'
        ),
    )
    exclude: list[GlobPattern] | None = Field(
        default=None,
        max_length=256,
        description=(
            "Exclude lists glob patterns; files matching any are not downloaded (applied after "
            'Include).\nExample: ["*/*"] leaves out every file in a subfolder (original/, onnx/...).'
        ),
    )


class AIMRuntimeStorageConfig(AIMStorageConfig):
    """AIMRuntimeStorageConfig is a runtime config's storage defaults: a service's, and the download
    filter of the model caches that resolve the config."""

    download_filter: AIMDownloadFilter | None = Field(
        default=None,
        description=(
            "DownloadFilter is the default download filter of model caches that set none.\n"
            'When unset, hf:// sources leave out files in subfolders (exclude ["*/*"]); an empty '
            "filter ({}) downloads every file."
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
    hostnames: list[GatewayHostname] | None = Field(
        default=None,
        max_length=16,
        description=(
            "Hostnames are the HTTPRoute's hostnames (Gateway API Hostname: a DNS name, or a "
            "wildcard `*.example.com`).\n"
            "A service's list replaces the runtime config's. Without any, a parent Gateway with "
            "more than one listener\n"
            "gets no route (RouteHostnameRequired): the operator does not create an all-hosts "
            "route on a shared gateway.\n"
            "Added in the released original's 0.2.5."
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
    def _check_model_xor_min_vram(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
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
    def _check_cores(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
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
    def _check_gpu_or_cpu(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
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

    model_id: ModelId = Field(
        pattern=MODEL_ID_PATTERN,
        description=(
            "ModelID is the canonical identifier in {org}/{name} format.\n"
            "Determines the cache mount path: /workspace/model-cache/{modelId}\n"
            "For HuggingFace sources, this typically mirrors the URI path (e.g., "
            "meta-llama/Llama-3-8B).\n"
            "For S3 sources, users define their own organizational structure."
        ),
    )
    source_uri: SourceUri = Field(
        pattern=SOURCE_URI_PATTERN,
        description=(
            "SourceURI is the location from which the model should be downloaded.\n"
            "Supported schemes:\n"
            "- hf://org/model - Hugging Face Hub model\n"
            "- s3://bucket/key - S3-compatible storage\n"
            "- oci://registry/repository:tag - OCI artifact (this operator's extension)\n"
            "- pvc://claim/path - a volume already filled, imported in place (this operator's extension)"
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
