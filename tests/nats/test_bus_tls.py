"""The bus over TLS, on a real nats-server: a client with the CA (and its role's key) works, a client
that does not trust the server's certificate or speaks plain text is refused, and with client
verification on, only clients with a certificate from the CA get in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from nats.errors import Error as NatsError

from aim_dev.local.natsserver import NatsServer
from aimcore.api.bus import auth, topology
from aimcore.runtime import connect_bus
from aimcore.runtime.bus import BusSettings


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def tls_files(ca: trustme.CA, directory: Path, verify_clients: bool = False) -> auth.Tls:
    directory.mkdir(parents=True, exist_ok=True)
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert.private_key_pem.write_to_path(str(directory / "server.key"))
    cert.cert_chain_pems[0].write_to_path(str(directory / "server.crt"))
    ca.cert_pem.write_to_path(str(directory / "ca.crt"))
    return auth.Tls(
        cert_file=str(directory / "server.crt"),
        key_file=str(directory / "server.key"),
        ca_file=str(directory / "ca.crt"),
        verify_clients=verify_clients,
    )


@pytest.fixture
def tls_server(ca: trustme.CA, tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path / "nats", tls=tls_files(ca, tmp_path / "pki"))
    try:
        yield server.start()
    finally:
        server.stop()


async def fails(settings: BusSettings) -> str:
    with pytest.raises((NatsError, OSError)) as caught:
        nc = await connect_bus(settings, "test-tls", forever=False, connect_timeout=3, allow_reconnect=False)
        await nc.close()
    return str(caught.value)


async def test_a_service_connects_over_tls_and_plain_text_is_refused(tls_server: NatsServer) -> None:
    settings = tls_server.client("watcher")
    assert settings.url.startswith("tls://") and settings.tls_ca_file
    nc = await connect_bus(settings, "test-watcher", forever=False)
    try:
        await topology.ensure_topology(nc.jetstream())  # JetStream works over it, as the watcher's role
    finally:
        await nc.close()
    # the same key, but without the CA: the server's certificate is not trusted
    await fails(settings.replace(tls_ca_file=None))
    # plain text to a TLS server
    await fails(settings.replace(url=settings.url.replace("tls://", "nats://"), tls_ca_file=None))


async def test_client_certificates_when_the_server_asks_for_them(ca: trustme.CA, tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats", tls=tls_files(ca, tmp_path / "pki", verify_clients=True))
    server.start()
    try:
        settings = server.client("reader")
        await fails(settings)  # no client certificate
        client = ca.issue_cert("aim-reader")
        client.private_key_pem.write_to_path(str(tmp_path / "client.key"))
        client.cert_chain_pems[0].write_to_path(str(tmp_path / "client.crt"))
        with_cert = settings.replace(
            tls_cert_file=str(tmp_path / "client.crt"), tls_key_file=str(tmp_path / "client.key")
        )
        nc = await connect_bus(with_cert, "test-reader", forever=False)
        try:
            assert nc.is_connected
        finally:
            await nc.close()
        # a certificate from another CA is refused
        other = trustme.CA().issue_cert("aim-reader")
        other.private_key_pem.write_to_path(str(tmp_path / "other.key"))
        other.cert_chain_pems[0].write_to_path(str(tmp_path / "other.crt"))
        await fails(
            settings.replace(
                tls_cert_file=str(tmp_path / "other.crt"), tls_key_file=str(tmp_path / "other.key")
            )
        )
    finally:
        server.stop()
