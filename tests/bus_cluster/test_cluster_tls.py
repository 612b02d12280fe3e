"""TLS on a clustered bus (the production overlay's bus-tls with bus-cluster-tls), on a real
three-node nats-server cluster: the nodes join over routes that present and verify certificates
from the bus CA (`aimctl bus credentials --tls` makes them), clients reach JetStream over TLS, and
the route port admits no one without a certificate from that CA — before, anything that reached
port 6222 could join the cluster and read every stream."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from aim_dev.local.natscluster import NatsCluster
from aimcore.api.bus import auth, topology
from aimcore.runtime import connect_bus
from aimctl.bus_tls import BusTls
from tests.bus_cluster.conftest import meta_leader


@pytest.fixture
def pki(tmp_path: Path) -> auth.Tls:
    """The bus's certificate and CA bundle as `aimctl bus credentials --tls` makes them, for the
    loopback addresses the nodes reach each other by."""
    made = BusTls.new("aim-system", ["127.0.0.1", "localhost"])
    files = {"tls.crt": made.server_cert, "tls.key": made.server_key, "ca.crt": made.bundle}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return auth.Tls(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), str(tmp_path / "ca.crt"))


@pytest.fixture
def tls_cluster(tmp_path: Path, pki: auth.Tls) -> Iterator[NatsCluster]:
    cluster = NatsCluster(tmp_path / "nats-cluster", tls=pki)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def route_handshake(port: int, context: ssl.SSLContext) -> dict[str, object]:
    """Speak to a route port as a joining server does: the TLS handshake first (the server says
    nothing before it), then read the server's INFO. Returns the INFO; raises what the handshake
    raises, or ConnectionError when the server closes the connection instead of answering (a
    refused certificate is answered after the handshake under TLS 1.3)."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        line = tls.makefile("rb").readline().decode()
    if not line.startswith("INFO "):
        raise ConnectionError(f"the route port closed the connection ({line!r})")
    return dict(json.loads(line.removeprefix("INFO ")))


def _client_context(ca_file: str, cert: tuple[str, str] | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    if cert is not None:
        context.load_cert_chain(*cert)
    return context


async def test_the_cluster_forms_over_verified_routes_and_refuses_strangers(
    tls_cluster: NatsCluster, pki: auth.Tls, tmp_path: Path
) -> None:
    await meta_leader(tls_cluster)
    # clients over TLS: every stream and bucket at three replicas, led and written
    nc = await connect_bus(tls_cluster.client(), "test-admin", forever=False, connect_timeout=5)
    try:
        assert tls_cluster.client().url.startswith("tls://")
        js = nc.jetstream()
        await topology.ensure_topology(js, replicas=3)
        kv = await topology.objects_bucket(js)
        await kv.put("over-tls", b"kept")
        assert (await kv.get("over-tls")).value == b"kept"
    finally:
        await nc.close()

    port = tls_cluster.route_ports[0]
    assert pki.ca_file is not None
    # a server of the cluster (its certificate from the bus CA) completes the handshake
    info = route_handshake(port, _client_context(pki.ca_file, (pki.cert_file, pki.key_file)))
    assert info.get("tls_required") is True and info.get("tls_verify") is True

    # a stranger without a certificate, or with one from another CA, is refused
    other = trustme.CA().issue_cert("127.0.0.1")
    other.cert_chain_pems[0].write_to_path(str(tmp_path / "other.crt"))
    other.private_key_pem.write_to_path(str(tmp_path / "other.key"))
    for cert in (None, (str(tmp_path / "other.crt"), str(tmp_path / "other.key"))):
        with pytest.raises((ssl.SSLError, ConnectionError)):
            route_handshake(port, _client_context(pki.ca_file, cert))
