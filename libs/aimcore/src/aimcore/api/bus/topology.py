"""Every stream, KV bucket and durable consumer of the system, defined in one place.

Ownership: the **watcher** declares the streams and buckets at start-up (it is their producer, and
it runs before anything can be consumed); each service declares only its own durable consumer,
shared by all its replicas (work-queue semantics across replicas). ``ensure_topology`` is
idempotent and updates a stream or bucket whose settings changed, so redeploying with a new
retention, or with more replicas once the bus is a cluster, is just a restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from nats import errors as nats_errors
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, NotFoundError
from nats.js.kv import KeyValue

from aimcore.api.bus import subjects

log = logging.getLogger(__name__)

EVENTS_STREAM = "AIM_EVENTS"
STATUS_STREAM = "AIM_STATUS"
DECISIONS_STREAM = "AIM_DECISIONS"
OBJECTS_BUCKET = "aim-objects"
LEASES_BUCKET = "aim-leases"
ELECTION_BUCKET = "aim-election"
DISCOVERY_BUCKET = "aim-discovery"
WATCHER_BUCKET = "aim-watcher"

LEASE_TTL = 15.0
"""How long an object lease outlives its holder's last write (renewed every third of it while the
work runs): a trigger handed to a holder that died waits at most this long (controller-runtime's
leader-election lease is 15 s too)."""
ELECTION_TTL = 15.0
"""How long the watcher's leadership outlives its leader's last renewal (controller-runtime's lease
duration): a standby takes over a leader that died after at most this long
(``aim_watcher.election``)."""
ACK_WAIT = 15.0
"""How long a delivered message may go without an acknowledgement or an in-progress signal (sent every
half of it while a handler runs) before JetStream gives it to another replica: what a message held by
a killed replica waits."""

DAY = 86_400.0
GIB = 1 << 30
STREAM_IN_USE = 10058


@dataclass(frozen=True)
class Retention:
    """History kept for audit and replay (the watcher's ``AIM_HISTORY_MAX_AGE`` and
    ``AIM_HISTORY_MAX_BYTES``, :class:`aimcore.runtime.settings.history.HistorySettings`, override
    the defaults: 7 days, 1 GiB per stream)."""

    max_age: float = 7 * DAY
    max_bytes: int = GIB
    duplicate_window: float = 120.0


def stream_configs(retention: Retention | None = None, replicas: int = 1) -> list[StreamConfig]:
    """The streams, each kept by ``replicas`` servers (1: a single server; 3: a three-node cluster)."""
    r = retention or Retention()

    def make(name: str, subject: str, description: str, *more: str, schedules: bool = False) -> StreamConfig:
        return StreamConfig(
            name=name,
            description=description,
            subjects=[f"{s}.>" for s in (subject, *more)],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=r.max_age,
            max_bytes=r.max_bytes,
            duplicate_window=r.duplicate_window,
            allow_msg_schedules=schedules or None,
            num_replicas=replicas,
        )

    return [
        make(
            EVENTS_STREAM,
            subjects.EVENTS_PREFIX,
            "Change events observed by the watcher, and services' own requeues (and their schedules)",
            subjects.REQUEUE_PREFIX,
            subjects.SCHEDULE_PREFIX,
            schedules=True,  # requeues are timed by the server (nats-server 2.12 or newer)
        ),
        make(STATUS_STREAM, subjects.STATUS_PREFIX, "Status reports from the services"),
        make(DECISIONS_STREAM, subjects.DECISIONS_PREFIX, "Explained decisions, for audit"),
    ]


def bucket_configs(replicas: int = 1) -> list[KeyValueConfig]:
    """The KV buckets, each kept by ``replicas`` servers."""
    return [
        KeyValueConfig(
            bucket=OBJECTS_BUCKET,
            description="Mirror of every watched object, written before its change event",
            history=1,
            storage=StorageType.FILE,
            replicas=replicas,
        ),
        KeyValueConfig(
            bucket=LEASES_BUCKET,
            description="Per-object reconcile leases (compare-and-set, short TTL)",
            history=1,
            ttl=LEASE_TTL,
            storage=StorageType.FILE,
            replicas=replicas,
        ),
        KeyValueConfig(
            bucket=ELECTION_BUCKET,
            description="Leader election among watcher replicas (compare-and-set, short TTL)",
            history=1,
            ttl=ELECTION_TTL,
            storage=StorageType.FILE,
            replicas=replicas,
        ),
        KeyValueConfig(
            bucket=WATCHER_BUCKET,
            description="Where the leading watcher's watches resume: per kind, the resourceVersion "
            "and mirror revision through which every change was published",
            history=1,
            storage=StorageType.FILE,
            replicas=replicas,
        ),
        KeyValueConfig(
            bucket=DISCOVERY_BUCKET,
            description="Cluster-wide discovery-job slots (compare-and-set), shared by discovery replicas",
            history=1,
            storage=StorageType.FILE,
            replicas=replicas,
        ),
    ]


async def ensure_topology(
    js: JetStreamContext, retention: Retention | None = None, replicas: int = 1
) -> None:
    """Create or update every stream and bucket, each kept by ``replicas`` servers. Called by their
    owner, the watcher.

    Buckets come first: consumers wait for the streams, so a stream that exists implies the
    buckets do too. A bucket whose TTL or replica count differs from its declaration is updated in
    place (JetStream copies the data to the new replicas; consumers that do not set their own count
    follow their stream's)."""
    for kv in bucket_configs(replicas):
        try:
            status = await (await js.key_value(kv.bucket)).status()
        except (NotFoundError, BadRequestError):
            await js.create_key_value(config=kv)
            continue
        info = status.stream_info.config
        ttl_changed = kv.ttl is not None and status.ttl != kv.ttl  # since the bucket was made
        if ttl_changed or (info.num_replicas or 1) != kv.replicas:
            info.max_age = kv.ttl if kv.ttl is not None else info.max_age
            info.num_replicas = kv.replicas
            await js.update_stream(config=info)
    for cfg in stream_configs(retention, replicas):
        try:
            await js.add_stream(config=cfg)
        except BadRequestError as exc:
            if exc.err_code != STREAM_IN_USE:
                raise
            await js.update_stream(config=cfg)


async def objects_bucket(js: JetStreamContext) -> KeyValue:
    return await js.key_value(OBJECTS_BUCKET)


@dataclass(frozen=True)
class ConsumerSpec:
    """A service's durable consumer: one per service, shared by its replicas."""

    durable: str
    stream: str
    filter_subjects: Sequence[str]
    ack_wait: float = ACK_WAIT
    max_deliver: int = 20
    max_ack_pending: int = 1000
    deliver_policy: DeliverPolicy = DeliverPolicy.LAST_PER_SUBJECT

    def config(self) -> ConsumerConfig:
        subjects_ = list(self.filter_subjects)
        return ConsumerConfig(
            durable_name=self.durable,
            name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.ack_wait,
            max_deliver=self.max_deliver,
            max_ack_pending=self.max_ack_pending,
            deliver_policy=self.deliver_policy,
            filter_subject=subjects_[0] if len(subjects_) == 1 else None,
            filter_subjects=subjects_ if len(subjects_) > 1 else None,
        )


async def ensure_consumer(js: JetStreamContext, spec: ConsumerSpec) -> None:
    """Create the consumer, or update it in place when its settings changed."""
    await js.add_consumer(spec.stream, config=spec.config())


async def wait_for_stream(js: JetStreamContext, stream: str, stop: asyncio.Event) -> bool:
    """Streams are declared by the watcher; consumers wait for them instead of racing it."""
    while not stop.is_set():
        try:
            await js.stream_info(stream)
            return True
        except (NotFoundError, TimeoutError, nats_errors.Error):
            log.info("waiting for stream %s", stream)
            await asyncio.sleep(1.0)
    return False


async def leases_bucket(js: JetStreamContext) -> KeyValue:
    return await js.key_value(LEASES_BUCKET)
