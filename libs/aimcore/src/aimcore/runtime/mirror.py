"""Read current object state from the NATS KV mirror the watcher maintains (DESIGN §2.3).

The watcher writes an object before publishing its change event, so the mirror is normally at
least as new as the event. A reader never acts on older state: if the mirror's resourceVersion is
older than the event's, it re-reads until it catches up or the wait times out (transient error).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KeyValue

from aimcore.bus import subjects
from aimcore.bus.errors import TransientError
from aimcore.kinds import KindRef

Obj = dict[str, Any]


def rv_int(rv: str | None) -> int:
    """resourceVersions are opaque in general but etcd's are integers; order by them."""
    try:
        return int(rv or 0)
    except ValueError:
        return 0


class Mirror:
    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def get(
        self,
        ref: KindRef,
        namespace: str | None,
        name: str,
        *,
        at_least: str | None = None,
        timeout: float = 5.0,
    ) -> Obj | None:
        """The object, or ``None`` if deleted. Waits until it is at least ``at_least``."""
        key = subjects.object_key(ref, namespace, name)
        want = rv_int(at_least)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            obj = await self._read(key)
            have = rv_int((obj or {}).get("metadata", {}).get("resourceVersion"))
            if obj is None or have >= want:
                return obj
            if asyncio.get_running_loop().time() > deadline:
                raise TransientError(f"mirror of {key} is at {have}, event is at {want}")
            await asyncio.sleep(0.05)

    async def _read(self, key: str) -> Obj | None:
        try:
            entry = await self.kv.get(key)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        if not entry.value:
            return None
        value: Obj = json.loads(entry.value)
        return value
