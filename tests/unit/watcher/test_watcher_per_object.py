"""The watcher publishes changes of different objects concurrently but each object's changes in
watch order, and hands back nothing while a publication is outstanding (``PerObject``)."""

from __future__ import annotations

import asyncio

import pytest

from aim_watcher.kind_watch import PerObject


async def test_one_objects_changes_stay_in_order_while_others_overlap() -> None:
    order: list[str] = []
    gates = {name: asyncio.Event() for name in ("a1", "a2", "b1")}

    def publish(name: str):  # type: ignore[no-untyped-def]
        async def run() -> None:
            order.append(f"start {name}")
            await gates[name].wait()
            order.append(f"end {name}")

        return run

    pending = PerObject(limit=8)
    await pending.submit(("ns", "a"), publish("a1"))
    await pending.submit(("ns", "a"), publish("a2"))
    await pending.submit(("ns", "b"), publish("b1"))
    await asyncio.sleep(0)  # let the tasks start
    assert order == ["start a1", "start b1"]  # a2 waits for a1; b1 does not wait for anyone
    gates["b1"].set()
    gates["a2"].set()  # released early, but still after a1
    await asyncio.sleep(0)
    assert "start a2" not in order
    gates["a1"].set()
    await pending.drain()
    assert order.index("end a1") < order.index("start a2") < order.index("end a2")
    assert "end b1" in order


async def test_the_limit_bounds_publications_in_flight() -> None:
    running = 0
    peak = 0
    release = asyncio.Event()

    async def publish() -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1

    pending = PerObject(limit=3)

    async def submit_all() -> None:
        for i in range(10):
            await pending.submit(("ns", str(i)), publish)

    submitting = asyncio.create_task(submit_all())
    for _ in range(5):  # a few turns of the loop: everything that can start has started
        await asyncio.sleep(0)
    assert peak == 3 and not submitting.done()  # the fourth submission waits for a slot
    release.set()
    await submitting
    await pending.drain()
    assert peak == 3 and running == 0


async def test_drain_raises_a_failed_publication() -> None:
    async def fail() -> None:
        raise RuntimeError("boom")

    async def fine() -> None:
        return None

    pending = PerObject()
    await pending.submit(("ns", "a"), fail)
    await pending.submit(("ns", "a"), fine)  # after a failure of its object: does not run
    with pytest.raises(RuntimeError, match="boom"):
        await pending.drain()
    pending.cancel()
