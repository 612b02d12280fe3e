"""The watcher's leader rides out a bus that cannot answer, however long (a stream electing a new
leader after a NATS server died, or the whole bus restarting: a handover would relist and skip
versions the audit history needs), takes its key again if it expired meanwhile and nobody else
took it, and steps down at once when another replica holds it."""

from __future__ import annotations

import asyncio

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import KeyWrongLastSequenceError

from aim_watcher.election import Election


class Lease:
    """A leader's key whose renewals (and takes after the first) go as told: ``None`` succeeds,
    an exception is raised; ``held_by_another``: a take finds the key taken."""

    def __init__(self, renewals: list[Exception | None], held_by_another: bool = False) -> None:
        self.outcomes = renewals
        self.held_by_another = held_by_another
        self.renewals = 0
        self.takes = 0
        self.tenth = asyncio.Event()  # ten renewals asked

    async def take(self) -> bool:
        self.takes += 1
        return self.takes == 1 or not self.held_by_another

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
    e = Election(None, "me", renew_every=0.01)  # type: ignore[arg-type]
    e.lease = lease  # type: ignore[assignment]
    return e


async def _term(e: Election, stop: asyncio.Event) -> None:
    async def lead(step_down: asyncio.Event) -> None:
        await step_down.wait()
        stop.set()  # one term only

    await asyncio.wait_for(e.run(stop, lead), timeout=10)


async def _still_leading_after_ten_renewals(lease: Lease) -> Election:
    e, stop = election(lease), asyncio.Event()
    task = asyncio.create_task(_term(e, stop))
    await asyncio.wait_for(lease.tenth.wait(), timeout=10)
    assert not task.done() and e.terms == 1
    stop.set()
    await task
    return e


async def test_an_outage_is_ridden_out() -> None:
    await _still_leading_after_ten_renewals(Lease([NatsTimeoutError()] * 8))


async def test_a_key_that_expired_during_an_outage_is_taken_again() -> None:
    lease = Lease([NatsTimeoutError(), KeyWrongLastSequenceError()])
    await _still_leading_after_ten_renewals(lease)
    assert lease.takes == 2


async def test_a_key_another_replica_holds_ends_the_term_at_once() -> None:
    lease = Lease([KeyWrongLastSequenceError()], held_by_another=True)
    e, stop = election(lease), asyncio.Event()
    await _term(e, stop)
    assert (lease.renewals, lease.takes) == (1, 2)


async def test_a_stopping_leader_hands_over_only_once_its_term_has_ended() -> None:
    """Its watches publish what they took and save where the next leader resumes before the key
    is released: a standby taking over earlier would resume from an older point."""
    order: list[str] = []

    class Recording(Lease):
        async def release(self) -> None:
            order.append("released")

    lease = Recording([])
    e, stop = election(lease), asyncio.Event()

    async def lead(step_down: asyncio.Event) -> None:
        await step_down.wait()
        await asyncio.sleep(0.05)  # the watches' last publications and resume points
        order.append("term ended")

    task = asyncio.create_task(e.run(stop, lead))
    await asyncio.wait_for(lease.tenth.wait(), timeout=10)
    stop.set()
    await asyncio.wait_for(task, timeout=10)
    assert order == ["term ended", "released"]
