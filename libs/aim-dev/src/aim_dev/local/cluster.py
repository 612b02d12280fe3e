"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and kube-controller-manager
(garbage collector, Job and namespace controllers), like controller-runtime's envtest. No kubelet
and no scheduler: Pods stay Pending, and tests play the kubelet's part by patching status.

For several real nodes (:mod:`aim_dev.local.multinode`) it also runs what a cluster of nodes needs
of its control plane: kube-scheduler, the node lifecycle controller (a node that stops reporting
turns NotReady, then its pods are evicted once their toleration ends), an advertised address that
is not loopback (the ``kubernetes`` Service's endpoint, which kube-proxy on each node sends to the
node's forwarder), and the nodes' names resolving to loopback for the API server alone (a hosts
file bind-mounted over ``/etc/hosts`` in a private mount namespace of its own), where each node's
forwarder takes the kubelet's port.

Authentication is a static admin token in ``system:masters``; RBAC is on, so service accounts are
subject to the roles in ``deploy/``.
"""

from __future__ import annotations

import secrets
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from aim_dev.local import binaries
from aim_dev.local.processes import ManagedProcess, free_port, port_open, start_with_retries

SERVICE_RANGE = "10.0.0.0/24"


@dataclass(frozen=True)
class NodeSupport:
    """What a control plane of several real nodes runs and how."""

    node_names: tuple[str, ...]
    """Resolved to 127.0.0.1 for the API server (each node's forwarder holds its kubelet's port)."""
    advertise_address: str
    """The ``kubernetes`` Service's endpoint: an address every node has (and forwards to the host)."""
    toleration_seconds: int = 20
    """``not-ready``/``unreachable`` toleration the API server gives pods that set none."""
    monitor_grace: str = "16s"
    """How long a node may go silent before the lifecycle controller marks it NotReady."""


@dataclass
class ControlPlane:
    """Owns the three processes and the files they need, all under ``workdir``."""

    workdir: Path
    token: str = field(default_factory=lambda: secrets.token_hex(24))
    etcd_port: int = field(default_factory=free_port)
    apiserver_port: int = field(default_factory=free_port)
    processes: list[ManagedProcess] = field(default_factory=list)
    die_with_parent: bool = True
    profiling: bool = False
    """The API server serves Go's profiles on ``/debug/pprof`` (a benchmark's ``--profile``)."""
    nodes: NodeSupport | None = None
    """Run what real nodes need of the control plane (None: no kubelet will attach, or one node
    brings its own scheduler: :class:`aim_dev.node.Node`)."""

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def kubeconfig_path(self) -> Path:
        return self.workdir / "kubeconfig"

    def kubeconfig(self) -> dict[str, object]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "aim-local",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.pki / "apiserver.crt"),
                    },
                }
            ],
            "users": [{"name": "aim-admin", "user": {"token": self.token}}],
            "contexts": [{"name": "aim-local", "context": {"cluster": "aim-local", "user": "aim-admin"}}],
            "current-context": "aim-local",
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 90.0, attempts: int = 3) -> ControlPlane:
        """Start all three; a port taken between choosing and binding it is retried on new ports."""

        def new_ports() -> None:
            self.etcd_port, self.apiserver_port = free_port(), free_port()

        return start_with_retries(lambda: self._start(timeout), self.stop, new_ports, attempts)

    def _start(self, timeout: float) -> ControlPlane:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.pki.mkdir(exist_ok=True)
        logs = self.workdir / "logs"
        self._write_credentials()
        etcd = self._spawn(
            "etcd",
            [
                binaries.find("etcd"),
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{self.etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{self.etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{free_port()}",
                "--unsafe-no-fsync=true",
                "--quota-backend-bytes=4294967296",
                "--log-level=warn",
            ],
            logs,
        )
        etcd.wait_until(lambda: port_open(self.etcd_port), 30, "etcd to listen")
        apiserver = self._spawn("kube-apiserver", self._apiserver_args(), logs)
        apiserver.wait_until(self._ready, timeout, "kube-apiserver /readyz")
        self.kubeconfig_path.write_text(yaml.safe_dump(self.kubeconfig()))
        kcm_port = free_port()
        kcm = self._spawn(
            "kube-controller-manager",
            [
                binaries.find("kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig_path}",
                f"--authentication-kubeconfig={self.kubeconfig_path}",
                f"--authorization-kubeconfig={self.kubeconfig_path}",
                "--leader-elect=false",
                "--port=0",
                f"--secure-port={kcm_port}",
                "--bind-address=127.0.0.1",
                f"--cert-dir={self.pki / 'kcm'}",
                f"--service-account-private-key-file={self.pki / 'sa.key'}",
                f"--root-ca-file={self.pki / 'apiserver.crt'}",
                "--use-service-account-credentials=false",
                *self._controllers(),
                "--concurrent-gc-syncs=5",
                "--v=1",
            ],
            logs,
        )
        kcm.wait_until(lambda: port_open(kcm_port), 60, "kube-controller-manager to serve")
        if self.nodes is not None:
            self._spawn(
                "kube-scheduler",
                [
                    binaries.find("kube-scheduler"),
                    f"--kubeconfig={self.kubeconfig_path}",
                    f"--authentication-kubeconfig={self.kubeconfig_path}",
                    f"--authorization-kubeconfig={self.kubeconfig_path}",
                    "--authentication-skip-lookup=true",
                    "--leader-elect=false",
                    "--port=0",
                    f"--secure-port={free_port()}",
                    "--bind-address=127.0.0.1",
                    "--v=1",
                ],
                logs,
            )
        return self

    def _controllers(self) -> list[str]:
        off = ["nodeipam", "attachdetach", "persistentvolume-expander", "ttl"]
        if self.nodes is None:
            return ["--controllers=*," + ",".join(f"-{c}" for c in ["nodelifecycle", *off])]
        return [
            "--controllers=*," + ",".join(f"-{c}" for c in off),
            f"--node-monitor-grace-period={self.nodes.monitor_grace}",
            "--node-monitor-period=2s",
        ]

    def stop(self, grace: float = 10.0) -> None:
        """Stop every process at once, the controller manager first (nothing of a test cluster is
        worth a graceful order): ``grace`` seconds for all of them together, then SIGKILL."""
        for proc in reversed(self.processes):
            proc.terminate()
        deadline = time.monotonic() + grace
        for proc in reversed(self.processes):
            proc.stop(max(0.1, deadline - time.monotonic()))
        self.processes.clear()

    def restart_apiserver(self, timeout: float = 90.0) -> None:
        """Stop kube-apiserver and start it again on the same port and etcd (a control-plane
        upgrade or crash, as clients see it)."""
        old = next(p for p in self.processes if p.name == "kube-apiserver")
        old.stop()
        new = ManagedProcess(
            "kube-apiserver", old.argv, old.log_path.parent, die_with_parent=self.die_with_parent
        )
        self.processes[self.processes.index(old)] = new.start()
        new.wait_until(self._ready, timeout, "kube-apiserver /readyz after restart")

    # -- helpers -----------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str], logs: Path) -> ManagedProcess:
        proc = ManagedProcess(name, argv, logs, die_with_parent=self.die_with_parent).start()
        self.processes.append(proc)
        return proc

    def _write_credentials(self) -> None:
        key = self.pki / "sa.key"
        if not key.exists():
            subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
            subprocess.run(
                ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(self.pki / "sa.pub")],
                check=True,
                capture_output=True,
            )
        (self.pki / "tokens.csv").write_text(f'{self.token},aim-admin,aim-admin,"system:masters"\n')

    def _apiserver_args(self) -> list[str]:
        wrapper: list[str] = []
        extra: list[str] = []
        advertise = "127.0.0.1"
        if self.nodes is not None:
            hosts = self.workdir / "hosts"
            names = " ".join(self.nodes.node_names)
            hosts.write_text(f"127.0.0.1 localhost {names}\n::1 localhost\n")
            wrapper = [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"',
                str(hosts),
            ]
            advertise = self.nodes.advertise_address
            extra = [
                f"--default-not-ready-toleration-seconds={self.nodes.toleration_seconds}",
                f"--default-unreachable-toleration-seconds={self.nodes.toleration_seconds}",
                "--kubelet-preferred-address-types=Hostname",
            ]
        return [
            *wrapper,
            binaries.find("kube-apiserver"),
            *extra,
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            f"--secure-port={self.apiserver_port}",
            "--bind-address=127.0.0.1",
            f"--advertise-address={advertise}",
            "--insecure-port=0",
            f"--cert-dir={self.pki}",
            f"--token-auth-file={self.pki / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={self.pki / 'sa.pub'}",
            f"--service-account-signing-key-file={self.pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--api-audiences=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            f"--profiling={str(self.profiling).lower()}",
            "--watch-cache=true",
            "--v=0",
        ]

    def fetch(self, path: str, timeout: float) -> bytes:
        """GET ``path`` as the admin (the API server's own loopback certificate is not verified);
        urllib's errors (``OSError``: unreachable, or ``HTTPError`` for a status that is not 2xx)
        pass through."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(
            f"{self.server}{path}", headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
            return bytes(resp.read())

    def _ready(self) -> bool:
        try:
            self.fetch("/readyz", timeout=2)
        except OSError:  # not yet serving, or /readyz answers 500
            return False
        return True
