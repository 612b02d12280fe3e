"""A real three-node JetStream cluster on loopback, for the tests of a clustered bus: three
``nats-server`` processes (:class:`~aim_dev.local.natsserver.NatsServer`, secured as in production,
one set of credentials shared by all), each with its own store directory, joined by cluster routes
on free ports, as the production overlay's StatefulSet joins its pods. Each node can be killed (-9),
stopped and restarted on the same ports and store, and the cluster answers which node leads the
JetStream meta group and which leads a stream, the faults the tests inject."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from aim_dev.local.natsserver import NatsServer
from aim_dev.local.processes import free_port
from aimcore.api.bus import auth
from aimcore.runtime.bus import BusSettings

CLUSTER_NAME = "aim-bus"


@dataclass
class NatsCluster:
    workdir: Path
    size: int = 3
    tls: auth.Tls | None = None
    """TLS for clients and, with each other's certificates verified, the routes (as the production
    overlay's bus-cluster-tls component)."""
    nodes: list[NatsServer] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.route_ports = [free_port() for _ in range(self.size)]
        for i in range(self.size):
            self.nodes.append(
                NatsServer(
                    self.workdir / f"node-{i}",
                    credentials_dir=self.workdir / "creds",
                    server_name=f"aim-nats-{i}",
                    tls=self.tls,
                    config_extra={"cluster": self.cluster_block(self.route_ports[i], self.tls)},
                )
            )

    def cluster_block(self, port: int, tls: auth.Tls | None) -> dict[str, object]:
        """A node's ``cluster`` block: its route port, every node's route, and with ``tls`` the
        routes' TLS (each node presents its certificate and verifies the other's)."""
        routes = [f"nats://127.0.0.1:{p}" for p in self.route_ports]
        block: dict[str, object] = {"name": CLUSTER_NAME, "listen": f"127.0.0.1:{port}", "routes": routes}
        if tls is not None:
            block["tls"] = auth.route_tls(tls)
        return block

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated (as ``AIM_NATS_URL`` takes them)."""
        return ",".join(node.url for node in self.nodes)

    def client(self, role: str = "admin") -> BusSettings:
        return self.nodes[0].client(role).replace(url=self.url)

    def service_env(self, service: str) -> dict[str, str]:
        """A service's bus settings (every node's URL), streams and buckets at the cluster's size."""
        env = self.nodes[0].service_env(service)
        return {**env, "AIM_NATS_URL": self.url, "AIM_NATS_REPLICAS": str(self.size)}

    def start(self) -> NatsCluster:
        """Start every node (each is healthy once its JetStream is enabled: the meta group forms
        when a majority is up; wait for it with :meth:`meta_leader`)."""
        for node in self.nodes:
            node.start()
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def node(self, name: str) -> NatsServer:
        return next(n for n in self.nodes if n.server_name == name)

    def jsz(self, node: NatsServer, query: str = "") -> dict[str, object]:
        url = f"http://127.0.0.1:{node.monitor_port}/jsz{query}"
        with urllib.request.urlopen(url, timeout=5) as resp:
            answer: dict[str, object] = json.load(resp)
            return answer

    def meta_leader(self) -> str | None:
        """The server name leading the JetStream meta group, as a running node sees it (None while
        there is none)."""
        for node in self.nodes:
            if node.process is None or not node.process.alive():
                continue
            try:
                meta = self.jsz(node).get("meta_cluster")
            except (urllib.error.URLError, OSError):
                continue
            if isinstance(meta, dict) and meta.get("leader"):
                return str(meta["leader"])
        return None
