"""The health and metrics server as it runs in every service, on a real socket: liveness,
readiness listing what is not ready, the consumers' counters in the Prometheus text; and the
watchdog naming where a stuck event loop is stuck."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from typing import Any, cast

import aiohttp
import pytest

from aimcore.api.bus.topology import ConsumerSpec
from aimcore.runtime import metrics
from aimcore.runtime.consumer import Consumer
from aimcore.runtime.health import HealthServer, Watchdog
from aimcore.runtime.probes import Heartbeat, Readiness
from aimcore.runtime.settings.health import HealthSettings


@pytest.fixture
async def server() -> AsyncIterator[tuple[HealthServer, Readiness]]:
    readiness = Readiness()
    settings = HealthSettings.from_env({"AIM_HEALTH_PORT": "0", "AIM_HEALTH_ADDRESS": "127.0.0.1"})
    srv = HealthServer(settings, readiness)
    await srv.start()
    try:
        yield srv, readiness
    finally:
        await srv.stop()


async def get(srv: HealthServer, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{srv.port}{path}") as r:
        return r.status, await r.text()


async def test_probes_answer(server: tuple[HealthServer, Readiness]) -> None:
    srv, readiness = server
    assert await get(srv, "/healthz") == (200, "ok\n")
    connected = False
    readiness.add("nats", lambda: None if connected else "not connected")
    readiness.waiting("informer", "loading 3 kinds from the mirror")
    status, text = await get(srv, "/readyz")
    assert status == 503
    assert text == "not ready:\n- informer: loading 3 kinds from the mirror\n- nats: not connected\n"
    connected = True
    readiness.remove("informer")
    assert await get(srv, "/readyz") == (200, "ready\n")


async def test_metrics_expose_the_consumers_counters(server: tuple[HealthServer, Readiness]) -> None:
    srv, _ = server

    async def handler(msg: Any) -> None:
        return None

    consumer = Consumer(
        cast(Any, None), ConsumerSpec(durable="aim-unit", stream="S", filter_subjects=["s.>"]), handler
    )
    metrics.CONSUMERS.track(consumer)
    consumer.stats.handled, consumer.stats.acked, consumer.stats.permanent = 3, 2, 1
    status, text = await get(srv, "/metrics")
    assert status == 200
    assert 'aim_consumer_handled_total{consumer="aim-unit"} 3.0' in text
    assert 'aim_consumer_acked_total{consumer="aim-unit"} 2.0' in text
    assert 'aim_consumer_terminated_total{consumer="aim-unit"} 1.0' in text
    assert 'aim_consumer_bound{consumer="aim-unit"} 0.0' in text
    for name in ("aim_reconcile_duration_seconds", "aim_leases_held", "aim_nats_permission_violations_total"):
        assert f"# TYPE {name}" in text
    consumer.stats.handled += 1
    assert 'aim_consumer_handled_total{consumer="aim-unit"} 4.0' in (await get(srv, "/metrics"))[1]


def test_the_watchdog_logs_where_a_stuck_loop_is_stuck() -> None:
    reported = threading.Event()
    records: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "event loop stalled" in record.getMessage():
                records.append(record)
                reported.set()

    handler = Catch()
    logging.getLogger("aimcore.runtime.health").addHandler(handler)
    stalls = metrics.LOOP_STALLS._value.get()
    watchdog = Watchdog(Heartbeat(), limit=0.2, loop_thread=threading.get_ident())
    watchdog.start()
    try:
        stuck_in_this_test(reported)  # no heartbeat while this thread is blocked, as a stuck loop
    finally:
        watchdog.stop()
        logging.getLogger("aimcore.runtime.health").removeHandler(handler)
    assert reported.is_set(), "the watchdog did not report the stall"
    assert len(records) == 1  # one report per stall
    assert "stuck_in_this_test" in records[0].getMessage()
    assert metrics.LOOP_STALLS._value.get() == stalls + 1


def stuck_in_this_test(reported: threading.Event) -> None:
    reported.wait(timeout=30)  # blocks until the watchdog has reported (or gives up)
