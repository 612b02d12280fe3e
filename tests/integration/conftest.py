"""Runs the operator's services as real processes against the session's servers."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.js import JetStreamContext

from aimcore.bus import topology
from aimcore.local.processes import ManagedProcess
from aimcore.local.stack import service_module
from aimcore.testing.plugin import LocalServers


class Services:
    def __init__(self, servers: LocalServers, log_dir: Path) -> None:
        self.servers = servers
        self.log_dir = log_dir
        self.procs: dict[str, ManagedProcess] = {}

    def start(self, name: str) -> ManagedProcess:
        env = {
            "AIM_NATS_URL": self.servers.nats.url,
            "AIM_KUBECONFIG": self.servers.kubeconfig,
            "AIM_RESYNC_SECONDS": "600",
            "PYTHONUNBUFFERED": "1",
            "AIM_LOG_LEVEL": os.environ.get("AIM_LOG_LEVEL", "INFO"),
        }
        proc = ManagedProcess(name, [sys.executable, "-m", service_module(name)], self.log_dir, env).start()
        self.procs[name] = proc
        return proc

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.stop()


@pytest.fixture(scope="session")
def services(aim_servers: LocalServers) -> Iterator[Services]:
    svc = Services(aim_servers, aim_servers.workdir / "service-logs")
    for name in ("watcher", "status", "deployer"):
        svc.start(name)
    try:
        yield svc
    finally:
        svc.stop_all()


@pytest.fixture
async def running(services: Services, js: JetStreamContext) -> AsyncIterator[Services]:
    """The services, once the watcher has declared the topology and the consumers exist."""
    async with asyncio.timeout(60):
        while True:
            for name, proc in services.procs.items():
                assert proc.alive(), f"{name} died:\n{proc.log_tail()}"
            try:
                await js.consumer_info(topology.EVENTS_STREAM, "aim-deployer")
                await js.consumer_info(topology.STATUS_STREAM, "aim-status")
                break
            except Exception:
                await asyncio.sleep(0.1)
    yield services
    for name, proc in services.procs.items():
        assert proc.alive(), f"{name} died during the test:\n{proc.log_tail()}"
