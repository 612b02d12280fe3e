"""Client protocol paths the local docker-registry cannot exercise (it has no token service and does
not paginate tags): bearer tokens, tag pagination, redirects to another host, 5xx/429, bad digests.
The registry here is a small in-process aiohttp server on loopback; the rest is tested against
the real registry in tests/oci."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from aimcore.domain.oci import (
    AuthFailed,
    DockerConfig,
    ImageNotFound,
    Platform,
    RegistryClient,
    RegistryError,
    RegistryUnreachable,
    select_platform,
)
from tests.helpers import LOOPBACK

PASSWORD = "pw-DO-NOT-LEAK"


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


CONFIG = json.dumps({"os": "linux", "architecture": "amd64", "config": {"Labels": {"k": "v"}}}).encode()
MANIFEST = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": sha(CONFIG),
            "size": len(CONFIG),
        },
        "layers": [],
    }
).encode()
TAGS = [f"v{i}" for i in range(7)]


@dataclass
class Fake:
    url: str = ""
    cdn_url: str = ""
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    cdn_authorization: list[str | None] = field(default_factory=list)
    grant_scopes: bool = True


def _basic_ok(header: str | None) -> bool:
    return header == "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()


@pytest.fixture
async def fake() -> AsyncIterator[Fake]:
    state = Fake()

    def challenge(scope: str) -> web.Response:
        return web.json_response(
            {"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]},
            status=401,
            headers={"WWW-Authenticate": f'Bearer realm="{state.url}/token",service="fake",scope="{scope}"'},
        )

    def authorized(request: web.Request, scope: str) -> bool:
        return state.grant_scopes and request.headers.get("Authorization") == f"Bearer tok:{scope}"

    async def token(request: web.Request) -> web.Response:
        state.token_requests.append(
            {
                "query": dict(request.query),
                "scopes": request.query.getall("scope", []),
                "auth": request.headers.get("Authorization"),
            }
        )
        auth = request.headers.get("Authorization")
        if auth is not None and not _basic_ok(auth):
            return web.json_response({"details": "bad credentials"}, status=401)
        scope = request.query.getall("scope", [""])[0]
        if scope.startswith("repository:private/") and auth is None:
            return web.json_response({"token": "anonymous", "expires_in": 300})
        return web.json_response({"token": f"tok:{scope}", "expires_in": 300})

    async def manifests(request: web.Request) -> web.StreamResponse:
        name, ref = request.match_info["name"], request.match_info["ref"]
        state.requests.append((request.path, request.headers.get("Authorization")))
        if name == "broken":
            return web.Response(status=503, text="down")
        if name == "limited":
            return web.Response(status=429, text="slow down")
        scope = f"repository:{name}:pull"
        if not authorized(request, scope):
            return challenge(scope)
        if name == "baddigest" and ref.startswith("sha256:"):
            return web.Response(body=MANIFEST, content_type="application/vnd.oci.image.manifest.v1+json")
        if ref not in ("1.0", sha(MANIFEST)):
            return web.json_response(
                {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "unknown"}]}, status=404
            )
        return web.Response(
            body=MANIFEST,
            headers={
                "Content-Type": "application/vnd.oci.image.manifest.v1+json",
                "Docker-Content-Digest": sha(MANIFEST),
            },
        )

    async def blobs(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if not authorized(request, f"repository:{name}:pull"):
            return challenge(f"repository:{name}:pull")
        raise web.HTTPTemporaryRedirect(f"{state.cdn_url}/blob/{request.match_info['digest']}?sig=abc")

    async def cdn_blob(request: web.Request) -> web.Response:
        state.cdn_authorization.append(request.headers.get("Authorization"))
        return web.Response(body=CONFIG if request.match_info["digest"] == sha(CONFIG) else b"corrupt")

    async def tags(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if not authorized(request, f"repository:{name}:pull"):
            return challenge(f"repository:{name}:pull")
        n = int(request.query.get("n", "1000"))
        last = request.query.get("last")
        start = TAGS.index(last) + 1 if last else 0
        page = TAGS[start : start + n]
        headers = {}
        if start + n < len(TAGS):
            headers["Link"] = f'</v2/{name}/tags/list?n={n}&last={page[-1]}>; rel="next"'
        return web.json_response({"name": name, "tags": page}, headers=headers)

    app = web.Application()
    app.router.add_get("/token", token)
    app.router.add_route("*", "/v2/{name:.+}/manifests/{ref}", manifests)
    app.router.add_get("/v2/{name:.+}/blobs/{digest}", blobs)
    app.router.add_get("/v2/{name:.+}/tags/list", tags)
    cdn = web.Application()
    cdn.router.add_get("/blob/{digest}", cdn_blob)
    runners = []
    for application in (app, cdn):
        runner = web.AppRunner(application)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
    ports = [r.addresses[0][1] for r in runners]
    state.url = f"http://127.0.0.1:{ports[0]}"
    state.cdn_url = f"http://localhost:{ports[1]}"
    try:
        yield state
    finally:
        for runner in runners:
            await runner.cleanup()


def host(fake: Fake) -> str:
    return fake.url.removeprefix("http://")


async def test_bearer_token_flow_caches_tokens_per_scope(fake: Fake) -> None:
    async with RegistryClient(policy=LOOPBACK) as client:
        labels = await client.labels(f"{host(fake)}/team/app:1.0")
        assert labels == {"k": "v"}
        assert len(fake.token_requests) == 1
        assert fake.token_requests[0]["query"]["service"] == "fake"
        assert fake.token_requests[0]["scopes"] == ["repository:team/app:pull"]
        assert fake.token_requests[0]["auth"] is None  # anonymous token
        first = len(fake.requests)
        await client.labels(f"{host(fake)}/team/app:1.0")
        assert len(fake.token_requests) == 1  # cached
        assert len(fake.requests) == first + 1  # no 401 round trip any more
        await client.labels(f"{host(fake)}/team/other:1.0")
        assert fake.token_requests[-1]["scopes"] == ["repository:team/other:pull"]


async def test_token_endpoint_gets_the_credentials(fake: Fake) -> None:
    creds = DockerConfig.single(host(fake), "alice", PASSWORD)
    async with RegistryClient(creds, policy=LOOPBACK) as client:
        assert await client.labels(f"{host(fake)}/private/app:1.0") == {"k": "v"}
    assert _basic_ok(fake.token_requests[0]["auth"])


async def test_token_endpoint_rejects_credentials(fake: Fake) -> None:
    creds = DockerConfig.single(host(fake), "alice", "wrong-" + PASSWORD)
    async with RegistryClient(creds, policy=LOOPBACK) as client:
        with pytest.raises(AuthFailed) as info:
            await client.labels(f"{host(fake)}/private/app:1.0")
    assert PASSWORD not in str(info.value) and "alice" not in str(info.value)


async def test_token_without_access_is_auth_failed(fake: Fake) -> None:
    async with RegistryClient(policy=LOOPBACK) as client:  # anonymous token for a private repository
        with pytest.raises(AuthFailed, match="rejected the anonymous request"):
            await client.labels(f"{host(fake)}/private/app:1.0")
    fake.grant_scopes = False
    async with RegistryClient(policy=LOOPBACK) as client:
        with pytest.raises(AuthFailed):
            await client.manifest(f"{host(fake)}/team/app:1.0")


async def test_blob_redirect_to_another_host_drops_authorization(fake: Fake) -> None:
    async with RegistryClient(policy=LOOPBACK) as client:
        config = await client.config(f"{host(fake)}/team/app:1.0")
    assert config.digest == sha(CONFIG)
    assert fake.cdn_authorization == [None]


async def test_tags_pagination_follows_link_headers(fake: Fake) -> None:
    async with RegistryClient(policy=LOOPBACK) as client:
        assert await client.tags(f"{host(fake)}/team/app", page_size=3) == TAGS
        assert await client.tags(f"{host(fake)}/team/app", page_size=2, limit=3) == TAGS[:3]
        assert await client.tags(f"{host(fake)}/team/app") == TAGS
        pages = [p for m, p in client.request_log if p.endswith("/tags/list")]
        assert len(pages) >= 3 + 1 + 2


async def test_not_found_5xx_and_429(fake: Fake) -> None:
    async with RegistryClient(policy=LOOPBACK) as client:
        with pytest.raises(ImageNotFound, match="MANIFEST_UNKNOWN"):
            await client.manifest(f"{host(fake)}/team/app:2.0")
        with pytest.raises(RegistryUnreachable, match="503"):
            await client.manifest(f"{host(fake)}/broken:1")
        with pytest.raises(RegistryUnreachable, match="rate limiting"):
            await client.manifest(f"{host(fake)}/limited:1")


async def test_digest_mismatch_is_a_registry_error(fake: Fake) -> None:
    async with RegistryClient(policy=LOOPBACK) as client:
        with pytest.raises(RegistryError, match="digest"):
            await client.manifest(f"{host(fake)}/baddigest@sha256:{'0' * 64}")
        with pytest.raises(RegistryError, match="digest"):
            await client.blob(f"{host(fake)}/team/app", "sha256:" + "1" * 64)


async def test_head_digest(fake: Fake) -> None:
    async with RegistryClient(policy=LOOPBACK) as client:
        assert await client.digest(f"{host(fake)}/team/app:1.0") == sha(MANIFEST)


def _entry(digest_char: str, platform: dict[str, str] | None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": "sha256:" + digest_char * 64,
        "size": 1,
    }
    if platform is not None:
        entry["platform"] = platform
    entry.update(extra)
    return entry


def test_select_platform() -> None:
    index = {
        "manifests": [
            _entry("a", {"os": "unknown", "architecture": "unknown"}),
            _entry("b", {"os": "linux", "architecture": "arm64", "variant": "v8"}),
            _entry("c", {"os": "linux", "architecture": "amd64"}),
            _entry("d", {"os": "linux", "architecture": "arm", "variant": "v6"}),
            _entry("e", {"os": "linux", "architecture": "arm", "variant": "v7"}),
        ]
    }
    assert select_platform(index, Platform.parse("linux/amd64")).endswith("c" * 64)
    assert select_platform(index, Platform.parse("linux/arm64")).endswith("b" * 64)
    assert select_platform(index, Platform.parse("linux/arm/v7")).endswith("e" * 64)
    # no match: the first entry that is not an attestation
    assert select_platform(index, Platform.parse("windows/amd64")).endswith("b" * 64)
    attestation = _entry(
        "f",
        {"os": "linux", "architecture": "s390x"},
        annotations={"vnd.docker.reference.type": "attestation-manifest"},
    )
    assert select_platform(
        {"manifests": [attestation, _entry("9", None)]}, Platform("linux", "amd64")
    ).endswith("9" * 64)
    with pytest.raises(RegistryError):
        select_platform({"manifests": []}, Platform("linux", "amd64"))
    with pytest.raises(ValueError):
        Platform.parse("linux")
