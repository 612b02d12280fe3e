"""The cluster-wide discovery-job cap on a real nats-server: many concurrent claimers (as many
discovery replicas) never exceed the cap; finished Jobs free their slots; unknown claims expire
after the grace period; a refused Job gives its slot back; a claim is idempotent."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext

from aim_discovery.slots import FINISHED, GRACE, RUNNING, UNKNOWN, Slots
from aimcore.api.bus import topology


async def slots(js: JetStreamContext, cap: int, clock: list[float] | None = None) -> Slots:
    kv = await js.key_value(topology.DISCOVERY_BUCKET)
    if clock is None:
        return Slots(kv, cap)
    return Slots(kv, cap, clock=lambda: clock[0])


async def test_concurrent_claims_never_exceed_the_cap(private_js: JetStreamContext) -> None:
    replicas = [await slots(private_js, cap=3) for _ in range(4)]
    jobs = [f"ns/job-{i}" for i in range(12)]

    results = await asyncio.gather(
        *(replicas[i % len(replicas)].claim(job, lambda _: RUNNING) for i, job in enumerate(jobs))
    )
    assert sum(results) == 3
    held = await replicas[0].held()
    assert sorted(held) == sorted(j for j, ok in zip(jobs, results, strict=True) if ok)


async def test_finished_jobs_free_their_slots_and_claims_are_idempotent(private_js: JetStreamContext) -> None:
    s = await slots(private_js, cap=2)
    assert await s.claim("ns/a", lambda _: RUNNING)
    assert await s.claim("ns/b", lambda _: RUNNING)
    assert await s.claim("ns/a", lambda _: RUNNING)  # already holds one
    assert not await s.claim("ns/c", lambda _: RUNNING)

    states = {"ns/a": FINISHED, "ns/b": RUNNING}
    assert await s.claim("ns/c", lambda key: states.get(key, RUNNING))
    assert sorted(await s.held()) == ["ns/b", "ns/c"]


async def test_claims_of_unknown_jobs_expire_after_the_grace_period(private_js: JetStreamContext) -> None:
    now = [1000.0]
    s = await slots(private_js, cap=1, clock=now)
    assert await s.claim("ns/lost", lambda _: UNKNOWN)  # its creator died before creating the Job
    assert not await s.claim("ns/next", lambda _: UNKNOWN)
    now[0] += GRACE + 1
    assert await s.claim("ns/next", lambda _: UNKNOWN)
    assert list(await s.held()) == ["ns/next"]


async def test_a_refused_job_gives_its_slot_back_at_once(private_js: JetStreamContext) -> None:
    s = await slots(private_js, cap=1)
    assert await s.claim("ns/refused", lambda _: UNKNOWN)  # the API server then refuses the Job
    assert not await s.claim("ns/next", lambda _: UNKNOWN)
    await s.release("ns/refused")
    await s.release("ns/never-claimed")  # nothing to give back: no error
    assert await s.claim("ns/next", lambda _: UNKNOWN)
    assert list(await s.held()) == ["ns/next"]
