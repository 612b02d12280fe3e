"""A service whose NATS is away logs the outage in a line or two, never a traceback per reconnect
attempt (nats-py's own error callback logs a 30-line traceback every 0.5 s): started before NATS
exists, and again when NATS goes away after the service connected. The service is the real
aim-status process with JSON logs at DEBUG, so each attempt is a countable debug line. And the
watcher, started while the bus connects but cannot answer JetStream's API yet, waits for it and
declares the topology then instead of dying."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aim_dev.local.natsserver import NatsServer
from aim_dev.testing.plugin import LocalServers
from aimcore.api.bus import topology
from aimcore.runtime import connect_bus
from tests.helpers import eventually
from tests.integration.conftest import Services
from tests.integration.test_logs import json_lines

ATTEMPTS = 6  # reconnect attempts (every 0.5 s) each outage lasts at least


def bus_lines(log: Path) -> list[dict[str, Any]]:
    return [line for line in json_lines(log) if line["logger"] == "aimcore.runtime.bus"]


async def test_nats_outages_are_a_line_each_not_a_traceback_per_attempt(
    aim_servers: LocalServers, tmp_path: Path
) -> None:
    bus = NatsServer(tmp_path / "nats")
    bus.write_config()  # the keys exist; the server does not run yet
    servers = LocalServers(aim_servers.control_plane, bus, tmp_path)
    services = Services(servers, tmp_path / "logs", env={"AIM_LOG_FORMAT": "json", "AIM_LOG_LEVEL": "DEBUG"})
    proc = services.start("status")
    log = proc.log_path

    def attempts() -> int:
        # ours, or nats-py's own line per attempt (which carries a traceback)
        return sum(
            1
            for line in json_lines(log)
            if "NATS connection problem" in line["message"] or "nats: encountered error" in line["message"]
        )

    async def failing(count: int) -> bool:
        services.assert_alive()
        return attempts() >= count

    async def logged(*texts: str) -> bool:
        services.assert_alive()
        return any(text in line["message"] for line in json_lines(log) for text in texts)

    try:
        await eventually(lambda: failing(ATTEMPTS), timeout=60, what="attempts to connect to no NATS")
        bus.start()
        # connected: the service waits for its stream (only the watcher declares it)
        await eventually(lambda: logged("waiting for stream"), timeout=60, what="the first connection")
        before = attempts()
        bus.stop()
        await eventually(lambda: logged("NATS disconnected"), timeout=60, what="the outage")
        await eventually(lambda: failing(before + ATTEMPTS), timeout=60, what="attempts to reconnect")
        bus.start()
        await eventually(lambda: logged("NATS reconnected"), timeout=60, what="the reconnection")
    finally:
        services.stop_all()
        bus.stop()

    text = log.read_text(errors="replace")
    lines = json_lines(log)
    assert "Traceback" not in text
    assert [line for line in lines if "exception" in line] == []
    # above DEBUG, each outage is one warning and one line when it is over
    outage = [
        (line["level"], line["message"].split(":")[1].strip())
        for line in bus_lines(log)
        if line["level"] != "DEBUG"
    ]
    assert [(level, re.split(r" after | \(|;", message)[0]) for level, message in outage] == [
        ("WARNING", "NATS connection problem"),
        ("INFO", "NATS connected"),
        ("WARNING", "NATS disconnected"),
        ("INFO", "NATS reconnected"),
    ], outage
    assert attempts() >= 2 * ATTEMPTS


async def test_a_watcher_started_before_jetstream_answers_declares_the_topology_once_it_does(
    aim_servers: LocalServers, tmp_path: Path
) -> None:
    """JetStream off: every request of its API goes unanswered, as while a bus cluster that has just
    formed elects the leaders of what is declared (the CI failure: a watcher replica died of a
    timeout there). The watcher stays up, says what it waits for, and declares the streams and
    buckets once the bus answers."""
    bus = NatsServer(tmp_path / "nats")
    bus.jetstream = False
    bus.start()
    servers = LocalServers(aim_servers.control_plane, bus, tmp_path)
    services = Services(servers, tmp_path / "logs", env={"AIM_LOG_FORMAT": "json"})
    log = services.start("watcher").log_path

    async def waiting() -> bool:
        services.assert_alive()
        return any(
            line["message"].startswith("declaring the topology: the bus did not answer")
            for line in bus_lines(log)
        )

    nc = None
    try:
        await eventually(waiting, timeout=60, what="the watcher waiting for JetStream")
        bus.jetstream = True
        bus.restart()
        nc = await connect_bus(bus.client(), "test-admin", forever=True)
        js = nc.jetstream()

        async def declared() -> bool:
            services.assert_alive()
            try:
                await js.stream_info(topology.EVENTS_STREAM)
                await js.key_value(topology.ELECTION_BUCKET)
            except Exception:
                return False
            return True

        await eventually(declared, timeout=60, what="the topology declared once JetStream answers")
    finally:
        if nc is not None:
            await nc.close()
        services.stop_all()
        bus.stop()
    assert "Traceback" not in log.read_text(errors="replace")
