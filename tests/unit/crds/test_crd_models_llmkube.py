"""The LLMKube ``Model`` pydantic classes against the seed JSON schema they were written from.

The seed walk makes drift fail loudly: a renamed/missing property, a changed enum, default,
pattern, bound, required list, CEL rule or description on either side breaks the test.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from aimcore.api.crds.llmkube import KINDS, Model, ModelPhase, ModelSpec

REPO_ROOT = Path(__file__).resolve().parents[3]
SEED_PATH = REPO_ROOT / ".." / "shared" / "seeds" / "004_8f818b7cbc5ded58.txt"

# Keywords compared wherever the seed states them (besides properties/items, walked separately).
COMPARED = (
    "enum",
    "default",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "format",
    "description",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
)

# metav1.Condition is base.py's shared type (it is not ours to change here): below
# status.conditions[] only property names are compared.
NAMES_ONLY = ("status.conditions[]",)


def _seed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SEED_PATH.read_text())
    return data


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$ref`` and drop the ``null`` branch of ``X | None``; outer keys win on merge."""
    node = dict(node)
    while True:
        if "$ref" in node:
            target = defs[node.pop("$ref").rsplit("/", 1)[-1]]
            node = {**target, **node}
            continue
        if "anyOf" in node:
            branches = [b for b in node["anyOf"] if b.get("type") != "null"]
            if len(branches) == 1:
                rest = {k: v for k, v in node.items() if k != "anyOf"}
                node = {**_resolve(branches[0], defs), **rest}
                continue
        return node


# patterns widened on purpose, as strict supersets of the seed's (docs/status.md, deliberate
# differences): `oci://` model sources (issue 30)
WIDENED = {
    "spec.source": (
        r"^(https?|file|pvc|hf)://.*|^/[^\s]+$|^[a-zA-Z0-9][\w\-\.\/]+$",
        r"^(https?|file|pvc|hf|oci)://.*|^/[^\s]+$|^[a-zA-Z0-9][\w\-\.\/]+$",
    )
}


def _walk(seed: dict[str, Any], model: dict[str, Any], defs: dict[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    model = _resolve(model, defs)
    names_only = any(path.startswith(p) for p in NAMES_ONLY)
    if not names_only:
        for key in COMPARED:
            if key in seed or (key in model and key not in ("description", "format")):
                got = model.get(key)
                want = seed.get(key)
                if key == "enum" and got is not None and want is not None:
                    got, want = sorted(got), sorted(want)
                if key == "pattern" and path in WIDENED and (want, got) == WIDENED[path]:
                    continue
                if got != want:
                    problems.append(f"{path}: {key} seed={want!r} model={got!r}")
        if sorted(seed.get("required", [])) != sorted(model.get("required", [])):
            problems.append(f"{path}: required seed={seed.get('required')} model={model.get('required')}")
        # extra="forbid" is what makes unknown fields an error in Python
        if (
            seed.get("additionalProperties") is False
            and "properties" in seed
            and model.get("additionalProperties") is not False
        ):
            problems.append(f"{path}: model accepts unknown fields")
    seed_props = seed.get("properties", {})
    model_props = model.get("properties", {})
    for name in sorted(set(model_props) - set(seed_props)):
        problems.append(f"{path}.{name}: in model, not in seed")
    for name, sub in seed_props.items():
        if name not in model_props:
            problems.append(f"{path}.{name}: in seed, missing from model")
            continue
        problems += _walk(sub, model_props[name], defs, f"{path}.{name}".lstrip("."))
    if "items" in seed:
        model_items = model.get("items")
        if model_items is None:
            problems.append(f"{path}: seed has items, model is not an array")
        else:
            problems += _walk(seed["items"], model_items, defs, f"{path}[]")
    return problems


def test_model_matches_seed_schema() -> None:
    seed = _seed()
    schema = Model.model_json_schema(by_alias=True)
    defs = schema.get("$defs", {})
    assert "spec" in schema["required"]
    problems: list[str] = []
    for part in ("spec", "status"):
        problems += _walk(seed["properties"][part], schema["properties"][part], defs, part)
    assert problems == []


def test_walker_catches_drift() -> None:
    seed = _seed()
    drifted = copy.deepcopy(seed)
    gpu = drifted["properties"]["spec"]["properties"]["hardware"]["properties"]["gpu"]
    gpu["properties"]["vendor"]["enum"].append("apple")
    gpu["properties"]["vendor"]["default"] = "amd"
    gpu["properties"]["newField"] = {"type": "string"}
    drifted["properties"]["status"]["properties"]["sourceETag"]["description"] = "changed"
    schema = Model.model_json_schema(by_alias=True)
    defs = schema.get("$defs", {})
    problems: list[str] = []
    for part in ("spec", "status"):
        problems += _walk(drifted["properties"][part], schema["properties"][part], defs, part)
    text = "\n".join(problems)
    assert "spec.hardware.gpu.vendor: enum" in text
    assert "spec.hardware.gpu.vendor: default" in text
    assert "spec.hardware.gpu.newField: in seed, missing from model" in text
    assert "status.sourceETag: description" in text


def test_crd_info() -> None:
    assert (Model,) == KINDS
    crd = Model.crd
    assert crd.api_version == "inference.llmkube.dev/v1alpha1"
    assert crd.crd_name == "models.inference.llmkube.dev"
    assert crd.namespaced
    assert crd.short_names == ("mdl",)
    assert [c.json_path for c in crd.printer_columns] == [
        ".status.phase",
        ".status.size",
        ".spec.hardware.accelerator",
        ".status.gguf.architecture",
        ".metadata.creationTimestamp",
    ]


def _full() -> dict[str, Any]:
    return {
        "apiVersion": "inference.llmkube.dev/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "llama", "namespace": "team-a", "labels": {"app": "x"}},
        "spec": {
            "source": "hf://org/repo@main",
            "format": "gguf",
            "files": ["model-Q4_K_M.gguf"],
            "mmproj": "mmproj-f16.gguf",
            "quantization": "Q4_K_M",
            "refreshPolicy": "OnChange",
            "sha256": "a" * 64,
            "resources": {"cpu": "2", "memory": "4Gi"},
            "hardware": {
                "accelerator": "cuda",
                "memoryBudget": "24Gi",
                "memoryFraction": 0.5,
                "gpu": {
                    "enabled": True,
                    "count": 2,
                    "layers": -1,
                    "memory": "16Gi",
                    "vendor": "nvidia",
                    "tolerationKey": "nvidia.com/gpu",
                    "resourceClaims": [
                        {"name": "gpu0", "resourceClaimName": "claim-0"},
                        {"name": "gpu1", "resourceClaimTemplateName": "tmpl"},
                    ],
                    "sharding": {"strategy": "tensor", "layerSplit": ["0-15", "16-31"]},
                },
            },
        },
        "status": {
            "phase": "Ready",
            "size": "4.1 GiB",
            "path": "/models/abc/model.gguf",
            "cacheKey": "0123456789abcdef",
            "sha256": "b" * 64,
            "acceleratorReady": True,
            "lastUpdated": "2026-01-01T00:00:00Z",
            "lastRevalidated": "2026-01-01T01:00:00Z",
            "sourceETag": '"etag-1"',
            "sourceContentLength": 4400000000,
            "stagedFiles": ["model-Q4_K_M.gguf", "mmproj-f16.gguf"],
            "gguf": {
                "architecture": "llama",
                "modelName": "Llama",
                "quantization": "Q4_K_M",
                "contextLength": 131072,
                "embeddingSize": 4096,
                "layerCount": 32,
                "headCount": 32,
                "tensorCount": 291,
                "fileVersion": 3,
                "license": "llama3.1",
            },
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "RuntimeResolved",
                    "message": "ok",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "observedGeneration": 1,
                }
            ],
        },
    }


def test_round_trip() -> None:
    d = _full()
    m = Model.model_validate(d)
    assert m.wire() == d
    assert m.status is not None
    assert m.status.phase is ModelPhase.READY
    assert m.status.source_etag == '"etag-1"'
    assert m.spec.sha256 == "a" * 64


def test_defaults_are_filled() -> None:
    spec = ModelSpec.model_validate({"source": "/mnt/models/m.gguf", "hardware": {"gpu": {"sharding": {}}}})
    wire = spec.wire()
    assert wire["format"] == "gguf"
    assert wire["refreshPolicy"] == "IfNotPresent"
    assert wire["hardware"]["accelerator"] == "cpu"
    assert wire["hardware"]["gpu"]["vendor"] == "nvidia"
    assert wire["hardware"]["gpu"]["sharding"]["strategy"] == "layer"


def _with(path: list[str | int], value: Any) -> dict[str, Any]:
    d = _full()
    node: Any = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return d


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["spec", "format"], "onnx"),
        (["spec", "refreshPolicy"], "Always"),
        (["spec", "hardware", "accelerator"], "tpu"),
        (["spec", "hardware", "gpu", "vendor"], "apple"),
        (["spec", "hardware", "gpu", "runtime"], "cuda"),
        (["spec", "hardware", "gpu", "sharding", "strategy"], "expert"),
        (["status", "phase"], "Running"),
        (["spec", "source"], "s3://bucket/key"),
        (["spec", "source"], "-bad"),
        (["spec", "sha256"], "xyz"),
        (["spec", "sha256"], "a" * 63),
        (["spec", "hardware", "gpu", "tolerationKey"], "NoSlash"),
        (["spec", "hardware", "gpu", "count"], 9),
        (["spec", "hardware", "gpu", "count"], -1),
        (["spec", "hardware", "gpu", "layers"], -2),
        (
            ["spec", "hardware", "gpu", "resourceClaims"],
            [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(17)],
        ),
        (["spec", "hardware", "gpu", "bogus"], 1),
    ],
)
def test_rejects_invalid(path: list[str | int], value: Any) -> None:
    with pytest.raises(ValidationError):
        Model.model_validate(_with(path, value))


def test_source_forms_accepted() -> None:
    for source in (
        "https://huggingface.co/org/repo/resolve/main/model.gguf",
        "file:///mnt/models/model.gguf",
        "/mnt/models/model.gguf",
        "pvc://my-models-pvc/path/to/model.gguf",
        "hf://org/repo",
        "org/repo",
    ):
        assert ModelSpec.model_validate({"source": source}).source == source


def test_spec_source_required() -> None:
    with pytest.raises(ValidationError):
        ModelSpec.model_validate({})


@pytest.mark.parametrize(
    "claim",
    [
        {"name": "gpu0"},
        {"name": "gpu0", "resourceClaimName": "a", "resourceClaimTemplateName": "b"},
    ],
)
def test_claim_needs_exactly_one_source(claim: dict[str, str]) -> None:
    d = _with(["spec", "hardware", "gpu", "resourceClaims"], [claim])
    with pytest.raises(ValidationError, match="each claim must have exactly one of resourceClaimName"):
        Model.model_validate(d)


def test_resource_name_and_claims_exclusive() -> None:
    d = _with(["spec", "hardware", "gpu", "resourceName"], "nvidia.com/gpu")
    with pytest.raises(ValidationError, match="resourceClaims and resourceName are mutually exclusive"):
        Model.model_validate(d)
    # an empty claim list does not conflict (CEL: size() > 0)
    ok = _with(["spec", "hardware", "gpu", "resourceClaims"], [])
    ok["spec"]["hardware"]["gpu"]["resourceName"] = "nvidia.com/gpu"
    Model.model_validate(ok)
    # neither set is fine too
    del ok["spec"]["hardware"]["gpu"]["resourceClaims"]
    del ok["spec"]["hardware"]["gpu"]["resourceName"]
    Model.model_validate(ok)
