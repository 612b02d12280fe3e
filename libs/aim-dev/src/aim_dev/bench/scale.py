"""``aimctl bench scale``: how every cost of the operator grows with the number of objects (issue 29).

One embedded stack grows through the sizes (``--sizes``, default 1000,10000,50000 AIMServices, in
ascending order). At each size the population is what a cluster of that size holds: the
AIMServices spread over namespaces of :data:`PER_NAMESPACE`, and per :data:`PER_GROUP` services one
AIMModel, one AIMServiceTemplate and one AIMTemplateCache (inline sources, no GPU, a small model
downloaded from a local Hub-compatible server by the cache service's local executor), all brought
to Ready by the operator itself. Growing is not measured: the bench waits until the operator has
converged (every AIMService has its InferenceService and a status of its generation, every durable
consumer drained, the operator's processes idle) and only then measures, at that size:

- **idle**: the CPU of each process over ``--idle`` seconds (default 300) in which nothing changes;
- **memory**: each process's resident memory, and nats-server's JetStream storage on disk; the
  processes' memory again after the resync below (a process keeps its peak: the budget counts the
  larger);
- **one full resync**, asked of the watcher (``SIGUSR1``; the periodic one does the same work every
  ``AIM_RESYNC_SECONDS``): CPU of each process and the API requests, from the signal until the
  operator has converged again, less the idle CPU of that time. ``resync_core_share`` is that CPU
  spread over the default interval (:data:`aimcore.runtime.settings.process.RESYNC_SECONDS`):
  the budget is 0.1 core;
- **restart to ready**: each service, then nats-server, stopped (SIGTERM) and started again, the
  seconds from the start until ``/readyz`` answers 200 (nats-server: ``/healthz``);
- **the whole operator restarted**: every service and nats-server stopped, then started; the
  seconds until it has converged again (the watcher resumes its watches where it stopped, so only
  what changed meanwhile is published and handled).

Resyncs and restarts are taken apart by more than JetStream's duplicate window (two minutes): a
version republished within it is stored once, which would hide the work.

``--repeat N`` measures N rounds at each size, one after the other on the same grown stack (a
budget counts when every round meets it): the figures of the first round are the size's, every
round's headline figures are under ``rounds`` and the budgets of each round under
``budgets_each_round``.

``--profile DIR`` runs py-spy on each service during each resync, and on the watcher and the
deployer from their restart until ready (:mod:`aim_dev.bench.profile`; collapsed stacks under
``DIR``, the top frames to stderr); a profiled run's figures are not the benchmark's.

The bench's own requests are left out of the API figures (its convergence checks read NATS, not
the API server, while a figure is being measured). Human-readable lines and a Markdown table go to
stderr; ``--out DIR`` gets ``scale.json`` and ``scale.png`` (each figure against the object count,
log-log, with a line of slope 1 for reference); the last line on stdout is one JSON object:
``sizes``, per size its figures, and ``growth`` (each figure's exponent between successive sizes:
1.0 is linear).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aim_dev.bench.backbone import (
    OPERATOR_RESOURCES,
    control_plane_pids,
    create_all,
    delta,
    embedded_stack,
    namespace,
    operator_pids,
    request_counts,
    say,
    stamped,
)
from aim_dev.bench.cpu import cpu_of
from aim_dev.bench.memory import memory, mirrored
from aim_dev.bench.profile import Profiler
from aim_dev.local import consuming
from aim_dev.local.hub import HubServer, add_repo
from aim_dev.local.stack import Stack
from aimcore.api.kinds import GROUP_AIM, by_kind
from aimcore.runtime import Kube, connect_bus
from aimcore.runtime.kube import connect
from aimcore.runtime.settings.process import RESYNC_SECONDS

AIMSVC = by_kind(GROUP_AIM, "AIMService")
MODEL = by_kind(GROUP_AIM, "AIMModel")
TEMPLATE = by_kind(GROUP_AIM, "AIMServiceTemplate")
TEMPLATE_CACHE = by_kind(GROUP_AIM, "AIMTemplateCache")
PER_NAMESPACE = 1000
"""AIMServices per namespace."""
PER_GROUP = 100
"""AIMServices per model (with its template and template cache)."""
REPO = "bench/tiny"
FILES = {"config.json": b'{"architectures": ["LlamaForCausalLM"]}', "model.safetensors": bytes(64 * 1024)}
DEFAULT_RESYNC_SECONDS = RESYNC_SECONDS
"""The interval the resync's CPU is spread over (``AIM_RESYNC_SECONDS``' default)."""
RESYNC_BUDGET_CORES = 0.1
TOTAL_RSS_BUDGET_MIB = 2048
READY_BUDGET_SECONDS = 60.0
DUPLICATE_WINDOW = 125.0
"""JetStream's duplicate window (120 s) and a margin: a republish after it is not deduplicated."""
MIB = 2**20
BENCH_RESYNC_SECONDS = "86400"
"""The stack's own resync interval: only the resync the bench asks for happens while it measures."""


# --- the population (pure) -------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """Where AIMService number ``index`` lives and what it uses."""

    index: int

    @property
    def namespace(self) -> str:
        return f"bench-scale-{self.index // PER_NAMESPACE:03d}"

    @property
    def name(self) -> str:
        return f"svc-{self.index:05d}"

    @property
    def group(self) -> str:
        """The model, template and template cache of this service (one per :data:`PER_GROUP`)."""
        return f"g{(self.index % PER_NAMESPACE) // PER_GROUP:02d}"


def groups_between(start: int, stop: int) -> list[Slot]:
    """One slot per new group among services ``start``..``stop - 1`` (the first service of each)."""
    return [Slot(i) for i in range(start, stop) if i % PER_GROUP == 0]


def namespaces_between(start: int, stop: int) -> list[str]:
    return sorted({Slot(i).namespace for i in range(start, stop) if i % PER_NAMESPACE == 0})


def group_bodies(slot: Slot, hub_endpoint: str) -> list[dict[str, Any]]:
    """The model, template and template cache of ``slot``'s group."""
    source = {"modelId": REPO, "sourceUri": f"hf://{REPO}", "size": "1Mi"}
    meta = {"namespace": slot.namespace}
    return [
        {
            "apiVersion": MODEL.api_version,
            "kind": MODEL.kind,
            "metadata": {**meta, "name": f"{slot.group}-model"},
            "spec": {
                "image": "ghcr.io/bench/aim-base:1.0",
                "modelSources": [source],
                "custom": {"hardware": {"cpu": {"requests": "1"}}},
                "discovery": {"extractMetadata": False, "createServiceTemplates": False},
            },
        },
        {
            "apiVersion": TEMPLATE.api_version,
            "kind": TEMPLATE.kind,
            "metadata": {**meta, "name": f"{slot.group}-template"},
            "spec": {"modelName": f"{slot.group}-model", "modelSources": [source], "type": "optimized"},
        },
        {
            "apiVersion": TEMPLATE_CACHE.api_version,
            "kind": TEMPLATE_CACHE.kind,
            "metadata": {**meta, "name": f"{slot.group}-cache"},
            "spec": {
                "templateName": f"{slot.group}-template",
                "env": [{"name": "HF_ENDPOINT", "value": hub_endpoint}],
            },
        },
    ]


def service_body(slot: Slot) -> dict[str, Any]:
    spec = {"model": {"name": f"{slot.group}-model"}, "template": {"name": f"{slot.group}-template"}}
    return {
        "apiVersion": AIMSVC.api_version,
        "kind": AIMSVC.kind,
        "metadata": {"name": slot.name, "namespace": slot.namespace},
        "spec": spec,
    }


def growth(sizes: Sequence[int], values: Sequence[float]) -> list[float | None]:
    """The exponent ``k`` of ``value ~ size**k`` between each pair of successive sizes (1.0: linear;
    ``None`` where a value is not positive)."""
    out: list[float | None] = []
    points = list(zip(sizes, values, strict=True))
    for (n1, v1), (n2, v2) in itertools.pairwise(points):
        out.append(round(math.log(v2 / v1) / math.log(n2 / n1), 2) if v1 > 0 and v2 > 0 else None)
    return out


def flatten(figures: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number of ``figures`` under a dotted key (``idle_cpu_cores.deployer``)."""
    out: dict[str, float] = {}
    for key, value in figures.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out |= flatten(value, f"{name}.")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    return out


def growth_table(per_size: Sequence[Mapping[str, Any]]) -> dict[str, list[float | None]]:
    sizes = [int(f["services"]) for f in per_size]
    flat = [flatten(f) for f in per_size]
    keys = [k for k in flat[0] if k != "services" and all(k in f for f in flat)]
    return {k: growth(sizes, [f[k] for f in flat]) for k in keys}


TABLE_ROWS: tuple[tuple[str, str], ...] = (
    ("objects", "objects the operator mirrors (every kind it watches)"),
    ("idle_cpu_cores.total", "idle CPU, operator + NATS (cores)"),
    ("resync.cpu_seconds.total", "one full resync: CPU-s, operator + NATS"),
    ("resync.core_share", f"resync CPU over a {RESYNC_SECONDS:.0f} s interval (cores; budget 0.1)"),
    ("resync.api_requests", "one full resync: API requests"),
    ("resync.seconds", "one full resync: seconds until converged"),
    ("rss_mib.total", "RSS, six services + nats-server (MiB; budget 2048)"),
    ("rss_mib_after_resync.total", "RSS after one full resync (MiB; budget 2048)"),
    ("nats_storage_mib", "NATS storage on disk (MiB)"),
    ("ready_seconds.max", "slowest restart to ready (s; budget 60)"),
    ("converge_after_restart_seconds", "whole operator restarted: seconds to converge"),
)


def number(value: float) -> str:
    """Three significant figures, thousands written out (``102,050``, ``25.3``, ``0.0422``)."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def table(per_size: Sequence[Mapping[str, Any]]) -> str:
    """The headline figures, one column per size, as Markdown."""
    flat = [flatten(f) for f in per_size]
    head = "| figure | " + " | ".join(f"{int(f['services']):,} services" for f in per_size) + " |"
    lines = [head, "|---|" + "---|" * len(per_size)]
    for key, label in TABLE_ROWS:
        cells = [number(f[key]) if key in f else "—" for f in flat]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    processes = sorted(
        {k.split(".", 1)[1] for f in flat for k in f if k.startswith("ready_seconds.")} - {"max"}
    )
    for proc in processes:
        cells = [f"{f.get(f'ready_seconds.{proc}', float('nan')):.1f}" for f in flat]
        lines.append(f"| restart to ready: {proc} (s) | " + " | ".join(cells) + " |")
    for proc in sorted({k.split(".", 1)[1] for f in flat for k in f if k.startswith("rss_mib.")} - {"total"}):
        cells = [f"{f.get(f'rss_mib.{proc}', float('nan')):.0f}" for f in flat]
        lines.append(f"| RSS: {proc} (MiB) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- measuring (I/O) -------------------------------------------------------------------------


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return 0


def _metrics(stack: Stack, service: str) -> str:
    url = f"http://127.0.0.1:{stack.health_ports[service]}/metrics"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return str(resp.read().decode())


def _counter(stack: Stack, service: str, name: str) -> dict[str, float]:
    """Counter ``name`` of ``service``, by its labels."""
    out: dict[str, float] = {}
    for line in _metrics(stack, service).splitlines():
        if line.startswith(name + "{"):
            labels, _, value = line.rpartition(" ")
            out[labels] = float(value)
    return out


def resyncs(stack: Stack) -> dict[str, float]:
    """``aim_watcher_resyncs_total`` of the watcher, by kind."""
    return _counter(stack, "watcher", "aim_watcher_resyncs_total")


def watcher_list_pages(stack: Stack) -> float:
    """LIST requests the watcher has sent (``aim_kube_list_pages_total``): what of the API server's
    LIST count is the watcher's, the rest being other clients' (kube-controller-manager's)."""
    return sum(_counter(stack, "watcher", "aim_kube_list_pages_total").values())


class Operator:
    """The embedded stack's processes as the bench sees them: CPU, memory, readiness, restarts."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack

    def pids(self) -> dict[str, int]:
        """The six services and nats-server (restarts give new pids)."""
        return operator_pids(self.stack)

    def cpu(self) -> dict[str, float]:
        return cpu_of(self.pids())

    def ready_url(self, name: str) -> str:
        if name == "nats-server":
            assert self.stack.nats is not None
            return f"http://127.0.0.1:{self.stack.nats.monitor_port}/healthz"
        return f"http://127.0.0.1:{self.stack.health_ports[name]}/readyz"

    async def until_ready(self, names: Sequence[str], timeout: float) -> dict[str, float]:
        """Seconds from now until each of ``names`` answers 200."""
        started = time.perf_counter()
        waiting, took = set(names), {}
        deadline = time.monotonic() + timeout
        while waiting:
            for name in sorted(waiting):
                if await asyncio.to_thread(_get, self.ready_url(name)) == 200:
                    took[name] = time.perf_counter() - started
                    waiting.discard(name)
            if waiting and time.monotonic() > deadline:
                raise TimeoutError(f"not ready after {timeout:.0f} s: {', '.join(sorted(waiting))}")
            await asyncio.sleep(0.1)
        return took

    def stop_service(self, name: str) -> None:
        self.stack.services[name].stop(grace=60.0)

    def start_service(self, name: str) -> None:
        self.stack.services[name] = self.stack._service(name).start()

    async def drained(self) -> bool:
        """Every durable consumer has nothing pending and nothing unacknowledged."""
        assert self.stack.nats is not None
        nc = await connect_bus(self.stack.nats.client("reader"), "aimctl-bench", forever=False)
        try:
            js = nc.jetstream()
            for stream, durable in consuming.consumers():
                info = await js.consumer_info(stream, durable)
                if info.num_pending or info.num_ack_pending:
                    return False
            return True
        finally:
            await nc.close()

    async def converged(self, timeout: float, *, quiet: float = 5.0) -> float:
        """Seconds until every consumer has been drained, and the operator's processes idle (under
        a tenth of a core together), for ``quiet`` seconds on end."""
        started = time.monotonic()
        calm_since: float | None = None
        before, at = sum(self.cpu().values()), time.monotonic()
        while time.monotonic() - started < timeout:
            await asyncio.sleep(1.0)
            used, now = sum(self.cpu().values()), time.monotonic()
            busy = (used - before) / (now - at)
            before, at = used, now
            try:
                calm = busy < 0.1 and await self.drained()
            except (OSError, TimeoutError, ConnectionError) as exc:  # NATS restarting
                say(f"  (consumers not readable yet: {exc!r})")
                calm = False
            if not calm:
                calm_since = None
            elif calm_since is None:
                calm_since = now
            elif now - calm_since >= quiet:
                return now - started - quiet
        raise TimeoutError(f"the operator did not converge within {timeout:.0f} s")


async def census(
    kube: Kube, namespaces: Sequence[str], ref: Any, counted: Callable[[Mapping[str, Any]], bool]
) -> tuple[int, dict[str, int]]:
    """How many objects of ``ref`` in ``namespaces`` are ``counted``, and all of them by state."""
    done, states = 0, dict[str, int]()
    for ns in namespaces:
        items, _ = await kube.list(ref, ns)
        for item in items:
            state = str((item.get("status") or {}).get("status") or "")
            states[state] = states.get(state, 0) + 1
            done += counted(item)
    return done, states


def ready(obj: Mapping[str, Any]) -> bool:
    return (obj.get("status") or {}).get("status") == "Ready"


def deployed(obj: Mapping[str, Any]) -> bool:
    """A status of the object's generation that names its InferenceService."""
    status = obj.get("status") or {}
    if status.get("observedGeneration") != (obj.get("metadata") or {}).get("generation"):
        return False
    return any(c.get("type") == "InferenceServiceReady" for c in status.get("conditions") or [])


async def wait_ready_objects(
    kube: Kube, namespaces: Sequence[str], ref: Any, count: int, timeout: float
) -> None:
    """Until ``count`` objects of ``ref`` in ``namespaces`` are Ready."""
    deadline = time.monotonic() + timeout
    while (found := await census(kube, namespaces, ref, ready))[0] < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{ref.kind}: {found[0]} of {count} Ready after {timeout:.0f} s: {found[1]}")
        await asyncio.sleep(2.0)


async def grow(kube: Kube, operator: Operator, hub: HubServer, have: int, want: int) -> None:
    """From ``have`` to ``want`` AIMServices (with their groups), until the operator has converged."""
    started = time.perf_counter()
    for ns in namespaces_between(have, want):
        await namespace(kube, ns)
    groups = groups_between(have, want)
    await create_all(kube, [b for slot in groups for b in group_bodies(slot, hub.endpoint)])
    all_namespaces = namespaces_between(0, want)
    timeout = 300 + len(groups) * 2.0
    for ref in (MODEL, TEMPLATE, TEMPLATE_CACHE):
        await wait_ready_objects(kube, all_namespaces, ref, len(groups_between(0, want)), timeout)
    took = time.perf_counter() - started
    say(f"  {len(groups)} new models, templates and template caches Ready ({took:.0f} s)")
    await create_all(kube, [service_body(Slot(i)) for i in range(have, want)])
    say(f"  {want - have} AIMServices created ({time.perf_counter() - started:.0f} s)")
    deadline = time.monotonic() + 600 + (want - have) * 0.1
    while True:
        await operator.converged(timeout=max(60.0, deadline - time.monotonic()))
        done, states = await census(kube, all_namespaces, AIMSVC, deployed)
        if done >= want:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"{done} of {want} AIMServices deployed: {states}")
        say(f"  {done} of {want} deployed so far ({states}); waiting")
        await asyncio.sleep(5.0)
    say(f"  grown to {want} AIMServices in {time.perf_counter() - started:.0f} s")


def storage_mib(stack: Stack) -> float:
    assert stack.nats is not None
    root = stack.nats.workdir / "jetstream"
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return round(total / MIB, 1)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """``values`` in this process's environment (the stack's processes inherit it) for the block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Bench:
    def __init__(self, stack: Stack, kube: Kube, idle: float, profile: Path | None = None) -> None:
        self.stack = stack
        self.kube = kube
        self.idle = idle
        self.profile = profile
        self.operator = Operator(stack)
        self.last_republish = 0.0  # time.monotonic() of the watcher's last full republish

    async def _gap(self) -> None:
        """Past the duplicate window of the last republish (see the module's docstring)."""
        wait = self.last_republish + DUPLICATE_WINDOW - time.monotonic()
        if wait > 0:
            say(f"  waiting {wait:.0f} s for JetStream's duplicate window to pass")
            await asyncio.sleep(wait)

    async def measure(self, services: int) -> dict[str, Any]:
        assert self.stack.nats is not None
        objects = await mirrored(self.stack.nats.client("reader"))
        figures: dict[str, Any] = {"services": services, "objects": objects}
        # idle
        before, at = self.operator.cpu(), time.monotonic()
        plane_before = cpu_of(control_plane_pids(self.stack))
        await asyncio.sleep(self.idle)
        seconds = time.monotonic() - at
        idle = {n: (t - before[n]) / seconds for n, t in self.operator.cpu().items()}
        plane = {
            n: (t - plane_before[n]) / seconds for n, t in cpu_of(control_plane_pids(self.stack)).items()
        }
        figures["idle_cpu_cores"] = {
            **{n: round(v, 4) for n, v in idle.items()},
            "total": round(sum(idle.values()), 4),
        }
        figures["idle_cpu_cores_control_plane"] = {n: round(v, 4) for n, v in plane.items()}
        say(f"  idle over {seconds:.0f} s: {sum(idle.values()):.4f} cores (operator + NATS)")
        # memory
        rss = {n: memory(p)[0] / MIB for n, p in self.operator.pids().items()}
        figures["rss_mib"] = {
            **{n: round(v, 1) for n, v in rss.items()},
            "total": round(sum(rss.values()), 1),
        }
        figures["rss_mib_control_plane"] = {
            n: round(memory(p)[0] / MIB, 1) for n, p in control_plane_pids(self.stack).items()
        }
        figures["nats_storage_mib"] = storage_mib(self.stack)
        say(f"  RSS {sum(rss.values()):.0f} MiB in all; NATS storage {figures['nats_storage_mib']} MiB")
        figures["resync"] = await self.resync(idle)
        # what a resync leaves behind counts too: a process keeps its peak (a relist's objects)
        after = {n: memory(p)[0] / MIB for n, p in self.operator.pids().items()}
        figures["rss_mib_after_resync"] = {
            **{n: round(v, 1) for n, v in after.items()},
            "total": round(sum(after.values()), 1),
        }
        say(f"  RSS after the resync {sum(after.values()):.0f} MiB in all")
        figures["ready_seconds"] = await self.restarts()
        figures["converge_after_restart_seconds"] = await self.restart_everything()
        return figures

    async def resync(self, idle: Mapping[str, float]) -> dict[str, Any]:
        await self._gap()
        watcher = self.operator.pids()["watcher"]
        kinds = resyncs(self.stack)
        profiler = None
        if self.profile is not None:
            services = {n: p for n, p in self.operator.pids().items() if n != "nats-server"}
            profiler = Profiler(self.profile / f"resync-{len(kinds)}-kinds-{int(time.time())}", services)
            profiler.start()
            await asyncio.sleep(1)  # py-spy attaches
        counts, cpu, at = await request_counts(self.kube), self.operator.cpu(), time.monotonic()
        pages = watcher_list_pages(self.stack)
        os.kill(watcher, signal.SIGUSR1)
        deadline = time.monotonic() + 1800
        while any(resyncs(self.stack).get(k, 0.0) <= v for k, v in kinds.items()):
            if time.monotonic() > deadline:
                raise TimeoutError("the watcher's resync did not complete")
            await asyncio.sleep(0.5)
        listed = time.monotonic() - at
        await self.operator.converged(timeout=1800)
        if profiler is not None:
            for name, found in (await asyncio.to_thread(profiler.stop)).items():
                if name in ("deployer", "watcher", "discovery", "cache"):
                    say(found.summary())
        self.last_republish = time.monotonic()
        seconds = time.monotonic() - at - 5.0  # less the quiet time converged() waits out
        used = {n: max(0.0, t - cpu[n] - idle.get(n, 0.0) * seconds) for n, t in self.operator.cpu().items()}
        requests = delta(await request_counts(self.kube), counts)
        pages = watcher_list_pages(self.stack) - pages
        ours = {k: v for k, v in requests.items() if k[1] in OPERATOR_RESOURCES}
        total = sum(used.values())
        say(
            f"  resync: listed and republished in {listed:.1f} s, converged in {seconds:.1f} s, "
            f"{total:.1f} CPU-s, {sum(ours.values()):.0f} API requests ({pages:.0f} LIST pages the watcher's)"
        )
        return {
            "seconds": round(seconds, 1),
            "republished_seconds": round(listed, 1),
            "cpu_seconds": {**{n: round(v, 2) for n, v in used.items()}, "total": round(total, 2)},
            "core_share": round(total / DEFAULT_RESYNC_SECONDS, 4),
            "api_requests": round(sum(ours.values())),
            "watcher_list_pages": round(pages),
            "api_requests_by_verb": {
                f"{verb} {res}": round(v) for (verb, res), v in sorted(ours.items(), key=lambda kv: -kv[1])
            },
        }

    async def restarts(self) -> dict[str, float]:
        took: dict[str, float] = {}
        for name in consuming.SERVICES:
            self.operator.stop_service(name)
            self.operator.start_service(name)
            profiler = None
            if self.profile is not None and name in ("watcher", "deployer"):
                pid = {name: self.operator.pids()[name]}
                profiler = Profiler(self.profile / f"restart-{name}-{int(time.time())}", pid)
                profiler.start()
            took[name] = round((await self.operator.until_ready([name], timeout=600))[name], 2)
            if profiler is not None:
                for found in (await asyncio.to_thread(profiler.stop)).values():
                    say(found.summary())
            if name == "watcher":
                self.last_republish = time.monotonic()
            say(f"  {name}: ready {took[name]:.1f} s after a restart")
            await self.operator.converged(timeout=1800)
        assert self.stack.nats is not None
        self.stack.nats.stop()
        started = time.perf_counter()
        self.stack.nats.start(timeout=600)
        took["nats-server"] = round(time.perf_counter() - started, 2)
        say(f"  nats-server: ready {took['nats-server']:.1f} s after a restart")
        await self.operator.until_ready(consuming.SERVICES, timeout=600)
        await self.operator.converged(timeout=1800)
        took["max"] = max(took.values())
        return took

    async def restart_everything(self) -> float:
        await self._gap()
        assert self.stack.nats is not None
        for name in consuming.SERVICES:
            self.operator.stop_service(name)
        self.stack.nats.stop()
        started = time.monotonic()
        self.stack.nats.start(timeout=600)
        for name in consuming.SERVICES:
            self.operator.start_service(name)
        await self.operator.until_ready(consuming.SERVICES, timeout=600)
        await self.operator.converged(timeout=3600)
        self.last_republish = time.monotonic()
        took = time.monotonic() - started
        say(f"  everything restarted: converged after {took:.1f} s")
        return round(took, 1)


def headline(figures: Mapping[str, Any]) -> dict[str, float]:
    """A round's figures the table and the budgets use (every process's readiness and memory
    included: a round's total says nothing of which process holds it)."""
    flat = flatten(figures)
    per_process = ("ready_seconds.", "rss_mib.", "rss_mib_after_resync.")
    keep = {key for key, _ in TABLE_ROWS} | {k for k in flat if k.startswith(per_process)}
    return {k: v for k, v in flat.items() if k in keep}


async def run(
    stack: Stack,
    hub: HubServer,
    sizes: Sequence[int],
    idle: float,
    *,
    profile: Path | None,
    out: Path | None,
    rounds: int = 1,
) -> list[dict[str, Any]]:
    kube = Kube(await connect(str(stack.kubeconfig)), field_manager="aim-bench")
    bench = Bench(stack, kube, idle, profile)
    per_size: list[dict[str, Any]] = []
    try:
        have = 0
        for size in sorted(sizes):
            say(f"{size} AIMServices: growing from {have}")
            await grow(kube, bench.operator, hub, have, size)
            have = size
            bench.last_republish = time.monotonic()  # growing published every new object
            measured = []
            for n in range(rounds):
                if rounds > 1:
                    say(f"  round {n + 1} of {rounds}")
                measured.append(await bench.measure(size))
            figures = measured[0]
            if rounds > 1:
                figures["rounds"] = [headline(m) for m in measured]
            per_size.append(figures)
            if out is not None:  # what a long run has measured so far survives its failure
                (out / "scale.partial.json").write_text(json.dumps(per_size, indent=1) + "\n")
    finally:
        await kube.close()
    return per_size


def plot(per_size: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Each figure against the object count, log-log, a dotted slope-1 line through its first point."""
    import matplotlib  # noqa: PLC0415 - only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    flat = [flatten(f) for f in per_size]
    x = [f["objects"] for f in flat]
    panels = (
        ("Idle CPU (cores)", "idle_cpu_cores."),
        ("One full resync (CPU-seconds)", "resync.cpu_seconds."),
        ("Resident memory (MiB)", "rss_mib."),
        ("Restart to ready (s)", "ready_seconds."),
    )
    fig, axes = plt.subplots(2, 3, figsize=(16, 9))
    for ax, (title, prefix) in zip(axes.flat, panels, strict=False):
        names = sorted({k[len(prefix) :] for f in flat for k in f if k.startswith(prefix)})
        for name in names:
            ys = [f.get(prefix + name, float("nan")) for f in flat]
            ax.plot(x, ys, marker="o", label=name, linewidth=2.5 if name in ("total", "max") else 1.2)
        _linear(ax, x, [flat[0].get(prefix + ("max" if "ready" in prefix else "total"), 0.0)])
        ax.set(title=title, xscale="log", yscale="log", xlabel="objects the operator watches")
        ax.legend(fontsize=7)
    single = (
        ("Resync API requests", "resync.api_requests"),
        ("NATS storage (MiB) and converge after full restart (s)", "nats_storage_mib"),
    )
    ax = axes.flat[4]
    ax.plot(x, [f["resync.api_requests"] for f in flat], marker="o", label="API requests of one resync")
    _linear(ax, x, [flat[0]["resync.api_requests"]])
    ax.set(title=single[0][0], xscale="log", yscale="log", xlabel="objects the operator watches")
    ax.legend(fontsize=7)
    ax = axes.flat[5]
    ax.plot(x, [f["nats_storage_mib"] for f in flat], marker="o", label="NATS storage (MiB)")
    ax.plot(
        x, [f["converge_after_restart_seconds"] for f in flat], marker="s", label="converge after restart (s)"
    )
    _linear(ax, x, [flat[0]["nats_storage_mib"]])
    ax.set(title=single[1][0], xscale="log", yscale="log", xlabel="objects the operator watches")
    ax.legend(fontsize=7)
    fig.suptitle("aimctl bench scale: costs against the number of objects (dotted: linear growth)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _linear(ax: Any, x: Sequence[float], first: Sequence[float]) -> None:
    if first and first[0] > 0 and x[0] > 0:
        ax.plot(x, [first[0] * v / x[0] for v in x], linestyle=":", color="grey", label="linear")


def budgets(per_size: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
    """The issue's budgets at the largest size."""
    last = flatten(per_size[-1])
    headline = {key for key, _ in TABLE_ROWS} - {"objects"}
    grown = growth_table(per_size)
    exponents = [e for key in headline & set(grown) for e in grown[key] if e is not None]
    return {
        "total_rss_within_2_gib": max(last["rss_mib.total"], last.get("rss_mib_after_resync.total", 0.0))
        <= TOTAL_RSS_BUDGET_MIB,
        "resync_within_0.1_core": last["resync.core_share"] <= RESYNC_BUDGET_CORES,
        "ready_within_60_s": last["ready_seconds.max"] <= READY_BUDGET_SECONDS,
        "no_figure_grows_faster_than_linearly": all(e <= 1.1 for e in exponents),
    }


def with_figures(figures: Mapping[str, Any], flat: Mapping[str, float]) -> dict[str, Any]:
    """``figures`` with the dotted keys of ``flat`` (:func:`flatten`) set to its values."""
    out = json.loads(json.dumps(figures))
    for dotted, value in flat.items():
        *path, leaf = dotted.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return dict(out)


def budgets_each_round(per_size: Sequence[Mapping[str, Any]]) -> list[dict[str, bool]]:
    """The budgets judged on each round at the largest size (its ``rounds``)."""
    last = per_size[-1]
    return [budgets([*per_size[:-1], with_figures(last, r)]) for r in last.get("rounds") or [headline(last)]]


def main(  # noqa: PLR0917 - the command line's options, in its order
    home: str | None,
    sizes: Sequence[int],
    idle: float,
    out: str | None,
    profile: str | None = None,
    rounds: int = 1,
) -> int:
    with (
        environment(AIM_RESYNC_SECONDS=BENCH_RESYNC_SECONDS),
        embedded_stack(Path(home) if home else None) as stack,
        contextlib.ExitStack() as cleanup,
    ):
        hub_dir = Path(stack.home) / "bench-hub"
        add_repo(hub_dir, REPO, FILES, lfs_threshold=1024)
        hub = HubServer(hub_dir).start()
        cleanup.callback(hub.stop)
        target = Path(out) if out else None
        if target is not None:
            target.mkdir(parents=True, exist_ok=True)
        per_size = asyncio.run(
            run(
                stack, hub, sizes, idle, profile=Path(profile) if profile else None, out=target, rounds=rounds
            )
        )
    say(table(per_size))
    result = stamped({"sizes": per_size, "growth": growth_table(per_size), "budgets": budgets(per_size)})
    if rounds > 1:
        result["budgets_each_round"] = budgets_each_round(per_size)
    if target is not None:
        (target / "scale.partial.json").unlink(missing_ok=True)
        (target / "scale.json").write_text(json.dumps(result, indent=1) + "\n")
        plot(per_size, target / "scale.png")
        say(f"figures in {target / 'scale.json'}, plot in {target / 'scale.png'}")
    print(json.dumps(result))
    return 0
