"""A service with a bad setting stops at start-up, before it connects to anything, with one line
naming the variable, the problem and the accepted form, and exit code 2 (no traceback). The service
is the real aim-status process; its NATS URL points at a port nobody listens on, so a service that
connected first would hang there (its bus connection retries forever) instead of exiting."""

from __future__ import annotations

import subprocess
from pathlib import Path

from aim_dev.local.processes import free_port
from aim_dev.testing.plugin import LocalServers
from aimcore.runtime.service import EXIT_BAD_SETTINGS
from tests.integration.conftest import Services


def test_a_bad_setting_stops_the_service_with_one_line(aim_servers: LocalServers, tmp_path: Path) -> None:
    services = Services(aim_servers, tmp_path / "logs")
    proc = services.start(
        "status",
        env={"AIM_STATUS_COALESCE_SECONDS": "abc", "AIM_NATS_URL": f"nats://127.0.0.1:{free_port()}"},
    )
    assert proc.proc is not None
    try:
        code = proc.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        services.stop_all()
        raise AssertionError(f"aim-status did not stop on a bad setting:\n{proc.log_tail()}") from None
    lines = proc.log_path.read_text().splitlines()
    assert code == EXIT_BAD_SETTINGS, lines
    assert lines == [
        "aim-status: invalid setting AIM_STATUS_COALESCE_SECONDS='abc': Input should be a valid number, "
        "unable to parse string as a number; expected seconds, a number (0 or less: no coalescing)"
    ]
