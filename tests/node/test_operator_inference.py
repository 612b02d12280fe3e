"""Real inference on a real node: the model a user caches is the model that answers.

The tiny generated models (:mod:`aim_dev.tinyllm`) are ordinary repositories on the stack's Hub
server; the llama.cpp runtime image (:mod:`aim_dev.llamacpp`) serves them. Every answer here is
asked through the address the AIMService's status gives (:mod:`aim_dev.local.predictor`) and comes
from a real forward pass in a predictor pod the kubelet started:

- two models, one an AIM model image (a real discovery Job reads its GGUF's precision), one a custom
  model on the bare runtime image, each cached by a real download Job into a volume, each answer its
  own sentence (the same runtime, so the answer comes from the mounted weights); the same model
  with no cache (the runtime downloads it itself) answers the same;
- a cache whose file fails its sha256 never reaches a server;
- a GGUF llama.cpp cannot load fails the service with llama.cpp's own reason, and stays failed while
  the kubelet backs off;
- scaled from one replica to two, both pods answer;
- a running service whose model cache is deleted says so, keeps answering and never restarts.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest

from aim_deployer.inference import isvc_name
from aim_dev import tinyllm
from aim_dev.kserve import raw
from aim_dev.local import predictor
from aim_dev.local.hub import add_repo
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import POD
from aimcore.runtime import Kube
from tests.helpers import eventually
from tests.node.helpers import (
    BEHAVIOUR,
    NODE_TIMEOUT,
    aim,
    conditions,
    hub_env,
    model_cache_kind,
    state,
    summary,
    wait_for,
)

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

SERVICE = aim("AIMService")
MODEL = aim("AIMModel")
TEMPLATE = aim("AIMServiceTemplate")
MODEL_CACHE = model_cache_kind()
"""The kind a service's caching creates in this run (``AIMArtifact`` under released)."""
QUESTION = "What do you answer, whatever you are asked?"


def custom(base: str, repo: str, source: str | None = None) -> dict[str, Any]:
    """A custom model on the bare runtime image ``base``: the weights are all that names the model
    (from ``source``, by default the Hub's ``repo``)."""
    return {
        "custom": {
            "baseImage": base,
            "modelSources": [{"modelId": repo, "sourceUri": source or f"hf://{repo}"}],
            "hardware": {"cpu": {"requests": "100m"}},
        }
    }


def service(stack: NodeStack, name: str, model: dict[str, Any], caching: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": SERVICE.api_version,
        "kind": SERVICE.kind,
        "metadata": {"name": name},
        "spec": {
            "model": model,
            "template": {"allowUnoptimized": True},
            "caching": {"mode": caching},
            "env": hub_env(stack.hub_endpoint),
            **spec,
        },
    }


async def running(api: Kube, namespace: str, name: str, timeout: float = 300) -> dict[str, Any]:
    return await wait_for(
        api,
        SERVICE,
        namespace,
        name,
        lambda s: state(s) == "Running",
        timeout=timeout,
        what=f"{name} Running",
    )


async def ask(stack: NodeStack, namespace: str, svc: dict[str, Any], model: str) -> str:
    """The answer to :data:`QUESTION`, through the address ``svc``'s status gives."""
    url = predictor.service_url(svc)

    def call() -> str:
        with predictor.forward(stack.kubeconfig, namespace, url) as endpoint:
            return endpoint.chat(QUESTION, model)

    return await asyncio.to_thread(call)


async def predictor_pods(api: Kube, namespace: str, name: str) -> list[dict[str, Any]]:
    label = f"{raw.ISVC_LABEL}={isvc_name(name, namespace)}"
    pods, _ = await api.list(POD, namespace, label_selector=label)
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def downloads(stack: NodeStack, repo: str, path: str = "model.gguf") -> int:
    """How many times the stack's Hub server was asked for ``repo``'s ``path`` from its first byte
    (its request log): once per download of it. A download's further ranges start later."""
    assert stack.hub is not None
    return sum(
        1
        for r in stack.hub.requests()
        if (r["repo_id"], r["path"], r["method"]) == (repo, path, "GET")
        and int((r["range"] or "bytes=0-").removeprefix("bytes=").split("-")[0] or 0) == 0
    )


def restarts(pod: dict[str, Any]) -> int:
    return sum(cs.get("restartCount", 0) for cs in pod["status"].get("containerStatuses") or [])


def claims(pod: dict[str, Any]) -> list[str]:
    return [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ]


@pytest.fixture(scope="module")
def model_a_image(stack: NodeStack) -> str:
    """Model A's AIM image (the runtime with A's identity and labels) in the stack's registry."""
    return stack.push_tiny_model(tinyllm.MODEL_A)


async def test_each_model_answers_its_own_sentence_with_and_without_a_cache(  # noqa: PLR0917 - fixtures
    stack: NodeStack, api: Kube, namespace: str, volumes: Any, model_a_image: str, runtime_image: str
) -> None:
    a, b = tinyllm.MODEL_A, tinyllm.MODEL_B
    await volumes(2)
    model = {"apiVersion": MODEL.api_version, "kind": MODEL.kind, "metadata": {"name": "tiny-a"}}
    # discovery reads the model's GGUF header from the Hub: the model's env says where, and allows it
    await api.create(
        MODEL, {**model, "spec": {"image": model_a_image, "env": hub_env(stack.hub_endpoint)}}, namespace
    )
    await api.create(SERVICE, service(stack, "a", {"name": "tiny-a"}, "Always"), namespace)
    await api.create(SERVICE, service(stack, "b", custom(runtime_image, b.repo), "Always"), namespace)
    await api.create(SERVICE, service(stack, "b-direct", custom(runtime_image, b.repo), "Never"), namespace)
    svc_a = await running(api, namespace, "a")
    svc_b = await running(api, namespace, "b")
    svc_direct = await running(api, namespace, "b-direct")

    # A's template: the profile its image's dry-run printed, precision from the GGUF's F16 tensors
    [template] = [
        t for t in (await api.list(TEMPLATE, namespace))[0] if t["spec"].get("modelName") == "tiny-a"
    ]
    metadata = template["status"]["profile"]["metadata"]
    assert (metadata["engine"], metadata["precision"]) == ("llama.cpp", "fp16"), template["status"]
    for svc in (svc_a, svc_b):
        assert conditions(svc)["CacheReady"]["status"] == "True", summary(svc)

    # one runtime, different mounted weights, different answers
    [pod_a] = await predictor_pods(api, namespace, "a")
    [pod_b] = await predictor_pods(api, namespace, "b")
    [pod_direct] = await predictor_pods(api, namespace, "b-direct")
    assert pod_b["spec"]["containers"][0]["image"] == runtime_image
    assert claims(pod_a) and claims(pod_b)
    # ``Never`` is no cache under the seeds' behaviour, a cache of the service's own (Dedicated)
    # under the released one, where caching is always on
    assert bool(claims(pod_direct)) == BEHAVIOUR.released, pod_direct["spec"].get("volumes")
    assert await ask(stack, namespace, svc_a, a.repo) == a.sentence
    assert await ask(stack, namespace, svc_b, b.repo) == b.sentence
    # the same model without a cache of its template (downloaded by the runtime at start, or into
    # its own cache) answers the same
    assert await ask(stack, namespace, svc_direct, b.repo) == b.sentence
    for pod in (pod_a, pod_b, pod_direct):
        assert restarts(pod) == 0, pod["status"]


async def test_a_cache_whose_file_fails_its_sha256_never_reaches_a_server(
    stack: NodeStack, api: Kube, namespace: str, volumes: Any, runtime_image: str
) -> None:
    assert stack.hub is not None
    model = tinyllm.MODEL_B
    repo = f"aim-tests/corrupt-{secrets.token_hex(3)}"
    data = tinyllm.ensure(tinyllm.default_dir(), (model,))[model.repo].read_bytes()
    add_repo(stack.hub.root, repo, {model.filename: data}, lfs_threshold=tinyllm.LFS_THRESHOLD)
    # every transfer of the file flips one of its bytes: its sha256 never matches
    stack.hub.corrupt(repo, model.filename, offset=len(data) // 2, count=1000)
    await volumes(2)
    await api.create(SERVICE, service(stack, "corrupt", custom(runtime_image, repo), "Always"), namespace)

    def settled(svc: dict[str, Any]) -> bool:
        return state(svc) in ("Failed", "Degraded") and bool(conditions(svc).get("CacheReady"))

    svc = await wait_for(api, SERVICE, namespace, "corrupt", settled, timeout=300, what="corrupt Failed")
    caches = (await api.list(MODEL_CACHE, namespace))[0]
    assert caches and all(state(c) == "Failed" for c in caches), [summary(c) for c in caches]
    for cache in caches:
        assert "sha256" in conditions(cache)["DownloadReady"]["message"].lower(), summary(cache)
    # no server ever had the model: no predictor pod was ever ready, and one that tried to fetch the
    # weights itself (the service runs without a failed cache) was refused them by the same check
    for pod in await predictor_pods(api, namespace, "corrupt"):
        ready = [c for c in pod["status"].get("conditions") or [] if c["type"] == "Ready"]
        assert all(c["status"] != "True" for c in ready), pod["status"]
    assert state(svc) != "Running", summary(svc)


async def test_a_gguf_the_runtime_cannot_load_fails_with_its_reason_and_stays_failed(
    stack: NodeStack, api: Kube, namespace: str, runtime_image: str
) -> None:
    assert stack.hub is not None
    whole = tinyllm.ensure(tinyllm.default_dir(), (tinyllm.MODEL_A,))[tinyllm.MODEL_A.repo].read_bytes()
    repo = f"aim-tests/truncated-{secrets.token_hex(3)}"
    add_repo(stack.hub.root, repo, {"model.gguf": whole[: len(whole) // 2]}, lfs_threshold=1024)
    await api.create(SERVICE, service(stack, "broken", custom(runtime_image, repo), "Never"), namespace)

    svc = await wait_for(
        api, SERVICE, namespace, "broken", lambda s: state(s) == "Failed", timeout=240, what="broken Failed"
    )
    isvc = conditions(svc)["InferenceServiceReady"]
    assert isvc["reason"] == "InferenceServiceFailed", summary(svc)
    # llama.cpp's own words, from the container's termination message
    assert "llama.cpp cannot load model.gguf" in isvc["message"], isvc
    assert "not within the file bounds" in isvc["message"], isvc

    # The kubelet restarts it with a growing back-off (that is Kubernetes). The runtime remembers the
    # failure in the pod's memory volume: the next attempt ends at once with the same reason (no
    # download, no load), and the service settles Failed again with it.
    assert downloads(stack, repo) == 1  # the first attempt's
    [pod] = await predictor_pods(api, namespace, "broken")
    seen = restarts(pod)

    async def retried() -> dict[str, Any] | None:
        [now] = await predictor_pods(api, namespace, "broken")
        current = await api.get(SERVICE, namespace, "broken")
        [cs] = now["status"]["containerStatuses"]
        message = ((cs.get("lastState") or {}).get("terminated") or {}).get("message") or ""
        again = restarts(now) > seen and state(current or {}) == "Failed"
        return now if again and "not loaded again in this pod" in message else None

    pod = await eventually(retried, timeout=120, interval=0.2, what="the next attempt, Failed again")
    [cs] = pod["status"]["containerStatuses"]
    last = cs["lastState"]["terminated"]
    assert last["exitCode"] == 1, last
    assert last["message"].startswith("llama.cpp cannot load model.gguf: "), last
    assert last["message"].endswith(" (not loaded again in this pod: it failed before)"), last
    # nothing downloaded again: the Hub served the file from its first byte once, to the first attempt
    assert downloads(stack, repo) == 1, last

    # between attempts the pods condition says the kubelet's back-off, with llama.cpp's reason
    def crash_loop(svc: dict[str, Any]) -> bool:
        pods = conditions(svc).get("InferenceServicePodsReady", {})
        return pods.get("reason") == "CrashLoopBackOff" and "not within the file bounds" in pods["message"]

    svc = await wait_for(api, SERVICE, namespace, "broken", crash_loop, timeout=60, what="CrashLoopBackOff")
    assert state(svc) == "Failed", summary(svc)


async def test_scaled_from_one_replica_to_two_both_answer(
    stack: NodeStack, api: Kube, namespace: str, runtime_image: str
) -> None:
    model = tinyllm.MODEL_B
    await api.create(SERVICE, service(stack, "scaled", custom(runtime_image, model.repo), "Never"), namespace)
    await running(api, namespace, "scaled")
    await api.patch(SERVICE, namespace, "scaled", {"spec": {"replicas": 2}})

    async def two_ready() -> list[dict[str, Any]] | None:
        pods = await predictor_pods(api, namespace, "scaled")
        ready = [
            p
            for p in pods
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or []
            )
        ]
        return ready if len(ready) == 2 else None

    pods = await eventually(two_ready, timeout=240, interval=0.25, what="two ready predictor pods")
    svc = await running(api, namespace, "scaled")
    assert conditions(svc)["InferenceServicePodsReady"]["message"] == "2/2 pods ready", summary(svc)

    def ask_pod(name: str) -> str:
        with predictor.forward_pod(stack.kubeconfig, namespace, name) as endpoint:
            return endpoint.chat(QUESTION, model.repo)

    for pod in pods:
        assert await asyncio.to_thread(ask_pod, pod["metadata"]["name"]) == model.sentence


async def test_deleting_the_model_cache_of_a_running_service_says_so_and_never_crashes(
    stack: NodeStack, api: Kube, namespace: str, volumes: Any, runtime_image: str
) -> None:
    model = tinyllm.MODEL_A
    await volumes(2)
    await api.create(SERVICE, service(stack, "kept", custom(runtime_image, model.repo), "Always"), namespace)
    svc = await running(api, namespace, "kept")
    [cache] = (await api.list(MODEL_CACHE, namespace))[0]
    [pod] = await predictor_pods(api, namespace, "kept")
    await api.delete(MODEL_CACHE, namespace, cache["metadata"]["name"])

    [claim] = claims(pod)

    def says_so(svc: dict[str, Any]) -> bool:
        return conditions(svc).get("CacheReady", {}).get("reason") == "CacheLost"

    lost = await wait_for(api, SERVICE, namespace, "kept", says_so, timeout=120, what="CacheLost")
    message = conditions(lost)["CacheReady"]["message"]
    assert f"the model cache of the mounted volume {claim} was deleted" in message, summary(lost)
    assert state(lost) == "Degraded", summary(lost)
    # the server keeps its mounted weights, answers, and is never restarted
    assert await ask(stack, namespace, svc, model.repo) == model.sentence

    async def converged() -> dict[str, Any] | None:
        current = await api.get(SERVICE, namespace, "kept")
        pods = await predictor_pods(api, namespace, "kept")
        assert all(restarts(p) == 0 for p in pods), [p["status"] for p in pods]
        ok = current is not None and state(current) == "Running"
        return current if ok and conditions(current)["CacheReady"]["status"] == "True" else None

    svc = await eventually(converged, timeout=300, interval=0.5, what="a new cache, Running again")
    assert await ask(stack, namespace, svc, model.repo) == model.sentence
    assert restarts(pod) == 0
