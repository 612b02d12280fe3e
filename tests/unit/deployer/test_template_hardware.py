"""A template's hardware in the released original's spelling (``spec.hardware {gpu, cpu}``) means what the
seed's spelling (``spec.gpu``, CPU in ``spec.resources``) means, for every reader: the template model's
validation, the template family discovery and the deployer read through, the InferenceService resources,
derived templates and the status discovery writes (issue 18 item 6)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from aim_deployer import inference
from aim_deployer.inference import Inputs
from aim_deployer.overrides import overrides_of
from aim_deployer.service_view import ServiceView
from aim_deployer.templates import derived_spec, derived_template_name
from aim_discovery.template_status import hardware_summary, resolved_hardware
from aimcore.api import hardware
from aimcore.api.crds import aim
from aimcore.api.kinds import by_kind
from aimcore.api.types import Obj
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import GPURequirement, Template
from tests.helpers import as_overrides

AIM = "aim.eai.amd.com"
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
CLUSTER_TEMPLATE = by_kind(AIM, "AIMClusterServiceTemplate")

GPU = {"model": "MI300X", "requests": 2}
CPU = {"requests": "2", "limits": "4"}


def template(spec: Obj, status: Obj | None = None, *, kind: str = "AIMServiceTemplate") -> Obj:
    meta: Obj = {"name": "t", "uid": "tpl-uid"}
    if kind == "AIMServiceTemplate":
        meta["namespace"] = "ns"
    return {
        "apiVersion": f"{AIM}/v1alpha1",
        "kind": kind,
        "metadata": meta,
        "spec": {"modelName": "m", **spec},
        "status": status or {},
    }


# -- the two spellings read the same ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("released", "seed"),
    [
        ({"hardware": {"gpu": GPU}}, {"gpu": GPU}),
        (
            {"hardware": {"gpu": {"minVram": "128Gi", "requests": 1}}},
            {"gpu": {"minVram": "128Gi", "requests": 1}},
        ),
        (
            {"hardware": {"gpu": {"model": "MI300X", "requests": 1, "resourceName": "amd.com/gpu-part"}}},
            {"gpu": {"model": "MI300X", "requests": 1, "resourceName": "amd.com/gpu-part"}},
        ),
        ({"hardware": {"cpu": CPU}}, {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}}),
        (
            {"hardware": {"gpu": GPU, "cpu": {"requests": "8"}}, "resources": {"limits": {"memory": "64Gi"}}},
            {"gpu": GPU, "resources": {"requests": {"cpu": "8"}, "limits": {"memory": "64Gi"}}},
        ),
    ],
)
def test_both_spellings_read_the_same(released: Obj, seed: Obj) -> None:
    for kind in ("AIMServiceTemplate", "AIMClusterServiceTemplate"):
        ref = by_kind(AIM, kind)
        new, old = (
            Template(ref, template(released, kind=kind)),
            Template(ref, template(seed, kind=kind)),
        )
        assert new.gpu == old.gpu
        assert new.cpu == old.cpu
        assert new.resources == old.resources
        assert hardware.seed_shape(new.obj["spec"]) == old.obj["spec"]


def test_released_gpu_is_a_gpu_requirement() -> None:
    read = Template(TEMPLATE, template({"hardware": {"gpu": {"model": "MI300X", "requests": 1}}}))
    assert read.gpu == GPURequirement(model="MI300X", requests=1)
    assert read.gpu.required
    assert read.gpu_field == "spec.hardware.gpu"
    assert Template(TEMPLATE, template({"gpu": GPU})).gpu_field == "spec.gpu"


def test_cpu_only_released_template_needs_no_gpu() -> None:
    read = Template(TEMPLATE, template({"hardware": {"cpu": CPU}}))
    assert not read.gpu.required
    assert read.cpu == CPU
    assert read.resources == {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}


def test_resources_cpu_wins_where_both_agree_and_fills_gaps() -> None:
    spec = {
        "hardware": {"cpu": {"requests": "1", "limits": "2"}},
        "resources": {"requests": {"cpu": "1000m"}},
    }
    read = Template(TEMPLATE, template(spec))
    assert read.cpu == {"requests": "1000m", "limits": "2"}
    assert read.resources == {"requests": {"cpu": "1000m"}, "limits": {"cpu": "2"}}


def test_what_a_template_reads_does_not_share_its_spec() -> None:
    tpl = template({"hardware": {"gpu": GPU, "cpu": CPU}, "resources": {"requests": {"memory": "1Gi"}}})
    before = copy.deepcopy(tpl)
    read = Template(TEMPLATE, tpl)
    resources = read.resources
    assert resources is not None
    resources["requests"]["cpu"] = "99"
    cpu = read.cpu
    assert cpu is not None
    cpu["limits"] = "99"
    hardware.seed_shape(read.obj["spec"])["gpu"]["requests"] = 9
    assert tpl == before
    assert read.resources == {"requests": {"memory": "1Gi", "cpu": "2"}, "limits": {"cpu": "4"}}


# -- both spellings set: they must agree -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"gpu": GPU, "hardware": {"gpu": {"model": "MI325X", "requests": 2}}}, "model 'MI325X' vs 'MI300X'"),
        ({"gpu": GPU, "hardware": {"gpu": {"model": "MI300X", "requests": 1}}}, "requests 1 vs 2"),
        (
            {"gpu": {"model": "MI300X"}, "hardware": {"gpu": {"model": "MI300X", "requests": 0}}},
            "requests 0 vs None",
        ),
        (
            {"gpu": GPU, "hardware": {"gpu": {**GPU, "resourceName": "amd.com/gpu-part"}}},
            "resourceName 'amd.com/gpu-part' vs 'amd.com/gpu'",
        ),
        (
            {"hardware": {"cpu": {"requests": "2"}}, "resources": {"requests": {"cpu": "4"}}},
            "hardware.cpu.requests '2' and resources.requests.cpu '4'",
        ),
        (
            {"hardware": {"cpu": {"requests": "2", "limits": "4"}}, "resources": {"limits": {"cpu": "8"}}},
            "hardware.cpu.limits '4' and resources.limits.cpu '8'",
        ),
    ],
)
def test_disagreeing_spellings_are_an_invalid_spec(spec: Obj, says: str) -> None:
    (found,) = hardware.conflicts(template(spec)["spec"])
    assert says in found
    for cls, kind in (
        (aim.AIMServiceTemplate, "AIMServiceTemplate"),
        (aim.AIMClusterServiceTemplate, "AIMClusterServiceTemplate"),
    ):
        with pytest.raises(ValidationError, match="both set but differ"):
            cls.model_validate(template(spec, kind=kind))


@pytest.mark.parametrize(
    "spec",
    [
        {"gpu": GPU, "hardware": {"gpu": GPU}},
        {"gpu": GPU, "hardware": {"gpu": {**GPU, "resourceName": "amd.com/gpu"}}},  # the default, spelled out
        {"gpu": GPU, "hardware": {"cpu": CPU}},  # each spelling says something else
        {"hardware": {"gpu": GPU}, "resources": {"requests": {"cpu": "2"}}},
        {"hardware": {"cpu": {"requests": "1"}}, "resources": {"requests": {"cpu": "1000m"}}},  # same amount
        {"hardware": {"cpu": {"requests": 2}}, "resources": {"requests": {"cpu": "2"}}},
    ],
)
def test_agreeing_spellings_are_accepted(spec: Obj) -> None:
    assert hardware.conflicts(template(spec)["spec"]) == []
    aim.AIMServiceTemplate.model_validate(template(spec))


def test_the_crd_carries_the_released_field_and_its_rules() -> None:
    for spec_cls in (aim.AIMServiceTemplateSpec, aim.AIMClusterServiceTemplateSpec):
        schema = spec_cls.model_json_schema(by_alias=True)
        assert "hardware" in schema["properties"]
        extra = spec_cls.model_config.get("json_schema_extra")
        assert isinstance(extra, dict)
        rule = {"rule": aim.TEMPLATE_HARDWARE_GPU_RULE, "message": aim.TEMPLATE_HARDWARE_GPU_MESSAGE}
        assert rule in extra["x-kubernetes-validations"]
        field_extra = spec_cls.model_fields["hardware"].json_schema_extra
        assert isinstance(field_extra, dict)
        assert {"rule": "self == oldSelf", "message": "hardware is immutable"} in field_extra[
            "x-kubernetes-validations"
        ]
    assert "hardwareSummary" in aim.AIMServiceTemplateStatus.model_json_schema(by_alias=True)["properties"]


# -- what the deployer builds from a released template ---------------------------------------------------


def base_template(group: str, base: dict[str, Any]) -> Template:
    """A stored template of ``group`` with ``base``'s spec (a derived template's base)."""
    kind = by_kind(group, "AIMServiceTemplate")
    return Template(
        kind, {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "b"}, **base}
    )


def _inputs(tpl: Obj) -> Inputs:
    service = {"metadata": {"name": "s", "namespace": "ns", "uid": "u"}, "spec": {"model": {"name": "m"}}}
    model = {"metadata": {"name": "m", "uid": "mu"}, "spec": {"image": "img"}}
    return Inputs(
        service=ServiceView(by_kind(AIM, "AIMService"), service),
        model=Model(by_kind(AIM, "AIMModel"), model),
        template=Template(TEMPLATE, tpl),
        config_env=[],
        propagated_labels={},
    )


def test_inference_service_resources_are_the_same_for_both_spellings() -> None:
    released = template({"hardware": {"gpu": GPU, "cpu": {"requests": "16"}}})
    seed = template({"gpu": GPU, "resources": {"requests": {"cpu": "16"}}})
    assert inference.gpu_count(TEMPLATE, released) == 2
    expected = {
        "requests": {"amd.com/gpu": "2", "cpu": "16", "memory": "64Gi"},
        "limits": {"amd.com/gpu": "2", "memory": "96Gi"},
    }
    assert inference.container_resources(_inputs(released)) == expected
    assert inference.container_resources(_inputs(seed)) == expected


def test_cpu_only_released_template_gets_its_cpu() -> None:
    tpl = template({"hardware": {"cpu": CPU}})
    assert inference.container_resources(_inputs(tpl)) == {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}


def test_derived_template_of_a_released_base_is_written_the_seed_way() -> None:
    base = {"spec": {"modelName": "m", "hardware": {"gpu": GPU, "cpu": {"requests": "8"}}}}
    spec = derived_spec(AIM, base_template(AIM, base), as_overrides({"gpu": {"requests": 4}}), "m")
    assert "hardware" not in spec
    assert spec["gpu"] == {"model": "MI300X", "requests": 4}
    assert spec["resources"] == {"requests": {"cpu": "8"}}
    assert hardware.conflicts(spec) == []


# -- what discovery writes in the status -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "discovered", "resolved", "summary"),
    [
        (
            {"hardware": {"gpu": {"model": "MI300X", "requests": 1}}},
            None,
            {"gpu": {"model": "MI300X", "requests": 1, "resourceName": "amd.com/gpu"}},
            "1 x MI300X",
        ),
        (
            {"gpu": {"model": "MI325X", "requests": 2}},
            None,
            {"gpu": {"model": "MI325X", "requests": 2, "resourceName": "amd.com/gpu"}},
            "2 x MI325X",
        ),
        # discovery's answer over the spec
        (
            {"hardware": {"gpu": {"model": "MI300X", "requests": 1}}},
            ("MI300X", 8),
            {"gpu": {"model": "MI300X", "requests": 8, "resourceName": "amd.com/gpu"}},
            "8 x MI300X",
        ),
        # CPU-only templates have resolved hardware too
        ({"hardware": {"cpu": CPU}}, None, {"cpu": CPU}, "CPU"),
        ({"resources": {"limits": {"cpu": "4"}}}, None, {"cpu": {"requests": "4", "limits": "4"}}, "CPU"),
        # quantities as Kubernetes writes them back (e2e aimmodel/custom-models/cpu-only)
        (
            {"hardware": {"cpu": {"requests": "500m", "limits": "2000m"}}},
            None,
            {"cpu": {"requests": "500m", "limits": "2"}},
            "CPU",
        ),
        ({"resources": {"requests": {"cpu": 2}}}, None, {"cpu": {"requests": "2"}}, "CPU"),
        ({}, None, {"gpu": {"requests": 0, "resourceName": "amd.com/gpu"}}, "CPU"),
        ({}, (None, 0), {"gpu": {"requests": 0, "resourceName": "amd.com/gpu"}}, "CPU"),
    ],
)
def test_resolved_hardware_and_summary(
    spec: Obj, discovered: tuple[str | None, int] | None, resolved: Obj, summary: str
) -> None:
    read = Template(TEMPLATE, template(spec))
    model, requests = discovered if discovered is not None else (read.gpu.model, read.gpu.requests)
    out = resolved_hardware(read, model, requests)
    assert out == resolved
    assert hardware_summary(out) == summary
    # a valid AIMHardwareRequirements (at least one of gpu or cpu, a CPU request)
    aim.AIMServiceTemplateStatus.model_validate({"resolvedHardware": out, "hardwareSummary": summary})


# -- a service's overrides in the released shape ---------------------------------------------------------


def _service(**spec: Any) -> Obj:
    return {
        "apiVersion": f"{AIM}/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"model": {"name": "m"}, **spec},
    }


def test_released_gpu_overrides_name_and_build_the_same_derived_template() -> None:
    released = as_overrides({"metric": "latency", "hardware": {"gpu": GPU}})
    seed = as_overrides({"metric": "latency", "gpu": GPU})
    assert released is not None and seed is not None
    assert released.as_written == seed.as_written == {"metric": "latency", "gpu": GPU}
    assert released is not None and seed is not None
    assert derived_template_name("base", released) == derived_template_name("base", seed)
    base = {"spec": {"modelName": "m", "gpu": {"model": "MI300X", "requests": 1}}}
    assert derived_spec(AIM, base_template(AIM, base), released, "m")["gpu"] == GPU
    # a CPU-only hardware override is no template override (the CPU goes to the InferenceService)
    assert overrides_of({"hardware": {"cpu": CPU}}) is None


def test_released_cpu_override_is_the_services_cpu_below_its_resources() -> None:
    assert hardware.service_resources({"overrides": {"hardware": {"cpu": CPU}}}) == {
        "requests": {"cpu": "2"},
        "limits": {"cpu": "4"},
    }
    spec = {"resources": {"requests": {"cpu": "8", "memory": "1Gi"}}, "overrides": {"hardware": {"cpu": CPU}}}
    assert hardware.service_resources(spec) == {
        "requests": {"cpu": "8", "memory": "1Gi"},
        "limits": {"cpu": "4"},
    }
    assert hardware.service_resources({"resources": {"limits": {"memory": "2Gi"}}}) == {
        "limits": {"memory": "2Gi"}
    }
    tpl = template({"gpu": GPU, "resources": {"requests": {"cpu": "16"}}})
    inputs = _inputs(tpl)
    service = copy.deepcopy(inputs.service.obj)
    service["spec"] = {
        "model": {"name": "m"},
        "overrides": {"hardware": {"cpu": {"requests": "3", "limits": "6"}}},
    }
    inputs = dataclasses.replace(inputs, service=ServiceView(inputs.service.ref, service))
    resources = inference.container_resources(inputs)
    assert (resources["requests"]["cpu"], resources["limits"]["cpu"]) == ("3", "6")


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"gpu": GPU, "hardware": {"gpu": {"model": "MI325X", "requests": 2}}}, "both set but differ"),
        ({"hardware": {"gpu": {"minVram": "128Gi"}}}, "hardware.gpu.minVram cannot be overridden"),
    ],
)
def test_disagreeing_or_unusable_released_overrides_are_an_invalid_spec(overrides: Obj, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        aim.AIMService.model_validate(_service(overrides=overrides))
    aim.AIMService.model_validate(_service(overrides={"gpu": GPU, "hardware": {"gpu": GPU, "cpu": CPU}}))
    schema = aim.AIMServiceOverrides.model_json_schema(by_alias=True)
    assert "hardware" in schema["properties"]
    extra = aim.AIMServiceOverrides.model_config.get("json_schema_extra")
    assert isinstance(extra, dict)
    rules = [rule["rule"] for rule in extra["x-kubernetes-validations"]]
    assert hardware.HARDWARE_GPU_RULE in rules and aim.OVERRIDE_HARDWARE_MIN_VRAM_RULE in rules
