"""``aimctl bench memory``: each service's resident memory with 10,000 objects mirrored
(docs/design.md#performance-budgets: every service under 200 MiB).

It starts the embedded stack, creates the objects (a mix of AIMServices, AIMModels and
AIMTemplateCaches, the kinds the deployer, the catalog services and the cache service keep in their
informers), all paused so that what is measured is holding them, not reconciling them; waits until
the watcher has mirrored every one and each service's memory has stopped growing; then reads
``VmRSS`` and ``VmHWM`` (the peak) of every service from ``/proc``.

Human-readable lines go to stderr; the last line on stdout is one JSON object with the keys
``objects``, ``max_rss_mib``, ``rss_mib`` (per service), ``max_rss_mib_idle`` (the largest idle
service) and ``total_rss_mib`` (the six services and nats-server, with the objects mirrored).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aim_dev.bench.backbone import create_all, embedded_stack, namespace, operator_pids, say, stamped
from aim_dev.local.stack import Stack
from aimcore.api.bus import topology
from aimcore.api.bus.mirror import PAUSE_ANNOTATION
from aimcore.api.kinds import GROUP_AIM, KindRef, by_kind
from aimcore.runtime import Kube, connect_bus
from aimcore.runtime.bus import BusSettings
from aimcore.runtime.kube import connect

NS = "bench-memory"
MIB = 2**20
BUDGET_MIB = 200
IDLE_BUDGET_MIB = 70  # per service, idle (the performance issue)
TOTAL_BUDGET_MIB = 600  # the six services and nats-server, with the objects mirrored
KINDS: tuple[tuple[KindRef, dict[str, Any]], ...] = (
    (
        by_kind(GROUP_AIM, "AIMService"),
        {"model": {"name": "bench-model"}, "template": {"name": "bench-template"}},
    ),
    (by_kind(GROUP_AIM, "AIMModel"), {"image": "ghcr.io/bench/aim-base:1.0"}),
    (by_kind(GROUP_AIM, "AIMTemplateCache"), {"templateName": "bench-template"}),
)


def objects(count: int) -> Iterator[tuple[KindRef, dict[str, Any]]]:
    for i in range(count):
        ref, spec = KINDS[i % len(KINDS)]
        meta = {"name": f"obj-{i:05d}", "namespace": NS, "annotations": {PAUSE_ANNOTATION: "true"}}
        yield ref, {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": meta, "spec": spec}


def memory(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, in bytes."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


async def mirrored(bus: BusSettings) -> int:
    """Objects in the watcher's KV mirror."""
    nc = await connect_bus(bus, "aimctl-bench", forever=False)
    try:
        info = await nc.jetstream().stream_info(f"KV_{topology.OBJECTS_BUCKET}")
        return int(info.state.messages)
    finally:
        await nc.close()


async def settle(pids: dict[str, int], timeout: float = 180.0) -> dict[str, int]:
    """Each service's RSS once no service has grown by more than 1 % over three seconds."""
    history: list[dict[str, int]] = []
    deadline = time.monotonic() + timeout
    while True:
        history.append({name: memory(pid)[0] for name, pid in pids.items()})
        if len(history) >= 4:
            old, new = history[-4], history[-1]
            if all(new[n] <= old[n] * 1.01 for n in new) or time.monotonic() > deadline:
                return new
        await asyncio.sleep(1.0)


async def measure(stack: Stack, count: int) -> dict[str, Any]:
    assert stack.nats is not None
    pids = operator_pids(stack)
    nats_pid = pids.pop("nats-server", None)
    kube = Kube(await connect(str(stack.kubeconfig)), field_manager="aim-bench")
    try:
        await namespace(kube, NS)
        before = await mirrored(stack.nats.client("reader"))
        idle = {name: memory(pid)[0] for name, pid in pids.items()}
        started = time.perf_counter()
        await create_all(kube, [body for _, body in objects(count)])
        say(f"{count} objects created in {time.perf_counter() - started:.1f} s")
        deadline = time.monotonic() + 300
        while (have := await mirrored(stack.nats.client("reader"))) < before + count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {have - before} of {count} objects mirrored")
            await asyncio.sleep(0.5)
        say(f"{count} objects mirrored after {time.perf_counter() - started:.1f} s")
        rss = await settle(pids)
        peaks = {name: memory(pid)[1] for name, pid in pids.items()}
        nats_rss = memory(nats_pid)[0] if nats_pid is not None else 0
    finally:
        await kube.close()
    for name in pids:
        held, idle_mib, peak = rss[name] / MIB, idle[name] / MIB, peaks[name] / MIB
        say(f"{name:14} RSS {held:6.1f} MiB (idle {idle_mib:5.1f}, peak {peak:6.1f})")
    say(f"{'nats-server':14} RSS {nats_rss / MIB:6.1f} MiB")
    return {
        "objects": count,
        "max_rss_mib": round(max(rss.values()) / MIB, 1),
        "max_peak_rss_mib": round(max(peaks.values()) / MIB, 1),
        "budget_mib": BUDGET_MIB,
        "rss_mib": {name: round(v / MIB, 1) for name, v in rss.items()},
        "idle_rss_mib": {name: round(v / MIB, 1) for name, v in idle.items()},
        "max_rss_mib_idle": round(max(idle.values()) / MIB, 1),
        "idle_budget_mib": IDLE_BUDGET_MIB,
        "nats_rss_mib": round(nats_rss / MIB, 1),
        "total_rss_mib": round((sum(rss.values()) + nats_rss) / MIB, 1),
        "total_budget_mib": TOTAL_BUDGET_MIB,
    }


def main(home: str | None, count: int) -> int:
    with embedded_stack(Path(home) if home else None) as stack:
        figures = asyncio.run(measure(stack, count))
    print(json.dumps(stamped(figures)))
    return 0
