"""The outbound address policy (``aimcore.domain.outbound``): every spelling of an address is judged as the
address it means, names are normalised, a host with one refused address is refused, the settings
and their defaults, and the connect-time hooks (``connect``, ``resolver``) against real sockets on
loopback and the real resolver (``localhost``)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from aimcore.domain.outbound import (
    ADDRESS_NOT_ALLOWED,
    OutboundPolicy,
    OutboundRefused,
    check_addresses,
    check_host,
    check_url,
    normalize_host,
    parse_address,
    refusal_in,
)
from aimcore.domain.outbound.connect import create_connection, http_connection, resolve
from aimcore.domain.outbound.policy import parse_legacy_ipv4, refusal
from aimcore.domain.outbound.resolver import GuardedResolver, connector

STRICT = OutboundPolicy()
PRIVATE_OK = OutboundPolicy(allow_private=True)


# -- spellings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("169.254.169.254", "169.254.169.254"),
        ("169.254.169.254.", "169.254.169.254"),  # trailing dot
        ("[::1]", "::1"),
        ("::ffff:169.254.169.254", "169.254.169.254"),  # IPv4-mapped
        ("[::ffff:a9fe:a9fe]", "169.254.169.254"),
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),  # NAT64 well-known prefix
        ("::169.254.169.254", "169.254.169.254"),  # IPv4-compatible (deprecated)
        ("fe80::1%eth0", "fe80::1"),  # zone id
        ("fe80::1%25eth0", "fe80::1"),  # zone id as a URL spells it
        ("2130706433", "127.0.0.1"),  # decimal
        ("0x7f000001", "127.0.0.1"),  # hex
        ("017700000001", "127.0.0.1"),  # octal
        ("0177.0.0.1", "127.0.0.1"),  # octal part
        ("0x7f.1", "127.0.0.1"),  # two parts, hex
        ("127.1", "127.0.0.1"),  # two parts
        ("169.254.43518", "169.254.169.254"),  # three parts
        ("0xA9.0xFE.0xA9.0xFE", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("METADATA.google.internal", None),  # a name
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("1.2.3.256", None),
        ("08.1.1.1", None),  # not octal, not decimal
        ("4294967296", None),  # > 32 bits
        ("", None),
    ],
)
def test_parse_address_reads_every_spelling(text: str, expected: str | None) -> None:
    addr = parse_address(text)
    assert (str(addr) if addr is not None else None) == expected


def test_legacy_forms_are_the_ones_the_c_resolver_accepts() -> None:
    """The parser agrees with ``inet_aton`` (what ``getaddrinfo`` uses for numeric hosts)."""
    for text in ("2130706433", "0x7f.1", "0177.0.0.1", "127.1", "10.0.258", "0x0a.0.0.1", "1.2.3.4"):
        assert str(parse_legacy_ipv4(text)) == socket.inet_ntoa(socket.inet_aton(text)), text


@pytest.mark.parametrize(
    ("host", "expected"),
    [("Example.COM.", "example.com"), ("[FE80::1]", "fe80::1"), ("host..", "host"), (" a.b ", "a.b")],
)
def test_normalize_host(host: str, expected: str) -> None:
    assert normalize_host(host) == expected


# -- what is refused -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "strict", "private_ok"),
    [
        ("93.184.216.34", None, None),
        ("2606:4700::1111", None, None),
        ("169.254.169.254", "a cloud metadata address", "a cloud metadata address"),
        ("169.254.170.2", "a cloud metadata address", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address", "a cloud metadata address"),
        ("168.63.129.16", "a cloud metadata address", "a cloud metadata address"),
        ("169.254.1.1", "link-local", "link-local"),
        ("fe80::1", "link-local", "link-local"),
        ("127.0.0.1", "loopback", None),
        ("127.0.0.2", "loopback", None),
        ("::1", "loopback", None),
        ("10.1.2.3", "private", None),
        ("172.16.0.1", "private", None),
        ("172.32.0.1", None, None),
        ("192.168.1.1", "private", None),
        ("fd12::1", "private", None),
        ("100.64.0.1", "carrier-grade NAT", None),
        ("100.128.0.1", None, None),
        ("0.0.0.0", "unspecified", None),
        ("::", "unspecified", None),
    ],
)
def test_refusal_labels(address: str, strict: str | None, private_ok: str | None) -> None:
    addr = parse_address(address)
    assert addr is not None
    assert refusal(addr, allow_private=False) == strict
    assert refusal(addr, allow_private=True) == private_ok


@pytest.mark.parametrize(
    "host",
    [
        "169.254.169.254",
        "169.254.169.254.",
        "2852039166",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "[::ffff:169.254.169.254]",
        "[64:ff9b::a9fe:a9fe]",
        "[fe80::1%25eth0]",
        "metadata.google.internal",
        "METADATA.Google.Internal.",
        "metadata",
    ],
)
def test_metadata_and_link_local_are_refused_even_with_private_allowed(host: str) -> None:
    with pytest.raises(OutboundRefused) as err:
        check_url(f"http://{host}/latest/meta-data/", PRIVATE_OK)
    assert err.value.reason == ADDRESS_NOT_ALLOWED
    assert "not allowed" in err.value.message


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "2130706433", "0x7f.1", "[::1]", "[::ffff:127.0.0.1]", "10.0.0.1"]
)
def test_private_literals_follow_the_switch(host: str) -> None:
    with pytest.raises(OutboundRefused, match=r"AIM_OUTBOUND_ALLOW_PRIVATE=true"):
        check_url(f"http://{host}:5000/v2/", STRICT)
    assert check_url(f"http://{host}:5000/v2/", PRIVATE_OK) is not None


def test_allow_list_matches_names_in_any_spelling() -> None:
    policy = OutboundPolicy(allowed_hosts=frozenset({"Mirror.Example.", "169.254.169.254", "[::1]"}))
    assert policy.allowed_hosts == {"mirror.example", "169.254.169.254", "::1"}
    for url in (
        "http://mirror.example/x",
        "https://MIRROR.example./x",
        "http://169.254.169.254/",
        "http://[::1]/",
    ):
        assert check_url(url, policy) is None  # skips every check
    with pytest.raises(OutboundRefused):  # another spelling of an allow-listed address is not the host
        check_url("http://2852039166/", policy)


def test_names_are_left_to_dns_and_literals_are_returned() -> None:
    assert check_host("registry.example.com", STRICT) is None
    assert str(check_host("93.184.216.34", STRICT)) == "93.184.216.34"


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "http:///x", "file:///etc/passwd", "http://h:bad/", "gopher://h/"]
)
def test_only_http_urls_with_a_host(url: str) -> None:
    with pytest.raises(OutboundRefused):
        check_url(url, PRIVATE_OK)


# -- resolved addresses ------------------------------------------------------------------------------


def test_one_refused_address_refuses_the_host() -> None:
    public = ["93.184.216.34", "2606:4700::1111"]
    assert check_addresses("h.example", public, STRICT) == public
    for bad in ("10.0.0.1", "169.254.169.254", "::ffff:127.0.0.1", "fe80::1%eth0"):
        with pytest.raises(OutboundRefused, match=r"host 'h\.example' resolves to"):
            check_addresses("h.example", [*public, bad], STRICT)


def test_unrecognised_and_duplicate_addresses() -> None:
    with pytest.raises(OutboundRefused, match="unrecognised"):
        check_addresses("h.example", ["93.184.216.34", "not-an-ip"], PRIVATE_OK)
    assert check_addresses("h.example", ["93.184.216.34", "93.184.216.34"], STRICT) == ["93.184.216.34"]


def test_nat64_is_judged_by_its_ipv4_but_connected_as_given() -> None:
    assert check_addresses("h.example", ["64:ff9b::5db8:d822"], STRICT) == ["64:ff9b::5db8:d822"]


def test_messages_name_the_setting_and_never_the_path() -> None:
    with pytest.raises(OutboundRefused) as err:
        check_url("http://10.0.0.1/secret/path?X-Amz-Signature=abc", STRICT)
    assert "AIM_OUTBOUND_ALLOWED_HOSTS" in err.value.message
    assert "secret" not in err.value.message and "Signature" not in err.value.message
    custom = OutboundPolicy(hint=("HOSTS_VAR", "PRIVATE_VAR=true"))
    with pytest.raises(OutboundRefused, match=r"HOSTS_VAR or set PRIVATE_VAR=true"):
        check_url("http://10.0.0.1/", custom)


def test_refusal_in_finds_a_wrapped_refusal() -> None:
    refused = OutboundRefused("no", host="h")

    class Wrapper(Exception):
        def __init__(self, **kwargs: object) -> None:
            super().__init__("wrapped")
            self.kwargs = kwargs

    try:
        try:
            raise refused
        except OutboundRefused as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as outer:
        assert refusal_in(outer) is refused
    assert refusal_in(Wrapper(error=refused)) is refused
    assert refusal_in(ValueError("x")) is None


# -- settings ----------------------------------------------------------------------------------------


def test_settings_default_to_strict_and_round_trip() -> None:
    assert OutboundPolicy.from_env({}) == STRICT
    policy = OutboundPolicy.from_env(
        {"AIM_OUTBOUND_ALLOWED_HOSTS": " Mirror.local , 10.0.0.5,,", "AIM_OUTBOUND_ALLOW_PRIVATE": "Yes"}
    )
    assert policy == OutboundPolicy(frozenset({"mirror.local", "10.0.0.5"}), True)
    assert OutboundPolicy.from_env(policy.env()) == policy
    assert OutboundPolicy.from_env(STRICT.env()) == STRICT
    with pytest.raises(ValueError, match="AIM_OUTBOUND_ALLOW_PRIVATE"):
        OutboundPolicy.from_env({"AIM_OUTBOUND_ALLOW_PRIVATE": "ture"})


# -- connect time: real sockets, the real resolver -----------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[tuple[str, int]]]]:
    """A TCP listener on 127.0.0.1 recording every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[tuple[str, int]] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(peer)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def test_resolve_uses_the_real_resolver_and_judges_what_it_says() -> None:
    with pytest.raises(OutboundRefused, match=r"host 'localhost' resolves to .* \(loopback\)"):
        resolve("localhost", 80, STRICT)
    found = resolve("localhost", 80, PRIVATE_OK)
    assert found and all(parse_address(a) is not None for a in found)
    assert resolve("LOCALHOST.", 80, OutboundPolicy(allowed_hosts=frozenset({"localhost"}))) is None
    assert resolve("0x7f.1", 80, PRIVATE_OK) == ["127.0.0.1"]  # connect to what the spelling means
    assert resolve("[::ffff:7f00:1]", 80, PRIVATE_OK) == ["::ffff:7f00:1"]


def settle(port: int, policy: OutboundPolicy) -> None:
    """Connect once (allowed) and wait until the listener has accepted and closed it: the listener
    accepts in order, so every earlier connection would be in its log by then."""
    sock = create_connection(policy)(("2130706433", port), 5)
    try:
        assert sock.recv(1) == b""
    finally:
        sock.close()


def test_create_connection_refuses_before_connecting(listener: tuple[int, list[tuple[str, int]]]) -> None:
    port, accepted = listener
    for host in ("localhost", "127.0.0.1", "2130706433"):
        with pytest.raises(OutboundRefused):
            create_connection(STRICT)((host, port), 5)
    settle(port, PRIVATE_OK)
    assert len(accepted) == 1  # only the settling connection


def test_http_connection_applies_the_policy_on_every_connect(
    listener: tuple[int, list[tuple[str, int]]],
) -> None:
    port, accepted = listener
    conn = http_connection("http", "localhost", port, policy=STRICT, timeout=5)
    with pytest.raises(OutboundRefused):
        conn.request("GET", "/")
    secure = http_connection("https", "127.0.0.1", port, policy=STRICT, timeout=5)
    with pytest.raises(OutboundRefused):
        secure.request("GET", "/")
    settle(port, PRIVATE_OK)
    assert len(accepted) == 1


class _Answers(AbstractResolver):
    """DNS answers chosen by the test (real DNS cannot be told to return a bad address)."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0)
            for a in self.addresses
        ]

    async def close(self) -> None:
        return None


async def test_resolver_refuses_any_bad_answer_and_passes_good_ones() -> None:
    good = GuardedResolver(STRICT, _Answers("93.184.216.34", "2606:4700::1111"))
    assert [r["host"] for r in await good.resolve("h.example", 443)] == ["93.184.216.34", "2606:4700::1111"]
    for answers in (("93.184.216.34", "169.254.169.254"), ("10.0.0.1",), ("::ffff:169.254.169.254",)):
        with pytest.raises(OutboundRefused):
            await GuardedResolver(STRICT, _Answers(*answers)).resolve("h.example", 443)
    inner = _Answers("169.254.169.254")
    with pytest.raises(OutboundRefused, match="metadata endpoint"):
        await GuardedResolver(PRIVATE_OK, inner).resolve("metadata.google.internal", 80)
    assert inner.asked == []  # refused by name, no DNS query
    allowed = OutboundPolicy(allowed_hosts=frozenset({"mirror.internal"}))
    assert await GuardedResolver(allowed, _Answers("10.0.0.1")).resolve("mirror.internal", 80)


async def test_aiohttp_session_never_connects_where_refused(
    listener: tuple[int, list[tuple[str, int]]],
) -> None:
    port, accepted = listener
    async with aiohttp.ClientSession(connector=connector(STRICT)) as session:
        with pytest.raises(OutboundRefused, match="loopback"):
            await session.get(f"http://localhost:{port}/")
    await asyncio.to_thread(settle, port, PRIVATE_OK)
    assert len(accepted) == 1  # only the settling connection
