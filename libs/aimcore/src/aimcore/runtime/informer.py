"""An informer-like local cache of the objects a service needs, fed by watching the KV mirror.

The watcher is the only process that watches the API server; each service replica keeps its own
in-memory copy of the kinds it cares about by watching the mirror bucket (one KV watch per kind),
and looks objects up locally: by key, by label, by owner, or by any field a service registers an
index for (``spec.modelName``, ``spec.model.image``...). Reads never go back in time: a reader
handling an event waits until the cache has caught up with that event's resourceVersion.

Each object is kept as the bytes the mirror holds (about 1.9 KiB for an AIMService with its status)
and parsed when read: a bounded cache keeps the recently stored and read ones parsed (``PARSED_SIZE``).
Parsed, every cached object cost about 12 KiB (the deployer held 1.26 GiB at 50,000 AIMServices, most
of the operator's memory; docs/benchmarks.md); a reconcile reads a handful of objects, almost always
ones just stored, so the cache answers it, and a read it misses costs one ``json.loads`` (~20 µs).
Indexes are computed when an object is stored, as before.

Objects of our own kinds are read into their models here, where they enter the process
(:meth:`Informer.decoded`): once per resourceVersion, lazily, and only those a reader asks for. Not
on store: the mirror holds every object of the watched kinds, most of which no reconcile reads
(10,000 paused objects cost the deployer ~35 MiB more parsed than as dicts, docs/benchmarks.md);
a bounded cache of the ones read keeps the hot ones parsed once. Objects of other projects (Pods,
Jobs, InferenceServices) stay as the API server wrote them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KeyValue

from aimcore.api.bus import subjects
from aimcore.api.errors import TransientError
from aimcore.api.kinds import KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.runtime.indexers import Indexer, ResourceIndexer, owner_uids
from aimcore.runtime.mirrorscan import Key, kind_pattern, removal, snapshot_raw
from aimcore.runtime.natsinternals import bucket_stream
from aimcore.runtime.probes import READINESS
from aimcore.runtime.resourceversion import rv_int

if TYPE_CHECKING:  # the watcher uses this module and loads no CRD model
    from aimcore.api.crds.validation import Decoded

log = logging.getLogger(__name__)
GRAVEYARD_SIZE = 4096
DECODED_SIZE = 2048  # objects kept read into their models (least recently read forgotten first)
PARSED_SIZE = 4096  # objects kept parsed (least recently stored or read forgotten first)


class Informer:
    def __init__(
        self, kv: KeyValue, kinds: Sequence[KindRef], indexers: dict[str, Indexer] | None = None
    ) -> None:
        self.kv = kv
        self.kinds = list(kinds)
        self.indexers: dict[str, Indexer] = {"owner": owner_uids, **(indexers or {})}
        # each object as the mirror holds it, and the resourceVersion it is at (the guard that
        # never goes back in time); the same bytes delivered again (the KV watch's current values
        # at start and after every re-watch, which the snapshot has stored) are neither parsed nor
        # indexed twice
        self._raw: dict[Key, bytes] = {}
        self._versions: dict[Key, int] = {}
        self._parsed: OrderedDict[Key, Obj] = OrderedDict()
        self.objects: Mapping[Key, Obj] = _Objects(self)
        # the last state of recently deleted objects, so a watch can map a deletion to the
        # objects that depended on it (a deleted Job still names its owner)
        self._graveyard: OrderedDict[Key, Obj] = OrderedDict()
        self._index: dict[str, dict[str, set[Key]]] = {name: defaultdict(set) for name in self.indexers}
        self._indexed_values: dict[Key, dict[str, list[str]]] = {}
        # keys by kind prefix and by kind-and-namespace prefix (``group.Kind.`` and
        # ``group.Kind.ns.``), so :meth:`list` never scans every object; dicts keep insertion order
        self._scopes: dict[str, dict[Key, None]] = defaultdict(dict)
        self._tasks: list[asyncio.Task[None]] = []
        self.synced = asyncio.Event()
        self._decoded: OrderedDict[Key, tuple[str, Decoded]] = OrderedDict()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the current state of every kind, then follow each from there; returns once the
        current state is loaded.

        The bucket's last stream sequence is read first, the current state then with
        :func:`snapshot_raw` (exact), and each kind's watch starts right after that sequence: a
        change after it is delivered by the watch (a value the snapshot also read is stored once;
        the resourceVersion guard keeps the newer), and none before it is needed, the snapshot
        holding each key's last value. A KV watch of current values sent every object again, which
        the snapshot had read: 200 MB at 50,000 services, pushed at a deployer still parsing its
        snapshot, which NATS cut off as a slow consumer (docs/benchmarks.md)."""
        bucket = bucket_stream(self.kv)
        after = (await bucket.js.stream_info(bucket.stream)).state.last_seq or 0
        for ref in self.kinds:
            for key, (_, raw) in (await snapshot_raw(self.kv, kind_pattern(ref))).items():
                self._store_raw(key, raw)
        for ref in self.kinds:
            self._tasks.append(asyncio.create_task(self._follow(kind_pattern(ref), after)))
        self.synced.set()

    def readiness(self) -> str | None:
        return None if self.synced.is_set() else f"loading {len(self.kinds)} kinds from the mirror"

    async def stop(self) -> None:
        READINESS.waiting("informer", "stopped")
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _follow(self, pattern: str, after: int) -> None:
        """Apply every change under ``pattern`` from the bucket's stream sequence ``after + 1`` on,
        in order: an ordered consumer, which NATS clients re-create from the last sequence they
        handled after a gap or a lost connection, so nothing is sent twice or skipped. Creating it
        while NATS is unavailable is retried from the last sequence handled."""
        bucket = bucket_stream(self.kv)
        last = after

        async def handle(msg: Msg) -> None:
            nonlocal last
            last = max(last, msg.metadata.sequence.stream)
            key = bucket.key(msg.subject)
            if removal(msg):
                self._remove(key)
                return
            try:
                self._store_raw(key, msg.data)
            except ValueError as exc:  # not JSON: nothing the watcher writes; skipped with a warning
                log.warning("mirror entry %s is not an object (%r); skipped", key, exc)

        while True:
            try:
                sub = await bucket.js.subscribe(
                    bucket.subject(pattern),
                    stream=bucket.stream,
                    cb=handle,
                    ordered_consumer=True,
                    config=ConsumerConfig(
                        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                        opt_start_seq=last + 1,
                        inactive_threshold=300.0,
                    ),
                )
            except Exception as exc:  # a NATS outage: watch again from the last change handled
                log.warning("mirror watch %s failed (%r); watching again", pattern, exc)
                await asyncio.sleep(1.0)
                continue
            try:
                await asyncio.Event().wait()  # until stopped: the subscription applies the changes
            finally:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

    # -- updates -----------------------------------------------------------------------------

    def _store_raw(self, key: Key, raw: bytes) -> None:
        """Store a value as the mirror holds it, unless it is the value stored already."""
        if self._raw.get(key) == raw:
            return
        self._store(key, json.loads(raw), bytes(raw))

    def _store(self, key: Key, obj: Obj, raw: bytes | None = None) -> bool:
        """Store ``obj`` (whose stored form is ``raw``, if known) unless a newer version is stored;
        whether it was stored."""
        version = rv_int(_rv(obj))
        if key in self._versions and self._versions[key] > version:
            return False  # never go back in time (a lagging writer)
        self._unindex(key)
        if key not in self._raw:
            for scope in _scopes_of(key):
                self._scopes[scope][key] = None
        self._raw[key] = raw if raw is not None else json.dumps(obj, separators=(",", ":")).encode()
        self._versions[key] = version
        self._remember(key, obj)
        values = {name: list(self._index_values(fn, key, obj)) for name, fn in self.indexers.items()}
        self._indexed_values[key] = values
        for name, vals in values.items():
            for v in vals:
                self._index[name][v].add(key)
        return True

    def _index_values(self, indexer: Indexer, key: Key, obj: Obj) -> Iterable[str]:
        if not isinstance(indexer, ResourceIndexer):
            return indexer(obj)
        group, kind, _ = key.split(".", 2)
        ref = by_kind(subjects.token_group(group), kind)
        if ref not in indexer.kinds:
            return ()
        resource = self.decoded(ref, obj).resource
        return indexer.index(ref, obj, resource) if resource is not None else ()

    def _remember(self, key: Key, obj: Obj) -> None:
        self._parsed[key] = obj
        self._parsed.move_to_end(key)
        if len(self._parsed) > PARSED_SIZE:
            self._parsed.popitem(last=False)

    def _object(self, key: Key) -> Obj | None:
        """The stored object, parsed (from the cache of parsed objects when it is there)."""
        hit = self._parsed.get(key)
        if hit is not None:
            self._parsed.move_to_end(key)
            return hit
        raw = self._raw.get(key)
        if raw is None:
            return None
        obj: Obj = json.loads(raw)
        self._remember(key, obj)
        return obj

    def _remove(self, key: Key) -> None:
        self._unindex(key)
        self._decoded.pop(key, None)
        old = self._object(key)
        self._parsed.pop(key, None)
        self._raw.pop(key, None)
        self._versions.pop(key, None)
        if old is not None:
            for scope in _scopes_of(key):
                keys = self._scopes.get(scope)
                if keys is not None:
                    keys.pop(key, None)
                    if not keys:
                        del self._scopes[scope]
            self._graveyard[key] = old
            self._graveyard.move_to_end(key)
            while len(self._graveyard) > GRAVEYARD_SIZE:
                self._graveyard.popitem(last=False)

    def _unindex(self, key: Key) -> None:
        for name, vals in self._indexed_values.pop(key, {}).items():
            for v in vals:
                keys = self._index[name].get(v)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._index[name][v]

    # -- reads -------------------------------------------------------------------------------

    def decoded(self, ref: KindRef, obj: Obj) -> Decoded:
        """``obj`` (of one of our kinds) read into its model, with its owner's verdict on the
        spec: parsed once per resourceVersion (an object without one, not stored, each time)."""
        from aimcore.api.crds.validation import decode  # noqa: PLC0415 - see TYPE_CHECKING above

        meta = obj.get("metadata") or {}
        version = _rv(obj)
        if version is None:
            return decode(ref.group, ref.kind, obj)
        key = subjects.object_key(ref, meta.get("namespace"), str(meta.get("name")))
        hit = self._decoded.get(key)
        if hit is not None and hit[0] == version:
            self._decoded.move_to_end(key)
            return hit[1]
        read = decode(ref.group, ref.kind, obj)
        self._decoded[key] = (version, read)
        self._decoded.move_to_end(key)
        while len(self._decoded) > DECODED_SIZE:
            self._decoded.popitem(last=False)
        return read

    def get(self, ref: KindRef, namespace: str | None, name: str) -> Obj | None:
        return self._object(subjects.object_key(ref, namespace, name))

    def last_known(self, ref: KindRef, namespace: str | None, name: str) -> Obj | None:
        """The object, or its last state if it was deleted recently (``None`` if never seen)."""
        key = subjects.object_key(ref, namespace, name)
        return self._object(key) or self._graveyard.get(key)

    async def wait_for(
        self, ref: KindRef, namespace: str | None, name: str, at_least: str | None
    ) -> Obj | None:
        """The object at resourceVersion ``at_least`` or newer; ``None`` if it no longer exists.

        A cache miss or an older copy means the KV watch has not caught up yet (or the object is
        gone): the mirror itself is read then, which is authoritative."""
        key = subjects.object_key(ref, namespace, name)
        if key in self._versions and self._versions[key] >= rv_int(at_least):
            return self._object(key)
        return await self._read_mirror(key, at_least)

    async def current(
        self, ref: KindRef, namespace: str | None, name: str, at_least: str | None
    ) -> Obj | None:
        """The object as the mirror holds it now, read from the bucket (its stream's leader answers:
        the newest version written), newer than the cached copy if the cache lags; ``None`` if it
        no longer exists. What a reconcile starts from: the event that woke it may be old (a
        message redelivered after another replica took up its newer one, or a dependency's event
        naming no version of the object), and the cache may lag the mirror by seconds (its watch
        re-created after a NATS server went), so only the mirror tells whether a newer version
        exists; a reconcile from an older one would write children that a newer one already
        replaced, and nothing would wake it again (tests/multinode: a NATS pod deleted mid-rollout)."""
        return await self._read_mirror(subjects.object_key(ref, namespace, name), at_least)

    async def _read_mirror(self, key: Key, at_least: str | None) -> Obj | None:
        """The mirror's copy of ``key``, stored here unless the cache has a newer one (then that
        is returned); ``None`` if gone; transient if the mirror is older than ``at_least``."""
        try:
            entry = await self.kv.get(key)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        if not entry.value:
            return None
        fresh: Obj = json.loads(entry.value)
        if not self._store(key, fresh, bytes(entry.value)):
            fresh = self._object(key) or fresh  # the watch brought a newer one meanwhile
        if rv_int(_rv(fresh)) < rv_int(at_least):
            raise TransientError(f"mirror of {key} is at {_rv(fresh)}, older than {at_least}")
        return fresh

    def by_index(self, index: str, value: str) -> list[Obj]:
        found = (self._object(k) for k in sorted(self._index[index].get(value, ())))
        return [obj for obj in found if obj is not None]

    def list(
        self, ref: KindRef, namespace: str | None = None, labels: dict[str, str] | None = None
    ) -> list[Obj]:
        prefix = f"{subjects.group_token(ref.group)}.{ref.kind}."
        if namespace is not None and ref.namespaced:
            prefix += f"{subjects.ns_token(namespace)}."
        out = []
        for key in self._scopes.get(prefix, {}):  # reading changes only which objects stay parsed
            obj = self._object(key)
            if obj is None:
                continue
            have = (obj.get("metadata") or {}).get("labels") or {}
            if labels and any(have.get(k) != v for k, v in labels.items()):
                continue
            out.append(obj)
        return out


class _Objects(Mapping[Key, Obj]):
    """The informer's objects by mirror key, parsed as they are read (for tests and debugging)."""

    def __init__(self, informer: Informer) -> None:
        self._informer = informer

    def __getitem__(self, key: Key) -> Obj:
        obj = self._informer._object(key)
        if obj is None:
            raise KeyError(key)
        return obj

    def __iter__(self) -> Iterator[Key]:
        return iter(list(self._informer._raw))

    def __len__(self) -> int:
        return len(self._informer._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._informer._raw


def _scopes_of(key: Key) -> tuple[str, str]:
    """``group.Kind.`` and ``group.Kind.ns.`` of a mirror key (``group.Kind.ns.name``)."""
    group, kind, ns, _ = key.split(".", 3)
    return f"{group}.{kind}.", f"{group}.{kind}.{ns}."


def _rv(obj: Obj) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv is not None else None
