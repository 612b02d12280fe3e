"""deploy/samples: one object of every kind of the three API groups, and each is what the CRDs
accept as written. Every sample is created on the real API server (not a dry run) and read back:
every field written is there with the value written (nothing pruned, nothing rewritten); each is
also valid for the pydantic model the CRDs are generated from (unknown fields refused, and the
rules the models check)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from aimcore.api.crds.registry import ALL_KINDS
from aimcore.api.kinds import by_kind
from aimcore.runtime.kube import Kube
from tests.helpers import missing_or_changed

SAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "samples"
MODELS = {(k.crd.group, k.crd.kind): k for k in ALL_KINDS}

Obj = dict[str, Any]


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


@pytest.mark.cluster
async def test_every_sample_is_created_and_reads_back_unpruned(kube: Kube, namespace: str) -> None:
    suffix = secrets.token_hex(3)
    created: list[tuple[Any, str | None, str]] = []
    problems: dict[str, list[str]] = {}
    try:
        for _, doc in SAMPLE_DOCS:
            ref = by_kind(doc["apiVersion"].split("/")[0], doc["kind"])
            body = yaml.safe_load(yaml.safe_dump(doc))  # a copy
            if ref.namespaced:
                body["metadata"]["namespace"] = namespace
            else:  # cluster-scoped: a name of this test's own (the session's cluster is shared)
                body["metadata"]["name"] = f"{body['metadata']['name']}-{suffix}"
            ns = body["metadata"].get("namespace")
            await kube.create(ref, body)
            created.append((ref, ns, body["metadata"]["name"]))
            read = await kube.get(ref, ns, body["metadata"]["name"])
            assert read is not None, body["metadata"]
            diff = missing_or_changed(body["spec"], read["spec"])
            if diff:
                problems[f"{doc['apiVersion']} {doc['kind']}"] = diff
        assert problems == {}
        assert len(created) == len(MODELS)
    finally:
        for ref, ns, name in created:
            if ns is None:
                await kube.delete(ref, None, name)
