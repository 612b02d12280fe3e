"""The cluster DNS stand-in (``python -m aim_dev.clusterdns``) as a process against the real
kube-apiserver: it answers over UDP and TCP on a loopback port what the Services and Endpoints of a
test's namespace say, and follows their changes. No kubelet runs in this tier, so the Endpoints are
made by hand, for Services without a selector (the Endpoints controller leaves those alone)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dnslib import QTYPE, RCODE, DNSRecord

from aim_dev.clusterdns.server import ENDPOINTS, SERVICE
from aim_dev.local.cluster import ControlPlane
from aim_dev.local.processes import free_port
from aimcore.runtime import Kube
from tests.helpers import eventually


@dataclass
class Answer:
    rcode: str
    values: list[str]
    truncated: bool


@dataclass
class Dns:
    port: int

    def ask(self, name: str, qtype: str = "A", *, tcp: bool = False) -> Answer:
        reply = DNSRecord.parse(
            DNSRecord.question(name, qtype).send("127.0.0.1", self.port, tcp=tcp, timeout=5)
        )
        values = sorted(str(rr.rdata) for rr in reply.rr if rr.rtype == getattr(QTYPE, qtype))
        return Answer(RCODE[reply.header.rcode], values, bool(reply.header.tc))

    async def over_both(self, name: str, qtype: str = "A") -> list[Answer]:
        """The answers over UDP and then over TCP."""
        return [await asyncio.to_thread(self.ask, name, qtype, tcp=tcp) for tcp in (False, True)]

    async def both(self, name: str, qtype: str = "A") -> Answer:
        """The answer over UDP, once TCP answered the same (of a name that no longer changes)."""
        udp, tcp = await self.over_both(name, qtype)
        assert udp == tcp
        return udp

    async def becomes(self, name: str, rcode: str, *values: str, qtype: str = "A") -> None:
        wanted = Answer(rcode, sorted(values), False)
        last: list[Answer] = []

        async def probe() -> bool:
            last[:] = await self.over_both(name, qtype)
            return last == [wanted, wanted]

        try:
            await eventually(probe, timeout=20, interval=0.1, what=f"{name} {qtype}: {wanted}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the last answers (UDP, TCP): {last}") from None


def dns_port() -> int:
    """A loopback port free for TCP (:func:`free_port`) and for UDP too."""
    while True:
        port = free_port()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            try:
                udp.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


@pytest.fixture
async def dns(aim_cluster: ControlPlane, tmp_path: Path) -> AsyncIterator[Dns]:
    """The server as a process on a loopback port, for the domain ``cluster.test``, once ready."""
    port, ready, log = dns_port(), tmp_path / "ready", tmp_path / "clusterdns.log"
    command = [sys.executable, "-m", "aim_dev.clusterdns", "--kubeconfig", str(aim_cluster.kubeconfig_path)]
    command += ["--listen", f"127.0.0.1:{port}", "--domain", "cluster.test", "--ready", str(ready)]
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(*command, stdout=out, stderr=subprocess.STDOUT)
    try:

        async def started() -> bool:
            assert process.returncode is None, log.read_text()
            return ready.exists()

        await eventually(started, timeout=30, interval=0.1, what="the ready file")
        yield Dns(port)
        assert process.returncode is None, log.read_text()  # it did not die during the test
    finally:
        if process.returncode is None:
            process.terminate()
        await asyncio.wait_for(process.wait(), 10)


def endpoints(
    name: str, *addresses: tuple[str, str], not_ready: tuple[str, str] | None = None
) -> dict[str, Any]:
    subset: dict[str, Any] = {
        "addresses": [{"ip": ip, "hostname": host} for ip, host in addresses],
        "ports": [{"name": "peer", "port": 7000, "protocol": "TCP"}],
    }
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": not_ready[0], "hostname": not_ready[1]}]
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name}, "subsets": [subset]}


def service(name: str, *, headless: bool = False, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}], **spec}
    if headless:
        body["clusterIP"] = "None"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


async def test_services_and_endpoints_are_answered_over_udp_and_tcp_and_followed(
    kube: Kube, namespace: str, dns: Dns
) -> None:
    zone = f"{namespace}.svc.cluster.test"
    web = await kube.create(SERVICE, service("web"), namespace)
    cluster_ip = web["spec"]["clusterIP"]
    assert cluster_ip and cluster_ip != "None"
    await kube.create(SERVICE, service("db", headless=True), namespace)
    await kube.create(
        ENDPOINTS,
        endpoints("db", ("10.244.0.1", "db-0"), ("10.244.0.2", "db-1"), not_ready=("10.244.0.3", "db-2")),
        namespace,
    )

    await dns.becomes(f"web.{zone}", "NOERROR", cluster_ip)
    await dns.becomes(f"db.{zone}", "NOERROR", "10.244.0.1", "10.244.0.2")
    assert await dns.both(f"DB-1.db.{zone.upper()}.") == Answer("NOERROR", ["10.244.0.2"], False)
    assert await dns.both(f"db-2.db.{zone}") == Answer("NXDOMAIN", [], False)  # not ready
    assert await dns.both(f"web.{zone}", "AAAA") == Answer("NOERROR", [], False)  # NODATA
    assert await dns.both(f"nothing.{zone}") == Answer("NXDOMAIN", [], False)
    assert await dns.both("example.com") == Answer("NXDOMAIN", [], False)
    assert await dns.both(f"_http._tcp.web.{zone}", "SRV") == Answer(
        "NOERROR", [f"0 100 80 web.{zone}."], False
    )

    # an address removed is gone from the answers; the unready one published once the Service says so
    fewer = endpoints("db", ("10.244.0.2", "db-1"), not_ready=("10.244.0.3", "db-2"))
    await kube.patch(ENDPOINTS, namespace, "db", {"subsets": fewer["subsets"]})
    await dns.becomes(f"db.{zone}", "NOERROR", "10.244.0.2")
    await dns.becomes(f"db-0.db.{zone}", "NXDOMAIN")
    await kube.patch(SERVICE, namespace, "db", {"spec": {"publishNotReadyAddresses": True}})
    await dns.becomes(f"db.{zone}", "NOERROR", "10.244.0.2", "10.244.0.3")
    await dns.becomes(f"db-2.db.{zone}", "NOERROR", "10.244.0.3")

    await kube.delete(SERVICE, namespace, "web")
    await dns.becomes(f"web.{zone}", "NXDOMAIN")
