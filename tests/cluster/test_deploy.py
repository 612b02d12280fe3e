"""The deployment manifests: every kustomization under deploy/ renders with a current kustomize in its
current forms, and a server-side dry run accepts deploy/install; the rendered workloads are locked down
(probes on the `health` port) and the RBAC is least privilege (checked statically and with ``kubectl
auth can-i`` against the real API server); the user roles aggregate into Kubernetes' own; the
overlays and components (KEDA, PDB, ServiceMonitor) render what they promise; the compose file and
the Dockerfile agree with the services' console scripts."""

from __future__ import annotations

import copy
import fnmatch
import os
import re
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from aim_dev.local import binaries
from aim_dev.local.cluster import ControlPlane
from aimcore.api.bus import auth
from aimcore.api.bus import secrets as bus_secrets
from aimcore.api.kinds import NAMESPACE
from aimcore.api.types import Obj
from aimcore.runtime import ApiException, Kube
from aimctl import bus as cli_bus
from aimctl import bus_tls
from tests import helpers

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BASE = DEPLOY / "base"
CRDS = DEPLOY / "crds"
INSTALL = DEPLOY / "install"
DEV = DEPLOY / "overlays" / "dev"
LOCAL_NODE = DEPLOY / "overlays" / "local-node"
PRODUCTION = DEPLOY / "overlays" / "production"
COMPONENTS = DEPLOY / "components"
SYSTEM_NS = "aim-system"
SERVICES = ("watcher", "status", "deployer", "discovery", "registry-sync", "cache")
AIM_GROUPS = ("aim.eai.amd.com", "aim.silogen.ai", "inference.llmkube.dev")
MAX_MEMORY = 256 * 2**20
BUS_CREDENTIALS = "aim-bus-credentials"


def run_kubectl(*args: str, kubeconfig: Path | None = None, check: bool = True) -> str:
    return helpers.kubectl(*args, kubeconfig=kubeconfig, check=check)


def render(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(binaries.kustomize_build(path)) if d]


def of_kind(objs: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def quantity(q: str | int) -> float:
    """A Kubernetes resource quantity in base units (bytes for memory)."""
    m = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(q))
    assert m, q
    binary = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    decimal = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    suffix = m.group(2)
    return float(m.group(1)) * (binary.get(suffix) or decimal[suffix])


def containers(workload: Obj) -> Iterator[Obj]:
    pod = workload["spec"]["template"]["spec"]
    yield from pod.get("initContainers", [])
    yield from pod["containers"]


@pytest.fixture(scope="module")
def base() -> list[Obj]:
    return render(BASE)


# -- static checks over the rendered base --------------------------------------------------------


def test_base_renders_every_object(base: list[Obj]) -> None:
    names = {kind: set(of_kind(base, kind)) for kind in {o["kind"] for o in base}}
    expected = {f"aim-{s}" for s in SERVICES}
    for kind in ("Deployment", "ClusterRole", "ClusterRoleBinding"):
        assert names[kind] == expected, kind
    assert names["ServiceAccount"] == expected | {BUS_CREDENTIALS}
    assert names["Job"] == {BUS_CREDENTIALS}
    assert names["StatefulSet"] == {"aim-nats"}
    assert "aim-nats" in names["Service"]
    assert names["Namespace"] == {SYSTEM_NS}
    assert "CustomResourceDefinition" not in names  # deploy/crds: uninstalling the operator keeps them
    assert names["Service"] == {"aim-nats", "aim-nats-headless", "aim-metrics"}
    assert names["HorizontalPodAutoscaler"] == {"aim-deployer", "aim-status"}
    assert names["NetworkPolicy"] == {"aim-nats", "aim-services"}
    assert names["Role"] == names["RoleBinding"] == {"aim-registry-sync", BUS_CREDENTIALS}
    assert {n.rsplit("-", 1)[0] for n in names["ConfigMap"]} == {"aim-nats-config"}  # name-hashed
    namespaced = [
        o
        for o in base
        if o["kind"]
        in ("Deployment", "ServiceAccount", "StatefulSet", "Service", "NetworkPolicy", "ConfigMap", "Job")
    ]
    assert all(o["metadata"]["namespace"] == SYSTEM_NS for o in namespaced)


def test_install_is_the_crds_and_the_operator(base: list[Obj]) -> None:
    """deploy/install = deploy/crds (every CRD, the user roles) + deploy/base, nothing else."""
    crds = render(CRDS)
    kinds = {o["kind"] for o in crds}
    assert kinds == {"CustomResourceDefinition", "ClusterRole"}
    assert len(of_kind(crds, "CustomResourceDefinition")) == len(list(CRDS.glob("*_*.yaml")))
    assert set(of_kind(crds, "ClusterRole")) == {"aim-admin", "aim-editor", "aim-viewer"}
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, render(INSTALL))) == sorted(map(key, crds + base))


def test_deployments_are_locked_down(base: list[Obj]) -> None:
    for name, dep in of_kind(base, "Deployment").items():
        svc = name.removeprefix("aim-")
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == name
        assert labels["app.kubernetes.io/part-of"] == "aim-engine"
        pod = dep["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == name
        pod_sc = pod.get("securityContext", {})
        assert pod_sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", name
        for c in containers(dep):
            sc = c.get("securityContext", {})
            assert sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True, name
            assert not sc.get("privileged", False), name
            assert sc.get("allowPrivilegeEscalation") is False, name
            assert sc.get("readOnlyRootFilesystem") is True, name
            assert sc["capabilities"]["drop"] == ["ALL"], name
            assert quantity(c["resources"]["limits"]["memory"]) <= MAX_MEMORY, name
            assert "memory" in c["resources"]["requests"] and "cpu" in c["resources"]["limits"], name
            assert c["image"] == f"aim-{svc}:0.1.0"  # each service its own image
            assert c["command"] == [f"aim-{svc}"]
            env = {e["name"] for e in c["env"]}
            assert {"AIM_NATS_URL", "AIM_SYSTEM_NAMESPACE", "OTEL_TRACES_EXPORTER"} <= env, name
            assert "AIM_KUBECONFIG" not in env, name  # in-cluster: the service account
            assert c["ports"] == [{"name": "health", "containerPort": 8080, "protocol": "TCP"}], name
            port = {e["name"]: e.get("value") for e in c["env"]}["AIM_HEALTH_PORT"]
            assert port == "8080", name
            for probe, path in (
                ("livenessProbe", "/healthz"),
                ("readinessProbe", "/readyz"),
                ("startupProbe", "/healthz"),
            ):
                assert c[probe]["httpGet"] == {"path": path, "port": "health"}, (name, probe)
    replicas = {n: d["spec"]["replicas"] for n, d in of_kind(base, "Deployment").items()}
    # two of each; the watcher's second replica is a hot standby (one leader, elected in NATS)
    assert replicas == {f"aim-{s}": 2 for s in SERVICES}, replicas
    assert of_kind(base, "Deployment")["aim-watcher"]["spec"]["strategy"]["rollingUpdate"] == {
        "maxUnavailable": 0,
        "maxSurge": 1,
    }
    metrics = of_kind(base, "Service")["aim-metrics"]["spec"]
    assert metrics["clusterIP"] == "None"
    assert metrics["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "health", "protocol": "TCP"}]


def test_the_bus_credentials_job_is_locked_down_and_may_only_create_secrets(base: list[Obj]) -> None:
    """The Job that makes the bus Secrets on a first install runs the status service's image (one
    image fewer to build and pull) under the restricted profile, with an account that may create
    Secrets in the operator's namespace and do nothing else."""
    job = of_kind(base, "Job")[BUS_CREDENTIALS]
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == BUS_CREDENTIALS
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (c,) = containers(job)
    assert c["image"] == "aim-status:0.1.0"
    assert c["command"] == ["python", "-m", "aimcore.runtime.bus_credentials"]
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
    assert quantity(c["resources"]["limits"]["memory"]) <= MAX_MEMORY
    assert not pod.get("volumes")  # nothing mounted: it reads no Secret
    (rule,) = of_kind(base, "Role")[BUS_CREDENTIALS]["rules"]
    assert rule == {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}
    binding = of_kind(base, "RoleBinding")[BUS_CREDENTIALS]
    assert binding["roleRef"]["name"] == BUS_CREDENTIALS
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": BUS_CREDENTIALS, "namespace": SYSTEM_NS}
    ]


def test_nats_statefulset(base: list[Obj]) -> None:
    sts = of_kind(base, "StatefulSet")["aim-nats"]
    c, _reloader = list(containers(sts))
    assert c["image"].startswith("nats:2.15.1")  # the version the tests run
    assert c["args"][:5] == ["-c", "/etc/nats/nats.conf", "-js", "-sd", "/data"]
    assert c["securityContext"]["runAsNonRoot"] is True and not c["securityContext"].get("privileged")
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    ports = {p["name"]: p["port"] for p in of_kind(base, "Service")["aim-nats"]["spec"]["ports"]}
    assert ports == {"client": 4222, "monitor": 8222}


def test_the_bus_is_authenticated(base: list[Obj]) -> None:
    """NATS runs the generated configuration, with every deployed role's accepted keys from that
    role's Secret (included files, re-read on a reload the reloader sidecar triggers: a rotation
    restarts nothing; NATS mounts no seed); each service mounts its own key and no other; the cache
    also hands the download Jobs' key to its Jobs; only the operator's pods and download Jobs may
    reach NATS."""
    committed = (BASE / "nats" / "nats.conf").read_text()
    assert committed == cli_bus.deploy_config(), "run `aimctl bus config > deploy/base/nats/nats.conf`"
    (config,) = of_kind(base, "ConfigMap").values()
    assert config["data"]["nats.conf"] == committed
    sts = of_kind(base, "StatefulSet")["aim-nats"]
    pod = sts["spec"]["template"]["spec"]
    nats, reloader = list(containers(sts))
    assert not [e for e in nats.get("env", []) if "valueFrom" in e]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == config["metadata"]["name"]
    sources = [s["secret"] for s in volumes["keys"]["projected"]["sources"]]
    assert sources == [
        {"name": bus_secrets.secret_name(r), "items": [{"key": bus_secrets.ACCEPTED, "path": f"{r}.conf"}]}
        for r in bus_secrets.DEPLOYED_ROLES
    ]
    for r in bus_secrets.DEPLOYED_ROLES:
        assert f'include "../nats-keys/{r}.conf"' in committed
    mounts = {m["name"]: m["mountPath"] for m in nats["volumeMounts"]}
    assert mounts["config"] == "/etc/nats" and mounts["keys"] == cli_bus.KEYS_DIR
    # the reloader signals nats-server through its pid file, in the pod's shared process namespace
    pid_file = nats["args"][nats["args"].index("-P") + 1]
    assert pod["shareProcessNamespace"] is True
    assert reloader["command"][-4:] == ["--dir", cli_bus.KEYS_DIR, "--pid-file", pid_file]
    assert {m["mountPath"] for m in reloader["volumeMounts"]} == {
        cli_bus.KEYS_DIR,
        str(Path(pid_file).parent),
    }
    assert "runAsUser" not in reloader["securityContext"]  # the pod's user: nats-server's
    for name, dep in of_kind(base, "Deployment").items():
        svc = name.removeprefix("aim-")
        pod = dep["spec"]["template"]["spec"]
        secrets = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
        assert secrets == {f"aim-bus-{svc}"}, name
        env = {e["name"]: e for e in pod["containers"][0]["env"]}
        assert env["AIM_NATS_ROLE"]["value"] == svc
        assert env["AIM_NATS_SEED_FILE"]["value"] == "/var/run/secrets/aim/bus/seed"
        refs = {
            e["valueFrom"]["secretKeyRef"]["name"]
            for e in env.values()
            if "secretKeyRef" in e.get("valueFrom", {})
        }
        assert refs == ({"aim-bus-download"} if svc == "cache" else set()), name
    policies = of_kind(base, "NetworkPolicy")
    nats = policies["aim-nats"]["spec"]
    assert nats["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "aim-nats"
    (rule,) = nats["ingress"]
    assert rule["ports"] == [{"port": 4222, "protocol": "TCP"}]
    download = rule["from"][1]["podSelector"]["matchLabels"]
    assert download == {"app.kubernetes.io/part-of": "aim-engine", "aim.eai.amd.com/component": "download"}
    assert policies["aim-services"]["spec"]["ingress"] == []


def _grants(rule: Obj, group: str, resource: str, verb: str) -> bool:
    return (
        (group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", []))
        and (resource in rule.get("resources", []) or "*" in rule.get("resources", []))
        and (verb in rule["verbs"] or "*" in rule["verbs"])
    )


def test_cluster_roles_are_least_privilege(base: list[Obj]) -> None:
    roles = of_kind(base, "ClusterRole")
    for name, role in roles.items():
        for rule in role["rules"]:
            assert not ("*" in rule["verbs"] and "*" in rule.get("resources", [])), (name, rule)
            assert "*" not in rule.get("apiGroups", []), (name, rule)
            for verb in ("list", "watch"):
                assert not _grants(rule, "", "secrets", verb), (name, rule)
    # Only the watcher lists and watches the AIM kinds.
    for name, role in roles.items():
        watches = any(_grants(r, g, "aimservices", "watch") for r in role["rules"] for g in AIM_GROUPS)
        assert watches == (name == "aim-watcher"), name
    # Each binding ties the service's account to its own role.
    for name, binding in of_kind(base, "ClusterRoleBinding").items():
        assert binding["roleRef"]["name"] == name
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": SYSTEM_NS}]


def test_hpas_use_an_api_every_server_serves(base: list[Obj]) -> None:
    deployments = of_kind(base, "Deployment")
    for name, hpa in of_kind(base, "HorizontalPodAutoscaler").items():
        assert hpa["apiVersion"] == "autoscaling/v1"
        assert hpa["spec"]["scaleTargetRef"]["name"] == name and name in deployments
        assert hpa["spec"]["minReplicas"] <= deployments[name]["spec"]["replicas"]


def kustomizations() -> list[Path]:
    return sorted(DEPLOY.rglob("kustomization.yaml"))


def test_kustomizations_use_current_forms() -> None:
    """`resources:` (never `bases:`), `patches:` (never patchesStrategicMerge/patchesJson6902),
    no `vars:` or `commonLabels:`; every kustomization under deploy/ renders."""
    deprecated = {"bases", "patchesStrategicMerge", "patchesJson6902", "vars", "commonLabels"}
    found = kustomizations()
    assert {p.parent.relative_to(DEPLOY).as_posix() for p in found} >= {
        "base",
        "crds",
        "install",
        "overlays/dev",
        "overlays/local-node",
        "overlays/local-cluster",
        "overlays/production",
        "components/keda",
        "components/pdb",
        "components/service-monitor",
    }
    for path in found:
        k = yaml.safe_load(path.read_text())
        assert not deprecated & set(k), (path, deprecated & set(k))
        if path.parent.parent == COMPONENTS:
            assert k["kind"] == "Component", path
        else:
            assert k["kind"] == "Kustomization", path
            assert render(path.parent), path


def test_dev_overlay_renders(base: list[Obj]) -> None:
    dev = render(DEV)
    assert {(o["kind"], o["metadata"]["name"]) for o in dev} == {
        (o["kind"], o["metadata"]["name"]) for o in base
    }
    for name, dep in of_kind(dev, "Deployment").items():
        assert [c["image"] for c in containers(dep)] == [f"{name}:dev"]
        assert dep["spec"]["replicas"] == 1
        if name == "aim-cache":  # the verify Jobs run the cache's own image
            assert verify_image(dep) == "aim-cache:dev"
    for hpa in of_kind(dev, "HorizontalPodAutoscaler").values():
        assert hpa["spec"]["minReplicas"] == 1


LOCAL_NODE_ENV = {
    "AIM_NATS_URL": "nats://127.0.0.1:4222",
    "AIM_DOWNLOADER_NATS_URL": "nats://10.244.76.1:4222",
    "AIM_OUTBOUND_ALLOWED_HOSTS": "127.0.0.1,10.244.76.1",
    "AIM_CACHE_DOWNLOAD_IMAGE": "aim-cache:0.1.0",
    "AIM_HEALTH_PORT": "",
}
LOCAL_NODE_PORTS = {s: 18081 + i for i, s in enumerate(SERVICES)}


def without_local_node_settings(obj: Obj) -> tuple[Obj, dict[str, str]]:
    """``obj`` without what the local-node overlay may set, and the settings it had."""
    obj = copy.deepcopy(obj)
    found: dict[str, str] = {}
    if obj["kind"] in ("Deployment", "StatefulSet"):
        if obj["kind"] == "Deployment":
            found["replicas"] = str(obj["spec"].pop("replicas"))
            rolling = obj["spec"]["strategy"].pop("rollingUpdate")
            found["rollout"] = f"surge {rolling['maxSurge']}, unavailable {rolling['maxUnavailable']}"
        pod = obj["spec"]["template"]["spec"]
        found["hostNetwork"] = str(pod.pop("hostNetwork", False))
        for c in pod["containers"]:
            found[f"image:{c['name']}"] = c.pop("image")
            if obj["kind"] == "Deployment":
                (port,) = c.pop("ports")
                found["health"] = f"{port['name']}:{port['containerPort']}"
            for e in c.get("env", []):
                if e["name"] in LOCAL_NODE_ENV:
                    found[e["name"]] = e.get("value", "")
            c["env"] = [e for e in c.get("env", []) if e["name"] not in LOCAL_NODE_ENV]
    if obj["kind"] == "HorizontalPodAutoscaler":
        found["minReplicas"] = str(obj["spec"].pop("minReplicas"))
    return obj, found


def test_local_node_overlay_changes_only_images_host_networking_addresses_and_ports(
    base: list[Obj],
) -> None:
    """What the node tier and `aimctl up --node` run is deploy/base: the overlay may set image
    names, host networking, addresses, the caches' download image and, because a host-network
    pod's port is the node's, one health port per service with one replica that a rollout replaces
    rather than surges beside (docs/node.md), and nothing else."""
    local = {(o["kind"], o["metadata"]["name"]): o for o in render(LOCAL_NODE)}
    assert set(local) == {(o["kind"], o["metadata"]["name"]) for o in base}
    for original in base:
        key = (original["kind"], original["metadata"]["name"])
        stripped, settings = without_local_node_settings(local[key])
        assert stripped == without_local_node_settings(original)[0], key
        if key == ("StatefulSet", "aim-nats"):
            assert settings == {
                "hostNetwork": "True",
                "image:nats": "localhost/aim/nats:local",
                "image:reloader": "aim-watcher:0.1.0",  # the watcher's image, as in base
            }
        elif key[0] == "Deployment":
            service = key[1].removeprefix("aim-")
            port = LOCAL_NODE_PORTS[service]
            expected = {
                "hostNetwork": "True",
                f"image:{service}": f"aim-{service}:0.1.0",
                "replicas": "1",
                "rollout": "surge 0, unavailable 1",  # the port is the node's: replace, never surge
                "health": f"health:{port}",
                "AIM_HEALTH_PORT": str(port),
            }
            expected["AIM_NATS_URL"] = LOCAL_NODE_ENV["AIM_NATS_URL"]
            if service in ("discovery", "registry-sync", "cache"):
                expected["AIM_OUTBOUND_ALLOWED_HOSTS"] = LOCAL_NODE_ENV["AIM_OUTBOUND_ALLOWED_HOSTS"]
            if service == "cache":
                expected["AIM_DOWNLOADER_NATS_URL"] = LOCAL_NODE_ENV["AIM_DOWNLOADER_NATS_URL"]
                # the caches' default download image (KServe's initializer) is on no registry here
                expected["AIM_CACHE_DOWNLOAD_IMAGE"] = LOCAL_NODE_ENV["AIM_CACHE_DOWNLOAD_IMAGE"]
            assert settings == expected, key
        elif key[0] == "HorizontalPodAutoscaler":
            assert settings == {"minReplicas": "1"}, key
    ports = [
        p for o in local.values() if o["kind"] == "Deployment" for c in containers(o) for p in c["ports"]
    ]
    assert len({p["containerPort"] for p in ports}) == len(SERVICES)  # no two pods on one node port


LOCAL_CLUSTER_ENV = {
    "AIM_REGISTRY_PLAIN_HTTP": "10.244.75.2:5000",
    "AIM_OUTBOUND_ALLOWED_HOSTS": "10.244.75.2",
}


def test_local_cluster_overlay_is_production_with_only_what_this_machine_needs() -> None:
    """What the multi-node tier and `aimctl up --node --nodes 3` run is deploy/overlays/production:
    the overlay may set NATS's image, the PodDisruptionBudgets' API version (1.20 serves
    policy/v1beta1 only), aim-nats's cluster address (published to the host through every node),
    and the local registry's plain HTTP and address for discovery and registry-sync, and nothing
    else (docs/node.md, "Several nodes")."""
    production = {(o["kind"], o["metadata"]["name"]): o for o in render(DEPLOY / "overlays" / "production")}
    local = {(o["kind"], o["metadata"]["name"]): o for o in render(DEPLOY / "overlays" / "local-cluster")}
    assert set(local) == set(production)
    for key, original in production.items():
        changed = copy.deepcopy(local[key])
        if key[0] == "PodDisruptionBudget":
            assert (original["apiVersion"], changed["apiVersion"]) == ("policy/v1", "policy/v1beta1"), key
            changed["apiVersion"] = original["apiVersion"]
        elif key == ("Service", "aim-nats"):
            assert changed["spec"].pop("clusterIP") == "10.0.0.250"
        elif key == ("StatefulSet", "aim-nats"):
            [nats] = [c for c in containers(changed) if c["name"] == "nats"]
            assert nats["image"] == "localhost/aim/nats:local"
            nats["image"] = next(c["image"] for c in containers(original) if c["name"] == "nats")
        elif key in (("Deployment", "aim-discovery"), ("Deployment", "aim-registry-sync")):
            [container] = containers(changed)
            added = {e["name"]: e["value"] for e in container["env"] if e["name"] in LOCAL_CLUSTER_ENV}
            assert added == LOCAL_CLUSTER_ENV, key
            container["env"] = [e for e in container["env"] if e["name"] not in LOCAL_CLUSTER_ENV]
        assert changed == original, key
    watchers = of_kind(list(local.values()), "Deployment")
    assert all(d["spec"]["replicas"] == 2 for d in watchers.values())
    assert all(d["spec"]["template"]["spec"].get("affinity") for d in watchers.values())


def test_keda_component_scales_on_the_real_consumers_lag() -> None:
    """The KEDA component replaces the CPU HPAs with `nats-jetstream` ScaledObjects on the
    durable consumers the services really bind (their names derived from the code)."""
    from aim_status.reports import CONSUMER as STATUS_CONSUMER  # noqa: PLC0415
    from aimcore.api.bus import topology  # noqa: PLC0415
    from aimcore.runtime.controller import Controller, event_consumer  # noqa: PLC0415

    async def nothing(_obj: Obj) -> None:
        return None

    consumers = {
        svc: event_consumer(Controller(svc, (), nothing)) for svc in ("deployer", "discovery", "cache")
    }
    expected = {f"aim-{svc}": (c.stream, c.durable) for svc, c in consumers.items()}
    expected["aim-status"] = (STATUS_CONSUMER.stream, STATUS_CONSUMER.durable)
    assert expected["aim-deployer"] == (topology.EVENTS_STREAM, "aim-deployer")
    rendered = render(PRODUCTION)
    assert "HorizontalPodAutoscaler" not in {o["kind"] for o in rendered}  # KEDA makes its own
    scaled = of_kind(rendered, "ScaledObject")
    assert set(scaled) == set(expected)
    deployments = of_kind(rendered, "Deployment")
    for name, so in scaled.items():
        assert so["apiVersion"] == "keda.sh/v1alpha1"
        assert so["metadata"]["namespace"] == SYSTEM_NS
        assert so["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert so["spec"]["minReplicaCount"] == deployments[name]["spec"]["replicas"] == 2
        assert so["spec"]["maxReplicaCount"] >= so["spec"]["minReplicaCount"]
        (trigger,) = so["spec"]["triggers"]
        assert trigger["type"] == "nats-jetstream"
        meta = trigger["metadata"]
        assert (meta["stream"], meta["consumer"]) == expected[name], name
        assert meta["natsServerMonitoringEndpoint"] == "aim-nats.aim-system.svc.cluster.local:8222"
        assert meta["account"] == "$G" and int(meta["lagThreshold"]) > 0
    # the scaler reaches NATS's monitoring port, which the Service publishes
    assert {"name": "monitor", "port": 8222, "targetPort": "monitor"} in of_kind(rendered, "Service")[
        "aim-nats"
    ]["spec"]["ports"]
    (rule,) = of_kind(rendered, "NetworkPolicy")["aim-nats-monitor"]["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8222, "protocol": "TCP"}]
    # without the component, the HPAs stay
    assert set(of_kind(render(BASE), "HorizontalPodAutoscaler")) == {"aim-deployer", "aim-status"}


def test_pdb_and_service_monitor_components() -> None:
    rendered = render(PRODUCTION)
    pdbs = of_kind(rendered, "PodDisruptionBudget")
    assert pdbs.pop("aim-nats")  # the clustered bus's (test_bus_cluster_component)
    assert set(pdbs) == {f"aim-{s}" for s in SERVICES}
    for name, pdb in pdbs.items():
        assert pdb["apiVersion"] == "policy/v1"
        assert pdb["spec"]["maxUnavailable"] == 1
        labels = of_kind(rendered, "Deployment")[name]["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (monitor,) = of_kind(rendered, "ServiceMonitor").values()
    metrics = of_kind(rendered, "Service")["aim-metrics"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [p["name"] for p in metrics["spec"]["ports"]]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    (rule,) = of_kind(rendered, "NetworkPolicy")["aim-metrics"]["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8080, "protocol": "TCP"}]


def test_the_released_behaviour_component_sets_aim_behaviour_on_every_service_and_nothing_else() -> None:
    """deploy/overlays/local-node-released is local-node plus the component: every service's
    container has ``AIM_BEHAVIOUR=released`` (once); every other object and field is the same."""
    seeds = {(o["kind"], o["metadata"]["name"]): o for o in render(LOCAL_NODE)}
    released = {
        (o["kind"], o["metadata"]["name"]): o for o in render(DEPLOY / "overlays" / "local-node-released")
    }
    assert set(released) == set(seeds)
    changed = {key for key in seeds if seeds[key] != released[key]}
    assert changed == {("Deployment", f"aim-{s}") for s in SERVICES}
    for key in changed:
        (container,) = released[key]["spec"]["template"]["spec"]["containers"]
        said = [e for e in container["env"] if e["name"] == "AIM_BEHAVIOUR"]
        assert said == [{"name": "AIM_BEHAVIOUR", "value": "released"}], key
        container["env"] = [e for e in container["env"] if e["name"] != "AIM_BEHAVIOUR"]
        assert released[key] == seeds[key], key


def test_bus_tls_component() -> None:
    """The production overlay requires TLS on the bus: NATS runs the generated TLS configuration with
    the certificate from `aim-bus-tls` (its reloader also watching it), and every service connects
    to a tls:// URL trusting only the CA bundle of that Secret (the key is not mounted)."""
    committed = (COMPONENTS / "bus-tls" / "nats.conf").read_text()
    assert committed == cli_bus.deploy_config(tls=True), (
        "run `aimctl bus config --tls > deploy/components/bus-tls/nats.conf`"
    )
    rendered = render(PRODUCTION)
    (config,) = [c for n, c in of_kind(rendered, "ConfigMap").items() if n.startswith("aim-nats-config")]
    assert config["data"]["nats.conf"] == committed
    nats = of_kind(rendered, "StatefulSet")["aim-nats"]["spec"]["template"]["spec"]
    (tls_volume,) = [v for v in nats["volumes"] if v["name"] == "tls"]
    assert tls_volume["secret"]["secretName"] == "aim-bus-tls"
    by_name = {c["name"]: c for c in nats["containers"]}
    for name in ("nats", "reloader"):
        assert {"name": "tls", "mountPath": "/etc/nats-tls", "readOnly": True} in by_name[name][
            "volumeMounts"
        ]
    assert "/etc/nats-tls" in by_name["reloader"]["command"]
    deployments = of_kind(rendered, "Deployment")
    assert set(deployments) == {f"aim-{s}" for s in SERVICES}
    for name, deployment in deployments.items():
        (c,) = containers(deployment)
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["AIM_NATS_URL"] == "tls://aim-nats.aim-system:4222", name
        ca_file = env["AIM_NATS_TLS_CA_FILE"]
        (mount,) = [m for m in c["volumeMounts"] if ca_file.startswith(m["mountPath"] + "/")]
        (volume,) = [
            v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
        ]
        assert volume["secret"]["secretName"] == "aim-bus-tls"
        assert volume["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}], (
            "only the CA, never the key"
        )


def test_bus_cluster_component(base: list[Obj], tmp_path: Path) -> None:
    """The production overlay runs NATS as a three-node JetStream cluster: three pods started
    together, one per Kubernetes node, each with its own volume, routes to every pod through the
    headless Service, one pod disrupted at a time, the routes admitted by the network policy, and
    the watcher declaring every stream and bucket at three replicas; nats-server accepts the
    configuration, and it is the version the tests run. The base (and the dev overlay) stay
    single-node."""
    rendered = render(PRODUCTION)
    sts = of_kind(rendered, "StatefulSet")["aim-nats"]
    replicas = sts["spec"]["replicas"]
    assert replicas == 3 and sts["spec"]["podManagementPolicy"] == "Parallel"
    labels = sts["spec"]["template"]["metadata"]["labels"]
    pod = sts["spec"]["template"]["spec"]
    (anti,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"].items() <= labels.items()
    (claim,) = sts["spec"]["volumeClaimTemplates"]  # a volume per pod
    assert [
        m["mountPath"]
        for m in next(containers(sts))["volumeMounts"]
        if m["name"] == claim["metadata"]["name"]
    ]
    nats = next(containers(sts))
    config_path = nats["args"][nats["args"].index("-c") + 1]
    mounts = {m["mountPath"]: m["name"] for m in nats["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    cluster_map = volumes[mounts[str(Path(config_path).parent)]]["configMap"]["name"]
    config = of_kind(rendered, "ConfigMap")[cluster_map]["data"][Path(config_path).name]
    (included,) = re.findall(r'^include "([^"]+)"$', config, re.MULTILINE)
    operator_config = Path(config_path).parent / included
    base_map = volumes[mounts[str(operator_config.resolve().parent)]]["configMap"]["name"]
    assert base_map.startswith("aim-nats-config")
    env = {e["name"]: e for e in nats["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "server_name: $POD_NAME" in config
    port = {p["name"]: p["containerPort"] for p in nats["ports"]}["cluster"]
    headless = of_kind(rendered, "Service")[sts["spec"]["serviceName"]]
    assert {"name": "cluster", "port": port, "targetPort": "cluster"} in headless["spec"]["ports"]
    routes = re.findall(r"nats://(\S+)", config)
    names = [
        f"aim-nats-{i}.{headless['metadata']['name']}.{sts['metadata']['namespace']}.svc"
        for i in range(replicas)
    ]
    assert routes == [f"{name}:{port}" for name in names]
    # the routes speak TLS and verify each other (bus-cluster-tls) with the bus certificate, whose
    # names cover the pods' route names
    (route_tls,) = re.findall(r"^  tls \{\n(.*?)^  \}", config, re.MULTILINE | re.DOTALL)
    assert re.search(r"^\s*verify: true$", route_tls, re.MULTILINE), route_tls
    files = dict(re.findall(r'^\s*(\w+_file): "([^"]+)"$', route_tls, re.MULTILINE))
    tls_mount = {m["name"]: m["mountPath"] for m in nats["volumeMounts"]}["tls"]
    assert files == {
        k: f"{tls_mount}/{v}"
        for k, v in (("cert_file", "tls.crt"), ("key_file", "tls.key"), ("ca_file", "ca.crt"))
    }
    assert volumes["tls"]["secret"]["secretName"] == bus_tls.TLS_SECRET
    assert all(
        any(fnmatch.fnmatch(n, h) for h in bus_tls.default_hosts(sts["metadata"]["namespace"])) for n in names
    )
    pdb = of_kind(rendered, "PodDisruptionBudget")["aim-nats"]["spec"]
    assert pdb["maxUnavailable"] == 1 < replicas / 2  # the majority stays
    assert pdb["selector"]["matchLabels"].items() <= labels.items()
    rules = of_kind(rendered, "NetworkPolicy")["aim-nats"]["spec"]["ingress"]
    (route_rule,) = [r for r in rules if r["ports"] == [{"port": port, "protocol": "TCP"}]]
    assert route_rule["from"] == [{"podSelector": {"matchLabels": anti["labelSelector"]["matchLabels"]}}]
    for name, dep in of_kind(rendered, "Deployment").items():
        (c,) = containers(dep)
        declared = {e["name"]: e.get("value") for e in c["env"]}.get("AIM_NATS_REPLICAS")
        assert declared == (str(replicas) if name == "aim-watcher" else None), name

    for single in (base, render(DEV)):
        assert of_kind(single, "StatefulSet")["aim-nats"]["spec"]["replicas"] == 1
        assert "aim-nats" not in of_kind(single, "PodDisruptionBudget")
        for dep in of_kind(single, "Deployment").values():
            assert "AIM_NATS_REPLICAS" not in {e["name"] for e in next(containers(dep))["env"]}

    # nats-server accepts it: the cluster configuration over the operator's (keys as deployed)
    etc = tmp_path / "etc"
    (etc / "nats").mkdir(parents=True)
    (etc / "nats" / "nats.conf").write_text(cli_bus.deploy_config())
    credentials = auth.Credentials(tmp_path / "creds")
    credentials.write_accepted(etc / "nats-keys", credentials.ensure())
    (etc / "nats-cluster").mkdir()
    made = bus_tls.BusTls.new("aim-system", bus_tls.default_hosts("aim-system"))
    (etc / "nats-tls").mkdir()
    for name, text in (("tls.crt", made.server_cert), ("tls.key", made.server_key), ("ca.crt", made.bundle)):
        (etc / "nats-tls" / name).write_text(text)
    (etc / "nats-cluster" / "nats.conf").write_text(config.replace(f"{tls_mount}/", f"{etc}/nats-tls/"))
    checked = subprocess.run(
        [binaries.find("nats-server"), "-t", "-c", str(etc / "nats-cluster" / "nats.conf")],
        env={**os.environ, "POD_NAME": "aim-nats-0"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # one NATS version everywhere: the image deploy/ names is the server the tests run
    version = subprocess.run(
        [binaries.find("nats-server"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert nats["image"] == f"nats:{version.split()[-1].removeprefix('v')}-alpine", version


def verify_image(cache: Obj) -> str:
    """What AIM_LLMKUBE_VERIFY_IMAGE is in the cache's pods (its value, or the annotation it reads)."""
    (c,) = containers(cache)
    (env,) = [e for e in c["env"] if e["name"] == "AIM_LLMKUBE_VERIFY_IMAGE"]
    if "value" in env:
        return str(env["value"])
    path = env["valueFrom"]["fieldRef"]["fieldPath"]
    m = re.fullmatch(r"metadata\.annotations\['([^']+)'\]", path)
    assert m, path
    return str(cache["spec"]["template"]["metadata"]["annotations"][m.group(1)])


def test_an_overlay_that_changes_the_cache_image_changes_the_verify_image(tmp_path: Path) -> None:
    """The LLMKube verify Jobs run the cache's own image: an overlay's `images:` moves both."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (tmp_path / "deploy").symlink_to(DEPLOY)  # kustomize takes relative paths only
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["../deploy/base"],
                "images": [
                    {"name": "aim-cache", "newName": "registry.example.com/aim/aim-cache", "newTag": "2.0"}
                ],
            }
        )
    )
    rendered = render(overlay)
    deployments = of_kind(rendered, "Deployment")
    (cache,) = containers(deployments["aim-cache"])
    assert cache["image"] == "registry.example.com/aim/aim-cache:2.0"
    assert verify_image(deployments["aim-cache"]) == cache["image"]
    # nothing else moved (OTEL_SERVICE_NAME=aim-cache reads like an image name, and stays)
    (before,) = containers(of_kind(render(BASE), "Deployment")["aim-cache"])
    assert cache["env"] == before["env"]


# -- against the real API server -----------------------------------------------------------------


async def ensure_namespace(kube: Kube, name: str) -> None:
    try:
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiException as exc:
        if exc.status != 409:
            raise


async def test_server_dry_run_accepts_the_install(
    aim_cluster: ControlPlane, kube: Kube, base: list[Obj]
) -> None:
    await ensure_namespace(kube, SYSTEM_NS)  # a dry-run Namespace does not exist for the objects in it
    done = binaries.apply_kustomization(
        INSTALL, "--dry-run=server", "--validate=false", kubeconfig=aim_cluster.kubeconfig_path
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    lines = out.splitlines()
    assert all(line.endswith("(server dry run)") for line in lines), out
    listed = {line.split()[0] for line in lines}
    for svc in SERVICES:
        assert f"deployment.apps/aim-{svc}" in listed, out
        assert f"serviceaccount/aim-{svc}" in listed, out
        assert f"clusterrole.rbac.authorization.k8s.io/aim-{svc}" in listed, out
        assert f"clusterrolebinding.rbac.authorization.k8s.io/aim-{svc}" in listed, out
    assert "statefulset.apps/aim-nats" in listed, out
    assert "service/aim-nats" in listed, out
    assert "clusterrole.rbac.authorization.k8s.io/aim-viewer" in listed, out
    assert len(listed) == len(render(INSTALL))


def can_i(cp: ControlPlane, svc: str, verb: str, resource: str, *extra: str) -> bool:
    out = run_kubectl(
        "auth",
        "can-i",
        verb,
        resource,
        f"--as=system:serviceaccount:{SYSTEM_NS}:aim-{svc}",
        *extra,
        kubeconfig=cp.kubeconfig_path,
        check=False,
    )
    return out.strip() == "yes"


async def test_rbac_on_the_server(aim_cluster: ControlPlane, kube: Kube) -> None:
    """Apply the RBAC for real and ask the authorizer what each service account may do."""
    await ensure_namespace(kube, SYSTEM_NS)
    rbac = str(BASE / "rbac.yaml")
    run_kubectl("apply", "-f", rbac, kubeconfig=aim_cluster.kubeconfig_path)
    try:
        yes = [
            ("watcher", "watch", "aimservices.aim.eai.amd.com"),
            ("watcher", "list", "aimclustermodels.aim.silogen.ai"),
            ("watcher", "watch", "models.inference.llmkube.dev"),
            ("watcher", "watch", "inferenceservices.serving.kserve.io"),
            ("watcher", "list", "nodes"),
            ("watcher", "watch", "deployments.apps"),
            ("watcher", "list", "horizontalpodautoscalers.autoscaling"),
            ("deployer", "create", "inferenceservices.serving.kserve.io"),
            ("deployer", "patch", "httproutes.gateway.networking.k8s.io"),
            ("deployer", "delete", "httproutes.gateway.networking.k8s.io"),
            ("deployer", "patch", "scaledobjects.keda.sh"),
            ("deployer", "delete", "scaledobjects.keda.sh"),
            ("deployer", "create", "aimservicetemplates.aim.eai.amd.com"),
            ("deployer", "patch", "aimclustermodels.aim.silogen.ai"),
            ("deployer", "delete", "aimmodelcaches.aim.eai.amd.com"),
            ("deployer", "patch", "aimservices.aim.eai.amd.com"),
            ("deployer", "get", "namespaces"),
            ("discovery", "create", "jobs.batch"),
            ("discovery", "get", "secrets"),
            ("discovery", "patch", "aimclusterservicetemplates.aim.silogen.ai"),
            ("discovery", "create", "aimtemplatecaches.aim.eai.amd.com"),
            ("cache", "create", "persistentvolumeclaims"),
            ("cache", "get", "secrets"),
            ("cache", "create", "jobs.batch"),
            ("cache", "delete", "aimmodelcaches.aim.silogen.ai"),
            ("cache", "patch", "aimtemplatecaches.aim.eai.amd.com"),
            ("cache", "get", "namespaces"),
            ("cache", "get", "aimclusterruntimeconfigs.aim.eai.amd.com"),
            # a storage quota is judged on live lists; an evicted cache gets a Warning Event
            ("cache", "list", "persistentvolumeclaims"),
            ("cache", "list", "aimartifacts.aim.eai.amd.com"),
            ("cache", "list", "aimtemplatecaches.aim.eai.amd.com"),
            ("cache", "create", "events"),
            ("registry-sync", "create", "aimclustermodels.aim.eai.amd.com"),
            ("status", "create", "events"),
            ("status", "patch", "events"),
        ]
        no = [
            ("watcher", "create", "aimservices.aim.eai.amd.com"),
            ("watcher", "get", "secrets"),
            ("deployer", "list", "deployments.apps"),
            ("deployer", "watch", "horizontalpodautoscalers.autoscaling"),
            ("status", "patch", "aimservices.aim.eai.amd.com"),
            ("status", "list", "aimservices.aim.eai.amd.com"),
            ("status", "delete", "events"),
            ("status", "list", "events"),
            *((svc, "create", "events") for svc in SERVICES if svc not in ("status", "cache")),
            ("cache", "patch", "events"),
            ("cache", "list", "aimtemplatecaches.aim.silogen.ai"),
            ("deployer", "list", "inferenceservices.serving.kserve.io"),
            ("deployer", "delete", "inferenceservices.serving.kserve.io"),
            ("deployer", "get", "secrets"),
            ("discovery", "delete", "nodes"),
            ("discovery", "list", "nodes"),
            ("discovery", "list", "pods"),
            ("cache", "create", "inferenceservices.serving.kserve.io"),
            ("cache", "delete", "persistentvolumeclaims"),
            ("cache", "create", "aimtemplatecaches.aim.eai.amd.com"),
            ("registry-sync", "update", "aimclustermodels.aim.eai.amd.com"),
            ("registry-sync", "patch", "aimclustermodels.aim.eai.amd.com"),
            ("registry-sync", "delete", "aimclustermodels.aim.eai.amd.com"),
            ("registry-sync", "get", "secrets"),  # -A: only in the operator's namespace (below)
            *((svc, verb, "secrets") for svc in SERVICES for verb in ("list", "watch")),
        ]
        for svc, verb, resource in yes:
            assert can_i(aim_cluster, svc, verb, resource, "-A"), (svc, verb, resource)
        for svc, verb, resource in no:
            assert not can_i(aim_cluster, svc, verb, resource, "-A"), (svc, verb, resource)
        # (``get pods/log`` would ask about a pod named "log"; the subresource is a flag)
        assert can_i(aim_cluster, "discovery", "get", "pods", "--subresource=log", "-A")
        assert not can_i(aim_cluster, "discovery", "get", "pods", "-A")
        assert can_i(aim_cluster, "cache", "get", "pods", "--subresource=log", "-A")
        for group in AIM_GROUPS:
            resource = "models" if group == "inference.llmkube.dev" else "aimservices"
            assert can_i(aim_cluster, "status", "patch", f"{resource}.{group}", "--subresource=status", "-A")
            assert not can_i(
                aim_cluster, "status", "update", f"{resource}.{group}", "--subresource=status", "-A"
            )
        assert can_i(aim_cluster, "registry-sync", "get", "secrets", "-n", SYSTEM_NS)
        assert not can_i(aim_cluster, "registry-sync", "get", "secrets", "-n", "default")
    finally:
        run_kubectl("delete", "-f", rbac, "--ignore-not-found", kubeconfig=aim_cluster.kubeconfig_path)


def can_user(cp: ControlPlane, user: str, verb: str, resource: str, namespace: str, *extra: str) -> bool:
    out = run_kubectl(
        "auth",
        "can-i",
        verb,
        resource,
        f"--as={user}",
        "-n",
        namespace,
        *extra,
        kubeconfig=cp.kubeconfig_path,
        check=False,
    )
    return out.strip() == "yes"


async def test_user_roles_aggregate_into_view_edit_and_admin(
    aim_cluster: ControlPlane, kube: Kube, namespace: str
) -> None:
    """A user bound to Kubernetes' own `view` in a namespace lists AIMServices there (the aim-viewer
    rules aggregated into `view` by the controller manager) and may not create them; `edit` may."""
    roles = str(CRDS / "aim-user-roles.yaml")
    # before the roles: `view` knows nothing of the AIM kinds
    for user, role in (("viewer-user", "view"), ("editor-user", "edit")):
        run_kubectl(
            "create",
            "rolebinding",
            f"{user}-{role}",
            f"--clusterrole={role}",
            f"--user={user}",
            "-n",
            namespace,
            kubeconfig=aim_cluster.kubeconfig_path,
        )
    resource = "aimservices.aim.eai.amd.com"
    assert not can_user(aim_cluster, "viewer-user", "list", resource, namespace)
    run_kubectl("apply", "-f", roles, kubeconfig=aim_cluster.kubeconfig_path)
    try:

        async def aggregated() -> bool:
            return can_user(aim_cluster, "viewer-user", "list", resource, namespace)

        await helpers.eventually(aggregated, timeout=30, interval=0.5, what="aim-viewer aggregated into view")
        for group_resource in (
            "aimservices.aim.silogen.ai",
            "models.inference.llmkube.dev",
            "aimmodels.aim.eai.amd.com",
        ):
            assert can_user(aim_cluster, "viewer-user", "get", group_resource, namespace), group_resource
        assert not can_user(aim_cluster, "viewer-user", "create", resource, namespace)
        assert not can_user(aim_cluster, "viewer-user", "delete", resource, namespace)
        assert not can_user(aim_cluster, "viewer-user", "list", resource, "default")  # only where bound

        async def editor() -> bool:
            return can_user(aim_cluster, "editor-user", "create", resource, namespace)

        await helpers.eventually(editor, timeout=30, interval=0.5, what="aim-editor aggregated into edit")
        assert not can_user(aim_cluster, "editor-user", "patch", resource, namespace, "--subresource=status")
        assert can_user(aim_cluster, "editor-user", "get", resource, namespace, "--subresource=status")
    finally:
        run_kubectl("delete", "-f", roles, "--ignore-not-found", kubeconfig=aim_cluster.kubeconfig_path)


# -- compose file and image ----------------------------------------------------------------------


def console_scripts() -> set[str]:
    scripts: set[str] = set()
    for pyproject in (REPO / "services").glob("*/pyproject.toml"):
        scripts |= set(tomllib.loads(pyproject.read_text())["project"].get("scripts", {}))
    return scripts


def test_compose_file() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"nats", *SERVICES}
    nats = services["nats"]
    assert nats["image"].startswith("nats:2.15.1") and "-js" in nats["command"]
    assert nats["command"][:2] == ["-c", "/etc/nats/nats.conf"]
    assert "./.aim-bus/nats.conf:/etc/nats/nats.conf:ro" in nats["volumes"]
    assert "4222:4222" in nats["ports"]
    scripts = console_scripts()
    for svc in SERVICES:
        spec = services[svc]
        assert spec["command"] == f"aim-{svc}" and spec["command"] in scripts, svc
        assert spec["network_mode"] == "host", svc
        env = spec["environment"]
        assert env["AIM_NATS_URL"] == "nats://127.0.0.1:4222", svc
        assert env["AIM_KUBECONFIG"] == "/kube/config", svc
        # its own bus key, and only its own (the cache also hands out the download Jobs' key)
        assert env["AIM_NATS_ROLE"] == svc and env["AIM_NATS_SEED_FILE"] == "/run/aim/bus/seed", svc
        seeds = {v.split(":")[0] for v in spec["volumes"] if v.startswith("./.aim-bus/")}
        own = {f"./.aim-bus/{svc}.nk"}
        assert seeds == (own | {"./.aim-bus/download.nk"} if svc == "cache" else own), svc
        assert any(v.endswith(":/kube/config:ro") for v in spec["volumes"]), svc
        assert spec["build"] == {"context": ".", "args": {"SERVICE": svc}}, svc  # its own image
        assert spec["image"] == f"aim-{svc}:0.1.0", svc


def test_dockerfile_and_ignore() -> None:
    """One image per service: pinned base and uv, the third-party dependencies installed from the
    lock file before any source is copied (a cached layer), then only the runtime library and the
    service's own package, as wheels; no tooling, no CLI, no tests in it."""
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:\d+\.\d+\.\d+-slim-bookworm$", dockerfile, re.M)
    assert re.search(r"^ARG UV_VERSION=\d+\.\d+\.\d+$", dockerfile, re.M)
    deps = dockerfile.index('uv sync --frozen --no-dev --no-install-workspace --package "aim-${SERVICE}"')
    sources = dockerfile.index("COPY libs/aimcore libs/aimcore")
    final = dockerfile.index('uv sync --frozen --no-dev --no-editable --package "aim-${SERVICE}"')
    assert deps < sources < final
    copied = re.findall(r"^COPY (?!--from)(\S+)", dockerfile, re.M)
    # sources: the runtime library, the cache's Job programs (installed only where a service depends on
    # them) and the service; of the rest of the workspace, manifests only
    assert {c for c in copied if not c.endswith("pyproject.toml")} == {
        "libs/aimcore",
        "services/cache-jobs",
        "services/${SERVICE}",
    }
    assert "USER 65532" in dockerfile
    assert re.search(r"^ENV PATH=/app/\.venv/bin:", dockerfile, re.M)
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".git", ".venv", "tests"} <= ignored
    # The Deployments' commands are console scripts the images install.
    assert {f"aim-{svc}" for svc in SERVICES} <= console_scripts()
