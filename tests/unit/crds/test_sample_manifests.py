"""deploy/samples: one object of every kind of the three API groups, each valid for the pydantic
model the CRDs are generated from (unknown fields refused, and the rules the models check) and
read by it as written; the README lists them. The API server's reading:
``tests/cluster/test_samples.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aimcore.api.crds.registry import ALL_KINDS
from aimcore.api.types import Obj
from tests.helpers import missing_or_changed

SAMPLES = Path(__file__).resolve().parents[3] / "deploy" / "samples"
MODELS = {(k.crd.group, k.crd.kind): k for k in ALL_KINDS}


def samples() -> list[tuple[str, Obj]]:
    found = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found.append((path.name, doc))
    return found


SAMPLE_DOCS = samples()


def test_a_sample_of_every_kind_in_all_three_groups() -> None:
    kinds = {(doc["apiVersion"].split("/")[0], doc["kind"]) for _, doc in SAMPLE_DOCS}
    assert kinds == set(MODELS)
    assert {g for g, _ in kinds} == {"aim.eai.amd.com", "aim.silogen.ai", "inference.llmkube.dev"}
    names = [(doc["kind"], doc["apiVersion"], doc["metadata"]["name"]) for _, doc in SAMPLE_DOCS]
    assert len(names) == len(set(names))
    for file, doc in SAMPLE_DOCS:
        assert file == f"{doc['apiVersion'].split('/')[0]}.yaml", (file, doc["kind"])
        assert "namespace" not in doc["metadata"], doc["metadata"]  # applied with -n


def test_the_readme_lists_every_kind() -> None:
    readme = (SAMPLES / "README.md").read_text()
    for _, doc in SAMPLE_DOCS:
        row = next(line for line in readme.splitlines() if f"| {doc['apiVersion'].split('/')[0]} " in line)
        assert doc["kind"] in row, doc["kind"]


@pytest.mark.parametrize(
    "doc",
    [d for _, d in SAMPLE_DOCS],
    ids=[f"{d['apiVersion'].split('/')[0]}-{d['kind']}" for _, d in SAMPLE_DOCS],
)
def test_the_sample_is_valid_for_its_model(doc: Obj) -> None:
    model = MODELS[(doc["apiVersion"].split("/")[0], doc["kind"])]
    assert missing_or_changed(doc, model.model_validate(doc).wire()) == []  # read as written
