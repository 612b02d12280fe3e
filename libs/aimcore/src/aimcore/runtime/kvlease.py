"""A key of a KV bucket held by one holder at a time (:class:`KvLease`): the primitive under the
per-object leases of the controllers (:mod:`aimcore.runtime.lease`) and the watcher replicas'
leader election (``aim_watcher.election``)."""

from __future__ import annotations

import os
import socket

from nats.js.errors import APIError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

# JetStream's error codes for a write whose expected last sequence did not match
WRONG_LAST_SEQUENCE = (10071, 10164)


def holder_id() -> str:
    """Identifies this replica in lease values (host and pid), for debugging."""
    return f"{socket.gethostname()}/{os.getpid()}"


class KvLease:
    """One key of a KV bucket held by one holder at a time.

    Taken with ``create`` (only one create of a key succeeds), renewed with an ``update``
    conditioned on the revision this holder last wrote, given back with a ``delete`` conditioned
    the same way, so a holder never renews or deletes a lease that expired and was taken by
    another. The bucket's TTL expires the key of a holder that died."""

    def __init__(self, kv: KeyValue, key: str, holder: bytes) -> None:
        self.kv = kv
        self.key = key
        self.holder = holder
        self.revision: int | None = None  # of this holder's last write, while it holds the key

    async def take(self) -> bool:
        """Take the key; False if someone holds it."""
        try:
            self.revision = await self.kv.create(self.key, self.holder)
        except KeyWrongLastSequenceError:
            return False
        return True

    async def renew(self) -> None:
        """Write the key again (restarting its TTL). Raises ``KeyWrongLastSequenceError`` if the
        lease was lost meanwhile (expired, and perhaps taken by another holder)."""
        self.revision = await self.kv.update(self.key, self.holder, last=self.revision)

    async def release(self) -> None:
        """Give the key back, unless it is no longer this holder's (then there is nothing to do)."""
        if self.revision is None:
            return
        revision, self.revision = self.revision, None
        try:
            await self.kv.delete(self.key, last=revision)
        except APIError as exc:
            # nats-py's delete does not translate a failed condition into KeyWrongLastSequenceError
            # as update does: the server's "wrong last sequence" arrives as a plain API error
            if exc.err_code not in WRONG_LAST_SEQUENCE:
                raise
