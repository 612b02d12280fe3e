"""Runs the operator's services as real processes against the session's servers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import aiohttp
import pytest
from nats.js import JetStreamContext

from aim_dev.local.cluster import ControlPlane
from aim_dev.local.natsserver import NatsServer
from aim_dev.local.processes import ManagedProcess, free_port
from aim_dev.local.stack import service_module
from aim_dev.testing.plugin import LocalServers, assert_no_violations, connect_as, install_all_crds
from aimcore.api.bus import topology
from tests.file_server import FileServer
from tests.helpers import LOOPBACK_HOSTS, eventually

PROPAGATED_ANNOTATIONS = "example.com/*,cost-center"
"""The session deployer's ``AIM_PROPAGATE_ANNOTATIONS``."""


class Services:
    """Service processes (any number of replicas each) against one set of servers."""

    def __init__(self, servers: LocalServers, log_dir: Path, env: dict[str, str] | None = None) -> None:
        self.servers = servers
        self.log_dir = log_dir
        self.env = env or {}
        self.procs: dict[str, ManagedProcess] = {}
        self.replicas: dict[str, tuple[str, int]] = {}
        self.killed: set[str] = set()
        self.service_env: dict[str, dict[str, str]] = {}
        self.health_ports: dict[str, int] = {}  # label -> port of /healthz, /readyz, /metrics

    def start(self, name: str, replica: int = 0, env: dict[str, str] | None = None) -> ManagedProcess:
        if env is not None:
            self.service_env[name] = env
        label = name if replica == 0 else f"{name}-{replica}"
        # each replica its own health and metrics port (kept across restarts), on loopback
        port = self.health_ports.setdefault(label, free_port())
        env = {
            **self.servers.nats.service_env(name),  # the service's own bus role and key
            "AIM_HEALTH_PORT": str(port),
            "AIM_HEALTH_ADDRESS": "127.0.0.1",
            "AIM_KUBECONFIG": self.servers.kubeconfig,
            "AIM_RESYNC_SECONDS": "600",
            "PYTHONUNBUFFERED": "1",
            "AIM_LOG_LEVEL": os.environ.get("AIM_LOG_LEVEL", "INFO"),
            # The registries, hubs and S3 servers of the tests are on loopback: allow-listed by name
            # (the outbound policy's default is strict; 127.0.0.2 and the like stay refused).
            "AIM_OUTBOUND_ALLOWED_HOSTS": LOOPBACK_HOSTS,
            **self.env,
            **self.service_env.get(name, {}),
        }
        argv = [sys.executable, "-m", service_module(name)]
        proc = ManagedProcess(label, argv, self.log_dir, env).start()
        self.procs[label] = proc
        self.replicas[label] = (name, replica)
        self.killed.discard(label)
        return proc

    def kill(self, label: str) -> None:
        """SIGKILL, as an OOM kill or a node loss would."""
        self.procs[label].kill()
        self.killed.add(label)

    def restart(self, label: str) -> ManagedProcess:
        return self.start(*self.replicas[label])

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.stop()

    def assert_alive(self) -> None:
        for label, proc in self.procs.items():
            assert label in self.killed or proc.alive(), f"{label} died:\n{proc.log_tail()}"


async def health_get(services: Services, label: str, path: str) -> tuple[int, str]:
    """(status, body) of ``path`` (``/healthz``, ``/readyz``, ``/metrics``) on a replica's health
    port; (0, the error) when nothing answers."""
    url = f"http://127.0.0.1:{services.health_ports[label]}{path}"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
            session.get(url) as resp,
        ):
            return resp.status, await resp.text()
    except (aiohttp.ClientError, TimeoutError) as exc:
        return 0, repr(exc)


async def consumers_ready(js: JetStreamContext, services: Services, service: str = "deployer") -> None:
    """Wait until ``service``'s and the status service's durable consumers exist (the watcher
    has declared the streams and the services have bound), failing early if a service died."""

    async def ready() -> bool:
        services.assert_alive()
        try:
            await js.consumer_info(topology.EVENTS_STREAM, f"aim-{service}")
            await js.consumer_info(topology.STATUS_STREAM, "aim-status")
        except Exception:
            return False
        return True

    await eventually(ready, timeout=60, what="the services' consumers")


async def drained(servers: LocalServers, service: str = "deployer") -> None:
    """Wait until ``service``'s consumer and the status service's have nothing left to do: every
    change so far is reconciled and every report it made is handled."""
    nc = await connect_as(servers.nats)
    try:
        js = nc.jetstream()

        async def idle() -> bool:
            for stream, durable in (
                (topology.EVENTS_STREAM, f"aim-{service}"),
                (topology.STATUS_STREAM, "aim-status"),
            ):
                info = await js.consumer_info(stream, durable)
                if info.num_pending or info.num_ack_pending:
                    return False
            return True

        await eventually(idle, timeout=60, what="the consumers to drain")
    finally:
        await nc.close()


@contextlib.asynccontextmanager
async def restarted_with(
    services: Services, js: JetStreamContext, name: str, env: dict[str, str]
) -> AsyncIterator[Services]:
    """``name`` restarted with ``env`` over the settings it runs with (the session's included) for
    the block, then restarted as it was."""
    before = dict(services.service_env.get(name, {}))
    services.procs[name].stop()
    services.start(name, env={**before, **env})
    await consumers_ready(js, services)
    try:
        yield services
    finally:
        services.procs[name].stop()
        services.start(name, env=before)
        await consumers_ready(js, services)


async def ensure_service(
    services: Services, js: JetStreamContext, name: str, env: dict[str, str] | None = None
) -> Services:
    """Start ``name`` once for the session (if not running yet; ``env`` for this service only) and
    wait until its durable consumer exists, failing early if a service died."""
    if name not in services.procs:
        services.start(name, env=env)

    async def ready() -> bool:
        services.assert_alive()
        try:
            await js.consumer_info(topology.EVENTS_STREAM, f"aim-{name}")
        except Exception:
            return False
        return True

    await eventually(ready, timeout=60, what=f"the {name} consumer")
    return services


@pytest.fixture(scope="session")
def services(aim_servers: LocalServers) -> Iterator[Services]:
    svc = Services(aim_servers, aim_servers.workdir / "service-logs")
    for name in ("watcher", "status", "deployer"):
        svc.start(name, env=SESSION_ENV.get(name))
    try:
        yield svc
    finally:
        svc.stop_all()


SESSION_ENV = {"deployer": {"AIM_PROPAGATE_ANNOTATIONS": PROPAGATED_ANNOTATIONS}}
"""The session's services' settings beyond the defaults."""


@pytest.fixture
async def running(services: Services, js: JetStreamContext) -> AsyncIterator[Services]:
    """The services, once the watcher has declared the topology and the consumers exist."""
    await consumers_ready(js, services)
    yield services
    for name, proc in services.procs.items():
        assert proc.alive(), f"{name} died during the test:\n{proc.log_tail()}"


@pytest.fixture
def private_stack(tmp_path: Path) -> Iterator[LocalServers]:
    """A control plane and NATS of the test's own, for tests that kill servers or must not share
    the session's services (which reconcile every namespace)."""
    cluster = ControlPlane(tmp_path / "cluster")
    bus = NatsServer(tmp_path / "nats")
    try:
        bus.start()
        cluster.start()
        asyncio.run(install_all_crds(str(cluster.kubeconfig_path)))
        yield LocalServers(cluster, bus, tmp_path)
        assert_no_violations(bus)
    finally:
        cluster.stop()
        bus.stop()


@pytest.fixture
def other_host(tmp_path: Path) -> Iterator[FileServer]:
    """A server on another loopback host (127.0.0.2), which the services' outbound policy refuses
    (only 127.0.0.1 and localhost are allow-listed): its request log shows whether anything the
    services were told to contact reached it."""
    root = tmp_path / "other-host"
    root.mkdir()
    server = FileServer(root, host="127.0.0.2")
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def own_services(servers: LocalServers, names: Sequence[str], env: dict[str, str]) -> Iterator[Services]:
    """``names`` started on a stack of the test's own (``private_stack``) with ``env`` for each
    (e.g. ``AIM_BEHAVIOUR``), stopped afterwards."""
    services = Services(servers, servers.workdir / "logs", env=env)
    for name in names:
        services.start(name)
    try:
        yield services
    finally:
        services.stop_all()


async def bound(servers: LocalServers, services: Services, service: str = "deployer") -> None:
    """Wait until ``service``'s and the status service's consumers exist on ``servers``' NATS."""
    nc = await connect_as(servers.nats)
    try:
        await consumers_ready(nc.jetstream(), services, service)
    finally:
        await nc.close()


@pytest.fixture
async def cluster(private_stack: LocalServers) -> AsyncIterator[Cluster]:  # noqa: F821
    """The watcher, status and cache (Job mode) services on the test's own control plane, and a
    fake kubelet with one node (``tests.integration.jobmode``)."""
    from tests.integration.jobmode import start  # noqa: PLC0415 - jobmode imports this module

    async with start(private_stack) as found:
        yield found
