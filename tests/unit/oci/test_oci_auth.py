"""Pull-secret credentials (``kubernetes.io/dockerconfigjson``) and WWW-Authenticate parsing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from aimcore.domain.oci import (
    Credentials,
    CredentialsError,
    DockerConfig,
    credentials_from_secret,
    credentials_from_secrets,
    parse_dockerconfigjson,
    parse_www_authenticate,
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(
    config: dict[str, Any] | str, *, name: str = "pull", kind: str = "kubernetes.io/dockerconfigjson"
) -> dict[str, Any]:
    raw = config if isinstance(config, str) else json.dumps(config)
    key = ".dockerconfigjson" if kind == "kubernetes.io/dockerconfigjson" else ".dockercfg"
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "team-a"},
        "type": kind,
        "data": {key: b64(raw)},
    }


def test_auth_field_base64_user_pass() -> None:
    config = parse_dockerconfigjson({"auths": {"ghcr.io": {"auth": b64("bot:p:a:ss")}}})
    assert config.lookup("ghcr.io") == Credentials("bot", "p:a:ss")  # password may contain ':'
    assert config.lookup("quay.io") is None


def test_username_password_fields() -> None:
    config = parse_dockerconfigjson(json.dumps({"auths": {"quay.io": {"username": "u", "password": "p"}}}))
    assert config.lookup("quay.io") == Credentials("u", "p")


def test_auth_wins_over_username_password_and_empty_auth_falls_back() -> None:
    both = parse_dockerconfigjson({"auths": {"r.io": {"auth": b64("a:1"), "username": "b", "password": "2"}}})
    assert both.lookup("r.io") == Credentials("a", "1")
    empty = parse_dockerconfigjson({"auths": {"r.io": {"auth": "", "username": "b", "password": "2"}}})
    assert empty.lookup("r.io") == Credentials("b", "2")


@pytest.mark.parametrize(
    "key", ["https://index.docker.io/v1/", "docker.io", "registry-1.docker.io", "index.docker.io"]
)
@pytest.mark.parametrize("registry", ["docker.io", "registry-1.docker.io", "index.docker.io"])
def test_docker_hub_aliases(key: str, registry: str) -> None:
    config = parse_dockerconfigjson({"auths": {key: {"auth": b64("hub:pw")}}})
    assert config.lookup(registry, "library/ubuntu") == Credentials("hub", "pw")
    assert config.lookup("ghcr.io") is None


def test_scheme_port_path_and_globs() -> None:
    config = parse_dockerconfigjson(
        {
            "auths": {
                "https://registry.example.com:5000": {"auth": b64("port:1")},
                "registry.example.com": {"auth": b64("host:1")},
                "registry.example.com/team-a": {"auth": b64("team:1")},
                "*.azurecr.io": {"auth": b64("glob:1")},
                "http://localhost:5000/v2/": {"auth": b64("local:1")},
            }
        }
    )
    assert config.lookup("registry.example.com:5000", "x") == Credentials("port", "1")
    assert config.lookup("registry.example.com", "other/img") == Credentials("host", "1")
    assert config.lookup("registry.example.com", "team-a/img") == Credentials("team", "1")
    assert config.lookup("registry.example.com", "team-ab/img") == Credentials("host", "1")
    assert config.lookup("myreg.azurecr.io") == Credentials("glob", "1")
    assert config.lookup("a.b.azurecr.io") is None  # one label per '*'
    assert config.lookup("localhost:5000") == Credentials("local", "1")
    assert config.lookup("localhost:5001") is None


def test_missing_registry_and_entries_without_credentials() -> None:
    config = parse_dockerconfigjson(
        {"auths": {"ghcr.io": {"email": "x@y"}, "quay.io": {"identitytoken": "t"}}}
    )
    assert not config
    assert config.lookup("ghcr.io") is None
    assert parse_dockerconfigjson({}).lookup("ghcr.io") is None
    assert parse_dockerconfigjson({"credsStore": "desktop"}).lookup("docker.io") is None


def test_secret_objects_and_merge_order() -> None:
    first = secret({"auths": {"ghcr.io": {"auth": b64("first:1")}}}, name="a")
    second = secret(
        {"auths": {"ghcr.io": {"auth": b64("second:2")}, "quay.io": {"auth": b64("q:3")}}}, name="b"
    )
    config = credentials_from_secrets([first, second])
    assert config.lookup("ghcr.io") == Credentials("first", "1")
    assert config.lookup("quay.io") == Credentials("q", "3")
    legacy = secret({"ghcr.io": {"auth": b64("old:1")}}, kind="kubernetes.io/dockercfg")
    assert credentials_from_secret(legacy).lookup("ghcr.io") == Credentials("old", "1")
    string_data = {
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "s"},
        "stringData": {".dockerconfigjson": json.dumps({"auths": {"r.io": {"auth": b64("s:1")}}})},
    }
    assert credentials_from_secret(string_data).lookup("r.io") == Credentials("s", "1")


SECRET_TEXT = "hunter2-TOPSECRET"


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "Opaque", "metadata": {"name": "pull"}, "data": {"x": b64(SECRET_TEXT)}},
        {"type": "kubernetes.io/dockerconfigjson", "metadata": {"name": "pull"}, "data": {}},
        {
            "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "pull"},
            "data": {".dockerconfigjson": "!!" + SECRET_TEXT},
        },
        secret("{not json " + SECRET_TEXT),
        secret(json.dumps([SECRET_TEXT])),
        secret({"auths": [SECRET_TEXT]}),
        secret({"auths": {"ghcr.io": SECRET_TEXT}}),
        secret({"auths": {"ghcr.io": {"auth": "%%" + SECRET_TEXT}}}),
        secret({"auths": {"ghcr.io": {"auth": b64(SECRET_TEXT)}}}),  # no ':'
        secret({"auths": {"ghcr.io": {"username": SECRET_TEXT, "password": 1}}}),
        secret({"auths": {"not a host": {"auth": b64("a:" + SECRET_TEXT)}}}),
    ],
)
def test_malformed_secrets_name_the_secret_not_its_contents(bad: dict[str, Any]) -> None:
    with pytest.raises(CredentialsError) as info:
        credentials_from_secret(bad)
    message = str(info.value)
    assert "pull" in message
    assert SECRET_TEXT not in message
    assert b64(SECRET_TEXT) not in message


def test_credentials_repr_hides_the_password() -> None:
    creds = Credentials("bot", SECRET_TEXT)
    assert SECRET_TEXT not in repr(creds)
    assert SECRET_TEXT not in repr(DockerConfig.single("ghcr.io", "bot", SECRET_TEXT))
    assert creds.basic_header() == "Basic " + b64(f"bot:{SECRET_TEXT}")


# -- WWW-Authenticate -------------------------------------------------------------------------


def test_bearer_challenge() -> None:
    [c] = parse_www_authenticate(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/ubuntu:pull"'
    )
    assert c.scheme == "bearer"
    assert dict(c.params) == {
        "realm": "https://auth.docker.io/token",
        "service": "registry.docker.io",
        "scope": "repository:library/ubuntu:pull",
    }


def test_commas_in_quoted_values_escapes_and_spacing() -> None:
    [c] = parse_www_authenticate(
        'bearer  realm = "https://r.io/token" , scope="repository:a/b:pull,push", error="insufficient_scope",'
        ' note="say \\"hi\\""'
    )
    assert c.scheme == "bearer"
    assert c.params["scope"] == "repository:a/b:pull,push"
    assert c.params["error"] == "insufficient_scope"
    assert c.params["note"] == 'say "hi"'


def test_basic_and_several_challenges() -> None:
    [c] = parse_www_authenticate('Basic realm="basic-realm"')
    assert (c.scheme, dict(c.params)) == ("basic", {"realm": "basic-realm"})
    cs = parse_www_authenticate('Basic realm="x", Bearer realm="https://t/token",service=reg, Negotiate')
    assert [c.scheme for c in cs] == ["basic", "bearer", "negotiate"]
    assert cs[1].params == {"realm": "https://t/token", "service": "reg"}
    token68 = parse_www_authenticate("Negotiate abc123==, Basic realm=r")
    assert [(c.scheme, dict(c.params)) for c in token68] == [
        ("negotiate", {"": "abc123=="}),
        ("basic", {"realm": "r"}),
    ]


@pytest.mark.parametrize(
    ("header", "challenges"),
    [
        ("", []),
        ("   ", []),
        (",,,", []),
        ('"quoted"', []),  # no scheme
        ("Bearer realm=", [("bearer", {"": "realm="})]),  # no value: a token68 (it may end in '=')
    ],
)
def test_degenerate_headers_do_not_crash(header: str, challenges: list[tuple[str, dict[str, str]]]) -> None:
    assert [(c.scheme, dict(c.params)) for c in parse_www_authenticate(header)] == challenges
