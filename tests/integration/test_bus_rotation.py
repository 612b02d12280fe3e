"""A bus role's key rotated while the server runs (docs/deploy.md, "Rotating the bus keys"): the
server accepts the old and the new key side by side after a configuration reload, clients move to the
new seed one by one, and retiring the old key refuses it, all on the same nats-server process.
Against a real nats-server configured as deploy/ configures it (the keys in included files)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from nats.aio.client import Client as NatsClient

from aim_dev.local import binaries
from aim_dev.local.natsserver import NatsServer
from aim_dev.local.processes import ManagedProcess
from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import secrets as bus_secrets
from aimcore.api.bus.auth import RotationError, inbox_prefix, new_identity, public_key
from aimctl import bus as cli_bus
from tests.helpers import eventually, refused_connection

REPO = Path(__file__).resolve().parents[2]
ROLE = "deployer"
ALLOWED = "aim.status.deployer.aim.AIMService.ns.rotation"  # a deployer reports status
FORBIDDEN = "aim.events.rotation"  # only the watcher writes change events


def seed_options(seed: str, errors: list[str]) -> dict[str, Any]:
    """How a client of ``ROLE`` holding ``seed`` in memory connects (the file may change under it)."""

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    return {
        "name": f"test-{ROLE}",
        "nkeys_seed_str": seed,
        "inbox_prefix": inbox_prefix(ROLE),
        "connect_timeout": 5,
        "error_cb": on_error,
    }


async def connect_seed(server: NatsServer, seed: str, errors: list[str]) -> NatsClient:
    """A client of ``ROLE`` holding ``seed`` in memory."""
    return await nats.connect(
        server.url, allow_reconnect=False, max_reconnect_attempts=0, **seed_options(seed, errors)
    )


class Seen(list[bytes]):
    """What reached the admin's subscriptions, and the server that delivered it (whose log a
    failure quotes)."""

    def __init__(self, server: NatsServer) -> None:
        super().__init__()
        self.server = server


@contextlib.asynccontextmanager
async def watching(server: NatsServer) -> AsyncIterator[Seen]:
    """What reaches the server on the two subjects, seen by an admin."""
    seen = Seen(server)
    admin = await connect_as(server)

    async def got(msg: nats.aio.msg.Msg) -> None:
        seen.append(msg.data)

    await admin.subscribe(ALLOWED, cb=got)
    await admin.subscribe(FORBIDDEN, cb=got)
    await admin.flush()
    try:
        yield seen
    finally:
        await admin.close()


async def delivered(nc: NatsClient, seen: Seen, subject: str, data: bytes) -> bool:
    """Publish ``data``; whether it reached the server's subscribers. A marker on the allowed
    subject follows it: messages of one connection arrive in order, so once the marker is there,
    ``data`` is there too or was refused.

    Core NATS delivers at most once, and an integration run under full load once saw neither the
    data nor the marker within 30 s (issue 44): a marker not seen in 20 s is published again, with
    the data, once, and a warning in the run's summary says so; a second miss fails with the
    server's log lines of note (slow consumers, write deadlines, errors)."""
    failure: AssertionError | None = None
    for attempt in (1, 2):
        marker = data + f" (marker {attempt})".encode()
        if attempt > 1:
            # shown in the run's warnings summary (pyproject.toml), not an error: the evidence of a loss
            warnings.warn(f"bus delivery retried: {data!r}'s marker not delivered in 20 s", stacklevel=2)
        await nc.publish(subject, data)
        await nc.publish(ALLOWED, marker)
        await nc.flush(timeout=5)

        async def arrived(expected: bytes = marker) -> bool:
            return expected in seen

        try:
            await eventually(arrived, timeout=20, what=f"{marker!r} delivered")
            return data in seen
        except AssertionError as exc:
            failure = exc
    notes = [
        line
        for line in seen.server.log_text().splitlines()
        if any(word in line for word in ("[WRN]", "[ERR]", "Slow Consumer", "Deadline"))
    ]
    raise AssertionError(
        f"{failure} (the publisher's last error: {nc.last_error!r}; the server's log of note: {notes[-10:]})"
    ) from None


async def test_a_key_is_rotated_and_retired_without_restarting_the_server(
    nats_factory: Callable[[], NatsServer],
) -> None:
    server = nats_factory()
    assert server.process is not None
    pid, server_id = server.process.pid, server.server_id()
    creds = server.credentials
    old_seed = creds.identity(ROLE).seed
    old_errors: list[str] = []
    old = await connect_seed(server, old_seed, old_errors)
    async with watching(server) as seen:
        assert await delivered(old, seen, ALLOWED, b"old before")

        new_seed = creds.rotate(ROLE).seed
        assert creds.accepted(ROLE)[1] == public_key(old_seed)
        server.reload()
        # the connection made with the old key carries on, and the old key may still connect
        assert old.is_connected
        assert await delivered(old, seen, ALLOWED, b"old during")
        late = await connect_seed(server, old_seed, [])
        assert await delivered(late, seen, ALLOWED, b"late old during")
        # the new key connects, with the role's permissions and no more
        new_errors: list[str] = []
        new = await connect_seed(server, new_seed, new_errors)
        assert await delivered(new, seen, ALLOWED, b"new during")
        assert not await delivered(new, seen, FORBIDDEN, b"new forbidden")
        await eventually(lambda: asyncio.sleep(0, new_errors), timeout=10, what="the refusal")
        assert any("permissions violation" in e for e in new_errors), new_errors

        assert creds.retire(ROLE) == public_key(old_seed)
        server.reload()
        # the old key's connections are closed and the old key is refused; the new one works on
        await eventually(
            lambda: asyncio.sleep(0, old.is_closed and late.is_closed), timeout=10, what="old key closed"
        )
        assert "Authorization Violation" in await refused_connection(server.url, **seed_options(old_seed, []))
        assert new.is_connected
        assert await delivered(new, seen, ALLOWED, b"new after")
        await new.close()

    assert server.process.pid == pid and server.process.alive()
    assert server.server_id() == server_id, "the server restarted"


async def test_a_rotation_is_retired_before_the_next_one(nats_factory: Callable[[], NatsServer]) -> None:
    creds = nats_factory().credentials
    with pytest.raises(RotationError, match="nothing to retire"):
        creds.retire(ROLE)
    creds.rotate(ROLE)
    with pytest.raises(RotationError, match="under way"):
        creds.rotate(ROLE)


async def test_a_running_client_reconnects_with_the_seed_it_started_with(
    nats_factory: Callable[[], NatsServer],
) -> None:
    """A service's seed file is replaced by the rotation while it runs (a Secret volume updates in
    place): until it restarts, every reconnect still signs with the seed it started with, which the
    server accepts until it is retired."""
    server = nats_factory()
    client = await connect_as(server, ROLE, forever=True)
    try:
        server.credentials.rotate(ROLE)
        server.reload()
        server.stop()  # the connection drops; the client reconnects once the server is back
        server.start()
        async with watching(server) as seen:
            await eventually(
                lambda: asyncio.sleep(0, client.is_connected), timeout=30, what="the client reconnected"
            )
            assert await delivered(client, seen, ALLOWED, b"after reconnect")
    finally:
        await client.close()


def deployed_layout(root: Path, secrets: list[dict[str, Any]]) -> Path:
    """deploy/base/nats/nats.conf at /etc/nats, each Secret's accepted.conf at /etc/nats-keys, as
    the NATS pod mounts them; answers the configuration file."""
    config = root / "etc" / "nats" / "nats.conf"
    config.parent.mkdir(parents=True)
    config.write_text((REPO / "deploy" / "base" / "nats" / "nats.conf").read_text())
    keys = root / "etc" / "nats-keys"
    keys.mkdir()
    for s in secrets:
        role = s["metadata"]["labels"][bus_secrets.ROLE_LABEL]
        (keys / f"{role}.conf").write_text(base64.b64decode(s["data"][bus_secrets.ACCEPTED]).decode())
    return config


def config_check(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binaries.find("nats-server"), "-c", str(config), "-t"], capture_output=True, text=True, check=False
    )


def test_the_deployed_configuration_takes_every_step_of_a_rotation(tmp_path: Path) -> None:
    """The committed configuration with the Secrets `aimctl bus credentials` prints, then rotated,
    then retired (through the same YAML kubectl would carry): nats-server accepts each, and each
    role's accepted keys are the Secret's current and previous keys."""
    fresh = yaml_docs(
        cli_bus.secrets_yaml({r: new_identity(r) for r in bus_secrets.DEPLOYED_ROLES}, "aim-system")
    )
    rotated = cli_bus.rotate_secrets(cli_bus.read_secrets(dump(fresh)), ["deployer", "download"], [])
    retired = cli_bus.rotate_secrets(cli_bus.read_secrets(dump(rotated)), [], ["deployer", "download"])
    for step, secrets in enumerate((fresh, rotated, retired)):
        result = config_check(deployed_layout(tmp_path / str(step), secrets))
        assert result.returncode == 0, result.stderr
    by_role = {s["metadata"]["labels"][bus_secrets.ROLE_LABEL]: s["data"] for s in rotated}
    deployer = {k: base64.b64decode(v).decode() for k, v in by_role["deployer"].items()}
    assert deployer["previous-nkey"] in deployer["accepted.conf"]
    assert deployer["nkey"] == public_key(deployer["seed"]) and deployer["nkey"] in deployer["accepted.conf"]
    assert "previous-nkey" not in by_role["watcher"]
    assert all("previous-nkey" not in s["data"] for s in retired)
    with pytest.raises(RotationError, match="under way"):
        cli_bus.rotate_secrets(cli_bus.read_secrets(dump(rotated)), ["deployer"], [])
    with pytest.raises(RotationError, match="nothing to retire"):
        cli_bus.rotate_secrets(cli_bus.read_secrets(dump(retired)), [], ["deployer"])


def yaml_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def dump(docs: list[dict[str, Any]]) -> str:
    """As `kubectl get secret -o yaml` prints several: a List."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs})


async def test_the_reloader_sidecar_applies_changed_key_files(
    nats_factory: Callable[[], NatsServer], tmp_path: Path
) -> None:
    """As in the NATS pod: the key files change in place (the kubelet updating the Secret volume),
    the reloader signals nats-server through its pid file, and the new key connects, same process."""
    server = nats_factory()
    assert server.process is not None
    pid, before = server.process.pid, server.reloads()
    reloader = ManagedProcess(
        "reloader",
        [
            sys.executable,
            "-m",
            "aimcore.runtime.natsreload",
            "--dir",
            str(server.keys_dir),
            "--pid-file",
            str(server.pid_file),
            "--interval",
            "0.2",
        ],
        tmp_path,
    ).start()
    log = reloader.log_path
    try:
        await eventually(lambda: asyncio.sleep(0, "watching" in log.read_text()), what="the reloader's start")
        new_seed = server.credentials.rotate(ROLE).seed
        server.credentials.write_accepted(server.keys_dir, [ROLE])
        await eventually(lambda: asyncio.sleep(0, server.reloads() > before), timeout=30, what="a reload")
        async with watching(server) as seen:
            new = await connect_seed(server, new_seed, [])
            assert await delivered(new, seen, ALLOWED, b"new")
            await new.close()
        assert server.process.pid == pid
        assert "nats-server reloads" in log.read_text()
    finally:
        reloader.stop()
