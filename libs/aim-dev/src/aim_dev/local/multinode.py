"""Several real nodes on this machine, on one switch (``aimctl up --node --nodes N``; docs/node.md,
"Several nodes").

Each node is a :class:`aim_dev.node.Node` of its own (kubelet, containerd, kube-proxy, the cluster
DNS stand-in, its forwarder, in network and mount namespaces of its own); what makes them a
cluster is here:

- **the switch**: a bridge in a network namespace of its own (:class:`Fabric`), into which each
  node's ``eth0`` is plugged by a veth pair: node ``i`` is ``10.244.76.<i+1>`` and gives its pods
  ``10.244.<80+i>.0/24``, with a route to every other node's pods through that node (what a
  cloud's VPC routes or flannel's ``host-gw`` backend do). Nothing of it touches the host's
  network namespace: the host reaches the nodes only through their forwarders;
- **Services**: kube-proxy (iptables mode, built from the same Kubernetes source) on each node;
  the ``kubernetes`` Service's endpoint is :data:`aim_dev.node.config.API_VIP`, an address every
  node has and forwards to the API server on the host;
- **DNS**: :mod:`aim_dev.clusterdns` on each node at :data:`aim_dev.node.config.DNS_IP` (the
  kubelet's ``clusterDNS``), as NodeLocal DNSCache would answer;
- the control plane runs kube-scheduler and the node lifecycle controller, and resolves the
  nodes' names for the API server (:class:`aim_dev.local.cluster.NodeSupport`).

The switch is recorded like a node (an id ``aim-node-<hex>``, a network namespace, a directory, an
owner) so that :func:`aim_dev.node.teardown` and :func:`aim_dev.node.reap_stale` remove it as they
remove a node.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_dev.node import Node, config, host, teardown
from aim_dev.node.node import REGISTRY

NODE_NAME_PREFIX = "aim-worker-"
FABRIC = "fabric"


def node_names(count: int) -> tuple[str, ...]:
    return tuple(f"{NODE_NAME_PREFIX}{i + 1}" for i in range(count))


@dataclass
class Fabric:
    """The switch: a bridge in a network namespace of its own."""

    workdir: Path
    owner_pid: int | None = None
    fabric_id: str = field(default_factory=lambda: f"aim-node-{secrets.token_hex(4)}")

    def record(self) -> dict[str, Any]:
        owner = self.owner_pid or os.getpid()
        return {
            "id": self.fabric_id,
            "node_name": "(switch)",
            "workdir": str(self.workdir.resolve()),
            "netns": self.fabric_id,
            "cgroup_root": f"/{self.fabric_id}",
            "owner_pid": owner,
            "owner_start_time": host.start_time(owner),
            "pids": {},
        }

    def start(self) -> Fabric:
        self.workdir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.record(), indent=2) + "\n"
        (self.workdir / "fabric.json").write_text(text)
        REGISTRY.mkdir(parents=True, exist_ok=True)
        (REGISTRY / f"{self.fabric_id}.json").write_text(text)
        try:
            host.ip("netns", "add", self.fabric_id)
            host.ip("-n", self.fabric_id, "link", "add", config.FABRIC_BRIDGE, "type", "bridge")
            host.ip("-n", self.fabric_id, "link", "set", config.FABRIC_BRIDGE, "up")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        teardown(self.record(), keep_logs=False)


@dataclass
class NodeCluster:
    """``count`` nodes on one switch for the control plane whose admin kubeconfig is ``kubeconfig``
    (started with :class:`aim_dev.local.cluster.NodeSupport` for :func:`node_names`).

    ``forwards(node_ip)`` and ``publish(index)``: each node's ports to and from the host, as
    :class:`aim_dev.node.Node` takes them."""

    workdir: Path
    kubeconfig: Path
    count: int = 3
    images: Sequence[Path] = ()
    forwards: Callable[[str], Sequence[tuple[str, int, int]]] = lambda _ip: ()
    publish: Callable[[int], Sequence[tuple[int, str, int]]] = lambda _i: ()
    plain_http_registries: Sequence[str] = ()
    die_with_parent: bool = True
    owner_pid: int | None = None
    fabric: Fabric | None = None
    nodes: list[Node] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def start(self, timeout: float = 180.0) -> NodeCluster:
        """The switch, then every node at once; returns when all are Ready (on failure, what
        started is removed)."""
        start = time.monotonic()
        try:
            self.fabric = Fabric(self.workdir / FABRIC, owner_pid=self.owner_pid).start()
            fabric_id = self.fabric.fabric_id
            for index, name in enumerate(node_names(self.count)):
                addressing = config.Addressing.cluster_node(index, self.count, fabric_id)
                self.nodes.append(
                    Node(
                        self.workdir / name,
                        self.kubeconfig,
                        images=(),  # imported below, into all of them at once
                        forwards=self.forwards(addressing.node_ip),
                        publish=self.publish(index),
                        plain_http_registries=self.plain_http_registries,
                        node_name=name,
                        die_with_parent=self.die_with_parent,
                        owner_pid=self.owner_pid,
                        addressing=addressing,
                        scheduler=False,
                    )
                )
            # One after the other: a daemon dies with the thread that started it (its parent-death
            # signal), so they start here; the images (short-lived ``ctr`` runs) go in at once.
            for node in self.nodes:
                node.start(timeout)
                self.timings[node.node_name] = node.timings.get("total", 0.0)
            imported = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(self.count) as pool:
                list(pool.map(lambda n: n.import_images(self.images), self.nodes))
            self.timings["images"] = round(time.monotonic() - imported, 1)
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = round(time.monotonic() - start, 1)
        return self

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.node_name == name)

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()
        if self.fabric is not None:
            self.fabric.stop()

    def records(self) -> list[str]:
        """Where the nodes and the switch record themselves (for ``aimctl down``, also after a
        crash: each is written before anything of it is created)."""
        names = node_names(self.count)
        return [
            *(str(self.workdir / n / "node.json") for n in names),
            str(self.workdir / FABRIC / "fabric.json"),
        ]
