"""The AIMService as the deployer's reconcile reads it (``aim_deployer.service_view``): one
vocabulary over the parsed model of either API group, and the same answers in the informer's
indexes, which read the service through the same view (the index wakes the services a reconcile
would resolve)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from aim_deployer.dependencies import service_models, service_templates
from aim_deployer.service_view import ServiceView
from aimcore.api.crds.validation import parse
from aimcore.api.kinds import by_kind
from aimcore.domain.families.base import Reference

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
IMAGE = "ghcr.io/acme/aim-llama:1.0.0"
CUSTOM = {
    "baseImage": IMAGE,
    "modelSources": [{"modelId": "acme/llama", "sourceUri": "hf://acme/llama"}],
    "hardware": {"gpu": {"requests": 1}},
}


def view(group: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> ServiceView:
    ref = by_kind(group, "AIMService")
    obj: dict[str, Any] = {
        "apiVersion": ref.api_version,
        "kind": "AIMService",
        "metadata": {"name": "chat", "namespace": "ml", "uid": "svc-uid", "labels": {"team": "ml"}},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return ServiceView.of(ref, parse(obj), obj)


class Case(NamedTuple):
    group: str
    spec: dict[str, Any]
    name: str | None = None  # the model asked for by name
    image: str | None = None  # ... by image
    custom: bool = False  # ... inline
    template: str | None = None


CASES = [
    Case(AIM, {"model": {"name": "llama"}}, name="llama"),
    Case(AIM, {"model": {"image": IMAGE}, "template": {"name": "tpl"}}, image=IMAGE, template="tpl"),
    Case(AIM, {"model": {"custom": CUSTOM}}, custom=True),
    Case(LEGACY, {"aimImageName": "llama", "templateRef": "tpl"}, name="llama", template="tpl"),
    Case(LEGACY, {"model": {"ref": "llama"}}, name="llama"),
    Case(LEGACY, {"model": {"name": "llama"}, "template": {"name": "tpl"}}, name="llama", template="tpl"),
    Case(LEGACY, {"model": {"image": IMAGE}}, image=IMAGE),
    Case(LEGACY, {"model": {"custom": CUSTOM}}, custom=True),
]


@pytest.mark.parametrize("case", CASES)
def test_both_groups_read_in_one_vocabulary(case: Case) -> None:
    service = view(case.group, case.spec)
    assert service.model_name == case.name
    assert service.model_image == case.image
    assert (service.model_custom is not None) is case.custom
    assert service.template_name == case.template
    if case.custom:
        assert service.wire_custom == CUSTOM
        assert service.model_custom is not None and service.model_custom.base_image == IMAGE


@pytest.mark.parametrize("case", CASES)
def test_the_index_and_the_reconcile_agree(case: Case) -> None:
    service = view(case.group, case.spec)
    models = list(service_models.index(service.ref, service.obj, service.resource))
    asked = [v for v in (case.name, case.image) if v]
    assert models[: len(asked)] == asked
    assert len(models) == len(asked) + case.custom  # a custom model: the name it creates or shares
    templates = list(service_templates.index(service.ref, service.obj, service.resource))
    assert templates == ([case.template] if case.template else [])


@pytest.mark.parametrize(
    ("group", "spec", "mode"),
    [
        (AIM, {}, "Auto"),
        (AIM, {"cacheModel": True}, "Always"),
        (AIM, {"cacheModel": False}, "Never"),
        (AIM, {"caching": {"mode": "Never"}, "cacheModel": True}, "Never"),
        (AIM, {"caching": {"mode": "Always"}}, "Always"),
        (AIM, {"caching": {}}, "Auto"),
        (LEGACY, {}, "Auto"),
        (LEGACY, {"cacheModel": True}, "Always"),
        (LEGACY, {"cacheModel": False}, "Auto"),  # the legacy flag never turns caching off
    ],
)
def test_caching_mode(group: str, spec: dict[str, Any], mode: str) -> None:
    model = {"aimImageName": "llama"} if group == LEGACY else {"model": {"name": "llama"}}
    assert view(group, {**model, **spec}).caching_mode == mode


def test_the_caching_env_is_the_current_groups_and_apart_from_the_services_env() -> None:
    token = {"name": "HF_TOKEN", "value": "t"}
    spec = {
        "model": {"name": "llama"},
        "caching": {"mode": "Always", "env": [token]},
        "env": [{"name": "A", "value": "1"}],
    }
    current = view(AIM, spec)
    assert [e.name for e in current.caching_env] == ["HF_TOKEN"]
    assert [e.name for e in current.env] == ["A"]
    assert view(AIM, {"model": {"name": "llama"}}).caching_env == []
    assert view(LEGACY, {"aimImageName": "llama", "cacheModel": True}).caching_env == []


def test_unoptimized_storage_and_runtime_config() -> None:
    current = view(
        AIM,
        {
            "model": {"name": "llama"},
            "template": {"allowUnoptimized": True},
            "storage": {"defaultStorageClassName": "fast"},
            "runtimeConfigName": "team",
        },
    )
    assert current.allow_unoptimized and current.storage_class == "fast"
    assert current.runtime_config_name == "team"
    plain = view(AIM, {"model": {"name": "llama"}})
    assert not plain.allow_unoptimized and plain.storage_class is None
    assert plain.runtime_config_name is None
    legacy = view(LEGACY, {"aimImageName": "llama"})
    assert legacy.storage_class is None
    assert legacy.runtime_config_name == "default"  # the legacy CRD's default, as stored


def test_identity_and_status_as_stored() -> None:
    resolved = {"name": "llama", "kind": "AIMModel", "uid": "m-uid"}
    conditions = [{"type": "TemplateReady", "status": "True", "reason": "Resolved"}]
    current = view(
        AIM,
        {"model": {"name": "llama"}},
        {"resolvedModel": resolved, "resolvedTemplate": {"name": "t"}, "conditions": conditions},
    )
    assert (current.name, current.namespace, current.uid) == ("chat", "ml", "svc-uid")
    assert current.labels == {"team": "ml"} and not current.deleting
    model = Reference(name="llama", kind="AIMModel", uid="m-uid")
    assert current.previous_model == model and current.previous_template == Reference(name="t")
    assert current.conditions == conditions
    # the legacy status names the model resolvedImage
    legacy = view(LEGACY, {"aimImageName": "llama"}, {"resolvedImage": resolved, "resolvedModel": {}})
    assert legacy.previous_model == model
    assert view(LEGACY, {"aimImageName": "llama"}, {"resolvedModel": resolved}).previous_model is None


def test_only_services_are_viewed() -> None:
    ref = by_kind(AIM, "AIMModel")
    obj = {
        "apiVersion": ref.api_version,
        "kind": "AIMModel",
        "metadata": {"name": "m"},
        "spec": {"image": IMAGE},
    }
    with pytest.raises(TypeError, match="not an AIMService"):
        ServiceView.of(ref, parse(obj), obj)
