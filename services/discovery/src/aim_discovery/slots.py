"""The cluster-wide cap on concurrent discovery Jobs, shared by every discovery replica.

The original holds one cluster-wide Lease for the whole reconcile of every not-yet-Ready template,
serialising them all. Here only the *creation* of a Job takes a slot: one KV key holds the set of
claimed slots (Job key → claim time) and is updated with compare-and-set, so two replicas can never
both take the last slot, and nothing else waits on anyone.

A slot is free again once its Job is seen finished or gone: every claim first prunes the entries
whose Job the caller reports finished (``state``), and claims whose Job it does not know once they
are older than ``GRACE`` seconds (the informer may not show a just-created Job yet). Nothing has to
release a slot explicitly, so a replica that dies between claim and creation leaks a slot for at
most ``GRACE``; a Job the API server refuses to create gives its slot back at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

SLOTS_KEY = "discovery-jobs"
DEFAULT_CAP = 10
GRACE = 60.0
ATTEMPTS = 20

RUNNING = "running"
FINISHED = "finished"
UNKNOWN = "unknown"


class Slots:
    def __init__(self, kv: KeyValue, cap: int = DEFAULT_CAP, clock: Callable[[], float] = time.time) -> None:
        self.kv = kv
        self.cap = cap
        self.clock = clock

    async def _read(self) -> tuple[dict[str, float], int]:
        try:
            entry = await self.kv.get(SLOTS_KEY)
        except KeyNotFoundError:
            return {}, 0
        if not entry.value:
            return {}, entry.revision or 0
        return dict(json.loads(entry.value)), entry.revision or 0

    async def claim(self, job_key: str, state: Callable[[str], str]) -> bool:
        """Take a slot for ``job_key`` (idempotent). ``state(key)`` says what became of a claimed
        Job: ``running``, ``finished`` or ``unknown``. Returns False when all slots are taken."""
        for _ in range(ATTEMPTS):
            held, revision = await self._read()
            now = self.clock()
            live = {k: t for k, t in held.items() if _holds(state(k), now - t)}
            if job_key in live:
                return True
            if len(live) >= self.cap:
                return False
            live[job_key] = now
            value = json.dumps(live, sort_keys=True).encode()
            try:
                if revision:
                    await self.kv.update(SLOTS_KEY, value, last=revision)
                else:
                    await self.kv.create(SLOTS_KEY, value)
                return True
            except KeyWrongLastSequenceError:
                continue  # another replica changed the slots: read again
            except Exception as exc:  # create() on an existing key raises a generic API error
                if "wrong last sequence" in str(exc).lower():
                    continue
                raise
        return False

    async def release(self, job_key: str) -> None:
        """Give back the slot of a Job that could not be created (e.g. its namespace is being
        deleted), instead of holding it for ``GRACE``."""
        for _ in range(ATTEMPTS):
            held, revision = await self._read()
            if job_key not in held or not revision:
                return
            del held[job_key]
            try:
                await self.kv.update(SLOTS_KEY, json.dumps(held, sort_keys=True).encode(), last=revision)
                return
            except KeyWrongLastSequenceError:
                continue

    async def held(self) -> dict[str, float]:
        return (await self._read())[0]


def _holds(state: str, age: float) -> bool:
    if state == RUNNING:
        return True
    return state == UNKNOWN and age < GRACE
