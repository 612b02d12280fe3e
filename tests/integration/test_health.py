"""Every service's health and metrics server, against the real services as processes: ``/healthz``
answers, ``/readyz`` is 503 (saying what is missing) until NATS is connected, the consumer bound
and the informer synced, and again while NATS is down; ``/metrics`` has the runtime's metrics and
they move when the services work."""

from __future__ import annotations

import os
import re
import signal
import statistics
import time

from aim_dev.testing.plugin import LocalServers
from aimcore.api.kinds import by_kind
from aimcore.runtime import Kube
from tests.helpers import eventually, manifest
from tests.integration.conftest import Services, health_get

AIM = "aim.eai.amd.com"
MODEL = by_kind(AIM, "AIMModel")
SERVICE = by_kind(AIM, "AIMService")


async def get(services: Services, label: str, path: str) -> tuple[int, str]:
    return await health_get(services, label, path)


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text (0 when absent)."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.fullmatch(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)", line)
        if match is None or match.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return float(match.group(3))
    return 0.0


async def test_probes_and_metrics_of_the_running_services(
    running: Services, kube: Kube, namespace: str
) -> None:
    for label in ("watcher", "status", "deployer"):
        assert await get(running, label, "/healthz") == (200, "ok\n")

        async def ready(label: str = label) -> bool:
            return await get(running, label, "/readyz") == (200, "ready\n")

        await eventually(ready, timeout=60, what=f"{label} ready")

    async def metrics(label: str) -> str:
        status, text = await get(running, label, "/metrics")
        assert status == 200, text
        return text

    assert sample(await metrics("watcher"), "aim_watcher_leader") == 1.0
    assert sample(await metrics("deployer"), "aim_consumer_bound", consumer="aim-deployer") == 1.0
    before = await metrics("deployer")
    handled = sample(before, "aim_consumer_handled_total", consumer="aim-deployer")
    reconciled = sample(before, "aim_reconcile_duration_seconds_count", group=AIM, kind="AIMService")
    writes = sample(await metrics("status"), "aim_status_writes_total", group=AIM, kind="AIMService")

    await kube.create(MODEL, manifest(MODEL, "m", namespace, {"image": "ghcr.io/example/m:1"}), namespace)
    await kube.create(SERVICE, manifest(SERVICE, "s", namespace, {"model": {"name": "m"}}), namespace)

    async def moved() -> bool:
        text = await metrics("deployer")
        return (
            sample(text, "aim_consumer_handled_total", consumer="aim-deployer") > handled
            and sample(text, "aim_consumer_acked_total", consumer="aim-deployer") > 0
            and sample(text, "aim_reconcile_duration_seconds_count", group=AIM, kind="AIMService")
            > reconciled
        )

    await eventually(moved, timeout=30, what="the deployer's counters moving")

    async def written() -> bool:
        text = await metrics("status")
        return sample(text, "aim_status_writes_total", group=AIM, kind="AIMService") > writes

    await eventually(written, timeout=30, what="the status service's writes counted")
    text = await metrics("deployer")
    assert 'aim_consumer_pending_messages{consumer="aim-deployer"}' in text  # the lag, sampled
    # one nats-server: the consumer's raft group is that server, and it is current
    assert sample(text, "aim_consumer_replicas", consumer="aim-deployer") == 1.0
    assert sample(text, "aim_consumer_replicas_current", consumer="aim-deployer") == 1.0
    assert sample(text, "aim_nats_permission_violations_total") == 0.0
    assert sample(text, "aim_nats_connected") == 1.0

    # SIGUSR1 asks the leading watcher for a full resync now: every kind once more, the process alive
    kinds = SERVICE.short
    text = await metrics("watcher")
    assert f'aim_watcher_resyncs_total{{kind="{kinds}"}}' in text  # from the start (a first list is not one)
    resynced = sample(text, "aim_watcher_resyncs_total", kind=kinds)
    watcher_pid = running.procs["watcher"].pid
    assert watcher_pid is not None
    os.kill(watcher_pid, signal.SIGUSR1)

    async def resync_done() -> bool:
        return sample(await metrics("watcher"), "aim_watcher_resyncs_total", kind=kinds) == resynced + 1

    await eventually(resync_done, timeout=60, what="the watcher's asked-for resync")
    running.assert_alive()

    # what a scrape costs (reported, not asserted: no timing assertions)
    took = []
    for _ in range(100):
        started = time.perf_counter()
        status, _ = await get(running, "deployer", "/metrics")
        took.append(time.perf_counter() - started)
        assert status == 200
    print(
        f"/metrics p50 over 100 scrapes: {statistics.median(took) * 1000:.2f} ms "
        f"(p90 {statistics.quantiles(took, n=10)[-1] * 1000:.2f} ms)"
    )


async def test_readiness_follows_nats(private_stack: LocalServers) -> None:
    bus = private_stack.nats
    bus.stop()  # the services start while NATS is not there yet
    services = Services(private_stack, private_stack.workdir / "logs")
    try:
        for name in ("watcher", "deployer"):
            services.start(name)

        async def answers(label: str, path: str, status: int, words: str) -> bool:
            services.assert_alive()
            got, text = await get(services, label, path)
            return got == status and words in text

        # alive, and not ready: NATS cannot be reached yet
        await eventually(lambda: answers("deployer", "/healthz", 200, "ok"), timeout=30, what="healthz")
        await eventually(
            lambda: answers("deployer", "/readyz", 503, "- nats: connecting"), timeout=30, what="not ready"
        )
        bus.restart()
        for label in ("watcher", "deployer"):
            await eventually(
                lambda label=label: answers(label, "/readyz", 200, "ready"), timeout=60, what=f"{label} ready"
            )
        bus.stop()
        for label in ("watcher", "deployer"):
            await eventually(
                lambda label=label: answers(label, "/readyz", 503, "- nats: not connected"),
                timeout=30,
                what=f"{label} not ready without NATS",
            )
        assert (await get(services, "deployer", "/healthz"))[0] == 200  # alive all along
        bus.restart()
        await eventually(lambda: answers("deployer", "/readyz", 200, "ready"), timeout=60, what="ready again")
    finally:
        services.stop_all()
