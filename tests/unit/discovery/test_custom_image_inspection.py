"""A custom model's base image (issue 39, point 5): not read under the seeds' behaviour, read under
the released one (``ImageFound`` without AIM labels, a missing image ``BaseImageNotFound``,
Degraded); a template takes a Failed or Degraded model's state as ``ModelFailed`` unless the model
fails only through its templates, and its model then counts it as waiting, so the two never hold
each other failed."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import pytest

from aim_discovery.model_reconciler import ModelReconciler, own_state
from aim_discovery.template_status import model_failure
from aimcore.api.behaviour import Behaviour
from aimcore.api.crds.aim import ImageMetadata
from aimcore.api.kinds import by_kind
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template
from aimcore.domain.oci import ImageNotFound
from aimcore.domain.status.rules import RESOURCE, State

AIM = "aim.eai.amd.com"
MODEL = by_kind(AIM, "AIMModel")
CLUSTER_MODEL = by_kind(AIM, "AIMClusterModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
SOURCES = [{"modelId": "acme/custom", "sourceUri": "hf://acme/custom"}]


class _Registry:
    """A registry client that answers every image with ``answer`` (metadata, or an error raised)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def __call__(self, _credentials: Any) -> _Registry:
        return self

    async def __aenter__(self) -> _Registry:
        return self

    async def __aexit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        return None

    async def image_metadata(self, image: str) -> ImageMetadata:
        self.asked.append(image)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[no-any-return]


def _model(status: dict[str, Any] | None = None, ref: Any = MODEL) -> Model:
    meta = {"name": "custom", "uid": "u1", **({"namespace": "ns"} if ref.namespaced else {})}
    obj = {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "metadata": meta,
        "spec": {"image": "registry.local/aim-base:0", "modelSources": SOURCES},
        "status": status or {},
    }
    return Model(ref, obj)


async def _inspect(behaviour: Behaviour, answer: Any) -> tuple[Any, _Registry]:
    registry = _Registry(answer)
    reconciler = ModelReconciler(None, "aim-system", client_factory=registry, behaviour=behaviour)  # type: ignore[arg-type]
    return await reconciler._metadata(_model(), None), registry


async def test_the_seeds_never_read_a_custom_models_image() -> None:
    outcome, registry = await _inspect(Behaviour.SEEDS, ImageNotFound("no such image"))
    assert (outcome.condition.status, outcome.condition.reason) == ("True", "ExtractionDisabled")
    assert registry.asked == []


async def test_released_reads_it_an_image_without_labels_is_found() -> None:
    outcome, registry = await _inspect(Behaviour.RELEASED, ImageMetadata.model_validate({}))
    assert (outcome.condition.status, outcome.condition.reason) == ("True", "ImageFound")
    assert registry.asked == ["registry.local/aim-base:0"]


async def test_released_a_missing_base_image_degrades_the_model_and_is_retried() -> None:
    outcome, _ = await _inspect(Behaviour.RELEASED, ImageNotFound("manifest unknown"))
    assert (outcome.condition.status, outcome.condition.reason) == ("False", "BaseImageNotFound")
    assert outcome.failed and outcome.retry
    assert RESOURCE.state_of(outcome.condition.model_dump()) is State.DEGRADED


def _failing(*extra: dict[str, str]) -> list[dict[str, str]]:
    return [
        {"type": "ImageMetadataReady", "status": "False", "reason": "BaseImageNotFound"},
        {"type": "ServiceTemplatesReady", "status": "False", "reason": "AllTemplatesFailed"},
        {"type": "Ready", "status": "False", "reason": "BaseImageNotFound", "message": "image gone"},
        *extra,
    ]


@pytest.mark.parametrize("state", ["Degraded", "Failed"])
def test_a_template_takes_its_failing_models_state(state: str) -> None:
    message = model_failure(_model({"status": state, "conditions": _failing()}), "ServiceTemplatesReady")
    assert message == f"AIMModel custom is {state}: image gone"
    said = {"type": "ModelReady", "status": "False", "reason": "ModelFailed", "message": message}
    assert RESOURCE.state_of(said) is State(state)
    cluster = {
        "type": "ClusterModelReady",
        "status": "False",
        "reason": "ClusterModelFailed",
        "message": message,
    }
    assert RESOURCE.state_of(cluster) is State(state)


def test_a_model_failing_only_through_its_templates_is_ignored() -> None:
    only_templates = [c for c in _failing() if c["type"] != "ImageMetadataReady"]
    assert (
        model_failure(_model({"status": "Failed", "conditions": only_templates}), "ServiceTemplatesReady")
        is None
    )
    cluster = _model({"status": "Failed", "conditions": only_templates}, ref=CLUSTER_MODEL)
    assert model_failure(cluster, "ServiceTemplatesReady") is None
    ready = _model({"status": "Ready", "conditions": []})
    assert model_failure(ready, "ServiceTemplatesReady") is None


def _template(state: str, reason: str) -> Template:
    obj = {
        "apiVersion": TEMPLATE.api_version,
        "kind": TEMPLATE.kind,
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"modelName": "custom"},
        "status": {"status": state, "conditions": [{"type": "Ready", "status": "False", "reason": reason}]},
    }
    return Template(TEMPLATE, obj)


def test_a_model_counts_a_template_failing_through_it_as_waiting() -> None:
    assert own_state(_template("Degraded", "ModelFailed")) == "Progressing"
    assert own_state(_template("Failed", "ClusterModelFailed")) == "Progressing"
    assert own_state(_template("Failed", "InvalidDiscoveryOutput")) == "Failed"
