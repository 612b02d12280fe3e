"""The cache service in Job mode on a control plane and NATS of the test's own, the test playing
the kubelet (:class:`aim_dev.testing.kubelet.FakeKubelet`) and the volume provisioner: the harness
of ``test_cache_jobs.py`` and ``test_storage_quotas.py`` (the ``cluster`` fixture is in
``conftest.py``)."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aim_cache.plan import job_name, pvc_name
from aim_dev.local.deployed import PERSISTENT_VOLUME, host_path_volume
from aim_dev.testing.kubelet import FakeKubelet, bind_pod, finish_pod, wait_for_service_account
from aim_dev.testing.plugin import LocalServers
from aimcore.api.kinds import JOB, NAMESPACE, POD, PVC, KindRef
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import eventually, manifest, status_of
from tests.integration.conftest import Services


class Cluster:
    def __init__(self, servers: LocalServers, services: Services, kube: Kube, kubelet: FakeKubelet) -> None:
        self.servers = servers
        self.services = services
        self.kube = kube
        self.kubelet = kubelet


@contextlib.asynccontextmanager
async def start(private_stack: LocalServers) -> AsyncIterator[Cluster]:
    """The services and the fake kubelet on ``private_stack`` (the ``cluster`` fixture)."""
    services = Services(private_stack, private_stack.workdir / "logs")
    for name in ("watcher", "status"):
        services.start(name)
    services.start("cache", env={"AIM_CACHE_EXECUTOR": "job"})
    kube = Kube(await connect(private_stack.kubeconfig), field_manager="aim-tests")
    kubelet = await FakeKubelet().start()
    try:
        await kubelet.register_node(kube, "node-1")
        yield Cluster(private_stack, services, kube, kubelet)
        services.assert_alive()
    finally:
        await kubelet.cleanup(kube)
        await kubelet.stop()
        await kube.close()
        services.stop_all()


async def new_namespace(kube: Kube) -> str:
    name = f"t-{secrets.token_hex(3)}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    await wait_for_service_account(kube, name)
    return name


async def job_pod(kube: Kube, namespace: str, job: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        items, _ = await kube.list(POD, namespace)
        return next((p for p in items if (p["metadata"].get("labels") or {}).get("job-name") == job), None)

    pod: dict[str, Any] = await eventually(probe, timeout=30, what=f"the pod of Job {job}")
    return pod


async def get(kube: Kube, ref: Any, namespace: str, name: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        return await kube.get(ref, namespace, name)

    obj: dict[str, Any] = await eventually(probe, timeout=30, what=f"{ref.kind} {name}")
    return obj


async def make_ready(
    cluster: Cluster, ref: KindRef, namespace: str, name: str, spec: dict[str, Any], **meta: Any
) -> dict[str, Any]:
    """A model cache of ``ref``'s kind made Ready as a kubelet and a provisioner would: its PVC
    bound to a volume made for it, its download pod run to a verified end. Returns the Ready
    object."""
    kube = cluster.kube
    created = await kube.create(ref, manifest(ref, name, namespace, spec, **meta), namespace)
    uid = created["metadata"]["uid"]
    claim = await get(kube, PVC, namespace, pvc_name(name, uid))
    # a volume reserved for the claim, for the PV controller to bind (never mounted: no kubelet)
    size = claim["spec"]["resources"]["requests"]["storage"]
    volume = host_path_volume(
        f"pv-{namespace}-{name}", Path("/nonexistent"), size, claim=(namespace, claim["metadata"]["name"])
    )
    await kube.create(PERSISTENT_VOLUME, volume)
    await status_of(
        kube,
        PVC,
        namespace,
        claim["metadata"]["name"],
        lambda s: s.get("phase") == "Bound",
        f"{name}'s claim bound",
    )
    job = job_name(name, uid, 1)
    await get(kube, JOB, namespace, job)
    pod = await job_pod(kube, namespace, job)
    await bind_pod(kube, namespace, pod["metadata"]["name"], "node-1")
    verdict = {"result": "ok", "files": 1, "bytes": 1024, "verified": ["sha256"]}
    cluster.kubelet.set_log(namespace, pod["metadata"]["name"], "download", json.dumps(verdict) + "\n")
    await finish_pod(kube, namespace, pod["metadata"]["name"], exit_code=0)
    ready: dict[str, Any] = await status_of(
        kube, ref, namespace, name, lambda s: s.get("status") == "Ready", f"{name} Ready"
    )
    return ready
