"""A real Kubernetes node attached to a running local control plane (docs/node.md).

:class:`Node` starts containerd, a kubelet and kube-scheduler for a control plane that runs on the
host's loopback (:class:`aim_dev.local.cluster.ControlPlane`, as the tests and ``aimctl up`` start
it), as docs/node.md#layout describes:

- a network namespace of the node's own (``aim-node-<hex>``) with no link to anything: the node's
  address on a bridge device, the pods' bridge, and the iptables rules the kubelet and CNI write;
- a private mount namespace, owned by a holder process, shared by containerd and the kubelet: the
  pods' mounts, and the paths the kubelet would write on the host (kernel tunables, ``/run``,
  ``/var/log/pods``, ``/var/lib/cni``) covered by the node's own files;
- the pods' cgroups under a root named for the node;
- one forwarder process for the ports that cross between the host and the node
  (:mod:`aim_dev.node.forward`): the API server (and any ``forwards`` given, e.g. NATS) into the
  node, the kubelet's port out of it.
- one of several (``addressing``: :mod:`aim_dev.local.multinode`): its ``eth0`` on the cluster's
  switch with routes to the other nodes' pods, kube-proxy and the cluster DNS stand-in
  (:mod:`aim_dev.clusterdns`) beside the kubelet, and no scheduler of its own (the control plane
  runs one). :meth:`Node.kill` loses it with no warning; :meth:`Node.restart` brings it back.

The control plane stays where it is: the tests, ``kubectl`` and ``aimctl`` keep reaching it on the
host's loopback, and the node reaches it through the forwarder.

Everything the node creates is recorded before it is created, in ``<workdir>/node.json`` and in a
registry under ``/run/aim-engine/nodes`` (gone at reboot, like the namespaces and cgroups it
describes). :meth:`Node.stop` removes it all and is idempotent; :func:`teardown` does the same from
a record, for ``aimctl down`` or after a crash; :func:`reap_stale` removes the nodes whose owner
process has died. Removal finds a node's processes, cgroups and namespace by the node's id
(:mod:`aim_dev.node.host`), never by a remembered PID or a process name alone.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aim_dev.local import binaries
from aim_dev.local.processes import ManagedProcess, free_port
from aim_dev.node import config, host
from aim_dev.node.forward import Endpoint, Forward
from aim_dev.node.host import MARKER, NodeError

REGISTRY = Path("/run/aim-engine/nodes")
SERVICE_IP = "10.0.0.1"  # the `kubernetes` Service's address (ControlPlane's service range 10.0.0.0/24)
HOST_TOOLS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "nsenter", "unshare", "iptables")
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap")
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes, the last one NUL
NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def default_node_name() -> str:
    """The machine's hostname when it resolves to loopback (the API server dials the node's
    Hostname address, which the host forwards to the kubelet), else ``localhost``."""
    name = socket.gethostname().lower()
    try:
        if socket.gethostbyname(name).startswith("127."):
            return name
    except OSError:
        pass
    return "localhost"


def check_requirements() -> None:
    """Root, Linux tools, CNI plugins and the bootstrap's binaries; a clear error naming what is missing."""
    if os.geteuid() != 0:
        raise NodeError(
            "the real node needs root (network and mount namespaces, cgroups, containerd); "
            "run as root, or use the no-kubelet mode"
        )
    missing = [t for t in HOST_TOOLS if shutil.which(t) is None]
    missing += [f"{config.CNI_BIN_DIR}/{p}" for p in CNI_PLUGINS if not Path(config.CNI_BIN_DIR, p).is_file()]
    for name in ("kubelet", "kube-scheduler"):
        try:
            binaries.find(name)
        except binaries.MissingBinary:
            missing.append(name)
    if missing:
        raise NodeError(f"the real node needs {', '.join(missing)}: run scripts/bootstrap.sh first")


@dataclass
class Node:
    """A node for the control plane whose admin kubeconfig is ``kubeconfig``; its files in ``workdir``.

    ``images``: docker-archive tarballs imported into containerd before the kubelet starts
    (:func:`aim_dev.images.tarballs`). ``forwards``: extra ports pods reach, each
    ``(node address, node port, host port)`` forwarded to the host's ``127.0.0.1:<host port>``.
    ``publish``: ports of the node the host reaches, each ``(host port, node address, node port)``
    (the host's ``127.0.0.1:<host port>`` forwarded into the node, e.g. a NATS pod with host
    networking). ``plain_http_registries``: registries (``host:port`` as the node sees them)
    containerd pulls from over plain HTTP.
    ``owner_pid``: the process whose end leaves the node stale for :func:`reap_stale` (default: the
    one starting it); with ``die_with_parent`` the node's daemons die with the starting process.
    """

    workdir: Path
    kubeconfig: Path
    images: Sequence[Path] = ()
    forwards: Sequence[tuple[str, int, int]] = ()
    publish: Sequence[tuple[int, str, int]] = ()
    plain_http_registries: Sequence[str] = ()
    node_name: str = field(default_factory=default_node_name)
    die_with_parent: bool = True
    owner_pid: int | None = None
    node_id: str = field(default_factory=lambda: f"aim-node-{secrets.token_hex(4)}")
    kubelet_port: int = field(default_factory=free_port)
    addressing: config.Addressing = field(default_factory=config.Addressing)
    """Alone (the default), or one node of several on a switch (:mod:`aim_dev.local.multinode`):
    then kube-proxy and the cluster DNS stand-in run on it too."""
    scheduler: bool = True
    """Run kube-scheduler with the node (a cluster of nodes has one, with its control plane)."""
    processes: dict[str, ManagedProcess] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def layout(self) -> config.Layout:
        return config.Layout(self.node_id, self.workdir, self.node_name, self.kubelet_port, self.addressing)

    @property
    def state_file(self) -> Path:
        return self.workdir / "node.json"

    @property
    def node_ip(self) -> str:
        return self.addressing.node_ip

    @property
    def containerd_socket(self) -> Path:
        return self.layout.containerd_socket

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> Node:
        """Start the node and return once it is Ready and schedulable; on failure, everything
        started so far is removed and the error says which part failed (with its log)."""
        check_requirements()
        if str(self.workdir.resolve()).startswith(("/run/", "/var/log/pods", "/var/lib/cni")):
            raise NodeError(f"the node's directory cannot be under /run or a path it covers: {self.workdir}")
        longest = len(str(self.layout.kubelet_dir.resolve() / "root" / "pod-resources")) + 11
        if longest > MAX_SOCKET_PATH:
            raise NodeError(
                f"the node's directory {self.workdir} is too long: the kubelet's sockets under it would "
                f"need {longest} characters, and a unix socket's path has at most {MAX_SOCKET_PATH}; "
                "use a shorter path"
            )
        reap_stale()
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, keep_logs: bool = True) -> None:
        """Remove everything the node created (idempotent; also after a crash of its processes)."""
        for proc in self.processes.values():
            with contextlib.suppress(Exception):
                proc.kill()
        self.processes.clear()
        teardown(self.record(), keep_logs=keep_logs)

    def record(self) -> dict[str, Any]:
        owner = self.owner_pid or os.getpid()
        return {
            "id": self.node_id,
            "node_name": self.node_name,
            "workdir": str(self.workdir.resolve()),
            "netns": self.layout.netns,
            "cgroup_root": self.layout.cgroup_root,
            "kubelet_port": self.kubelet_port,
            "owner_pid": owner,
            "owner_start_time": host.start_time(owner),
            "containerd_socket": str(self.containerd_socket),
            "pids": {name: p.pid for name, p in self.processes.items()},
        }

    # -- steps -------------------------------------------------------------------------------

    def _start(self, timeout: float) -> None:
        start = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._save()  # before anything is created: a crash from here on leaves a record to clean up
        server, token, ca_data = _admin_credentials(self.kubeconfig)
        self._write_files(server, token, ca_data)
        with self._step("netns"):
            self._create_network()
            host.create_cgroups(self.node_id)
        self._start_daemons(timeout, import_images=True)
        self.timings["total"] = round(time.monotonic() - start, 2)

    def _create_network(self) -> None:
        """The node's network namespace: its device (the node's address when alone; the addresses
        every node of a cluster has: the API server's, the registry's and the DNS's), and in a
        cluster its ``eth0`` on the switch with a route to each other node's pods."""
        lay, net = self.layout, self.addressing
        host.ip("netns", "add", lay.netns)
        self._ip_in_node("link", "set", "lo", "up")
        self._ip_in_node("link", "add", config.NODE_DEVICE, "type", "bridge")
        local = (
            (config.API_VIP, config.REGISTRY_VIP, config.DNS_IP)
            if net.clustered
            else (config.NODE_IP, SERVICE_IP)
        )
        for address in local:
            self._ip_in_node("addr", "add", f"{address}/32", "dev", config.NODE_DEVICE)
        self._ip_in_node("link", "set", config.NODE_DEVICE, "up")
        if net.fabric is None:
            return
        host.ip(
            "-n", net.fabric, "link", "add", lay.fabric_port, "type", "veth",
            "peer", "name", config.NODE_UPLINK, "netns", lay.netns,
        )  # fmt: skip
        host.ip("-n", net.fabric, "link", "set", lay.fabric_port, "master", config.FABRIC_BRIDGE, "up")
        prefix = config.CLUSTER_NODE_SUBNET.split("/")[1]
        self._ip_in_node("addr", "add", f"{net.node_ip}/{prefix}", "dev", config.NODE_UPLINK)
        self._ip_in_node("link", "set", config.NODE_UPLINK, "up")
        for peer in net.peers:
            self._ip_in_node("route", "add", peer.pod_subnet, "via", peer.node_ip)
        self._ip_in_node("route", "add", config.SERVICE_RANGE, "dev", config.NODE_UPLINK)
        # Forward between the pods' bridge and the switch; and let the pods' bridged traffic pass
        # kube-proxy's rules (a pod reaching a Service whose endpoint is on the same bridge).
        sysctl = ["nsenter", f"--net={lay.netns_path}", "sysctl", "-q", "-w"]
        for setting in ("net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"):
            subprocess.run([*sysctl, setting], check=True, capture_output=True, text=True)

    def _start_daemons(self, timeout: float, import_images: bool) -> None:
        lay = self.layout
        server, token, _ = _admin_credentials(self.kubeconfig)
        api_port = int(server.rsplit(":", 1)[1])

        with self._step("holder"):
            lay.holder_ready.unlink(missing_ok=True)
            holder = self._spawn(
                "holder",
                [
                    "nsenter",
                    f"--net={lay.netns_path}",
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "bash",
                    str(lay.holder_script),
                ],
            )
            holder.wait_until(lay.holder_ready.exists, 15, "the mount namespace holder")
        enter = ["nsenter", "-t", str(holder.pid), "-m", "-n"]

        with self._step("containerd"):
            containerd = self._spawn(
                "containerd", [*enter, "containerd", "--config", str(lay.containerd_config)]
            )
            containerd.wait_until(self._containerd_up, 30, "containerd to serve")

        if import_images:
            self.import_images(self.images)

        with self._step("forwarder"):
            api = Endpoint("host", "127.0.0.1", api_port)
            service = (config.API_VIP, api_port) if self.addressing.clustered else (SERVICE_IP, 443)
            forwards = [
                Forward(Endpoint("node", "127.0.0.1", api_port), api),
                Forward(Endpoint("node", *service), api),
                Forward(
                    Endpoint("host", "127.0.0.1", self.kubelet_port),
                    Endpoint("node", "127.0.0.1", self.kubelet_port),
                ),
                *(
                    Forward(Endpoint("node", a, p), Endpoint("host", "127.0.0.1", hp))
                    for a, p, hp in self.forwards
                ),
                *(
                    Forward(Endpoint("host", "127.0.0.1", hp), Endpoint("node", a, p))
                    for hp, a, p in self.publish
                ),
            ]
            ready = self.workdir / "forward.ready"
            ready.unlink(missing_ok=True)
            forwarder = self._spawn(
                "forwarder",
                [
                    sys.executable,
                    "-m",
                    "aim_dev.node.forward",
                    f"--netns={lay.netns_path}",
                    f"--ready={ready}",
                    *(str(f) for f in forwards),
                ],
            )
            forwarder.wait_until(ready.exists, 15, "the forwarder's listeners")

        if self.scheduler:
            with self._step("scheduler"):
                self._spawn(
                    "kube-scheduler",
                    [
                        "nsenter",
                        f"--net={lay.netns_path}",
                        binaries.find("kube-scheduler"),
                        f"--kubeconfig={lay.kubeconfig}",
                        f"--authentication-kubeconfig={lay.kubeconfig}",
                        f"--authorization-kubeconfig={lay.kubeconfig}",
                        "--authentication-skip-lookup=true",
                        "--leader-elect=false",
                        "--port=0",
                        "--secure-port=10259",
                        "--bind-address=127.0.0.1",
                        "--v=1",
                    ],
                )

        if self.addressing.clustered:
            with self._step("kube-proxy and DNS"):
                self._spawn(
                    "kube-proxy",
                    [*enter, binaries.find("kube-proxy"), f"--config={lay.kube_proxy_config}", "--v=1"],
                )
                dns_ready = self.workdir / "dns.ready"
                dns_ready.unlink(missing_ok=True)
                dns = self._spawn(
                    "cluster-dns",
                    [
                        "nsenter",
                        f"--net={lay.netns_path}",
                        sys.executable,
                        "-m",
                        "aim_dev.clusterdns",
                        f"--kubeconfig={lay.kubeconfig}",
                        f"--listen={config.DNS_IP}:53",
                        f"--domain={config.CLUSTER_DOMAIN}",
                        f"--ready={dns_ready}",
                    ],
                )
                dns.wait_until(dns_ready.exists, 30, "the cluster DNS stand-in")

        with self._step("kubelet"):
            kubelet = self._spawn(
                "kubelet",
                [
                    *enter,
                    binaries.find("kubelet"),
                    f"--config={lay.kubelet_config}",
                    f"--kubeconfig={lay.kubeconfig}",
                    f"--root-dir={lay.kubelet_dir / 'root'}",
                    f"--cert-dir={lay.kubelet_dir / 'pki'}",
                    "--container-runtime=remote",
                    f"--container-runtime-endpoint=unix://{lay.containerd_socket}",
                    f"--image-service-endpoint=unix://{lay.containerd_socket}",
                    f"--pod-infra-container-image={config.PAUSE_IMAGE}",
                    f"--hostname-override={self.node_name}",
                    f"--node-ip={self.addressing.node_ip}",
                    "--v=1",
                ],
            )
            api_client = _Api(server, token)
            kubelet.wait_until(
                lambda: self._ready_and_untainted(api_client), timeout, f"node {self.node_name} to be Ready"
            )
        self._save()

    def import_images(self, tarballs: Sequence[Path]) -> None:
        """docker-archive tarballs into containerd (where the kubelet finds them)."""
        with self._step("images"):
            for tarball in tarballs:
                self._ctr("images", "import", str(tarball), timeout=300)

    # -- faults ------------------------------------------------------------------------------

    def kill(self) -> list[int]:
        """The node lost with no warning: SIGKILL to every process of it at once (kubelet,
        containerd, kube-proxy, its forwarder and DNS, and every container); its network
        namespace, cgroups and files stay, as a powered-off machine's disk and switch port do."""
        killed = host.kill_processes(self.node_id)
        for proc in self.processes.values():  # reap them (already dead)
            proc.kill()
        self.processes.clear()
        self._save()
        return killed

    def restart(self, timeout: float = 120.0) -> Node:
        """The lost node back: its daemons started again on the same files (containerd keeps its
        images; the kubelet finds its pods' old sandboxes dead and starts them again)."""
        host.kill_processes(self.node_id)
        self.processes.clear()
        start = time.monotonic()
        try:
            self._start_daemons(timeout, import_images=False)
        except BaseException:
            self.stop()
            raise
        self.timings["restart"] = round(time.monotonic() - start, 2)
        return self

    def _write_files(self, server: str, token: str, ca_data: str) -> None:
        lay = self.layout
        for d in (
            lay.logs,
            lay.containerd_dir,
            lay.kubelet_dir / "manifests",
            lay.kubelet_dir / "volume-plugins",
            lay.cni_conf_dir,
            lay.fake_sysctl_dir,
            *(self.workdir / rel for rel in config.HARD_CODED_DIRS.values()),
        ):
            d.mkdir(parents=True, exist_ok=True)
        for (
            target
        ) in config.HARD_CODED_DIRS:  # mount points (empty, left in place: another node may use them)
            Path(target).mkdir(parents=True, exist_ok=True)
        lay.containerd_config.write_text(config.containerd_config(lay, tuple(self.plain_http_registries)))
        (lay.cni_conf_dir / "10-aim-pods.conflist").write_text(config.cni_conflist(lay))
        lay.kubelet_config.write_text(config.kubelet_config(lay))
        lay.holder_script.write_text(config.holder_script(lay))
        if self.addressing.clustered:
            lay.kube_proxy_config.write_text(config.kube_proxy_config(lay))
        lay.kubeconfig.write_text(config.kubeconfig(server, token, ca_data))
        lay.kubeconfig.chmod(0o600)

    @contextlib.contextmanager
    def _step(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        except NodeError:
            raise
        except Exception as exc:
            raise NodeError(f"node {self.node_id}: {name} failed: {exc}") from exc
        self.timings[name] = round(time.monotonic() - start, 2)

    def _spawn(self, name: str, argv: list[str]) -> ManagedProcess:
        proc = ManagedProcess(
            name, argv, self.layout.logs, {MARKER: self.node_id}, die_with_parent=self.die_with_parent
        ).start()
        self.processes[name] = proc
        self._save()
        return proc

    def _save(self) -> None:
        record = self.record()
        text = json.dumps(record, indent=2) + "\n"
        self.state_file.write_text(text)
        REGISTRY.mkdir(parents=True, exist_ok=True)
        (REGISTRY / f"{self.node_id}.json").write_text(text)

    def _ip_in_node(self, *args: str) -> None:
        host.ip("-n", self.layout.netns, *args)

    def _ctr(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        argv = ["ctr", "--address", str(self.containerd_socket), "--namespace", "k8s.io", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise NodeError(f"ctr {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return done

    def _containerd_up(self) -> bool:
        if not self.containerd_socket.exists():
            return False
        try:
            self._ctr("version", timeout=5)
        except (NodeError, subprocess.TimeoutExpired):
            return False
        return True

    def _ready_and_untainted(self, api: _Api) -> bool:
        """True once this kubelet's Node is Ready with no not-ready taint. The API server adds
        ``node.kubernetes.io/not-ready`` when the node registers, and the local control plane runs
        without the node-lifecycle controller that would lift it, so it is removed here."""
        node = api.get(f"/api/v1/nodes/{self.node_name}")
        if node is None:
            return False
        # This kubelet's (a Node of the same name may be left from an earlier run, still Ready).
        endpoint = ((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
        if endpoint.get("Port") != self.kubelet_port:
            return False
        conditions = {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}
        if conditions.get("Ready") != "True":
            return False
        taints = node["spec"].get("taints") or []
        kept = [t for t in taints if t.get("key") not in NOT_READY_TAINTS]
        if kept != taints:
            patch = {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": kept or None},
            }
            api.patch(f"/api/v1/nodes/{self.node_name}", patch)
            return False
        return True

    # -- helpers for callers -----------------------------------------------------------------

    def images_present(self) -> list[str]:
        """The image references containerd has (in the namespace the kubelet uses)."""
        return self._ctr("images", "list", "--quiet").stdout.split()

    def log_tails(self, lines: int = 20) -> str:
        return "\n".join(f"== {name}\n{p.log_tail(lines)}" for name, p in self.processes.items())


# -- removal -----------------------------------------------------------------------------------


def teardown(record: dict[str, Any], keep_logs: bool = True) -> None:
    """Remove a node from its record: its processes and containers, cgroups, network namespace
    (with its interfaces and iptables rules), and its directory (its ``logs`` kept if asked).
    Idempotent; safe on a partly started or crashed node."""
    node_id = str(record["id"])
    if not node_id.startswith("aim-node-"):
        raise NodeError(f"not a node id: {node_id!r}")
    host.kill_processes(node_id)
    host.remove_cgroups(node_id)
    host.delete_netns(str(record.get("netns") or node_id))
    workdir = Path(str(record["workdir"]))
    leftover = host.mounts_under(workdir)
    if leftover:  # cannot happen unless a mount escaped the private namespace; never delete through one
        raise NodeError(f"mounts left under {workdir}: {leftover}")
    if workdir.is_dir():
        for child in workdir.iterdir():
            if keep_logs and child.name == "logs":
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, onerror=_gone_is_fine)
            else:
                child.unlink(missing_ok=True)
        if not keep_logs:
            with contextlib.suppress(FileNotFoundError):
                workdir.rmdir()
    (REGISTRY / f"{node_id}.json").unlink(missing_ok=True)


def _gone_is_fine(func: Callable[..., Any], path: str, exc_info: Any) -> None:
    """``rmtree``'s error handler: a file another teardown of the same node removed first (a
    stale node reaped while its own stop runs) is no error; anything else is raised."""
    error = exc_info[1]
    if not isinstance(error, FileNotFoundError):
        raise error


def teardown_from_state(state_file: Path, keep_logs: bool = True) -> bool:
    """:func:`teardown` of the node recorded in ``state_file`` (``<workdir>/node.json``); false if
    there is none."""
    try:
        record = json.loads(state_file.read_text())
    except FileNotFoundError:
        return False
    teardown(record, keep_logs=keep_logs)
    return True


def registered() -> list[dict[str, Any]]:
    records = []
    for path in sorted(REGISTRY.glob("aim-node-*.json")) if REGISTRY.is_dir() else []:
        with contextlib.suppress(OSError, json.JSONDecodeError):
            records.append(json.loads(path.read_text()))
    return records


def is_stale(record: dict[str, Any]) -> bool:
    """Its owner process is gone (or its PID now names another process)."""
    pid = record.get("owner_pid")
    return not isinstance(pid, int) or host.start_time(pid) != record.get("owner_start_time")


def reap_stale(log: Callable[[str], None] | None = None) -> list[str]:
    """Remove every registered node whose owner died without removing it; returns their ids."""
    if not REGISTRY.is_dir():
        return []
    reaped = []
    with (REGISTRY / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for record in registered():
            if is_stale(record):
                if log:
                    log(f"removing node {record['id']} (its owner {record.get('owner_pid')} is gone)")
                teardown(record)
                reaped.append(str(record["id"]))
    return reaped


# -- API access --------------------------------------------------------------------------------


def _admin_credentials(kubeconfig: Path) -> tuple[str, str, str]:
    """``(server, token, CA as base64)`` from a ControlPlane's kubeconfig."""
    data = yaml.safe_load(kubeconfig.read_text())
    cluster = data["clusters"][0]["cluster"]
    token = data["users"][0]["user"]["token"]
    ca = cluster.get("certificate-authority-data")
    if ca is None:
        ca = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    return str(cluster["server"]), str(token), str(ca)


class _Api:
    """Just enough of the API for starting a node (the callers' own clients do the rest)."""

    def __init__(self, server: str, token: str) -> None:
        self.server = server
        self.token = token
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any] | None:
        headers = {"Authorization": f"Bearer {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/merge-patch+json"
        req = urllib.request.Request(f"{self.server}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=5) as resp:
                result: dict[str, Any] = json.loads(resp.read())
                return result
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 409):
                return None
            raise
        except (urllib.error.URLError, OSError):
            return None

    def get(self, path: str) -> dict[str, Any] | None:
        return self._call("GET", path)

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        return self._call("PATCH", path, body)
