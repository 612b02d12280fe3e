"""The cache service in Job mode (a real cluster's default) on a control plane and NATS of its own:
PVCs sized from the source's listing with the runtime config's headroom and storage class, download
Jobs the real Job controller runs, the downloader's verdict read from the pod log through the API
server (a fake kubelet serves it), progress from the pod through NATS to the status, and failures
that back off instead of storming.

The test plays the kubelet and the volume provisioner: it binds pods, serves their logs, finishes
them and marks PVCs Bound (or makes a volume on a local directory for the PV controller to bind);
for an ``oci://`` model it runs the Job's real downloader against a private registry."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any, cast

from nats.js.errors import NotFoundError

from aim_cache.modelcaches import bytes_were_in
from aim_cache.plan import job_name, pvc_name
from aim_cache_jobs.downloader import Progress, RateMeter, progress_report, protocols
from aim_dev.local.deployed import PERSISTENT_VOLUME, host_path_volume
from aim_dev.local.hub import HubServer, add_repo
from aim_dev.local.registry import Registry
from aim_dev.testing.kubelet import bind_pod, finish_pod
from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.bus import progress as bus_progress
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.kinds import JOB, PVC, SECRET, by_kind
from aimcore.runtime import Kube, Request, connect_bus
from aimcore.runtime.bus import BusSettings
from tests.file_server import FileServer
from tests.helpers import condition, eventually, has, manifest, status_of
from tests.integration.conftest import health_get
from tests.integration.jobmode import Cluster, get, job_pod, new_namespace
from tests.oci_models import pull_secret, push_docker_model, repo, tiny_gguf

AIM = "aim.eai.amd.com"
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
RUNTIME_CONFIG = by_kind(AIM, "AIMRuntimeConfig")
GIB = 1024**3
IMAGE = "ghcr.io/acme/aim-engine:test"
FIRST = protocols.first_attempt(protocols.DEFAULT)
FILES = {"config.json": b"{}", "model.safetensors": b"\x01" * 4096}


def pod_bus(job_env: dict[str, Any]) -> BusSettings:
    """How the download pod reaches the bus: exactly the Job's credentials."""
    return BusSettings(
        url=job_env["AIM_NATS_URL"],
        role="download",
        seed_file=None,
        seed=job_env["AIM_NATS_SEED"],
        tls_ca_file=None,
        tls_cert_file=None,
        tls_key_file=None,
    )


async def relayed_percentages(servers: LocalServers, ref: Any, ns: str, name: str) -> list[int]:
    """The progress percentages of the status reports on the object's subject, in stream order."""
    nc = await connect_as(servers.nats)
    try:
        js = nc.jetstream()
        subject = subjects.status_subject("cache", ref, ns, name)
        out, cursor = [], 1
        while True:
            try:
                raw = await js.get_msg(topology.STATUS_STREAM, seq=cursor, subject=subject, next=True)
            except NotFoundError:
                return out
            assert raw.seq is not None and raw.data is not None
            cursor = raw.seq + 1
            fields = StatusReport.model_validate_json(raw.data).fields
            if fields.get("progress"):
                out.append(int(fields["progress"]["percentage"]))
    finally:
        await nc.close()


async def test_pvc_job_progress_and_verdict(cluster: Cluster, hub_server: HubServer) -> None:
    kube = cluster.kube
    ns = await new_namespace(kube)
    repo = f"acme/job-{secrets.token_hex(3)}"
    add_repo(hub_server.root, repo, FILES)
    config = {"storage": {"defaultStorageClassName": "fast-rwx", "pvcHeadroomPercent": 20}}
    await kube.create(RUNTIME_CONFIG, manifest(RUNTIME_CONFIG, "default", ns, config), ns)
    spec = {
        "sourceUri": f"hf://{repo}",
        "modelDownloadImage": IMAGE,
        "env": [{"name": "HF_ENDPOINT", "value": hub_server.endpoint}],
    }
    created = await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "weights", ns, spec), ns)
    uid = created["metadata"]["uid"]

    # the PVC: sized from the Hub's listing plus 20% headroom (rounded up to 1 GiB), the config's class
    pvc = await get(kube, PVC, ns, pvc_name("weights", uid))
    assert pvc["spec"]["resources"]["requests"]["storage"] in ("1Gi", str(GIB))
    assert pvc["spec"]["storageClassName"] == "fast-rwx"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["metadata"]["ownerReferences"][0]["uid"] == uid
    pending = await status_of(
        kube, MODEL_CACHE, ns, "weights", has("StorageReady", "False", "PvcPending"), "PvcPending"
    )
    assert pending["status"]["persistentVolumeClaim"] == pvc["metadata"]["name"]

    # the download Job (attempt 1) runs the downloader of the given image
    name = job_name("weights", uid, 1)
    job = await get(kube, JOB, ns, name)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE and container["command"] == ["aim-download"]
    job_env = {e["name"]: e.get("value") for e in container["env"]}
    assert job_env["AIM_NATS_URL"] == cluster.servers.nats.url and job_env["AIM_NATS_ROLE"] == "download"
    # the downloader in the Job enforces the cache service's own outbound policy
    outbound = [e for e in container["env"] if e["name"].startswith("AIM_OUTBOUND_")]
    assert outbound == [
        {"name": "AIM_OUTBOUND_ALLOWED_HOSTS", "value": "127.0.0.1,localhost"},
        {"name": "AIM_OUTBOUND_ALLOW_PRIVATE", "value": "false"},
    ]

    # progress from the pod: offered with exactly the Job's credentials and token, relayed by the
    # cache service, written by the status service, with rate and ETA
    nc = await connect_bus(pod_bus(job_env), "test-download-pod", forever=False)
    try:
        target = ObjectRef.of(MODEL_CACHE, ns, "weights")
        meter = RateMeter()
        now = time.monotonic()
        meter.add(now - 10, 0)
        meter.add(now, 2048)
        progress = Progress(
            downloaded_bytes=2048, total_bytes=4098, files_done=1, files_total=2, phase="downloading"
        )
        report = progress_report(target, uid, progress, meter, now=now, attempt=FIRST)
        # first a forgery with the same key but a made-up token: the cache service drops it
        forged = progress_report(
            target,
            uid,
            Progress(
                downloaded_bytes=4000, total_bytes=4098, files_done=1, files_total=2, phase="downloading"
            ),
            meter,
            now=now,
            attempt=FIRST,
        )
        await nc.publish(
            bus_progress.subject(target), forged.encode(), headers={bus_progress.TOKEN_HEADER: "f" * 64}
        )
        headers = {bus_progress.TOKEN_HEADER: job_env["AIM_PROGRESS_TOKEN"]}
        await nc.publish(bus_progress.subject(target), report.encode(), headers=headers)
        await nc.flush()
    finally:
        await nc.close()
    moving = await status_of(
        kube,
        MODEL_CACHE,
        ns,
        "weights",
        lambda s: (s.get("progress") or {}).get("percentage") == 49,
        "progress",
    )
    assert moving["status"]["progress"]["bytesPerSecond"] > 0
    assert moving["status"]["progress"]["displayEta"]
    # the relay handles offers in order: the forged one (97 %) came first and never became a report
    assert await relayed_percentages(cluster.servers, MODEL_CACHE, ns, "weights") == [49]
    # the relayed offer's bytes are counted on the cache service's /metrics, the forged one's not
    status, text = await health_get(cluster.services, "cache", "/metrics")
    assert status == 200 and 'aim_download_bytes_total{via="job"} 2048.0' in text, text[-2000:]

    # the kubelet's part: the volume binds, the pod runs and prints its verdict, then succeeds
    await kube.patch_status(PVC, ns, pvc["metadata"]["name"], {"status": {"phase": "Bound"}})
    pod = await job_pod(kube, ns, name)
    await bind_pod(kube, ns, pod["metadata"]["name"], "node-1")
    verdict = {
        "result": "ok",
        "files": 2,
        "bytes": 4098,
        "revision": "a" * 40,
        "verified": ["sha256", "git-sha1"],
    }
    cluster.kubelet.set_log(
        ns, pod["metadata"]["name"], "download", "downloading...\n" + json.dumps(verdict) + "\n"
    )
    await finish_pod(kube, ns, pod["metadata"]["name"], exit_code=0)
    ready = await status_of(kube, MODEL_CACHE, ns, "weights", lambda s: s.get("status") == "Ready", "Ready")
    download = condition(ready["status"], "DownloadReady")
    assert download["reason"] == "Verified"
    assert download["message"].startswith("4 KiB in 2 files; verified: sha256, git-sha1")
    assert ready["status"]["progress"]["percentage"] == 100
    assert condition(ready["status"], "StorageReady")["reason"] == "PvcBound"
    # the succeeded Job is the record: nothing is downloaded again
    jobs, _ = await kube.list(JOB, ns)
    assert [j["metadata"]["name"] for j in jobs] == [name]


async def test_a_failed_download_backs_off_and_a_deleted_job_retries(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = await new_namespace(kube)
    spec = {"sourceUri": "hf://acme/private", "size": "2Gi", "modelDownloadImage": IMAGE}
    created = await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "private", ns, spec), ns)
    uid = created["metadata"]["uid"]
    pvc = await get(kube, PVC, ns, pvc_name("private", uid))
    assert pvc["spec"]["resources"]["requests"]["storage"] in ("3Gi", str(3 * GIB))  # 2 GiB + 10% → 3 GiB
    assert "storageClassName" not in pvc["spec"]  # the cluster default
    name = job_name("private", uid, 1)
    await get(kube, JOB, ns, name)
    pod = await job_pod(kube, ns, name)
    await bind_pod(kube, ns, pod["metadata"]["name"], "node-1")
    verdict = {"result": "error", "reason": "AuthError", "message": "401 from the Hub: check HF_TOKEN"}
    cluster.kubelet.set_log(ns, pod["metadata"]["name"], "download", json.dumps(verdict) + "\n")
    await finish_pod(kube, ns, pod["metadata"]["name"], exit_code=1)
    failed = await status_of(
        kube, MODEL_CACHE, ns, "private", lambda s: s.get("status") == "Failed", "Failed"
    )
    download = condition(failed["status"], "DownloadReady")
    assert download["reason"] == "AuthError"
    assert "check HF_TOKEN" in download["message"]
    assert "next attempt at" in download["message"]  # an hour: only a user can fix credentials
    assert condition(failed["status"], "SourceReady")["reason"] == "AuthError"
    jobs, _ = await kube.list(JOB, ns)
    assert [j["metadata"]["name"] for j in jobs] == [name]  # kept for its log; no new attempt yet

    # deleting the failed Job is the way to retry now
    await kube.delete(JOB, ns, name)

    async def retried() -> bool:
        items, _ = await kube.list(JOB, ns)
        return any(j["metadata"]["uid"] != failed_uid(jobs) for j in items)

    def failed_uid(items: list[dict[str, Any]]) -> str:
        return str(items[0]["metadata"]["uid"])

    await eventually(retried, timeout=30, what="a new download Job")
    # the new attempt's pod waits for a node (nobody binds it this time), and the status says so
    await status_of(
        kube, MODEL_CACHE, ns, "private", has("DownloadReady", "False", "PodsPending"), "PodsPending"
    )


async def test_the_service_never_lists_a_source_the_outbound_policy_refuses(
    cluster: Cluster, other_host: FileServer
) -> None:
    """Sizing the volume lists the source from the operator's own pod: a Hub endpoint on a host the
    operator does not allow is refused there (``AddressNotAllowed``), and no PVC or Job is made."""
    kube = cluster.kube
    ns = await new_namespace(kube)
    spec = {
        "sourceUri": "hf://acme/m",
        "modelDownloadImage": IMAGE,
        "env": [{"name": "HF_ENDPOINT", "value": other_host.base}],
    }
    await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "refused", ns, spec), ns)
    failed = await status_of(
        kube, MODEL_CACHE, ns, "refused", has("SourceReady", "False", "AddressNotAllowed"), "refused"
    )
    assert "127.0.0.2 (loopback)" in condition(failed["status"], "SourceReady")["message"]
    assert other_host.requests == []
    assert (await kube.list(JOB, ns))[0] == [] and (await kube.list(PVC, ns))[0] == []


async def test_a_pvc_or_job_the_api_server_refuses_is_a_condition_not_a_loop(cluster: Cluster) -> None:
    """The CRD takes any storage class name and any variable name; the API server refuses a PVC
    whose class is not a DNS name and a Job whose variable is not a C identifier. Each refusal is
    the step's condition with the server's message (the cache Failed), the body is not sent again,
    and a spec the server accepts goes on (issue 26: before, the refused PVC was retried forever
    with no condition)."""
    kube = cluster.kube
    ns = await new_namespace(kube)
    spec = {
        "sourceUri": "hf://acme/m",
        "size": "1Gi",
        "modelDownloadImage": IMAGE,
        "storageClassName": "Not_Valid",
    }
    created = await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "refused", ns, spec), ns)
    failed = await status_of(
        kube, MODEL_CACHE, ns, "refused", has("StorageReady", "False", "PvcCreateRejected"), "PVC refused"
    )
    assert failed["status"]["status"] == "Failed"
    message = condition(failed["status"], "StorageReady")["message"]
    assert "refused to create PersistentVolumeClaim" in message and "storageClassName" in message
    assert (await kube.list(PVC, ns))[0] == [] and (await kube.list(JOB, ns))[0] == []

    # a class the server accepts: the PVC is made (nothing remembered the old refusal for it),
    # then the download Job is refused for its variable's name
    created["spec"].update(storageClassName="standard", env=[{"name": "1-BAD", "value": "x"}])
    await kube.patch(MODEL_CACHE, ns, "refused", {"spec": created["spec"]})
    refused = await status_of(
        kube,
        MODEL_CACHE,
        ns,
        "refused",
        has("DownloadReady", "False", "DownloadJobCreateRejected"),
        "Job refused",
    )
    assert refused["status"]["status"] == "Failed"
    assert "1-BAD" in condition(refused["status"], "DownloadReady")["message"]
    pvcs, _ = await kube.list(PVC, ns)
    assert [p["spec"].get("storageClassName") for p in pvcs] == ["standard"]
    assert (await kube.list(JOB, ns))[0] == []

    await kube.patch(MODEL_CACHE, ns, "refused", {"spec": {"env": [{"name": "GOOD", "value": "x"}]}})
    await get(kube, JOB, ns, job_name("refused", created["metadata"]["uid"], 1))


async def container_env(kube: Kube, namespace: str, container: dict[str, Any]) -> dict[str, str]:
    """The container's env as the kubelet gives it: values, and secret keys read from the Secrets."""
    env: dict[str, str] = {}
    for entry in container["env"]:
        ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
        if ref is None:
            env[entry["name"]] = entry.get("value", "")
            continue
        secret = await kube.get(SECRET, namespace, ref["name"])
        assert secret is not None, ref
        env[entry["name"]] = base64.b64decode(secret["data"][ref["key"]]).decode()
    return env


async def test_an_oci_model_is_downloaded_by_its_job_with_the_pull_secret(
    cluster: Cluster, oci_registry_auth: Registry, tmp_path: Path
) -> None:
    """Job mode end to end: the PVC sized from the private registry's listing (the pull secret used
    by the service), the Job given the secret as ``AIM_OCI_PULL_SECRET_0``; the test's kubelet runs
    the Job's real downloader with the pod's env on a directory standing for the volume."""
    kube = cluster.kube
    ns = await new_namespace(kube)
    gguf = tiny_gguf(tmp_path / "push")
    pushed = push_docker_model(oci_registry_auth, repo(), "q4", gguf, "MIT")
    await kube.create(SECRET, pull_secret(oci_registry_auth, "regcred"), ns)
    spec = {
        "sourceUri": pushed.uri,
        "modelId": "models/tiny",
        "modelDownloadImage": IMAGE,
        "imagePullSecrets": [{"name": "regcred"}],
    }
    created = await kube.create(MODEL_CACHE, manifest(MODEL_CACHE, "oci", ns, spec), ns)
    uid = created["metadata"]["uid"]
    pvc = await get(kube, PVC, ns, pvc_name("oci", uid))
    assert pvc["spec"]["resources"]["requests"]["storage"] in ("1Gi", str(GIB))
    job = await get(kube, JOB, ns, job_name("oci", uid, 1))
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["imagePullSecrets"] == [{"name": "regcred"}]
    (container,) = pod_spec["containers"]
    secret_ref = {"secretKeyRef": {"name": "regcred", "key": ".dockerconfigjson"}}
    assert {"name": "AIM_OCI_PULL_SECRET_0", "valueFrom": secret_ref} in container["env"]

    # the provisioner's part: a volume on a directory here, which the PV controller binds to the
    # claim; the kubelet's: the pod runs the downloader on that directory and exits
    volume = tmp_path / "volume"
    volume.mkdir()
    claim = (ns, pvc["metadata"]["name"])
    await kube.create(PERSISTENT_VOLUME, host_path_volume(f"pv-{ns}", volume, "1Gi", claim=claim))
    try:
        await status_of(kube, PVC, ns, claim[1], lambda s: s.get("phase") == "Bound", "the claim bound")
        await run_download_pod(cluster, ns, job["metadata"]["name"], volume)
        ready = await status_of(kube, MODEL_CACHE, ns, "oci", lambda s: s.get("status") == "Ready", "Ready")
    finally:
        await kube.delete(PERSISTENT_VOLUME, None, f"pv-{ns}")
    download = condition(ready["status"], "DownloadReady")
    assert download["reason"] == "Verified" and "in 3 files; verified: sha256" in download["message"]
    assert condition(ready["status"], "StorageReady")["reason"] == "PvcBound"
    assert (volume / "model.gguf").read_bytes() == gguf.read_bytes()
    assert oci_registry_auth.password is not None
    assert oci_registry_auth.password not in json.dumps(ready)


async def run_download_pod(cluster: Cluster, ns: str, job: str, volume: Path) -> None:
    """The kubelet runs the Job's pod: its real command, with the pod's env (secrets read), the
    volume's mount path standing for ``volume``; its output becomes the pod's log."""
    kube = cluster.kube
    pod = await job_pod(kube, ns, job)
    await bind_pod(kube, ns, pod["metadata"]["name"], "node-1")
    (container,) = pod["spec"]["containers"]
    mount = container["volumeMounts"][0]["mountPath"]
    args = [str(volume) if a == mount else a for a in container["args"]]
    env = {**os.environ, **await container_env(kube, ns, container), "HOME": str(volume.parent)}
    command = [str(Path(sys.executable).parent / container["command"][0]), *args]
    proc = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE, env=env)
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out
    cluster.kubelet.set_log(ns, pod["metadata"]["name"], "download", out.decode())
    await finish_pod(kube, ns, pod["metadata"]["name"], exit_code=0)


async def test_an_artifacts_job_says_verifying_then_verification_failed(cluster: Cluster) -> None:
    """An AIMArtifact in Job mode: the pod's offer once every byte is in makes ``DownloadComplete``
    ``True/Verifying`` (relayed with the Job's token); the pod then failing verification makes it
    ``False/VerificationFailed``, progress ``N/A``, the download ``Failed``."""
    artifact = by_kind(AIM, "AIMArtifact")
    kube = cluster.kube
    ns = await new_namespace(kube)
    spec = {"sourceUri": "hf://acme/verify", "size": "1Gi", "modelDownloadImage": IMAGE}
    created = await kube.create(artifact, manifest(artifact, "weights", ns, spec), ns)
    uid = created["metadata"]["uid"]
    name = job_name("weights", uid, 1)
    job = await get(kube, JOB, ns, name)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    job_env = {e["name"]: e.get("value") for e in container["env"]}
    downloading = has("DownloadComplete", "False", "Downloading")
    await status_of(kube, artifact, ns, "weights", downloading, "Downloading")
    nc = await connect_bus(pod_bus(job_env), "test-download-pod", forever=False)
    try:
        target = ObjectRef.of(artifact, ns, "weights")
        every_byte = Progress(
            downloaded_bytes=4098, total_bytes=4098, files_done=2, files_total=2, phase="verifying"
        )
        report = progress_report(target, uid, every_byte, None, now=time.monotonic(), attempt=FIRST)
        headers = {bus_progress.TOKEN_HEADER: job_env["AIM_PROGRESS_TOKEN"]}
        await nc.publish(bus_progress.subject(target), report.encode(), headers=headers)
        await nc.flush()
    finally:
        await nc.close()
    verifying = await status_of(
        kube, artifact, ns, "weights", has("DownloadComplete", "True", "Verifying"), "Verifying"
    )
    assert condition(verifying["status"], "DownloadComplete")["message"] == (
        "Download complete, verifying integrity..."
    )
    assert verifying["status"]["download"]["message"] == "Verifying"

    pod = await job_pod(kube, ns, name)
    await bind_pod(kube, ns, pod["metadata"]["name"], "node-1")
    verdict = {"result": "error", "reason": "DownloadFailed", "message": "the verification failed"}
    cluster.kubelet.set_log(ns, pod["metadata"]["name"], "download", json.dumps(verdict) + "\n")
    await finish_pod(kube, ns, pod["metadata"]["name"], exit_code=1)
    failed = await status_of(kube, artifact, ns, "weights", lambda s: s.get("status") == "Failed", "Failed")
    status = failed["status"]
    complete = condition(status, "DownloadComplete")
    assert (complete["status"], complete["reason"], complete["message"]) == (
        "False",
        "VerificationFailed",
        "Download completed but verification failed",
    )
    assert status["progress"]["displayPercentage"] == "N/A"
    assert status["download"] == {
        "protocol": "HTTP",
        "attempt": 2,
        "totalAttempts": 2,
        "protocolSequence": "HF_TRANSFER,HTTP",
        "message": "Failed",
    }
    assert condition(status, "DownloadReady")["reason"] == "DownloadFailed"


async def test_a_failure_seen_from_a_view_older_than_verifying_is_still_a_verification_failure(
    kube: Kube, namespace: str
) -> None:
    """The race behind an earlier CI failure of the test above, made certain: the Job's end reached
    the cache service while its view of the artifact predated the relayed Verifying. Whether every
    byte was in is read from the stored object then, so the failure is still ``VerificationFailed``;
    a stored status that never said Verifying is a failure before completion, and a verification
    reason needs no read at all."""
    artifact = by_kind(AIM, "AIMArtifact")
    spec = {"sourceUri": "hf://acme/verify", "size": "1Gi", "modelDownloadImage": IMAGE}
    stale = await kube.create(artifact, manifest(artifact, "weights", namespace, spec), namespace)
    request = Request(artifact, None, stale, informer=cast(Any, None), reporter=cast(Any, None))
    assert not await bytes_were_in(kube, request, "DownloadFailed")
    assert await bytes_were_in(kube, request, "ChecksumMismatch")
    verifying = {"type": "DownloadComplete", "status": "True", "reason": "Verifying", "message": "verifying"}
    verifying |= {"lastTransitionTime": "2026-01-01T00:00:00Z"}
    await kube.patch_status(artifact, namespace, "weights", {"status": {"conditions": [verifying]}})
    assert "status" not in stale  # the view the failure is decided from is still the old one
    assert await bytes_were_in(kube, request, "DownloadFailed")
    # the verdict once given is given again by the next reconcile of the same failure (the CI
    # failure after the first fix: the second reconcile read False and said "before completion")
    verdict = verifying | {"status": "False", "reason": "VerificationFailed", "message": "failed"}
    await kube.patch_status(artifact, namespace, "weights", {"status": {"conditions": [verdict]}})
    assert await bytes_were_in(kube, request, "DownloadFailed")
    before = verifying | {"status": "False", "reason": "Downloading", "message": "failed before completion"}
    await kube.patch_status(artifact, namespace, "weights", {"status": {"conditions": [before]}})
    assert not await bytes_were_in(kube, request, "DownloadFailed")
    seeds_kind = dataclasses.replace(request, ref=MODEL_CACHE)
    assert not await bytes_were_in(kube, seeds_kind, "DownloadFailed")  # it has no DownloadComplete


async def test_an_artifacts_protocol_sequence_reaches_its_job_and_its_status(cluster: Cluster) -> None:
    """``AIM_DOWNLOADER_PROTOCOL`` from the namespace's runtime config reaches the Job written out,
    ``status.download`` names its first attempt, and the attempt the pod's result line records (the
    second, after a fallback) is what the finished status says; a sequence naming an unknown
    protocol is a condition, and no Job is made for it."""
    artifact = by_kind(AIM, "AIMArtifact")
    kube = cluster.kube
    ns = await new_namespace(kube)
    config = {"env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "hf_transfer,http"}]}
    await kube.create(RUNTIME_CONFIG, manifest(RUNTIME_CONFIG, "default", ns, config), ns)
    spec = {"sourceUri": "hf://acme/protocols", "size": "1Gi", "modelDownloadImage": IMAGE}
    created = await kube.create(artifact, manifest(artifact, "weights", ns, spec), ns)
    name = job_name("weights", created["metadata"]["uid"], 1)
    job = await get(kube, JOB, ns, name)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    said = [e for e in container["env"] if e["name"] == "AIM_DOWNLOADER_PROTOCOL"]
    assert said == [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HF_TRANSFER,HTTP"}]
    first = await status_of(kube, artifact, ns, "weights", lambda s: "download" in s, "download")
    assert first["status"]["download"] == {
        "protocol": "HF_TRANSFER",
        "attempt": 1,
        "totalAttempts": 2,
        "protocolSequence": "HF_TRANSFER,HTTP",
        "message": "Downloading",
    }

    pod = await job_pod(kube, ns, name)
    await bind_pod(kube, ns, pod["metadata"]["name"], "node-1")
    record = {"protocol": "HTTP", "attempt": 2, "protocolSequence": "HF_TRANSFER,HTTP"}
    verdict = {"result": "ok", "files": 1, "bytes": 2, "revision": None, "verified": [], "download": record}
    cluster.kubelet.set_log(ns, pod["metadata"]["name"], "download", json.dumps(verdict) + "\n")
    await finish_pod(kube, ns, pod["metadata"]["name"], exit_code=0)
    verified = has("DownloadComplete", "True", "Verified")
    done = await status_of(kube, artifact, ns, "weights", verified, "Verified")
    assert done["status"]["download"] == {**record, "totalAttempts": 2, "message": "Complete"}

    bad = {**spec, "env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP,FTP"}]}
    created = await kube.create(artifact, manifest(artifact, "bad", ns, bad), ns)
    refused = await status_of(
        kube, artifact, ns, "bad", has("DownloadReady", "False", "InvalidDownloadProtocol"), "refusal"
    )
    assert "'FTP'" in condition(refused["status"], "DownloadReady")["message"]
    assert await kube.get(JOB, ns, job_name("bad", created["metadata"]["uid"], 1)) is None
