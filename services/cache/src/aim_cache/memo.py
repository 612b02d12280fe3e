"""Bounded in-process memory for controllers (per-object facts worth keeping between reconciles,
such as a probed size or a last attempt): the oldest entries go first, so memory stays flat however
many objects pass through a replica."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

MAX_REMEMBERED = 4096


def remember(cache: OrderedDict[str, Any], key: str, value: Any, limit: int = MAX_REMEMBERED) -> None:
    """Set ``cache[key]`` as the newest entry, dropping the oldest beyond ``limit``."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > limit:
        cache.popitem(last=False)
