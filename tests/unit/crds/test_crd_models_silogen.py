"""The legacy ``aim.silogen.ai/v1alpha1`` models against the manifests users of both legacy
generations hold.

Every YAML example in the concept guides (docs/specification.md#the-images-and-templates-guide,
docs/specification.md#the-models-guide) is extracted at test time: whole
objects must parse with the model of their kind, and partial specs with the sub-model they show.
The counts are asserted, so the tests cannot pass by finding nothing.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from aim_dev.crdgen import crd_for
from aimcore.api.crds import aim
from aimcore.api.crds.aim import AIMModelSource
from aimcore.api.crds.base import K8sModel, Resource
from aimcore.api.crds.silogen import (
    KINDS,
    AIMClusterServiceTemplate,
    AIMCustomModelSpec,
    AIMGpuRequirements,
    AIMHardwareRequirements,
    AIMImageSpec,
    AIMModelCacheSpec,
    AIMModelConfig,
    AIMModelCreationScope,
    AIMModelSpec,
    AIMModelStatus,
    AIMRuntimeRoutingConfig,
    AIMService,
    AIMServiceModel,
    AIMServiceModelCustom,
    AIMServiceRouting,
    AIMServiceSpec,
    AIMServiceTemplate,
    AIMServiceTemplateStatus,
)
from tests import seeds
from tests.helpers import missing_or_changed

API_VERSION = "aim.silogen.ai/v1alpha1"
BY_KIND: dict[str, type[Resource]] = {k.crd.kind: k for k in KINDS}

CURRENT_SHORT_NAMES = {
    "aimsvc",
    "aimmdl",
    "aimclmdl",
    "aimtpl",
    "aimcltpl",
    "aimtc",
    "aimmc",
    "aimrc",
    "aimclrc",
    "aimclsrc",
}


def _whole_objects() -> list[dict[str, Any]]:
    return seeds.whole_objects(API_VERSION)


def _fragments() -> list[dict[str, Any]]:
    return seeds.fragments()


# --- the seed examples ------------------------------------------------------------------------


def test_every_legacy_example_object_parses() -> None:
    objects = _whole_objects()
    parsed = [BY_KIND[o["kind"]].model_validate(o) for o in objects]
    assert len(parsed) > 0
    assert len(parsed) == len(objects)
    # The images and templates guide shows 4 objects of this group, the models guide 10; a regex
    # that finds fewer is broken.
    assert len(parsed) >= 14
    kinds = {p.crd.kind for p in parsed}
    assert {"AIMClusterImage", "AIMImage", "AIMClusterServiceTemplate", "AIMServiceTemplate"} <= kinds
    assert {"AIMClusterModel", "AIMModel", "AIMRuntimeConfig", "AIMService"} <= kinds
    for obj, model in zip(objects, parsed, strict=True):
        assert model.metadata.name == obj["metadata"]["name"]
        # Parsing what we would write back gives the same object.
        assert type(model).model_validate(model.wire()) == model


def _validate_spec_fragment(spec: dict[str, Any]) -> None:
    """A partial spec from the guides, checked key by key with the sub-model it illustrates."""
    for key, value in spec.items():
        if key == "routing":  # AIMService.spec.routing (docs/specification.md#service-routing-templates)
            AIMServiceRouting.model_validate(value)
        elif key == "model":  # runtime config spec.model (docs/specification.md#creation-scope)
            AIMModelConfig.model_validate(value)
        elif key == "modelSources":  # AIMModel.spec.modelSources (docs/specification.md#custom-models)
            TypeAdapter(list[AIMModelSource]).validate_python(value)
        elif key == "custom":  # AIMModel.spec.custom (docs/specification.md#custom-models)
            AIMCustomModelSpec.model_validate(value)
        else:
            raise AssertionError(f"no sub-model for spec fragment key {key!r}")


def test_every_example_fragment_parses_as_its_sub_model() -> None:
    fragments = _fragments()
    checked = 0
    for fragment in fragments:
        assert set(fragment) <= {"spec", "status"}, fragment
        if "spec" in fragment:
            _validate_spec_fragment(fragment["spec"])
        if "status" in fragment:
            # The guide elides a condition's lastTransitionTime/reason (metav1.Condition requires
            # them; the status service always writes them), so conditions are left out here.
            status = {k: v for k, v in fragment["status"].items() if k != "conditions"}
            AIMModelStatus.model_validate(status)
        checked += 1
    assert checked > 0
    assert checked == len(fragments)
    # The images and templates guide shows one partial spec, the models guide seven (five specs and
    # one status among them).
    assert checked >= 8


def test_spec_fragments_with_modelsources_and_custom_parse_together() -> None:
    """The custom-model fragments are model specs minus their image: with one they are whole specs."""
    custom = [f["spec"] for f in _fragments() if "custom" in f.get("spec", {})]
    assert len(custom) >= 2
    for spec in custom:
        AIMModelSpec.model_validate({"image": "amdenterpriseai/aim-base:latest", **spec})


def test_creation_scope_defaults_to_namespace() -> None:
    assert (
        AIMModelConfig.model_validate({"autoDiscovery": True}).creation_scope
        is AIMModelCreationScope.NAMESPACE
    )
    assert AIMModelConfig.model_validate({"creationScope": "Cluster"}).wire() == {"creationScope": "Cluster"}


def test_round_trip_of_a_seed_example() -> None:
    objects = [o for o in _whole_objects() if o["kind"] == "AIMClusterServiceTemplate"]
    assert len(objects) == 1
    assert AIMClusterServiceTemplate.model_validate(objects[0]).wire() == objects[0]


def test_round_trip_of_a_generation_2_custom_service() -> None:
    obj = next(o for o in _whole_objects() if o["metadata"]["name"] == "llama-custom")
    svc = AIMService.model_validate(obj)
    wired = svc.wire()
    # The only differences are the documented defaults the API server fills in too.
    gpu = wired["spec"]["model"]["custom"]["hardware"]["gpu"]
    assert gpu.pop("resourceName") == "amd.com/gpu"
    assert wired == {**obj, "spec": {**obj["spec"], "cacheModel": False, "runtimeConfigName": "default"}}


# --- generation 1 -----------------------------------------------------------------------------


GEN1_SERVICE: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "AIMService",
    "metadata": {"name": "llama", "namespace": "ml-team"},
    "spec": {
        "aimImageName": "meta-llama-3-8b-1-1-20240915",
        "templateRef": "llama-3-8b-latency",
        "cacheModel": True,
        "replicas": 2,
        "overrides": {"metric": "throughput", "gpuSelector": {"count": 2, "model": "MI300X"}},
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
        "imagePullSecrets": [{"name": "registry"}],
        "routing": {
            "enabled": True,
            "gatewayRef": {"name": "inference-gateway", "namespace": "gateways"},
            "annotations": {"a": "b"},
            "routeTemplate": "/{.metadata.namespace}/{.metadata.name}",
        },
    },
}


def test_generation_1_service_parses() -> None:
    svc = AIMService.model_validate(GEN1_SERVICE)
    assert svc.spec.aim_image_name == "meta-llama-3-8b-1-1-20240915"
    assert svc.spec.template_ref == "llama-3-8b-latency"
    assert svc.spec.cache_model is True
    assert svc.spec.model is None
    assert svc.spec.overrides is not None and svc.spec.overrides.gpu_selector is not None
    assert svc.spec.overrides.gpu_selector.count == 2
    assert svc.spec.runtime_config_name == "default"
    wired = svc.wire()
    assert wired["spec"]["aimImageName"] == "meta-llama-3-8b-1-1-20240915"
    assert wired["spec"]["routing"]["routeTemplate"] == "/{.metadata.namespace}/{.metadata.name}"


def test_generation_1_defaults() -> None:
    spec = AIMServiceSpec.model_validate({"aimImageName": "x"})
    assert (spec.replicas, spec.cache_model, spec.runtime_config_name) == (1, False, "default")
    assert AIMServiceRouting.model_validate({}).enabled is False


def test_generation_1_template_status_uses_discovery_wire_names() -> None:
    status = AIMServiceTemplateStatus.model_validate(
        {
            "status": "Available",
            "modelSources": [
                {
                    "name": "meta-llama/Llama-3-8B",
                    "modelId": "meta-llama/Llama-3-8B",
                    "sourceUri": "hf://meta-llama/Llama-3-8B",
                    "size": "16Gi",
                }
            ],
            "profile": {
                "engine_args": {"max-model-len": 8192},
                "env_vars": {"VLLM_USE_V1": "1"},
                "metadata": {"engine": "vllm", "gpu": "MI300X", "gpu_count": 1, "precision": "fp16"},
            },
            "resolvedImage": {"name": "llama", "scope": "Cluster"},
        }
    )
    assert status.profile is not None and status.profile.metadata is not None
    assert status.profile.metadata.gpu_count == 1
    assert status.wire()["profile"]["metadata"]["gpu_count"] == 1
    assert status.wire()["profile"]["engine_args"] == {"max-model-len": 8192}


def test_template_image_name_is_immutable_in_the_crd() -> None:
    schema = crd_for(AIMServiceTemplate)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    rules = schema["properties"]["spec"]["properties"]["aimImageName"]["x-kubernetes-validations"]
    assert rules == [{"rule": "self == oldSelf", "message": "image name is immutable"}]


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        AIMServiceSpec.model_validate({"aimImageName": "x", "aimImagename": "typo"})


# --- rules (each CEL rule without oldSelf is also enforced in Python) -------------------------

_HW = {"gpu": {"requests": 1}}
_SRC = {"modelId": "meta-llama/Llama-3-8B", "sourceUri": "hf://meta-llama/Llama-3-8B"}
_IMAGE_RESOURCES = {"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"memory": "64Gi"}}

BAD_INPUTS: list[tuple[type[K8sModel], dict[str, Any], str]] = [
    (AIMHardwareRequirements, {}, "at least one of gpu or cpu must be specified"),
    (
        AIMRuntimeRoutingConfig,
        {"routeTemplate": "/a", "pathTemplate": "/b"},
        "routeTemplate and pathTemplate are mutually exclusive",
    ),
    (
        AIMServiceRouting,
        {"routeTemplate": "/a", "pathTemplate": "/b"},
        "routeTemplate and pathTemplate are mutually exclusive",
    ),
    (
        AIMImageSpec,
        {"image": "i", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}},
        "resources.requests must include cpu and memory",
    ),
    (
        AIMImageSpec,
        {"image": "i", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        "resources.limits must include memory",
    ),
    (
        AIMModelSpec,
        {"image": "i", "modelSources": [_SRC]},
        "a custom model (spec.modelSources set) needs hardware",
    ),
    (
        AIMModelSpec,
        {
            "image": "i",
            "modelSources": [_SRC],
            "custom": {"templates": [{"name": "a", "hardware": _HW}, {"name": "b"}]},
        },
        "a custom model (spec.modelSources set) needs hardware",
    ),
    (
        AIMGpuRequirements,
        {"model": "MI300X", "models": ["MI300X"]},
        "model and models are mutually exclusive",
    ),
    (AIMGpuRequirements, {"model": "MI300X", "minVram": "64Gi"}, "model and minVram are mutually exclusive"),
    (AIMServiceModel, {}, "exactly one of ref, name, image or custom must be specified"),
    (
        AIMServiceModel,
        {"ref": "a", "image": "b"},
        "exactly one of ref, name, image or custom must be specified",
    ),
    (AIMServiceSpec, {}, "exactly one of aimImageName or model must be specified"),
    (
        AIMServiceSpec,
        {"aimImageName": "a", "model": {"ref": "a"}},
        "exactly one of aimImageName or model must be specified",
    ),
    (
        AIMServiceSpec,
        {"aimImageName": "a", "templateRef": "t", "template": {"name": "t"}},
        "templateRef and template.name are mutually exclusive",
    ),
    (
        AIMServiceSpec,
        {"aimImageName": "a", "minReplicas": 3, "maxReplicas": 1},
        "minReplicas must not be greater than maxReplicas",
    ),
]


@pytest.mark.parametrize(("model", "payload", "message"), BAD_INPUTS)
def test_rule_rejects_bad_input(model: type[K8sModel], payload: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        model.model_validate(payload)


def test_every_python_rule_message_is_a_cel_rule_of_the_crds() -> None:
    """The messages the Python validators raise are those of the rules the CRDs carry."""
    crd_messages: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations", []):
                crd_messages.add(rule["message"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for kind in KINDS:
        walk(crd_for(kind))
    for _, _, message in BAD_INPUTS:
        assert any(m.startswith(message) for m in crd_messages), message


@pytest.mark.parametrize(
    ("model", "payload", "message"),
    [
        (AIMServiceSpec, {"aimImageName": "a", "replicas": 0}, "greater than or equal to 1"),
        (AIMServiceSpec, {"aimImageName": "a", "resources": {"limits": {"cpu": "-1"}}}, "is negative"),
        (AIMServiceModel, {"image": "ghcr.io/acme/llama:1\n"}, "should match pattern"),
        (AIMImageSpec, {"image": "ghcr.io/acme/llama:1\n"}, "should match pattern"),
        (AIMImageSpec, {"image": "ghcr.io:99999/acme/llama:1"}, "port 99999 is not in 1-65535"),
        (AIMModelSpec, {"image": "ghcr.io:0/acme/llama:1"}, "port 0 is not in 1-65535"),
        (AIMModelCacheSpec, {"sourceUri": "hf://a/b", "modelDownloadImage": "Upper/Case"}, "lower case"),
        (AIMModelCacheSpec, {"sourceUri": "hf://a/b", "size": "-1Gi"}, "is negative"),
    ],
)
def test_hostile_values_are_refused(model: type[K8sModel], payload: dict[str, Any], message: str) -> None:
    """What used to be stored and then adjusted or used as written (issue 15, item 7)."""
    with pytest.raises(ValidationError, match=re.escape(message)):
        model.model_validate(payload)


@pytest.mark.parametrize("model", [AIMModelSpec, AIMServiceModelCustom])
def test_spec_model_sources_need_a_model_id(model: type[K8sModel]) -> None:
    sources = [{"sourceUri": "hf://a/b"}]
    payload: dict[str, Any] = {"modelSources": sources, "hardware": _HW}
    if model is AIMModelSpec:
        payload = {"image": "i", "modelSources": sources, "custom": {"hardware": _HW}}
    with pytest.raises(ValidationError, match="modelId"):
        model.model_validate(payload)


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (AIMImageSpec, {"image": "i", "resources": _IMAGE_RESOURCES}),
        (
            AIMModelSpec,
            {"image": "i", "modelSources": [_SRC], "custom": {"templates": [{"name": "a", "hardware": _HW}]}},
        ),
        (AIMServiceSpec, {"model": {"name": "m"}, "template": {"name": "t"}}),
        (AIMServiceSpec, {"aimImageName": "a", "templateRef": "t", "template": {"allowUnoptimized": True}}),
        # Generation 2 GPU requirements list several models and may combine them with minVram.
        (AIMHardwareRequirements, {"gpu": {"requests": 2, "models": ["MI300X", "MI250"], "minVram": "64Gi"}}),
    ],
)
def test_valid_counterparts_of_the_rules_pass(model: type[K8sModel], data: dict[str, Any]) -> None:
    assert missing_or_changed(data, model.model_validate(data).wire()) == []  # kept as written


# --- CRD metadata -----------------------------------------------------------------------------


def test_kinds() -> None:
    assert len(KINDS) == 11
    plurals = [k.crd.plural for k in KINDS]
    assert len(set(plurals)) == 11
    assert {k.crd.kind for k in KINDS} == {
        "AIMClusterImage",
        "AIMImage",
        "AIMClusterRuntimeConfig",
        "AIMRuntimeConfig",
        "AIMClusterServiceTemplate",
        "AIMServiceTemplate",
        "AIMService",
        "AIMTemplateCache",
        "AIMModelCache",
        "AIMModel",
        "AIMClusterModel",
    }
    for kind in KINDS:
        assert kind.crd.group == "aim.silogen.ai"
        assert kind.crd.api_version == API_VERSION
        assert kind.crd.categories == ("aim", "all")  # the original legacy CRDs' (issue 18)
        assert kind.crd.plural == kind.crd.kind.lower() + "s"


def test_short_names_do_not_clash_with_the_current_group() -> None:
    names = [n for k in KINDS for n in k.crd.short_names]
    assert len(names) == len(set(names))
    assert not set(names) & CURRENT_SHORT_NAMES
    assert {k.crd.kind: k.crd.short_names for k in KINDS} == {
        "AIMServiceTemplate": ("aimst",),
        "AIMClusterServiceTemplate": ("aimclst",),
        "AIMRuntimeConfig": ("aimrcfg",),
        "AIMClusterRuntimeConfig": ("aimcrcfg",),
        "AIMImage": ("aimimg",),
        "AIMClusterImage": ("aimclimg",),
        "AIMService": (),
        "AIMModel": (),
        "AIMClusterModel": (),
        "AIMTemplateCache": (),
        "AIMModelCache": (),
    }


def test_short_names_do_not_clash_with_the_current_group_models() -> None:
    current = {n for k in aim.KINDS for n in k.crd.short_names}
    assert not {n for k in KINDS for n in k.crd.short_names} & current


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.crd.kind)
def test_crd_generates_and_printer_columns_point_at_fields(kind: type[Resource]) -> None:
    crd = crd_for(kind)
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    assert crd["spec"]["group"] == "aim.silogen.ai"
    for column in version.get("additionalPrinterColumns", []):
        node: dict[str, Any] = schema
        for part in column["jsonPath"].lstrip(".").split("."):
            if part == "metadata" and node is schema:
                break
            assert part in node.get("properties", {}), (column, part)
            node = node["properties"][part]
