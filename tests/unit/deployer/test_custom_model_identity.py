"""Which services share a custom model (``aim_deployer.model_resolution``, issue 15): those whose
``model.custom`` and the service fields the model carries are the same, read as the API server
stores them. Different hardware or env never share, and never compete for one name."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aim_deployer.model_resolution import custom_model_name, custom_model_spec, model_identity
from aim_deployer.service_view import ServiceView
from aimcore.api.kinds import by_kind
from aimcore.domain.naming import derived_name

MODEL = by_kind("aim.eai.amd.com", "AIMModel")
SERVICE = by_kind("aim.eai.amd.com", "AIMService")
LEGACY_MODEL = by_kind("aim.silogen.ai", "AIMModel")

SOURCE = {
    "modelId": "acme/tiny",
    "sourceUri": "s3://bucket/tiny",
    "size": "2Gi",
    "env": [{"name": "AWS_ENDPOINT_URL", "value": "http://s3"}],
}
CUSTOM: dict[str, Any] = {
    "baseImage": "ghcr.io/acme/aim-base:1",
    "modelSources": [SOURCE],
    "hardware": {"gpu": {"requests": 1}, "cpu": {"requests": "4"}},
}


def spec_of(custom: dict[str, Any] | None = None, **service: Any) -> dict[str, Any]:
    """The custom model's spec for a service of ``model.custom: custom`` and the fields ``service``."""
    obj = {
        "apiVersion": SERVICE.api_version,
        "kind": SERVICE.kind,
        "metadata": {"name": "chat", "namespace": "ml"},
        "spec": {"model": {"custom": custom or CUSTOM}, **service},
    }
    view = ServiceView(SERVICE, obj)
    assert view.model_custom is not None
    return custom_model_spec(view, view.model_custom)


def test_the_spec_carries_the_request() -> None:
    spec = spec_of(
        env=[{"name": "A", "value": "1"}], runtimeConfigName="rc", imagePullSecrets=[{"name": "s"}]
    )
    assert spec == {
        "image": "ghcr.io/acme/aim-base:1",
        "modelSources": [SOURCE],
        "custom": {"hardware": CUSTOM["hardware"]},
        "env": [{"name": "A", "value": "1"}],
        "runtimeConfigName": "rc",
        "imagePullSecrets": [{"name": "s"}],
    }
    without_base = {k: v for k, v in CUSTOM.items() if k != "baseImage"}
    assert spec_of(without_base)["image"] == "amdenterpriseai/aim-base:latest"


def test_the_same_request_gives_the_same_name() -> None:
    """The name is a golden value: every process (a restarted deployer, another replica) makes it."""
    assert custom_model_name(MODEL, spec_of()) == "acme-tiny-50c1ee83"
    assert custom_model_name(MODEL, spec_of(copy.deepcopy(CUSTOM))) == "acme-tiny-50c1ee83"


def with_hardware(hardware: dict[str, Any]) -> dict[str, Any]:
    return spec_of({**CUSTOM, "hardware": hardware})


@pytest.mark.parametrize(
    "other",
    [
        with_hardware({"gpu": {"requests": 1000000}, "cpu": {"requests": "4"}}),
        with_hardware({"gpu": {"requests": 1}}),
        with_hardware({"gpu": {"requests": 1, "model": "MI300X"}, "cpu": {"requests": "4"}}),
        spec_of(env=[{"name": "HF_TOKEN", "value": "t"}]),
        spec_of(serviceAccountName="runner"),
        spec_of(runtimeConfigName="other"),
        spec_of({**CUSTOM, "modelSources": [{**SOURCE, "size": "20Gi"}]}),
        spec_of(
            {
                **CUSTOM,
                "modelSources": [{**SOURCE, "env": [{"name": "AWS_ENDPOINT_URL", "value": "http://b"}]}],
            }
        ),
    ],
    ids=["gpu-count", "no-cpu", "gpu-model", "env", "service-account", "runtime-config", "size", "endpoint"],
)
def test_different_requests_are_different_models(other: dict[str, Any]) -> None:
    assert model_identity(MODEL, other) != model_identity(MODEL, spec_of())
    assert custom_model_name(MODEL, other) != custom_model_name(MODEL, spec_of())


def test_a_stored_model_with_the_api_servers_defaults_is_the_same_model() -> None:
    stored = copy.deepcopy(spec_of())
    stored["custom"]["hardware"]["gpu"]["resourceName"] = "amd.com/gpu"  # the CRD default
    stored["env"] = []  # an empty list is no env
    assert model_identity(MODEL, stored) == model_identity(MODEL, spec_of())


def test_legacy_models_are_read_with_their_own_schema() -> None:
    """The legacy AIMModel's schema defaults ``runtimeConfigName`` (the current one does not): its
    identity, and so its name, is its own. The names are golden values."""
    assert model_identity(LEGACY_MODEL, spec_of())["runtimeConfigName"] == "default"
    assert "runtimeConfigName" not in model_identity(MODEL, spec_of())
    assert custom_model_name(LEGACY_MODEL, spec_of()) == "acme-tiny-908a02cb"
    assert custom_model_name(LEGACY_MODEL, with_hardware({"gpu": {"requests": 2}})) == "acme-tiny-c42cc3af"


def test_the_name_differs_from_the_originals() -> None:
    """Names made before (the original's hash: base image and the sources' id, URI and endpoint)
    are not made any more; a model of such a name is still shared when its spec matches."""
    original = derived_name(
        ["acme/tiny"], ["ghcr.io/acme/aim-base:1", "acme/tiny", "s3://bucket/tiny", "http://s3"]
    )
    assert custom_model_name(MODEL, spec_of()) != original
