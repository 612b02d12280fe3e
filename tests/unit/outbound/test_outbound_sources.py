"""The outbound policy on the model sources a spec names (``aimcore.domain.outbound.sources``): a
custom model's sources are fetched by the inference container where the operator does not connect,
so what the spec alone shows is judged before anything deploys (issue 24: ``s3://…`` on the
metadata address deployed without a word)."""

from __future__ import annotations

from typing import Any

import pytest

from aimcore.domain.outbound import OutboundPolicy, literal_env, source_refusal

STRICT = OutboundPolicy()


def _source(uri: str, **env: str) -> dict[str, Any]:
    source: dict[str, Any] = {"modelId": "acme/m", "sourceUri": uri, "size": "1Gi"}
    if env:
        source["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return source


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (
            _source("s3://169.254.169.254/latest"),
            "(s3://169.254.169.254/latest): the bucket: address 169.254.169.254 (a cloud metadata "
            "address) is not allowed",
        ),
        (
            _source("s3://2852039166/x"),
            "address 169.254.169.254 (a cloud metadata address)",
        ),  # the decimal spelling
        (
            _source("s3://models/x", AWS_ENDPOINT_URL="http://169.254.169.254"),
            "AWS_ENDPOINT_URL: address 169.254.169.254",
        ),
        (
            _source(
                "s3://models/x",
                AWS_ENDPOINT_URL="https://s3.example.com",
                AWS_ENDPOINT_URL_S3="http://[fe80::1]/",
            ),
            "AWS_ENDPOINT_URL_S3: address fe80::1 (link-local)",
        ),
        (
            _source("s3://models/x", AWS_ENDPOINT_URL="http://10.0.0.5:9000"),
            "address 10.0.0.5 (private) is not allowed",
        ),
        (
            _source("hf://acme/m", HF_ENDPOINT="http://metadata.google.internal"),
            "HF_ENDPOINT: host 'metadata.google.internal'",
        ),
    ],
)
def test_sources_on_refused_addresses_are_named(source: dict[str, Any], says: str) -> None:
    refused = source_refusal([source], {}, STRICT)
    assert refused is not None and refused.startswith("spec.modelSources[0]"), refused
    assert says in refused, refused
    if "address" in says:
        assert "AIM_OUTBOUND_ALLOWED_HOSTS" in refused  # what would allow it


def test_the_objects_env_counts_and_the_sources_own_wins() -> None:
    env = literal_env([{"name": "AWS_ENDPOINT_URL", "value": "http://169.254.169.254"}])
    assert source_refusal([_source("s3://models/x")], env, STRICT)
    fixed = _source("s3://models/x", AWS_ENDPOINT_URL="https://s3.example.com")
    assert source_refusal([fixed], env, STRICT) is None
    second = source_refusal([fixed, _source("s3://169.254.169.254/x")], {}, STRICT)
    assert second is not None and second.startswith("spec.modelSources[1]")


@pytest.mark.parametrize(
    "source",
    [
        _source("s3://models/x"),
        _source("hf://acme/m"),
        _source("s3://models/x", AWS_ENDPOINT_URL="https://minio.minio.svc:9000"),  # names: judged on connect
        _source("hf://acme/m", HF_ENDPOINT="https://hub.example.com"),
        _source("s3://8.8.8.8/x"),  # a public address: allowed, as everywhere
    ],
)
def test_what_the_policy_allows_passes(source: dict[str, Any]) -> None:
    assert source_refusal([source], {}, STRICT) is None


def test_the_operators_settings_allow() -> None:
    private = _source("s3://models/x", AWS_ENDPOINT_URL="http://10.0.0.5:9000")
    assert source_refusal([private], {}, OutboundPolicy(allow_private=True)) is None
    metadata = _source("s3://models/x", AWS_ENDPOINT_URL="http://169.254.169.254")
    assert (
        source_refusal([metadata], {}, OutboundPolicy(allowed_hosts=frozenset({"169.254.169.254"}))) is None
    )


def test_secret_references_and_credentials_are_not_read_or_shown() -> None:
    env = literal_env(
        [
            {"name": "AWS_ENDPOINT_URL", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "OTHER", "value": "x"},
        ]
    )
    assert env == {"OTHER": "x"}
    refused = source_refusal(
        [_source("s3://models/x", AWS_ENDPOINT_URL="http://user:hunter2@169.254.169.254/")], {}, STRICT
    )
    assert refused is not None and "hunter2" not in refused and "user" not in refused


def test_an_oci_registry_written_as_a_refused_address_is_refused() -> None:
    for uri in ("oci://169.254.169.254/models/x:v1", "oci://169.254.169.254:5000/models/x:v1"):
        why = source_refusal([_source(uri)], {}, OutboundPolicy(allow_private=True))
        assert why is not None and "the registry" in why and "169.254.169.254" in why
    assert source_refusal([_source("oci://registry.example.com:5000/models/x:v1")], {}, STRICT) is None
    assert source_refusal([_source("oci://8.8.8.8/models/x@sha256:" + "0" * 64)], {}, STRICT) is None
