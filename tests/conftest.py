"""Shared test helpers. Real servers come from the ``aimcore`` pytest plugin (aimcore.testing.plugin)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]], timeout: float = 20.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    last: T | None = None
    try:
        async with asyncio.timeout(timeout):
            while True:
                last = await probe()
                if last:
                    return last
                await asyncio.sleep(interval)
    except TimeoutError:
        raise AssertionError(
            f"timed out after {timeout}s waiting for {what or probe}; last={last!r}"
        ) from None
