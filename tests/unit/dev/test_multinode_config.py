"""Several nodes' configuration (pure): each node's addresses and routes, kube-proxy's and the
kubelet's settings for a cluster, and how the clustered bus is judged formed from NATS's ``/jsz``."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import yaml

from aim_dev.local import deployed
from aim_dev.local.multinode import node_names
from aim_dev.node import config


def test_each_node_has_its_own_address_and_pod_subnet_and_routes_to_the_others() -> None:
    nodes = [config.Addressing.cluster_node(i, 3, "aim-node-fab") for i in range(3)]
    assert [n.node_ip for n in nodes] == ["10.244.76.1", "10.244.76.2", "10.244.76.3"]
    subnets = [ipaddress.ip_network(n.pod_subnet) for n in nodes]
    assert len(set(subnets)) == 3
    cluster = ipaddress.ip_network(config.CLUSTER_POD_SUBNETS)
    assert all(s.subnet_of(cluster) for s in subnets)  # kube-proxy's cluster CIDR covers every pod
    switch = ipaddress.ip_network(config.CLUSTER_NODE_SUBNET)
    for node in nodes:
        assert node.clustered and node.fabric == "aim-node-fab"
        assert ipaddress.ip_address(node.node_ip) in switch
        others = {(p.node_ip, p.pod_subnet) for p in node.peers}
        assert others == {(n.node_ip, n.pod_subnet) for n in nodes if n is not node}
    # the addresses every node has are in neither the pods' nor the Services' ranges
    services = ipaddress.ip_network(config.SERVICE_RANGE)
    for shared in (config.API_VIP, config.REGISTRY_VIP, config.DNS_IP):
        address = ipaddress.ip_address(shared)
        assert address not in cluster and address not in services and address not in switch
    assert node_names(3) == ("aim-worker-1", "aim-worker-2", "aim-worker-3")


def test_a_lone_node_keeps_its_old_addresses() -> None:
    alone = config.Addressing()
    assert (alone.node_ip, alone.pod_subnet, alone.clustered) == (config.NODE_IP, config.POD_SUBNET, False)
    layout = config.Layout("aim-node-0123abcd", Path("/tmp/n1"), "vm", 41234)
    assert "clusterDNS" not in yaml.safe_load(config.kubelet_config(layout))


def test_a_cluster_nodes_kubelet_and_kube_proxy() -> None:
    addressing = config.Addressing.cluster_node(1, 3, "aim-node-fab")
    layout = config.Layout("aim-node-0123abcd", Path("/tmp/n2"), "aim-worker-2", 41234, addressing)
    kubelet = yaml.safe_load(config.kubelet_config(layout))
    assert kubelet["clusterDNS"] == [config.DNS_IP] and kubelet["clusterDomain"] == "cluster.local"
    assert '"subnet": "10.244.81.0/24"' in config.cni_conflist(layout)
    proxy = yaml.safe_load(config.kube_proxy_config(layout))
    assert proxy["mode"] == "iptables"
    assert proxy["hostnameOverride"] == "aim-worker-2"
    assert proxy["clusterCIDR"] == config.CLUSTER_POD_SUBNETS
    assert proxy["clientConnection"]["kubeconfig"] == "/tmp/n2/kubeconfig"
    # nothing machine-wide: no conntrack table size or timeouts, no OOM score (no CAP_SYS_RESOURCE)
    assert proxy["conntrack"] == {
        "maxPerCore": 0,
        "min": 0,
        "tcpEstablishedTimeout": "0s",
        "tcpCloseWaitTimeout": "0s",
    }
    assert proxy["oomScoreAdj"] == 0
    assert len(layout.fabric_port) <= 15  # an interface name
    assert layout.fabric_port == "fab-0123abcd"


def stream(name: str, leader: str | None, replicas: list[tuple[str, bool]], r: int = 3) -> dict[str, Any]:
    return {
        "name": name,
        "config": {"num_replicas": r},
        "cluster": {"leader": leader, "replicas": [{"name": n, "current": c} for n, c in replicas]},
    }


ALL = [*deployed.STREAMS, *(f"KV_{b}" for b in deployed.BUCKETS)]


def jsz(
    me: str, *, leader: str = "aim-nats-0", behind: str | None = None, meta: str | None = "aim-nats-1"
) -> dict[str, Any]:
    """One server's answer: every stream led by ``leader``; ``me`` lists the other two."""
    servers = ["aim-nats-0", "aim-nats-1", "aim-nats-2"]
    others = [s for s in servers if s != me]
    details = [stream(n, leader, [(s, s != behind) for s in others]) for n in ALL]
    return {"meta_cluster": {"leader": meta}, "account_details": [{"stream_detail": details}]}


def test_the_bus_is_formed_once_every_streams_leader_says_its_followers_are_current() -> None:
    assert deployed.bus_cluster_problems([]) == ["no server answered"]
    # a follower's answer lists the leader among the others and cannot judge currency
    follower = jsz("aim-nats-1")
    assert deployed.bus_cluster_problems([follower]) == [f"{n}: not heard from its leader" for n in ALL]
    assert deployed.bus_cluster_problems([follower, jsz("aim-nats-0")]) == []
    lagging = jsz("aim-nats-0", behind="aim-nats-2")
    assert deployed.bus_cluster_problems([lagging]) == [f"{n}: aim-nats-2 behind" for n in ALL]


def test_the_bus_is_not_formed_without_a_meta_leader_or_with_a_stream_short_of_replicas() -> None:
    answer = jsz("aim-nats-0", meta=None)
    answer["account_details"][0]["stream_detail"][0] = stream(
        ALL[0], "aim-nats-0", [("aim-nats-1", True)], r=1
    )
    del answer["account_details"][0]["stream_detail"][-1]
    problems = deployed.bus_cluster_problems([answer])
    assert "no JetStream meta leader" in problems
    assert f"{ALL[0]}: R1, leader aim-nats-0" in problems
    assert f"{ALL[-1]}: not declared" in problems
