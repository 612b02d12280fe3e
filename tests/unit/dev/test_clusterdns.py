"""The cluster DNS stand-in's records (:mod:`aim_dev.clusterdns.records`): what CoreDNS's
``kubernetes`` plugin answers for normal, headless and ExternalName Services and their Endpoints;
and its packets (:class:`aim_dev.clusterdns.server.Resolver`), built and read with dnslib."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from dnslib import QTYPE, RCODE, DNSRecord

from aim_dev.clusterdns import server
from aim_dev.clusterdns.records import NOERROR, NXDOMAIN, Catalog, Record, build
from aim_dev.clusterdns.server import Resolver, parse_listen
from aimcore.api.backoff import Backoff
from aimcore.api.kinds import KindRef
from aimcore.runtime import Kube
from aimcore.runtime.kube import Gone
from tests.helpers import eventually

SVC = "svc.cluster.local"


def service(name: str, cluster_ip: str = "10.96.0.5", namespace: str = "ns", **spec: Any) -> dict[str, Any]:
    ports = [{"name": "http", "port": 80, "protocol": "TCP"}, {"port": 9000, "protocol": "UDP"}]
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterIP": cluster_ip, "ports": ports, **spec},
    }


def endpoints(name: str, *subsets: dict[str, Any], namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "subsets": list(subsets)}


def subset(
    *ready: tuple[str, str | None], not_ready: tuple[tuple[str, str | None], ...] = ()
) -> dict[str, Any]:
    def addresses(pairs: tuple[tuple[str, str | None], ...]) -> list[dict[str, str]]:
        return [{"ip": ip, **({"hostname": h} if h else {})} for ip, h in pairs]

    return {
        "addresses": addresses(ready),
        "notReadyAddresses": addresses(not_ready),
        "ports": [{"name": "peer", "port": 7000, "protocol": "TCP"}],
    }


def addresses(answer: tuple[int, list[Record]]) -> tuple[int, list[str]]:
    rcode, records = answer
    return rcode, [r.data for r in records]


DB = subset(("10.0.0.1", "db-0"), ("10.0.0.2", "db-1"), not_ready=(("10.0.0.3", "db-2"),))


def test_a_normal_service_answers_its_cluster_ip_and_its_endpoints_by_name() -> None:
    table = build([service("web")], [endpoints("web", subset(("10.0.0.9", None)))])
    assert addresses(table.answer(f"web.ns.{SVC}", "A")) == (NOERROR, ["10.96.0.5"])
    assert addresses(table.answer(f"10-0-0-9.web.ns.{SVC}", "A")) == (NOERROR, ["10.0.0.9"])
    assert addresses(table.answer(f"other.web.ns.{SVC}", "A")) == (NXDOMAIN, [])


def test_dual_stack_cluster_ips_are_a_and_aaaa() -> None:
    table = build([service("web", clusterIPs=["10.96.0.5", "fd00::5"])], [])
    assert addresses(table.answer(f"web.ns.{SVC}", "A")) == (NOERROR, ["10.96.0.5"])
    assert addresses(table.answer(f"web.ns.{SVC}", "AAAA")) == (NOERROR, ["fd00::5"])


def test_a_headless_service_answers_its_ready_addresses_of_every_subset() -> None:
    more = subset(("10.0.1.1", None))
    table = build([service("db", "None")], [endpoints("db", DB, more)])
    assert addresses(table.answer(f"db.ns.{SVC}", "A")) == (NOERROR, ["10.0.0.1", "10.0.0.2", "10.0.1.1"])
    assert addresses(table.answer(f"db-1.db.ns.{SVC}", "A")) == (NOERROR, ["10.0.0.2"])
    assert addresses(table.answer(f"db-2.db.ns.{SVC}", "A")) == (NXDOMAIN, [])  # not ready


def test_publish_not_ready_addresses_adds_the_unready_ones() -> None:
    table = build([service("db", "None", publishNotReadyAddresses=True)], [endpoints("db", DB)])
    assert addresses(table.answer(f"db.ns.{SVC}", "A")) == (NOERROR, ["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    assert addresses(table.answer(f"db-2.db.ns.{SVC}", "A")) == (NOERROR, ["10.0.0.3"])


def test_a_headless_service_without_addresses_does_not_exist_but_its_namespace_does() -> None:
    table = build([service("db", "None")], [])
    assert table.answer(f"db.ns.{SVC}", "A") == (NXDOMAIN, [])
    assert table.answer(f"ns.{SVC}", "A") == (NOERROR, [])
    assert table.answer(f"other.{SVC}", "A") == (NXDOMAIN, [])


def test_nxdomain_for_what_does_not_exist_nodata_for_a_type_it_has_not() -> None:
    table = build([service("web")], [])
    assert table.answer(f"web.ns.{SVC}", "AAAA") == (NOERROR, [])
    assert table.answer(f"web.ns.{SVC}", "TXT") == (NOERROR, [])
    assert table.answer(f"nope.ns.{SVC}", "A") == (NXDOMAIN, [])
    assert table.answer(f"web.other.{SVC}", "A") == (NXDOMAIN, [])
    for above in ("cluster.local", SVC):
        assert table.answer(above, "A") == (NOERROR, [])
    assert table.answer("example.com", "A") == (NXDOMAIN, [])  # no uplink: nothing is forwarded
    assert table.answer("web.ns.svc.cluster.localx", "A") == (NXDOMAIN, [])


def test_names_are_case_insensitive_with_or_without_the_trailing_dot() -> None:
    table = build([service("db", "None")], [endpoints("db", DB)])
    assert addresses(table.answer("DB-0.Db.NS.SVC.Cluster.Local.", "A")) == (NOERROR, ["10.0.0.1"])
    table = build([service("db", "None")], [endpoints("db", subset(("10.0.0.1", "DB-0")))])
    assert addresses(table.answer(f"db-0.db.ns.{SVC}", "A")) == (NOERROR, ["10.0.0.1"])


def test_the_domain_is_a_parameter() -> None:
    table = build([service("web")], [], domain="Example.Test.")
    assert addresses(table.answer("web.ns.svc.example.test", "A")) == (NOERROR, ["10.96.0.5"])
    assert table.answer(f"web.ns.{SVC}", "A") == (NXDOMAIN, [])


def test_an_external_name_is_a_cname_for_every_type_and_an_ip_is_ignored() -> None:
    table = build(
        [
            service("ext", "", type="ExternalName", externalName="Db.Example.COM."),
            service("ip", "", type="ExternalName", externalName="10.1.1.1"),
        ],
        [],
    )
    for qtype in ("A", "AAAA", "CNAME"):
        assert table.answer(f"ext.ns.{SVC}", qtype) == (NOERROR, [Record("CNAME", "db.example.com")])
    assert table.answer(f"ip.ns.{SVC}", "A") == (NXDOMAIN, [])


def test_srv_of_a_normal_service_names_the_service_and_its_ports() -> None:
    table = build([service("web")], [])
    assert table.answer(f"_http._tcp.web.ns.{SVC}", "SRV") == (
        NOERROR,
        [Record("SRV", f"web.ns.{SVC}", 80, 100)],
    )
    assert table.answer(f"web.ns.{SVC}", "SRV") == (
        NOERROR,
        [Record("SRV", f"web.ns.{SVC}", 80, 50), Record("SRV", f"web.ns.{SVC}", 9000, 50)],
    )
    assert table.answer(f"_http._udp.web.ns.{SVC}", "SRV") == (NXDOMAIN, [])
    assert table.answer(f"_tcp.web.ns.{SVC}", "SRV") == (NOERROR, [])


def test_srv_of_a_headless_service_names_each_endpoint() -> None:
    table = build([service("db", "None")], [endpoints("db", DB)])
    assert table.answer(f"_peer._tcp.db.ns.{SVC}", "SRV") == (
        NOERROR,
        [Record("SRV", f"db-0.db.ns.{SVC}", 7000, 50), Record("SRV", f"db-1.db.ns.{SVC}", 7000, 50)],
    )


def test_the_catalog_follows_watch_events() -> None:
    catalog = Catalog()
    catalog.replace("Service", [service("db", "None"), service("web")])
    catalog.replace("Endpoints", [endpoints("db", DB)])
    assert addresses(catalog.table().answer(f"db.ns.{SVC}", "A"))[1] == ["10.0.0.1", "10.0.0.2"]

    catalog.apply("Endpoints", "MODIFIED", endpoints("db", subset(("10.0.0.2", "db-1"))))
    assert addresses(catalog.table().answer(f"db.ns.{SVC}", "A")) == (NOERROR, ["10.0.0.2"])
    assert catalog.table().answer(f"db-0.db.ns.{SVC}", "A") == (NXDOMAIN, [])

    catalog.apply("Service", "DELETED", service("web"))
    assert catalog.table().answer(f"web.ns.{SVC}", "A") == (NXDOMAIN, [])
    catalog.apply("Service", "ADDED", service("web", "10.96.0.7"))
    assert addresses(catalog.table().answer(f"web.ns.{SVC}", "A")) == (NOERROR, ["10.96.0.7"])
    table = catalog.table()
    catalog.apply("Service", "BOOKMARK", {"metadata": {"resourceVersion": "9"}})
    assert catalog.table() is table  # nothing changed: not built again


def loaded() -> Resolver:
    resolver = Resolver(Catalog())
    external = service("ext", "", type="ExternalName", externalName="db.example.com")
    resolver.relisted("Service", [service("web"), service("db", "None"), external])
    resolver.relisted(
        "Endpoints", [endpoints("db", *[subset((f"10.0.{i}.1", f"db-{i}")) for i in range(40)])]
    )
    return resolver


def ask(resolver: Resolver, name: str, qtype: str = "A", limit: int | None = None) -> DNSRecord:
    out = resolver.reply(DNSRecord.question(name, qtype).pack(), limit)
    assert out is not None
    return DNSRecord.parse(out)


def test_servfail_until_both_kinds_are_listed() -> None:
    resolver = Resolver(Catalog())
    resolver.relisted("Service", [service("web")])
    assert ask(resolver, f"web.ns.{SVC}").header.rcode == RCODE.SERVFAIL
    resolver.relisted("Endpoints", [])
    reply = ask(resolver, f"Web.ns.{SVC}")
    assert reply.header.rcode == RCODE.NOERROR and reply.header.aa == 1 and reply.header.ra == 0
    [answer] = reply.rr
    assert (str(answer.rname), answer.rtype, str(answer.rdata), answer.ttl) == (
        f"Web.ns.{SVC}.",
        QTYPE.A,
        "10.96.0.5",
        5,
    )


def test_packets_answer_nxdomain_nodata_cname_and_srv() -> None:
    resolver = loaded()
    assert ask(resolver, f"nope.ns.{SVC}").header.rcode == RCODE.NXDOMAIN
    nodata = ask(resolver, f"web.ns.{SVC}", "AAAA")
    assert (nodata.header.rcode, nodata.rr) == (RCODE.NOERROR, [])
    assert ask(resolver, f"_peer._tcp.db-3.db.ns.{SVC}", "SRV").header.rcode == RCODE.NXDOMAIN
    [cname] = ask(resolver, f"ext.ns.{SVC}").rr
    assert (cname.rtype, str(cname.rdata)) == (QTYPE.CNAME, "db.example.com.")
    first = ask(resolver, f"_peer._tcp.db.ns.{SVC}", "SRV").rr[0]
    assert (first.rdata.port, str(first.rdata.target)) == (7000, f"db-0.db.ns.{SVC}.")


def test_an_answer_too_large_for_udp_is_truncated_and_whole_over_tcp() -> None:
    resolver = loaded()
    udp = ask(resolver, f"db.ns.{SVC}", limit=512)
    assert udp.header.tc == 1 and udp.rr == [] and str(udp.q.qname) == f"db.ns.{SVC}."
    whole = ask(resolver, f"db.ns.{SVC}")
    assert whole.header.tc == 0 and len(whole.rr) == 40


@pytest.mark.parametrize(
    "packet",
    [
        b"",
        b"\x00",
        b"\xff" * 40,  # the QR bit: an answer, not a question
        b"\x00\x01\x01\x00\x00\x05" + b"\x3f" * 30,
        DNSRecord.question("x").pack()[:-3],
    ],
)
def test_a_packet_that_does_not_parse_or_is_no_question_is_dropped(packet: bytes) -> None:
    assert loaded().reply(packet, 512) is None


def test_listen_addresses() -> None:
    assert parse_listen("10.96.0.10:53") == ("10.96.0.10", 53)
    assert parse_listen("[::1]:5353") == ("::1", 5353)
    for bad in ("53", "host:", "host:dns"):
        with pytest.raises(Exception, match="ADDR:PORT"):
            parse_listen(bad)


class BrokenWatches:
    """A client whose lists return ``lists`` in turn and whose watches yield ``events`` in turn,
    each then failing with ``failure``; the last watch waits forever."""

    def __init__(self, lists: list[list[dict[str, Any]]], events: list[dict[str, Any]], failure: Exception):
        self.lists, self.events, self.failure = lists, events, failure
        self.listed = 0

    async def list(self, ref: KindRef) -> tuple[list[dict[str, Any]], str]:
        self.listed += 1
        return self.lists.pop(0), "1"

    async def watch(self, ref: KindRef, rv: str) -> AsyncIterator[dict[str, Any]]:
        if not self.events:
            await asyncio.Event().wait()
        yield self.events.pop(0)
        raise self.failure


@pytest.mark.parametrize("failure", [OSError("connection reset"), Gone("too old")])
async def test_a_broken_watch_is_listed_again(monkeypatch: pytest.MonkeyPatch, failure: Exception) -> None:
    monkeypatch.setattr(server, "RETRY", Backoff(0.001, 0.001))
    resolver = Resolver(Catalog())
    resolver.relisted("Endpoints", [])
    kube = BrokenWatches(
        [[service("web")], [service("api")]], [{"type": "ADDED", "object": service("db")}], failure
    )
    task = asyncio.create_task(server.follow(cast(Kube, kube), server.SERVICE, resolver))
    try:
        await asyncio.wait_for(resolver.loaded.wait(), 5)

        async def relisted() -> bool:
            return kube.listed == 2

        await eventually(relisted, timeout=5, what="a second list")
        assert set(resolver.catalog.objects["Service"]) == {("ns", "api")}  # the second list, whole
        assert ask(resolver, f"api.ns.{SVC}").header.rcode == RCODE.NOERROR
        assert ask(resolver, f"web.ns.{SVC}").header.rcode == RCODE.NXDOMAIN
    finally:
        task.cancel()
