"""What the legacy kind families of ``aim.silogen.ai`` share.

The group and category names, the CEL rules more than one family checks, the field helpers that
give every legacy kind the same conditions, runtime-config name, pull-secret and download-env
fields, the nested types several kinds embed (GPU selector and requirements, hardware, runtime
parameters, the observed status, the routing settings both runtime configs and services carry) and
the CRD metadata every legacy kind is declared with. They live here so each family module imports
them instead of importing another family.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import Field, ValidationInfo, model_validator

from aimcore.api.crds import aim as current
from aimcore.api.crds.aim import (
    GPU_MODEL_XOR_VRAM_MESSAGE,
    GPU_MODEL_XOR_VRAM_RULE,
    AIMMetric,
    AIMPrecision,
    AIMResolvedReference,
    ParentReference,
)
from aimcore.api.crds.base import (
    Condition,
    CRDInfo,
    K8sModel,
    PrinterColumn,
    cel,
    k8s_config,
)
from aimcore.api.decoding import decoding
from aimcore.api.kinds import GROUP_LEGACY

GROUP = GROUP_LEGACY
CATEGORIES = ("aim", "all")  # the original legacy CRDs were in `aim` and `all`

_CONDITIONS: dict[str, Any] = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}


# ---------------------------------------------------------------------------------------------
# Rules (CEL for the API server, the same check in Python for the services)
# ---------------------------------------------------------------------------------------------

ROUTE_TEMPLATE_RULE = "!(has(self.routeTemplate) && has(self.pathTemplate))"
ROUTE_TEMPLATE_MESSAGE = (
    "routeTemplate and pathTemplate are mutually exclusive (pathTemplate is its later name)"
)


GPU_MODEL_XOR_MODELS_RULE = "!(has(self.model) && has(self.models))"
GPU_MODEL_XOR_MODELS_MESSAGE = "model and models are mutually exclusive"


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
    def _check_model_xor_models(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if self.model is not None and self.models is not None:
            raise ValueError(GPU_MODEL_XOR_MODELS_MESSAGE)
        return self


class AIMHardwareRequirements(current.AIMHardwareRequirements):
    """Compute requirements of a custom model, with the generation-2 GPU requirements."""

    gpu: AIMGpuRequirements | None = Field(
        default=None,
        description="GPU specifies GPU requirements. If not set, no GPUs are requested (CPU-only model).",
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
# Routing (runtime configs and services)
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
    def _check_one_template(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        if self.route_template is not None and self.path_template is not None:
            raise ValueError(ROUTE_TEMPLATE_MESSAGE)
        return self


# ---------------------------------------------------------------------------------------------
# The CRD metadata of a legacy kind
# ---------------------------------------------------------------------------------------------


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
