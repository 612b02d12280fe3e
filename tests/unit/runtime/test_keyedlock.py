"""The per-key lock (``aimcore.runtime.keyedlock``): one holder per key, in arrival order, other
keys never wait, and a key nobody holds or waits for leaves the table (also after an error or a
cancellation)."""

from __future__ import annotations

import asyncio

import pytest

from aimcore.runtime.keyedlock import KeyedLock


async def test_one_holder_per_key_in_arrival_order() -> None:
    locks: KeyedLock[str] = KeyedLock()
    order: list[str] = []
    release = asyncio.Event()

    async def work(key: str, tag: str) -> None:
        async with locks.hold(key):
            order.append(f"{tag} in")
            await release.wait()
            order.append(f"{tag} out")

    first = asyncio.create_task(work("a", "1"))
    await asyncio.sleep(0)
    second = asyncio.create_task(work("a", "2"))
    other = asyncio.create_task(work("b", "3"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == ["1 in", "3 in"]  # the second holder of "a" waits; "b" does not
    assert len(locks) == 2
    release.set()
    await asyncio.gather(first, second, other)
    assert order.index("1 out") < order.index("2 in")
    assert len(locks) == 0


async def test_a_key_leaves_the_table_after_an_error_or_a_cancellation() -> None:
    locks: KeyedLock[tuple[str, str]] = KeyedLock()
    with pytest.raises(RuntimeError):
        async with locks.hold(("registry", "scope")):
            raise RuntimeError("boom")
    assert len(locks) == 0

    held = asyncio.Event()
    never = asyncio.Event()

    async def holder() -> None:
        async with locks.hold(("registry", "scope")):
            held.set()
            await never.wait()

    async def waiter() -> None:
        async with locks.hold(("registry", "scope")):
            pass

    tasks = [asyncio.create_task(holder())]
    await held.wait()
    tasks.append(asyncio.create_task(waiter()))
    await asyncio.sleep(0)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert len(locks) == 0
