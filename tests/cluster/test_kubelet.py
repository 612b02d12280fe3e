"""The fake kubelet against the real kube-apiserver and kube-controller-manager: the API server finds it
through the Node's addresses and kubelet port and fetches ``/containerLogs/{ns}/{pod}/{container}``
from it (``Kube.pod_log`` and ``kubectl logs``); the Job controller's pods, bound and finished by the
test, drive their Jobs to Complete and Failed; the nodes stay Ready and untainted."""

from __future__ import annotations

import asyncio
import json
import secrets

import pytest

from aim_dev.local.cluster import ControlPlane
from aim_dev.testing.kubelet import (
    FakeKubelet,
    bind_pod,
    finish_pod,
    set_waiting,
    start_pod,
    wait_for_service_account,
)
from aimcore.api.kinds import JOB, NODE, POD
from aimcore.api.types import Obj
from aimcore.runtime import ApiException, Kube
from tests import helpers

LOG = 'line one\n{"json": "line", "n": 2}\nline three\n42\nlast line\n'


def node_name() -> str:
    return f"fake-node-{secrets.token_hex(4)}"


def pod_manifest(name: str, *containers: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": c, "image": "busybox:1.36"} for c in containers],
        },
    }


def job_manifest(name: str) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
                }
            },
        },
    }


async def test_pod_log_through_the_api_server(kube: Kube, namespace: str, kubelet: FakeKubelet) -> None:
    node = node_name()
    registered = await kubelet.register_node(kube, node, labels={"amd.com/gpu": "true"})
    assert registered["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == kubelet.port
    await wait_for_service_account(kube, namespace)
    await kube.create(POD, pod_manifest("p", "main", "sidecar"), namespace)

    # Unbound: the API server answers an empty log without asking any kubelet.
    assert await kube.pod_log(namespace, "p", container="main") == ""
    assert kubelet.log_requests(namespace, "p") == []

    await bind_pod(kube, namespace, "p", node)
    pod = await kube.get(POD, namespace, "p")
    assert pod is not None and pod["spec"]["nodeName"] == node
    kubelet.set_log(namespace, "p", "main", LOG)
    kubelet.set_log(namespace, "p", "sidecar", "sidecar says hi\n")

    # Raw text, even where a line is valid JSON.
    assert await kube.pod_log(namespace, "p", container="main") == LOG
    assert await kube.pod_log(namespace, "p", container="sidecar") == "sidecar says hi\n"
    assert await kube.pod_log(namespace, "p", container="main", tail_lines=2) == "42\nlast line\n"
    assert await kube.pod_log(namespace, "p", container="main", tail_lines=0) == ""
    assert await kube.pod_log(namespace, "p", container="main", limit_bytes=6) == "line o"
    assert await kube.pod_log(namespace, "p", container="main", tail_lines=1, limit_bytes=4) == "last"

    requests = kubelet.log_requests(namespace, "p", "main")
    assert [r.path for r in requests] == [f"/containerLogs/{namespace}/p/main"] * 5
    assert requests[1].query == {"tailLines": "2"}
    assert requests[3].query == {"limitBytes": "6"}

    # A container without a log: the kubelet's 404 comes back through the API server.
    kubelet.clear_log(namespace, "p", "sidecar")
    with pytest.raises(ApiException) as missing:
        await kube.pod_log(namespace, "p", container="sidecar")
    assert missing.value.status == 404  # the API server drops a 404's body: a generic message
    status = json.loads(missing.value.body or "{}")
    assert status["reason"] == "NotFound"
    assert status["message"] == "the server could not find the requested resource ( pods/log p)"

    # A 400 (a real kubelet's answer for a container not started yet) keeps the kubelet's message.
    waiting = 'container "sidecar" in pod "p" is waiting to start: ContainerCreating'
    kubelet.set_log_error(namespace, "p", "sidecar", 400, waiting)
    with pytest.raises(ApiException) as not_started:
        await kube.pod_log(namespace, "p", container="sidecar")
    assert not_started.value.status == 400
    assert json.loads(not_started.value.body or "{}")["message"] == waiting

    # The API server itself rejects an unknown container and an unnamed one in a two-container pod.
    with pytest.raises(ApiException) as unknown:
        await kube.pod_log(namespace, "p", container="nope")
    assert unknown.value.status == 400
    with pytest.raises(ApiException) as unnamed:
        await kube.pod_log(namespace, "p")
    assert unnamed.value.status == 400
    assert len(kubelet.log_requests(namespace, "p")) == 8  # neither reached the kubelet

    # The node the pod runs on is Ready and untainted (no node lifecycle controller).
    fetched = await kube.get(NODE, None, node)
    assert fetched is not None
    assert {c["type"]: c["status"] for c in fetched["status"]["conditions"]} == {"Ready": "True"}
    assert not fetched["spec"].get("taints")
    assert fetched["metadata"]["labels"]["amd.com/gpu"] == "true"


async def test_pod_log_single_container_and_previous(
    kube: Kube, namespace: str, kubelet: FakeKubelet
) -> None:
    node = node_name()
    await kubelet.register_node(kube, node)
    await wait_for_service_account(kube, namespace)
    await kube.create(POD, pod_manifest("solo", "only"), namespace)
    await bind_pod(kube, namespace, "solo", node)
    kubelet.set_log(namespace, "solo", "only", "current\n")
    kubelet.set_log(namespace, "solo", "only", "crashed\n", previous=True)
    assert await kube.pod_log(namespace, "solo") == "current\n"  # the only container is the default
    assert kubelet.requests[-1].container == "only"
    # kube.pod_log has no `previous`; the fake honours it
    text = await kube.text(f"/api/v1/namespaces/{namespace}/pods/solo/log", query=[("previous", "true")])
    assert text == "crashed\n"
    assert kubelet.requests[-1].query == {"previous": "true"}


async def test_kubectl_logs(
    aim_cluster: ControlPlane, kube: Kube, namespace: str, kubelet: FakeKubelet
) -> None:
    node = node_name()
    await kubelet.register_node(kube, node)
    await wait_for_service_account(kube, namespace)
    await kube.create(POD, pod_manifest("web", "server"), namespace)
    await bind_pod(kube, namespace, "web", node)
    await start_pod(kube, namespace, "web")
    kubelet.set_log(namespace, "web", "server", LOG)

    def kubectl(*args: str) -> str:
        return helpers.kubectl(*args, kubeconfig=aim_cluster.kubeconfig_path)

    # kubectl blocks; run it off the event loop that serves the fake kubelet.
    out = await asyncio.to_thread(kubectl, "logs", "-n", namespace, "web")
    assert out == LOG
    out = await asyncio.to_thread(kubectl, "logs", "-n", namespace, "web", "-c", "server", "--tail=1")
    assert out == "last line\n"
    out = await asyncio.to_thread(kubectl, "logs", "-n", namespace, "web", "--timestamps", "--limit-bytes=30")
    assert out.startswith("20") and " line one\n" in out and len(out.encode()) == 30
    assert kubelet.requests[-1].query == {"timestamps": "true", "limitBytes": "30"}
    status = await asyncio.to_thread(
        kubectl, "get", "pod", "-n", namespace, "web", "-o", "jsonpath={.status.phase}/{.spec.nodeName}"
    )
    assert status == f"Running/{node}"


async def job_pod(kube: Kube, namespace: str, job: str) -> Obj:
    async def probe() -> Obj | None:
        pods, _ = await kube.list(POD, namespace, label_selector=f"job-name={job}")
        return pods[0] if pods else None

    return await helpers.eventually(probe, timeout=60, what=f"the Job controller to create {job}'s pod")


async def job_condition(kube: Kube, namespace: str, job: str, kind: str) -> Obj:
    async def probe() -> Obj | None:
        obj = await kube.get(JOB, namespace, job)
        conds = ((obj or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == kind and c["status"] == "True"), None)

    return await helpers.eventually(probe, timeout=60, what=f"Job {job} to be {kind}")


async def test_jobs_complete_and_fail_with_their_pods(
    kube: Kube, namespace: str, kubelet: FakeKubelet
) -> None:
    node = node_name()
    await kubelet.register_node(kube, node)
    await kube.create(JOB, job_manifest("ok"), namespace)
    await kube.create(JOB, job_manifest("bad"), namespace)

    ok, bad = await job_pod(kube, namespace, "ok"), await job_pod(kube, namespace, "bad")
    assert not ok["spec"].get("nodeName")  # no scheduler
    for pod in (ok, bad):
        await bind_pod(kube, namespace, pod["metadata"]["name"], node)

    # A pod waiting on its image keeps the Job active.
    await set_waiting(kube, namespace, bad["metadata"]["name"], "ImagePullBackOff", "Back-off pulling image")
    waiting = await kube.get(POD, namespace, bad["metadata"]["name"])
    assert waiting is not None
    state = waiting["status"]["containerStatuses"][0]["state"]
    assert state == {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}

    await start_pod(kube, namespace, ok["metadata"]["name"])
    kubelet.set_log(namespace, ok["metadata"]["name"], "main", "done\n")
    assert await kube.pod_log(namespace, ok["metadata"]["name"]) == "done\n"
    await finish_pod(kube, namespace, ok["metadata"]["name"], exit_code=0)
    complete = await job_condition(kube, namespace, "ok", "Complete")
    assert complete["status"] == "True"
    done = await kube.get(JOB, namespace, "ok")
    assert done is not None and done["status"].get("succeeded") == 1

    finished = await finish_pod(
        kube, namespace, bad["metadata"]["name"], exit_code=1, message="boom", container="main"
    )
    assert finished["status"]["phase"] == "Failed"
    terminated = finished["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated["message"]) == (1, "Error", "boom")
    failed = await job_condition(kube, namespace, "bad", "Failed")
    assert failed.get("reason") == "BackoffLimitExceeded"
    after = await kube.get(JOB, namespace, "bad")
    assert after is not None and after["status"].get("failed") == 1
    pods, _ = await kube.list(POD, namespace, label_selector="job-name=bad")
    assert len(pods) == 1  # backoffLimit 0: no retry pod


async def test_reregistering_and_cleanup(kube: Kube, namespace: str) -> None:
    node = node_name()
    async with FakeKubelet() as fake:
        await fake.register_node(kube, node, labels={"a": "1"})
        again = await fake.register_node(kube, node, labels={"b": "2"}, allocatable={"amd.com/gpu": "8"})
        assert fake.nodes == [node]
        labels = again["metadata"]["labels"]
        assert (labels["a"], labels["b"], labels["kubernetes.io/hostname"]) == ("1", "2", node)
        assert again["status"]["allocatable"]["amd.com/gpu"] == "8"
        assert again["status"]["capacity"]["pods"] == "110"
        assert not again["spec"].get("taints")

        await wait_for_service_account(kube, namespace)
        await kube.create(POD, pod_manifest("running", "main"), namespace)
        await bind_pod(kube, namespace, "running", node)
        await start_pod(kube, namespace, "running")
        # A bound, running pod outlives its deletion until its kubelet confirms it.
        await kube.delete(POD, namespace, "running")
        lingering = await kube.get(POD, namespace, "running")
        assert lingering is not None and lingering["metadata"].get("deletionTimestamp")

        await fake.cleanup(kube)
        assert fake.nodes == []
        assert await kube.get(NODE, None, node) is None
        assert await kube.get(POD, namespace, "running") is None
