"""The real node's configuration files, rendered from its layout with no I/O (docs/node.md).

Every value here is one of the fixes this machine kind needs (docs/node.md#layout):
cgroup v1 with the ``cgroupfs`` driver, ``restrict_oom_score_adj`` (root lacks CAP_SYS_RESOURCE),
a bridge CNI whose pods reach only the node's namespace, the kubelet's kernel tunables faked inside
the node's mount namespace, and nothing written outside the node's own directory: containerd's and
the kubelet's state, the CNI cache, pod logs, volume plugins, and the pods' cgroups under a root
named for the node.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from aim_dev.local import cluster

NODE_IP = "10.244.76.1"
"""The node's address, on a bridge device in its network namespace (kubelet 1.20 rejects a loopback
``--node-ip``, and this kernel has no ``dummy`` link type)."""
POD_SUBNET = "10.244.77.0/24"
NODE_DEVICE = "aimnode0"
POD_BRIDGE = "aimbr0"
PAUSE_IMAGE = "localhost/aim/pause:3.4.1"
FABRIC_BRIDGE = "aimfab0"
"""The switch between several nodes: a bridge in a network namespace of its own (one per cluster),
each node's ``eth0`` plugged into it by a veth pair."""
NODE_UPLINK = "eth0"
CLUSTER_NODE_SUBNET = "10.244.76.0/24"
"""Several nodes: node ``i`` (from 0) is ``10.244.76.<i+1>`` on its ``eth0``."""
CLUSTER_POD_SUBNETS = "10.244.80.0/20"
"""Several nodes: node ``i`` gives its pods ``10.244.<80+i>.0/24`` (kube-proxy's cluster CIDR)."""
API_VIP = "10.244.75.1"
"""Several nodes: the API server's advertised address (the ``kubernetes`` Service's endpoint), an
address every node has on its own device and forwards to the host's API server."""
REGISTRY_VIP = "10.244.75.2"
"""Several nodes: the local registry's address on every node (forwarded to the host's), which
containerd, pods and the operator's pods alike reach as ``10.244.75.2:5000`` (plain HTTP)."""
DNS_IP = "169.254.20.10"
"""Several nodes: the cluster DNS each node answers on its own device (NodeLocal DNSCache's address:
outside the Service range, so no Service can take it)."""
CLUSTER_DOMAIN = "cluster.local"
SERVICE_RANGE = cluster.SERVICE_RANGE
"""The control plane's Service range: a node of several routes it to its uplink, so that a
connection from the node itself finds a route before kube-proxy rewrites its destination."""
KUBE_PROXY_HEALTHZ = 10256
CNI_BIN_DIR = "/usr/lib/cni"

FAKE_SYSCTLS = {
    # What kubelet 1.20 writes at start (protectKernelDefaults: false): machine-wide settings on a
    # shared VM, so the node sees files with the values it wants, bind-mounted in its namespace only.
    "/proc/sys/vm/overcommit_memory": "1",
    "/proc/sys/kernel/panic": "10",
    "/proc/sys/kernel/panic_on_oops": "1",
}
# Paths the kubelet or libcni hard-code; each is covered by a directory of the node inside its
# mount namespace. The (empty) directories must exist on the host to be mount points.
HARD_CODED_DIRS = {
    "/var/log/pods": "varlog/pods",
    "/var/log/containers": "varlog/containers",
    "/var/lib/cni": "cni/cache",
}


@dataclass(frozen=True)
class Peer:
    """Another node of the cluster, as this one routes to it."""

    node_ip: str
    pod_subnet: str


@dataclass(frozen=True)
class Addressing:
    """A node's addresses: alone (the default: its address on a device of its own, reached by
    nothing), or node ``index`` of a cluster whose switch is the network namespace ``fabric``."""

    node_ip: str = NODE_IP
    pod_subnet: str = POD_SUBNET
    fabric: str | None = None
    peers: tuple[Peer, ...] = ()

    @property
    def clustered(self) -> bool:
        return self.fabric is not None

    @classmethod
    def cluster_node(cls, index: int, count: int, fabric: str) -> Addressing:
        def peer(i: int) -> Peer:
            return Peer(f"10.244.76.{i + 1}", f"10.244.{80 + i}.0/24")

        own = peer(index)
        others = tuple(peer(i) for i in range(count) if i != index)
        return cls(node_ip=own.node_ip, pod_subnet=own.pod_subnet, fabric=fabric, peers=others)


@dataclass(frozen=True)
class Layout:
    """Where a node keeps everything, and the names that make it unique on the machine."""

    node_id: str  # aim-node-<hex>: the network namespace, the cgroup root, the process marker
    workdir: Path
    node_name: str
    kubelet_port: int
    addressing: Addressing = Addressing()

    @property
    def netns(self) -> str:
        return self.node_id

    @property
    def netns_path(self) -> Path:
        return Path("/run/netns") / self.node_id

    @property
    def cgroup_root(self) -> str:
        return f"/{self.node_id}"

    @property
    def logs(self) -> Path:
        return self.workdir / "logs"

    @property
    def containerd_dir(self) -> Path:
        return self.workdir / "containerd"

    @property
    def containerd_config(self) -> Path:
        return self.containerd_dir / "config.toml"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd_dir / "containerd.sock"

    @property
    def kubelet_dir(self) -> Path:
        return self.workdir / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.kubelet_dir / "config.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def cni_conf_dir(self) -> Path:
        return self.workdir / "cni" / "net.d"

    @property
    def kube_proxy_config(self) -> Path:
        return self.workdir / "kube-proxy.yaml"

    @property
    def fabric_port(self) -> str:
        """The switch's end of this node's veth pair (an interface name: at most 15 characters)."""
        return "fab-" + self.node_id.removeprefix("aim-node-")

    @property
    def holder_script(self) -> Path:
        return self.workdir / "holder.sh"

    @property
    def holder_ready(self) -> Path:
        return self.workdir / "holder.ready"

    @property
    def fake_sysctl_dir(self) -> Path:
        return self.workdir / "fake-sysctl"


def containerd_config(layout: Layout, plain_http: tuple[str, ...] = ()) -> str:
    """containerd's configuration; ``plain_http``: registries (``host:port``) pulled from over
    plain HTTP (a local registry has no certificate)."""
    d = layout.containerd_dir
    mirrors = "".join(
        f"""    [plugins."io.containerd.grpc.v1.cri".registry.mirrors.{json.dumps(host)}]
      endpoint = [{json.dumps("http://" + host)}]
"""
        for host in plain_http
    )
    registry = (
        f"""  [plugins."io.containerd.grpc.v1.cri".registry]
{mirrors}"""
        if mirrors
        else ""
    )
    return f"""\
version = 2
root = {json.dumps(str(d / "root"))}
state = {json.dumps(str(d / "state"))}
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
]
[grpc]
  address = {json.dumps(str(layout.containerd_socket))}
[plugins."io.containerd.internal.v1.opt"]
  path = {json.dumps(str(d / "opt"))}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {json.dumps(PAUSE_IMAGE)}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  # Root here lacks CAP_SYS_RESOURCE: a sandbox's oom_score_adj of -998 fails every pod otherwise.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {json.dumps(CNI_BIN_DIR)}
    conf_dir = {json.dumps(str(layout.cni_conf_dir))}
    max_conf_num = 1
{registry}"""


def cni_conflist(layout: Layout) -> str:
    """A bridge with the pod subnet; pods route everything to the node (nothing beyond it exists)."""
    bridge = {
        "type": "bridge",
        "bridge": POD_BRIDGE,
        "isGateway": True,
        "ipMasq": False,
        "hairpinMode": True,
        "ipam": {
            "type": "host-local",
            "dataDir": str(layout.workdir / "cni" / "ipam"),
            "ranges": [[{"subnet": layout.addressing.pod_subnet}]],
            "routes": [{"dst": "0.0.0.0/0"}],
        },
    }
    portmap = {"type": "portmap", "capabilities": {"portMappings": True}}
    return json.dumps({"cniVersion": "0.4.0", "name": "aim-pods", "plugins": [bridge, portmap]}, indent=2)


def kubelet_config(layout: Layout, max_pods: int = 110) -> str:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs",
        # Pods' cgroups under a root of this node's own: another node on the machine has its own.
        "cgroupRoot": layout.cgroup_root,
        "cgroupsPerQOS": True,
        "failSwapOn": False,
        "staticPodPath": str(layout.kubelet_dir / "manifests"),
        "volumePluginDir": str(layout.kubelet_dir / "volume-plugins"),
        # The API server reaches it through the node's Hostname address, which is loopback, and a
        # forwarder from the host's loopback into the node's network namespace.
        "address": "127.0.0.1",
        "port": layout.kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        # The local API server has no kubelet client certificate; only the host's loopback reaches
        # this port.
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "protectKernelDefaults": False,  # it "sets" the tunables faked in its mount namespace
        "resolvConf": "",  # nothing of the host's: there is no uplink
        "serializeImagePulls": False,
        # The status is computed this often and posted when it changes: the node turns Ready a
        # second after its runtime is, not at the next 10 s tick.
        "nodeStatusUpdateFrequency": "1s",
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%"},
        "imageGCHighThresholdPercent": 99,
        "imageGCLowThresholdPercent": 98,
        "maxPods": max_pods,
    }
    if layout.addressing.clustered:  # the cluster DNS stand-in on every node (aim_dev.clusterdns)
        config["clusterDNS"] = [DNS_IP]
        config["clusterDomain"] = CLUSTER_DOMAIN
    return yaml.safe_dump(config, sort_keys=False)


def kube_proxy_config(layout: Layout) -> str:
    """kube-proxy in iptables mode in the node's namespaces, leaving the machine's settings alone:
    no conntrack table size or timeouts (machine-wide here) and no OOM score (root lacks
    CAP_SYS_RESOURCE)."""
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(layout.kubeconfig)},
        "hostnameOverride": layout.node_name,
        "mode": "iptables",
        "clusterCIDR": CLUSTER_POD_SUBNETS,
        "bindAddress": layout.addressing.node_ip,
        "healthzBindAddress": f"127.0.0.1:{KUBE_PROXY_HEALTHZ}",
        "metricsBindAddress": "127.0.0.1:10249",
        "oomScoreAdj": 0,
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "iptables": {"syncPeriod": "30s", "minSyncPeriod": "1s", "masqueradeAll": False},
    }
    return yaml.safe_dump(config, sort_keys=False)


def holder_script(layout: Layout) -> str:
    """The process that owns the node's private mount namespace (started under ``unshare --mount``
    in the node's network namespace): it covers the paths the kubelet and containerd would write
    on the host, then sleeps. containerd and the kubelet join it with ``nsenter``."""
    q = shlex.quote
    lines = ["#!/bin/bash", "set -euo pipefail"]
    for target, value in FAKE_SYSCTLS.items():
        fake = layout.fake_sysctl_dir / Path(target).name
        lines.append(f"echo {value} > {q(str(fake))}")
        lines.append(f"mount --bind {q(str(fake))} {target}")
    # /run: containerd's shim sockets (/run/containerd/s is hard-coded in 1.6), runc's state, and the
    # pods' network namespace files (/var/run/netns), none of them on the host's /run.
    lines.append("mount -t tmpfs -o mode=755 tmpfs /run")
    for target, rel in HARD_CODED_DIRS.items():
        lines.append(f"mount --bind {q(str(layout.workdir / rel))} {target}")
    lines.append(f"touch {q(str(layout.holder_ready))}")
    lines.append(f"exec -a {q(layout.node_id + '-holder')} sleep infinity")
    return "\n".join(lines) + "\n"


def kubeconfig(server: str, token: str, ca_data: str) -> str:
    """The node's own kubeconfig (the CA inline, so no path outside the node's directory is read)."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "aim-local", "cluster": {"server": server, "certificate-authority-data": ca_data}}
            ],
            "users": [{"name": "aim-node", "user": {"token": token}}],
            "contexts": [{"name": "aim-local", "context": {"cluster": "aim-local", "user": "aim-node"}}],
            "current-context": "aim-local",
        },
        sort_keys=False,
    )
