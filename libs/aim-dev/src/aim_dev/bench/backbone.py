"""``aimctl bench backbone``: the event backbone's figures against the embedded stack
(docs/design.md#performance-budgets).

It starts the whole embedded system in a temporary home (or uses ``--home``), then measures:

- apply → status latency for single AIMServices (p50, p99): from the create call until a watch
  sees the status the operator wrote;
- throughput at 1,000 AIMServices applied at once: time until every one has status, against the
  time the same API server takes to accept 1,000 plain creates (paused AIMServices, which the
  operator leaves alone), and the API writes the operator spent per service; who spent the
  burst's CPU (``burst_cpu_seconds``: the control plane's and the operator's processes, the bench
  itself, the rest of the machine) and ``events_per_s_if_operator_free``, the rate had the
  operator's own CPU cost nothing (:mod:`aim_dev.bench.cpu`);
- API calls per minute in a steady state with no changes (from the API server's own metrics).

Human-readable lines go to stderr; the last line on stdout is one JSON object.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from aim_dev.bench.cpu import Split, cpu_seconds, sample
from aim_dev.bench.profile import ApiServerProfiler, Profiler
from aim_dev.local.consuming import SERVICES
from aim_dev.local.stack import Stack
from aimcore.api.bus.mirror import PAUSE_ANNOTATION
from aimcore.api.kinds import CHILD_KINDS, NAMESPACE, NODE, by_kind, crd_kinds
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
SPEC = {"model": {"name": "m"}}
Counts = dict[tuple[str, str], float]
# What the operator reads and writes; calls on other resources come from other clients.
OPERATOR_RESOURCES = {k.plural for k in (*crd_kinds(), *CHILD_KINDS, NODE)}
_METRIC = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def manifest(name: str, namespace: str, *, paused: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if paused:
        meta["annotations"] = {PAUSE_ANNOTATION: "true"}
    return {
        "apiVersion": AIMSVC.api_version,
        "kind": AIMSVC.kind,
        "metadata": meta,
        "spec": {"model": {"name": "m"}},
    }


async def request_counts(kube: Kube) -> Counts:
    """apiserver_request_total summed by (verb, resource)."""
    text = await kube.text("/metrics")
    counts: Counts = {}
    for line in str(text).splitlines():
        m = _METRIC.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
        key = (labels.get("verb", ""), labels.get("resource", ""))
        counts[key] = counts.get(key, 0.0) + float(m.group("value"))
    return counts


def delta(
    after: dict[tuple[str, str], float], before: dict[tuple[str, str], float]
) -> dict[tuple[str, str], float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}


WRITE_VERBS = frozenset({"POST", "PATCH", "PUT", "APPLY"})  # APPLY: server-side apply


def api_writes(after: Counts, before: Counts) -> float:
    """Write requests the API server served between two :func:`request_counts`."""
    return sum(v for (verb, _), v in delta(after, before).items() if verb in WRITE_VERBS)


async def events_drained(kube: Kube, *, quiet: float = 3.0, timeout: float = 120.0) -> float:
    """Wait until the API server has served no Event write for ``quiet`` seconds (the status
    service's queue is empty); returns the seconds waited."""
    started = time.monotonic()

    async def event_writes() -> float:
        counts = await request_counts(kube)
        return sum(v for (verb, res), v in counts.items() if res == "events" and verb in WRITE_VERBS)

    last, calm_since = await event_writes(), time.monotonic()
    while time.monotonic() - started < timeout and time.monotonic() - calm_since < quiet:
        await asyncio.sleep(0.5)
        now = await event_writes()
        if now != last:
            last, calm_since = now, time.monotonic()
    return time.monotonic() - started


class StatusWatch:
    """Notes when each AIMService in a namespace first has a status."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.seen: dict[str, float] = {}
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        _, rv = await self.kube.list(AIMSVC, self.namespace)
        self.task = asyncio.create_task(self._follow(rv))

    async def _follow(self, rv: str) -> None:
        while True:
            async for event in self.kube.watch(AIMSVC, rv, namespace=self.namespace, timeout_seconds=60):
                obj = event["object"]
                rv = obj["metadata"]["resourceVersion"]
                name = obj["metadata"].get("name")
                if name and (obj.get("status") or {}).get("status") and name not in self.seen:
                    self.seen[name] = time.perf_counter()
                    self.changed.set()

    async def until(self, names: Iterable[str], timeout: float) -> None:
        wanted = set(names)
        async with asyncio.timeout(timeout):
            while not wanted <= set(self.seen):
                self.changed.clear()
                await self.changed.wait()

    async def stop(self) -> None:
        if self.task:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


async def create_all(kube: Kube, bodies: list[dict[str, Any]], concurrency: int = 32) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any]) -> None:
        async with gate:
            await kube.create(by_kind(str(body["apiVersion"]).partition("/")[0], body["kind"]), body)

    await asyncio.gather(*(one(b) for b in bodies))


async def namespace(kube: Kube, name: str) -> None:
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def measure(
    stack: Stack, singles: int, bulk: int, idle_seconds: float, profile: Path | None = None
) -> dict[str, Any]:
    """The figures (``profile``: py-spy on every service and the API server's Go profile during
    the burst, into that directory)."""
    services = {n: p for n, p in operator_pids(stack).items() if n != "nats-server"}
    # what must be quiet before a measurement, and whose CPU the burst's split names
    named = {**control_plane_pids(stack), **operator_pids(stack), BENCH: os.getpid()}
    pids = list(named.values())
    kube = Kube(await connect(str(stack.kubeconfig)), field_manager="aim-bench")
    try:
        # Let the services settle (consumers bound, initial resyncs done) before measuring.
        await namespace(kube, "bench-warmup")
        warm = StatusWatch(kube, "bench-warmup")
        await warm.start()
        await kube.create(AIMSVC, manifest("warmup", "bench-warmup"))
        await warm.until(["warmup"], timeout=120)
        await warm.stop()
        say(f"settled after {await settled(pids):.1f} s")

        # 1. apply -> status latency, one object at a time.
        await namespace(kube, "bench-latency")
        watch = StatusWatch(kube, "bench-latency")
        await watch.start()
        latencies = []
        for i in range(singles):
            name = f"single-{i:04d}"
            started = time.perf_counter()
            await kube.create(AIMSVC, manifest(name, "bench-latency"))
            await watch.until([name], timeout=60)
            latencies.append((watch.seen[name] - started) * 1000)
        await watch.stop()
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        say(f"apply -> status: p50 {p50:.1f} ms, p99 {p99:.1f} ms over {singles} objects")

        # 2. plain creates: paused AIMServices, which nothing reconciles.
        await namespace(kube, "bench-plain")
        plain = [manifest(f"plain-{i:04d}", "bench-plain", paused=True) for i in range(bulk)]
        started = time.perf_counter()
        await create_all(kube, plain)
        plain_seconds = time.perf_counter() - started
        say(f"{bulk} plain creates accepted in {plain_seconds:.2f} s")

        # 3. the same number reconciled to status, once the paused ones have been through the
        # watcher and the deployer (which only look at them), so the burst is measured alone.
        say(f"settled after {await settled(pids):.1f} s")
        await namespace(kube, "bench-bulk")
        watch = StatusWatch(kube, "bench-bulk")
        await watch.start()
        names = [f"bulk-{i:04d}" for i in range(bulk)]
        before = await request_counts(kube)
        profiler = Profiler(profile, services) if profile else None
        if profiler:
            profiler.start()
            await asyncio.sleep(1)  # py-spy attaches
        cpu_before = sample(named)
        api_profiler = api_server_profiler(stack, profile)
        started = time.perf_counter()
        await create_all(kube, [manifest(n, "bench-bulk") for n in names])
        await watch.until(names, timeout=600)
        bulk_seconds = time.perf_counter() - started
        burst = Split.between(cpu_before, sample(named))
        await profiles_said(profiler, api_profiler, profile)
        await watch.stop()
        after = await request_counts(kube)
        writes = api_writes(after, before)
        operator_writes = writes - bulk  # the bench's own creates
        per_service = operator_writes / bulk
        say(f"{bulk} AIMServices reconciled to status in {bulk_seconds:.2f} s")
        say(f"API writes by the operator: {per_service:.2f} per AIMService")
        operator = [n for n in named if n in OPERATOR_PROCESSES]
        ceiling = bulk / max(burst.seconds_without(operator), 1e-9)
        mine, rest = burst.of(operator) * 1000 / bulk, (burst.busy - burst.of(operator)) * 1000 / bulk
        say(
            f"CPU in the burst: {burst.busy_cores:.2f} of {burst.cores} cores busy; per AIMService the "
            f"operator {mine:.2f} ms, the rest {rest:.2f} ms; {ceiling:.0f}/s with the operator's CPU free"
        )

        # 4. steady state: nothing changes; count the API calls. Trailing work first: the status
        # service's Events of the burst drain at its Event rate limit (20/s) for up to a minute.
        await asyncio.sleep(5)
        say(f"the burst's Events written {await events_drained(kube):.0f} s later")
        before = await request_counts(kube)
        await asyncio.sleep(idle_seconds)
        after = await request_counts(kube)
        quiet = delta(after, before)
        calls = sum(v for (_, res), v in quiet.items() if res in OPERATOR_RESOURCES)
        others = sum(quiet.values()) - calls - 1  # kube-controller-manager etc.; minus our metrics read
        per_minute = calls * 60 / idle_seconds
        say(
            f"steady state: {calls:.0f} operator API calls in {idle_seconds:.0f} s ({per_minute:.1f}/min); "
            f"{others:.0f} by other clients (controller manager)"
        )
        seen = sorted((v, k) for k, v in quiet.items() if k[1] in OPERATOR_RESOURCES and v)
        say(
            "  of which: "
            + (", ".join(f"{v:.0f} {verb} {res}" for v, (verb, res) in reversed(seen)) or "none")
        )
    finally:
        await kube.close()
    return {
        "apply_to_status_p50_ms": round(percentile(latencies, 0.5), 1),
        "apply_to_status_p99_ms": round(percentile(latencies, 0.99), 1),
        "events_per_s": round(bulk / bulk_seconds, 1),
        "steady_state_api_calls_per_min": round(per_minute, 1),
        "steady_state_other_clients_calls_per_min": round(others * 60 / idle_seconds, 1),
        "bulk_objects": bulk,
        "bulk_seconds": round(bulk_seconds, 2),
        "plain_create_seconds": round(plain_seconds, 2),
        "throughput_ratio": round(plain_seconds / bulk_seconds, 3),
        "api_writes_per_service": round(operator_writes / bulk, 2),
        "single_samples": singles,
        # who spent the burst's CPU (CPU-seconds; ``other``: the machine's busy time no named
        # process accounts for), and the rate had the operator's part been free
        "burst_cpu_seconds": burst.figures(),
        "operator_cpu_ms_per_service": round(mine, 2),
        "events_per_s_if_operator_free": round(ceiling, 1),
    }


@contextlib.contextmanager
def embedded_stack(home: Path | None, *, profiling: bool = False) -> Iterator[Stack]:
    """The whole embedded system, in ``home`` or a temporary directory, for one benchmark
    (``profiling``: its API server serves Go's profiles)."""
    with tempfile.TemporaryDirectory(prefix="aim-bench-") as tmp:
        stack = Stack(home=home or Path(tmp), profiling=profiling)
        say(f"starting the embedded stack in {stack.home} ...")
        stack.start()
        try:
            yield stack
        finally:
            stack.stop()


def api_server_profiler(stack: Stack, directory: Path | None) -> ApiServerProfiler | None:
    """With ``--profile``: the API server's profile of the burst, started now."""
    if directory is None or stack.cluster is None or not stack.cluster.profiling:
        return None
    profiler = ApiServerProfiler(stack.cluster, directory)
    profiler.start()
    return profiler


async def profiles_said(
    profiler: Profiler | None, api_profiler: ApiServerProfiler | None, directory: Path | None
) -> None:
    """Stop the burst's profilers and say what they found: the top frames of the deployer, the
    status service and the watcher, and where every profile is."""
    if profiler:
        profiles = await asyncio.to_thread(profiler.stop)
        for name in ("deployer", "status", "watcher"):
            if name in profiles:
                say(profiles[name].summary())
        say(f"profiles (py-spy collapsed stacks) in {directory}")
    if api_profiler:
        say(await asyncio.to_thread(api_profiler.stop))


def control_plane_pids(stack: Stack) -> dict[str, int]:
    """etcd, kube-apiserver and kube-controller-manager."""
    procs = stack.cluster.processes if stack.cluster is not None else []
    return {proc.name: proc.pid for proc in procs if proc.pid is not None}


async def settled(
    pids: Iterable[int], *, share: float = 0.2, quiet: float = 2.0, timeout: float = 90.0
) -> float:
    """Wait until ``pids`` together use less than ``share`` of one core for ``quiet`` seconds
    (at most ``timeout``); returns the seconds waited.

    A freshly started API server spends seconds of both cores after the CRDs are installed
    (publishing their OpenAPI schemas), and the operator's first list and resync follow; measured
    latencies would be that work's, not the operator's per-object cost."""
    pids = list(pids)
    started = time.monotonic()
    calm_since: float | None = None
    before = sum(cpu_seconds(pid) for pid in pids)
    while time.monotonic() - started < timeout:
        await asyncio.sleep(0.25)
        used = sum(cpu_seconds(pid) for pid in pids)
        busy = (used - before) / 0.25
        before = used
        now = time.monotonic()
        if busy >= share:
            calm_since = None
        elif calm_since is None:
            calm_since = now
        elif now - calm_since >= quiet:
            break
    return time.monotonic() - started


BENCH = "bench"
"""The benchmark's own process (its API client and watches), in a CPU split."""
OPERATOR_PROCESSES = frozenset({*SERVICES, "nats-server"})


def operator_pids(stack: Stack) -> dict[str, int]:
    """The six services and nats-server (named as in :data:`OPERATOR_PROCESSES`)."""
    pids = {name: proc.pid for name, proc in stack.services.items() if proc.pid is not None}
    if stack.nats is not None and stack.nats.process is not None and stack.nats.process.pid is not None:
        pids["nats-server"] = stack.nats.process.pid
    return pids


def stamped(figures: dict[str, Any]) -> dict[str, Any]:
    """``figures`` with the machine and the date they were measured on."""
    figures["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    figures["date"] = time.strftime("%Y-%m-%d")
    return figures


def backbone(
    home: Path | None, singles: int, bulk: int, idle_seconds: float, profile: Path | None = None
) -> dict[str, Any]:
    with embedded_stack(home, profiling=profile is not None) as stack:
        figures = asyncio.run(measure(stack, singles, bulk, idle_seconds, profile))
    return stamped(figures)


def main(home: str | None, singles: int, bulk: int, idle_seconds: float, profile: str | None = None) -> int:
    figures = backbone(
        Path(home) if home else None, singles, bulk, idle_seconds, Path(profile) if profile else None
    )
    print(json.dumps(figures))
    return 0
