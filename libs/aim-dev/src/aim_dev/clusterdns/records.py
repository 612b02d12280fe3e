"""The records of the cluster DNS stand-in (:mod:`aim_dev.clusterdns`): what CoreDNS's
``kubernetes`` plugin answers, built from the cluster's Services and Endpoints (core/v1 objects as
the API returns them). Pure: no I/O; :mod:`aim_dev.clusterdns.server` feeds it and speaks DNS.

Emulated, in the cluster domain (``cluster.local`` unless told):

- ``<svc>.<ns>.svc.<domain>``: A (AAAA for IPv6) of a Service's cluster IPs; of a headless
  Service (``clusterIP: None``) the addresses of its Endpoints, every subset; CNAME to
  ``spec.externalName`` of an ExternalName Service (for every query type, as a CNAME does);
- ``<hostname>.<svc>.<ns>.svc.<domain>``: the address of the endpoint whose ``hostname`` is that
  (a StatefulSet's pod whose ``subdomain`` is the Service); an endpoint without one goes by its
  address with dashes (``10-1-2-3``), as CoreDNS names it; for any Service, headless or not;
- SRV at ``_<port>._<proto>.<svc>.<ns>.svc.<domain>`` (named ports) and at the Service's name (all
  its ports): the Service's name and port for a Service with a cluster IP, each endpoint's name and
  port for a headless one; priority 0, weight 100 shared out, as CoreDNS does;
- a name that does not exist is NXDOMAIN, an existing name without records of the asked type
  NODATA (NOERROR, no answers); names above the records (the domain, ``svc.<domain>``, a namespace
  with a Service, ``_tcp.<svc>...``) exist without records; a headless Service with no address
  does not exist (NXDOMAIN), as in CoreDNS; names are case-insensitive; TTL :data:`TTL`.

Endpoint addresses are ``addresses``, and ``notReadyAddresses`` too when the Service has
``publishNotReadyAddresses``. CoreDNS reads ``addresses`` only: the Endpoints controller already
puts such a Service's unready pods there, so this differs only for Endpoints made by hand. CoreDNS
also makes its records per port, so an endpoint subset or a Service without ports has no address
there; here it has (no Service this project makes lacks ports).

Not emulated: names outside the cluster domain are NXDOMAIN (CoreDNS forwards them upstream; the
test nodes have no uplink at all); no pod records (``<a-b-c-d>.<ns>.pod.<domain>``), no PTR, no SOA
or NS (not at the apex, not in the authority section of a negative answer), no additional section
(A records of SRV targets), no ``endpoint_pod_names``, no EndpointSlices (Kubernetes 1.20 keeps
Endpoints), no wildcard queries, no namespace filtering.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_DOMAIN = "cluster.local"
TTL = 5
NOERROR, SERVFAIL, NXDOMAIN = 0, 2, 3
"""The response codes a query gets (RFC 1035)."""

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Record:
    """One answer: ``rtype`` A, AAAA, CNAME or SRV; ``data`` the address, or the target name."""

    rtype: str
    data: str
    port: int = 0  # SRV only
    weight: int = 0  # SRV only


def normalise(name: str) -> str:
    return name.rstrip(".").lower()


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _address(ip: str) -> Record:
    return Record("AAAA" if ":" in ip else "A", ip)


def _label(address: Obj) -> str:
    """The endpoint's name under its Service: its hostname, else its address with dashes."""
    ip = str(address.get("ip") or "")
    return str(address.get("hostname") or ip.replace(".", "-").replace(":", "-")).lower()


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _endpoints(service: Obj, endpoints: Obj | None) -> Iterator[tuple[str, str, list[Obj]]]:
    """(name label, address, the subset's ports) of every published endpoint of ``service``."""
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    for subset in (endpoints or {}).get("subsets") or []:
        addresses = list(subset.get("addresses") or [])
        if publish:
            addresses += subset.get("notReadyAddresses") or []
        for address in addresses:
            if address.get("ip"):
                yield _label(address), str(address["ip"]), list(subset.get("ports") or [])


@dataclass
class Table:
    """Every name of the zone and its records; :meth:`answer` answers a query."""

    domain: str = DEFAULT_DOMAIN
    records: dict[str, list[Record]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)  # every name that exists, with records or not

    def add(self, name: str, record: Record) -> None:
        found = self.records.setdefault(name, [])
        if record not in found:
            found.append(record)

    def _srv(self, base: str, port: Obj, target: str) -> None:
        record = Record("SRV", target, int(port.get("port") or 0))
        self.add(base, record)
        if port.get("name"):
            proto = str(port.get("protocol") or "TCP").lower()
            self.add(f"_{str(port['name']).lower()}._{proto}.{base}", record)

    def service(self, service: Obj, endpoints: Obj | None) -> None:
        namespace, name = _key(service)
        spec = service.get("spec") or {}
        base = normalise(f"{name}.{namespace}.svc.{self.domain}")
        self.names.add(normalise(f"{namespace}.svc.{self.domain}"))
        if spec.get("type") == "ExternalName":
            target = normalise(str(spec.get("externalName") or ""))
            if target and not _is_ip(target):
                self.add(base, Record("CNAME", target))
            return
        headless = spec.get("clusterIP") == "None"
        if not headless:
            for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]:
                if ip:
                    self.add(base, _address(str(ip)))
            for port in spec.get("ports") or []:
                self._srv(base, port, base)
        for label, ip, ports in _endpoints(service, endpoints):
            self.add(f"{label}.{base}", _address(ip))
            if headless:
                self.add(base, _address(ip))
                for port in ports:
                    self._srv(base, port, f"{label}.{base}")

    def seal(self) -> Table:
        """Share each SRV name's weight out (100 over the records) and record every name above."""
        for records in self.records.values():
            srv = sum(r.rtype == "SRV" for r in records)
            if srv:
                weight = 100 // srv
                records[:] = [Record(r.rtype, r.data, r.port, weight) for r in records]
        self.names.update({self.domain, f"svc.{self.domain}"})
        for name in self.records:
            above = name
            while above != self.domain and above.endswith(f".{self.domain}"):
                self.names.add(above)
                above = above.split(".", 1)[1]
        return self

    def answer(self, name: str, qtype: str) -> tuple[int, list[Record]]:
        """The response code and the answers to a query of type ``qtype`` (``"A"``, ``"SRV"``,
        ``"ANY"``, ...) for ``name``."""
        name = normalise(name)
        if name not in self.names:
            return NXDOMAIN, []
        records = self.records.get(name, [])
        return NOERROR, [r for r in records if qtype in (r.rtype, "ANY") or r.rtype == "CNAME"]


def build(services: Iterable[Obj], endpoints: Iterable[Obj], domain: str = DEFAULT_DOMAIN) -> Table:
    """The table of ``services``, with their Endpoints (by namespace and name)."""
    by_key = {_key(e): e for e in endpoints}
    table = Table(normalise(domain))
    for service in services:
        table.service(service, by_key.get(_key(service)))
    return table.seal()


class Catalog:
    """The Services and Endpoints as last listed and watched; :meth:`table` is built from them
    (again only after a change)."""

    KINDS = ("Service", "Endpoints")

    def __init__(self, domain: str = DEFAULT_DOMAIN) -> None:
        self.domain = domain
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {kind: {} for kind in self.KINDS}
        self._table: Table | None = None

    def replace(self, kind: str, objects: Iterable[Obj]) -> None:
        """A list's objects of ``kind`` (``Service`` or ``Endpoints``) instead of all known."""
        self.objects[kind] = {_key(o): o for o in objects}
        self._table = None

    def apply(self, kind: str, event: str, obj: Obj) -> None:
        """A watch event (``ADDED``, ``MODIFIED``, ``DELETED``; others change nothing)."""
        if event == "DELETED":
            self.objects[kind].pop(_key(obj), None)
        elif event in ("ADDED", "MODIFIED"):
            self.objects[kind][_key(obj)] = obj
        else:
            return
        self._table = None

    def table(self) -> Table:
        if self._table is None:
            services, endpoints = (self.objects[kind].values() for kind in self.KINDS)
            self._table = build(services, endpoints, self.domain)
        return self._table
