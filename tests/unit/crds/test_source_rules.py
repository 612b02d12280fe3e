"""The spec rules issue 24's bad-input batch found missing, as the runtime reports them: parsing an
object is validating it, and :func:`aimcore.api.crds.validation.describe` is the ``InvalidSpec``
message (the field, then what is wrong and what to write). Before, each parsed: a ``modelId`` of
``acme/..``, sources with ``..`` segments, ``hf://org`` without a repository (reported later as
"cannot reach huggingface.co"), ``profileId: ../../etc/passwd`` (shown as waiting for a node),
2^31-1 and 2^53 replicas, an autoscaling target its ``type`` does not read, a cache of size 0."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from aimcore.api.crds.aim import MAX_REPLICAS
from aimcore.api.crds.validation import describe, parse
from aimcore.api.sourcerules import model_id_error, profile_id_error, source_uri_error
from tests.helpers import missing_or_changed

AIM = "aim.eai.amd.com/v1alpha1"
LEGACY = "aim.silogen.ai/v1alpha1"


def _obj(kind: str, spec: dict[str, Any], api: str = AIM) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "namespace": "ns"}, "spec": spec}


def _invalid(obj: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as exc:
        parse(obj)
    return describe(exc.value)


def _source(**fields: Any) -> dict[str, Any]:
    return {"modelId": "acme/tiny", "sourceUri": "hf://acme/tiny", "size": "1Gi", **fields}


def _custom_service(source: dict[str, Any]) -> dict[str, Any]:
    custom = {"modelSources": [source], "hardware": {"cpu": {"requests": "1"}}}
    return _obj("AIMService", {"model": {"custom": custom}})


# -- the rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["acme/..", "acme/.", "acme/..."])
def test_a_model_id_naming_a_relative_segment_is_refused(value: str) -> None:
    assert "relative path segment" in (model_id_error(value) or "")


@pytest.mark.parametrize("value", ["acme/tiny", "meta-llama/Llama-3.1-8B", "a/.hidden", "a/b..c"])
def test_model_ids_with_dots_inside_a_name_are_fine(value: str) -> None:
    assert model_id_error(value) is None


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("hf://@main", "names no repository"),
        ("hf://-gpt2", "is not a Hugging Face name"),
        ("hf://org/", "is not a Hugging Face name"),
        ("hf://org/../etc", "has 3 path segments"),
        ("hf://org/..", "'..' is not a Hugging Face name"),
        ("hf://../model", "'..' is not a Hugging Face name"),
        ("hf://org/a..b", "is not a Hugging Face name"),
        ("hf://org/model@", "the revision after '@'"),
        ("hf://org/model@../../x", "the revision after '@'"),
        ("s3://bucket/../etc/passwd", "'.' or '..' segment"),
        ("s3://bucket/models/./x", "'.' or '..' segment"),
        ("s3://Bucket/x", "is not an S3 bucket name"),
        ("s3://a..b/x", "is not an S3 bucket name"),
        ("s3://", "is not an S3 bucket name"),
    ],
)
def test_sources_that_leave_their_directory_or_name_nothing_are_refused(value: str, says: str) -> None:
    error = source_uri_error(value)
    assert error is not None and says in error, error


@pytest.mark.parametrize(
    "value",
    [
        "hf://org/model",
        "hf://org/model@main",
        "hf://org/model@0123abcd",
        "s3://bucket",
        "s3://my.bucket/a/b/",
    ],
)
def test_sane_sources_pass(value: str) -> None:
    assert source_uri_error(value) is None


@pytest.mark.parametrize("value", ["../../etc/passwd", "..", ".hidden", "a/b", "a\\b", "a b", ""])
def test_a_profile_id_that_is_not_a_name_is_refused(value: str) -> None:
    assert "is not a profile name" in (profile_id_error(value) or "")


@pytest.mark.parametrize("value", ["vllm-mi300x-fp8-tp1-latency", "aim-test-cpu-fp16-latency", "p1.v2_x"])
def test_profile_names_pass(value: str) -> None:
    assert profile_id_error(value) is None


# -- as the runtime reports them (InvalidSpec messages) ------------------------------------------


def test_custom_model_sources_with_dot_dot_are_invalid_spec() -> None:
    message = _invalid(_custom_service(_source(modelId="acme/..")))
    assert message.startswith("spec.model.custom.modelSources.0.modelId: modelId 'acme/..'")
    message = _invalid(_custom_service(_source(sourceUri="s3://bucket/../secrets")))
    assert message.startswith(
        "spec.model.custom.modelSources.0.sourceUri: sourceUri 's3://bucket/../secrets'"
    )


def test_model_and_template_sources_with_dot_dot_are_invalid_spec() -> None:
    model = _obj(
        "AIMModel",
        {
            "image": "ghcr.io/acme/m:1",
            "modelSources": [_source(modelId="acme/..")],
            "custom": {"hardware": {"cpu": {"requests": "1"}}},
        },
    )
    assert "spec.modelSources.0.modelId" in _invalid(model)
    template = _obj(
        "AIMServiceTemplate", {"modelName": "m", "modelSources": [_source(sourceUri="hf://acme/../x")]}
    )
    assert "spec.modelSources.0.sourceUri" in _invalid(template)
    cache = _obj("AIMTemplateCache", {"templateName": "t", "modelSources": [_source(modelId="acme/.")]})
    assert "spec.modelSources.0.modelId" in _invalid(cache)


def test_an_hf_source_without_a_repository_is_invalid_spec() -> None:
    message = _invalid(_obj("AIMModelCache", {"sourceUri": "hf://@main"}))
    assert "spec.sourceUri: sourceUri 'hf://@main' names no repository" in message
    assert "hf://{org}/{model}" in message  # what to write instead
    assert "names no repository" in _invalid(_obj("AIMModelCache", {"sourceUri": "hf://@main"}, LEGACY))
    assert "names no repository" in _invalid(_custom_service(_source(sourceUri="hf://@main")))


def test_a_repository_without_an_organisation_is_a_repository() -> None:
    """The Hub's older top-level models (``gpt2``): the released original's own tests download one."""
    assert source_uri_error("hf://gpt2") is None
    assert source_uri_error("hf://bert-base-uncased@main") is None


def test_a_traversing_profile_id_is_invalid_spec() -> None:
    for kind in ("AIMServiceTemplate", "AIMClusterServiceTemplate"):
        message = _invalid(_obj(kind, {"modelName": "m", "profileId": "../../etc/passwd"}))
        assert message.startswith("spec.profileId: profileId '../../etc/passwd' is not a profile name"), (
            message
        )


@pytest.mark.parametrize("size", [0, "0", "0Gi", "0.0"])
def test_a_model_cache_of_size_zero_is_invalid_spec(size: int | str) -> None:
    for api in (AIM, LEGACY):
        message = _invalid(_obj("AIMModelCache", {"sourceUri": "hf://acme/tiny", "size": size}, api))
        assert message.startswith("spec.size: size must be more than 0"), message
        assert "leave size out to size the volume from the source" in message
    parse(_obj("AIMModelCache", {"sourceUri": "hf://acme/tiny", "size": "1Mi"}))


@pytest.mark.parametrize("field", ["replicas", "minReplicas", "maxReplicas"])
@pytest.mark.parametrize("count", [2**31 - 1, 2**53, MAX_REPLICAS + 1])
def test_replicas_no_cluster_can_run_are_invalid_spec(field: str, count: int) -> None:
    extra = {"maxReplicas": count} if field == "minReplicas" else {}
    for api in (AIM, LEGACY):
        message = _invalid(_obj("AIMService", {"model": {"name": "m"}, field: count, **extra}, api))
        assert f"spec.{field}: Input should be less than or equal to {MAX_REPLICAS}" in message
    parse(_obj("AIMService", {"model": {"name": "m"}, field: MAX_REPLICAS}))


def _autoscaled(target: dict[str, Any]) -> dict[str, Any]:
    metric = {
        "type": "PodMetric",
        "podmetric": {"metric": {"query": "vllm:num_requests_running"}, "target": target},
    }
    return _obj("AIMService", {"model": {"name": "m"}, "autoScaling": {"metrics": [metric]}})


@pytest.mark.parametrize(
    ("target", "says"),
    [
        (
            {"type": "Utilization", "averageUtilization": -50},
            "averageUtilization: Input should be greater than or equal to 1",
        ),
        ({"type": "Utilization"}, "type Utilization reads averageUtilization, which is not set"),
        ({"type": "Utilization", "averageUtilization": 80, "value": "1"}, "value would be ignored"),
        ({"type": "Value", "averageUtilization": 50}, "type Value reads value, which is not set"),
        (
            {"type": "AverageValue", "averageValue": "1", "averageUtilization": 50},
            "averageUtilization would be ignored",
        ),
    ],
)
def test_an_autoscaling_target_its_type_does_not_read_is_invalid_spec(
    target: dict[str, Any], says: str
) -> None:
    message = _invalid(_autoscaled(target))
    assert message.startswith("spec.autoScaling.metrics.0.podmetric.target"), message
    assert says in message, message


@pytest.mark.parametrize(
    "target",
    [
        {"type": "Utilization", "averageUtilization": 80},
        {
            "type": "Utilization",
            "averageUtilization": 250,
        },  # a percentage of requests: HPA and KEDA allow > 100
        {"type": "Value", "value": "10"},
        {"type": "AverageValue", "averageValue": "100m"},
    ],
)
def test_autoscaling_targets_of_their_type_pass(target: dict[str, Any]) -> None:
    obj = _autoscaled(target)
    assert missing_or_changed(obj["spec"], parse(obj).wire()["spec"]) == []  # kept as written
