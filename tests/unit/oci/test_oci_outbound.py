"""The OCI client under the outbound address policy, against small real registries on loopback
(aiohttp servers in the test): a registry redirect to the metadata address or to a refused host is
refused before anything connects; a Bearer realm on another host over plain HTTP never receives the
pull secret's password (the token server's request log says so); ``Authorization`` never follows a
redirect to another origin."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from aimcore.domain.oci import (
    AddressNotAllowed,
    DockerConfig,
    InsecureTokenRealm,
    RegistryClient,
    RegistryError,
)
from aimcore.domain.outbound import OutboundPolicy
from tests.helpers import LOOPBACK
from tests.oci_servers import BASIC, METADATA_URL, PASSWORD, Servers, registry_servers


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    async with registry_servers() as state:
        yield state


def credentials(servers: Servers) -> DockerConfig:
    return DockerConfig.single(servers.registry, "robot", PASSWORD)


# -- redirects -------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [LOOPBACK, OutboundPolicy(allow_private=True)])
async def test_a_redirect_to_the_metadata_address_is_refused(
    servers: Servers, policy: OutboundPolicy
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
    async with RegistryClient(policy=LOOPBACK) as client:  # the tests' policy: only 127.0.0.1 and localhost
        with pytest.raises(AddressNotAllowed, match=r"127\.0\.0\.2 \(loopback\)"):
            await client.config(f"{servers.registry}/team/app:1.0")
    assert servers.other_log == []
    async with RegistryClient(DockerConfig(), policy=OutboundPolicy(allow_private=True)) as client:
        assert (await client.config(f"{servers.registry}/team/app:1.0")).labels == {"k": "v"}
    assert servers.other_log == [(f"127.0.0.2:{servers.other_port}/blob", None)]


async def test_a_redirect_to_another_scheme_is_a_registry_error(servers: Servers) -> None:
    servers.blob_location = "file:///etc/passwd"
    async with RegistryClient(policy=LOOPBACK) as client:
        with pytest.raises(RegistryError, match="not http"):
            await client.config(f"{servers.registry}/team/app:1.0")


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


async def test_the_refusal_names_the_realm_without_its_user_information(servers: Servers) -> None:
    servers.realm = f"http://someone:realm-secret@127.0.0.2:{servers.other_port}/token"
    async with RegistryClient(credentials(servers), policy=OutboundPolicy(allow_private=True)) as client:
        with pytest.raises(InsecureTokenRealm) as err:
            await client.manifest(f"{servers.registry}/team/app:1.0")
    assert f"http://127.0.0.2:{servers.other_port}, plain HTTP on another host" in str(err.value)
    assert "realm-secret" not in str(err.value) and "someone" not in str(err.value)
    assert servers.other_log == []


async def test_anonymous_token_requests_may_use_such_a_realm(servers: Servers) -> None:
    """Without credentials there is nothing to leak: the anonymous token flow works."""
    servers.realm = f"{servers.other}/token"
    async with RegistryClient(policy=OutboundPolicy(allow_private=True)) as client:
        await client.manifest(f"{servers.registry}/team/app:1.0")
    assert servers.other_log == [(f"127.0.0.2:{servers.other_port}/token", None)]


async def test_a_realm_on_the_registrys_own_host_gets_the_credentials(servers: Servers) -> None:
    """Same host (another port): the registry itself is spoken to over plain HTTP there anyway."""
    servers.realm = f"{servers.same_host}/token"
    async with RegistryClient(credentials(servers), policy=LOOPBACK) as client:
        await client.manifest(f"{servers.registry}/team/app:1.0")
    assert [auth for _, auth in servers.other_log] == [BASIC]


async def test_authorization_never_follows_a_redirect_to_another_origin(servers: Servers) -> None:
    servers.basic = True
    servers.blob_location = f"{servers.other}/blob"
    async with RegistryClient(credentials(servers), policy=OutboundPolicy(allow_private=True)) as client:
        assert (await client.config(f"{servers.registry}/team/app:1.0")).labels == {"k": "v"}
    assert servers.registry_log[-1][1] == BASIC  # the registry got the credentials
    assert servers.other_log == [(f"127.0.0.2:{servers.other_port}/blob", None)]  # the other host not
