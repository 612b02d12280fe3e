"""The watcher's leader rides out a bus that cannot answer for less than its renew deadline (a
stream electing a new leader after a NATS server died) and steps down once the deadline passes,
before its key's TTL lets a standby take over; a key taken by another replica ends the term at
once."""

from __future__ import annotations

import asyncio

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import KeyWrongLastSequenceError

from aim_watcher.election import Election


class Lease:
    """A leader's key whose renewals fail as told: ``None`` succeeds, an exception is raised."""

    def __init__(self, outcomes: list[Exception | None]) -> None:
        self.outcomes = outcomes
        self.renewals = 0
        self.tenth = asyncio.Event()  # ten renewals asked

    async def take(self) -> bool:
        return True

    async def renew(self) -> None:
        self.renewals += 1
        if self.renewals >= 10:
            self.tenth.set()
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome

    async def release(self) -> None:
        return None


def election(lease: Lease) -> Election:
    e = Election(None, "me", renew_every=0.01, renew_deadline=0.5)  # type: ignore[arg-type]
    e.lease = lease  # type: ignore[assignment]
    return e


async def _term(e: Election, stop: asyncio.Event) -> None:
    async def lead(step_down: asyncio.Event) -> None:
        await step_down.wait()
        stop.set()  # one term only

    await asyncio.wait_for(e.run(stop, lead), timeout=10)


async def test_a_short_outage_is_ridden_out() -> None:
    lease = Lease([NatsTimeoutError(), NatsTimeoutError(), NatsTimeoutError(), None])
    e, stop = election(lease), asyncio.Event()
    task = asyncio.create_task(_term(e, stop))
    await asyncio.wait_for(lease.tenth.wait(), timeout=10)  # renewing again after the outage
    assert not task.done() and e.terms == 1
    stop.set()
    await task


async def test_an_outage_past_the_deadline_steps_down() -> None:
    lease = Lease([NatsTimeoutError()] * 1_000)
    e, stop = election(lease), asyncio.Event()
    await _term(e, stop)
    assert 1 < lease.renewals < 1_000  # retried, then stepped down at the deadline


async def test_a_key_taken_by_another_replica_ends_the_term_at_once() -> None:
    lease = Lease([KeyWrongLastSequenceError()])
    e, stop = election(lease), asyncio.Event()
    await _term(e, stop)
    assert lease.renewals == 1
