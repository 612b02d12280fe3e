"""The OCI client under the outbound address policy, against small real registries on loopback
(aiohttp servers in the test): a registry redirect to the metadata address or to a refused host is
refused before anything connects; a Bearer realm on another host over plain HTTP never receives the
pull secret's password (the token server's request log says so); ``Authorization`` never follows a
redirect to another origin."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from aimcore.oci import (
    AddressNotAllowed,
    DockerConfig,
    InsecureTokenRealm,
    RegistryClient,
)
from aimcore.outbound import OutboundPolicy

PASSWORD = "pull-secret-DO-NOT-LEAK"
BASIC = "Basic " + base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
METADATA_URL = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
CONFIG = json.dumps({"os": "linux", "architecture": "amd64", "config": {"Labels": {"k": "v"}}}).encode()


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


MANIFEST = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(CONFIG), "size": 1},
        "layers": [],
    }
).encode()


@dataclass
class Servers:
    registry: str = ""  # host:port on 127.0.0.1
    other: str = ""  # http://127.0.0.2:<port>: another host (Linux routes all of 127/8 to lo)
    other_port: int = 0
    same_host: str = ""  # http://127.0.0.1:<port>: the same service on the registry's host
    realm: str = ""  # the Bearer realm the registry names
    basic: bool = False  # the registry asks for Basic credentials instead
    blob_location: str = ""  # where blob GETs are redirected
    registry_log: list[tuple[str, str | None]] = field(default_factory=list)
    other_log: list[tuple[str, str | None]] = field(default_factory=list)  # (host + path, auth)


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    state = Servers()

    def authorized(request: web.Request) -> bool:
        if state.basic:
            return request.headers.get("Authorization") == BASIC
        return not state.realm or request.headers.get("Authorization") == "Bearer granted"

    def challenge() -> web.Response:
        scheme = 'Basic realm="reg"' if state.basic else f'Bearer realm="{state.realm}",service="reg"'
        return web.json_response(
            {"errors": [{"code": "UNAUTHORIZED"}]}, status=401, headers={"WWW-Authenticate": scheme}
        )

    async def manifest(request: web.Request) -> web.Response:
        state.registry_log.append((request.path, request.headers.get("Authorization")))
        if not authorized(request):
            return challenge()
        return web.Response(body=MANIFEST, content_type="application/vnd.oci.image.manifest.v1+json")

    async def blob(request: web.Request) -> web.Response:
        state.registry_log.append((request.path, request.headers.get("Authorization")))
        if not authorized(request):
            return challenge()
        raise web.HTTPTemporaryRedirect(state.blob_location)

    async def other(request: web.Request) -> web.Response:
        """The other host: a token service (which would hand out a token) and a blob store."""
        state.other_log.append((request.host + request.path, request.headers.get("Authorization")))
        if request.path == "/token":
            return web.json_response({"token": "granted", "expires_in": 300})
        return web.Response(body=CONFIG)

    registry_app = web.Application()
    registry_app.router.add_get("/v2/{name:.+}/manifests/{ref}", manifest)
    registry_app.router.add_get("/v2/{name:.+}/blobs/{digest}", blob)
    other_app = web.Application()
    other_app.router.add_get("/{tail:.*}", other)
    runners = []
    for app, addresses in ((registry_app, ["127.0.0.1"]), (other_app, ["127.0.0.2", "127.0.0.1"])):
        runner = web.AppRunner(app)
        await runner.setup()
        for address in addresses:
            await web.TCPSite(runner, address, 0).start()
        runners.append(runner)
    state.registry = f"127.0.0.1:{runners[0].addresses[0][1]}"
    state.other_port = runners[1].addresses[0][1]
    state.other = f"http://127.0.0.2:{state.other_port}"
    state.same_host = f"http://127.0.0.1:{runners[1].addresses[1][1]}"
    try:
        yield state
    finally:
        for runner in runners:
            await runner.cleanup()


def credentials(servers: Servers) -> DockerConfig:
    return DockerConfig.single(servers.registry, "robot", PASSWORD)


# -- redirects -------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [None, OutboundPolicy(allow_private=True)])
async def test_a_redirect_to_the_metadata_address_is_refused(
    servers: Servers, policy: OutboundPolicy | None
) -> None:
    """Even with private addresses allowed: the metadata address is never reached."""
    servers.blob_location = METADATA_URL
    async with RegistryClient(policy=policy) as client:
        with pytest.raises(AddressNotAllowed) as err:
            await client.config(f"{servers.registry}/team/app:1.0")
        assert err.value.reason == "AddressNotAllowed"
        assert "169.254.169.254" in str(err.value) and "cloud metadata" in str(err.value)
        assert all("169.254.169.254" not in url for _, url in client.request_log)
    assert [path for path, _ in servers.registry_log][-1].startswith("/v2/team/app/blobs/")


async def test_a_redirect_to_a_name_that_resolves_to_a_refused_address_never_connects(
    servers: Servers,
) -> None:
    """``localhost`` is not allow-listed here: it is refused when aiohttp resolves it, before any
    connection (the server behind it, reachable as 127.0.0.1, sees nothing)."""
    servers.blob_location = servers.same_host.replace("127.0.0.1", "localhost") + "/blob"
    policy = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}))
    async with RegistryClient(policy=policy) as client:
        with pytest.raises(AddressNotAllowed, match=r"'localhost' resolves to .*loopback"):
            await client.config(f"{servers.registry}/team/app:1.0")
    assert servers.other_log == []


async def test_a_redirect_to_another_private_host_follows_the_private_switch(servers: Servers) -> None:
    servers.blob_location = f"{servers.other}/blob"
    async with RegistryClient() as client:  # the tests' policy: only 127.0.0.1 and localhost
        with pytest.raises(AddressNotAllowed, match=r"127\.0\.0\.2 \(loopback\)"):
            await client.config(f"{servers.registry}/team/app:1.0")
    assert servers.other_log == []
    async with RegistryClient(DockerConfig(), policy=OutboundPolicy(allow_private=True)) as client:
        assert (await client.config(f"{servers.registry}/team/app:1.0")).labels == {"k": "v"}
    assert servers.other_log == [(f"127.0.0.2:{servers.other_port}/blob", None)]


# -- credentials -----------------------------------------------------------------------------------


async def test_a_plain_http_token_realm_on_another_host_never_gets_the_password(servers: Servers) -> None:
    """The registry (127.0.0.1) names a realm on 127.0.0.2 over plain HTTP. The address policy allows
    the realm (private addresses allowed), so only the credential rule stands between the pull
    secret and that host: nothing is sent, and the failure says why."""
    servers.realm = f"{servers.other}/token"
    policy = OutboundPolicy(allow_private=True)
    async with RegistryClient(credentials(servers), policy=policy) as client:
        with pytest.raises(InsecureTokenRealm) as err:
            await client.manifest(f"{servers.registry}/team/app:1.0")
    assert err.value.reason == "InsecureTokenRealm"
    assert "127.0.0.2" in str(err.value) and PASSWORD not in str(err.value)
    assert servers.other_log == []  # the token server never saw the request, let alone the password
    assert all(auth is None for _, auth in servers.registry_log)


async def test_anonymous_token_requests_may_use_such_a_realm(servers: Servers) -> None:
    """Without credentials there is nothing to leak: the anonymous token flow works."""
    servers.realm = f"{servers.other}/token"
    async with RegistryClient(policy=OutboundPolicy(allow_private=True)) as client:
        await client.manifest(f"{servers.registry}/team/app:1.0")
    assert servers.other_log == [(f"127.0.0.2:{servers.other_port}/token", None)]


async def test_a_realm_on_the_registrys_own_host_gets_the_credentials(servers: Servers) -> None:
    """Same host (another port): the registry itself is spoken to over plain HTTP there anyway."""
    servers.realm = f"{servers.same_host}/token"
    async with RegistryClient(credentials(servers)) as client:
        await client.manifest(f"{servers.registry}/team/app:1.0")
    assert [auth for _, auth in servers.other_log] == [BASIC]


async def test_authorization_never_follows_a_redirect_to_another_origin(servers: Servers) -> None:
    servers.basic = True
    servers.blob_location = f"{servers.other}/blob"
    async with RegistryClient(credentials(servers), policy=OutboundPolicy(allow_private=True)) as client:
        assert (await client.config(f"{servers.registry}/team/app:1.0")).labels == {"k": "v"}
    assert servers.registry_log[-1][1] == BASIC  # the registry got the credentials
    assert servers.other_log == [(f"127.0.0.2:{servers.other_port}/blob", None)]  # the other host not
