"""AIM label parsing: both prefixes, JSON and Python-dict recommendedDeployments, malformed labels."""

from __future__ import annotations

import pytest

from aimcore.api.crds.aim import RecommendedDeployment
from aimcore.domain.oci import LabelError, image_metadata
from aimcore.domain.oci.labels import parse_recommended_deployments

DUMMY_DEPLOYMENTS = (
    "{'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency', "
    "'description': 'Optimized for latency on MI300X', 'profileId': 'p1'}, "
    "{'gpuModel': 'MI300X', 'gpuCount': 8, 'precision': 'fp16', 'metric': 'throughput', 'description': None}"
)


def test_new_prefix_full_set() -> None:
    labels = {
        "com.amd.aim.model.canonicalName": "meta-llama/Llama-3.1-8B-Instruct",
        "com.amd.aim.model.source": "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct",
        "com.amd.aim.title": "Llama 3.1 8B",
        "com.amd.aim.description.full": "A model",
        "com.amd.aim.release.notes": "first",
        "com.amd.aim.model.tags": "text-generation, chat,,instruction ",
        "com.amd.aim.model.versions": "3.1",
        "com.amd.aim.model.variants": "8B,70B",
        "com.amd.aim.hfToken.required": "True",
        "com.amd.aim.model.recommendedDeployments": (
            '[{"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency"}]'
        ),
        "org.opencontainers.image.title": "aim-llama",
        "org.opencontainers.image.version": "0.7.0",
        "org.opencontainers.image.licenses": "Apache-2.0",
        "unrelated": "kept",
    }
    meta = image_metadata(labels)
    assert meta.model is not None and meta.oci is not None
    assert meta.model.canonical_name == "meta-llama/Llama-3.1-8B-Instruct"
    assert meta.model.source == "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct"
    assert meta.model.title == "Llama 3.1 8B"
    assert meta.model.description_full == "A model"
    assert meta.model.release_notes == "first"
    assert meta.model.tags == ["text-generation", "chat", "instruction"]
    assert meta.model.versions == ["3.1"]
    assert meta.model.variants == ["8B", "70B"]
    assert meta.model.hf_token_required is True
    assert meta.model.recommended_deployments == [
        RecommendedDeployment(gpu_model="MI300X", gpu_count=1, precision="fp8", metric="latency")
    ]
    assert meta.oci.title == "aim-llama" and meta.oci.version == "0.7.0" and meta.oci.licenses == "Apache-2.0"
    assert meta.original_labels == labels
    wire = meta.wire()
    assert wire["model"]["canonicalName"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert wire["model"]["recommendedDeployments"][0] == {
        "gpuModel": "MI300X",
        "gpuCount": 1,
        "precision": "fp8",
        "metric": "latency",
    }


def test_legacy_prefix_and_new_prefix_wins() -> None:
    legacy = image_metadata(
        {
            "org.amd.silogen.model.canonicalName": "old/name",
            "org.amd.silogen.hfToken.required": "false",
            "org.amd.silogen.model.recommendedDeployments": DUMMY_DEPLOYMENTS,
        }
    )
    assert legacy.model is not None
    assert legacy.model.canonical_name == "old/name"
    assert legacy.model.hf_token_required is False
    assert legacy.model.recommended_deployments is not None
    assert len(legacy.model.recommended_deployments) == 2
    both = image_metadata(
        {"org.amd.silogen.model.canonicalName": "old/name", "com.amd.aim.model.canonicalName": "new/name"}
    )
    assert both.model is not None and both.model.canonical_name == "new/name"


def test_model_deployments_alias() -> None:
    meta = image_metadata({"com.amd.aim.model.deployments": '{"gpuModel": "MI325X", "gpuCount": 2}'})
    assert meta.model is not None
    assert meta.model.recommended_deployments == [RecommendedDeployment(gpu_model="MI325X", gpu_count=2)]


def test_no_labels_no_aim_labels() -> None:
    empty = image_metadata({})
    assert (empty.model, empty.oci, empty.original_labels) == (None, None, None)
    plain = image_metadata({"maintainer": "x"})
    assert plain.model is None and plain.oci is None and plain.original_labels == {"maintainer": "x"}


@pytest.mark.parametrize(
    "text",
    [
        DUMMY_DEPLOYMENTS,  # Python dicts, comma-separated, None, profileId
        f"[{DUMMY_DEPLOYMENTS}]",
        '[{"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency", '
        '"description": "Optimized for latency on MI300X"}, '
        '{"gpuModel": "MI300X", "gpuCount": 8, "precision": "fp16", "metric": "throughput", '
        '"description": null}]',
        '{"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency", '
        '"description": "Optimized for latency on MI300X"}, '
        '{"gpuModel": "MI300X", "gpuCount": 8, "precision": "fp16", "metric": "throughput"}',
        # the original's lenient form: single quotes with JSON literals
        "{'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency', "
        "'description': 'Optimized for latency on MI300X', 'x': true}, "
        "{'gpuModel': 'MI300X', 'gpuCount': 8, 'precision': 'fp16', 'metric': 'throughput', "
        "'description': null}",
    ],
)
def test_recommended_deployments_forms(text: str) -> None:
    deployments = parse_recommended_deployments(text, "com.amd.aim.model.recommendedDeployments")
    assert deployments is not None
    assert [(d.gpu_model, d.gpu_count, d.precision, d.metric) for d in deployments] == [
        ("MI300X", 1, "fp8", "latency"),
        ("MI300X", 8, "fp16", "throughput"),
    ]
    assert deployments[0].description == "Optimized for latency on MI300X"


def test_profile_id_is_read_in_both_spellings() -> None:
    text = '[{"gpuModel": "MI300X", "profileId": "vllm-mi300x-fp16-tp1-latency"}, {"profile_id": "p2"}]'
    deployments = parse_recommended_deployments(text, "l") or []
    assert [d.profile_id for d in deployments] == ["vllm-mi300x-fp16-tp1-latency", "p2"]
    assert deployments[0].wire() == {"gpuModel": "MI300X", "profileId": "vllm-mi300x-fp16-tp1-latency"}


def test_python_style_with_booleans_and_snake_case() -> None:
    [d] = parse_recommended_deployments("[{'gpu_model': 'MI355X', 'gpu_count': 4, 'extra': True}]", "l") or []
    assert (d.gpu_model, d.gpu_count) == ("MI355X", 4)
    assert parse_recommended_deployments("  ", "l") is None
    assert parse_recommended_deployments("[]", "l") == []


def test_literal_eval_never_evaluates_code() -> None:
    with pytest.raises(LabelError):
        parse_recommended_deployments("__import__('os').system('touch /tmp/pwned-aim')", "l")
    with pytest.raises(LabelError):
        parse_recommended_deployments("[{'gpuCount': (lambda: 1)()}]", "l")


@pytest.mark.parametrize(
    ("labels", "label", "fragment"),
    [
        (
            {"com.amd.aim.model.recommendedDeployments": "{'gpuModel': 'MI300X'"},
            "com.amd.aim.model.recommendedDeployments",
            "neither JSON",
        ),
        (
            {"org.amd.silogen.model.recommendedDeployments": "not json at all"},
            "org.amd.silogen.model.recommendedDeployments",
            "neither JSON",
        ),
        (
            {"com.amd.aim.model.recommendedDeployments": '"a string"'},
            "com.amd.aim.model.recommendedDeployments",
            "list of objects",
        ),
        (
            {"com.amd.aim.model.recommendedDeployments": "42"},
            "com.amd.aim.model.recommendedDeployments",
            "list of objects",
        ),
        (
            {"com.amd.aim.model.recommendedDeployments": "[1, 2]"},
            "com.amd.aim.model.recommendedDeployments",
            "entry 0",
        ),
        (
            {"com.amd.aim.model.recommendedDeployments": '[{"gpuCount": "many"}]'},
            "com.amd.aim.model.recommendedDeployments",
            "gpuCount",
        ),
        (
            {"com.amd.aim.model.recommendedDeployments": '[{"gpuCount": 1}, {"gpuCount": true}]'},
            "com.amd.aim.model.recommendedDeployments",
            "entry 1",
        ),
        (
            {"com.amd.aim.model.recommendedDeployments": '[{"gpuModel": ["MI300X"]}]'},
            "com.amd.aim.model.recommendedDeployments",
            "gpuModel",
        ),
        (
            {"com.amd.aim.model.recommendedDeployments": "[" * 100_000},
            "com.amd.aim.model.recommendedDeployments",
            "",
        ),
        ({"com.amd.aim.hfToken.required": "maybe"}, "com.amd.aim.hfToken.required", "not a boolean"),
        ({"org.amd.silogen.hfToken.required": "2"}, "org.amd.silogen.hfToken.required", "not a boolean"),
    ],
)
def test_malformed_labels_raise_label_error_naming_the_label(
    labels: dict[str, str], label: str, fragment: str
) -> None:
    with pytest.raises(LabelError) as info:
        image_metadata(labels)
    assert info.value.label == label
    assert label in str(info.value)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_oversized_deployments_label() -> None:
    with pytest.raises(LabelError, match="longer than"):
        parse_recommended_deployments("[" + "{}," * 200_000 + "{}]", "l")
