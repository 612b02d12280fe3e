"""One asyncio lock per key, kept only while someone holds or waits for it.

Work on the same key runs one piece at a time, work on different keys concurrently, and the table
never keeps a lock for a key nobody uses any more (keys are object subjects: unbounded over a
process's life). The consumer serialises the messages of one subject with it, the status writer's
coalescer the reports of one object, the registry client the token fetches of one scope."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class KeyedLock(Generic[K]):
    def __init__(self) -> None:
        self._locks: dict[K, tuple[asyncio.Lock, int]] = {}  # key -> (lock, holders and waiters)

    def __len__(self) -> int:
        """How many keys are held or waited for."""
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        """Hold ``key``'s lock for the ``async with`` block, after those who asked for it first."""
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
