"""The real node (kubelet, kube-scheduler, containerd, runc, bridge CNI in private namespaces) on a
control plane of its own: a Pod from the locally built ``aim-test-model`` image is scheduled, runs,
and turns Ready through a readiness probe on its health endpoint; ``kubectl logs`` and
``kubectl exec`` reach it through the API server; the operator's own discovery Job body runs the
image's ``dry-run --format=json`` to completion with the expected JSON in its log. Then the node is
stopped and nothing of it is left on the host. And a node whose owner is killed -9 (its containers
outlive it) is removed by the next :func:`reap_stale`.

These tests need root (namespaces, cgroups) and the images ``scripts/bootstrap.sh`` builds."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import secrets
import signal
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from aim_dev import images, testmodel
from aim_dev.local.cluster import ControlPlane
from aim_dev.node import Node, host, reap_stale, registered
from aim_dev.node import config as node_config
from aim_dev.testing.kubelet import wait_for_service_account
from aim_discovery.dryrun import job_body, parse_output
from aimcore.api.kinds import JOB, NAMESPACE, POD, KindRef
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import eventually, kubectl

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the real node needs root (namespaces, cgroups)")

CONFIG_MAP = KindRef("", "v1", "ConfigMap", "configmaps", True)
NODE_IMAGES = ["pause", "test-model"]


@pytest.fixture(scope="session")
def node_images() -> list[Path]:
    """The node's image tarballs, rebuilt first if their inputs changed (the bootstrap built them;
    an edit of the test model since then costs a few seconds here)."""
    return [b.tarball for b in images.build(NODE_IMAGES)]


def assert_nothing_left(node_id: str, workdir: Path) -> None:
    assert host.node_processes(node_id) == []
    assert not host.netns_exists(node_id)
    assert host.node_cgroups(node_id) == []
    assert host.mounts_under(workdir) == []
    assert node_id not in {r["id"] for r in registered()}
    assert sorted(p.name for p in workdir.iterdir()) == ["logs"]  # only the logs are kept


@pytest.fixture
def control_plane(tmp_path: Path) -> Iterator[ControlPlane]:
    """A control plane of the test's own: a real scheduler must not see other tiers' pods."""
    cp = ControlPlane(tmp_path / "cluster")
    try:
        yield cp.start()
    finally:
        cp.stop()


@pytest.fixture
async def kube(control_plane: ControlPlane) -> AsyncIterator[Kube]:
    client = Kube(await connect(str(control_plane.kubeconfig_path)), field_manager="aim-tests")
    try:
        yield client
    finally:
        await client.close()


async def new_namespace(kube: Kube) -> str:
    name = f"t-{secrets.token_hex(4)}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    await wait_for_service_account(kube, name)
    return name


def model_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "kserve-container",
                    "image": testmodel.IMAGE,
                    "imagePullPolicy": "Never",
                    "env": [{"name": "AIM_TEST_MODEL_LOAD_SECONDS", "value": "1"}],
                    "ports": [{"name": "http", "containerPort": testmodel.PORT}],
                    "readinessProbe": {
                        "httpGet": {"path": "/health", "port": testmodel.PORT},
                        "periodSeconds": 1,
                    },
                    "securityContext": {
                        "runAsNonRoot": True,
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ]
        },
    }


def condition(obj: dict[str, Any], type_: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return str(c["status"])
    return None


async def pod_ready(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def probe() -> dict[str, Any] | None:
        pod = seen["pod"] = await kube.get(POD, namespace, name)
        if pod and pod["status"].get("phase") == "Running" and condition(pod, "Ready") == "True":
            return pod
        return None

    try:
        return await eventually(probe, timeout=90, interval=0.2, what=f"pod {name} Running and Ready")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nstatus: {json.dumps((seen.get('pod') or {}).get('status'))}") from None


async def test_pod_and_discovery_job_run_on_a_real_node_and_nothing_is_left(
    tmp_path: Path, control_plane: ControlPlane, kube: Kube, node_images: list[Path]
) -> None:
    kubeconfig = control_plane.kubeconfig_path
    node = Node(tmp_path / "node", kubeconfig, images=node_images)
    try:
        await asyncio.to_thread(node.start)
        present = node.images_present()
        assert images.PAUSE_REF in present and testmodel.IMAGE in present
        namespace = await new_namespace(kube)

        # A model server Pod: scheduled by the real scheduler, started by the kubelet, Ready only
        # once its readiness probe on /health passes (the server answers 503 while "loading").
        await kube.create(POD, model_pod("model"), namespace)
        pod = await pod_ready(kube, namespace, "model")
        assert pod["spec"]["nodeName"] == node.node_name
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(node_config.POD_SUBNET)
        logs = kubectl("logs", "-n", namespace, "model", kubeconfig=kubeconfig)
        assert f"serving {testmodel.CANONICAL_NAME} on 0.0.0.0:{testmodel.PORT}" in logs
        assert '"GET /health HTTP/1.1" 200' in logs  # the kubelet's probe
        url = f"http://127.0.0.1:{testmodel.PORT}/v1/models"
        fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}).read().decode())"
        models = kubectl(
            "exec", "-n", namespace, "model", "--", "python3", "-c", fetch, kubeconfig=kubeconfig
        )
        assert [m["id"] for m in json.loads(models)["data"]] == [testmodel.CANONICAL_NAME]

        # The discovery Job exactly as the operator builds it (hardened, uid 65532, owned by its
        # template; here a ConfigMap stands in as the owner the garbage collector checks).
        owner = await kube.create(
            CONFIG_MAP, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tpl"}}, namespace
        )
        body = job_body(
            name="discover-tpl-0123abcd-0",
            namespace=namespace,
            template_name="tpl",
            template_namespace=namespace,
            image=testmodel.IMAGE,
            image_pull_secrets=[],
            service_account=None,
            env=[{"name": "AIM_LOG_LEVEL", "value": "CRITICAL"}],
            owner={
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "tpl",
                "uid": owner["metadata"]["uid"],
                "controller": True,
            },
            spec_hash="0123abcd",
            attempt=0,
            metric="throughput",
            precision="fp8",
        )
        await kube.create(JOB, body, namespace)

        async def complete() -> dict[str, Any] | None:
            job = await kube.get(JOB, namespace, body["metadata"]["name"])
            assert job is not None and condition(job, "Failed") != "True", json.dumps(job)
            return job if condition(job, "Complete") == "True" else None

        await eventually(complete, timeout=90, interval=0.2, what="the discovery Job to complete")
        log = kubectl("logs", "-n", namespace, f"job/{body['metadata']['name']}", kubeconfig=kubeconfig)
        expected = testmodel.server.discovery_output(
            {"AIM_METRIC": "throughput", "AIM_PRECISION": "fp8", "AIM_LOG_LEVEL": "CRITICAL"}
        )
        assert json.loads(log) == expected
        result = parse_output(log)
        assert result.profile["metadata"]["metric"] == "throughput"
        assert result.model_sources[0]["sourceUri"] == f"hf://{testmodel.CANONICAL_NAME}"
    finally:
        await asyncio.to_thread(node.stop)
    assert_nothing_left(node.node_id, node.workdir)
    node.stop()  # idempotent
    assert_nothing_left(node.node_id, node.workdir)


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


CRASHING_OWNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from aim_dev import images
    from aim_dev.node import Node
    node = Node(Path(sys.argv[1]), Path(sys.argv[2]), images=images.tarballs(["pause", "test-model"]))
    node.start()
    print(node.node_id, node.node_name, flush=True)
    time.sleep(600)
    """
)


async def test_a_node_whose_owner_was_killed_is_reaped(
    tmp_path: Path, control_plane: ControlPlane, kube: Kube, node_images: list[Path]
) -> None:
    workdir = tmp_path / "node"
    owner = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASHING_OWNER,
        str(workdir),
        str(control_plane.kubeconfig_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    node_id = ""
    try:
        assert owner.stdout is not None and owner.stderr is not None
        line = (await asyncio.wait_for(owner.stdout.readline(), 180)).decode()
        assert line, f"the owner exited: {(await owner.stderr.read()).decode()}"
        node_id, _ = line.split()
        namespace = await new_namespace(kube)
        await kube.create(POD, model_pod("survivor"), namespace)
        await pod_ready(kube, namespace, "survivor")
        assert node_id in {r["id"] for r in registered()}

        owner.send_signal(signal.SIGKILL)
        await owner.wait()

        # The daemons died with their parent; the container and its shim did not.
        async def only_containers_left() -> list[int] | None:
            pids = host.node_processes(node_id)
            names = {comm(p) for p in pids}
            return pids if pids and not names & {"kubelet", "containerd", "kube-scheduler"} else None

        await eventually(only_containers_left, timeout=30, what="only the containers to outlive the owner")
        assert host.netns_exists(node_id)
        assert host.node_cgroups(node_id)

        assert node_id in reap_stale()
        assert_nothing_left(node_id, workdir)
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()
        if node_id:
            reap_stale()
