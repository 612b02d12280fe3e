"""The embedded stack on a real node (``aimctl up --node``, the node test tier; docs/node.md).

Where :class:`aim_dev.local.stack.Stack` runs the six services as local processes beside a control
plane with no kubelet, this runs them as users do: a control plane on the host's loopback, a real
node attached to it (:class:`aim_dev.node.Node`: kubelet, kube-scheduler, containerd in namespaces
of their own), the operator applied from ``deploy/overlays/local-node`` (NATS and the six
Deployments as Pods, their RBAC, the restricted security context;
:class:`aim_dev.local.deployed.Deployment`), and what a cluster would provide around it:

- a registry (Debian's ``docker-registry`` on the host's loopback), which the node sees at
  ``127.0.0.1:5000`` (containerd pulls from it over plain HTTP; the operator's registry client
  speaks plain HTTP to loopback registries only, so the node's loopback it is): model images are
  pushed here (:meth:`NodeStack.push_model`); pods on the pod network (download Jobs pulling
  ``oci://`` models) reach it on the node's address (:attr:`NodeStack.pod_registry`, plain HTTP);
- a Hugging-Face-Hub-compatible server on the host, which pods reach on the node's address
  (:attr:`NodeStack.hub_endpoint`), for model caches and LLMKube Models, serving the tiny generated
  models (:mod:`aim_dev.tinyllm`) and the test model's source (:data:`aim_dev.testmodel.WEIGHTS`)
  as ordinary model repositories; the tiny models' AIM model images
  (:mod:`aim_dev.llamacpp`, the runtime with a model's identity) go to the registry with
  :meth:`NodeStack.push_tiny_model`;
- the CRDs of KServe, Gateway API and KEDA (the permissive stand-ins the test API server uses) and
  the KServe stand-in (:mod:`aim_dev.kserve`), which turns InferenceServices into Deployments;
- a volume provisioner (:mod:`aim_dev.local.provisioner`, directories under ``volumes/``) and its
  StorageClass, the cluster's default under the released behaviour (where every service caches, so
  claims come from the operator alone); under the seeds' the node tier and the demo make static
  volumes for the claims they expect (:meth:`NodeStack.add_volumes`), and the class is there for
  a claim that names it;
- NATS forwarded to the host's loopback (``state.json``'s ``nats_url``), so ``aimctl events`` and
  the tests reach the bus with the reader's key.

With ``node_count`` above one (``aimctl up --node --nodes 3``) the nodes are a cluster
(:mod:`aim_dev.local.multinode`: a switch, kube-proxy, the cluster DNS stand-in, the node
lifecycle controller) and the operator is applied from ``deploy/overlays/local-cluster``, the
production overlay: NATS as three pods over TLS, two replicas of each service, the PDBs. NATS's
Service is published to the host's loopback through every node (``state.json``'s ``nats_url`` lists
them all, ``tls://``: a client keeps the bus when a node is lost), and so is its monitoring port
(``nats_monitors``); its claims get volumes from the provisioner, the default class.

Everything started is recorded in ``state.json`` (the node's own record in ``node/node.json``) for
``aimctl down``; detached, a supervisor process restarts the KServe stand-in and owns the node (the
node is reaped as stale when the supervisor is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import secrets
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_dev import crdinstall, images, llamacpp, testmodel, tinyllm
from aim_dev.local import consuming, deployed, provisioner
from aim_dev.local.cluster import ControlPlane, NodeSupport
from aim_dev.local.hub import HubServer, add_repo
from aim_dev.local.multinode import NodeCluster, node_names
from aim_dev.local.processes import ManagedProcess, free_ports
from aim_dev.local.registry import Registry
from aim_dev.local.stack import SUPERVISOR, aim_home
from aim_dev.node import Node, check_requirements
from aim_dev.node import config as node_config
from aim_dev.standins import monitoring_crds, stand_in_crds
from aimcore.api.behaviour import Behaviour
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect

REGISTRY_PORT = 5000
REGISTRY = f"127.0.0.1:{REGISTRY_PORT}"
"""The local registry as the node (containerd, the operator's host-network pods) sees it."""
KSERVE = "kserve-standin"
PROVISIONER = "volume-provisioner"
NODE_IMAGES = ("pause", *(f"service-{s}" for s in consuming.SERVICES), "nats", "llamacpp")
"""Imported into the node's containerd at its start (the services' first: they share the base
layer, which is then unpacked once; the llama.cpp runtime is the cache service's image and one
layer more). Model images come from the registry."""
CLUSTER_REGISTRY = f"{node_config.REGISTRY_VIP}:{REGISTRY_PORT}"
"""The local registry as every node of several, and every pod on them, reaches it (the operator's
pods too: ``deploy/overlays/local-cluster`` has them speak plain HTTP to it)."""
CLUSTER_IMAGES = NODE_IMAGES[:-1]
"""Several nodes serve no model (no llama.cpp runtime to import three times)."""


@dataclass
class NodeStack:
    home: Path = field(default_factory=aim_home)
    detach: bool = False
    cluster: ControlPlane | None = None
    registry: Registry | None = None
    hub: HubServer | None = None
    node: Node | None = None
    kserve: ManagedProcess | None = None
    provisioner: ManagedProcess | None = None
    supervisor: ManagedProcess | None = None
    operator: deployed.Deployment | None = None
    build: tuple[str, ...] | list[str] = NODE_IMAGES
    """Images rebuilt at start if their inputs changed since the bootstrap built them (a service's
    code edited, say): the node runs the checkout's code, not a stale image."""
    timings: dict[str, float] = field(default_factory=dict)
    behaviour: Behaviour = Behaviour.SEEDS
    """Which generation of the original the operator behaves as (``AIM_BEHAVIOUR`` on its services:
    the overlay ``local-node`` or ``local-node-released``)."""
    node_count: int = 1
    nodes: NodeCluster | None = None
    """The nodes, when there are several (``node`` is the one node otherwise)."""
    nats_monitors: list[str] = field(default_factory=list)
    """NATS's monitoring port as the host reaches it (clustered: through each node)."""

    @property
    def clustered(self) -> bool:
        return self.node_count > 1

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.home / "state.json"

    @property
    def hub_endpoint(self) -> str:
        """The Hub server's URL as pods (download Jobs) and the operator see it."""
        assert self.hub is not None
        return f"http://{node_config.NODE_IP}:{self.hub.port}"

    @property
    def pod_registry(self) -> str:
        """The local registry as pods on the pod network see it (a pod's loopback is its own): the
        node's address, plain HTTP (``OCI_PLAIN_HTTP`` for a downloader), for ``oci://`` models."""
        return CLUSTER_REGISTRY if self.clustered else f"{node_config.NODE_IP}:{REGISTRY_PORT}"

    def model_image(self, repository: str, tag: str) -> str:
        """The reference pods and the operator use for an image pushed as ``repository:tag``."""
        return f"{CLUSTER_REGISTRY if self.clustered else REGISTRY}/{repository}:{tag}"

    def push_tiny_model(self, model: llamacpp.Model) -> str:
        """Make ``model``'s AIM image (a generated tiny model's, or Gemma 3 270M's) from the llama.cpp
        runtime (configuration only) and push it to the local registry; returns its reference as the
        node sees it."""
        assert self.registry is not None
        builder = images.Builder()
        env, labels = llamacpp.model_config(model)
        ref = builder.derive("llamacpp", llamacpp.model_ref(model), env=env, labels=labels)
        repository, tag = llamacpp.model_ref(model, "aim").rsplit(":", 1)
        builder.push_ref(ref, f"{self.registry.host}/{repository}:{tag}")
        return self.model_image(repository, tag)

    @property
    def volume_class(self) -> str:
        """The class of static volumes: the default one's where claims that name none get it
        (the released behaviour's, and several nodes' whose NATS claims name none)."""
        return provisioner.STORAGE_CLASS if self.behaviour.released or self.clustered else ""

    async def add_volumes(self, kube: Kube, count: int, size: str = "2Gi", **kwargs: Any) -> list[Path]:
        """Static hostPath PersistentVolumes, each a fresh directory under ``volumes/`` writable by
        any uid, bound by whichever claim fits first (before the provisioner makes one)."""
        paths = []
        for _ in range(count):
            name = f"pv-{secrets.token_hex(4)}"
            path = self.home / "volumes" / name
            path.mkdir(parents=True)
            path.chmod(0o777)
            volume = deployed.host_path_volume(name, path, size, storage_class=self.volume_class, **kwargs)
            await kube.create(deployed.PERSISTENT_VOLUME, volume)
            paths.append(path)
        return paths

    def push_model(self, image: str, repository: str, tag: str) -> str:
        """Push a built image (:data:`aim_dev.images.IMAGES` name) to the local registry; returns
        its reference as the node sees it."""
        assert self.registry is not None
        images.Builder().push(image, f"{self.registry.host}/{repository}:{tag}")
        return self.model_image(repository, tag)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> NodeStack:
        """Everything, in order; on failure what started is stopped and the error says what failed.
        Call it from a thread that lives as long as the stack (the node's daemons die with it)."""
        check_requirements()
        with self._step("images"):
            built = images.build(list(self.build)) if self.build else []
            self.timings["images rebuilt"] = float(sum(1 for b in built if not b.cached))
        # a clear error if the bootstrap did not build them
        tarballs = images.tarballs(CLUSTER_IMAGES if self.clustered else NODE_IMAGES)
        try:
            self._start(tarballs)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, tarballs: list[Path]) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        keep = not self.detach
        support = NodeSupport(node_names(self.node_count), node_config.API_VIP) if self.clustered else None
        with self._step("control plane"):
            self.cluster = ControlPlane(self.home / "cluster", die_with_parent=keep, nodes=support).start()
            shutil.copyfile(self.cluster.kubeconfig_path, self.kubeconfig)
        with self._step("registry and hub"):
            self.registry = Registry(self.home / "registry", die_with_parent=keep).start()
            self.hub = HubServer(self.home / "hub", die_with_parent=keep).start()
            tinyllm.publish(self.hub.root)
            add_repo(self.hub.root, testmodel.CANONICAL_NAME, testmodel.WEIGHTS, lfs_threshold=1024)
        asyncio.run(self._install_stand_in_crds())
        nats_ports = free_ports(self.node_count)
        if self.clustered:
            monitor_ports = free_ports(self.node_count)
            self.nats_monitors = [f"127.0.0.1:{p}" for p in monitor_ports]
            nats_url = ",".join(f"tls://127.0.0.1:{p}" for p in nats_ports)
        else:
            nats_url = f"nats://127.0.0.1:{nats_ports[0]}"
        self._write_state(nats_url=nats_url)
        if self.detach:
            self.supervisor = ManagedProcess(
                SUPERVISOR,
                [sys.executable, "-m", "aim_dev.local.supervisor", str(self.home)],
                self.home / "logs",
                {"AIM_HOME": str(self.home)},
                die_with_parent=False,
            ).start()
            self._record({"pids": {SUPERVISOR: self.supervisor.pid}})
        else:
            self.kserve = self.kserve_process().start()
            self.provisioner = self.provisioner_process().start()
        owner = self.supervisor.pid if self.supervisor else None
        if self.clustered:
            assert self.registry is not None and self.hub is not None
            registry, hub = self.registry.port, self.hub.port
            with self._step("nodes"):
                self.nodes = NodeCluster(
                    self.home / "nodes",
                    self.cluster_kubeconfig,
                    self.node_count,
                    images=tarballs,
                    forwards=lambda ip: [
                        ("127.0.0.1", REGISTRY_PORT, registry),
                        (node_config.REGISTRY_VIP, REGISTRY_PORT, registry),
                        (ip, hub, hub),
                    ],
                    publish=lambda i: [
                        (nats_ports[i], deployed.NATS_SERVICE_IP, deployed.NATS_PORT),
                        (monitor_ports[i], deployed.NATS_SERVICE_IP, deployed.NATS_MONITOR_PORT),
                    ],
                    plain_http_registries=[REGISTRY, CLUSTER_REGISTRY],
                    die_with_parent=keep,
                    owner_pid=owner,
                )
                self._record({"node_states": self.nodes.records()})
                self.nodes.start()
                self.timings.update({f"nodes {k}": v for k, v in self.nodes.timings.items()})
        else:
            with self._step("node"):
                self.node = Node(
                    self.home / "node",
                    self.cluster_kubeconfig,
                    images=tarballs,
                    forwards=[
                        ("127.0.0.1", REGISTRY_PORT, self.registry.port),
                        (node_config.NODE_IP, REGISTRY_PORT, self.registry.port),
                        (node_config.NODE_IP, self.hub.port, self.hub.port),
                    ],
                    publish=[(nats_ports[0], "127.0.0.1", deployed.NATS_PORT)],
                    plain_http_registries=[REGISTRY],
                    die_with_parent=keep,
                    owner_pid=owner,
                )
                self._record({"node_state": str(self.node.state_file)})
                self.node.start()
                self.timings.update({f"node {k}": v for k, v in self.node.timings.items()})
        self.operator = deployed.Deployment(
            self.home,
            self.kubeconfig,
            nats_url=nats_url,
            clustered=self.clustered,
            behaviour=self.behaviour,
            storage_class=self.volume_class,
            registry=self.registry.host,
            pull_from=REGISTRY,
        )
        with self._step("operator"):
            asyncio.run(self._deploy())

    @property
    def cluster_kubeconfig(self) -> Path:
        assert self.cluster is not None
        return self.cluster.kubeconfig_path

    async def _install_stand_in_crds(self) -> None:
        kube = Kube(await connect(str(self.kubeconfig)), field_manager="aimctl")
        try:
            await crdinstall.install(kube, [*stand_in_crds(), *(monitoring_crds() if self.clustered else [])])
            await kube.apply(
                provisioner.STORAGE_CLASS_KIND,
                provisioner.storage_class(default=self.behaviour.released or self.clustered),
            )
        finally:
            await kube.close()

    async def _deploy(self) -> None:
        assert self.operator is not None
        kube = Kube(await connect(str(self.kubeconfig)), field_manager="aimctl")
        try:
            await self.operator.deploy(kube)
            ready = await self.operator.wait_ready(kube, monitors=self.nats_monitors)
            self.timings.update({f"operator {k}": v for k, v in ready.items()})
        finally:
            await kube.close()

    def kserve_process(self) -> ManagedProcess:
        """The KServe stand-in, a child of whoever supervises it (``aimctl up`` in the foreground,
        else the supervisor), dying with it."""
        return ManagedProcess(
            KSERVE,
            [sys.executable, "-m", "aim_dev.kserve", "--kubeconfig", str(self.kubeconfig)],
            self.home / "logs",
        )

    def provisioner_process(self) -> ManagedProcess:
        """The volume provisioner, supervised as the KServe stand-in is."""
        return ManagedProcess(
            PROVISIONER,
            [
                sys.executable,
                "-m",
                "aim_dev.local.provisioner",
                "--kubeconfig",
                str(self.kubeconfig),
                "--root",
                str(self.home / "volumes" / "provisioned"),
            ],
            self.home / "logs",
        )

    def stand_ins(self) -> list[ManagedProcess]:
        return [p for p in (self.kserve, self.provisioner) if p is not None]

    def supervise(self, stop: list[bool]) -> None:
        """Restart the KServe stand-in or the provisioner if it exits (the services are
        Deployments: the cluster restarts them) until ``stop[0]`` becomes true."""
        backoff = {KSERVE: 1.0, PROVISIONER: 1.0}
        while not stop[0]:
            for name, attr, make in (
                (KSERVE, "kserve", self.kserve_process),
                (PROVISIONER, "provisioner", self.provisioner_process),
            ):
                current: ManagedProcess | None = getattr(self, attr)
                if current is not None and current.alive():
                    continue
                if current is not None:
                    due = time.monotonic() + backoff[name]
                    while not stop[0] and time.monotonic() < due:
                        time.sleep(0.1)
                    backoff[name] = min(backoff[name] * 2, 30.0)
                if stop[0]:
                    return
                started = make().start()
                setattr(self, attr, started)
                self._record({"pids": {name: started.pid}})
            time.sleep(0.5)

    @classmethod
    def attach(cls, home: Path) -> NodeStack:
        """The stack ``aimctl up --node --detach`` started in ``home`` (for its supervisor)."""
        return cls(home=home, detach=True)

    def stop(self) -> None:
        for proc in (*self.stand_ins(), self.supervisor):
            if proc is not None:
                proc.stop()
        if self.node is not None:
            self.node.stop()
        if self.nodes is not None:
            self.nodes.stop()
        for server in (self.registry, self.hub):
            if server is not None:
                server.stop()
        if self.cluster is not None:
            self.cluster.stop()
        self.state_file.unlink(missing_ok=True)

    # -- helpers -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _step(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        yield
        self.timings[name] = round(time.monotonic() - start, 1)

    def _write_state(self, nats_url: str) -> None:
        assert self.cluster is not None and self.registry is not None and self.hub is not None
        procs = [*self.cluster.processes, self.registry.process, self.hub.process]
        state = {
            "mode": "node",
            "nats_url": nats_url,
            "server": self.cluster.server,
            "kubeconfig": str(self.kubeconfig),
            "system_namespace": deployed.SYSTEM_NAMESPACE,
            "registry": REGISTRY,
            "hub": self.hub_endpoint,
            "pids": {p.name: p.pid for p in procs if p is not None},
        }
        with self._state_lock():
            self.state_file.write_text(json.dumps(state, indent=2))

    def _record(self, update: dict[str, Any]) -> None:
        """Merge into ``state.json`` (``pids`` merged by name, the supervisor's first)."""
        with self._state_lock():
            state = json.loads(self.state_file.read_text())
            pids = update.pop("pids", {})
            merged = {**{k: v for k, v in pids.items() if k == SUPERVISOR}, **state.get("pids", {})}
            merged.update(pids)
            state.update(update)
            state["pids"] = merged
            self.state_file.write_text(json.dumps(state, indent=2))

    @contextlib.contextmanager
    def _state_lock(self) -> Iterator[None]:
        with (self.home / "state.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
