"""LLMKube ``Model``s reconciled by the real cache service process, against a real API server (with
kube-controller-manager binding volumes) and a local HTTP server that serves real GGUF files
(generated with the ``gguf`` package) with ETags and range requests.

What is proven: header metadata in ``status.gguf``; sha256 recorded for every source and
``spec.sha256`` enforced without touching a good copy; ``files[]``/``mmproj`` staged under the cache
key; drift flagged under ``IfNotPresent`` and re-fetched under ``OnChange``; disallowed paths and
addresses refused; recovery once an unreachable source comes back; ``pvc://`` claims verified in
place by Jobs (the test plays the kubelet, running the Job's real command on the volume's files);
and ``acceleratorReady`` following the nodes."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import secrets
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_cache.llmkube.sources import cache_key
from aim_dev.local.registry import Registry
from aim_dev.testing.kubelet import FakeKubelet, bind_pod, finish_pod, start_pod, wait_for_service_account
from aimcore.api.kinds import JOB, NAMESPACE, NODE, POD, PVC, KindRef, by_kind
from aimcore.domain.units import format_bytes
from aimcore.runtime import ApiException, Kube
from tests.file_server import FileServer
from tests.helpers import (
    condition,
    eventually,
    has,
    kubectl,
    lift_quota,
    manifest,
    quota_of_none,
    status_of,
)
from tests.integration.conftest import Services, ensure_service
from tests.oci_models import push_docker_model, repo, tiny_gguf
from tests.unit.llmkube.test_gguf_reader import EXPECTED_STATUS, write_gguf

MODEL = by_kind("inference.llmkube.dev", "Model")
PV = KindRef("", "v1", "PersistentVolume", "persistentvolumes", False)


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llmkube-site")


@pytest.fixture(scope="module")
def local_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llmkube-local")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llmkube-cache")


@pytest.fixture(scope="module")
def site(site_root: Path) -> Iterator[FileServer]:
    server = FileServer(site_root)
    yield server
    server.stop()


@pytest.fixture
async def models(  # type: ignore[no-untyped-def]
    running: Services, js: JetStreamContext, model_dir: Path, local_root: Path
) -> AsyncIterator[Services]:
    """The session's services plus a cache service configured for these tests (loopback allowed, as
    an in-cluster mirror would be; local sources under ``local_root``; short cadences)."""
    proc = running.procs.pop("cache", None)
    if proc is not None:
        proc.stop()
    env = {
        "AIM_CACHE_EXECUTOR": "local",
        "AIM_CACHE_DIR": str(model_dir / "aim"),
        "AIM_LLMKUBE_CACHE_DIR": str(model_dir / "llmkube"),
        "AIM_LLMKUBE_ALLOWED_HOSTS": "127.0.0.1",
        "AIM_LLMKUBE_ALLOWED_ROOTS": str(local_root),
        "AIM_LLMKUBE_REVALIDATE_SECONDS": "1",
        "AIM_LLMKUBE_RETRY_SECONDS": "1",
        "AIM_LLMKUBE_RETRY_MAX_SECONDS": "2",
    }
    await ensure_service(running, js, "cache", env=env)
    yield running
    proc = running.procs.pop("cache", None)  # later tests start the cache with their own settings
    if proc is not None:
        proc.stop()


def name() -> str:
    return f"m-{secrets.token_hex(3)}"


def sha256(path: Path | str) -> str:
    return hashlib.sha256(content(path)).hexdigest()


def content(path: Path | str) -> bytes:
    return Path(path).read_bytes()


def identity(path: Path) -> tuple[bytes, int]:
    """A file's bytes and inode: unchanged means neither rewritten nor replaced."""
    return content(path), path.stat().st_ino


def leftovers(cache: Path) -> list[Path]:
    """Partial download files left in a cache directory (the resume state files aside)."""
    return [p for p in (cache / ".aim-partial").rglob("*") if p.is_file() and not p.name.endswith(".json")]


def publish(root: Path, rel: str, **kwargs: Any) -> Path:
    """A fresh GGUF at ``root/rel``, written elsewhere and renamed in (as an upload would land)."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    write_gguf(tmp, **kwargs)
    tmp.replace(target)
    return target


async def create(kube: Kube, namespace: str, model: str, **spec: Any) -> None:
    await kube.create(MODEL, manifest(MODEL, model, namespace, spec), namespace)


async def phase(kube: Kube, namespace: str, model: str, wanted: str, extra: Any = None) -> dict[str, Any]:
    def check(s: dict[str, Any]) -> bool:
        return bool(s.get("phase") == wanted and (extra is None or extra(s)))

    obj: dict[str, Any] = await status_of(kube, MODEL, namespace, model, check, f"{model} {wanted}")
    return obj


# -- tests -------------------------------------------------------------------------------------


async def test_a_remote_gguf_is_downloaded_verified_and_described(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    models, kube: Kube, namespace: str, site: FileServer, site_root: Path, aim_cluster
) -> None:
    rel = f"{name()}/tiny-q4.gguf"
    upstream = publish(site_root, rel, big_tensor_bytes=3 << 20)
    source = f"{site.base}/{rel}"
    model = name()
    await create(kube, namespace, model, source=source, sha256=sha256(upstream).upper())
    obj = await phase(kube, namespace, model, "Ready")
    status = obj["status"]
    assert status["gguf"] == EXPECTED_STATUS
    assert status["sha256"] == sha256(upstream)
    assert status["cacheKey"] == cache_key(source)
    assert status["stagedFiles"] == ["tiny-q4.gguf"]
    staged = Path(status["path"])
    assert staged.name == "tiny-q4.gguf" and staged.parent.name == cache_key(source)
    assert content(staged) == content(upstream)
    assert status["size"] == format_bytes(len(content(upstream))) == "3.1 MiB"
    assert status["sourceContentLength"] == len(content(upstream))
    assert status["sourceETag"] == hashlib.sha1(content(upstream), usedforsecurity=False).hexdigest()
    assert status["acceleratorReady"] is True
    assert status["lastRevalidated"]
    assert has("Available", "True", "ModelReady")(status)
    assert "verified against spec.sha256" in condition(status, "Available")["message"]
    assert has("Degraded", "False", "Healthy")(status)
    # kubectl shows the seed's printer columns
    out = kubectl(
        "get", "models.inference.llmkube.dev", model, "-n", namespace, kubeconfig=aim_cluster.kubeconfig_path
    )
    assert re.search(rf"{model}\s+Ready\s+3\.1 MiB\s", out), out


async def test_a_wrong_sha256_fails_and_leaves_the_good_copy_alone(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    models, kube: Kube, namespace: str, site: FileServer, site_root: Path, local_root: Path
) -> None:
    rel = f"{name()}/model.gguf"
    upstream = publish(site_root, rel)
    source = f"{site.base}/{rel}"
    good = name()
    await create(kube, namespace, good, source=source)
    ready = await phase(kube, namespace, good, "Ready")
    staged = Path(ready["status"]["path"])
    before = identity(staged)
    assert ready["status"]["sha256"] == sha256(upstream)  # recorded although none was asked for

    bad = name()
    await create(kube, namespace, bad, source=source, sha256="0" * 64)
    failed = await phase(kube, namespace, bad, "Failed", has("Degraded", "True", "IntegrityCheckFailed"))
    message = condition(failed["status"], "Degraded")["message"]
    assert "0" * 64 in message and sha256(upstream) in message
    assert "path" not in failed["status"] and "sha256" not in failed["status"]
    # the good copy was never truncated or replaced, and no partial file was left behind
    assert identity(staged) == before
    assert leftovers(staged.parent) == []
    await phase(kube, namespace, good, "Ready")

    # the same for a local source, enforced on the copy
    local = publish(local_root, f"{name()}/local.gguf")
    copied = name()
    await create(kube, namespace, copied, source=str(local), sha256="f" * 64)
    await phase(kube, namespace, copied, "Failed", has("Degraded", "True", "IntegrityCheckFailed"))


async def test_files_and_mmproj_are_staged_under_the_cache_key(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, site: FileServer, site_root: Path
) -> None:
    repo = name()
    shard1 = publish(site_root, f"{repo}/q4/model-00001-of-00002.gguf")
    shard2 = publish(site_root, f"{repo}/q4/model-00002-of-00002.gguf", extra_tensors=2)
    proj = publish(site_root, f"{repo}/mmproj-f16.gguf")
    files = ["q4/model-00001-of-00002.gguf", "q4/model-00002-of-00002.gguf"]
    source = f"{site.base}/{repo}"
    model = name()
    await create(kube, namespace, model, source=source, files=files, mmproj="mmproj-f16.gguf")
    status = (await phase(kube, namespace, model, "Ready"))["status"]
    key = cache_key(source, files, "mmproj-f16.gguf")
    assert status["cacheKey"] == key
    assert status["stagedFiles"] == [*files, "mmproj-f16.gguf"]
    primary = Path(status["path"])
    assert primary.parent.parent.name == key and primary.name == "model-00001-of-00002.gguf"
    root = primary.parent.parent
    for rel, upstream in zip([*files, "mmproj-f16.gguf"], (shard1, shard2, proj), strict=True):
        assert content(root / rel) == content(upstream)
    assert status["sha256"] == sha256(shard1)  # the primary file's
    assert status["gguf"]["tensorCount"] == 3


async def test_disallowed_paths_and_addresses_are_refused(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, local_root: Path, tmp_path: Path
) -> None:
    outside = publish(tmp_path, "secret.gguf")  # a real file, just not under an allowed root
    cases = {
        name(): {"source": f"file://{outside}"},
        name(): {"source": str(local_root / ".." / outside.parent.name / "secret.gguf")},
        name(): {"source": "http://169.254.169.254/latest/meta-data/model.gguf"},
        name(): {"source": "http://metadata.google.internal/model.gguf"},
    }
    for model, spec in cases.items():
        await create(kube, namespace, model, **spec)
    for model in cases:
        failed = await phase(kube, namespace, model, "Failed", has("Degraded", "True", "SourceNotAllowed"))
        assert has("Progressing", "False", "WaitingForSpecChange")(failed["status"])
    # an allowed local file is copied (Copying → Ready) and described
    local = publish(local_root, f"{name()}/ok.gguf")
    ok = name()
    await create(kube, namespace, ok, source=f"file://{local}")
    status = (await phase(kube, namespace, ok, "Ready"))["status"]
    assert content(status["path"]) == content(local)
    assert status["gguf"]["modelName"] == "Tiny Llama Test"
    assert status["sourceETag"].startswith("local-mtime=")
    assert status["sourceContentLength"] == len(content(local))


async def test_drift_is_flagged_under_if_not_present_and_refetched_under_on_change(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, site: FileServer, site_root: Path
) -> None:
    rel = f"{name()}/drifting.gguf"
    upstream = publish(site_root, rel)
    old = sha256(upstream)
    source = f"{site.base}/{rel}"
    keep, follow = name(), name()
    await create(kube, namespace, keep, source=source)  # IfNotPresent is the default
    await phase(kube, namespace, keep, "Ready", has("SourceDrifted", "False", "InSync"))
    publish(site_root, rel, extra_tensors=3)  # upstream moves on
    new = sha256(upstream)
    assert new != old
    flagged = await phase(kube, namespace, keep, "Ready", has("SourceDrifted", "True", "UpstreamChanged"))
    assert flagged["status"]["sha256"] == old  # flagged, not re-fetched
    assert sha256(flagged["status"]["path"]) == old

    # the same source under OnChange (a different source string: its own cache directory)
    follow_source = f"{source}?policy=onchange"
    publish(site_root, rel)  # back to the original bytes
    assert sha256(upstream) == old
    await create(kube, namespace, follow, source=follow_source, refreshPolicy="OnChange")
    first = await phase(kube, namespace, follow, "Ready", lambda s: s.get("sha256") == old)
    publish(site_root, rel, extra_tensors=3)
    refreshed = await phase(
        kube,
        namespace,
        follow,
        "Ready",
        lambda s: s.get("sha256") == new and has("SourceDrifted", "False", "InSync")(s),
    )
    assert content(refreshed["status"]["path"]) == content(upstream)
    assert refreshed["status"]["gguf"]["tensorCount"] == 6
    assert refreshed["status"]["sourceETag"] != first["status"]["sourceETag"]


async def test_a_gguf_pushed_as_an_oci_artifact_becomes_a_ready_model(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, oci_registry: Registry, tmp_path: Path
) -> None:
    """A Docker-model GGUF in the registry: every layer staged, the GGUF primary and described,
    ``spec.sha256`` checked against it; a re-pushed tag is drift (re-fetched under ``OnChange``);
    an unknown tag and a wrong sha256 are clear failures."""
    gguf = tiny_gguf(tmp_path / "v1")
    where = repo()
    pushed = push_docker_model(oci_registry, where, "q4", gguf, "MIT")
    model, checked, missing, wrong = name(), name(), name(), name()
    await create(kube, namespace, model, source=pushed.uri, refreshPolicy="OnChange")
    await create(kube, namespace, checked, source=pushed.pinned, sha256=sha256(gguf))
    await create(kube, namespace, missing, source=pushed.uri.rsplit(":", 1)[0] + ":missing")
    await create(kube, namespace, wrong, source=pushed.pinned, sha256="0" * 64)
    status = (await phase(kube, namespace, model, "Ready"))["status"]
    assert status["gguf"] == EXPECTED_STATUS
    assert status["stagedFiles"] == ["model.gguf", "LICENSE", "docker-model-config.json"]
    assert status["cacheKey"] == cache_key(pushed.uri)
    assert Path(status["path"]).name == "model.gguf" and content(status["path"]) == content(gguf)
    assert status["sha256"] == sha256(gguf)
    assert status["sourceETag"] == pushed.digest  # the manifest's digest is the fingerprint
    verified = (await phase(kube, namespace, checked, "Ready"))["status"]
    assert "verified against spec.sha256" in condition(verified, "Available")["message"]
    failed = await phase(kube, namespace, missing, "Failed", has("Degraded", "True", "SourceNotFound"))
    assert "MANIFEST_UNKNOWN" in condition(failed["status"], "Degraded")["message"]
    bad = await phase(kube, namespace, wrong, "Failed", has("Degraded", "True", "IntegrityCheckFailed"))
    assert sha256(gguf) in condition(bad["status"], "Degraded")["message"]

    # the tag re-pushed with another GGUF: drift, re-fetched under OnChange; the pinned one stays
    newer = tiny_gguf(tmp_path / "v2", extra_tensors=3)
    again = push_docker_model(oci_registry, where, "q4", newer, "MIT")
    refreshed = await phase(
        kube,
        namespace,
        model,
        "Ready",
        lambda s: s.get("sha256") == sha256(newer) and has("SourceDrifted", "False", "InSync")(s),
    )
    assert refreshed["status"]["sourceETag"] == again.digest
    assert refreshed["status"]["gguf"]["tensorCount"] == 6
    assert content(refreshed["status"]["path"]) == content(newer)
    assert (await phase(kube, namespace, checked, "Ready"))["status"]["sha256"] == sha256(gguf)


async def test_an_unreachable_source_fails_then_recovers_when_it_comes_back(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    root = tmp_path / "site"
    upstream = publish(root, "late.gguf")
    server = FileServer(root)
    port = server.server_address[1]
    server.stop()  # nothing listens there now
    model = name()
    await create(kube, namespace, model, source=f"http://127.0.0.1:{port}/late.gguf")
    failed = await phase(kube, namespace, model, "Failed", has("Degraded", "True", "SourceUnreachable"))
    assert has("Progressing", "False", "RetryScheduled")(failed["status"])
    server = FileServer(root, port)
    try:
        ready = await phase(kube, namespace, model, "Ready")
        assert content(ready["status"]["path"]) == content(upstream)
    finally:
        server.stop()


class VerifyPods:
    """Plays the scheduler and the kubelet for the verify Jobs of one namespace: binds each new pod
    to a node, runs the pod's command (the real ``aim-model-inspect``) with the claim's mount point
    mapped to the volume's host directory, serves its output as the pod's log and finishes the pod
    with its exit status, as a kubelet would."""

    def __init__(self, kube: Kube, kubelet: FakeKubelet, node: str, namespace: str, host_dir: Path) -> None:
        self.kube, self.kubelet, self.node = kube, kubelet, node
        self.namespace, self.host_dir = namespace, host_dir
        self.runs: list[tuple[list[str], dict[str, Any]]] = []  # (args, printed verdict)
        self._done: set[str] = set()

    async def serve(self) -> None:
        while True:
            pods, _ = await self.kube.list(POD, self.namespace)
            for pod in pods:
                meta = pod["metadata"]
                if meta["name"] in self._done or meta.get("deletionTimestamp"):
                    continue
                self._done.add(meta["name"])
                try:
                    await self._run(pod)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
                    # deleted meanwhile (its Job was replaced): a kubelet forgets it, so does this
            await asyncio.sleep(0.1)  # the kubelet's sync loop

    async def _run(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        (container,) = pod["spec"]["containers"]
        mount = container["volumeMounts"][0]["mountPath"]
        args = [
            str(self.host_dir / a.removeprefix(mount + "/")) if a.startswith(mount + "/") else a
            for a in container["args"]
        ]
        command = [str(Path(sys.executable).parent / container["command"][0]), *args]
        await bind_pod(self.kube, self.namespace, name, self.node)
        await start_pod(self.kube, self.namespace, name)
        proc = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        self.kubelet.set_log(self.namespace, name, container["name"], out.decode())
        self.runs.append((container["args"], json.loads(out.decode().strip().splitlines()[-1])))
        await finish_pod(self.kube, self.namespace, name, exit_code=proc.returncode or 0)


async def bound_claim(kube: Kube, namespace: str, claim: str, host_dir: Path) -> str:
    """A claim bound (by the real kube-controller-manager) to a hostPath volume of ``host_dir``;
    returns the volume's name."""
    volume = f"pv-{claim}"
    await kube.create(
        PV,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadOnlyMany"],
                "storageClassName": "",
                "hostPath": {"path": str(host_dir)},
                "claimRef": {"namespace": namespace, "name": claim},
            },
        },
    )
    await kube.create(
        PVC,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace},
            "spec": {
                "accessModes": ["ReadOnlyMany"],
                "storageClassName": "",
                "volumeName": volume,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        namespace,
    )
    return volume


def verified_with(digest: str) -> Any:
    return lambda s: s.get("sha256") == digest and has("Available", "True", "ModelReady")(s)


async def test_pvc_sources_are_verified_in_place_by_a_job(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    claim = f"weights-{secrets.token_hex(3)}"
    model = name()
    await create(kube, namespace, model, source=f"pvc://{claim}/llama/model.gguf")
    await phase(kube, namespace, model, "Failed", has("Degraded", "True", "PVCNotFound"))

    host = tmp_path / "volume"
    original = publish(host, "llama/model.gguf")
    first = sha256(original)
    volume = await bound_claim(kube, namespace, claim, host)
    kubelet = await FakeKubelet().start()
    node = f"node-{secrets.token_hex(3)}"
    pods = VerifyPods(kube, kubelet, node, namespace, host)
    serving = asyncio.create_task(pods.serve())
    try:
        await wait_for_service_account(kube, namespace)
        await kubelet.register_node(kube, node)
        # Pending (not Ready) until the Job has read the claim; then Ready with what it found
        ready = await phase(kube, namespace, model, "Ready", verified_with(first))
        status = ready["status"]
        assert status["path"] == "/model-source/llama/model.gguf"
        assert status["size"] == format_bytes(original.stat().st_size)
        assert status["gguf"] == EXPECTED_STATUS
        assert status["sourceContentLength"] == original.stat().st_size
        assert has("SourceDrifted", "False", "InSync")(status)
        assert "sha256 recorded" in condition(status, "Available")["message"]
        args, verdict = pods.runs[0]
        assert args == ["/model-source/llama/model.gguf"] and verdict["hashed"] is True
        jobs, _ = await kube.list(JOB, namespace)
        mount = jobs[0]["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]
        assert mount == {"claimName": claim, "readOnly": True}

        # later rounds pass the previous result: an unchanged file is not read again
        await eventually(
            lambda: _first(r for r in pods.runs if r[0][1:] and r[1].get("hashed") is False),
            timeout=30,
            what="a revalidation round that reused the recorded digest",
        )

        # the file changes in the claim: re-hashed, flagged, and the new digest shown
        changed = publish(host, "llama/model.gguf", extra_tensors=3)
        second = sha256(changed)
        drifted = await phase(
            kube,
            namespace,
            model,
            "Ready",
            lambda s: s.get("sha256") == second and has("SourceDrifted", "True", "UpstreamChanged")(s),
        )
        assert drifted["status"]["gguf"]["tensorCount"] == 6
        assert second in condition(drifted["status"], "SourceDrifted")["message"]

        # spec.sha256 is enforced: a mismatch fails and the claim's file is left alone
        before = identity(changed)
        await kube.patch(MODEL, namespace, model, {"spec": {"sha256": first.upper()}})
        failed = await phase(
            kube, namespace, model, "Failed", has("Degraded", "True", "IntegrityCheckFailed")
        )
        message = condition(failed["status"], "Degraded")["message"]
        assert first in message and second in message
        assert identity(changed) == before
        await kube.patch(MODEL, namespace, model, {"spec": {"sha256": second}})
        fixed = await phase(kube, namespace, model, "Ready", verified_with(second))
        assert "verified against spec.sha256" in condition(fixed["status"], "Available")["message"]

        # the file disappears: a clear failure; it comes back: Ready again
        changed.unlink()
        gone = await phase(kube, namespace, model, "Failed", has("Degraded", "True", "SourceNotFound"))
        assert claim in condition(gone["status"], "Degraded")["message"]
        publish(host, "llama/model.gguf", extra_tensors=3)
        await phase(kube, namespace, model, "Ready", verified_with(second))

        # rounds do not pile up: the newest round and the last good one at most
        jobs, _ = await kube.list(JOB, namespace)
        assert 1 <= len(jobs) <= 3  # (a new round may have been created since the last reconcile)
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        await kubelet.cleanup(kube)
        await kubelet.stop()
        await kube.delete(PV, None, volume)


async def test_a_verify_job_the_api_server_refuses_is_a_failure_with_its_reason(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    """A namespace quota of no Jobs: the verify Job of a claim's file is refused (403); the Model
    says so (``VerifyJobCreateForbidden``, the server's message) instead of retrying in a loop
    with nothing to show, and goes on once the quota allows it (issue 26)."""
    quota = await quota_of_none(kube, namespace, "count/jobs.batch")
    claim = f"weights-{secrets.token_hex(3)}"
    host = tmp_path / "volume"
    publish(host, "model.gguf")
    volume = await bound_claim(kube, namespace, claim, host)
    try:
        model = name()
        await create(kube, namespace, model, source=f"pvc://{claim}/model.gguf")
        failed = await phase(
            kube, namespace, model, "Failed", has("Degraded", "True", "VerifyJobCreateForbidden")
        )
        message = condition(failed["status"], "Degraded")["message"]
        assert "refused to create Job" in message and "quota" in message and "next attempt in" in message
        assert (await kube.list(JOB, namespace))[0] == []

        async def verify_job() -> bool:
            return len((await kube.list(JOB, namespace))[0]) == 1

        what = "the verify Job once the quota allows it"
        await lift_quota(kube, namespace, quota, poke=(MODEL, model), until=verify_job, what=what)
    finally:
        await kube.delete(PV, None, volume)


async def _first(items: Iterable[Any]) -> Any:
    return next(iter(items), None)


async def test_accelerator_ready_follows_the_nodes(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, site: FileServer, site_root: Path
) -> None:
    rel = f"{name()}/gpu.gguf"
    publish(site_root, rel)
    model = name()
    hardware = {"accelerator": "cuda", "gpu": {"enabled": True, "count": 2, "vendor": "nvidia"}}
    await create(kube, namespace, model, source=f"{site.base}/{rel}", hardware=hardware)
    waiting = await phase(kube, namespace, model, "Ready", lambda s: s.get("acceleratorReady") is False)
    assert "nvidia.com/gpu" in condition(waiting["status"], "Available")["message"]
    node = f"gpu-{secrets.token_hex(3)}"
    await kube.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    try:
        await kube.patch_status(
            NODE,
            None,
            node,
            {"status": {"capacity": {"nvidia.com/gpu": "2"}, "allocatable": {"nvidia.com/gpu": "2"}}},
        )
        await phase(kube, namespace, model, "Ready", lambda s: s.get("acceleratorReady") is True)
    finally:
        await kube.delete(NODE, None, node)


async def test_invalid_hardware_is_a_clear_failure(  # type: ignore[no-untyped-def]
    models, kube: Kube, namespace: str, site: FileServer
) -> None:
    model = name()
    await create(kube, namespace, model, source=f"{site.base}/x.gguf", resources={"memory": "12XB"})
    failed = await phase(kube, namespace, model, "Failed", has("Degraded", "True", "InvalidHardware"))
    assert "spec.resources.memory" in condition(failed["status"], "Degraded")["message"]


async def test_verify_jobs_run_the_cache_services_own_image(  # type: ignore[no-untyped-def]
    running: Services, js: JetStreamContext, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    """An overlay changes the cache service's image (a mirror, a new tag): the verify Jobs follow,
    because their default image is read from the service's own pod (``AIM_POD_NAME``, set from the
    downward API), not a second setting left at the base name."""
    system = "aim-system"
    if await kube.get(NAMESPACE, None, system) is None:
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": system}})
    await wait_for_service_account(kube, system)
    pod = f"aim-cache-{secrets.token_hex(3)}"
    image = "mirror.example/aim/aim-cache:9.9.9"
    await kube.create(
        POD,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "namespace": system},
            "spec": {
                "containers": [
                    {"name": "sidecar", "image": "mirror.example/proxy:1"},
                    {"name": "cache", "image": image},
                ]
            },
        },
        system,
    )
    proc = running.procs.pop("cache", None)
    if proc is not None:
        proc.stop()
    env = {"AIM_CACHE_EXECUTOR": "local", "AIM_CACHE_DIR": str(tmp_path / "aim"), "AIM_POD_NAME": pod}
    try:
        await ensure_service(running, js, "cache", env=env)
        claim = f"weights-{secrets.token_hex(3)}"
        host = tmp_path / "volume"
        publish(host, "llama/model.gguf")
        volume = await bound_claim(kube, namespace, claim, host)
        await create(kube, namespace, name(), source=f"pvc://{claim}/llama/model.gguf")

        async def job() -> dict[str, Any] | None:
            running.assert_alive()
            jobs, _ = await kube.list(JOB, namespace)
            return jobs[0] if jobs else None

        created = await eventually(job, timeout=60, what="the verify Job")
        assert created["spec"]["template"]["spec"]["containers"][0]["image"] == image
        await kube.delete(PV, None, volume)
    finally:
        proc = running.procs.pop("cache", None)
        if proc is not None:
            proc.stop()
        await kube.delete(POD, system, pod)
