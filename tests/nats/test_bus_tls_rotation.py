"""The bus's TLS material as `aimctl bus credentials --tls` makes it, on a real nats-server with TLS
required: a client trusting the CA bundle connects, one without it or in plain text is refused; and
the CA rotated in two steps (`--rotate tls`, `--retire tls`, the files changed in place and NATS
reloaded as the reloader sidecar does), with no client cut off that trusts the bundle it started
with, and the old CA trusted no more at the end."""

from __future__ import annotations

import base64
import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from nats.aio.client import Client
from nats.errors import Error as NatsError

from aim_dev.local.natsserver import NatsServer
from aimcore.api.bus import auth
from aimcore.runtime import connect_bus
from aimcore.runtime.bus import BusSettings
from aimctl import bus_tls
from aimctl.main import main as aimctl


def run_aimctl(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str, stdin: str = ""
) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert aimctl(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def tls_data(text: str) -> dict[str, dict[str, str]]:
    """The TLS Secrets' data in ``text``, decoded, by Secret name."""
    return {
        d["metadata"]["name"]: {k: base64.b64decode(v).decode() for k, v in d["data"].items()}
        for d in yaml.safe_load_all(text)
        if d and d["metadata"]["name"] in (bus_tls.TLS_SECRET, bus_tls.CA_SECRET)
    }


def mount(text: str, directory: Path) -> None:
    """Write ``aim-bus-tls`` as the NATS pod's Secret volume holds it (files changed in place)."""
    directory.mkdir(parents=True, exist_ok=True)
    for key, value in tls_data(text)[bus_tls.TLS_SECRET].items():
        (directory / key).write_text(value)


def cas_in(bundle: str) -> list[bytes]:
    """The certificates of a PEM bundle, by fingerprint, in order."""
    return [c.fingerprint(hashes.SHA256()) for c in x509.load_pem_x509_certificates(bundle.encode())]


@pytest.fixture
def made(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    return run_aimctl(capsys, monkeypatch, "bus", "credentials", "--tls", "--tls-host", "127.0.0.1")


@pytest.fixture
def server(made: str, tmp_path: Path) -> Iterator[NatsServer]:
    mount(made, tmp_path / "tls")
    tls = auth.Tls(cert_file=str(tmp_path / "tls" / "tls.crt"), key_file=str(tmp_path / "tls" / "tls.key"))
    nats = NatsServer(tmp_path / "nats", tls=tls)
    try:
        yield nats.start()
    finally:
        nats.stop()


def trusting(server: NatsServer, bundle: str, path: Path) -> BusSettings:
    path.write_text(bundle)
    return server.client("watcher").replace(tls_ca_file=str(path))


async def connected(settings: BusSettings) -> Client:
    return await connect_bus(settings, "test-tls", forever=False, connect_timeout=3, allow_reconnect=False)


async def refused(settings: BusSettings) -> str:
    with pytest.raises((NatsError, OSError)) as caught:
        nc = await connected(settings)
        await nc.close()
    return str(caught.value)


async def alive(nc: Client) -> bool:
    with contextlib.suppress(NatsError, TimeoutError):
        await nc.flush(timeout=3)
        return nc.is_connected
    return False


def test_the_certificate_is_for_the_services_names_and_the_ca_signs_it(made: str) -> None:
    data = tls_data(made)
    assert set(data[bus_tls.TLS_SECRET]) == {"tls.crt", "tls.key", "ca.crt"}
    assert set(data[bus_tls.CA_SECRET]) == {"ca.crt", "ca.key"}  # no rotation under way
    cert = x509.load_pem_x509_certificate(data[bus_tls.TLS_SECRET]["tls.crt"].encode())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "aim-nats.aim-system" in names.get_values_for_type(x509.DNSName)
    assert "*.aim-nats-headless.aim-system.svc" in names.get_values_for_type(x509.DNSName)
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    ca = x509.load_pem_x509_certificate(data[bus_tls.CA_SECRET]["ca.crt"].encode())
    cert.verify_directly_issued_by(ca)
    assert data[bus_tls.TLS_SECRET]["ca.crt"] == data[bus_tls.CA_SECRET]["ca.crt"]
    kinds = {d["metadata"]["name"]: d["type"] for d in yaml.safe_load_all(made) if d}
    assert kinds[bus_tls.TLS_SECRET] == "kubernetes.io/tls"


async def test_tls_required_only_the_bundle_is_trusted(server: NatsServer, made: str, tmp_path: Path) -> None:
    settings = trusting(server, tls_data(made)[bus_tls.TLS_SECRET]["ca.crt"], tmp_path / "bundle.crt")
    nc = await connected(settings)
    try:
        assert await alive(nc)
    finally:
        await nc.close()
    await refused(settings.replace(tls_ca_file=None))  # the system's CAs do not know the bus's
    await refused(settings.replace(url=settings.url.replace("tls://", "nats://"), tls_ca_file=None))


async def test_the_ca_rotates_in_two_steps_and_nobody_is_cut_off(
    server: NatsServer,
    made: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first_bundle = tls_data(made)[bus_tls.TLS_SECRET]["ca.crt"]
    old = trusting(server, first_bundle, tmp_path / "old.crt")
    before = await connected(old)  # a service running since before the rotation

    rotated = run_aimctl(capsys, monkeypatch, "bus", "credentials", "--rotate", "tls", stdin=made)
    data = tls_data(rotated)
    assert set(data[bus_tls.CA_SECRET]) == {"ca.crt", "ca.key", "next-ca.crt", "next-ca.key"}
    both = data[bus_tls.TLS_SECRET]["ca.crt"]
    assert cas_in(both) == cas_in(first_bundle) + cas_in(data[bus_tls.CA_SECRET]["next-ca.crt"])
    assert len(set(cas_in(both))) == 2
    assert data[bus_tls.TLS_SECRET]["tls.crt"] != tls_data(made)[bus_tls.TLS_SECRET]["tls.crt"]  # renewed
    mount(rotated, tmp_path / "tls")
    server.reload()
    assert await alive(before)
    restarted = trusting(server, both, tmp_path / "both.crt")  # services restarted with the bundle
    for settings in (old, restarted):
        nc = await connected(settings)
        await nc.close()

    retired = run_aimctl(capsys, monkeypatch, "bus", "credentials", "--retire", "tls", stdin=rotated)
    data = tls_data(retired)
    assert set(data[bus_tls.CA_SECRET]) == {"ca.crt", "ca.key"}
    new_ca = tls_data(rotated)[bus_tls.CA_SECRET]["next-ca.crt"]
    assert cas_in(data[bus_tls.TLS_SECRET]["ca.crt"]) == cas_in(new_ca)
    mount(retired, tmp_path / "tls")
    server.reload()
    nc = await connected(restarted)  # the bundle the services restarted with trusts the new CA
    await nc.close()
    await refused(old)  # the old CA alone is trusted no more
    await before.close()


def test_a_rotation_needs_the_material_and_one_at_a_time(
    made: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    keys_only = "---\n".join(
        yaml.safe_dump(d)
        for d in yaml.safe_load_all(made)
        if d
        and d["metadata"]["name"].startswith("aim-bus-")
        and d["metadata"]["name"] not in (bus_tls.TLS_SECRET, bus_tls.CA_SECRET)
    )
    cases: list[tuple[list[str], str, str]] = [
        (["--rotate", "tls"], keys_only, "no Secrets aim-bus-tls and aim-bus-ca"),
        (["--retire", "tls"], made, "nothing to retire"),
    ]
    rotated = run_aimctl(capsys, monkeypatch, "bus", "credentials", "--rotate", "tls", stdin=made)
    cases.append((["--rotate", "tls"], rotated, "retire the old CA first"))
    for argv, stdin, message in cases:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        assert aimctl(["bus", "credentials", *argv]) == 1
        assert message in capsys.readouterr().err
    assert aimctl(["bus", "credentials", "--tls", "--dir", "/nonexistent"]) == 1
    assert "Secrets only" in capsys.readouterr().err
