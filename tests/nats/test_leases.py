"""Per-object leases on a real nats-server: one run at a time across replicas, no trigger lost
while another replica holds the lease (the mark in the lease key), two round trips when
uncontended; and the KV lease they (and the watcher's election) hold."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from aimcore.runtime.lease import KvLease, ObjectLeases
from tests.helpers import eventually


async def _bucket(js: JetStreamContext, ttl: float = 30.0) -> KeyValue:
    return await js.create_key_value(bucket=f"leases-{secrets.token_hex(4)}", ttl=ttl)


async def test_a_trigger_during_a_run_causes_exactly_one_rerun(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a")
    b = ObjectLeases(leases, "svc", holder="b")
    release = asyncio.Event()
    started = asyncio.Event()
    runs: list[str] = []

    async def slow() -> None:
        runs.append("a")
        started.set()
        await release.wait()

    async def quick() -> None:
        runs.append("b")

    task = asyncio.create_task(a.run_exclusive("obj", slow))
    await started.wait()
    assert await b.run_exclusive("obj", quick) is False  # handed over to a, not run concurrently
    assert runs == ["a"]
    release.set()
    assert await task is True
    assert runs == ["a", "a"]  # a re-ran for b's trigger
    assert a.stats.reruns == 1 and b.stats.contended == 1
    with pytest.raises(KeyNotFoundError):  # given back: nothing left in the bucket
        await leases.get("svc.obj")


async def test_an_uncontended_run_costs_two_round_trips(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a")
    sent_before = js._nc.stats["out_msgs"]  # type: ignore[attr-defined]

    async def work() -> None:
        pass

    assert await a.run_exclusive("fresh", work) is True
    assert js._nc.stats["out_msgs"] - sent_before == 2  # type: ignore[attr-defined]  # take, give back
    assert a.stats.runs == 1 and a.stats.reruns == 0


async def test_a_mark_found_while_renewing_is_a_rerun(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a", renew_every=0.05)
    b = ObjectLeases(leases, "svc", holder="b")
    marked = asyncio.Event()
    runs: list[str] = []

    async def slow() -> None:
        runs.append("a")
        if len(runs) == 1:
            assert await b.run_exclusive("obj", lambda: asyncio.sleep(0)) is False
            marked.set()
            # renewing finds the mark and takes the lease back from it
            await eventually(
                lambda: _value_is(leases, "svc.obj", b"a"), timeout=10, interval=0.05, what="a renewal"
            )

    assert await a.run_exclusive("obj", slow) is True
    assert marked.is_set() and runs == ["a", "a"] and a.stats.reruns == 1


async def test_a_failed_run_gives_the_lease_back_even_when_marked(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    a = ObjectLeases(leases, "svc", holder="a")
    b = ObjectLeases(leases, "svc", holder="b")

    async def fails() -> None:
        assert await b.run_exclusive("obj", lambda: asyncio.sleep(0)) is False  # marks a's lease
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await a.run_exclusive("obj", fails)
    ran: list[str] = []

    async def work() -> None:
        ran.append("b")

    assert await b.run_exclusive("obj", work) is True  # free at once, not after the TTL
    assert ran == ["b"]


async def _value_is(leases: KeyValue, key: str, value: bytes) -> bool:
    return (await leases.get(key)).value == value


async def test_many_triggers_from_two_replicas(js: JetStreamContext) -> None:
    leases = await _bucket(js)
    replicas = [ObjectLeases(leases, "svc", holder=h) for h in ("r1", "r2", "r3")]
    version = 0
    seen: list[int] = []
    running = 0
    max_running = 0

    async def work() -> None:
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


async def test_a_dead_holders_lease_expires(js: JetStreamContext) -> None:
    leases = await _bucket(js, ttl=1.0)
    await leases.create("svc.obj", b"crashed-replica")
    survivor = ObjectLeases(leases, "svc", holder="survivor")
    ran: list[bool] = []

    async def work() -> None:
        ran.append(True)

    assert await survivor.run_exclusive("obj", work) is False

    async def acquired() -> bool:
        return await survivor.run_exclusive("obj", work)

    await eventually(acquired, timeout=15, interval=0.2, what="the expired lease to be taken over")
    assert ran


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
