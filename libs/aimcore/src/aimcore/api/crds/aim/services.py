"""``AIMService``: the kind users write to serve a model.

Its spec (the model by name, image or custom sources, the template, caching, overrides, replicas and
autoscaling) and status (resolved model and template, routing, cache) are what the deployer reads
and the status service writes; the CEL rules only a service checks live here with it.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Literal, Self

from pydantic import Field, ValidationInfo, model_validator
from pydantic.config import JsonDict

from aimcore.api.crds.aim.common import (
    CATEGORIES,
    GROUP,
    AIMHardwareRequirements,
    AIMModelSource,
    AIMResolvedReference,
    AIMRuntimeParameters,
    AIMServiceRuntimeConfig,
    AIMStatus,
    RuntimeConfigRef,
    _ResolutionStatus,
)
from aimcore.api.crds.base import (
    AGE,
    IMAGE_PATTERN,
    STATUS,
    CRDInfo,
    EnvVar,
    ImageReference,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    QuantityString,
    Resource,
    ResourceRequirements,
    cel,
    immutable,
    k8s_config,
)
from aimcore.api.decoding import decoding
from aimcore.api.hardware import HARDWARE_GPU_MESSAGE, HARDWARE_GPU_RULE
from aimcore.api.hardware import conflicts as hardware_conflicts

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class AIMCachingMode(enum.StrEnum):
    """AIMCachingMode controls caching behavior for a service.

    - ``Auto``: CachingModeAuto uses cache if it exists, but doesn't create one.
      This is the default mode.
    - ``Always``: CachingModeAlways always uses cache, creating one if it doesn't exist.
    - ``Never``: CachingModeNever never uses cache, even if one exists.
    - ``Shared``: a template cache shared by every service of the template in the namespace,
      created when missing, owned by none (the released original's default).
    - ``Dedicated``: a template cache of this service only, owned by it (deleted with it).

    The released original maps ``Always``/``Auto`` to ``Shared`` and ``Never`` to ``Dedicated``;
    this operator does so under ``AIM_BEHAVIOUR=released`` (docs/caching.md#caching-modes).
    """

    AUTO = "Auto"
    ALWAYS = "Always"
    NEVER = "Never"
    SHARED = "Shared"
    DEDICATED = "Dedicated"


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


# ---------------------------------------------------------------------------------------------
# CEL rules (those without ``oldSelf`` are also enforced by the model validators below)
# ---------------------------------------------------------------------------------------------

SERVICE_MODEL_ONE_OF_RULE = (
    "(has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0) + (has(self.custom) ? 1 : 0) == 1"
)
SERVICE_MODEL_ONE_OF_MESSAGE = "exactly one of name, image, or custom must be specified"


REPLICA_BOUNDS_RULE = (
    "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas"
)
REPLICA_BOUNDS_MESSAGE = "minReplicas must not be greater than maxReplicas"
MAX_REPLICAS = 150_000
"""The most replicas (and min/maxReplicas) a service may ask for: Kubernetes' documented limit of pods
in one cluster ("Considerations for large clusters": no more than 150,000 pods in total), so a
larger count can never run. Not part of the seed (which sets no maximum): before, 2^31-1 and 2^53
replicas deployed an InferenceService asking for them, and 2^53 does not fit the int32 KServe, the
HPA and KEDA keep replica counts in. The generated schema says ``maximum`` (refused at apply time,
naming the field) and the model checks it too (``InvalidSpec`` for an object stored before)."""
OVERRIDE_MIN_VRAM_RULE = "!has(self.gpu) || !has(self.gpu.minVram)"
OVERRIDE_MIN_VRAM_MESSAGE = (
    "gpu.minVram cannot be overridden (the deployer would ignore it): choose the GPU with gpu.model"
)
OVERRIDE_HARDWARE_MIN_VRAM_RULE = (
    "!has(self.hardware) || !has(self.hardware.gpu) || !has(self.hardware.gpu.minVram)"
)
OVERRIDE_HARDWARE_MIN_VRAM_MESSAGE = (
    "hardware.gpu.minVram cannot be overridden (the deployer would ignore it): choose the GPU with "
    "hardware.gpu.model"
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
    def _check_exactly_one(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
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
            "- Never: Don't use cache even if it exists\n"
            "- Shared: a template cache shared by the namespace's services, owned by none\n"
            "- Dedicated: a template cache of this service only, owned by it"
        ),
    )
    env: list[EnvVar] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
        description=(
            "Env specifies environment variables for the model download only (the released AIM "
            "Engine's 0.2.6): they reach the template cache this service makes, its model caches "
            "and their download Jobs, never the inference containers (a token the predictor must "
            "not see). Above the template's caching env, below the service's own env."
        ),
    )


class AIMServiceOverrides(AIMRuntimeParameters):
    """AIMServiceOverrides allows overriding template parameters at the service level.
    All fields are optional. When specified, they override the corresponding values
    from the referenced AIMServiceTemplate.
    """

    model_config = k8s_config(
        cel(
            (OVERRIDE_MIN_VRAM_RULE, OVERRIDE_MIN_VRAM_MESSAGE),
            (OVERRIDE_HARDWARE_MIN_VRAM_RULE, OVERRIDE_HARDWARE_MIN_VRAM_MESSAGE),
            (HARDWARE_GPU_RULE, HARDWARE_GPU_MESSAGE),
        )
    )

    hardware: AIMHardwareRequirements | None = Field(
        default=None,
        json_schema_extra=immutable("hardware is immutable"),
        description=(
            "Hardware overrides the GPU and CPU requirements for each replica, as the released AIM "
            "Engine API (v0.2) spells them.\n"
            "hardware.gpu is equivalent to gpu (when both are set they must be equal); hardware.cpu "
            "is the CPU of the template, below the service's resources.\n"
            "This field is immutable after creation."
        ),
    )

    @model_validator(mode="after")
    def _check_no_min_vram(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if self.gpu is not None and self.gpu.min_vram is not None:
            raise ValueError(OVERRIDE_MIN_VRAM_MESSAGE)
        hardware_gpu = self.hardware.gpu if self.hardware is not None else None
        if hardware_gpu is not None and hardware_gpu.min_vram is not None:
            raise ValueError(OVERRIDE_HARDWARE_MIN_VRAM_MESSAGE)
        found = hardware_conflicts(self.wire())
        if found:
            raise ValueError("; ".join(found))
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

    @model_validator(mode="after")
    def _check_target_matches_type(self, info: ValidationInfo) -> Self:
        """The autoscaler reads the one field its ``type`` names: that field missing leaves no
        target, and another field set is ignored without a word (both used to deploy)."""
        if decoding(info):
            return self
        if self.type is None:
            return self
        wanted = _TARGET_FIELDS[self.type]
        wire = self.wire()
        if wire.get(wanted) is None:
            raise ValueError(f"type {self.type.value} reads {wanted}, which is not set: set {wanted}")
        others = sorted(f for f in _TARGET_FIELDS.values() if f != wanted and wire.get(f) is not None)
        if others:
            raise ValueError(
                f"type {self.type.value} reads only {wanted}; {', '.join(others)} would be ignored: "
                f"remove {', '.join(others)} or change type"
            )
        return self


_TARGET_FIELDS = {
    AIMServiceMetricTargetType.VALUE: "value",
    AIMServiceMetricTargetType.AVERAGE_VALUE: "averageValue",
    AIMServiceMetricTargetType.UTILIZATION: "averageUtilization",
}


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


AUTOSCALING_SET_RULE = "has(self.metrics) || has(self.pollingInterval) || has(self.cooldownPeriod)"
AUTOSCALING_SET_MESSAGE = "autoScaling must set at least one of metrics, pollingInterval or cooldownPeriod"
METRIC_QUERY_RULE = (
    "!has(self.metrics) || self.metrics.all(m, has(m.podmetric) && has(m.podmetric.metric) && "
    "(has(m.podmetric.metric.query) || has(m.podmetric.metric.metricNames)))"
)
METRIC_QUERY_MESSAGE = "each autoScaling metric needs podmetric.metric.query or podmetric.metric.metricNames"


class AIMServiceScalingSpec(AIMServiceAutoScaling):
    """The current group's autoscaling: the seed's metrics plus how often KEDA polls and how long it
    waits before scaling in (the released original's 0.2.5, with scale to zero). The legacy group
    keeps the seed's :class:`AIMServiceAutoScaling`. The rules are the release's CEL; the local
    API server (Kubernetes 1.20) has no CEL, so the deployer also refuses them (``InvalidSpec``)."""

    model_config = k8s_config(
        cel((AUTOSCALING_SET_RULE, AUTOSCALING_SET_MESSAGE), (METRIC_QUERY_RULE, METRIC_QUERY_MESSAGE))
    )

    polling_interval: int | None = Field(
        default=None,
        ge=1,
        description=(
            "PollingInterval is how often, in seconds, KEDA checks the triggers.\n"
            "With minReplicas 0 and nothing set, 5."
        ),
    )
    cooldown_period: int | None = Field(
        default=None,
        ge=0,
        description=(
            "CooldownPeriod is how long, in seconds, KEDA waits after the last active trigger\n"
            "before it scales to zero. With minReplicas 0 and nothing set, 300 plus 5 per GiB\n"
            "of the predictor's memory (300 to 1200)."
        ),
    )

    @model_validator(mode="after")
    def _check_set(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if self.metrics is None and self.polling_interval is None and self.cooldown_period is None:
            raise ValueError(AUTOSCALING_SET_MESSAGE)
        for m in self.metrics or []:
            metric = m.pod_metric.metric if m.pod_metric is not None else None
            if metric is None or not (metric.query or metric.metric_names):
                raise ValueError(METRIC_QUERY_MESSAGE)
        return self


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
        le=MAX_REPLICAS,
        description=(
            "Replicas specifies the number of replicas for this service.\n"
            "When not specified, defaults to 1 replica.\n"
            "This value overrides any replica settings from the template.\n"
            "For autoscaling, use MinReplicas and MaxReplicas instead."
        ),
    )
    min_replicas: int | None = Field(
        default=None,
        ge=0,
        le=MAX_REPLICAS,
        description=(
            "MinReplicas specifies the minimum number of replicas for autoscaling.\n"
            "Defaults to 1. 0 lets KEDA scale the service to zero when idle (released in 0.2.5).\n"
            "Scale to zero needs routing: the gateway's request counter is what wakes the service.\n"
            "When specified with MaxReplicas, enables autoscaling for the service."
        ),
    )
    max_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description=(
            "MaxReplicas specifies the maximum number of replicas for autoscaling.\n"
            "Required when MinReplicas is set or when AutoScaling configuration is provided."
        ),
    )
    auto_scaling: AIMServiceScalingSpec | None = Field(
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
    priority_class_name: str | None = Field(
        default=None,
        description=(
            "PriorityClassName is the Kubernetes PriorityClass of the inference pods (the "
            "predictor only;\n"
            "the operator's download and discovery Jobs keep the default priority).\n"
            "The PriorityClass must exist: pods naming one that does not are refused by the API "
            "server,\n"
            "and the service's InferenceServicePodsReady condition says so.\n"
            "Added in the released original's 0.2.2."
        ),
    )

    @model_validator(mode="after")
    def _check_replica_bounds(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
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


_INT32: JsonDict = {"format": "int32"}  # OpenAPI format of an integer (pydantic emits none)


class AIMServiceRuntimeStatus(K8sModel):
    """AIMServiceRuntimeStatus captures runtime status including replica counts from HPA."""

    current_replicas: int | None = Field(
        default=None,
        description="CurrentReplicas is the current number of replicas as reported by the HPA.",
        json_schema_extra=_INT32,
    )
    desired_replicas: int | None = Field(
        default=None,
        description="DesiredReplicas is the desired number of replicas as determined by the HPA.",
        json_schema_extra=_INT32,
    )
    min_replicas: int | None = Field(
        default=None,
        description="MinReplicas is the minimum number of replicas configured for autoscaling.",
        json_schema_extra=_INT32,
    )
    max_replicas: int | None = Field(
        default=None,
        description="MaxReplicas is the maximum number of replicas configured for autoscaling.",
        json_schema_extra=_INT32,
    )
    replicas: str | None = Field(
        default=None,
        description=(
            "Replicas is a formatted display string for kubectl output.\n"
            'Shows "current" for fixed replicas or "current/desired (min-max)" for autoscaling.'
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
    runtime: AIMServiceRuntimeStatus | None = Field(
        default=None, description="Runtime captures runtime status including replica counts."
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------


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
            PrinterColumn("Replicas", ".status.runtime.replicas"),
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
