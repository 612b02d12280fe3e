"""LLMKube Model hardware: spec validation, whether and how many GPUs are wanted, the extended resource
name (vendor/runtime/override/DRA rules) and the acceleratorReady check against Nodes."""

from __future__ import annotations

from typing import Any

import pytest

from aim_cache.llmkube.hardware import (
    ACCELERATOR_UNAVAILABLE,
    AMD_GPU,
    DRI_RENDER,
    INTEL_GPU,
    INVALID_HARDWARE,
    NVIDIA_GPU,
    accelerator_ready,
    resource_name,
    validate,
)
from aimcore.api.crds.llmkube import Model
from aimcore.api.crds.validation import decode
from aimcore.api.kinds import GROUP_LLMKUBE, LLMKUBE_MODEL
from aimcore.domain.families.llmkube import LLMKubeModel


def hw(accel: str | None = None, **gpu: Any) -> dict[str, Any]:
    """A Model spec with ``hardware.accelerator`` (omitted when None) and ``hardware.gpu`` (when given)."""
    hardware: dict[str, Any] = {}
    if accel is not None:
        hardware["accelerator"] = accel
    if gpu:
        hardware["gpu"] = gpu
    return {"source": "https://example.com/m.gguf", "hardware": hardware}


def _obj(spec: dict[str, Any]) -> dict[str, Any]:
    body = {"source": "https://example.com/m.gguf", **spec}
    return {
        "apiVersion": f"{GROUP_LLMKUBE}/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "m"},
        "spec": body,
    }


def model(spec: dict[str, Any]) -> LLMKubeModel:
    """The Model with ``spec`` as the runtime gives it to the reconciler: parsed by its schema (a
    spec the schema refuses is the runtime's ``InvalidSpec`` and never reaches these rules)."""
    obj = _obj(spec)
    return LLMKubeModel(LLMKUBE_MODEL, obj, Model.model_validate(obj))


def node(
    name: str,
    allocatable: dict[str, str] | None = None,
    capacity: dict[str, str] | None = None,
    *,
    unschedulable: bool | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if allocatable is not None:
        status["allocatable"] = allocatable
    if capacity is not None:
        status["capacity"] = capacity
    obj: dict[str, Any] = {"metadata": {"name": name}, "status": status}
    if unschedulable is not None:
        obj["spec"] = {"unschedulable": unschedulable}
    return obj


NO_HARDWARE: dict[str, Any] = {"source": "https://example.com/m.gguf"}
CLAIM = {"name": "gpu", "resourceClaimName": "gpu-claim"}
TEMPLATE_CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}


def test_reason_constants() -> None:
    assert INVALID_HARDWARE == "InvalidHardware"
    assert ACCELERATOR_UNAVAILABLE == "AcceleratorUnavailable"


# --- accelerator / gpu_wanted / gpus_wanted -------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "accel", "wanted", "count"),
    [
        (NO_HARDWARE, "cpu", False, 0),  # defaults: no hardware at all is cpu
        ({"hardware": None}, "cpu", False, 0),
        (hw(), "cpu", False, 0),
        (hw("cpu"), "cpu", False, 0),
        (hw("metal"), "metal", False, 0),  # Mac host agent, outside the cluster
        (hw("metal", enabled=True, count=2), "metal", False, 0),
        (hw("cpu", enabled=True, count=2), "cpu", False, 0),  # contradiction: validate reports it
        (hw(enabled=True), "cpu", False, 0),  # accelerator defaults to cpu
        (hw("cuda"), "cuda", True, 1),
        (hw("rocm"), "rocm", True, 1),
        (hw("intel"), "intel", True, 1),
        (hw("vulkan"), "vulkan", True, 1),
        (hw("cuda", count=0), "cuda", True, 1),  # 0 means 1
        (hw("cuda", enabled=True, count=0), "cuda", True, 1),
        (hw("cuda", count=1), "cuda", True, 1),
        (hw("cuda", count=4), "cuda", True, 4),
        (hw("cuda", enabled=False, count=2), "cuda", True, 2),  # the accelerator decides
    ],
)
def test_gpu_wanted(spec: dict[str, Any], accel: str, wanted: bool, count: int) -> None:
    read = model(spec)
    assert read.accelerator == accel
    assert read.gpu_wanted is wanted
    assert read.gpus_wanted == count


# --- resource_name ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # no GPU
        (NO_HARDWARE, None),
        (hw("cpu", vendor="nvidia"), None),
        (hw("metal", enabled=True), None),
        (hw("cpu", resourceName="squat.ai/dri-render"), None),  # an override does not make a GPU
        # cuda implies nvidia, whatever the vendor says
        (hw("cuda"), NVIDIA_GPU),
        (hw("cuda", vendor="nvidia"), NVIDIA_GPU),
        (hw("cuda", vendor="amd", runtime="vulkan"), NVIDIA_GPU),
        (hw("cuda", vendor="intel"), NVIDIA_GPU),
        # rocm implies amd (also over the CRD-defaulted vendor nvidia)
        (hw("rocm"), AMD_GPU),
        (hw("rocm", vendor="nvidia"), AMD_GPU),
        (hw("rocm", vendor="amd"), AMD_GPU),
        (hw("rocm", vendor="amd", runtime="rocm"), DRI_RENDER),
        (hw("rocm", vendor="amd", runtime="vulkan"), DRI_RENDER),
        (hw("rocm", runtime="vulkan"), DRI_RENDER),
        # intel implies intel; runtime is ignored for non-AMD
        (hw("intel"), INTEL_GPU),
        (hw("intel", vendor="nvidia"), INTEL_GPU),
        (hw("intel", vendor="amd", runtime="vulkan"), INTEL_GPU),
        # vulkan takes the vendor (default nvidia) and counts as runtime vulkan
        (hw("vulkan"), NVIDIA_GPU),
        (hw("vulkan", vendor="nvidia"), NVIDIA_GPU),
        (hw("vulkan", vendor="amd"), DRI_RENDER),
        (hw("vulkan", vendor="amd", runtime="rocm"), DRI_RENDER),
        (hw("vulkan", vendor="intel"), INTEL_GPU),
        (hw("vulkan", vendor="intel", runtime="vulkan"), INTEL_GPU),
        # resourceName override wins over every default
        (hw("cuda", resourceName="nvidia.com/mig-1g.10gb"), "nvidia.com/mig-1g.10gb"),
        (
            hw("rocm", vendor="amd", runtime="vulkan", resourceName="squat.ai/dri-render"),
            "squat.ai/dri-render",
        ),
        (hw("vulkan", vendor="amd", resourceName="devic.es/rocm"), "devic.es/rocm"),
        (hw("intel", resourceName="gpu.intel.com/xe"), "gpu.intel.com/xe"),
        # DRA claims: no extended resource
        (hw("cuda", resourceClaims=[CLAIM]), None),
        (hw("rocm", vendor="amd", resourceClaims=[TEMPLATE_CLAIM]), None),
        (hw("cuda", resourceClaims=[]), NVIDIA_GPU),  # an empty list is no claims
    ],
)
def test_resource_name(spec: dict[str, Any], expected: str | None) -> None:
    assert resource_name(model(spec)) == expected


# --- accelerator_ready --------------------------------------------------------------------------

GPU1 = node("gpu1", allocatable={"cpu": "8", NVIDIA_GPU: "1"})
GPU2 = node("gpu2", allocatable={"cpu": "8", NVIDIA_GPU: "2"})
GPU4 = node("gpu4", allocatable={NVIDIA_GPU: "4"})
CPU_ONLY = node("cpu1", allocatable={"cpu": "8", "memory": "32Gi"})
AMD1 = node("amd1", allocatable={AMD_GPU: "1"})
DRI = node("dri1", allocatable={DRI_RENDER: "1"})
INTEL1 = node("intel1", allocatable={INTEL_GPU: "1"})


@pytest.mark.parametrize(
    ("spec", "nodes", "expected"),
    [
        # no GPU wanted: ready whatever the nodes
        (NO_HARDWARE, [], (True, "runs on CPU")),
        (hw("cpu"), [CPU_ONLY], (True, "runs on CPU")),
        (hw("cpu", enabled=True, count=1), [], (True, "runs on CPU")),
        (hw("metal"), [], (True, "runs on a Metal host")),
        (hw("metal", enabled=True), [CPU_ONLY], (True, "runs on a Metal host")),
        # DRA: ready here, the claims are looked up by the caller
        (
            hw("cuda", resourceClaims=[CLAIM]),
            [],
            (
                True,
                "uses dynamic resource claims (claim gpu-claim); their existence is not checked",
            ),
        ),
        (
            hw("rocm", vendor="amd", resourceClaims=[TEMPLATE_CLAIM, CLAIM]),
            [CPU_ONLY],
            (
                True,
                "uses dynamic resource claims (template gpu-template, claim gpu-claim); "
                "their existence is not checked",
            ),
        ),
        # one GPU
        (hw("cuda"), [GPU1], (True, "1 node advertises nvidia.com/gpu ≥ 1")),
        (hw("cuda"), [GPU1, CPU_ONLY, GPU2], (True, "2 nodes advertise nvidia.com/gpu ≥ 1")),
        (hw("cuda"), [], (False, "no node advertises nvidia.com/gpu ≥ 1")),
        (hw("cuda"), [CPU_ONLY], (False, "no node advertises nvidia.com/gpu ≥ 1")),
        (hw("cuda"), [AMD1], (False, "no node advertises nvidia.com/gpu ≥ 1")),
        (hw("rocm"), [AMD1], (True, "1 node advertises amd.com/gpu ≥ 1")),
        (hw("rocm"), [GPU1], (False, "no node advertises amd.com/gpu ≥ 1")),
        (hw("rocm", runtime="vulkan"), [AMD1], (False, "no node advertises devic.es/dri-render ≥ 1")),
        (hw("rocm", runtime="vulkan"), [DRI], (True, "1 node advertises devic.es/dri-render ≥ 1")),
        (hw("vulkan", vendor="amd"), [DRI, AMD1], (True, "1 node advertises devic.es/dri-render ≥ 1")),
        (hw("intel"), [INTEL1], (True, "1 node advertises gpu.intel.com/i915 ≥ 1")),
        (hw("intel"), [GPU1], (False, "no node advertises gpu.intel.com/i915 ≥ 1")),
        # resourceName override: the override is what is looked for
        (
            hw("rocm", resourceName="squat.ai/dri-render"),
            [node("n", allocatable={"squat.ai/dri-render": "1"})],
            (True, "1 node advertises squat.ai/dri-render ≥ 1"),
        ),
        (
            hw("rocm", resourceName="squat.ai/dri-render"),
            [GPU1, AMD1],
            (False, "no node advertises squat.ai/dri-render ≥ 1"),
        ),
        # count threshold
        (
            hw("cuda", count=2),
            [GPU1],
            (False, "no node advertises nvidia.com/gpu ≥ 2 (the most on one schedulable node is 1)"),
        ),
        (hw("cuda", count=2), [GPU1, GPU2], (True, "1 node advertises nvidia.com/gpu ≥ 2")),
        (hw("cuda", count=2), [GPU2, GPU4], (True, "2 nodes advertise nvidia.com/gpu ≥ 2")),
        (
            hw("cuda", count=4),
            [GPU1, GPU2],
            (False, "no node advertises nvidia.com/gpu ≥ 4 (the most on one schedulable node is 2)"),
        ),
        (hw("cuda", count=0), [GPU1], (True, "1 node advertises nvidia.com/gpu ≥ 1")),  # 0 means 1
        (hw("cuda", enabled=True, count=0), [], (False, "no node advertises nvidia.com/gpu ≥ 1")),
        (
            hw("cuda"),
            [node("z", allocatable={NVIDIA_GPU: "0"})],
            (False, "no node advertises nvidia.com/gpu ≥ 1"),
        ),
        # allocatable wins over capacity; capacity only when allocatable lacks the resource
        (
            hw("cuda"),
            [node("c", capacity={NVIDIA_GPU: "1"})],
            (True, "1 node advertises nvidia.com/gpu ≥ 1"),
        ),
        (
            hw("cuda"),
            [node("c", allocatable={"cpu": "4"}, capacity={NVIDIA_GPU: "2"})],
            (True, "1 node advertises nvidia.com/gpu ≥ 1"),
        ),
        (
            hw("cuda", count=2),
            [node("a", allocatable={NVIDIA_GPU: "1"}, capacity={NVIDIA_GPU: "2"})],
            (False, "no node advertises nvidia.com/gpu ≥ 2 (the most on one schedulable node is 1)"),
        ),
        (
            hw("cuda"),
            [node("a", allocatable={NVIDIA_GPU: "0"}, capacity={NVIDIA_GPU: "2"})],
            (False, "no node advertises nvidia.com/gpu ≥ 1"),
        ),
        # unschedulable (cordoned) nodes do not count
        (
            hw("cuda"),
            [node("c", allocatable={NVIDIA_GPU: "8"}, unschedulable=True)],
            (False, "no node advertises nvidia.com/gpu ≥ 1 (1 matching node is unschedulable)"),
        ),
        (
            hw("cuda", count=2),
            [
                node("c1", allocatable={NVIDIA_GPU: "2"}, unschedulable=True),
                node("c2", allocatable={NVIDIA_GPU: "4"}, unschedulable=True),
                GPU1,
            ],
            (
                False,
                "no node advertises nvidia.com/gpu ≥ 2 "
                "(the most on one schedulable node is 1; 2 matching nodes are unschedulable)",
            ),
        ),
        (
            hw("cuda"),
            [node("c", allocatable={NVIDIA_GPU: "8"}, unschedulable=True), GPU1],
            (True, "1 node advertises nvidia.com/gpu ≥ 1"),
        ),
        (
            hw("cuda"),
            [node("s", allocatable={NVIDIA_GPU: "1"}, unschedulable=False)],
            (True, "1 node advertises nvidia.com/gpu ≥ 1"),
        ),
        # unreadable or odd quantities count as nothing; decimal quantities round down
        (
            hw("cuda"),
            [node("bad", allocatable={NVIDIA_GPU: "lots"})],
            (False, "no node advertises nvidia.com/gpu ≥ 1"),
        ),
        (
            hw("cuda"),
            [node("neg", allocatable={NVIDIA_GPU: "-1"})],
            (False, "no node advertises nvidia.com/gpu ≥ 1"),
        ),
        (
            hw("cuda"),
            [node("milli", allocatable={NVIDIA_GPU: "500m"})],
            (False, "no node advertises nvidia.com/gpu ≥ 1"),
        ),
        (
            hw("cuda"),
            [node("k", allocatable={NVIDIA_GPU: "1k"})],
            (True, "1 node advertises nvidia.com/gpu ≥ 1"),
        ),
        (
            hw("cuda"),
            [{}, {"status": None}, {"status": {"allocatable": None}}],
            (False, "no node advertises nvidia.com/gpu ≥ 1"),
        ),
    ],
)
def test_accelerator_ready(
    spec: dict[str, Any], nodes: list[dict[str, Any]], expected: tuple[bool, str]
) -> None:
    assert accelerator_ready(model(spec), nodes) == expected


def test_accelerator_ready_takes_any_iterable() -> None:
    nodes = (n for n in [CPU_ONLY, GPU2])
    assert accelerator_ready(model(hw("cuda", count=2)), nodes) == (
        True,
        "1 node advertises nvidia.com/gpu ≥ 2",
    )


# --- validate -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        NO_HARDWARE,
        {"hardware": None, "resources": None},
        hw(),
        hw("cpu"),
        hw("cpu", enabled=False, count=0),
        hw("metal", enabled=True, count=1),
        hw("cuda", enabled=True, count=2, vendor="nvidia", memory="16Gi", layers=-1),
        hw("cuda", enabled=True, count=0),  # 0 with enabled is accepted (means 1)
        hw("cuda", count=8),
        hw("rocm", vendor="amd", runtime="vulkan", resourceName="devic.es/dri-render"),
        hw("vulkan", vendor="intel", tolerationKey="gpu.intel.com/i915"),
        hw("cuda", resourceClaims=[CLAIM, {"name": "gpu2", "resourceClaimTemplateName": "t"}]),
        hw("cuda", resourceName="nvidia.com/mig-1g.10gb", resourceClaims=[]),
        {"resources": {"cpu": "2", "memory": "4Gi"}},
        {"resources": {"cpu": "500m", "memory": "8192Mi"}},
        {"resources": {}},
        {"hardware": {"accelerator": "metal", "memoryBudget": "24Gi", "memoryFraction": 0.75}},
        {"hardware": {"memoryFraction": 1}},
        {"hardware": {"memoryFraction": 1.0}},
        {"hardware": {"memoryFraction": 0.001}},
        {"hardware": {"memoryBudget": "0"}},
    ],
)
def test_validate_accepts(spec: dict[str, Any]) -> None:
    assert validate(model(spec)) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # quantities
        (
            {"resources": {"memory": "12XB"}},
            ["spec.resources.memory: '12XB' is not a Kubernetes quantity"],
        ),
        (
            {"resources": {"cpu": "two", "memory": "4 Gi"}},
            [
                "spec.resources.cpu: 'two' is not a Kubernetes quantity",
                "spec.resources.memory: '4 Gi' is not a Kubernetes quantity",
            ],
        ),
        ({"resources": {"memory": "-4Gi"}}, ["spec.resources.memory: '-4Gi' is negative"]),
        ({"resources": {"cpu": "-100m"}}, ["spec.resources.cpu: '-100m' is negative"]),
        ({"resources": {"cpu": "-1"}}, ["spec.resources.cpu: '-1' is negative"]),
        (
            hw("cuda", memory="16GB"),
            ["spec.hardware.gpu.memory: '16GB' is not a Kubernetes quantity"],
        ),
        (
            {"hardware": {"memoryBudget": "lots"}},
            ["spec.hardware.memoryBudget: 'lots' is not a Kubernetes quantity"],
        ),
        # memoryFraction in (0, 1]
        (
            {"hardware": {"memoryFraction": 0}},
            ["spec.hardware.memoryFraction: 0 is out of range; it must be greater than 0 and at most 1"],
        ),
        (
            {"hardware": {"memoryFraction": 0.0}},  # the API server stores 0.0 as 0
            ["spec.hardware.memoryFraction: 0 is out of range; it must be greater than 0 and at most 1"],
        ),
        (
            {"hardware": {"memoryFraction": -0.5}},
            ["spec.hardware.memoryFraction: -0.5 is out of range; it must be greater than 0 and at most 1"],
        ),
        (
            {"hardware": {"memoryFraction": 1.01}},
            ["spec.hardware.memoryFraction: 1.01 is out of range; it must be greater than 0 and at most 1"],
        ),
        (
            {"hardware": {"memoryFraction": 75}},
            ["spec.hardware.memoryFraction: 75 is out of range; it must be greater than 0 and at most 1"],
        ),
        (
            {"hardware": {"memoryFraction": float("nan")}},
            ["spec.hardware.memoryFraction: nan is out of range; it must be greater than 0 and at most 1"],
        ),
        # cpu with a GPU request is a contradiction (explicit or defaulted accelerator)
        (
            hw("cpu", enabled=True),
            [
                "spec.hardware.accelerator: cpu contradicts spec.hardware.gpu.enabled is true; set the "
                "accelerator to cuda, rocm, intel or vulkan to use a GPU, or remove the GPU request"
            ],
        ),
        (
            hw(enabled=True, count=2),
            [
                "spec.hardware.accelerator: cpu contradicts spec.hardware.gpu.enabled is true and "
                "spec.hardware.gpu.count is 2; set the accelerator to cuda, rocm, intel or vulkan to use "
                "a GPU, or remove the GPU request"
            ],
        ),
        (
            hw("cpu", count=1),
            [
                "spec.hardware.accelerator: cpu contradicts spec.hardware.gpu.count is 1; set the "
                "accelerator to cuda, rocm, intel or vulkan to use a GPU, or remove the GPU request"
            ],
        ),
        # each claim needs exactly one of resourceClaimName / resourceClaimTemplateName
        (
            hw(
                "cuda",
                resourceClaims=[{"name": "c", "resourceClaimName": "", "resourceClaimTemplateName": None}],
            ),
            [
                "spec.hardware.gpu.resourceClaims[0] ('c'): set exactly one of resourceClaimName or "
                "resourceClaimTemplateName (neither is set)"
            ],
        ),
        (
            hw("cuda", resourceClaims=[CLAIM, {"name": " ", "resourceClaimTemplateName": "t"}]),
            ["spec.hardware.gpu.resourceClaims[1].name is required"],
        ),
        # several problems at once, in field order
        (
            {
                "resources": {"cpu": "1x", "memory": "4Gi"},
                "hardware": {
                    "accelerator": "cpu",
                    "memoryFraction": 2,
                    "gpu": {
                        "enabled": True,
                        "memory": "big",
                        "resourceClaims": [{"name": "d", "resourceClaimName": ""}],
                    },
                },
            },
            [
                "spec.resources.cpu: '1x' is not a Kubernetes quantity",
                "spec.hardware.memoryFraction: 2 is out of range; it must be greater than 0 and at most 1",
                "spec.hardware.accelerator: cpu contradicts spec.hardware.gpu.enabled is true; set the "
                "accelerator to cuda, rocm, intel or vulkan to use a GPU, or remove the GPU request",
                "spec.hardware.gpu.memory: 'big' is not a Kubernetes quantity",
                "spec.hardware.gpu.resourceClaims[0] ('d'): set exactly one of resourceClaimName or "
                "resourceClaimTemplateName (neither is set)",
            ],
        ),
    ],
)
def test_validate_reports(spec: dict[str, Any], expected: list[str]) -> None:
    assert validate(model(spec)) == expected


@pytest.mark.parametrize(
    ("spec", "field", "why"),
    [
        ({"resources": {"cpu": 1.5}}, "spec.resources.cpu", "a valid string"),
        ({"resources": {"cpu": True}}, "spec.resources.cpu", "a valid string"),
        ({"resources": "big"}, "spec.resources", "a valid dictionary"),
        (hw("tpu"), "spec.hardware.accelerator", "'cpu', 'metal', 'cuda', 'rocm', 'intel' or 'vulkan'"),
        (hw("vulkan", vendor="matrox"), "spec.hardware.gpu.vendor", "'nvidia', 'amd' or 'intel'"),
        (hw("rocm", runtime="hip"), "spec.hardware.gpu.runtime", "'vulkan' or 'rocm'"),
        (hw("cuda", count=-1), "spec.hardware.gpu.count", "greater than or equal to 0"),
        (hw("cuda", count=9), "spec.hardware.gpu.count", "less than or equal to 8"),
        (hw("cuda", count=1.5), "spec.hardware.gpu.count", "a valid integer"),
        (hw("cuda", resourceName="gpu"), "spec.hardware.gpu.resourceName", "should match pattern"),
        (hw("cuda", resourceName="NVIDIA.com/GPU"), "spec.hardware.gpu.resourceName", "should match pattern"),
        (
            hw("rocm", vendor="amd", resourceName="devic.es/rocm", resourceClaims=[TEMPLATE_CLAIM]),
            "spec.hardware.gpu",
            "resourceClaims and resourceName are mutually exclusive",
        ),
        (
            hw("cuda", resourceClaims=[{"name": "gpu"}]),
            "spec.hardware.gpu",
            "exactly one of resourceClaimName or resourceClaimTemplateName",
        ),
        (
            hw(
                "cuda",
                resourceClaims=[
                    CLAIM,
                    {"name": "b", "resourceClaimName": "x", "resourceClaimTemplateName": "y"},
                ],
            ),
            "spec.hardware.gpu",
            "exactly one of resourceClaimName or resourceClaimTemplateName",
        ),
        (
            hw("cuda", resourceClaims=[{"resourceClaimName": "x"}]),
            "spec.hardware.gpu.resourceClaims.0.name",
            "required",
        ),
        (
            hw("cuda", resourceClaims=["gpu-claim"]),
            "spec.hardware.gpu.resourceClaims.0",
            "a valid dictionary",
        ),
        (hw("cuda", resourceClaims={"name": "gpu"}), "spec.hardware.gpu.resourceClaims", "a valid list"),
        ({"hardware": "cuda"}, "spec.hardware", "a valid dictionary"),
        ({"hardware": {"accelerator": "cuda", "gpu": True}}, "spec.hardware.gpu", "a valid dictionary"),
    ],
)
def test_the_schema_refuses_the_rest(spec: dict[str, Any], field: str, why: str) -> None:
    """An unknown accelerator, vendor or runtime, a GPU count out of 0..8, a malformed resourceName,
    a claim without exactly one of its names, resourceName next to claims, wrong shapes: the Model's
    schema refuses them, so the runtime reports ``InvalidSpec`` and :func:`validate` never sees them.
    The refusal names the field (and only it) and says why."""
    invalid = decode(GROUP_LLMKUBE, "Model", _obj(spec)).invalid
    assert invalid is not None, "accepted"
    where, _, message = invalid.partition(": ")
    assert (where, "; " in message) == (field, False), invalid
    assert why in message, invalid
