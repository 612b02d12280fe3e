"""The bus contract as AsyncAPI (aimcore.api.bus.contract): the committed docs/asyncapi.yaml is the
generated one; it names every stream and every subject prefix the topology declares; and messages
built by the services' own code validate against the payload schemas it publishes, while a payload
missing a required field does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aimcore.api.bus import contract, subjects, topology
from aimcore.api.bus.messages import (
    ChangeEvent,
    ChangeType,
    ConditionReport,
    Decision,
    ObjectRef,
    StatusReport,
)
from aimcore.api.kinds import by_kind

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "asyncapi.yaml"
MODEL = by_kind("aim.eai.amd.com", "AIMModel")


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load(contract.yaml_text())
    return parsed


def test_the_committed_document_is_the_generated_one() -> None:
    assert DOC.read_text() == contract.yaml_text(), "run `aimctl bus spec > docs/asyncapi.yaml`"


def test_every_stream_and_subject_is_in_the_document(spec: dict[str, Any]) -> None:
    assert spec["asyncapi"] == "3.0.0"
    text = contract.yaml_text()
    for stream in topology.stream_configs():
        assert stream.name is not None and stream.name in text
        for pattern in stream.subjects or []:
            prefix = pattern.removesuffix(".>")
            assert any(c["address"].startswith(prefix + ".") for c in spec["channels"].values()), prefix
    addresses = {c["address"] for c in spec["channels"].values()}
    assert f"{subjects.STATUS_PREFIX}.{{service}}.{{group}}.{{kind}}.{{namespace}}.{{name}}" in addresses


def payload_schema(spec: dict[str, Any], channel: str) -> dict[str, Any]:
    (ref,) = [m["$ref"] for m in spec["channels"][channel]["messages"].values()]
    message = spec["components"]["messages"][ref.rsplit("/", 1)[1].replace("%20", " ")]
    name = message["payload"]["$ref"].rsplit("/", 1)[1]
    schema: dict[str, Any] = dict(spec["components"]["schemas"][name])
    schema["components"] = spec["components"]  # the schemas' own $refs (#/components/schemas/...)
    return schema


def test_what_the_services_publish_validates_against_the_document(spec: dict[str, Any]) -> None:
    obj = ObjectRef.of(MODEL, "team-a", "llama")
    published = {
        "ChangeEvents": ChangeEvent(
            object=obj, uid="u-1", resource_version="42", generation=3, change=ChangeType.MODIFIED
        ),
        "StatusReports": StatusReport(
            object=obj,
            uid="u-1",
            source="discovery",
            observed_generation=3,
            conditions=(ConditionReport(type="ImageReady", status="True", reason="Found"),),
            fields={"sourceType": "Image"},
        ),
        "Decisions": Decision(
            object=obj, source="deployer", action="select-template", reason="Best", message="m"
        ),
    }
    for channel, message in published.items():
        schema = payload_schema(spec, channel)
        jsonschema.validate(message.model_dump(mode="json"), schema)
        broken = message.model_dump(mode="json")
        del broken["object"]
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)
