"""Typed models of LLMKube's ``inference.llmkube.dev/v1alpha1`` ``Model`` kind.

LLMKube (github.com/defilantech/LLMKube) is a Go operator whose ``Model`` describes one set of
model weights (a GGUF file, an MLX directory, a Hugging Face repository...), where they come from,
the hardware they want, and, in ``status``, what the controller found (phase, size, cache key, parsed
GGUF header, upstream-drift fingerprints). We serve the same kind so manifests written for LLMKube
work unchanged against our operator; these classes are both the runtime type of such an object and
the source the CRD YAML is generated from.

The schema mirrors the seed (an LLMKube ``Model`` of roughly v0.8.18 - v0.9.5) field for field:
names, enums, defaults, patterns, bounds and descriptions. Quantity-like values (``memory``,
``memoryBudget``, ``cpu``) are plain strings there, not ``resource.Quantity``, and stay strings
here. ``status.conditions`` uses metav1.Condition from :mod:`aimcore.api.crds.base`.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Self

from pydantic import Field, ValidationInfo, model_validator

from aimcore.api.crds.base import (
    AGE,
    Condition,
    CRDInfo,
    K8sModel,
    PrinterColumn,
    Resource,
    Time,
    cel,
    k8s_config,
)
from aimcore.api.decoding import decoding

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class ModelFormat(enum.StrEnum):
    """Model file format."""

    GGUF = "gguf"
    MLX = "mlx"
    SAFETENSORS = "safetensors"
    PYTORCH = "pytorch"
    CUSTOM = "custom"


class Accelerator(enum.StrEnum):
    """Type of hardware acceleration."""

    CPU = "cpu"
    METAL = "metal"
    CUDA = "cuda"
    ROCM = "rocm"
    INTEL = "intel"
    VULKAN = "vulkan"


class GPUVendor(enum.StrEnum):
    """GPU vendor preference."""

    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"


class GPURuntime(enum.StrEnum):
    """GPU compute backend (only meaningful for AMD with llama.cpp)."""

    VULKAN = "vulkan"
    ROCM = "rocm"


class ShardingStrategy(enum.StrEnum):
    """How a model is split across several GPUs."""

    LAYER = "layer"
    TENSOR = "tensor"
    ROW = "row"
    PIPELINE = "pipeline"
    NONE = "none"


class RefreshPolicy(enum.StrEnum):
    """Whether a cached model file is re-fetched when the upstream source changes."""

    IF_NOT_PRESENT = "IfNotPresent"
    ON_CHANGE = "OnChange"


class ModelPhase(enum.StrEnum):
    """Lifecycle phase of a Model."""

    PENDING = "Pending"
    DOWNLOADING = "Downloading"
    COPYING = "Copying"
    READY = "Ready"
    FAILED = "Failed"


# ---------------------------------------------------------------------------------------------
# Spec
# ---------------------------------------------------------------------------------------------

SOURCE_PATTERN = r"^(https?|file|pvc|hf|oci)://.*|^/[^\s]+$|^[a-zA-Z0-9][\w\-\.\/]+$"
SHA256_PATTERN = r"^[a-fA-F0-9]{64}$"
RESOURCE_NAME_PATTERN = r"^[a-z0-9.\-]+/[a-z0-9._\-]+$"


def _fmt(fmt: str) -> dict[str, Any]:
    """OpenAPI ``format`` of an integer field (pydantic emits none for ``int``)."""
    return {"format": fmt}


CLAIM_ONE_OF_RULE = (
    "self.size() == 0 || self.all(c, (has(c.resourceClaimName) && !has(c.resourceClaimTemplateName))"
    " || (!has(c.resourceClaimName) && has(c.resourceClaimTemplateName)))"
)
CLAIM_ONE_OF_MESSAGE = "each claim must have exactly one of resourceClaimName or resourceClaimTemplateName"
CLAIMS_XOR_RESOURCE_NAME_RULE = (
    "!(has(self.resourceName) && has(self.resourceClaims) && self.resourceClaims.size() > 0)"
)
CLAIMS_XOR_RESOURCE_NAME_MESSAGE = (
    "resourceClaims and resourceName are mutually exclusive: use one or the other for GPU scheduling"
)


class PodResourceClaim(K8sModel):
    """PodResourceClaim references exactly one ResourceClaim, either directly
    or by naming a ResourceClaimTemplate which is then turned into a ResourceClaim
    for the pod.

    It adds a name to it that uniquely identifies the ResourceClaim inside the Pod.
    Containers that need access to the ResourceClaim reference it with this name.

    When the DRAWorkloadResourceClaims feature gate is enabled and this Pod
    belongs to a PodGroup, a PodResourceClaim is matched to a
    PodGroupResourceClaim if all of their fields are equal (Name,
    ResourceClaimName, and ResourceClaimTemplateName). A matched claim references
    a single ResourceClaim shared across all Pods in the PodGroup, reserved for
    the PodGroup in ResourceClaimStatus.ReservedFor rather than for individual
    Pods.
    """

    name: str = Field(
        description=(
            "Name uniquely identifies this resource claim inside the pod.\nThis must be a DNS_LABEL."
        )
    )
    resource_claim_name: str | None = Field(
        default=None,
        description=(
            "ResourceClaimName is the name of a ResourceClaim object in the same\n"
            "namespace as this pod.\n"
            "\n"
            "Exactly one of ResourceClaimName and ResourceClaimTemplateName must\n"
            "be set."
        ),
    )
    resource_claim_template_name: str | None = Field(
        default=None,
        description=(
            "ResourceClaimTemplateName is the name of a ResourceClaimTemplate\n"
            "object in the same namespace as this pod.\n"
            "\n"
            "The template will be used to create a new ResourceClaim, which will\n"
            "be bound to this pod. When this pod is deleted, the ResourceClaim\n"
            "will also be deleted. The pod name and resource name, along with a\n"
            "generated component, will be used to form a unique name for the\n"
            "ResourceClaim, which will be recorded in pod.status.resourceClaimStatuses.\n"
            "\n"
            "When the DRAWorkloadResourceClaims feature gate is enabled and the pod\n"
            "belongs to a PodGroup that defines a PodGroupResourceClaim with the same\n"
            "Name and ResourceClaimTemplateName, this PodResourceClaim resolves to the\n"
            "ResourceClaim generated for the PodGroup. All pods in the group that\n"
            "define an equivalent PodResourceClaim matching the\n"
            "PodGroupResourceClaim's Name and ResourceClaimTemplateName share the same\n"
            "generated ResourceClaim. ResourceClaims generated for a PodGroup are\n"
            "owned by the PodGroup and their lifecycles are tied to the PodGroup\n"
            "instead of any individual pod.\n"
            "\n"
            "This field is immutable and no changes will be made to the\n"
            "corresponding ResourceClaim by the control plane after creating the\n"
            "ResourceClaim.\n"
            "\n"
            "Exactly one of ResourceClaimName and ResourceClaimTemplateName must\n"
            "be set."
        ),
    )


class GPUSharding(K8sModel):
    """How to shard the model across multiple GPUs."""

    layer_split: list[str] | None = Field(
        default=None,
        description=(
            "LayerSplit defines custom layer splits per GPU\n"
            "Example: [0-15, 16-31] for 2-GPU split of 32-layer model\n"
            "If empty, auto-calculate even split"
        ),
    )
    strategy: ShardingStrategy = Field(
        default=ShardingStrategy.LAYER,
        description=(
            "Strategy defines the sharding approach for multi-GPU model execution.\n"
            '- "layer" (default): shard by transformer layers. llama.cpp --split-mode layer.\n'
            '- "tensor" (alias: "row"): true tensor parallelism. llama.cpp --split-mode row.\n'
            "  Splits each tensor operation across GPUs rather than assigning whole layers\n"
            "  to each. Performance varies by workload; typically better on compute-bound ops.\n"
            '- "none": disable multi-GPU sharding (single GPU). llama.cpp --split-mode none.\n'
            '- "pipeline": accepted for forward compatibility but currently falls back to\n'
            '  "layer" with a reconciler warning; llama.cpp has no pipeline split-mode.'
        ),
    )


class GPUSpec(K8sModel):
    """GPU device requirements of a Model."""

    model_config = k8s_config(cel((CLAIMS_XOR_RESOURCE_NAME_RULE, CLAIMS_XOR_RESOURCE_NAME_MESSAGE)))

    count: int | None = Field(
        default=None,
        ge=0,
        le=8,
        json_schema_extra=_fmt("int32"),
        description=(
            "Count specifies the number of GPUs required\n"
            "Supports multi-GPU for model sharding (future feature)"
        ),
    )
    enabled: bool | None = Field(
        default=None, description="Enabled indicates whether GPU acceleration is enabled"
    )
    layers: int | None = Field(
        default=None,
        ge=-1,
        json_schema_extra=_fmt("int32"),
        description=(
            "Layers specifies layer offloading configuration for multi-GPU\n"
            "Format: number of layers to offload to GPU (e.g., 32 for full offload on 7B model)\n"
            "-1 means auto-detect optimal layer split"
        ),
    )
    memory: str | None = Field(
        default=None,
        description='Memory specifies minimum GPU memory required per GPU (e.g., "8Gi", "16Gi")',
    )
    resource_claims: list[PodResourceClaim] | None = Field(
        default=None,
        max_length=16,
        json_schema_extra=cel((CLAIM_ONE_OF_RULE, CLAIM_ONE_OF_MESSAGE)),
        description=(
            "ResourceClaims defines DRA (Dynamic Resource Allocation) claims for GPU devices.\n"
            "Uses resource.k8s.io/v1 PodResourceClaim format. Each claim must have exactly\n"
            "one of resourceClaimName or resourceClaimTemplateName set.\n"
            "Mutually exclusive with resourceName."
        ),
    )
    resource_name: str | None = Field(
        default=None,
        pattern=RESOURCE_NAME_PATTERN,
        description=(
            "ResourceName overrides the extended resource the operator requests for\n"
            "this Model's pods. Defaults are derived from Vendor:\n"
            "  nvidia -> nvidia.com/gpu\n"
            "  amd    -> amd.com/gpu\n"
            "  intel  -> gpu.intel.com/i915\n"
            "Set this for non-default device plugins (e.g. squat/generic-device-plugin\n"
            "advertising `squat.ai/dri-render`, NVIDIA MIG slices). When set, this\n"
            "value also drives the GPU toleration unless TolerationKey is provided\n"
            "explicitly."
        ),
    )
    runtime: GPURuntime | None = Field(
        default=None,
        description=(
            "Runtime selects the GPU compute backend the operator schedules for this\n"
            "Model, independent of the Vendor field. It exists so `vendor: amd` is not\n"
            'overloaded to mean both "ROCm" and "Vulkan".\n'
            "\n"
            "For the llama.cpp inference backend with `vendor: amd`:\n"
            '  - "vulkan": schedule LLMKube\'s Vulkan llama.cpp image and request the\n'
            "    generic-device-plugin resource `devic.es/dri-render` (unless\n"
            "    ResourceName overrides it). The plugin injects /dev/dri; the non-root\n"
            "    container still needs the host render group, supplied via\n"
            "    InferenceService.spec.podSecurityContext.supplementalGroups.\n"
            '  - "rocm": the historical behavior (amd -> amd.com/gpu, stock image).\n'
            '  - "" (empty): back-compatible, identical to "rocm".\n'
            "\n"
            "Ignored for non-AMD vendors and non-llama.cpp backends."
        ),
    )
    sharding: GPUSharding | None = Field(
        default=None,
        description=(
            "Sharding defines how to shard the model across multiple GPUs\nOnly applicable when Count > 1"
        ),
    )
    toleration_key: str | None = Field(
        default=None,
        pattern=RESOURCE_NAME_PATTERN,
        description=(
            "TolerationKey overrides the taint key the operator tolerates when\n"
            "scheduling GPU pods. Defaults to ResourceName (or the vendor default\n"
            "resource name when ResourceName is unset), so in most cases this can\n"
            "be left empty."
        ),
    )
    vendor: GPUVendor = Field(
        default=GPUVendor.NVIDIA,
        description=(
            "Vendor specifies GPU vendor preference (nvidia, amd, intel)\n"
            "Future-proof for multi-vendor support"
        ),
    )

    @model_validator(mode="after")
    def _check_claims(self, info: ValidationInfo) -> Self:
        if decoding(info):
            return self
        claims = self.resource_claims
        if claims and any(
            (c.resource_claim_name is None) == (c.resource_claim_template_name is None) for c in claims
        ):
            raise ValueError(CLAIM_ONE_OF_MESSAGE)
        if self.resource_name is not None and claims:
            raise ValueError(CLAIMS_XOR_RESOURCE_NAME_MESSAGE)
        return self


class ModelHardware(K8sModel):
    """Hardware acceleration preferences of a Model."""

    accelerator: Accelerator = Field(
        default=Accelerator.CPU,
        description=(
            "Accelerator specifies the type of hardware acceleration.\n"
            '"vulkan" covers AMD and Intel GPUs using the Vulkan runtime\n'
            "(gpu.vendor: amd/intel + gpu.runtime: vulkan). When set to\n"
            '"vulkan" the readiness-check path uses devic.es/dri-render as\n'
            "the GPU resource name instead of amd.com/gpu or nvidia.com/gpu."
        ),
    )
    gpu: GPUSpec | None = Field(default=None, description="GPU specifies GPU device requirements")
    memory_budget: str | None = Field(
        default=None,
        description=(
            "MemoryBudget is an absolute memory limit for the model process\n"
            '(e.g., "24Gi", "8192Mi"). When set, it takes precedence over\n'
            "MemoryFraction and the agent-level --memory-fraction flag.\n"
            "Parsed via resource.ParseQuantity()."
        ),
    )
    memory_fraction: float | None = Field(
        default=None,
        description=(
            "MemoryFraction is the fraction of total system memory to budget for\n"
            "this model's inference process (0.0\u20131.0). Takes precedence over the\n"
            "agent-level --memory-fraction flag but not MemoryBudget."
        ),
    )


class ModelResources(K8sModel):
    """CPU and memory for running the model (LLMKube's own type, not core/v1 ResourceRequirements)."""

    cpu: str | None = Field(default=None, description='CPU specifies CPU requirements (e.g., "2" or "2000m")')
    memory: str | None = Field(default=None, description='Memory specifies memory requirements (e.g., "4Gi")')


class ModelSpec(K8sModel):
    """Desired state of a Model."""

    files: list[str] | None = Field(
        default=None,
        description=(
            "Files lists model weight artifacts to stage from Source. Entries are\n"
            "repo-relative for repository sources. The first entry is the primary model\n"
            "file passed to the runtime."
        ),
    )
    format: ModelFormat = Field(
        default=ModelFormat.GGUF,
        description=(
            "Format specifies the model file format.\n"
            '"gguf" is used with the llama-server runtime; "mlx" is used with the oMLX runtime;\n'
            '"safetensors", "pytorch", and "custom" are used with the generic runtime.'
        ),
    )
    hardware: ModelHardware | None = Field(
        default=None, description="Hardware specifies hardware acceleration preferences"
    )
    mmproj: str | None = Field(
        default=None,
        alias="mmproj",
        description=(
            "Mmproj is an optional multimodal projector file to stage from Source and\n"
            "pass to runtimes that support projector arguments."
        ),
    )
    quantization: str | None = Field(
        default=None,
        description="Quantization describes the quantization level (e.g., Q4_0, Q5_K_M, F16)",
    )
    refresh_policy: RefreshPolicy = Field(
        default=RefreshPolicy.IF_NOT_PRESENT,
        description=(
            "RefreshPolicy controls whether a cached model file is re-fetched when the\n"
            "upstream source changes.\n"
            "\n"
            '- "IfNotPresent" (default): download only if the cached file is missing.\n'
            "  Upstream changes are still detected and surfaced via the SourceDrifted\n"
            "  condition, but the cached file is never re-fetched on its own. This\n"
            "  preserves the historical behavior so an operator upgrade triggers no\n"
            "  surprise re-pulls.\n"
            '- "OnChange": re-download when the upstream bytes differ from what was\n'
            "  cached (HTTP ETag/Content-Length for remote sources, file size/mtime for\n"
            "  local sources). The re-download overwrites the file in the existing cache\n"
            "  directory; the cache key is unchanged."
        ),
    )
    resources: ModelResources | None = Field(
        default=None, description="Resources defines resource requirements for running the model"
    )
    sha256: str | None = Field(
        default=None,
        alias="sha256",
        pattern=SHA256_PATTERN,
        description=(
            "SHA256 is the expected SHA256 hash of the model file for integrity verification.\n"
            "When set, the controller verifies the downloaded/copied file matches this hash."
        ),
    )
    source: str = Field(
        pattern=SOURCE_PATTERN,
        description=(
            "Source defines where to obtain the model.\n"
            "For GGUF models: URL or path to a .gguf file.\n"
            "For MLX models: local directory path containing the model (config.json, weights).\n"
            "Supported schemes: http://, https://, file://, pvc://, or absolute paths.\n"
            "Examples:\n"
            "  - https://huggingface.co/org/repo/resolve/main/model.gguf\n"
            "  - file:///mnt/models/model.gguf\n"
            "  - /mnt/models/model.gguf (air-gapped deployments)\n"
            "  - pvc://my-models-pvc/path/to/model.gguf (pre-staged on a PersistentVolumeClaim)\n"
            "  - /mnt/models/Llama-3.2-3B-Instruct-4bit (MLX model directory)\n"
            "\n"
            "file:// caveat for hybrid topologies: the controller pod must be\n"
            "able to read the path. In Mac kind / k3s / GKE deployments where\n"
            "the metal-agent runs on the host and the controller runs inside a\n"
            "container, /Users/... and other host paths are invisible to the\n"
            "controller and will fail to fetch. The controller marks the Model\n"
            "Failed and backs off to a 5-minute requeue rather than retrying\n"
            "tightly (#405). Workaround: pre-stage on a pvc://, or use the\n"
            "equivalent https://huggingface.co/.../<filename>.gguf URL which\n"
            "the runtime/init container resolves at deploy time."
        ),
    )


# ---------------------------------------------------------------------------------------------
# Status
# ---------------------------------------------------------------------------------------------


class GGUFMetadata(K8sModel):
    """Metadata extracted from a parsed GGUF file header."""

    architecture: str | None = Field(
        default=None,
        description='Architecture is the model architecture (e.g., "llama", "mistral", "phi")',
    )
    context_length: int | None = Field(
        default=None,
        json_schema_extra=_fmt("int64"),
        description="ContextLength is the maximum context length (tokens)",
    )
    embedding_size: int | None = Field(
        default=None,
        json_schema_extra=_fmt("int64"),
        description="EmbeddingSize is the embedding dimension size",
    )
    file_version: int | None = Field(
        default=None,
        json_schema_extra=_fmt("int32"),
        description="FileVersion is the GGUF file format version",
    )
    head_count: int | None = Field(
        default=None,
        json_schema_extra=_fmt("int64"),
        description="HeadCount is the number of attention heads",
    )
    layer_count: int | None = Field(
        default=None,
        json_schema_extra=_fmt("int64"),
        description="LayerCount is the number of transformer layers/blocks",
    )
    license: str | None = Field(
        default=None,
        description="License is the license identifier extracted from the GGUF file metadata",
    )
    model_name: str | None = Field(
        default=None, description="ModelName is the model name as stored in the GGUF file"
    )
    quantization: str | None = Field(
        default=None,
        description='Quantization is the quantization type (e.g., "Q4_K_M", "Q5_K_M")',
    )
    tensor_count: int | None = Field(
        default=None,
        json_schema_extra=_fmt("int64"),
        description="TensorCount is the number of tensors in the model",
    )


class ModelStatus(K8sModel):
    """Observed state of a Model."""

    accelerator_ready: bool | None = Field(
        default=None,
        description="AcceleratorReady indicates if hardware acceleration is configured and ready",
    )
    cache_key: str | None = Field(
        default=None,
        description=(
            "CacheKey is the SHA256 hash prefix of the source URL used for cache storage\n"
            "Models with the same source URL share the same cache entry"
        ),
    )
    conditions: list[Condition] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map"},
        description=(
            "conditions represent the current state of the Model resource.\n"
            "Each condition has a unique type and reflects the status of a specific aspect of the resource.\n"
            "\n"
            "Standard condition types include:\n"
            '- "Available": the model is downloaded and ready for use\n'
            '- "Progressing": the model is being downloaded or processed\n'
            '- "Degraded": the model download or setup failed\n'
            '- "SourceDrifted": the upstream source bytes differ from the cached copy\n'
            "\n"
            "The status of each condition is one of True, False, or Unknown."
        ),
    )
    gguf: GGUFMetadata | None = Field(
        default=None, description="GGUF contains metadata extracted from the GGUF file header"
    )
    last_revalidated: Time | None = Field(
        default=None,
        description=(
            "LastRevalidated is the timestamp of the last upstream revalidation check.\n"
            "Revalidation is cadence-gated so the controller does not issue a HEAD on\n"
            "every reconcile."
        ),
    )
    last_updated: Time | None = Field(
        default=None, description="LastUpdated is the timestamp of the last status update"
    )
    path: str | None = Field(
        default=None, description="Path represents the local path where the model is stored"
    )
    phase: ModelPhase | None = Field(
        default=None,
        description=(
            "Phase represents the current lifecycle phase of the model.\n"
            "Possible values: Pending, Downloading, Copying, Ready, Failed."
        ),
    )
    sha256: str | None = Field(
        default=None,
        alias="sha256",
        description=(
            "SHA256 is the computed SHA256 hash of the model file.\n"
            "Populated after download/copy for integrity tracking."
        ),
    )
    size: str | None = Field(
        default=None, description="Size represents the size of the downloaded model file"
    )
    source_content_length: int | None = Field(
        default=None,
        json_schema_extra=_fmt("int64"),
        description=(
            "SourceContentLength is the upstream size recorded at the last revalidation.\n"
            "For http/https sources it is the Content-Length reported by a HEAD request;\n"
            "for local sources it is the file size on disk. Used together with\n"
            "SourceETag (or mtime for local sources) to detect upstream changes."
        ),
    )
    source_etag: str | None = Field(
        default=None,
        alias="sourceETag",
        description=(
            "SourceETag is the HTTP ETag recorded for the upstream source at the last\n"
            "revalidation. Used to detect upstream changes for http/https sources\n"
            "(HuggingFace serves the blob SHA as the ETag, so a moved branch is caught)."
        ),
    )
    staged_files: list[str] | None = Field(
        default=None,
        description=(
            "StagedFiles lists the repo-relative paths staged in the model cache.\n"
            "Populated when spec.files or spec.mmproj are set."
        ),
    )


# ---------------------------------------------------------------------------------------------
# Top-level kind
# ---------------------------------------------------------------------------------------------


class Model(Resource):
    """An LLMKube Model: where a model's weights come from and what hardware it wants."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group="inference.llmkube.dev",
        kind="Model",
        plural="models",
        scope="Namespaced",
        short_names=("mdl",),
        printer_columns=(
            PrinterColumn("Phase", ".status.phase"),
            PrinterColumn("Size", ".status.size"),
            PrinterColumn("Accelerator", ".spec.hardware.accelerator"),
            PrinterColumn("Arch", ".status.gguf.architecture", priority=1),
            AGE,
        ),
        description="Model is the Schema for the models API",
    )

    spec: ModelSpec = Field(description="spec defines the desired state of Model")
    status: ModelStatus | None = Field(default=None, description="status defines the observed state of Model")


KINDS: tuple[type[Resource], ...] = (Model,)
