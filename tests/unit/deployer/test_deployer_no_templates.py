"""What a service says when its model has no templates (``aim_deployer.templates.why_no_templates``)
and when the API server refuses one of its children (``aim_deployer.services.refused_condition``):
always the cause, never a bare "no templates exist" or a silent retry (issue 15)."""

from __future__ import annotations

from typing import Any

import pytest

from aim_deployer.services import refused_condition
from aim_deployer.templates import MODEL_HAS_NO_TEMPLATES, why_no_templates
from aimcore.api.kinds import HTTP_ROUTE, by_kind
from aimcore.domain.families.models import Model
from aimcore.domain.status.rules import SERVICE, State
from aimcore.runtime import Refusal

MODEL = by_kind("aim.eai.amd.com", "AIMModel")
CLUSTER_MODEL = by_kind("aim.eai.amd.com", "AIMClusterModel")


def model(*conditions: tuple[str, str, str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "m"},
        "spec": {"image": "ghcr.io/acme/aim-llama:1.0.0"},
        "status": {
            "conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions]
        },
    }


@pytest.mark.parametrize(
    ("conditions", "reason", "words", "state"),
    [
        (
            [("ImageMetadataReady", "False", "RegistryError", "connection refused")],
            "RegistryError",
            ["AIMModel m has no templates", "image metadata", "RegistryError: connection refused"],
            State.DEGRADED,
        ),
        (
            [("ImageMetadataReady", "False", "ImagePullAuthFailure", "401")],
            "ImagePullAuthFailure",
            ["ImagePullAuthFailure: 401"],
            State.FAILED,
        ),
        (
            [
                ("ImageMetadataReady", "True", "ImageFound", "read"),
                ("ServiceTemplatesReady", "True", "NoTemplatesExpected", "No templates: none recommended"),
            ],
            MODEL_HAS_NO_TEMPLATES,
            ["AIMModel m has no templates: No templates: none recommended"],
            State.FAILED,
        ),
        (
            [("ServiceTemplatesReady", "False", "TemplateCreateRejected", "HTTP 422 Invalid: metric")],
            "TemplateCreateRejected",
            ["HTTP 422 Invalid: metric"],
            State.FAILED,
        ),
    ],
)
def test_the_models_own_reason_explains(
    conditions: list[tuple[str, str, str, str]], reason: str, words: list[str], state: State
) -> None:
    got = why_no_templates(Model(MODEL, model(*conditions)))
    assert got is not None
    assert got[0] == reason
    for word in words:
        assert word in got[1]
    assert SERVICE.state_of({"type": "TemplateReady", "status": "False", "reason": got[0]}) is state


def test_cluster_models_templates_condition_is_read() -> None:
    found = model(("ClusterServiceTemplatesReady", "True", "NoTemplatesExpected", "none"))
    got = why_no_templates(Model(CLUSTER_MODEL, found))
    assert got == (MODEL_HAS_NO_TEMPLATES, "AIMClusterModel m has no templates: none")


@pytest.mark.parametrize(
    "conditions",
    [
        [],  # the model says nothing (its status written by hand)
        [("ServiceTemplatesReady", "False", "CreatingTemplates", "Creating 2 template(s)")],
        [("ServiceTemplatesReady", "True", "AllTemplatesReady", "ready")],  # not seen by the cache yet
    ],
)
def test_no_explanation_when_the_model_gives_none(conditions: list[tuple[str, str, str, str]]) -> None:
    assert why_no_templates(Model(MODEL, model(*conditions))) is None


def test_a_refused_child_names_the_refusal_and_fails_the_step() -> None:
    body = {"metadata": {"name": "r", "namespace": "ns"}}
    invalid = Refusal(422, "Invalid", 'metadata.annotations: Invalid value: "bad key"')
    created = refused_condition("HTTPRouteReady", "HTTPRoute", HTTP_ROUTE, body, invalid, update=False)
    assert created.reason == "HTTPRouteCreateRejected"
    assert created.message == f"the API server refused to create HTTPRoute r: {invalid.describe()}"
    assert SERVICE.state_of(created.model_dump()) is State.FAILED
    forbidden = Refusal(403, "Forbidden", "no")
    denied = refused_condition("HTTPRouteReady", "HTTPRoute", HTTP_ROUTE, body, forbidden, update=True)
    assert denied.reason == "HTTPRouteCreateForbidden" and "refused to update" in denied.message
    assert SERVICE.state_of(denied.model_dump()) is State.FAILED
