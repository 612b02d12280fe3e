"""Models and templates as discovery sees them (``aim_discovery.catalog``): template names
(docs/original.md#derived-names), specs, labels and owner references
(docs/original.md#labels-and-annotations-children-inherit), both API groups and both scopes."""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

import pytest

from aim_discovery.catalog import (
    ALIAS_LABEL,
    PlannedTemplate,
    custom_templates,
    merge_hardware,
    model_condition,
    recommended_template,
    template_body,
    template_kind,
    templates_condition,
)
from aimcore.api.kinds import RUNTIME_CONFIG_KINDS, by_kind
from aimcore.api.types import Obj
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import GPURequirement, Template
from aimcore.domain.labels import MODEL_LABEL, ORIGIN_LABEL
from aimcore.domain.naming import derived_name
from aimcore.runtime import contains, differs, owner_reference
from aimcore.runtime.children import MANAGED_BY
from aimcore.runtime.children import PART_OF_LABEL as PART_OF

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
IMAGE = "ghcr.io/silogen/aim-dummy:0.1.10"
SOURCES = [{"sourceUri": "hf://org/model", "modelId": "org/model"}]


def model_obj(
    spec: Obj | None = None,
    *,
    group: str = AIM,
    kind: str = "AIMModel",
    name: str = "demo",
    namespace: str | None = "ns",
    labels: dict[str, str] | None = None,
) -> Obj:
    ref = by_kind(group, kind)
    meta: Obj = {"name": name, "uid": "u1"}
    if ref.namespaced and namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": ref.api_version,
        "kind": kind,
        "metadata": meta,
        "spec": {"image": IMAGE, **({"resources": {}} if kind.endswith("Image") else {}), **(spec or {})},
    }


def model(spec: Obj | None = None, *, group: str = AIM, kind: str = "AIMModel", **meta: Any) -> Model:
    """The model through its family (what discovery reads)."""
    return Model(by_kind(group, kind), model_obj(spec, group=group, kind=kind, **meta))


def deployment(gpu: str = "MI300X", count: int = 1, metric: str = "latency", precision: str = "fp8") -> Obj:
    return {"gpuModel": gpu, "gpuCount": count, "metric": metric, "precision": precision}


def sha_prefix(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


# -- kinds -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "kind", "want"),
    [
        (AIM, "AIMModel", "AIMServiceTemplate"),
        (AIM, "AIMClusterModel", "AIMClusterServiceTemplate"),
        (LEGACY, "AIMModel", "AIMServiceTemplate"),
        (LEGACY, "AIMClusterModel", "AIMClusterServiceTemplate"),
        (LEGACY, "AIMImage", "AIMServiceTemplate"),
        (LEGACY, "AIMClusterImage", "AIMClusterServiceTemplate"),
    ],
)
def test_template_kind_same_group_same_scope(group: str, kind: str, want: str) -> None:
    assert template_kind(by_kind(group, kind)) == by_kind(group, want)


def test_kind_families() -> None:
    for group, kind in [(AIM, "AIMModel"), (AIM, "AIMClusterModel"), (LEGACY, "AIMImage")]:
        ref = by_kind(group, kind)
        assert ref in Model.kinds
        assert ref not in Template.kinds
    for group, kind in [(AIM, "AIMServiceTemplate"), (LEGACY, "AIMClusterServiceTemplate")]:
        assert by_kind(group, kind) in Template.kinds
        assert by_kind(group, kind) not in Model.kinds
    assert by_kind(LEGACY, "AIMClusterRuntimeConfig") in RUNTIME_CONFIG_KINDS
    assert by_kind(AIM, "AIMService") not in RUNTIME_CONFIG_KINDS
    assert by_kind(AIM, "AIMService") not in Model.kinds


def test_condition_names_by_scope() -> None:
    assert templates_condition(by_kind(AIM, "AIMModel")) == "ServiceTemplatesReady"
    assert templates_condition(by_kind(AIM, "AIMClusterModel")) == "ClusterServiceTemplatesReady"
    assert model_condition(by_kind(AIM, "AIMServiceTemplate")) == "ModelReady"
    assert model_condition(by_kind(AIM, "AIMClusterServiceTemplate")) == "ClusterModelReady"


# -- models, as discovery reads them (the family) ---------------------------------------------------

# ``None``: the model refuses the spec (the other group's spelling, a null): it never reaches a
# reader (the runtime reports InvalidSpec), so that spelling means nothing either.


@pytest.mark.parametrize(
    ("group", "discovery", "auto", "want"),
    [
        (AIM, None, None, True),
        (AIM, None, False, False),
        (AIM, None, True, True),
        (AIM, {}, False, False),
        (AIM, {"extractMetadata": False}, True, False),
        (AIM, {"extractMetadata": True}, False, True),
        (AIM, {"extractMetadata": None}, False, None),
        (AIM, {"enabled": False}, None, None),  # the legacy key is not the current group's
        (LEGACY, {"enabled": False}, True, False),
        (LEGACY, {"enabled": True}, False, True),
        (LEGACY, {"extractMetadata": False}, None, None),  # nor the current key the legacy group's
        (LEGACY, None, False, False),
    ],
)
def test_extract_metadata_precedence(
    group: str, discovery: Obj | None, auto: bool | None, want: bool | None
) -> None:
    spec = {"discovery": discovery} if discovery is not None else {}
    if want is None:
        with pytest.raises(ValueError, match="does not read as its kind"):
            model(spec, group=group)
        return
    assert model(spec, group=group).extract_metadata(auto) is want


@pytest.mark.parametrize(
    ("group", "discovery", "auto", "want"),
    [
        (AIM, None, None, True),
        (AIM, None, False, False),
        (AIM, {"createServiceTemplates": False}, True, False),
        (AIM, {"createServiceTemplates": True}, False, True),
        (AIM, {"autoCreateTemplates": False}, None, None),
        (LEGACY, {"autoCreateTemplates": False}, True, False),
        (LEGACY, {"autoCreateTemplates": True}, False, True),
        (LEGACY, {"createServiceTemplates": False}, None, None),
        (LEGACY, None, True, True),
    ],
)
def test_create_templates_precedence(
    group: str, discovery: Obj | None, auto: bool | None, want: bool | None
) -> None:
    spec = {"discovery": discovery} if discovery is not None else {}
    if want is None:
        with pytest.raises(ValueError, match="does not read as its kind"):
            model(spec, group=group)
        return
    assert model(spec, group=group).create_templates(auto) is want


@pytest.mark.parametrize(
    ("group", "discovery", "auto", "extract", "create"),
    [
        (AIM, None, False, False, False),
        (AIM, {}, False, False, False),  # a setting the model fills in is not the model's own
        (AIM, {"extractMetadata": False}, True, False, True),
        (AIM, {"createServiceTemplates": True}, False, False, True),
        (LEGACY, {"enabled": False, "autoCreateTemplates": True}, None, False, True),
        (LEGACY, {}, None, True, True),
    ],
)
def test_model_family_discovery_precedence(
    group: str, discovery: Obj | None, auto: bool | None, extract: bool, create: bool
) -> None:
    found = model({"discovery": discovery} if discovery is not None else {}, group=group)
    assert found.extract_metadata(auto) is extract
    assert found.create_templates(auto) is create


def test_model_accessors() -> None:
    found = model(
        {
            "imagePullSecrets": [{"name": "a"}, {"name": ""}, {}, {"name": "b"}],
            "serviceAccountName": "sa",
            "env": [{"name": "A", "value": "1"}],
            "modelSources": SOURCES,
            "imageMetadata": {"model": {"canonicalName": "x"}},
        }
    )
    assert found.name == "demo"
    assert found.namespace == "ns"
    assert found.image == IMAGE
    assert found.pull_secrets == ["a", "b"]
    assert found.service_account == "sa"
    assert found.written_env == [{"name": "A", "value": "1"}]
    assert found.written_sources == SOURCES
    assert found.is_custom
    assert found.spec_metadata == {"model": {"canonicalName": "x"}}
    bare = model(kind="AIMClusterModel")
    assert bare.namespace is None
    assert not bare.is_custom
    assert bare.service_account is None
    assert bare.spec_metadata is None


@pytest.mark.parametrize("field", ["imagePullSecrets", "env"])
def test_a_model_with_junk_in_a_list_is_not_read(field: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"spec.{field}.1")):
        model({field: [{"name": "a"}, "junk"]})


def test_custom_templates_field_per_group() -> None:
    entry = {"name": "a"}
    assert [t.name for t in model({"customTemplates": [entry]}).custom_templates] == ["a"]
    assert [t.name for t in model({"custom": {"templates": [entry]}}, group=LEGACY).custom_templates] == ["a"]
    # the other group's field is not the model's: refused, never read as templates
    with pytest.raises(ValueError, match=r"spec\.custom\.templates"):
        model({"custom": {"templates": [entry]}})
    with pytest.raises(ValueError, match=r"spec\.customTemplates"):
        model({"customTemplates": [entry]}, group=LEGACY)


# -- templates, as discovery reads them (the family) ------------------------------------------------


def template(
    spec: Obj, group: str = AIM, kind: str = "AIMServiceTemplate", *, named: bool = True
) -> Template:
    """A template of ``group`` with ``spec``; ``named``: its model's name in the group's field."""
    ref = by_kind(group, kind)
    meta: Obj = {"name": "t"}
    if ref.namespaced:
        meta["namespace"] = "ns"
    model_name = ({"modelName": "demo"} if group == AIM else {"aimImageName": "demo"}) if named else {}
    body = {"apiVersion": ref.api_version, "kind": kind, "metadata": meta, "spec": {**model_name, **spec}}
    return Template(ref, body)


@pytest.mark.parametrize(
    ("group", "spec", "want", "required"),
    [
        (AIM, {}, GPURequirement(), False),
        (AIM, {"gpu": None}, GPURequirement(), False),
        (
            AIM,
            {"gpu": {"requests": 2, "model": "MI300X", "resourceName": "amd.com/gpu-vf"}},
            GPURequirement(model="MI300X", requests=2, resource_name="amd.com/gpu-vf"),
            True,
        ),
        (AIM, {"gpu": {"requests": 1}}, GPURequirement(requests=1), True),
        (AIM, {"gpu": {"requests": 0}}, GPURequirement(requests=0), False),
        (AIM, {"gpu": {"model": ""}}, GPURequirement(), False),
        (AIM, {"gpu": {"minVram": "64Gi"}}, GPURequirement(min_vram="64Gi"), True),
        (AIM, {"gpuSelector": {"count": 1, "model": "MI300X"}}, None, False),  # the legacy spelling
        (
            LEGACY,
            {"gpuSelector": {"count": 4, "model": "MI325X"}},
            GPURequirement(model="MI325X", requests=4),
            True,
        ),
        (LEGACY, {"gpuSelector": {"model": "MI300X"}}, GPURequirement(model="MI300X"), True),
        (LEGACY, {"gpuSelector": {"count": 0, "model": ""}}, None, False),  # the CRD wants count >= 1
        (LEGACY, {"gpu": {"requests": 1, "model": "MI300X"}}, None, False),  # the current spelling
        (LEGACY, {}, GPURequirement(), False),
    ],
)
def test_template_gpu(group: str, spec: Obj, want: GPURequirement | None, required: bool) -> None:
    if want is None:  # the template refuses the spec: no reader sees a GPU in it
        with pytest.raises(ValueError, match=r"spec\.gpu"):
            template(spec, group)
        return
    gpu = template(spec, group).gpu
    assert gpu == want
    assert gpu.required is required
    assert gpu.resource_name == want.resource_name


def test_template_accessors() -> None:
    current = template(
        {
            "modelSources": SOURCES,
            "imagePullSecrets": [{"name": "s"}],
            "serviceAccountName": "sa",
            "caching": {"enabled": True},
        }
    )
    assert current.model_name == "demo"
    assert current.name == "t"
    assert current.namespace == "ns"
    assert current.written_sources == SOURCES
    assert current.pull_secrets == ["s"]
    assert current.service_account == "sa"
    assert current.caching_enabled
    legacy = template({}, LEGACY, "AIMClusterServiceTemplate")
    assert legacy.model_name == "demo"
    assert legacy.namespace is None
    assert not legacy.caching_enabled
    assert not template({"caching": {"enabled": False}}).caching_enabled


@pytest.mark.parametrize(("group", "other"), [(AIM, "aimImageName"), (LEGACY, "modelName")])
def test_a_template_names_its_model_in_its_groups_field_only(group: str, other: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"spec.{other}")):
        template({other: "ignored"}, group)
    with pytest.raises(ValueError, match="Field required"):
        template({}, group, named=False)


# -- recommended-deployment templates (docs/original.md#derived-names) ----------------------------


def test_recommended_template_name_literal() -> None:
    # the reference example: the hash is sha256 of the Go-JSON string (with its quotes), first 4 hex
    want_hash = sha_prefix('"demo-ghcr.io/silogen/aim-dummy:0.1.10-MI300X-x1-latency-fp8"', 4)
    planned = recommended_template(model(), deployment())
    assert planned.name == f"ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp8-{want_hash}"
    assert re.fullmatch(r"ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp8-[0-9a-f]{4}", planned.name)


@pytest.mark.parametrize(
    ("name", "image", "dep", "profile"),
    [
        ("demo", IMAGE, deployment(), "1x-MI300X-lat-fp8"),
        ("demo", IMAGE, deployment("MI325X", 8, "throughput", "bf16"), "8x-MI325X-thr-bf16"),
        ("other", IMAGE, deployment(), "1x-MI300X-lat-fp8"),
        ("demo", "docker.io/amdenterpriseai/aim-qwen-qwen3-32b:0.8.5", deployment(), "1x-MI300X-lat-fp8"),
        ("demo", "registry.example.com:5000/team/" + "a" * 80 + ":1.0", deployment(), "1x-MI300X-lat-fp8"),
    ],
)
def test_recommended_template_name_follows_the_rule(name: str, image: str, dep: Obj, profile: str) -> None:
    view = model({"image": image}, name=name)
    gpu, count, metric, precision = dep["gpuModel"], dep["gpuCount"], dep["metric"], dep["precision"]
    want = derived_name(
        [image, profile], [f"{name}-{image}-{gpu}-x{count}-{metric}-{precision}"], hash_length=4
    )
    got = recommended_template(view, dep).name
    assert got == want
    assert len(got) <= 63
    assert got.endswith(f"-{profile.lower()}-{got[-4:]}")


def test_recommended_template_name_includes_model_in_hash() -> None:
    first = recommended_template(model(name="a"), deployment()).name
    second = recommended_template(model(name="b"), deployment()).name
    assert first != second
    assert first[:-4] == second[:-4]


def test_unknown_metric_is_kept_verbatim() -> None:
    planned = recommended_template(model(), deployment(metric="tokens"))
    assert "-1x-mi300x-tokens-fp8-" in planned.name
    assert planned.spec["metric"] == "tokens"


def test_recommended_template_spec() -> None:
    view = model(
        {
            "imagePullSecrets": [{"name": "pull"}],
            "serviceAccountName": "sa",
            "runtimeConfigName": "team",
            "env": [{"name": "A", "value": "1"}],
        }
    )
    planned = recommended_template(view, deployment())
    assert planned.spec == {
        "modelName": "demo",
        "metric": "latency",
        "precision": "fp8",
        # as the original writes it (issue 39, point 8): spec.hardware.gpu, no type
        "hardware": {"gpu": {"requests": 1, "model": "MI300X"}},
        "runtimeConfigName": "team",
        "imagePullSecrets": [{"name": "pull"}],
        "serviceAccountName": "sa",
    }
    assert planned.labels == {}


def test_recommended_profile_id_becomes_the_template_spec_profile_id() -> None:
    """The released original: ``recommendedDeployments[].profileId`` → ``spec.profileId``, which
    discovery and the predictor get as ``AIM_PROFILE_ID``; the name does not change with it."""
    dep = {**deployment(), "profileId": "mi300x-fp16-latency-unopt"}
    planned = recommended_template(model(), dep)
    assert planned.spec["profileId"] == "mi300x-fp16-latency-unopt"
    assert planned.name == recommended_template(model(), deployment()).name
    assert "profileId" not in recommended_template(model(), deployment()).spec
    legacy = recommended_template(model(group=LEGACY, kind="AIMClusterImage"), dep)
    assert "profileId" not in legacy.spec  # the legacy group's templates have no such field


@pytest.mark.parametrize(
    ("dep", "gpu"),
    [
        (deployment("MI300X", 2), {"requests": 2, "model": "MI300X"}),
        (deployment("MI300X", 0), None),
        (deployment("", 2), None),
        ({"gpuModel": "MI300X", "metric": "latency"}, None),
        ({"gpuCount": 4}, None),
    ],
)
def test_recommended_gpu_only_with_model_and_count(dep: Obj, gpu: Obj | None) -> None:
    spec = recommended_template(model(), dep).spec
    assert (spec.get("hardware") or {}).get("gpu") == gpu
    assert "gpuSelector" not in spec and "gpu" not in spec


def test_recommended_template_omits_unset_metric_and_precision() -> None:
    spec = recommended_template(model(), {"gpuModel": "MI300X", "gpuCount": 1}).spec
    assert "metric" not in spec
    assert "precision" not in spec


def _go_recommended_name(model_name: str, image: str, dep: Obj) -> str:
    """The original's GenerateTemplateName (internal/aimservicetemplate/utils.go): suffix and hash
    pieces are only added when the deployment sets them."""
    gpu, count, metric, precision = dep["gpuModel"], dep["gpuCount"], dep["metric"], dep["precision"]
    short = {"latency": "lat", "throughput": "thr"}.get(metric, metric)
    suffix = []
    if count > 0 and gpu:
        suffix.append(f"{count}x-{gpu}")
    elif gpu:
        suffix.append(gpu)
    elif count > 0:
        suffix.append(f"x{count}")
    suffix += [p for p in (short, precision) if p]
    hash_input = f"{model_name}-{image}"
    hash_input += f"-{gpu}" if gpu else ""
    hash_input += f"-x{count}" if count > 0 else ""
    hash_input += f"-{metric}" if metric else ""
    hash_input += f"-{precision}" if precision else ""
    return derived_name([image, "-".join(suffix)], [hash_input], hash_length=4)


def test_go_reference_rule_agrees_on_complete_deployments() -> None:
    # sanity check of the helper above: with every field set both spellings of the rule agree
    assert recommended_template(model(), deployment()).name == _go_recommended_name(
        "demo", IMAGE, deployment()
    )


@pytest.mark.parametrize(
    "dep",
    [deployment("", 0), deployment("", 2), deployment("MI300X", 0)],
    ids=["no-gpu", "count-without-model", "model-without-count"],
)
def test_recommended_name_matches_original_for_incomplete_deployments(dep: Obj) -> None:
    assert recommended_template(model(), dep).name == _go_recommended_name("demo", IMAGE, dep)


# -- custom templates ----------------------------------------------------------------------------

CUSTOM_NAME = re.compile(r"demo-custom(-[a-z0-9-]+)?-[0-9a-f]{8}")


def test_custom_model_without_templates_gets_one_from_custom_hardware() -> None:
    view = model(
        {
            "modelSources": SOURCES,
            "custom": {"hardware": {"gpu": {"requests": 2, "model": "MI300X"}, "cpu": {"requests": "4"}}},
        }
    )
    [planned] = custom_templates(view)
    assert CUSTOM_NAME.fullmatch(planned.name)
    assert planned.labels == {}
    assert planned.spec == {
        "modelName": "demo",
        "type": "unoptimized",
        # the released original's shape (issue 28): spec.hardware, its CPU in spec.resources too
        "hardware": {"gpu": {"requests": 2, "model": "MI300X"}, "cpu": {"requests": "4"}},
        "modelSources": SOURCES,
        "resources": {"requests": {"cpu": "4"}},
    }


def test_custom_model_type_from_custom_block() -> None:
    view = model({"modelSources": SOURCES, "custom": {"type": "preview"}})
    assert [t.spec["type"] for t in custom_templates(view)] == ["preview"]
    view = model(
        {
            "modelSources": SOURCES,
            "custom": {"type": "preview"},
            "customTemplates": [{"name": "a", "type": "optimized"}, {"name": "b"}],
        }
    )
    assert [t.spec["type"] for t in custom_templates(view)] == ["optimized", "preview"]


def test_model_without_sources_or_templates_has_no_custom_templates() -> None:
    assert custom_templates(model()) == []
    assert custom_templates(model({"custom": {"hardware": {"gpu": {"model": "MI300X"}}}})) == []


def test_custom_template_name_and_hash_literal() -> None:
    entry = {
        "name": "fast",
        "profile": {"precision": "fp8", "metric": "latency"},
        "hardware": {"gpu": {"requests": 2, "model": "MI300X"}},
    }
    [planned] = custom_templates(model({"modelSources": SOURCES, "customTemplates": [entry]}))
    # hash inputs: model, index, alias, precision, metric, gpu requests, gpu model (Go JSON, joined by |)
    want_hash = sha_prefix('"demo"|0|"fast"|"fp8"|"latency"|2|"MI300X"', 8)
    assert planned.name == f"demo-custom-fast-fp8-mi300x-{want_hash}"
    assert planned.labels == {ALIAS_LABEL: "fast"}
    assert planned.spec["metric"] == "latency"
    assert planned.spec["precision"] == "fp8"
    assert planned.spec["hardware"] == {"gpu": {"requests": 2, "model": "MI300X"}}


@pytest.mark.parametrize(
    ("entry", "infix"),
    [
        ({}, ""),
        ({"name": "fast"}, "-fast"),
        ({"profile": {"precision": "bf16"}}, "-bf16"),
        ({"hardware": {"gpu": {"model": "MI325X"}}}, "-mi325x"),
        ({"name": "a", "profile": {"precision": "fp8", "metric": "latency"}}, "-a-fp8"),
    ],
)
def test_custom_template_name_parts(entry: Obj, infix: str) -> None:
    [planned] = custom_templates(model({"customTemplates": [entry]}))
    assert re.fullmatch(rf"demo-custom{infix}-[0-9a-f]{{8}}", planned.name)


def test_custom_template_names_differ_by_index() -> None:
    view = model({"customTemplates": [{"name": "a"}, {"name": "a"}]})
    first, second = custom_templates(view)
    assert first.name != second.name
    assert first.name.startswith("demo-custom-a-")
    assert second.name.startswith("demo-custom-a-")


def test_custom_templates_on_an_image_model_are_additive_and_typed() -> None:
    view = model(
        {"customTemplates": [{"name": "fast", "hardware": {"gpu": {"requests": 1, "model": "MI300X"}}}]}
    )
    [planned] = custom_templates(view)
    assert planned.spec["type"] == "unoptimized"  # as the original writes it (issue 39, point 8)
    assert "modelSources" not in planned.spec
    assert planned.spec["hardware"] == {"gpu": {"requests": 1, "model": "MI300X"}}
    written = model({"customTemplates": [{"name": "fast", "type": "preview"}]})
    assert [t.spec["type"] for t in custom_templates(written)] == ["preview"]


def test_generated_templates_carry_quantities_as_kubernetes_writes_them() -> None:
    # e2e aimmodel/custom-models/cpu-only: limits 2000m is "2" in the template
    view = model(
        {"modelSources": SOURCES, "custom": {"hardware": {"cpu": {"requests": "500m", "limits": "2000m"}}}}
    )
    [planned] = custom_templates(view)
    assert planned.spec["hardware"] == {"cpu": {"requests": "500m", "limits": "2"}}
    assert planned.spec["resources"] == {"requests": {"cpu": "500m"}, "limits": {"cpu": "2"}}
    [whole] = custom_templates(
        model({"modelSources": SOURCES, "custom": {"hardware": {"cpu": {"requests": 2}}}})
    )
    assert whole.spec["hardware"] == {"cpu": {"requests": "2"}}


def test_custom_template_hardware_merges_over_custom_hardware() -> None:
    view = model(
        {
            "modelSources": SOURCES,
            "custom": {
                "hardware": {
                    "gpu": {"requests": 1, "model": "MI300X", "resourceName": "amd.com/gpu"},
                    "cpu": {"requests": "2", "limits": "4"},
                }
            },
            "customTemplates": [
                {
                    "name": "big",
                    "hardware": {
                        "gpu": {"requests": 8, "model": ""},
                        "cpu": {"requests": "2", "limits": "16"},
                    },
                },
                {"name": "plain"},
            ],
        }
    )
    big, plain = custom_templates(view)
    assert big.spec["hardware"]["gpu"] == {"requests": 8, "model": "MI300X", "resourceName": "amd.com/gpu"}
    assert big.spec["resources"] == {"requests": {"cpu": "2"}, "limits": {"cpu": "16"}}
    assert plain.spec["hardware"]["gpu"] == {"requests": 1, "model": "MI300X", "resourceName": "amd.com/gpu"}
    assert plain.spec["resources"] == {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}


def test_custom_template_env_and_alias_label() -> None:
    env = [{"name": "VLLM_X", "value": "1"}]
    view = model({"customTemplates": [{"name": "Fast", "env": env}]})
    [planned] = custom_templates(view)
    assert planned.labels == {ALIAS_LABEL: "fast"}
    assert planned.spec["env"] == env


def test_custom_templates_do_not_mutate_the_model() -> None:
    view = model(
        {
            "modelSources": SOURCES,
            "custom": {"hardware": {"gpu": {"requests": 1, "model": "MI300X"}}},
            "customTemplates": [{"name": "a", "hardware": {"gpu": {"requests": 2}}, "env": [{"name": "A"}]}],
        }
    )
    saved = copy.deepcopy(view.obj)
    [planned] = custom_templates(view)
    planned.spec["modelSources"][0]["name"] = "changed"
    planned.spec["hardware"]["gpu"]["model"] = "changed"
    assert view.obj == saved


def test_custom_template_env_inherits_model_env() -> None:
    view = model(
        {
            "modelSources": SOURCES,
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}],
            "customTemplates": [{"name": "t", "env": [{"name": "B", "value": "2"}]}],
        }
    )
    [planned] = custom_templates(view)
    assert {e["name"]: e["value"] for e in planned.spec.get("env", [])} == {"A": "1", "B": "2"}


def test_auto_custom_template_name_matches_original() -> None:
    view = model(
        {"modelSources": SOURCES, "custom": {"hardware": {"gpu": {"requests": 1, "model": "MI300X"}}}}
    )
    [planned] = custom_templates(view)
    assert planned.name == derived_name(["demo", "custom"], ["demo", 0])


def test_custom_template_hash_without_hardware_matches_original() -> None:
    entry = {"name": "fast", "profile": {"precision": "fp8", "metric": "latency"}}
    [planned] = custom_templates(model({"customTemplates": [entry]}))
    assert planned.name == derived_name(
        ["demo", "custom", "fast", "fp8"], ["demo", 0, "fast", "fp8", "latency"]
    )


@pytest.mark.parametrize(
    ("default", "override", "want"),
    [
        (None, None, {}),
        ({}, {}, {}),
        ({"gpu": {"requests": 1, "model": "MI300X"}}, None, {"gpu": {"requests": 1, "model": "MI300X"}}),
        (None, {"gpu": {"requests": 2}}, {"gpu": {"requests": 2}}),
        (
            {"gpu": {"requests": 1, "model": "MI300X", "resourceName": "amd.com/gpu"}},
            {"gpu": {"requests": 4, "model": "", "resourceName": None}},
            {"gpu": {"requests": 4, "model": "MI300X", "resourceName": "amd.com/gpu"}},
        ),
        (
            {"gpu": {"model": "MI300X"}},
            {"gpu": {"model": "MI325X", "resourceName": "amd.com/gpu-vf"}},
            {"gpu": {"model": "MI325X", "resourceName": "amd.com/gpu-vf"}},
        ),
        (
            {"cpu": {"requests": "2", "limits": "4"}},
            {"cpu": {"requests": "8"}},
            {"cpu": {"requests": "8", "limits": "4"}},
        ),
        (
            {"gpu": {"requests": 1}},
            {"cpu": {"requests": "2"}},
            {"gpu": {"requests": 1}, "cpu": {"requests": "2"}},
        ),
        ({"gpu": {"requests": 1}, "other": 1}, {"other": 2}, {"gpu": {"requests": 1}}),
        ("junk", {"gpu": {"requests": 1}}, {"gpu": {"requests": 1}}),
    ],
)
def test_merge_hardware(default: Any, override: Any, want: Obj) -> None:
    saved = copy.deepcopy((default, override))
    assert merge_hardware(default, override) == want
    assert (default, override) == saved


# -- legacy group ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["AIMImage", "AIMModel"])
def test_legacy_recommended_template_spec(kind: str) -> None:
    # a generation-1 image has no imagePullSecrets or serviceAccountName
    secrets = (
        {"imagePullSecrets": [{"name": "pull"}], "serviceAccountName": "sa"} if kind == "AIMModel" else {}
    )
    view = model({**secrets, "runtimeConfigName": "rc"}, group=LEGACY, kind=kind)
    planned = recommended_template(view, deployment("MI300X", 2))
    assert planned.spec == {
        "aimImageName": "demo",
        "metric": "latency",
        "precision": "fp8",
        "gpuSelector": {"count": 2, "model": "MI300X"},
        "runtimeConfigName": "rc",
        **({"imagePullSecrets": [{"name": "pull"}]} if secrets else {}),
    }
    # the name follows the same rule in both groups
    assert planned.name == recommended_template(model(), deployment("MI300X", 2)).name


def test_legacy_cluster_model_template_has_no_pull_secrets() -> None:
    view = model({"imagePullSecrets": [{"name": "pull"}]}, group=LEGACY, kind="AIMClusterModel")
    spec = recommended_template(view, deployment()).spec
    assert spec["aimImageName"] == "demo"
    assert "imagePullSecrets" not in spec
    assert "modelName" not in spec


def test_current_cluster_model_template_keeps_pull_secrets() -> None:
    view = model({"imagePullSecrets": [{"name": "pull"}]}, kind="AIMClusterModel")
    assert recommended_template(view, deployment()).spec["imagePullSecrets"] == [{"name": "pull"}]


@pytest.mark.parametrize(
    ("gpu", "selector"),
    [
        ({"requests": 2, "model": "MI300X"}, {"count": 2, "model": "MI300X"}),
        ({"requests": 2}, {"count": 2}),
        ({"model": "MI300X"}, {"model": "MI300X"}),
        ({"requests": 0, "model": ""}, None),
    ],
)
def test_legacy_custom_templates_use_gpu_selector(gpu: Obj, selector: Obj | None) -> None:
    view = model(
        {"modelSources": SOURCES, "custom": {"templates": [{"name": "t", "hardware": {"gpu": gpu}}]}},
        group=LEGACY,
    )
    [planned] = custom_templates(view)
    assert planned.spec.get("gpuSelector") == selector
    assert "gpu" not in planned.spec
    assert planned.spec["aimImageName"] == "demo"
    assert planned.spec["type"] == "unoptimized"


def test_legacy_env_only_on_namespaced_templates() -> None:
    entry = {"name": "t", "env": [{"name": "A", "value": "1"}]}
    [namespaced] = custom_templates(model({"custom": {"templates": [entry]}}, group=LEGACY))
    [cluster] = custom_templates(
        model({"custom": {"templates": [entry]}}, group=LEGACY, kind="AIMClusterModel")
    )
    assert namespaced.spec["env"] == [{"name": "A", "value": "1"}]
    assert "env" not in cluster.spec


# -- template bodies ------------------------------------------------------------------------------


def test_template_body_namespaced() -> None:
    view = model(labels={"team": "ml"})
    planned = PlannedTemplate("tpl", {"modelName": "demo"}, {ALIAS_LABEL: "fast"})
    inherited = {"aim.eai.amd.com/service": "svc", ORIGIN_LABEL: "inherited", "team": "ml"}
    kind = template_kind(view.ref)
    body = template_body(planned, kind, view, inherited)
    assert body["apiVersion"] == "aim.eai.amd.com/v1alpha1"
    assert body["kind"] == "AIMServiceTemplate"
    assert body["spec"] == {"modelName": "demo"}
    meta = body["metadata"]
    assert meta["name"] == "tpl"
    assert meta["namespace"] == "ns"
    assert meta["labels"] == {
        "aim.eai.amd.com/service": "svc",
        "team": "ml",
        MODEL_LABEL: "demo",
        ORIGIN_LABEL: "auto-generated",
        MANAGED_BY: "aim-model-controller",
        PART_OF: "aim-engine",
        ALIAS_LABEL: "fast",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMModel",
            "name": "demo",
            "uid": "u1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_template_body_planned_labels_win_over_defaults() -> None:
    view = model()
    planned = PlannedTemplate("tpl", {}, {ORIGIN_LABEL: "custom", MODEL_LABEL: "x"})
    labels = template_body(planned, template_kind(view.ref), view, {})["metadata"]["labels"]
    assert labels[ORIGIN_LABEL] == "custom"
    assert labels[MODEL_LABEL] == "x"


def test_template_body_model_label_is_a_valid_label_value() -> None:
    view = model(name="Demo.Model_v1")
    labels = template_body(PlannedTemplate("t", {}), template_kind(view.ref), view, {})["metadata"]["labels"]
    assert labels[MODEL_LABEL] == "demo.model_v1"


@pytest.mark.parametrize(("group", "kind"), [(AIM, "AIMClusterModel"), (LEGACY, "AIMClusterImage")])
def test_template_body_cluster_scoped_has_no_namespace(group: str, kind: str) -> None:
    view = model(group=group, kind=kind)
    body = template_body(PlannedTemplate("t", {}), template_kind(view.ref), view, {})
    assert "namespace" not in body["metadata"]
    assert body["kind"] == "AIMClusterServiceTemplate"
    assert body["apiVersion"] == f"{group}/v1alpha1"
    assert body["metadata"]["ownerReferences"][0]["kind"] == kind


def test_owner_reference() -> None:
    ref = by_kind(LEGACY, "AIMImage")
    obj = {"metadata": {"name": "img", "uid": "u9", "namespace": "ns"}}
    assert owner_reference(ref, obj) == {
        "apiVersion": "aim.silogen.ai/v1alpha1",
        "kind": "AIMImage",
        "name": "img",
        "uid": "u9",
        "controller": True,
        "blockOwnerDeletion": True,
    }


# -- differs / contains ---------------------------------------------------------------------------


def _body() -> Obj:
    view = model()
    planned = recommended_template(view, deployment())
    body: Obj = template_body(planned, template_kind(view.ref), view, {"aim.eai.amd.com/service": "svc"})
    return body


def _existing(**changes: Any) -> Obj:
    """The body as the server returns it: defaults, status and bookkeeping added."""
    obj = copy.deepcopy(_body())
    obj["metadata"].update({"uid": "t1", "resourceVersion": "7", "generation": 1})
    obj["metadata"]["labels"]["extra"] = "added-by-someone"
    obj["spec"]["hardware"]["gpu"]["resourceName"] = "amd.com/gpu"
    obj["spec"]["caching"] = {"enabled": False}
    obj["status"] = {"status": "Ready"}
    for path, value in changes.items():
        node = obj
        *parents, last = path.split("__")
        for part in parents:
            node = node[part]
        if value is None:
            node.pop(last)
        else:
            node[last] = value
    return obj


@pytest.mark.parametrize(
    ("existing", "want"),
    [
        (_existing(), False),
        (_existing(spec__precision="bf16"), True),
        (_existing(spec__metric=None), True),
        (
            _existing(
                spec__hardware={"gpu": {"requests": 2, "model": "MI300X", "resourceName": "amd.com/gpu"}}
            ),
            True,
        ),
        (_existing(metadata__labels={"aim.eai.amd.com/model": "demo"}), True),
        (_existing(metadata__ownerReferences=None), True),
        (_existing(metadata__ownerReferences=[{"uid": "someone-else"}]), True),
        (_existing(metadata__ownerReferences=[{"uid": "someone-else"}, {"uid": "u1"}]), False),
    ],
    ids=[
        "server-defaults",
        "changed-spec",
        "missing-spec-field",
        "changed-nested",
        "missing-labels",
        "no-owner",
        "other-owner",
        "extra-owner",
    ],
)
def test_differs(existing: Obj, want: bool) -> None:
    assert differs(existing, _body()) is want


def test_differs_on_changed_label_value() -> None:
    existing = _existing()
    existing["metadata"]["labels"]["aim.eai.amd.com/service"] = "other"
    assert differs(existing, _body())


def test_body_without_owner_only_compares_spec_and_labels() -> None:
    body = _body()
    body["metadata"].pop("ownerReferences")
    assert not differs(_existing(metadata__ownerReferences=None), body)


@pytest.mark.parametrize(
    ("have", "want", "result"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, True),
        ({"a": {"x": 1}}, {"a": {"x": 2}}, False),
        ({"a": 1}, {"a": {"x": 1}}, False),
        ([{"a": 1, "b": 2}, {"c": 3}], [{"a": 1}, {"c": 3}], True),
        ([{"a": 1}], [{"a": 1}, {"a": 1}], False),
        ([{"a": 1}, {"a": 1}], [{"a": 1}], False),
        ([1, 2], [2, 1], False),
        ({"a": [1]}, {"a": 1}, False),
        (1, 1, True),
        ("1", 1, False),
        (None, None, True),
        ({}, {"a": None}, True),
        ({}, {}, True),
    ],
)
def test_contains(have: Any, want: Any, result: bool) -> None:
    assert contains(have, want) is result
