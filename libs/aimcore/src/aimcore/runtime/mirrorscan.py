"""The mirror bucket's current state read through its stream: the last entry of every key under a
pattern, in one consumer (:func:`last_per_subject`), whole (:func:`snapshot_raw`) or as the objects'
identities from the entries' headers alone (:func:`snapshot_identities`, the watcher's seed). The
informer loads its kinds with it before following them; the watcher seeds a new leader with it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from aimcore.api.bus import mirror, subjects
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime.natsinternals import bucket_stream

MARKER = "Nats-Marker-Reason"  # a server-placed marker (a key's TTL or the bucket's age): a removal

Key = str  # the mirror key: subjects.object_key(ref, namespace, name)


def removal(msg: Msg) -> bool:
    """Whether a message of the bucket's stream removes its key: a delete or purge, a server-placed
    marker (a key's TTL or the bucket's age), or no value."""
    headers = msg.headers or {}
    return headers.get("KV-Operation") in (KV_DEL, KV_PURGE) or MARKER in headers or not msg.data


async def snapshot(kv: KeyValue, pattern: str) -> dict[Key, Obj]:
    """Current objects under a key pattern (``aim.AIMService.>``), read deterministically
    (:func:`snapshot_raw`)."""
    return {key: json.loads(raw) for key, (_, raw) in (await snapshot_raw(kv, pattern)).items()}


async def snapshot_raw(kv: KeyValue, pattern: str) -> dict[Key, tuple[int, bytes]]:
    """Current entries under a key pattern: each key's revision and value as stored.

    Two nats-py shortcuts are unreliable here: ``KeyValue.keys(filters=...)`` also
    substring-matches each filter on the client (a wildcard never matches), and a KV watch may
    signal "initial values done" before values it already received are processed. So this reads
    the bucket's stream with :func:`last_per_subject`."""
    bucket = bucket_stream(kv)
    out: dict[Key, tuple[int, bytes]] = {}
    async for msg in last_per_subject(bucket.js, bucket.stream, bucket.subject(pattern)):
        key = bucket.key(msg.subject)
        if removal(msg):
            out.pop(key, None)
        else:
            out[key] = (msg.metadata.sequence.stream, msg.data)
    return out


async def snapshot_identities(kv: KeyValue, pattern: str) -> dict[Key, tuple[int, mirror.Identity]]:
    """Each current entry's revision and its object's identity, from the entries' headers alone
    (:func:`aimcore.api.bus.mirror.identity_headers`): no object is transferred or parsed. An entry
    written without them (by a watcher before these headers) is read whole, once."""
    bucket = bucket_stream(kv)
    out: dict[Key, tuple[int, mirror.Identity]] = {}
    bare: dict[Key, int] = {}
    async for msg in last_per_subject(bucket.js, bucket.stream, bucket.subject(pattern), headers_only=True):
        key = bucket.key(msg.subject)
        headers = msg.headers or {}
        out.pop(key, None)
        bare.pop(key, None)
        if headers.get("KV-Operation") in (KV_DEL, KV_PURGE):
            continue
        known = mirror.identity(headers)
        if known is not None:
            out[key] = (msg.metadata.sequence.stream, known)
        else:
            bare[key] = msg.metadata.sequence.stream
    for key in bare:
        with contextlib.suppress(KeyNotFoundError, KeyDeletedError):
            entry = await kv.get(key)
            if entry.value:
                read = mirror.identity(mirror.identity_headers(json.loads(entry.value)))
                assert read is not None
                out[key] = (entry.revision or 0, read)
    return out


async def last_per_subject(
    js: JetStreamContext, stream: str, subject_filter: str, *, headers_only: bool = False
) -> AsyncIterator[Msg]:
    """The last message of each subject under ``subject_filter`` in ``stream`` (only their
    headers if ``headers_only``), oldest first: an ephemeral pull consumer read until exactly the
    number of messages it reported pending when it was created."""
    psub = await js.pull_subscribe(
        subject_filter,
        stream=stream,
        config=ConsumerConfig(
            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=60.0,
            mem_storage=True,
            headers_only=headers_only or None,
        ),
    )
    try:
        remaining = (await psub.consumer_info()).num_pending or 0
        while remaining > 0:
            for msg in await psub.fetch(min(remaining, 512), timeout=10):
                remaining = msg.metadata.num_pending or 0
                yield msg
    finally:
        with contextlib.suppress(Exception):
            await psub.unsubscribe()


def kind_pattern(ref: KindRef, namespace: str | None = None) -> str:
    """The KV key pattern of every object of a kind (in one namespace, if given)."""
    ns = f"{subjects.ns_token(namespace)}." if namespace is not None and ref.namespaced else ""
    return f"{subjects.group_token(ref.group)}.{ref.kind}.{ns}>"
