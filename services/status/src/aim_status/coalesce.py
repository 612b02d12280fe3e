"""Progress coalescing (docs/design.md#status-ownership): at most one status write per object per
window for reports marked ``progress=True``, the latest value always lands, and nothing else is ever
delayed.

Per object (the report's subject), inside one replica:

- **Leading edge.** A progress report for an object not written within the last ``window`` seconds
  is written at once.
- **Buffer.** Otherwise it is kept as the object's pending report (one per reporting service, so two
  services' progress never overwrite each other's) and replaces any older pending one; a *trailing
  write* is scheduled for the end of the window. The trailing write first asks the stream whether a
  newer report from the same service exists on the object's subject (:class:`StreamGuard`): if one
  does, that one is (or will be) written by whichever replica got it, and the older value is
  dropped instead of landing after it. This is what keeps two or more replicas, which each see
  only the messages JetStream hands them, from writing stale progress over a newer value.
- **Non-progress reports are never delayed.** They *flush* the object's pending progress: both are
  applied, in order, in the same single write (so fields only the progress report carries, e.g.
  ``status.progress``, still land, and the non-progress report has the last word).

Coalescing is per replica: with N replicas an object may see up to N progress writes per window.
That is acceptable — the bound that matters (no write per progress message) holds, and the stream
guard keeps the order right.

Acknowledgement choice: a buffered progress message is **acknowledged as soon as it is buffered**
(the shared consumer acks when the handler returns; holding the ack would also hold the consumer's
per-object ordering lock and stop later reports from superseding it). A crash inside the window
therefore loses at most the intermediate progress value (the next progress report, or the final
non-progress report, which is written before it is acked, brings the object up to date). A clean
shutdown (:meth:`Coalescer.close`) writes everything still pending. A failed trailing write is
retried with backoff a few times, and so is one whose order cannot be checked (the stream guard
not answering is a retry, never a pass).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from opentelemetry import context as otel_context
from pydantic import ValidationError

from aim_status.ordering import Sequenced
from aimcore.api.bus.messages import StatusReport
from aimcore.runtime import describe_error
from aimcore.runtime.keyedlock import KeyedLock

log = logging.getLogger(__name__)

Write = Callable[[Sequence[Sequenced]], Awaitable[bool]]
Superseded = Callable[[str, int, str], Awaitable[bool]]
"""``(subject, stream sequence, source)`` → is there a newer report from ``source`` on ``subject``?"""

DEFAULT_WINDOW = 3.0
MAX_RETRIES = 5


@dataclass
class _Entry:
    seq: int
    report: StatusReport
    context: otel_context.Context
    attempts: int = 0

    def placed(self, subject: str) -> Sequenced:
        return Sequenced(subject, self.seq, self.report)


@dataclass
class _Pending:
    entries: dict[str, _Entry] = field(default_factory=dict)
    timer: asyncio.Task[None] | None = None


@dataclass
class CoalescerStats:
    immediate: int = 0  # progress reports written at the leading edge
    buffered: int = 0  # progress reports kept for a trailing write
    replaced: int = 0  # buffered reports replaced by a newer one before being written
    stale: int = 0  # trailing values dropped because the stream holds a newer one
    trailing: int = 0  # trailing writes attempted
    flushed: int = 0  # pending values written together with a non-progress report
    retries: int = 0
    dropped: int = 0  # values given up after MAX_RETRIES failed writes


class Coalescer:
    def __init__(
        self,
        write: Write,
        window: float = DEFAULT_WINDOW,
        *,
        superseded: Superseded | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.write = write
        self.window = window
        self.superseded = superseded
        self.clock = clock
        self.max_retries = max_retries
        self.stats = CoalescerStats()
        self._pending: dict[str, _Pending] = {}
        self._last_write: dict[str, float] = {}
        self._prune_at = 1024
        self._locks: KeyedLock[str] = KeyedLock()
        self._timers: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def submit(self, subject: str, report: StatusReport, seq: int = 0) -> None:
        """Handle one report for the object on ``subject`` (``seq``: its stream sequence).
        Returns once the report is written, found to change nothing, or buffered."""
        if self.window <= 0:
            await self._write(subject, [Sequenced(subject, seq, report)])
            return
        async with self._locks.hold(subject):
            if not report.progress:
                flushed = self._take(subject)
                self.stats.flushed += len(flushed)
                try:
                    await self._write(
                        subject, [*(e.placed(subject) for e in flushed), Sequenced(subject, seq, report)]
                    )
                except BaseException:
                    self._restore(subject, flushed)  # the report itself is nak'd and redelivered
                    raise
                return
            entry = _Entry(seq, report, otel_context.get_current())
            pending = self._pending.get(subject)
            if pending is not None:
                older = pending.entries.get(report.source)
                if older is not None and older.seq > seq:
                    return  # a redelivered older report: the buffered one is newer
                if older is not None:
                    self.stats.replaced += 1
                pending.entries[report.source] = entry
                self.stats.buffered += 1
                return
            last = self._last_write.get(subject)
            if last is None or self.clock() - last >= self.window:
                self.stats.immediate += 1
                await self._write(subject, [Sequenced(subject, seq, report)])
                return
            self.stats.buffered += 1
            self._schedule(subject, _Pending({report.source: entry}), due=last + self.window)

    async def close(self) -> None:
        """Write everything still pending (clean shutdown) and wait for trailing writes."""
        for subject in list(self._pending):
            async with self._locks.hold(subject):
                pending = self._pending.pop(subject, None)
                if pending is None:
                    continue
                if pending.timer is not None:
                    pending.timer.cancel()
                await self._flush(subject, pending, retry=False)
        if self._timers:
            await asyncio.gather(*self._timers, return_exceptions=True)

    # -- internals ------------------------------------------------------------------------------

    async def _write(self, subject: str, reports: Sequence[Sequenced]) -> None:
        if await self.write(reports):
            now = self.clock()
            self._last_write[subject] = now
            if len(self._last_write) > self._prune_at:
                cutoff = now - self.window
                self._last_write = {k: t for k, t in self._last_write.items() if t > cutoff}
                self._prune_at = max(1024, 2 * len(self._last_write))

    def _take(self, subject: str) -> list[_Entry]:
        pending = self._pending.pop(subject, None)
        if pending is None:
            return []
        if pending.timer is not None and pending.timer is not asyncio.current_task():
            pending.timer.cancel()
        return sorted(pending.entries.values(), key=lambda e: e.seq)

    def _restore(self, subject: str, entries: list[_Entry]) -> None:
        keep = [e for e in entries if e.attempts < self.max_retries]
        self.stats.dropped += len(entries) - len(keep)
        if not keep:
            return
        for e in keep:
            e.attempts += 1
        attempts = max(e.attempts for e in keep)
        self.stats.retries += 1
        pending = self._pending.setdefault(subject, _Pending())
        for e in keep:
            current = pending.entries.get(e.report.source)
            if current is None or current.seq < e.seq:
                pending.entries[e.report.source] = e
        if pending.timer is None or pending.timer.done():
            self._schedule(subject, pending, due=self.clock() + self.window * attempts)

    def _schedule(self, subject: str, pending: _Pending, due: float) -> None:
        self._pending[subject] = pending
        timer = asyncio.create_task(self._trailing(subject, pending, due))
        pending.timer = timer
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)

    async def _trailing(self, subject: str, pending: _Pending, due: float) -> None:
        delay = due - self.clock()
        if delay > 0:
            await asyncio.sleep(delay)
        async with self._locks.hold(subject):
            if self._pending.get(subject) is not pending:
                return  # flushed by a non-progress report in the meantime
            del self._pending[subject]
            await self._flush(subject, pending, retry=True)

    async def _flush(self, subject: str, pending: _Pending, *, retry: bool) -> None:
        entries = sorted(pending.entries.values(), key=lambda e: e.seq)
        stale: list[_Entry] = []
        token = otel_context.attach(entries[-1].context)  # the trace of the value that lands
        try:
            # a guard that cannot read the stream fails the flush (retried), never passes it
            for entry in entries:
                if await self._is_superseded(subject, entry):
                    stale.append(entry)
                    self.stats.stale += 1
            live = [e for e in entries if e not in stale]
            if not live:
                return
            self.stats.trailing += 1
            await self._write(subject, [e.placed(subject) for e in live])
        except Exception as exc:
            log.warning("trailing status write on %s failed: %s", subject, describe_error(exc))
            failed = [e for e in entries if e not in stale]
            if retry:
                self._restore(subject, failed)
            else:
                self.stats.dropped += len(failed)
        finally:
            otel_context.detach(token)

    async def _is_superseded(self, subject: str, entry: _Entry) -> bool:
        if self.superseded is None or not entry.seq:
            return False
        return await self.superseded(subject, entry.seq, entry.report.source)


class StreamGuard:
    """Answers "does the status stream hold a newer report from this source for this object?" by
    walking the object's subject forward from a message's sequence (one lookup in the common case;
    at most ``lookahead`` when other services' reports are interleaved — then it answers no, and the
    value is written)."""

    def __init__(self, js: JetStreamContext, stream: str, lookahead: int = 16) -> None:
        self.js = js
        self.stream = stream
        self.lookahead = lookahead

    async def __call__(self, subject: str, seq: int, source: str) -> bool:
        cursor = seq + 1
        for _ in range(self.lookahead):
            try:
                raw = await self.js.get_msg(self.stream, seq=cursor, subject=subject, next=True)
            except NotFoundError:
                return False
            if raw.seq is None or raw.data is None:
                return False
            try:
                if StatusReport.model_validate_json(raw.data).source == source:
                    return True
            except ValidationError:
                pass
            cursor = raw.seq + 1
        return False
