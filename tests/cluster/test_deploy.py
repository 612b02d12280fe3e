"""The deployment manifests: deploy/base renders with the kustomize embedded in kubectl 1.20 and a
server-side dry run accepts every object; the rendered workloads are locked down and the RBAC is least
privilege (checked statically and with ``kubectl auth can-i`` against the real API server); the dev
overlay renders; the compose file and the Dockerfile agree with the services' console scripts."""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aim_dev.local.cluster import ControlPlane
from aimcore.api.kinds import NAMESPACE
from aimcore.runtime.kube import ApiException, Kube
from aimctl import bus as cli_bus
from tests import helpers

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "deploy" / "base"
DEV = REPO / "deploy" / "overlays" / "dev"
LOCAL_NODE = REPO / "deploy" / "overlays" / "local-node"
SYSTEM_NS = "aim-system"
SERVICES = ("watcher", "status", "deployer", "discovery", "registry-sync", "cache")
AIM_GROUPS = ("aim.eai.amd.com", "aim.silogen.ai", "inference.llmkube.dev")
MAX_MEMORY = 256 * 2**20

Obj = dict[str, Any]


def run_kubectl(*args: str, kubeconfig: Path | None = None, check: bool = True) -> str:
    return helpers.kubectl(*args, kubeconfig=kubeconfig, check=check)


def render(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(run_kubectl("kustomize", str(path))) if d]


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
    for kind in ("Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
        assert names[kind] == expected, kind
    assert names["StatefulSet"] == {"aim-nats"}
    assert "aim-nats" in names["Service"]
    assert names["Namespace"] == {SYSTEM_NS}
    assert len(names["CustomResourceDefinition"]) == len(list((REPO / "deploy" / "crds").glob("*_*.yaml")))
    assert names["HorizontalPodAutoscaler"] == {"aim-deployer", "aim-status"}
    assert names["NetworkPolicy"] == {"aim-nats", "aim-services"}
    assert names["Role"] == names["RoleBinding"] == {"aim-registry-sync"}
    assert {n.rsplit("-", 1)[0] for n in names["ConfigMap"]} == {"aim-nats-config"}  # name-hashed
    namespaced = [
        o
        for o in base
        if o["kind"]
        in ("Deployment", "ServiceAccount", "StatefulSet", "Service", "NetworkPolicy", "ConfigMap")
    ]
    assert all(o["metadata"]["namespace"] == SYSTEM_NS for o in namespaced)


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
    replicas = {n: d["spec"]["replicas"] for n, d in of_kind(base, "Deployment").items()}
    assert replicas.pop("aim-watcher") == 1  # the single list/watch client of the API server
    assert all(r == 2 for r in replicas.values()), replicas


def test_nats_statefulset(base: list[Obj]) -> None:
    sts = of_kind(base, "StatefulSet")["aim-nats"]
    (c,) = list(containers(sts))
    assert c["image"].startswith("nats:2.10")
    assert c["args"][:5] == ["-c", "/etc/nats/nats.conf", "-js", "-sd", "/data"]
    assert c["securityContext"]["runAsNonRoot"] is True and not c["securityContext"].get("privileged")
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    ports = {p["name"]: p["port"] for p in of_kind(base, "Service")["aim-nats"]["spec"]["ports"]}
    assert ports == {"client": 4222, "monitor": 8222}


def test_the_bus_is_authenticated(base: list[Obj]) -> None:
    """NATS runs the generated configuration, with every deployed role's public key from that
    role's Secret; each service mounts its own key and no other; the cache also hands the download
    Jobs' key to its Jobs; only the operator's pods and download Jobs may reach NATS."""
    committed = (BASE / "nats" / "nats.conf").read_text()
    assert committed == cli_bus.deploy_config(), "run `aimctl bus config > deploy/base/nats/nats.conf`"
    (config,) = of_kind(base, "ConfigMap").values()
    assert config["data"]["nats.conf"] == committed
    sts = of_kind(base, "StatefulSet")["aim-nats"]
    (c,) = list(containers(sts))
    keys = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c["env"] if e["name"].startswith("AIM_NKEY_")}
    assert keys == {
        cli_bus.env_var(r): {"name": cli_bus.secret_name(r), "key": "nkey"} for r in cli_bus.DEPLOYED_ROLES
    }
    assert sts["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == config["metadata"]["name"]
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


def test_kustomizations_stay_within_kustomize_2_0_3() -> None:
    """kubectl 1.20 embeds kustomize v2.0.3: no directories in `resources:`, no `labels:`,
    `patches:`, `replicas:` or inline patches."""
    for path in (BASE / "kustomization.yaml", DEV / "kustomization.yaml", LOCAL_NODE / "kustomization.yaml"):
        k = yaml.safe_load(path.read_text())
        assert not {"labels", "patches", "replicas", "components"} & set(k), path
        for entry in k.get("resources", []):
            assert (path.parent / entry).is_file(), (path, entry)
        for entry in k.get("patchesStrategicMerge", []):
            assert "\n" not in entry and (path.parent / entry).is_file(), (path, entry)
    assert yaml.safe_load((BASE / "kustomization.yaml").read_text())["bases"] == ["../crds"]


def test_dev_overlay_renders(base: list[Obj]) -> None:
    dev = render(DEV)
    assert {(o["kind"], o["metadata"]["name"]) for o in dev} == {
        (o["kind"], o["metadata"]["name"]) for o in base
    }
    for name, dep in of_kind(dev, "Deployment").items():
        assert [c["image"] for c in containers(dep)] == [f"{name}:dev"]
        assert dep["spec"]["replicas"] == 1
    for hpa in of_kind(dev, "HorizontalPodAutoscaler").values():
        assert hpa["spec"]["minReplicas"] == 1


LOCAL_NODE_ENV = {
    "AIM_NATS_URL": "nats://127.0.0.1:4222",
    "AIM_DOWNLOADER_NATS_URL": "nats://10.244.76.1:4222",
    "AIM_OUTBOUND_ALLOWED_HOSTS": "127.0.0.1,10.244.76.1",
}


def without_local_node_settings(obj: Obj) -> tuple[Obj, dict[str, str]]:
    """``obj`` without what the local-node overlay may set, and the settings it had."""
    obj = copy.deepcopy(obj)
    found: dict[str, str] = {}
    if obj["kind"] in ("Deployment", "StatefulSet"):
        pod = obj["spec"]["template"]["spec"]
        found["hostNetwork"] = str(pod.pop("hostNetwork", False))
        for c in pod["containers"]:
            found[f"image:{c['name']}"] = c.pop("image")
            for e in c.get("env", []):
                if e["name"] in LOCAL_NODE_ENV:
                    found[e["name"]] = e.get("value", "")
            c["env"] = [e for e in c.get("env", []) if e["name"] not in LOCAL_NODE_ENV]
    return obj, found


def test_local_node_overlay_changes_only_images_host_networking_and_addresses(base: list[Obj]) -> None:
    """What the node tier and `aimctl up --node` run is deploy/base: the overlay may set image
    names, host networking and addresses (docs/node.md), and nothing else."""
    local = {(o["kind"], o["metadata"]["name"]): o for o in render(LOCAL_NODE)}
    assert set(local) == {(o["kind"], o["metadata"]["name"]) for o in base}
    for original in base:
        key = (original["kind"], original["metadata"]["name"])
        stripped, settings = without_local_node_settings(local[key])
        assert stripped == without_local_node_settings(original)[0], key
        if key == ("StatefulSet", "aim-nats"):
            assert settings == {"hostNetwork": "True", "image:nats": "localhost/aim/nats:local"}
        elif key[0] == "Deployment":
            service = key[1].removeprefix("aim-")
            expected = {"hostNetwork": "True", f"image:{service}": f"aim-{service}:0.1.0"}
            expected["AIM_NATS_URL"] = LOCAL_NODE_ENV["AIM_NATS_URL"]
            if service in ("discovery", "registry-sync", "cache"):
                expected["AIM_OUTBOUND_ALLOWED_HOSTS"] = LOCAL_NODE_ENV["AIM_OUTBOUND_ALLOWED_HOSTS"]
            if service == "cache":
                expected["AIM_DOWNLOADER_NATS_URL"] = LOCAL_NODE_ENV["AIM_DOWNLOADER_NATS_URL"]
            assert settings == expected, key


# -- against the real API server -----------------------------------------------------------------


async def ensure_namespace(kube: Kube, name: str) -> None:
    try:
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiException as exc:
        if exc.status != 409:
            raise


@pytest.mark.cluster
async def test_server_dry_run_accepts_the_base(
    aim_cluster: ControlPlane, kube: Kube, base: list[Obj]
) -> None:
    await ensure_namespace(kube, SYSTEM_NS)  # a dry-run Namespace does not exist for the objects in it
    out = run_kubectl(
        "apply",
        "--dry-run=server",
        "--validate=false",
        "-k",
        str(BASE),
        kubeconfig=aim_cluster.kubeconfig_path,
    )
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
    assert len(listed) == len(base)


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


@pytest.mark.cluster
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
            ("deployer", "create", "inferenceservices.serving.kserve.io"),
            ("deployer", "patch", "httproutes.gateway.networking.k8s.io"),
            ("deployer", "delete", "httproutes.gateway.networking.k8s.io"),
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
            ("registry-sync", "create", "aimclustermodels.aim.eai.amd.com"),
            ("status", "create", "events"),
            ("status", "patch", "events"),
        ]
        no = [
            ("watcher", "create", "aimservices.aim.eai.amd.com"),
            ("watcher", "get", "secrets"),
            ("status", "patch", "aimservices.aim.eai.amd.com"),
            ("status", "list", "aimservices.aim.eai.amd.com"),
            ("status", "delete", "events"),
            ("status", "list", "events"),
            *((svc, "create", "events") for svc in SERVICES if svc != "status"),
            ("deployer", "list", "inferenceservices.serving.kserve.io"),
            ("deployer", "patch", "scaledobjects.keda.sh"),
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
    assert nats["image"].startswith("nats:2.10") and "-js" in nats["command"]
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
    # sources: the runtime library and the service; of the rest of the workspace, manifests only
    assert {c for c in copied if not c.endswith("pyproject.toml")} == {"libs/aimcore", "services/${SERVICE}"}
    assert "USER 65532" in dockerfile
    assert re.search(r"^ENV PATH=/app/\.venv/bin:", dockerfile, re.M)
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".git", ".venv", "tests"} <= ignored
    # The Deployments' commands are console scripts the images install.
    assert {f"aim-{svc}" for svc in SERVICES} <= console_scripts()
