"""Writes an observed object to the KV mirror, then publishes its change event
(docs/design.md#the-object-mirror).

Order matters: a consumer that receives the event must find state at least as new in the mirror.
The event's ``Nats-Msg-Id`` is deterministic, so a retry after a crash or a second watcher replica
stores one message. NATS outages are waited out (with backoff), never dropped: the watch simply
pauses until the bus is back. An object too large for the bus is not an outage: it is mirrored as a
placeholder (:mod:`aimcore.api.bus.mirror`) at once, so it never holds back another object.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from nats.errors import Error as NatsError
from nats.errors import MaxPayloadError
from nats.js import JetStreamContext
from nats.js.api import Header
from nats.js.errors import APIError, KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue
from opentelemetry import trace

from aimcore.api.bus import mirror, subjects
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.errors import TransientError
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime import BUS_RETRY, tracing
from aimcore.runtime.kvlease import WRONG_LAST_SEQUENCE
from aimcore.runtime.natsinternals import bucket_stream, client_of
from aimcore.runtime.resourceversion import rv_int

log = logging.getLogger(__name__)
tracer = trace.get_tracer("aim.watcher")


class Publisher:
    def __init__(
        self, js: JetStreamContext, kv: KeyValue, max_payload: Callable[[], int] | None = None
    ) -> None:
        self.js = js
        self.kv = kv
        # the limit of the server connected to now (from its INFO; it may change on reconnect)
        self.max_payload = max_payload or (lambda: int(client_of(js).max_payload))
        self.published = 0
        self.stale_skipped = 0
        self.too_large = 0
        self._written: dict[str, tuple[int, int]] = {}  # key → (KV revision, resourceVersion) written here

    def remember(self, entries: Mapping[str, tuple[int, str]]) -> None:
        """Mirror entries (key → (revision, resourceVersion)) as if this publisher had written
        them, so a later version is one conditional write and the same version none at all."""
        for key, (revision, version) in entries.items():
            self._written[key] = (revision, rv_int(version))

    def holds(self, ref: KindRef, key: tuple[str | None, str], resource_version: str) -> bool:
        """Whether the mirror holds this version of the object (or a newer one), as far as this
        publisher knows: then publishing it again writes nothing of it, and its identity is enough."""
        written = self._written.get(subjects.object_key(ref, *key))
        return written is not None and written[1] >= rv_int(resource_version)

    async def observe(self, ref: KindRef, obj: Obj, change: ChangeType) -> int | None:
        """Mirror ``obj`` and publish its change; the revision of its mirror entry (None once
        deleted)."""
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace"), meta["name"]
        event = ChangeEvent(
            object=ObjectRef.of(ref, namespace, name),
            uid=meta.get("uid", ""),
            resource_version=str(meta.get("resourceVersion", "")),
            generation=meta.get("generation"),
            change=change,
        )
        key = subjects.object_key(ref, namespace, name)
        subject = subjects.event_subject(ref, namespace, name)
        with tracer.start_as_current_span(f"observe {ref.kind}", kind=trace.SpanKind.PRODUCER) as span:
            span.set_attribute("k8s.object", event.object.display)
            span.set_attribute("k8s.change", change.value)
            headers = tracing.inject({"Nats-Msg-Id": event.msg_id})
            await self._retry(lambda: self._mirror(key, obj, change), f"mirror {key}")
            await self._retry(
                lambda: self.js.publish(subject, event.encode(), headers=headers), f"publish {key}"
            )
        self.published += 1
        written = self._written.get(key)
        return written[0] if written is not None else None

    async def _mirror(self, key: str, obj: Obj, change: ChangeType) -> None:
        """Write (or tombstone) the object unless the mirror already holds a newer version.

        The compare-and-set keeps a lagging writer (a watcher that just lost leadership, or a
        relist racing a watch) from replacing newer state with older. The revision this publisher
        last wrote for a key is remembered, so the usual case (nobody else wrote since) is a single
        conditional write instead of a read, a decode and a write."""
        rv = rv_int((obj.get("metadata") or {}).get("resourceVersion"))
        known = self._written.get(key)
        if change is not ChangeType.DELETED and known is not None and known[1] >= rv:
            self.stale_skipped += 1  # a resync's version, written here before: not even encoded
            return
        value, big = mirror.entry(obj, self.max_payload())
        if big is not None:
            self.too_large += 1
            log.warning("%s: %s; mirrored as a placeholder", key, big.message)
        headers = mirror.identity_headers(obj)
        try:
            await self._write(key, value, rv, change, headers)
        except MaxPayloadError:  # refused although under the server's stated limit: never retried as is
            self.too_large += 1
            limit = self.max_payload() - mirror.HEADROOM
            value = mirror.encode(mirror.placeholder(obj, len(value), limit))
            await self._write(key, value, rv, change, headers)

    async def _write(
        self, key: str, value: bytes, rv: int, change: ChangeType, headers: dict[str, str]
    ) -> None:
        if change is not ChangeType.DELETED and await self._fast_write(key, value, rv, change, headers):
            return
        for _ in range(5):
            try:
                entry = await self.kv.get(key)
                last, current = entry.revision, (json.loads(entry.value) if entry.value else None)
            except (KeyNotFoundError, KeyDeletedError) as exc:
                last = getattr(getattr(exc, "entry", None), "revision", None)
                current = None
            have = rv_int(((current or {}).get("metadata") or {}).get("resourceVersion"))
            if current is not None and (have > rv or (have == rv and change is not ChangeType.DELETED)):
                self.stale_skipped += 1  # newer (or this very) version is already there
                if last is not None:
                    self._written[key] = (last, have)
                return
            try:
                if change is ChangeType.DELETED:
                    self._written.pop(key, None)
                    if current is not None and last is not None:
                        await self.kv.delete(key, last=last)
                elif last is None:
                    self._written[key] = (await self._create(key, value, headers), rv)
                else:
                    self._written[key] = (await self._put(key, value, last, headers), rv)
                return
            except KeyWrongLastSequenceError:
                continue  # another writer got there first: look again
        raise TransientError(f"mirror {key}: too many concurrent writers")

    async def _fast_write(
        self, key: str, value: bytes, rv: int, change: ChangeType, headers: dict[str, str]
    ) -> bool:
        """The write without a read, when this publisher knows the key's last revision (or the
        object is new); False when someone else wrote in between (the caller reads and decides)."""
        known = self._written.get(key)
        try:
            if known is not None:
                last, have = known
                if have >= rv:
                    self.stale_skipped += 1
                    return True
                self._written[key] = (await self._put(key, value, last, headers), rv)
                return True
            if change is ChangeType.ADDED:
                self._written[key] = (await self._create(key, value, headers), rv)
                return True
        except KeyWrongLastSequenceError:
            self._written.pop(key, None)
        return False

    async def _put(self, key: str, value: bytes, last: int, headers: dict[str, str]) -> int:
        """``KeyValue.update`` (``last`` 0: the key must not exist), with the object's identity in
        the entry's headers (:func:`aimcore.api.bus.mirror.identity_headers`); the new revision."""
        conditional = {**headers, Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(last)}
        try:
            ack = await self.js.publish(bucket_stream(self.kv).subject(key), value, headers=conditional)
        except APIError as exc:
            if exc.err_code in WRONG_LAST_SEQUENCE:
                raise KeyWrongLastSequenceError(description=exc.description) from exc
            raise
        return int(ack.seq)

    async def _create(self, key: str, value: bytes, headers: dict[str, str]) -> int:
        """``KeyValue.create``: the key must not exist, or exist deleted (a tombstone)."""
        try:
            return await self._put(key, value, 0, headers)
        except KeyWrongLastSequenceError:
            try:
                await self.kv.get(key)
            except (KeyNotFoundError, KeyDeletedError) as gone:  # nats-py: a tombstone's entry
                tombstone = getattr(gone, "entry", None)
                if tombstone is None or not tombstone.revision:
                    raise
                return await self._put(key, value, tombstone.revision, headers)
            raise

    async def _retry(self, op: Any, what: str) -> None:
        attempt = 0
        while True:
            attempt += 1
            try:
                await op()
                return
            except (NatsError, TimeoutError, OSError, TransientError) as exc:
                delay = BUS_RETRY.delay(attempt)
                log.warning("%s failed (%r); retrying in %.1fs", what, exc, delay)
                await asyncio.sleep(delay)
