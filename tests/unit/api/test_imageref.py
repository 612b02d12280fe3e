"""Image reference parsing: Docker Hub defaults, registries with ports, tags, digests, bad input."""

from __future__ import annotations

import pytest

from aimcore.api.errors import AimError
from aimcore.api.imageref import (
    InvalidReference,
    is_loopback,
    normalize_registry,
    parse_reference,
    parse_repository,
    pull_policy,
)
from aimcore.domain import oci
from aimcore.domain.oci import OCI_ERRORS

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("ubuntu", "docker.io", "library/ubuntu", None, None),
        ("ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", None),
        ("amdenterpriseai/aim-llama:0.8.1-rc1", "docker.io", "amdenterpriseai/aim-llama", "0.8.1-rc1", None),
        ("docker.io/ubuntu", "docker.io", "library/ubuntu", None, None),
        ("index.docker.io/library/ubuntu:1", "docker.io", "library/ubuntu", "1", None),
        ("registry-1.docker.io/foo/bar", "docker.io", "foo/bar", None, None),
        (
            "ghcr.io/silogen/aim-meta-llama-llama-3-1-8b-instruct:0.7.0",
            "ghcr.io",
            "silogen/aim-meta-llama-llama-3-1-8b-instruct",
            "0.7.0",
            None,
        ),
        ("ghcr.io/a/b/c/d:e", "ghcr.io", "a/b/c/d", "e", None),
        ("localhost/foo", "localhost", "foo", None, None),
        ("localhost:5000/foo/bar:v1", "localhost:5000", "foo/bar", "v1", None),
        ("127.0.0.1:41234/aim/x:1.0", "127.0.0.1:41234", "aim/x", "1.0", None),
        ("[::1]:5000/foo:bar", "[::1]:5000", "foo", "bar", None),
        ("Registry.Example.COM:443/team/img", "registry.example.com:443", "team/img", None, None),
        (f"ubuntu@{DIGEST}", "docker.io", "library/ubuntu", None, DIGEST),
        (f"ghcr.io/a/b:1.0@{DIGEST}", "ghcr.io", "a/b", "1.0", DIGEST),
        (f"localhost:5000/a@{DIGEST}", "localhost:5000", "a", None, DIGEST),
        ("a__b/c.d-e---f_g:T_a.g-1", "docker.io", "a__b/c.d-e---f_g", "T_a.g-1", None),
        ("registry.example.com:65535/a/b:1", "registry.example.com:65535", "a/b", "1", None),
    ],
)
def test_parse(text: str, registry: str, repository: str, tag: str | None, digest: str | None) -> None:
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)


def test_reference_and_str() -> None:
    assert parse_reference("ubuntu").reference == "latest"
    assert parse_reference("ubuntu:1").reference == "1"
    assert parse_reference(f"ubuntu:1@{DIGEST}").reference == DIGEST
    assert str(parse_reference("ubuntu:1")) == "docker.io/library/ubuntu:1"
    assert str(parse_reference(f"ghcr.io/a/b:1@{DIGEST}")) == f"ghcr.io/a/b:1@{DIGEST}"
    assert parse_reference("ubuntu", default_tag="latest").tag == "latest"
    assert parse_reference(f"ubuntu@{DIGEST}", default_tag="latest").tag is None
    ref = parse_reference("ghcr.io/a/b:1")
    assert ref.with_digest(DIGEST).reference == DIGEST
    assert ref.with_tag("2").tag == "2"
    assert parse_reference("ubuntu").api_host == "registry-1.docker.io"
    assert parse_reference("ghcr.io/a/b").api_host == "ghcr.io"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "UPPER/case",  # uppercase first component would be a registry without a repository below it
        "ghcr.io/Silogen/aim",
        "ghcr.io/a/b:",
        "ghcr.io/a/b:-tag",
        "ghcr.io/a/b:" + "t" * 129,
        "ghcr.io/a/b@sha256:abc",
        "ghcr.io/a/b@sha256:" + "A" * 64,
        "ghcr.io/a/b@md5",
        "https://ghcr.io/a/b",
        "ghcr.io/",
        "ghcr.io//b",
        "ghcr.io/a//b",
        "ghcr.io/a/b/",
        "a b",
        "  ghcr.io/x/y:z  ",  # whitespace is an error, not trimmed: it would reach the Pod as written
        "ghcr.io/x/y:z\n",
        "\tghcr.io/x/y:z",
        "ghcr.io:99999/x/y:z",
        "ghcr.io:0/x/y:z",
        "localhost:65536/x",
        "[::1]:70000/x",
        "-bad.io/x",
        "ghcr.io/a/-b",
        "ghcr.io/a/b..c",
        "x" * 256,
    ],
)
def test_invalid(text: str) -> None:
    with pytest.raises(InvalidReference):
        parse_reference(text)


def test_invalid_reference_is_a_value_error_with_the_input() -> None:
    with pytest.raises(ValueError, match="Silogen"):
        parse_reference("ghcr.io/Silogen/aim")


def test_invalid_reference_has_the_root_and_is_what_the_registry_client_raises() -> None:
    with pytest.raises(InvalidReference) as info:
        parse_reference("ghcr.io/a/b..c")
    assert isinstance(info.value, AimError)
    assert (info.value.reason, info.value.transient) == ("InvalidImageReference", False)
    assert isinstance(info.value, OCI_ERRORS)  # the services catch the client's errors with this
    assert oci.InvalidReference is InvalidReference and oci.parse_reference is parse_reference


def test_parse_repository_and_normalize_registry() -> None:
    ref = parse_repository("https://index.docker.io/v1/", "foo/bar")
    assert (ref.registry, ref.repository) == ("docker.io", "foo/bar")
    assert normalize_registry("GHCR.io") == "ghcr.io"
    assert normalize_registry("http://localhost:5000/") == "localhost:5000"
    with pytest.raises(InvalidReference):
        normalize_registry("not a host")
    with pytest.raises(InvalidReference, match="invalid registry host"):
        normalize_registry("ghcr.io\n")
    with pytest.raises(InvalidReference, match="port 99999 is not in 1-65535"):
        normalize_registry("ghcr.io:99999")
    with pytest.raises(InvalidReference):
        parse_repository("ghcr.io", "Bad")


@pytest.mark.parametrize(
    ("registry", "loopback"),
    [
        ("localhost", True),
        ("localhost:5000", True),
        ("127.0.0.1:5000", True),
        ("127.1.2.3", True),
        ("[::1]:5000", True),
        ("ghcr.io", False),
        ("10.0.0.1:5000", False),
        ("docker.io", False),
    ],
)
def test_loopback(registry: str, loopback: bool) -> None:
    assert is_loopback(registry) is loopback


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        (None, "Always"),
        ("", "Always"),
        ("ghcr.io/org/model", "Always"),
        ("ghcr.io/org/model:latest", "Always"),
        ("localhost:5000/aim/model:latest", "Always"),
        ("ghcr.io/org/model:0.8.5", "IfNotPresent"),
        ("ghcr.io/org/model:latest-rc", "IfNotPresent"),
        ("ghcr.io/org/model@sha256:" + "a" * 64, "IfNotPresent"),
        ("ghcr.io/org/model:latest@sha256:" + "b" * 64, "IfNotPresent"),
        ("not a reference", "IfNotPresent"),
    ],
)
def test_the_pull_policy_follows_the_tag(image: str | None, policy: str) -> None:
    assert pull_policy(image) == policy
