"""Reading the audit history: change events, status reports and decisions from their three
limits-retention streams, filtered by the server, merged by time, optionally followed.

Each stream is read through its own *ephemeral* pull consumer (acks off, in memory, removed when
the reader closes and by the server after ``inactive_threshold`` if the reader dies) — never a
durable one, so replaying history leaves nothing behind and never competes with the services'
work-queue consumers.

Replay ends at the end of history: the last message each stream held when the reader opened
(or a message with ``num_pending == 0``). Every stream is time-ordered (records are ordered by the
time the stream stored them), so the three are merged with a k-way merge that holds at most one
fetch batch per stream in memory, whatever the history's size. In follow mode the readers then
keep fetching and new records are yielded as they arrive, until the caller stops iterating.

The time of a record is the time its stream stored it (nanoseconds in the message metadata,
truncated to microseconds), which is also what ``since`` (``DeliverPolicy.BY_START_TIME``) and
``until`` compare against.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import secrets
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import APIError, NotFoundError
from pydantic import ValidationError

from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ChangeEvent, Decision, StatusReport
from aimctl.audit.query import WATCHER, Query, RecordType

STREAMS: dict[RecordType, str] = {
    "change": topology.EVENTS_STREAM,
    "status": topology.STATUS_STREAM,
    "decision": topology.DECISIONS_STREAM,
}
_ORDER: dict[RecordType, int] = {"change": 0, "status": 1, "decision": 2}

Payload = ChangeEvent | StatusReport | Decision
_MODELS: dict[RecordType, type[ChangeEvent] | type[StatusReport] | type[Decision]] = {
    "change": ChangeEvent,
    "status": StatusReport,
    "decision": Decision,
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    """One history entry, whatever stream it came from."""

    time: datetime
    type: RecordType
    source: str
    group: str
    kind: str
    namespace: str | None
    name: str
    stream: str
    seq: int
    subject: str
    payload: dict[str, Any] | None
    """The message as published (decoded JSON), or None when it was not a JSON object."""
    message: Payload | None
    """The parsed message, or None when it does not match the schema this reader knows."""

    @property
    def change(self) -> ChangeEvent | None:
        return self.message if isinstance(self.message, ChangeEvent) else None

    @property
    def status(self) -> StatusReport | None:
        return self.message if isinstance(self.message, StatusReport) else None

    @property
    def decision(self) -> Decision | None:
        return self.message if isinstance(self.message, Decision) else None


def stored_time(msg: Msg) -> datetime:
    """When the stream stored ``msg``, to the microsecond (floored, never rounded up, so a
    ``since`` taken from a record includes that record)."""
    tokens = (msg.reply or "").split(".")
    try:
        nanos = int(tokens[7] if len(tokens) == 9 else tokens[9])
    except (IndexError, ValueError):
        return msg.metadata.timestamp
    return _EPOCH + timedelta(microseconds=nanos // 1000)


def parse_record(record_type: RecordType, msg: Msg) -> Record:
    """A :class:`Record` from a stream message; never raises on a malformed payload."""
    payload: dict[str, Any] | None = None
    message: Payload | None = None
    try:
        decoded = json.loads(msg.data)
        payload = decoded if isinstance(decoded, dict) else None
    except (ValueError, UnicodeDecodeError):
        payload = None
    if payload is not None:
        try:
            message = _MODELS[record_type].model_validate(payload)
        except ValidationError:
            message = None
    source = WATCHER if record_type == "change" else "?"
    group, kind, namespace, name = "", "?", None, "?"
    if record_type == "change":
        tokens = msg.subject.split(".")
        try:
            if len(tokens) == 6:
                group, kind, namespace, name = subjects.parse_object_tokens(tokens[2:6])
        except (KeyError, ValueError):
            pass
    else:  # the subject names the source (the server checked it), whatever the payload says
        prefix = subjects.STATUS_PREFIX if record_type == "status" else subjects.DECISIONS_PREFIX
        parsed = subjects.parse_sourced(msg.subject, prefix)
        if parsed is not None:
            source, (group, kind, namespace, name) = parsed
    meta = msg.metadata
    return Record(
        time=stored_time(msg),
        type=record_type,
        source=source,
        group=group,
        kind=kind,
        namespace=namespace,
        name=name,
        stream=meta.stream,
        seq=meta.sequence.stream,
        subject=msg.subject,
        payload=payload,
        message=message,
    )


class _StreamReader:
    """An ephemeral pull consumer over one stream and filter, re-created where it left off if
    the server removed it (a reader paused longer than ``inactive_threshold``)."""

    def __init__(
        self,
        js: JetStreamContext,
        record_type: RecordType,
        subject_filter: str,
        query: Query,
        *,
        batch: int,
        poll: float,
        inactive_threshold: float,
    ) -> None:
        self.js = js
        self.type = record_type
        self.stream = STREAMS[record_type]
        self.filter = subject_filter
        self.query = query
        self.batch = batch
        self.poll = poll
        self.inactive_threshold = inactive_threshold
        self.name = ""
        self.sub: JetStreamContext.PullSubscription | None = None
        self.buffer: deque[Msg] = deque()
        self.pending = 0
        self.end_seq = 0
        self.last_seq = 0
        self.history_done = False

    async def open(self) -> bool:
        """Snapshot the end of history and create the consumer; False if the stream is missing."""
        try:
            info = await self.js.stream_info(self.stream)
        except NotFoundError:
            return False
        self.end_seq = info.state.last_seq
        await self._create(after_seq=None)
        if self.pending == 0:
            self.history_done = True
        return True

    async def _create(self, after_seq: int | None) -> None:
        await self._drop()
        self.name = f"aim-audit-{secrets.token_hex(6)}"
        config = ConsumerConfig(
            name=self.name,
            ack_policy=AckPolicy.NONE,
            filter_subject=self.filter,
            inactive_threshold=self.inactive_threshold,
            mem_storage=True,
            num_replicas=1,
        )
        if after_seq is not None:
            config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            config.opt_start_seq = after_seq + 1
        elif self.query.since is not None:
            config.deliver_policy = DeliverPolicy.BY_START_TIME
            config.opt_start_time = self.query.since
        else:
            config.deliver_policy = DeliverPolicy.ALL
        info = await self.js.add_consumer(self.stream, config=config)
        self.pending = info.num_pending or 0
        self.sub = await self.js.pull_subscribe_bind(consumer=self.name, stream=self.stream)

    async def _drop(self) -> None:
        if self.sub is not None:
            with contextlib.suppress(Exception):
                await self.sub.unsubscribe()
            self.sub = None
        if self.name:
            with contextlib.suppress(Exception):
                await self.js.delete_consumer(self.stream, self.name)
            self.name = ""

    async def close(self) -> None:
        await self._drop()

    async def _fill(self, *, waiting: bool) -> None:
        """Fetch into the buffer. With messages pending, exactly as many as are pending (up to a
        batch) so the fetch returns at once; otherwise one, waiting up to ``poll`` (follow mode).
        An empty fetch refreshes ``pending`` and re-creates a consumer the server removed."""
        assert self.sub is not None
        want = min(self.batch, self.pending) if self.pending > 0 else 1
        timeout = 5.0 if self.pending > 0 or not waiting else self.poll
        try:
            msgs = await self.sub.fetch(want, timeout=timeout)
        except (NatsTimeout, TimeoutError, APIError):  # APIError: 503/409 when the consumer is gone
            try:
                info = await self.js.consumer_info(self.stream, self.name)
                self.pending = info.num_pending or 0
            except NotFoundError:
                await self._create(after_seq=self.last_seq if self.last_seq else None)
            return
        self.buffer.extend(msgs)
        if msgs:
            self.pending = msgs[-1].metadata.num_pending

    def _pop(self) -> Msg | None:
        """The next buffered message not already seen (a re-created consumer may repeat some)."""
        while self.buffer:
            msg = self.buffer[0]
            if msg.metadata.sequence.stream <= self.last_seq:
                self.buffer.popleft()
                continue
            return msg
        return None

    async def next_history(self) -> Record | None:
        """The next record of history, or None at its end."""
        until = self.query.until
        while not self.history_done:
            msg = self._pop()
            if msg is None:
                if self.pending == 0:
                    self.history_done = True
                    break
                await self._fill(waiting=False)
                continue
            meta = msg.metadata
            seq = meta.sequence.stream
            if seq > self.end_seq or (until is not None and stored_time(msg) > until):
                self.history_done = True  # the message stays buffered for follow mode
                break
            self.buffer.popleft()
            self.last_seq = seq
            if meta.num_pending == 0 or seq >= self.end_seq:
                self.history_done = True
            return parse_record(self.type, msg)
        return None

    async def next_live(self) -> list[Record]:
        """New records (possibly none after ``poll`` seconds)."""
        if self._pop() is None:
            await self._fill(waiting=True)
        out: list[Record] = []
        while (msg := self._pop()) is not None:
            self.buffer.popleft()
            self.last_seq = msg.metadata.sequence.stream
            out.append(parse_record(self.type, msg))
        return out


class History:
    """Replays (and optionally follows) the records a :class:`Query` selects.

    ::

        async with History(js, Query(kind=ref, namespace="team-a", follow=True)) as history:
            async for record in history.records():
                ...

    ``caught_up`` is set once the replay reached the end of history; ``missing`` lists streams
    that do not exist (nothing has declared the topology yet).
    """

    def __init__(
        self,
        js: JetStreamContext,
        query: Query,
        *,
        batch: int = 256,
        poll: float = 2.0,
        inactive_threshold: float = 300.0,
    ) -> None:
        self.js = js
        self.query = query
        self.batch = batch
        self.poll = poll
        self.inactive_threshold = inactive_threshold
        self.caught_up = asyncio.Event()
        self.missing: list[str] = []
        self.count = 0
        self._readers: list[_StreamReader] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> History:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for reader in self._readers:
            await reader.close()
        self._readers.clear()

    def _accept(self, record: Record) -> bool:
        source = self.query.source
        return source is None or record.source == source

    def _limit_reached(self) -> bool:
        return self.query.limit is not None and self.count >= self.query.limit

    async def _open(self) -> list[_StreamReader]:
        readers: list[_StreamReader] = []
        for record_type, subject_filter in sorted(self.query.filters().items(), key=lambda i: _ORDER[i[0]]):
            reader = _StreamReader(
                self.js,
                record_type,
                subject_filter,
                self.query,
                batch=self.batch,
                poll=self.poll,
                inactive_threshold=self.inactive_threshold,
            )
            self._readers.append(reader)
            if not await reader.open():
                self.missing.append(reader.stream)
                continue
            readers.append(reader)
        return readers

    async def _replay(self, readers: list[_StreamReader]) -> AsyncIterator[Record]:
        """History of every reader, merged by time (ties: change, status, decision)."""
        heap: list[tuple[datetime, int, int, Record]] = []

        async def advance(i: int) -> None:
            record = await readers[i].next_history()
            if record is not None:
                heapq.heappush(heap, (record.time, i, record.seq, record))

        for i in range(len(readers)):
            await advance(i)
        while heap:
            _time, i, _seq, record = heapq.heappop(heap)
            yield record
            await advance(i)

    async def records(self) -> AsyncIterator[Record]:
        """The selected records in time order; in follow mode, then new ones as they arrive."""
        readers = await self._open()
        tail: deque[Record] | None = deque(maxlen=self.query.tail) if self.query.tail is not None else None
        async for record in self._replay(readers):
            if not self._accept(record):
                continue
            if tail is not None:
                tail.append(record)
                continue
            self.count += 1
            yield record
            if self._limit_reached():
                return
        for record in tail or ():
            self.count += 1
            yield record
            if self._limit_reached():
                return
        self.caught_up.set()
        if not self.query.follow or not readers:
            return
        queue: asyncio.Queue[list[Record] | BaseException] = asyncio.Queue(maxsize=len(readers) * 2)

        async def pump(reader: _StreamReader) -> None:
            try:
                while True:
                    batch = await reader.next_live()
                    if batch:
                        await queue.put(batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await queue.put(exc)

        self._tasks = [asyncio.create_task(pump(r)) for r in readers]
        while True:
            item = await queue.get()
            if isinstance(item, BaseException):
                raise item
            for record in item:
                if not self._accept(record):
                    continue
                self.count += 1
                yield record
                if self._limit_reached():
                    return
