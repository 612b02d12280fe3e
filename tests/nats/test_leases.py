"""Per-object leases on a real nats-server: one run at a time across replicas, no trigger lost
while another replica holds the lease (the mark in the lease key) or when that replica dies (the
loser waits for its mark to be taken up, and runs the trigger itself when it expires), two round
trips when uncontended; and the KV lease they (and the watcher's election) hold."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable

import pytest
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KeyValue

from aimcore.api.errors import TransientError
from aimcore.runtime.kvlease import KvLease
from aimcore.runtime.lease import DIRTY, ObjectLeases
from aimcore.runtime.natsinternals import client_of
from tests.helpers import eventually


async def _bucket(js: JetStreamContext, ttl: float = 30.0) -> KeyValue:
    return await js.create_key_value(bucket=f"leases-{secrets.token_hex(4)}", ttl=ttl)


async def _marked(leases: KeyValue, key: str, at_least: str | None = None) -> bool:
    try:
        value = (await leases.get(key)).value or b""
    except NotFoundError:
        return False
    return value.startswith(DIRTY) and (at_least is None or value.split(b"|")[1] == at_least.encode())


async def test_a_trigger_during_a_run_causes_exactly_one_rerun(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a")
    b = ObjectLeases(leases, "svc", holder="b")
    release = asyncio.Event()
    started = asyncio.Event()
    runs: list[str] = []

    async def slow(_: str | None) -> None:
        runs.append("a")
        started.set()
        await release.wait()

    async def quick(_: str | None) -> None:
        runs.append("b")

    task = asyncio.create_task(a.run_exclusive("obj", slow))
    await started.wait()
    handed = asyncio.create_task(b.run_exclusive("obj", quick))
    await eventually(lambda: _marked(leases, "svc.obj"), timeout=10, interval=0.01, what="b's mark")
    assert not handed.done()  # b keeps its trigger until a takes it up, and never runs concurrently
    assert runs == ["a"]
    release.set()
    assert await task is True
    assert await handed is False  # handed over to a, not run by b
    assert runs == ["a", "a"]  # a re-ran for b's trigger
    assert a.stats.reruns == 1 and b.stats.contended == 1 and b.stats.takeovers == 0
    with pytest.raises(KeyNotFoundError):  # given back: nothing left in the bucket
        await leases.get("svc.obj")


async def test_the_rerun_reads_at_least_the_version_the_trigger_was_about(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a")
    b = ObjectLeases(leases, "svc", holder="b")
    release = asyncio.Event()
    versions: list[str | None] = []

    async def slow(version: str | None) -> None:
        versions.append(version)
        await release.wait()

    task = asyncio.create_task(a.run_exclusive("obj", slow, "10"))
    await eventually(lambda: _value_is(leases, "svc.obj", b"a"), timeout=10, interval=0.01, what="a's run")
    handed = []
    for rv in ("11", "12"):  # a newer trigger replaces the mark (its replica waits on it instead)
        handed.append(asyncio.create_task(b.run_exclusive("obj", slow, rv)))
        await eventually(
            lambda v=rv: _marked(leases, "svc.obj", at_least=v), timeout=10, interval=0.01, what=rv
        )
    release.set()
    assert await task is True
    assert [await h for h in handed] == [False, False]
    assert versions == ["10", "12"]  # one re-run, at the newest version any trigger named


async def test_a_trigger_handed_to_a_holder_that_died_is_run_when_its_lease_expires(
    js: JetStreamContext,
) -> None:
    """Before: the loser marked the dead holder's lease and acknowledged; the mark expired with
    the lease and the trigger was lost until the periodic resync."""
    leases = await _bucket(js, ttl=1.0)
    await leases.create("svc.obj", b"killed-replica")  # held by a replica that was kill -9'd
    survivor = ObjectLeases(leases, "svc", holder="survivor")
    ran: list[str | None] = []

    async def work(version: str | None) -> None:
        ran.append(version)

    assert await survivor.run_exclusive("obj", work, "7") is True  # one trigger, one call
    assert ran == ["7"]
    assert survivor.stats.contended == 1 and survivor.stats.takeovers == 1
    with pytest.raises(KeyNotFoundError):
        await leases.get("svc.obj")


async def test_a_mark_does_not_extend_a_dead_holders_lease(js: JetStreamContext) -> None:
    """The bucket keeps a key for 30 s after its last write, and a mark is a write: were the mark to
    restart the clock, a trigger arriving late in a dead holder's TTL would wait nearly two TTLs.
    The survivor goes by the holder's own last write (server time), so it takes over once the
    holder has been silent for the lease TTL (1 s here), long before the bucket drops the mark."""
    leases = await _bucket(js, ttl=30.0)
    await leases.create("svc.obj", b"killed-replica")
    survivor = ObjectLeases(leases, "svc", holder="survivor", ttl=1.0)
    ran: list[str | None] = []

    async def work(version: str | None) -> None:
        ran.append(version)

    assert await asyncio.wait_for(survivor.run_exclusive("obj", work), timeout=15) is True
    assert ran == [None] and survivor.stats.takeovers == 1


async def test_a_live_holder_is_never_taken_over(js: JetStreamContext) -> None:
    """A trigger handed to a live holder (one renewing its lease) is taken up at its next renewal
    and never run by the other replica, however long the holder's run: here it lasts until the
    trigger has been handed over (an event, not a sleep). The TTL is 30 renewal periods: only a
    stall of the loop of nearly the TTL (2.9 s) could pass for a dead holder (with a TTL of five
    periods, a stall of 0.8 s failed the test)."""
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a", renew_every=0.1, ttl=3.0)
    b = ObjectLeases(leases, "svc", holder="b", renew_every=0.1, ttl=3.0)
    handed = asyncio.Event()
    running = 0
    overlaps = 0
    runs: list[str] = []

    def worker(name: str) -> Callable[[str | None], Awaitable[None]]:
        async def work(_: str | None) -> None:
            nonlocal running, overlaps
            running += 1
            overlaps += running > 1
            runs.append(name)
            if name == "a":
                await handed.wait()  # a reconcile still running when b's trigger comes
            running -= 1

        return work

    task = asyncio.create_task(a.run_exclusive("obj", worker("a")))
    await eventually(lambda: _value_is(leases, "svc.obj", b"a"), timeout=10, interval=0.01, what="a's run")
    assert await b.run_exclusive("obj", worker("b")) is False  # taken up at a's next renewal
    handed.set()
    assert await task is True
    assert overlaps == 0 and b.stats.takeovers == 0
    assert runs == ["a", "a"]  # a ran once more, for b's trigger


async def test_a_waiting_trigger_is_handed_back_when_the_replica_stops(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    await leases.create("svc.obj", b"a-live-holder")
    stop = asyncio.Event()
    b = ObjectLeases(leases, "svc", holder="b", stop=stop)
    waiting = asyncio.create_task(b.run_exclusive("obj", lambda _: asyncio.sleep(0)))
    await eventually(lambda: _marked(leases, "svc.obj"), timeout=10, interval=0.01, what="b's mark")
    stop.set()
    with pytest.raises(TransientError):  # nak'd: another replica gets the message at once
        await waiting


async def test_an_uncontended_run_costs_two_round_trips(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a")
    sent_before = client_of(js).stats["out_msgs"]

    async def work(_: str | None) -> None:
        pass

    assert await a.run_exclusive("fresh", work) is True
    assert client_of(js).stats["out_msgs"] - sent_before == 2  # take, give back
    assert a.stats.runs == 1 and a.stats.reruns == 0


async def test_a_mark_found_while_renewing_is_a_rerun(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a", renew_every=0.05)
    b = ObjectLeases(leases, "svc", holder="b")
    marked = asyncio.Event()
    runs: list[str] = []

    async def slow(_: str | None) -> None:
        runs.append("a")
        if len(runs) == 1:
            assert await b.run_exclusive("obj", lambda _: asyncio.sleep(0)) is False
            marked.set()
            # renewing finds the mark and takes the lease back from it
            await eventually(
                lambda: _value_is(leases, "svc.obj", b"a"), timeout=10, interval=0.05, what="a renewal"
            )

    assert await a.run_exclusive("obj", slow) is True
    assert marked.is_set() and runs == ["a", "a"] and a.stats.reruns == 1


async def test_a_trigger_handed_to_a_run_that_fails_is_run_by_its_own_replica_at_once(
    js: JetStreamContext,
) -> None:
    """Before: the failed holder gave the lease back from the mark, its loser acknowledged, and the
    trigger was lost when the failed message's retry ran on an older version or elsewhere."""
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a")
    b = ObjectLeases(leases, "svc", holder="b")
    handed: list[asyncio.Task[bool]] = []
    ran: list[str | None] = []

    async def b_work(version: str | None) -> None:
        ran.append(version)

    async def fails(_: str | None) -> None:
        handed.append(asyncio.create_task(b.run_exclusive("obj", b_work, "12")))
        await eventually(lambda: _marked(leases, "svc.obj"), timeout=10, interval=0.01, what="b's mark")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await a.run_exclusive("obj", fails, "10")
    assert await handed[0] is True  # b took the lease a abandoned, without waiting out the TTL
    assert ran == ["12"] and b.stats.abandoned == 1 and b.stats.takeovers == 0
    with pytest.raises(KeyNotFoundError):  # b gave it back: free for a's retry
        await leases.get("svc.obj")


async def test_a_trigger_a_failed_run_had_taken_up_is_run_by_the_next_run(js: JetStreamContext) -> None:
    """The holder took b's mark up while renewing (b acknowledged), then failed: the re-run it
    owed is left in the lease, and the retry of its own message runs on b's version."""
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a", renew_every=0.05)
    b = ObjectLeases(leases, "svc", holder="b")
    versions: list[str | None] = []

    async def fails(version: str | None) -> None:
        versions.append(version)
        assert await b.run_exclusive("obj", lambda _: asyncio.sleep(0), "12") is False
        await eventually(
            lambda: _value_is(leases, "svc.obj", b"a"), timeout=10, interval=0.05, what="a renewal"
        )
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await a.run_exclusive("obj", fails, "10")
    assert await _marked(leases, "svc.obj", at_least="12")  # abandoned, with what is owed

    async def retry(version: str | None) -> None:
        versions.append(version)

    assert await a.run_exclusive("obj", retry, "10") is True  # the retry of a's message
    assert versions == ["10", "12"] and a.stats.abandoned == 1


async def _value_is(leases: KeyValue, key: str, value: bytes) -> bool:
    try:
        return (await leases.get(key)).value == value
    except NotFoundError:  # not taken yet (or given back)
        return False


async def test_many_triggers_from_two_replicas(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    replicas = [ObjectLeases(leases, "svc", holder=h) for h in ("r1", "r2", "r3")]
    version = 0
    seen: list[int] = []
    running = 0
    max_running = 0

    async def work(_: str | None) -> None:
        nonlocal running, max_running
        running += 1
        max_running = max(max_running, running)
        seen.append(version)
        await asyncio.sleep(0)  # yield so triggers interleave with the run
        await js.account_info()  # a real round trip inside the run
        running -= 1

    async def trigger(i: int) -> None:
        nonlocal version
        version += 1
        await replicas[i % 3].run_exclusive("obj", work)

    await asyncio.gather(*(trigger(i) for i in range(40)))
    assert max_running == 1
    assert seen[-1] == version == 40  # the last run saw every trigger's change


async def test_a_kv_lease_has_one_holder_and_never_touches_a_successors_key(js: JetStreamContext) -> None:
    leases: KeyValue = await js.create_key_value(bucket=f"leases-{secrets.token_hex(4)}", ttl=30.0)
    a, b = KvLease(leases, "key", b"a"), KvLease(leases, "key", b"b")
    assert await a.take() is True
    assert await b.take() is False  # held
    await a.renew()
    await a.release()
    assert await b.take() is True  # given back: free at once
    # a holder whose lease was taken over (after expiry, here: a stale revision) can neither renew
    # it nor give back the successor's key (and giving back what it lost is no error)
    a.revision = b.revision - 1 if b.revision else 1
    with pytest.raises(KeyWrongLastSequenceError):
        await a.renew()
    a.revision = b.revision - 1 if b.revision else 1
    await a.release()
    assert (await leases.get("key")).value == b"b"
    await b.release()
    await b.release()  # twice: nothing to give back
    assert await a.take() is True
