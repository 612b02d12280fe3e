"""The cluster DNS stand-in's process: CoreDNS's ``kubernetes`` plugin as far as the multi-node
test tier needs it, since CoreDNS has no package here. A development stand-in, never in the product.

It lists and then watches Services and Endpoints of every namespace with the project's client
(:class:`aimcore.runtime.Kube`), keeps :class:`aim_dev.clusterdns.records.Catalog` current, and
answers DNS over UDP and TCP (RFC 1035's two-byte length prefix) on each ``--listen`` address, with
``dnslib`` for the wire format. What it answers is :mod:`aim_dev.clusterdns.records`'s; like
CoreDNS it answers SERVFAIL until the first list of both kinds is in, and then serves the last
known records while a broken watch is listed again (with backoff). Answers are authoritative and
never recursive (nothing is forwarded: a name outside the cluster domain is NXDOMAIN). A UDP answer
larger than the client's buffer (512 bytes, or its EDNS size) is sent truncated (TC) so the client
asks again over TCP. A packet that does not parse is logged and dropped.

Not emulated beyond the records: CoreDNS's other plugins (cache, forward, health, metrics,
loadbalance's shuffling), DNSSEC, zone transfers, EDNS options in answers.

Run it (``--ready``: touched once the sockets are bound and the first lists are in)::

    python -m aim_dev.clusterdns --kubeconfig K --listen 10.96.0.10:53 [--listen ...]
        [--domain cluster.local] [--ready FILE]

Inside a node's network namespace, start it under ``nsenter --net=...``: it binds what it is told.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from pathlib import Path
from typing import cast

import aiohttp
from dnslib import AAAA, CNAME, QTYPE, RR, SRV, A, DNSRecord

from aim_dev.clusterdns.records import DEFAULT_DOMAIN, SERVFAIL, TTL, Catalog, Record
from aimcore.api.backoff import Backoff
from aimcore.api.kinds import KindRef
from aimcore.runtime import ApiException, Kube, describe_error
from aimcore.runtime.kube import Gone, connect

log = logging.getLogger("aim_dev.clusterdns")

SERVICE = KindRef("", "v1", "Service", "services", True)
ENDPOINTS = KindRef("", "v1", "Endpoints", "endpoints", True)
RETRY = Backoff(0.5, 10.0)
"""The wait before listing again after a list or a watch failed."""
UDP_SIZE = 512
TCP_IDLE = 30.0
FORMERR = 1
RDATA = {"A": A, "AAAA": AAAA, "CNAME": CNAME}


def _rr(name: object, record: Record) -> RR:
    if record.rtype == "SRV":
        rdata = SRV(priority=0, weight=record.weight, port=record.port, target=record.data)
    else:
        rdata = RDATA[record.rtype](record.data)
    return RR(name, getattr(QTYPE, record.rtype), rdata=rdata, ttl=TTL)


class Resolver:
    """Answers packets from the catalog; SERVFAIL until both kinds were listed once."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.listed: set[str] = set()
        self.loaded = asyncio.Event()

    def relisted(self, kind: str, objects: list[dict[str, object]]) -> None:
        self.catalog.replace(kind, objects)
        self.listed.add(kind)
        if self.listed == set(Catalog.KINDS):
            self.loaded.set()

    def reply(self, packet: bytes, limit: int | None = None) -> bytes | None:
        """The answer to ``packet``, at most ``limit`` bytes (UDP) else truncated; None to drop."""
        try:
            request = DNSRecord.parse(packet)
        except Exception as exc:  # dnslib raises more than DNSError on garbage
            log.warning("dropped a packet that does not parse (%d bytes): %r", len(packet), exc)
            return None
        if request.header.qr:
            return None  # an answer, not a question
        reply = request.reply(ra=0)
        if not request.questions:
            reply.header.rcode = FORMERR
        elif not self.loaded.is_set():
            reply.header.rcode = SERVFAIL
        else:
            question = request.q
            rcode, records = self.catalog.table().answer(str(question.qname), QTYPE[question.qtype])
            reply.header.rcode = rcode
            for record in records:
                reply.add_answer(_rr(question.qname, record))
        out: bytes = reply.pack()
        if limit is not None:
            opt = [rr for rr in request.ar if rr.rtype == QTYPE.OPT]
            if len(out) > max(limit, int(opt[0].rclass) if opt else 0):
                reply.rr = []
                reply.header.tc = 1
                out = reply.pack()
        return out


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, ...]) -> None:
        out = self.resolver.reply(data, UDP_SIZE)
        if out is not None and self.transport is not None:
            self.transport.sendto(out, addr)


async def _tcp(resolver: Resolver, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            async with asyncio.timeout(TCP_IDLE):
                size = int.from_bytes(await reader.readexactly(2), "big")
                out = resolver.reply(await reader.readexactly(size))
            if out is None:
                break
            writer.write(len(out).to_bytes(2, "big") + out)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
        pass  # the client closed, or went quiet
    finally:
        writer.close()


def parse_listen(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``[v6]:PORT`` for IPv6) as a host and a port."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not ADDR:PORT")
    return host.strip("[]"), int(port)


async def follow(kube: Kube, ref: KindRef, resolver: Resolver) -> None:
    """List ``ref`` in every namespace, then watch it; list again after a failure, with backoff."""
    failures = 0
    while True:
        try:
            items, rv = await kube.list(ref)
            resolver.relisted(ref.kind, items)
            failures = 0
            while True:  # the server ends a watch now and then: watch again from where it ended
                async with contextlib.aclosing(kube.watch(ref, rv)) as events:
                    async for event in events:
                        obj = event.get("object") or {}
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        resolver.catalog.apply(ref.kind, str(event.get("type")), obj)
        except Gone:
            log.info("%s: resourceVersion expired; listing again", ref.kind)
        except (ApiException, aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            failures += 1
            delay = RETRY.delay(failures)
            log.warning("%s: %s; listing again in %.1fs", ref.kind, describe_error(exc), delay)
            await asyncio.sleep(delay)


async def serve(
    kubeconfig: str, listen: list[tuple[str, int]], domain: str = DEFAULT_DOMAIN, ready: Path | None = None
) -> None:
    """Answer on every ``listen`` address until cancelled."""
    loop = asyncio.get_running_loop()
    resolver = Resolver(Catalog(domain))
    kube = Kube(await connect(kubeconfig), field_manager="aim-clusterdns")
    closing: list[asyncio.DatagramTransport | asyncio.Server] = []
    try:
        for host, port in listen:
            udp, _ = await loop.create_datagram_endpoint(lambda: _Udp(resolver), local_addr=(host, port))
            closing.append(udp)
            closing.append(await asyncio.start_server(lambda r, w: _tcp(resolver, r, w), host, port))
        async with asyncio.TaskGroup() as tasks:
            for ref in (SERVICE, ENDPOINTS):
                tasks.create_task(follow(kube, ref, resolver))
            await resolver.loaded.wait()
            if ready is not None:
                await asyncio.to_thread(ready.touch)
            log.info("answering for %s on %s", domain, ", ".join(f"{h}:{p}" for h, p in listen))
    finally:
        for each in closing:
            each.close()
        await kube.close()


def main(argv: list[str] | None = None) -> int:
    doc = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m aim_dev.clusterdns", description=doc)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--listen", required=True, action="append", type=parse_listen, help="ADDR:PORT")
    parser.add_argument("--domain", default=DEFAULT_DOMAIN)
    parser.add_argument("--ready", type=Path, help="touched once bound and the first lists are in")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.kubeconfig, args.listen, args.domain, args.ready))
    return 0
