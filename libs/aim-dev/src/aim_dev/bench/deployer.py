"""``aimctl bench deployer``: the deployer's figures against the embedded stack
(docs/design.md#performance-budgets).

It starts the whole embedded system in a temporary home (or uses ``--home``), prepares a model, a
template and a template cache that the operator's own services bring to Ready (the template has
inline model sources and needs no GPU; the cache downloads a small model from a local
Hub-compatible server with the cache service's local executor), then measures:

- operator overhead: from the create call of an AIMService using them until a watch sees its
  InferenceService (p50, p99 over single services applied one at a time);
- throughput: 1,000 such AIMServices applied at once until every one has its InferenceService and
  its status written, against the time the same API server takes to accept 1,000 plain creates
  (paused AIMServices, which the operator leaves alone) in the same run, and the API writes the
  operator spent per service.

The burst is also compared with the irreducible work, in the same run:

- ``cpu_ms_per_service``: CPU time (user + system, from ``/proc``) of every operator process and
  nats-server from the burst's first create until the operator is idle again — what the burst
  deferred (the Events the rate limit queued, the status service's backlog) is its cost too —
  less the settled operator's own idle CPU over that time, divided by the number of services
  (``cpu_ms_per_service_at_last_status``: up to the last status only, as earlier rounds measured);
  ``api_writes_per_service`` likewise counts every write until idle, Events included;
- ``ratio_vs_minimal_writer``: a minimal client issues exactly the requests the operator needs per
  service (create the AIMService, create its InferenceService — the body the deployer made for an
  earlier service — and merge-patch its status with the status the operator wrote for it), at the
  burst's concurrency, alone: the operator and nats-server stopped (SIGSTOP) and the control plane
  settled first; the ratio is its time over the operator's burst time. Both keep the machine's
  cores busy, so the ratio is a share of the machine: ``burst_cpu_seconds`` and
  ``minimal_writer_cpu_seconds`` say who spent it (each process of the control plane and the
  operator, the bench itself, the rest), and ``ratio_if_operator_free`` is the ratio had the
  operator's own CPU cost nothing (:mod:`aim_dev.bench.cpu`) — the ceiling the operator is under.

``--repeat N`` (default 5) runs the whole measurement N times, each on a fresh stack, and reports
each figure's median (every run's figures under ``runs``).

Diagnostics in the same JSON line: ``cpu_system_seconds`` (the kernel's part of the CPU),
``bus_messages_per_service`` (messages each client sent to nats-server, from its ``/connz``) and
``write_syscalls_per_service`` (``syscw`` of /proc/PID/io: file and pipe writes; socket sends from
Python are not counted there).

Human-readable lines go to stderr; the last line on stdout is one JSON object with the keys
``overhead_p50_ms``, ``overhead_p99_ms``, ``cpu_ms_per_service``, ``ratio_vs_minimal_writer`` and
``ratio_vs_raw_create``.

``--profile DIR`` runs py-spy on each service during the burst (:mod:`aim_dev.bench.profile`): the
collapsed stacks go to ``DIR/<service>.txt`` and the top frames of the deployer, status and watcher
to stderr. Sampling costs the services some CPU, so the figures of a profiled run are not the
benchmark's.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import signal
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from aim_dev.bench.backbone import (
    BENCH,
    api_server_profiler,
    api_writes,
    control_plane_pids,
    create_all,
    delta,
    embedded_stack,
    events_drained,
    namespace,
    operator_pids,
    percentile,
    profiles_said,
    request_counts,
    say,
    settled,
    stamped,
)
from aim_dev.bench.cpu import Split, cpu_of, cpu_seconds, sample
from aim_dev.bench.profile import Profiler
from aim_dev.local.hub import HubServer, add_repo
from aim_dev.local.stack import Stack
from aimcore.api.bus.mirror import PAUSE_ANNOTATION
from aimcore.api.kinds import GROUP_AIM, INFERENCE_SERVICE, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect

AIMSVC = by_kind(GROUP_AIM, "AIMService")
MODEL = by_kind(GROUP_AIM, "AIMModel")
TEMPLATE = by_kind(GROUP_AIM, "AIMServiceTemplate")
TEMPLATE_CACHE = by_kind(GROUP_AIM, "AIMTemplateCache")
NS = "bench-deployer"
REPO = "bench/tiny"
FILES = {"config.json": b'{"architectures": ["LlamaForCausalLM"]}', "model.safetensors": bytes(64 * 1024)}


def service(name: str, *, paused: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if paused:
        meta["annotations"] = {PAUSE_ANNOTATION: "true"}
    spec = {"model": {"name": "bench-model"}, "template": {"name": "bench-template"}}
    return {"apiVersion": AIMSVC.api_version, "kind": AIMSVC.kind, "metadata": meta, "spec": spec}


async def _state(kube: Kube, ref: Any, name: str) -> str:
    obj = await kube.get(ref, NS, name)
    return str(((obj or {}).get("status") or {}).get("status") or "")


async def prepare(kube: Kube, hub: HubServer) -> None:
    """A Ready model, template and template cache, made Ready by the operator itself."""
    await namespace(kube, NS)
    env = [{"name": "HF_ENDPOINT", "value": hub.endpoint}]
    source = {"modelId": REPO, "sourceUri": f"hf://{REPO}", "size": "1Mi"}
    await kube.create(
        MODEL,
        {
            "apiVersion": MODEL.api_version,
            "kind": MODEL.kind,
            "metadata": {"name": "bench-model", "namespace": NS},
            "spec": {
                "image": "ghcr.io/bench/aim-base:1.0",
                "modelSources": [source],
                "custom": {"hardware": {"cpu": {"requests": "1"}}},
                "discovery": {"extractMetadata": False, "createServiceTemplates": False},
            },
        },
    )
    await kube.create(
        TEMPLATE,
        {
            "apiVersion": TEMPLATE.api_version,
            "kind": TEMPLATE.kind,
            "metadata": {"name": "bench-template", "namespace": NS},
            "spec": {"modelName": "bench-model", "modelSources": [source], "type": "optimized"},
        },
    )
    await kube.create(
        TEMPLATE_CACHE,
        {
            "apiVersion": TEMPLATE_CACHE.api_version,
            "kind": TEMPLATE_CACHE.kind,
            "metadata": {"name": "bench-cache", "namespace": NS},
            "spec": {"templateName": "bench-template", "env": env},
        },
    )
    deadline = time.monotonic() + 180
    for ref, name in ((MODEL, "bench-model"), (TEMPLATE, "bench-template"), (TEMPLATE_CACHE, "bench-cache")):
        while (state := await _state(kube, ref, name)) != "Ready":
            if time.monotonic() > deadline:
                obj = await kube.get(ref, NS, name)
                conditions = ((obj or {}).get("status") or {}).get("conditions")
                raise RuntimeError(f"{ref.kind} {name} did not become Ready: {state!r} {conditions}")
            await asyncio.sleep(0.2)
    say("model, template and template cache are Ready")


class Seen:
    """When each InferenceService appeared, and when each service's status names its
    InferenceService condition (its status written for the deployed state)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.isvcs: dict[str, float] = {}
        self.statuses: dict[str, float] = {}
        self.changed = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for ref, sink in ((INFERENCE_SERVICE, self.isvcs), (AIMSVC, self.statuses)):
            _, rv = await self.kube.list(ref, NS)
            self.tasks.append(asyncio.create_task(self._follow(ref, rv, sink)))

    async def _follow(self, ref: Any, rv: str, sink: dict[str, float]) -> None:
        while True:
            async for event in self.kube.watch(ref, rv, namespace=NS, timeout_seconds=60):
                obj = event["object"]
                rv = obj["metadata"]["resourceVersion"]
                owner = self._owner(ref, obj)
                if owner and owner not in sink:
                    sink[owner] = time.perf_counter()
                    self.changed.set()

    @staticmethod
    def _owner(ref: Any, obj: dict[str, Any]) -> str | None:
        if ref is INFERENCE_SERVICE:
            owners = obj["metadata"].get("ownerReferences") or []
            return str(owners[0]["name"]) if owners else None
        conditions = (obj.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "InferenceServiceReady" for c in conditions):
            return str(obj["metadata"]["name"])
        return None

    async def until(self, names: Iterable[str], timeout: float, *, status: bool = False) -> None:
        wanted = set(names)
        async with asyncio.timeout(timeout):
            while not (wanted <= set(self.isvcs) and (not status or wanted <= set(self.statuses))):
                self.changed.clear()
                await self.changed.wait()

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


CONCURRENCY = 32  # create_all's, the minimal writer's too
IDLE_WINDOW = 5.0  # seconds over which the settled operator's own CPU is measured


def bus_messages(stack: Stack) -> dict[str, int]:
    """Messages each client connection has sent to nats-server so far (its ``/connz``), by name."""
    if stack.nats is None:
        return {}
    url = f"http://127.0.0.1:{stack.nats.monitor_port}/connz?limit=1024"
    with urllib.request.urlopen(url, timeout=10) as response:
        conns = json.load(response).get("connections") or []
    sent: dict[str, int] = {}
    for conn in conns:
        name = str(conn.get("name") or "?")
        sent[name] = sent.get(name, 0) + int(conn.get("in_msgs") or 0)
    return sent


def write_calls(pid: int) -> int:
    """Write system calls of a process so far (sockets, pipes, files: ``syscw`` of /proc/PID/io)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            fields = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
    except OSError:
        return 0
    return int(fields.get("syscw", "0"))


async def minimal_writer(kube: Kube, template: str, names: list[str]) -> float:
    """Seconds the requests the operator needs take for ``names``, issued directly: the AIMService
    (paused, so the operator leaves it alone), its InferenceService (the deployer's body for
    ``template``) and the status the operator wrote for ``template``."""
    isvcs, _ = await kube.list(INFERENCE_SERVICE, NS)
    isvc = next((i for i in isvcs if Seen._owner(INFERENCE_SERVICE, i) == template), None)
    done = await kube.get(AIMSVC, NS, template)
    if isvc is None or done is None:
        raise RuntimeError(f"no InferenceService or AIMService {template} to copy")
    status = done.get("status") or {}
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(name: str) -> None:
        async with gate:
            created = await kube.create(AIMSVC, service(name, paused=True))
            body = copy.deepcopy(isvc)
            body["metadata"] = {
                "name": name,
                "namespace": NS,
                "labels": isvc["metadata"].get("labels") or {},
                "annotations": isvc["metadata"].get("annotations") or {},
                "ownerReferences": [
                    {
                        "apiVersion": AIMSVC.api_version,
                        "kind": AIMSVC.kind,
                        "name": name,
                        "uid": created["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            }
            body.pop("status", None)
            await kube.create(INFERENCE_SERVICE, body)
            await kube.patch_status(AIMSVC, NS, name, {"status": status})

    started = time.perf_counter()
    await asyncio.gather(*(one(n) for n in names))
    return time.perf_counter() - started


async def measure(
    stack: Stack, hub: HubServer, singles: int, bulk: int, profile: Path | None = None
) -> dict[str, Any]:
    kube = Kube(await connect(str(stack.kubeconfig)), field_manager="aim-bench")
    pids = operator_pids(stack)
    everything = [*control_plane_pids(stack).values(), *pids.values()]  # what must be quiet to measure
    named = {**control_plane_pids(stack), **pids, BENCH: os.getpid()}  # whose CPU the splits name
    try:
        await prepare(kube, hub)
        seen = Seen(kube)
        await seen.start()
        await create_all_services(kube, ["warmup"])
        await seen.until(["warmup"], timeout=120, status=True)
        say(f"settled after {await settled(everything):.1f} s")

        # 1. operator overhead, one service at a time
        overheads = []
        for i in range(singles):
            name = f"single-{i:04d}"
            started = time.perf_counter()
            await kube.create(AIMSVC, service(name))
            await seen.until([name], timeout=60)
            overheads.append((seen.isvcs[name] - started) * 1000)
        p50, p99 = percentile(overheads, 0.5), percentile(overheads, 0.99)
        say(f"apply -> InferenceService: p50 {p50:.1f} ms, p99 {p99:.1f} ms over {singles} services")
        await seen.until([f"single-{i:04d}" for i in range(singles)], timeout=120, status=True)

        # 2. plain creates: paused AIMServices, which nothing reconciles
        plain = [service(f"plain-{i:04d}", paused=True) for i in range(bulk)]
        started = time.perf_counter()
        await create_all(kube, plain)
        plain_seconds = time.perf_counter() - started
        say(f"{bulk} plain creates accepted in {plain_seconds:.2f} s")

        # 3. the same number deployed: InferenceService created and status written; measured once
        # the paused ones have been through the watcher and the deployer, so their CPU is not the
        # burst's
        say(f"settled after {await settled(everything):.1f} s")
        names = [f"bulk-{i:04d}" for i in range(bulk)]
        before = await request_counts(kube)
        services = {n: p for n, p in pids.items() if n != "nats-server"}
        profiler = Profiler(profile, services) if profile else None
        if profiler:
            profiler.start()
            await asyncio.sleep(1)  # py-spy attaches
        # the operator's idle CPU (resync timers, heartbeats) is not the burst's: measured over a
        # quiet window first, and taken out of the burst's CPU for its duration
        idle_from, idle_started = sum(cpu_of(pids).values()), time.perf_counter()
        await asyncio.sleep(IDLE_WINDOW)
        idle_rate = (sum(cpu_of(pids).values()) - idle_from) / (time.perf_counter() - idle_started)
        split_before, bus_before = sample(named), bus_messages(stack)
        cpu_before = {n: split_before.processes[n] for n in pids}
        writes_before = {n: write_calls(p) for n, p in pids.items()}
        system_before = {n: cpu_seconds(p, system_only=True) for n, p in pids.items()}
        api_profiler = api_server_profiler(stack, profile)
        started = time.perf_counter()
        await create_all_services(kube, names)
        await seen.until(names, timeout=900, status=True)
        bulk_seconds = time.perf_counter() - started
        burst = Split.between(split_before, sample(named))
        converged_cpu = {n: burst.processes[n] for n in pids}  # to the last status
        sent = {n: (v - bus_before.get(n, 0)) / bulk for n, v in bus_messages(stack).items()}
        syscw = {n: (write_calls(p) - writes_before[n]) / bulk for n, p in pids.items()}
        syscw = {n: v for n, v in syscw.items() if v >= 0.01}
        system = {n: cpu_seconds(p, system_only=True) - system_before[n] for n, p in pids.items()}
        sent = {n: v for n, v in sent.items() if v >= 0.01}
        await profiles_said(profiler, api_profiler, profile)
        converged_counts = await request_counts(kube)
        await seen.stop()
        # what the burst defers is still its cost: the Events the rate limit queued, the status
        # service's backlog, resyncs of the new objects; counted until the operator is idle again
        drained = await events_drained(kube, timeout=600)
        idle_after = await settled(pids.values(), timeout=600)
        say(f"the operator idle {drained + idle_after:.1f} s after the last status")
        after = await request_counts(kube)
        cpu = {n: t - cpu_before[n] for n, t in cpu_of(pids).items()}
        idle_seconds = time.perf_counter() - started
        say("CPU during the burst: " + ", ".join(f"{n} {t:.2f} s" for n, t in sorted(cpu.items())))
        say("write system calls per service: " + ", ".join(f"{n} {v:.2f}" for n, v in sorted(syscw.items())))
        say("NATS messages sent per service: " + ", ".join(f"{n} {v:.2f}" for n, v in sorted(sent.items())))

        # 4. the same requests from a minimal client, alone: the operator and NATS stopped
        # (SIGSTOP) and the control plane settled, as the burst began on a settled machine
        with stopped(pids.values()):
            say(f"control plane settled after {await settled(control_plane_pids(stack).values()):.1f} s")
            minimal_names = [f"minimal-{i:04d}" for i in range(bulk)]
            split_before = sample(named)
            minimal_seconds = await minimal_writer(kube, "single-0000", minimal_names)
            alone = Split.between(split_before, sample(named))
        say(f"the minimal writer's {3 * bulk} requests took {minimal_seconds:.2f} s (operator stopped)")
        free = burst.seconds_without(pids)
        say(
            f"CPU: the burst kept {burst.busy_cores:.2f} cores busy, the minimal writer "
            f"{alone.busy_cores:.2f}; the burst without the operator's CPU: {free:.2f} s"
        )
        writes = api_writes(after, before)
        converged_writes = api_writes(converged_counts, before)
        served = sorted(((v, k) for k, v in delta(after, before).items() if v >= bulk / 10), reverse=True)
        say(
            "API requests during the bulk phase: "
            + ", ".join(f"{v:.0f} {verb} {res}" for v, (verb, res) in served)
        )
        per_service = (writes - bulk) / bulk  # minus the bench's own creates
        converged_per_service = (converged_writes - bulk) / bulk
        say(f"{bulk} AIMServices deployed (InferenceService + status) in {bulk_seconds:.2f} s")
        say(f"API writes by the operator: {per_service:.2f} per AIMService")
    finally:
        await kube.close()
    return {
        "overhead_p50_ms": round(p50, 1),
        "overhead_p99_ms": round(p99, 1),
        "cpu_ms_per_service": round((sum(cpu.values()) - idle_rate * idle_seconds) * 1000 / bulk, 2),
        "idle_cpu_cores": round(idle_rate, 4),
        # the figures the earlier rounds reported: up to the last status, without what it deferred
        "cpu_ms_per_service_at_last_status": round(
            (sum(converged_cpu.values()) - idle_rate * bulk_seconds) * 1000 / bulk, 2
        ),
        "api_writes_per_service_at_last_status": round(converged_per_service, 2),
        "cpu_seconds": {n: round(t, 2) for n, t in sorted(cpu.items())},
        "cpu_system_seconds": {n: round(t, 2) for n, t in sorted(system.items()) if t >= 0.01},
        "ratio_vs_minimal_writer": round(minimal_seconds / bulk_seconds, 3),
        "minimal_writer_seconds": round(minimal_seconds, 2),
        "ratio_vs_raw_create": round(plain_seconds / bulk_seconds, 3),
        "bulk_services": bulk,
        "bulk_seconds": round(bulk_seconds, 2),
        "plain_create_seconds": round(plain_seconds, 2),
        "api_writes_per_service": round(per_service, 2),
        "bus_messages_per_service": {n: round(v, 2) for n, v in sorted(sent.items())},
        "write_syscalls_per_service": {n: round(v, 2) for n, v in sorted(syscw.items())},
        "single_samples": singles,
        # who spent the CPU of the burst (to the last status) and of the minimal writer
        # (CPU-seconds; ``other``: busy time no named process accounts for), and the ratio had the
        # operator's own CPU been free (the rest of the burst's busy time over the machine's cores)
        "burst_cpu_seconds": burst.figures(),
        "minimal_writer_cpu_seconds": alone.figures(),
        "ratio_if_operator_free": round(minimal_seconds / free, 3) if free > 0 else None,
    }


@contextlib.contextmanager
def stopped(pids: Iterable[int]) -> Iterator[None]:
    """The bench's own processes stopped (SIGSTOP) while the block runs, continued after it, so a
    reference measured in the block runs alone; the API server keeps their watches open, and the
    operator catches up on what it missed once continued (not part of any figure)."""
    held = list(pids)
    for pid in held:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in held:
            os.kill(pid, signal.SIGCONT)


async def create_all_services(kube: Kube, names: list[str]) -> None:
    await create_all(kube, [service(n) for n in names])


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each numeric figure's median over ``runs`` (the budgets are judged on medians, not on one
    good run), with every run's figures under ``runs``."""
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [r.get(key) for r in runs]
        numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if len(numbers) == len(values):
            out[key] = round(statistics.median(numbers), 3)
    out["runs"] = runs
    return out


def main(home: str | None, singles: int, bulk: int, profile: str | None = None, repeat: int = 1) -> int:
    """``repeat`` runs, each on a stack of its own (``home`` is used by a single run only)."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="aim-bench-hub-") as tmp:
        add_repo(Path(tmp), REPO, FILES, lfs_threshold=1024)
        hub = HubServer(Path(tmp)).start()
        try:
            for run in range(repeat):
                if repeat > 1:
                    say(f"run {run + 1} of {repeat}")
                with embedded_stack(
                    Path(home) if home and repeat == 1 else None, profiling=profile is not None
                ) as stack:
                    where = Path(profile) / f"run-{run + 1}" if profile else None
                    runs.append(asyncio.run(measure(stack, hub, singles, bulk, where)))
        finally:
            hub.stop()
    print(json.dumps(stamped(runs[0] if repeat == 1 else medians(runs))))
    return 0
