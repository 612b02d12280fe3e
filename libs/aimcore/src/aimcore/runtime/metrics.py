"""The process's Prometheus metrics (served on ``/metrics`` by :mod:`aimcore.runtime.health`).

Every metric of the runtime library is declared here, on one registry (:data:`REGISTRY`) that the
services add their own to (the status service's writes, the cache service's download bytes, the
watcher's leader flag). The consumers' counters are not copied: they stay the in-memory
:class:`~aimcore.runtime.consumer.ConsumerStats` and are read when scraped; the consumers' lag
(``num_pending`` from the consumer's info) and the health of their raft groups in a JetStream cluster
(peers caught up and online, from the same answer) are sampled once per scrape, one request per
consumer.
``docs/deploy.md`` ("Health and metrics") lists every metric with its labels and meaning.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from aimcore.api.bus.topology import ConsumerSpec

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

RECONCILE_SECONDS = Histogram(
    "aim_reconcile_duration_seconds",
    "Time one reconcile of an object took (validation, the controller's reconcile, its writes).",
    ["group", "kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "aim_reconcile_errors_total",
    "Reconciles that ended in an error (retried through a nak, or given up if permanent).",
    ["group", "kind"],
    registry=REGISTRY,
)
LEASES_HELD = Gauge(
    "aim_leases_held",
    "Object leases this replica holds now (one per object being reconciled).",
    registry=REGISTRY,
)
LEASES_CONTENDED = Counter(
    "aim_lease_contended_total",
    "Reconciles handed to the replica already holding the object's lease (a dirty mark set).",
    registry=REGISTRY,
)
LEASE_RERUNS = Counter(
    "aim_lease_reruns_total",
    "Reconciles run again by a lease holder for a trigger that arrived during its run.",
    registry=REGISTRY,
)
LEASE_TAKEOVERS = Counter(
    "aim_lease_takeovers_total",
    "Triggers run by the replica that marked a lease whose holder stopped (the mark expired untaken).",
    registry=REGISTRY,
)
REFUSED_PUBLISHES = Counter(
    "aim_nats_permission_violations_total",
    "Operations the NATS server refused for this client's permissions ('Permissions Violation').",
    registry=REGISTRY,
)
LIST_PAGES = Counter(
    "aim_kube_list_pages_total",
    "LIST requests this process sent the API server, a page of at most 500 objects each.",
    ["group", "kind"],
    registry=REGISTRY,
)
NATS_CONNECTED = Gauge("aim_nats_connected", "1 while connected to NATS, else 0.", registry=REGISTRY)
LOOP_STALLS = Counter(
    "aim_event_loop_stalls_total",
    "Times the event loop went longer than AIM_HEALTH_STALL_SECONDS without its heartbeat.",
    registry=REGISTRY,
)

CONSUMER_COUNTERS = (
    ("handled", "Messages the consumer's handler finished (with or without an error)."),
    ("acked", "Messages acknowledged (done, or failed permanently)."),
    ("naked", "Messages negatively acknowledged to be redelivered later (a transient failure)."),
    ("terminated", "Messages whose handler failed permanently: acknowledged, not retried."),
    ("handed_back", "Messages a stopping consumer gave back unstarted (a nak without delay)."),
    ("bus_errors", "Failed fetches (the bus down or restarting); the consumer re-binds."),
    (
        "redelivered",
        "Messages received again after an earlier delivery (a nak, or a replica lost before acking).",
    ),
)
LAG_TIMEOUT = 1.0
"""Seconds one consumer-info request may take while scraping; a slower bus leaves the lag out."""


def _field(name: str) -> str:
    return "permanent" if name == "terminated" else name


@dataclass(frozen=True)
class ConsumerSample:
    """What one consumer-info request said about a consumer, when scraped."""

    pending: int  # messages in its stream not delivered yet (its lag)
    ack_pending: int  # delivered, not acknowledged yet
    replicas: int  # peers of its raft group in a JetStream cluster (1 on a single server)
    current: int  # of those, the leader and the followers that are caught up and online

    @classmethod
    def of(cls, info: ConsumerInfo) -> ConsumerSample:
        cluster = info.cluster
        followers = (cluster.replicas or []) if cluster is not None else []
        leader = 1 if cluster is None or cluster.leader else 0
        return cls(
            pending=info.num_pending or 0,
            ack_pending=info.num_ack_pending or 0,
            replicas=1 + len(followers),
            current=leader + sum(1 for p in followers if p.current and not p.offline),
        )


class Consumer(Protocol):
    """What the collector reads of a consumer (:class:`aimcore.runtime.consumer.Consumer`, which
    registers itself): a protocol, so the metrics import nothing of the runtime above them."""

    @property
    def js(self) -> JetStreamContext: ...

    @property
    def spec(self) -> ConsumerSpec: ...

    @property
    def stats(self) -> object:  # its counters, read by name (:data:`CONSUMER_COUNTERS`)
        ...

    @property
    def bound(self) -> bool: ...


class ConsumerCollector(Collector):
    """The counters and last sampled state of every consumer this process runs, by durable name."""

    def __init__(self) -> None:
        self.consumers: weakref.WeakSet[Consumer] = weakref.WeakSet()
        self.samples: weakref.WeakKeyDictionary[Consumer, ConsumerSample] = weakref.WeakKeyDictionary()

    def track(self, consumer: Consumer) -> None:
        self.consumers.add(consumer)

    def collect(self) -> Iterator[Metric]:
        consumers = sorted(self.consumers, key=lambda c: c.spec.durable)
        for name, doc in CONSUMER_COUNTERS:
            family = CounterMetricFamily(f"aim_consumer_{name}", doc, labels=["consumer"])
            totals: dict[str, int] = {}
            for c in consumers:
                totals[c.spec.durable] = totals.get(c.spec.durable, 0) + getattr(c.stats, _field(name))
            for durable, value in totals.items():
                family.add_metric([durable], value)
            yield family
        sampled = {
            "pending": GaugeMetricFamily(
                "aim_consumer_pending_messages",
                "Messages in the stream not yet delivered to the consumer (its lag), sampled when scraped.",
                labels=["consumer"],
            ),
            "ack_pending": GaugeMetricFamily(
                "aim_consumer_ack_pending_messages",
                "Messages delivered to the consumer and not acknowledged yet, sampled when scraped.",
                labels=["consumer"],
            ),
            "replicas": GaugeMetricFamily(
                "aim_consumer_replicas",
                "Peers of the consumer's raft group (1 on a single NATS server), sampled when scraped.",
                labels=["consumer"],
            ),
            "current": GaugeMetricFamily(
                "aim_consumer_replicas_current",
                "The leader and followers of the consumer's raft group caught up and online, when scraped.",
                labels=["consumer"],
            ),
        }
        bound = GaugeMetricFamily(
            "aim_consumer_bound", "1 while the consumer is bound to its durable, else 0.", labels=["consumer"]
        )
        for c in consumers:
            bound.add_metric([c.spec.durable], 1.0 if c.bound else 0.0)
            sample = self.samples.get(c)
            if sample is not None:
                for field_name, gauge in sampled.items():
                    gauge.add_metric([c.spec.durable], getattr(sample, field_name))
        yield from sampled.values()
        yield bound

    async def sample(self) -> None:
        """Ask the server about each bound consumer (concurrently, each bounded by
        :data:`LAG_TIMEOUT`); a consumer whose answer does not come loses its stale figures."""

        async def one(c: Consumer) -> None:
            self.samples.pop(c, None)
            if not c.bound:
                return
            with contextlib.suppress(Exception):
                info = await asyncio.wait_for(c.js.consumer_info(c.spec.stream, c.spec.durable), LAG_TIMEOUT)
                self.samples[c] = ConsumerSample.of(info)

        await asyncio.gather(*(one(c) for c in list(self.consumers)))


CONSUMERS = ConsumerCollector()
REGISTRY.register(CONSUMERS)


async def exposition() -> bytes:
    """The text of ``/metrics``: the consumers sampled now, then every metric."""
    await CONSUMERS.sample()
    return generate_latest(REGISTRY)


def is_permission_violation(error: BaseException) -> bool:
    """Whether an error nats-py hands its error callback is the server refusing a publish or a
    subscription for the client's permissions."""
    return "permissions violation" in str(error).lower()
