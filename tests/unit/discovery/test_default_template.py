"""A model's ``spec.defaultServiceTemplate`` that names no template (issue 24): the model says so
(discovery: ``DefaultTemplateNotFound``, Degraded) and a service relying on it fails with
``TemplateNotFound`` / ``ConfigValid=False/ReferenceNotFound`` (the deployer), instead of the
service falling back to automatic selection without a word. Creating the template wakes the model
(discovery's ``default-template`` index)."""

from __future__ import annotations

from typing import Any

from aim_discovery import dependencies as discovery_deps
from aim_discovery.app import template_models
from aim_discovery.model_reconciler import (
    DEFAULT_TEMPLATE_NOT_FOUND,
    default_template_missing,
    with_default_template,
)
from aimcore.api.kinds import by_kind
from aimcore.domain.families.models import Model
from aimcore.domain.status import rules
from tests.unit.runtime.test_mappers import informer, obj, run

AIM = "aim.eai.amd.com"
MODEL = by_kind(AIM, "AIMModel")
CLUSTER_MODEL = by_kind(AIM, "AIMClusterModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
CLUSTER_TEMPLATE = by_kind(AIM, "AIMClusterServiceTemplate")


def _model(ref: Any = MODEL, default: str | None = "fast") -> dict[str, Any]:
    spec: dict[str, Any] = {"image": "ghcr.io/acme/m:1"}
    if default:
        spec["defaultServiceTemplate"] = default
    return obj(ref, "ns" if ref.namespaced else None, "m", spec=spec)


def test_a_missing_default_template_is_said_on_the_model() -> None:
    model = _model()
    missing = default_template_missing(informer(model), MODEL, Model(MODEL, model))
    assert missing is not None
    assert missing.startswith(
        "spec.defaultServiceTemplate 'fast' names no AIMServiceTemplate in namespace ns or "
        "AIMClusterServiceTemplate"
    )
    assert "create it, or correct or remove spec.defaultServiceTemplate" in missing
    cluster = _model(CLUSTER_MODEL)
    said = default_template_missing(informer(cluster), CLUSTER_MODEL, Model(CLUSTER_MODEL, cluster))
    assert said is not None and "names no AIMClusterServiceTemplate:" in said


def test_an_existing_default_template_is_fine() -> None:
    model = _model()
    for template in (
        obj(TEMPLATE, "ns", "fast", spec={"modelName": "m"}),
        obj(CLUSTER_TEMPLATE, None, "fast", spec={"modelName": "m"}),
    ):
        assert default_template_missing(informer(model, template), MODEL, Model(MODEL, model)) is None
    elsewhere = obj(TEMPLATE, "other", "fast", spec={"modelName": "m"})
    assert default_template_missing(informer(model, elsewhere), MODEL, Model(MODEL, model))
    none = _model(default=None)
    assert default_template_missing(informer(none), MODEL, Model(MODEL, none)) is None


def test_the_templates_condition_says_it() -> None:
    ready = ("True", "AllTemplatesReady", "All 2 template(s) are ready")
    assert with_default_template(ready, None) == ready
    assert with_default_template(ready, "it is missing") == (
        "False",
        DEFAULT_TEMPLATE_NOT_FOUND,
        "it is missing",
    )
    creating = ("False", "CreatingTemplates", "Creating 2 template(s)")
    assert with_default_template(creating, "it is missing") == (
        "False",
        "CreatingTemplates",
        "Creating 2 template(s); it is missing",
    )
    condition = {"type": "ServiceTemplatesReady", "status": "False", "reason": DEFAULT_TEMPLATE_NOT_FOUND}
    assert rules.RESOURCE.state_of(condition) is rules.State.DEGRADED


def test_creating_the_default_template_wakes_the_model() -> None:
    model = _model()
    cache = informer(model, indexers={discovery_deps.DEFAULT_TEMPLATE_INDEX: discovery_deps.default_template})
    template = obj(TEMPLATE, "ns", "fast", spec={"modelName": "another"})
    assert (MODEL, "ns", "m") in run(template_models, template, cache)
    unrelated = obj(TEMPLATE, "ns", "slow", spec={"modelName": "another"})
    assert run(template_models, unrelated, cache) == []
