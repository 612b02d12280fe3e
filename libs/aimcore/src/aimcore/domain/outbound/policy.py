"""Which hosts and addresses the operator's own pods may connect to: the one outbound address
policy of every path that opens a connection to a host named by a spec or by a server's answer
(image registries and their token realms, model-source registries, ``HF_ENDPOINT``,
``AWS_ENDPOINT_URL``, LLMKube Model sources, and every redirect any of them sends).

Without it a spec (or a registry redirect) could point the operator at the cloud metadata service
(``169.254.169.254``: node credentials) or into the cluster network. The rules:

- **always refused** unless the host is explicitly allow-listed: link-local addresses
  (``169.254.0.0/16``, ``fe80::/10``), cloud metadata addresses (``169.254.169.254``,
  ``fd00:ec2::254``, ``100.100.100.200``, Azure's ``168.63.129.16``) and metadata host names
  (``metadata.google.internal``, ``metadata``...);
- **refused unless** ``allow_private`` (or the host is allow-listed): loopback, private (RFC 1918,
  ``fc00::/7``), carrier-grade NAT (``100.64.0.0/10``), unspecified (``0.0.0.0/8``, ``::``) and a few
  reserved ranges;
- everything else (public addresses) is allowed.

Addresses are normalised before they are judged, so no spelling slips through: IPv4-mapped
(``::ffff:a.b.c.d``), IPv4-compatible and NAT64 (``64:ff9b::/96``) IPv6 addresses are judged as the
IPv4 address they carry, IPv6 zone ids (``fe80::1%eth0``) are dropped, host names lose trailing
dots and case, and the legacy numeric IPv4 forms the C resolver accepts (``2130706433``,
``0177.0.0.1``, ``0x7f.1``, ``127.1``) are parsed as the address they mean. A host that resolves to
several addresses is refused if any one of them is refused (the client may use any of them).

This module is pure: :func:`check_addresses` judges addresses someone else resolved. The
connection hooks that resolve, judge and then connect to exactly the judged address live in
:mod:`aimcore.domain.outbound.connect` (blocking clients) and
:mod:`aimcore.domain.outbound.resolver` (aiohttp).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final
from urllib.parse import unquote, urlsplit

from aimcore.api.errors import AimError
from aimcore.domain.outbound.proxy import Proxies
from aimcore.runtime.settings.loaded import Settings
from aimcore.runtime.settings.outbound import ALLOW_PRIVATE_ENV, ALLOWED_HOSTS_ENV, OutboundSettings
from aimcore.runtime.settings.process import ProxySettings

ADDRESS_NOT_ALLOWED: Final = "AddressNotAllowed"
"""The condition reason of a refused connection (the user must change the spec or the operator
its outbound settings: retrying does not help)."""

PROXY_ENV: Final = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")
POLICY_ENV: Final = (ALLOWED_HOSTS_ENV, ALLOW_PRIVATE_ENV, *PROXY_ENV)
"""The variables of the operator's outbound configuration: the download Jobs get the operator's
values, and a model cache's ``env`` cannot set them."""

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_Net = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_HOSTS: Final = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
METADATA_ADDRESSES: Final = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle...
        "169.254.170.2",  # ECS task credentials
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wireserver (a public address that reaches the host)
    )
)
ALWAYS_REFUSED: Final[tuple[tuple[_Net, str], ...]] = (
    (ipaddress.IPv4Network("169.254.0.0/16"), "link-local"),
    (ipaddress.IPv6Network("fe80::/10"), "link-local"),
)
PRIVATE: Final[tuple[tuple[_Net, str], ...]] = (
    (ipaddress.IPv4Network("127.0.0.0/8"), "loopback"),
    (ipaddress.IPv6Network("::1/128"), "loopback"),
    (ipaddress.IPv4Network("10.0.0.0/8"), "private"),
    (ipaddress.IPv4Network("172.16.0.0/12"), "private"),
    (ipaddress.IPv4Network("192.168.0.0/16"), "private"),
    (ipaddress.IPv6Network("fc00::/7"), "private"),
    (ipaddress.IPv6Network("fec0::/10"), "private"),  # deprecated site-local
    (ipaddress.IPv4Network("100.64.0.0/10"), "carrier-grade NAT"),
    (ipaddress.IPv4Network("0.0.0.0/8"), "unspecified"),
    (ipaddress.IPv6Network("::/128"), "unspecified"),
    (ipaddress.IPv4Network("192.0.0.0/24"), "reserved"),
    (ipaddress.IPv4Network("198.18.0.0/15"), "reserved"),
    (ipaddress.IPv4Network("240.0.0.0/4"), "reserved"),
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")


class OutboundRefused(AimError):
    """A connection the outbound policy refuses. Deliberately not an ``OSError``: transport error
    handlers must not mistake it for a network hiccup and retry it. The message names the host, the
    address and why, never a URL's path or query (which may carry signatures)."""

    reason = ADDRESS_NOT_ALLOWED
    transient = False

    def __init__(self, message: str, *, host: str, address: str | None = None) -> None:
        super().__init__(message)
        self.host = host
        self.address = address


class UnresolvedHost(AimError, OSError):
    """The host does not resolve (now): a transient failure, like any other DNS error (an
    ``OSError``, so transport error handlers treat it as one; callers report their own
    "unreachable" reason for it)."""

    reason = "SourceUnreachable"
    transient = True


@dataclass(frozen=True)
class OutboundPolicy:
    """Hosts that skip the address checks (exact names or IP literals, any case, trailing dot
    ignored), and whether loopback/private/CGNAT addresses are allowed. ``hint`` names the settings
    that change the policy (the allow-list, and what to set to allow private addresses), for
    refusal messages."""

    allowed_hosts: frozenset[str] = frozenset()
    allow_private: bool = False
    proxies: Proxies = field(default=Proxies(), compare=False)
    """The forward proxies the blocking clients go through (the policy still judges the target)."""
    hint: tuple[str, str] = field(default=(ALLOWED_HOSTS_ENV, f"{ALLOW_PRIVATE_ENV}=true"), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_hosts", frozenset(normalize_host(h) for h in self.allowed_hosts))

    @classmethod
    def configured(cls, settings: Settings) -> OutboundPolicy:
        """The operator-wide policy of a process, from the settings it read at start-up
        (:class:`~aimcore.runtime.settings.outbound.OutboundSettings`: ``AIM_OUTBOUND_ALLOWED_HOSTS``
        and ``AIM_OUTBOUND_ALLOW_PRIVATE``, and the proxies). Both unset: the strict default."""
        return cls.of(settings.get(OutboundSettings), settings.get(ProxySettings))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OutboundPolicy:
        """The policy an environment gives (a download Job's, which :meth:`env` wrote; default: the
        process environment)."""
        return cls.of(OutboundSettings.from_env(env), ProxySettings.from_env(env))

    @classmethod
    def of(cls, settings: OutboundSettings, proxy: ProxySettings | None = None) -> OutboundPolicy:
        policy = cls(allowed_hosts=frozenset(settings.allowed_hosts), allow_private=settings.allow_private)
        return policy if proxy is None else replace(policy, proxies=proxies_of(proxy))

    def allows_host(self, host: str) -> bool:
        """Whether ``host`` is allow-listed (it then skips every address check)."""
        return normalize_host(host) in self.allowed_hosts

    def env(self) -> dict[str, str]:
        """The policy as the environment variables :meth:`from_env` reads (for the download Jobs
        the cache service creates: the downloader in the Job enforces the same policy)."""
        return {
            ALLOWED_HOSTS_ENV: ",".join(sorted(self.allowed_hosts)),
            ALLOW_PRIVATE_ENV: "true" if self.allow_private else "false",
            **self.proxies.env(),
        }


STRICT: Final = OutboundPolicy()
"""The policy with neither setting given: public addresses only, no proxy. What a client uses when
it is handed no policy (a process hands its clients the one it read at start-up,
:meth:`OutboundPolicy.configured`; nothing falls back to reading the environment)."""


def proxies_of(settings: ProxySettings) -> Proxies:
    return Proxies(https=settings.https, http=settings.http, no_proxy=settings.no_proxy)


# -- names and addresses ----------------------------------------------------------------------


def normalize_host(host: str) -> str:
    """``host`` lower-cased, without brackets, percent-encoding of a zone id or trailing dots."""
    text = unquote(host.strip()).lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return text.rstrip(".")


_LEGACY_PART = re.compile(r"^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$")


def parse_legacy_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """An IPv4 address in the forms ``inet_aton`` accepts (1 to 4 parts, each decimal, octal with a
    leading 0 or hex with 0x; the last part fills the remaining bytes), or None."""
    parts = text.lower().split(".")
    if not 1 <= len(parts) <= 4 or not all(_LEGACY_PART.match(p) for p in parts):
        return None
    values = []
    for part in parts:
        if part.startswith("0x"):
            values.append(int(part[2:] or "0", 16))
        elif part.startswith("0") and len(part) > 1:
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 0xFF for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = last
    for i, v in enumerate(head):
        number |= v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def parse_address(text: str) -> Address | None:
    """The address ``text`` spells (any spelling; see the module docstring), unwrapped to IPv4 when
    it is an IPv6 address carrying one; None when ``text`` is a host name."""
    host = normalize_host(text)
    addr: Address | None
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone id
    except ValueError:
        addr = parse_legacy_ipv4(host)
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return addr.ipv4_mapped
        if addr in _NAT64 or (addr in _V4_COMPATIBLE and int(addr) > 1):
            return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return addr


def refusal(addr: Address, allow_private: bool) -> str | None:
    """Why ``addr`` is refused (``"link-local"``, ``"loopback"``...), or None if it is allowed."""
    if addr in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for net, label in ALWAYS_REFUSED:
        if addr.version == net.version and addr in net:
            return label
    if not allow_private:
        for net, label in PRIVATE:
            if addr.version == net.version and addr in net:
                return label
    return None


def _refused(host: str, addr: Address, label: str, policy: OutboundPolicy) -> OutboundRefused:
    hosts, private = policy.hint
    if label in ("link-local", "a cloud metadata address"):
        fix = f"allow-list the host in {hosts} if it really must be reached"
    else:
        fix = f"allow-list the host in {hosts} or set {private}"
    literal = parse_address(host) == addr
    what = f"address {addr} ({label}) is" if literal else f"host {host!r} resolves to {addr} ({label});"
    return OutboundRefused(f"{what} not allowed ({fix})", host=host, address=str(addr))


def check_host(host: str, policy: OutboundPolicy) -> Address | None:
    """The checks that need no DNS: an allow-listed host passes (None), a metadata host name is
    refused, an address literal is judged (and returned). A host name returns None: its resolved
    addresses must go through :func:`check_addresses`."""
    name = normalize_host(host)
    if not name:
        raise OutboundRefused("no host to connect to", host=host)
    if policy.allows_host(name):
        return None
    if name in METADATA_HOSTS:
        raise OutboundRefused(f"host {name!r} is a cloud metadata endpoint; not allowed", host=name)
    addr = parse_address(name)
    if addr is not None:
        label = refusal(addr, policy.allow_private)
        if label is not None:
            raise _refused(name, addr, label, policy)
    return addr


def check_addresses(host: str, addresses: Iterable[str], policy: OutboundPolicy) -> list[str]:
    """Judge every address ``host`` resolved to (one refused address refuses the host: a client may
    use any of them); returns them as given, in order, without duplicates (connect to these: an
    IPv4 address a NAT64 address carries is judged, but the NAT64 address is what reaches it). An
    unparseable address is refused."""
    name = normalize_host(host)
    out: list[str] = []
    for text in addresses:
        addr = parse_address(text)
        if addr is None:
            raise OutboundRefused(f"host {name!r} resolved to an unrecognised address", host=name)
        label = refusal(addr, policy.allow_private)
        if label is not None:
            raise _refused(name, addr, label, policy)
        if text not in out:
            out.append(text)
    return out


def url_host(url: str) -> str:
    """The host of an http(s) URL (normalised); :class:`OutboundRefused` for anything else."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # ValueError on a malformed port
    except ValueError:
        raise OutboundRefused("not a valid URL", host="") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise OutboundRefused("not an http(s) URL with a host", host=parts.hostname or "")
    return normalize_host(parts.hostname)


def check_url(url: str, policy: OutboundPolicy) -> Address | None:
    """:func:`check_host` for the host of ``url`` (no DNS)."""
    return check_host(url_host(url), policy)


def refusal_in(error: BaseException | None) -> OutboundRefused | None:
    """The :class:`OutboundRefused` ``error`` is or wraps (through ``__cause__``/``__context__``
    or a library's ``error`` attribute), if any: some clients (botocore) wrap whatever their
    connection raised."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OutboundRefused):
            return current
        pending.extend([current.__cause__, current.__context__])
        for attribute in ("error", "reason"):
            inner = getattr(current, attribute, None)
            if isinstance(inner, BaseException):
                pending.append(inner)
        kwargs = getattr(current, "kwargs", None)
        if isinstance(kwargs, dict) and isinstance(kwargs.get("error"), BaseException):
            pending.append(kwargs["error"])
    return None
