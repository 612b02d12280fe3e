"""Derived names (docs/original.md#derived-names) and the labels/annotations of models created from
a source."""

from __future__ import annotations

import pytest

from aim_registry_sync.filters import Image, model_body
from aimcore.domain.naming import derived_name, go_json, label_value, name_hash, sanitize_part


def test_reference_example_aimmodel_from_image() -> None:
    # docs/original.md#derived-names: AIMModel from `amdenterpriseai/aim-qwen-qwen3-32b:0.8.5`
    image = "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"
    assert derived_name(["aim-qwen-qwen3-32b", "0.8.5"], [image]) == "aim-qwen-qwen3-32b-0-8-5-cdc1fb22"


@pytest.mark.parametrize(
    ("part", "want"),
    [
        ("Silogen/AIM_Llama", "silogen-aim-llama"),
        ("--x--", "x"),
        ("", "part"),
        ("///", "part"),
        ("a" * 70, "a" * 63),
        ("a" * 62 + "-b", "a" * 62),
    ],
)
def test_sanitize_part(part: str, want: str) -> None:
    assert sanitize_part(part) == want


def test_go_json_matches_go_encoding() -> None:
    assert go_json("a<b>&c") == '"a\\u003cb\\u003e\\u0026c"'
    assert go_json("é") == '"é"'
    assert go_json({"b": 1, "a": [None, True]}) == '{"a":[null,true],"b":1}'
    assert name_hash(["x", "y"], 6) == name_hash(["x", "y"])[:6]


def test_long_names_shorten_the_longest_part_first() -> None:
    name = derived_name(["a" * 50, "b" * 30], ["h"], hash_length=6)
    assert len(name) == 63
    first, second, digest = name.split("-")
    # the longest part loses a character at a time, the first on ties: 50/30 → 30/30 → 27/28
    assert (len(first), len(second), len(digest)) == (27, 28, 6)


def test_label_value() -> None:
    assert label_value("My Source!!name") == "my_source_name"
    assert label_value("-a.b-") == "a.b"
    assert len(label_value("x" * 100)) == 63


def test_model_from_source_name_labels_annotations() -> None:
    image = Image("ghcr.io", "silogen/aim-llama", "0.8.5")
    assert image.uri == "ghcr.io/silogen/aim-llama:0.8.5"
    assert Image("docker.io", "amdenterpriseai/aim-x", "1.0.0").uri == "amdenterpriseai/aim-x:1.0.0"
    expected_hash = name_hash(["ghcr.io", "silogen/aim-llama", "0.8.5"], 6)
    assert image.model_name == f"silogen-aim-llama-0-8-5-{expected_hash}"
    body = model_body(image, "public-models", ["pull"])
    assert body["metadata"] == {
        "name": image.model_name,
        "labels": {
            "aim.eai.amd.com/model-source": "public-models",
            "aim.eai.amd.com/origin": "auto-generated",
            "app.kubernetes.io/managed-by": "aim-registry-sync",
        },
        "annotations": {
            "aim.eai.amd.com/source-registry": "ghcr.io",
            "aim.eai.amd.com/source-repository": "silogen/aim-llama",
            "aim.eai.amd.com/source-tag": "0.8.5",
        },
    }
    assert body["spec"] == {
        "image": "ghcr.io/silogen/aim-llama:0.8.5",
        "imagePullSecrets": [{"name": "pull"}],
    }
    assert "imagePullSecrets" not in model_body(image, "s", [])["spec"]  # type: ignore[operator]
