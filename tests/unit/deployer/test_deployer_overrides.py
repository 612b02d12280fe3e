"""Service overrides and the derived templates they make (``aim_deployer.templates``): names as the
original spells them, the base spec with the overrides applied, and GPU overrides the original
ignored (``gpu.requests: 0``; a GPU asked of a CPU template) honoured rather than dropped."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from aim_deployer.overrides import overrides_of
from aim_deployer.selection import Traits, overrides_match
from aim_deployer.templates import (
    GPU_OVERRIDE_NOT_APPLICABLE,
    TemplatePlan,
    _gpu_override_not_applicable,
    derived_spec,
    derived_template_name,
)
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import by_kind
from aimcore.domain.families.templates import Template
from aimcore.domain.naming import derived_name
from tests.helpers import as_overrides

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
BASE = {"spec": {"modelName": "llama", "metric": "latency", "gpu": {"model": "MI300X", "requests": 1}}}


def base_template(group: str, base: dict[str, Any]) -> Template:
    """A stored template of ``group`` with ``base``'s spec (a derived template's base)."""
    kind = by_kind(group, "AIMServiceTemplate")
    return Template(
        kind, {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "b"}, **base}
    )


def test_overrides_of_drops_empty_values_but_keeps_zero_gpus() -> None:
    raw = {"metric": "", "precision": None, "gpu": {"requests": 0, "model": ""}}
    assert overrides_of(raw) == {"gpu": {"requests": 0}}
    assert overrides_of({"gpu": {"model": None}}) is None
    assert overrides_of({}) is None and overrides_of(None) is None


@pytest.mark.parametrize(
    ("overrides", "parts", "count"),
    [
        ({"metric": "throughput"}, ["throughput"], 0),
        ({"gpu": {"model": "MI325X", "requests": 2}, "precision": "fp8"}, ["mi325x", "2gpu", "fp8"], 2),
        ({"gpuSelector": {"count": 4}}, ["4gpu"], 4),
    ],
)
def test_derived_names_are_the_originals(overrides: dict[str, Any], parts: list[str], count: int) -> None:
    gpu = overrides.get("gpu") or overrides.get("gpuSelector") or {}
    model = str(gpu.get("model") or "")
    inputs = ["gpu", model, "count", count, "precision", overrides.get("precision") or ""]
    inputs += ["metric", overrides.get("metric") or ""]
    assert derived_template_name("base", as_overrides(overrides)) == derived_name(
        ["base", "ovr", *parts], inputs, hash_length=4
    )


def test_zero_gpus_get_a_name_of_their_own() -> None:
    with_zero = derived_template_name("base", as_overrides({"metric": "throughput", "gpu": {"requests": 0}}))
    without = derived_template_name("base", as_overrides({"metric": "throughput"}))
    assert with_zero != without
    assert with_zero.startswith("base-ovr-0gpu-throughput-")


def test_derived_spec_applies_a_zero_gpu_override() -> None:
    spec = derived_spec(AIM, base_template(AIM, BASE), as_overrides({"gpu": {"requests": 0}}), "llama")
    assert spec["gpu"] == {"model": "MI300X", "requests": 0}


def test_derived_spec_adds_a_gpu_to_a_cpu_template() -> None:
    cpu = {"spec": {"modelName": "tiny", "resources": {"requests": {"cpu": "2"}}}}
    spec = derived_spec(
        AIM, base_template(AIM, cpu), as_overrides({"gpu": {"model": "MI300X", "requests": 2}}), "tiny"
    )
    assert spec["gpu"] == {"model": "MI300X", "requests": 2}
    assert spec["resources"] == {"requests": {"cpu": "2"}}
    legacy = derived_spec(
        LEGACY,
        base_template(LEGACY, {"spec": {"aimImageName": "tiny"}}),
        as_overrides({"gpuSelector": {"count": 1}}),
        "tiny",
    )
    assert legacy["gpuSelector"] == {"count": 1}


def test_a_zero_gpu_override_is_an_override() -> None:
    """The original dropped ``requests: 0``, and the service ran with the template's GPUs."""
    one_gpu = Traits("optimized", "latency", "fp8", "MI300X", 1)
    assert not overrides_match(one_gpu, as_overrides({"gpu": {"requests": 0}}))
    assert overrides_match(
        Traits("optimized", "latency", "fp8", "MI300X", 0), as_overrides({"gpu": {"requests": 0}})
    )


def test_a_gpu_resource_override_is_honoured() -> None:
    """``gpu.resourceName`` was not looked at: the service ran with the template's resource."""
    traits = Traits("optimized", "latency", "fp8", "MI300X", 1)  # amd.com/gpu
    assert overrides_match(
        traits, as_overrides({"gpu": {"resourceName": "amd.com/gpu"}})
    )  # the API server's default
    assert not overrides_match(traits, as_overrides({"gpu": {"resourceName": "amd.com/gpu-partition"}}))
    spec = derived_spec(
        AIM,
        base_template(AIM, BASE),
        as_overrides({"gpu": {"resourceName": "amd.com/gpu-partition"}}),
        "llama",
    )
    assert spec["gpu"] == {"model": "MI300X", "requests": 1, "resourceName": "amd.com/gpu-partition"}
    plain = derived_template_name(
        "base", as_overrides({"metric": "throughput", "gpu": {"resourceName": "amd.com/gpu"}})
    )
    assert plain == derived_template_name("base", as_overrides({"metric": "throughput"}))
    other = derived_template_name(
        "base", as_overrides({"metric": "throughput", "gpu": {"resourceName": "x.com/gpu"}})
    )
    assert other != plain


def _template(spec: dict[str, Any], group: str = AIM) -> tuple[Any, dict[str, Any]]:
    return by_kind(group, "AIMServiceTemplate"), {"metadata": {"name": "t"}, "spec": spec}


def test_zero_gpus_on_a_template_without_a_gpu_model_is_reported() -> None:
    """Issue 24: on a CPU template ``gpu.requests: 0`` matched (0 GPUs either way) and the service
    deployed on CPU, the override dropped without a word: there are no GPU nodes to choose."""
    ok = ConditionReport(type="TemplateReady", status="True", reason="Resolved")
    cpu = _template({"modelName": "tiny", "resources": {"requests": {"cpu": "2"}}})
    plan = _gpu_override_not_applicable(
        TemplatePlan(ok, template=Template(*cpu)), as_overrides({"gpu": {"requests": 0}})
    )
    assert plan.template is None and plan.create is None
    assert (plan.condition.status, plan.condition.reason) == ("False", GPU_OVERRIDE_NOT_APPLICABLE)
    assert "overrides.gpu.requests: 0 asks for GPU nodes" in plan.condition.message
    assert "AIMServiceTemplate t names no GPU model" in plan.condition.message
    assert "set the GPU model in the override" in plan.condition.message
    # a derived template (another override) without a GPU model: not created either
    derived = _gpu_override_not_applicable(
        TemplatePlan(ok, create=cpu), as_overrides({"gpu": {"requests": 0}, "metric": "throughput"})
    )
    assert derived.create is None and derived.condition.reason == GPU_OVERRIDE_NOT_APPLICABLE
    # the legacy group cannot ask for 0 (its gpuSelector.count is at least 1)
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        as_overrides({"gpuSelector": {"count": 0}})


def test_zero_gpus_with_a_gpu_model_are_honoured() -> None:
    ok = ConditionReport(type="TemplateReady", status="False", reason="CreatingDerivedTemplate")
    gpu = _template({"modelName": "llama", "gpu": {"model": "MI300X", "requests": 0}})
    for overrides in (
        {"gpu": {"requests": 0}},
        {"gpu": {"model": "MI300X", "requests": 0}},
        {"metric": "throughput"},
    ):
        plan = TemplatePlan(ok, create=gpu)
        assert _gpu_override_not_applicable(plan, as_overrides(overrides)) is plan
    cpu = _template({"modelName": "tiny"})
    plan = TemplatePlan(ok, create=cpu)
    assert (
        _gpu_override_not_applicable(plan, as_overrides({"gpu": {"model": "MI300X", "requests": 0}})) is plan
    )
    assert _gpu_override_not_applicable(plan, None) is plan
