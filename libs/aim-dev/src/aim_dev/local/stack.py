"""The embedded default (docs/design.md#the-embedded-default): a local control plane, NATS, the CRDs
and every service as local processes, with a kubeconfig in ``$AIM_HOME`` (default ``~/.aim``).

Both modes supervise the services (a crashed one is restarted with backoff, as a Deployment
would): in the foreground ``aimctl up`` itself does; detached, a supervisor process
(:mod:`aim_dev.local.supervisor`) does, and outlives the command. The PIDs are recorded in
``state.json`` for ``aimctl down``, the supervisor's first (it is stopped first, so that nothing is
restarted while the stack goes down).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_dev import crdinstall as crd_install
from aim_dev.crdgen import all_kinds, crd_for
from aim_dev.local import consuming, portable_kubeconfig
from aim_dev.local.cluster import ControlPlane
from aim_dev.local.consuming import SERVICES
from aim_dev.local.natsserver import NatsServer
from aim_dev.local.processes import ManagedProcess, free_port
from aim_dev.standins import stand_in_crds
from aimcore.api.kinds import NAMESPACE
from aimcore.domain.outbound import ALLOWED_HOSTS_ENV
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect

SUPERVISOR = "aim-supervisor"
LOCAL_HOSTS = "127.0.0.1,localhost"
"""Hosts the embedded stack allow-lists for outbound connections (see ``docs/deploy.md``)."""


def local_allowed_hosts() -> str:
    """:data:`LOCAL_HOSTS` plus whatever ``AIM_OUTBOUND_ALLOWED_HOSTS`` the user set."""
    extra = os.environ.get(ALLOWED_HOSTS_ENV, "").strip(" ,")
    return f"{LOCAL_HOSTS},{extra}" if extra else LOCAL_HOSTS


def aim_home() -> Path:
    return Path(os.environ.get("AIM_HOME") or Path.home() / ".aim")


def service_module(name: str) -> str:
    return "aim_" + name.replace("-", "_")


async def install_crds(kubeconfig: str, system_namespace: str) -> None:
    kube = Kube(await connect(kubeconfig), field_manager="aimctl")
    try:
        await crd_install.install(kube, [crd_for(k) for k in all_kinds()] + stand_in_crds())
        await kube.create_if_absent(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": system_namespace}}
        )
    finally:
        await kube.close()


@dataclass
class Stack:
    home: Path = field(default_factory=aim_home)
    detach: bool = False
    control_plane_only: bool = False
    """Only etcd, kube-apiserver and kube-controller-manager, with the CRDs and the system
    namespace, and :attr:`compose_kubeconfig` for the services in containers (docker-compose.yml,
    which runs NATS and the services itself)."""
    system_namespace: str = "aim-system"
    profiling: bool = False
    """The API server serves Go's profiles (:attr:`ControlPlane.profiling`)."""
    services: dict[str, ManagedProcess] = field(default_factory=dict)
    cluster: ControlPlane | None = None
    nats: NatsServer | None = None
    supervisor: ManagedProcess | None = None
    # each service's /healthz, /readyz and /metrics port (its log's first lines name it too)
    health_ports: dict[str, int] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    @property
    def compose_kubeconfig(self) -> Path:
        """The kubeconfig docker-compose.yml mounts: the CA inline, readable by the image's user."""
        return self.home / "compose" / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.home / "state.json"

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        keep = not self.detach
        if not self.control_plane_only:
            self.nats = NatsServer(self.home / "nats", die_with_parent=keep).start()
        self.cluster = ControlPlane(
            self.home / "cluster", die_with_parent=keep, profiling=self.profiling
        ).start()
        shutil.copyfile(self.cluster.kubeconfig_path, self.kubeconfig)
        asyncio.run(install_crds(str(self.kubeconfig), self.system_namespace))
        portable_kubeconfig.write(self.cluster.kubeconfig(), self.compose_kubeconfig)
        self._write_state()
        if self.control_plane_only:
            return
        if self.detach:
            self.supervisor = ManagedProcess(
                SUPERVISOR,
                [sys.executable, "-m", "aim_dev.local.supervisor", str(self.home)],
                self.home / "logs",
                {"AIM_HOME": str(self.home)},
                die_with_parent=False,
            ).start()
            self._record_pids({SUPERVISOR: self.supervisor.pid})
        else:
            self.start_services()
        asyncio.run(self._wait_until_consuming())

    def start_services(self) -> None:
        for name in SERVICES:
            self.services[name] = self._service(name).start()
        self._record_pids({p.name: p.pid for p in self.services.values()})

    async def _wait_until_consuming(self, timeout: float = 120.0) -> None:
        """Ready means ready: every service has bound its durable consumer (so the watcher has
        declared the topology and each service is receiving events)."""
        assert self.nats is not None

        def alive() -> None:
            for label, proc in self._watched().items():
                if not proc.alive():
                    raise RuntimeError(f"{label} exited during start-up:\n{proc.log_tail()}")

        await consuming.wait_consuming(self.nats.client("reader"), time.monotonic() + timeout, check=alive)

    def _watched(self) -> dict[str, ManagedProcess]:
        """What must stay alive while starting: the services, or the supervisor that runs them."""
        return {SUPERVISOR: self.supervisor} if self.supervisor is not None else dict(self.services)

    def _service(self, name: str) -> ManagedProcess:
        assert self.nats is not None
        env = {
            **self.nats.service_env(name),
            "AIM_KUBECONFIG": str(self.kubeconfig),
            "AIM_SYSTEM_NAMESPACE": self.system_namespace,
            "PYTHONUNBUFFERED": "1",
            # each service its own health and metrics port, on loopback
            "AIM_HEALTH_PORT": str(self.health_ports.setdefault(name, free_port())),
            "AIM_HEALTH_ADDRESS": "127.0.0.1",
            # Everything here is local: registries, model sources and LLMKube Models may be servers
            # on this machine. The outbound policy's default stays strict; this stack allow-lists
            # loopback by name (link-local and metadata addresses stay refused).
            ALLOWED_HOSTS_ENV: local_allowed_hosts(),
        }
        # no kubelet here: downloads run in the cache service (docs/design.md#the-embedded-default)
        if name == "cache":
            env |= {"AIM_CACHE_EXECUTOR": "local", "AIM_CACHE_DIR": str(self.home / "models")}
            env |= {"AIM_LLMKUBE_ALLOWED_HOSTS": LOCAL_HOSTS}
        return ManagedProcess(
            f"aim-{name}",
            [sys.executable, "-m", service_module(name)],
            self.home / "logs",
            env,
            die_with_parent=not self.detach,
        )

    def _write_state(self) -> None:
        assert self.cluster is not None
        procs = [*self.cluster.processes, *((self.nats.process,) if self.nats else ())]
        nats = (
            {
                "nats_url": self.nats.url,
                "nats_port": self.nats.port,
                "nats_monitor_port": self.nats.monitor_port,
            }
            if self.nats
            else {}
        )
        state = {
            **nats,
            "server": self.cluster.server,
            "kubeconfig": str(self.kubeconfig),
            "compose_kubeconfig": str(self.compose_kubeconfig),
            "system_namespace": self.system_namespace,
            "pids": {p.name: p.pid for p in procs if p is not None},
        }
        with self._state_lock():
            self._replace_state(state)

    def _replace_state(self, state: dict[str, Any]) -> None:
        """Replace ``state.json`` at once: readers (``aimctl``, tests) never see it half-written."""
        tmp = self.state_file.with_name(f".{self.state_file.name}.{os.getpid()}")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, self.state_file)

    @contextlib.contextmanager
    def _state_lock(self) -> Iterator[None]:
        with (self.home / "state.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _record_pids(self, pids: dict[str, int | None]) -> None:
        """Add or update PIDs in ``state.json`` (the supervisor first, so ``down`` stops it first)."""
        with self._state_lock():
            state = json.loads(self.state_file.read_text())
            merged = {**{k: v for k, v in pids.items() if k == SUPERVISOR}, **state["pids"]}
            merged.update(pids)
            state["pids"] = merged
            self._replace_state(state)

    def supervise(self, stop: list[bool]) -> None:
        """Restart crashed services (backoff up to 30 s) until ``stop[0]`` becomes true."""
        backoff = dict.fromkeys(self.services, 1.0)
        while not stop[0]:
            for name, proc in list(self.services.items()):
                if not proc.alive():
                    due = time.monotonic() + min(backoff[name], 30.0)
                    while not stop[0] and time.monotonic() < due:
                        time.sleep(0.1)
                    if stop[0]:
                        return
                    backoff[name] *= 2
                    self.services[name] = self._service(name).start()
                    self._record_pids({self.services[name].name: self.services[name].pid})
            time.sleep(0.5)

    @classmethod
    def attach(cls, home: Path) -> Stack:
        """The stack ``aimctl up --detach`` started in ``home`` (for its supervisor)."""
        state = json.loads((home / "state.json").read_text())
        stack = cls(home=home, detach=True, system_namespace=state.get("system_namespace", "aim-system"))
        stack.nats = NatsServer(
            home / "nats", port=int(state["nats_port"]), monitor_port=int(state["nats_monitor_port"])
        )
        return stack

    def stop(self) -> None:
        if self.supervisor is not None:
            self.supervisor.stop()
        for proc in self.services.values():
            proc.stop()
        if self.cluster:
            self.cluster.stop()
        if self.nats:
            self.nats.stop()
        self.state_file.unlink(missing_ok=True)


def stop_detached(home: Path | None = None) -> list[str]:
    """Stop what ``aimctl up --detach`` started (with ``--node``: the node too, from its record).
    Returns the names stopped."""
    state_file = (home or aim_home()) / "state.json"
    if not state_file.exists():
        return []
    state = json.loads(state_file.read_text())
    stopped = []
    pids: dict[str, int] = state.get("pids", {})
    supervisor = pids.pop(SUPERVISOR, None)
    if supervisor is not None:  # first, and gone, before anything it would restart is stopped
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(supervisor, signal.SIGTERM)
            stopped.append(SUPERVISOR)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(supervisor):
            time.sleep(0.1)
        if _alive(supervisor):
            os.killpg(supervisor, signal.SIGKILL)
    node_states = [state["node_state"]] if state.get("node_state") else state.get("node_states", [])
    for node_state in node_states:  # processes, containers, namespace and cgroups, by the node's id
        from aim_dev.node import teardown_from_state  # noqa: PLC0415 - node mode only

        if teardown_from_state(Path(node_state)):
            stopped.append(f"node {Path(node_state).parent.name}")
    for name, pid in reversed(list(pids.items())):
        try:
            os.killpg(pid, signal.SIGTERM)
            stopped.append(name)
        except (ProcessLookupError, PermissionError):
            continue
    deadline = time.monotonic() + 15
    for pid in pids.values():
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.1)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    state_file.unlink(missing_ok=True)
    return stopped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie of ours still answers kill(0); check its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
