"""What the operator takes from nats-py beyond its public API, in one place.

nats-py's ``KeyValue`` offers get, put, update, delete and watch of one bucket, but the operator
reads the bucket's stream directly in three places where those fall short: the informer's snapshot
(the last value of every key under a pattern, in one consumer), its follow from a stream sequence
(an ordered consumer, so nothing is sent twice), and a lease read that keeps the server's timestamp
(``KeyValue.get`` drops it); the watcher also writes an entry with headers of its own. For that a
bucket's stream name and subject prefix are needed, which nats-py keeps in private attributes; and
a JetStream context's connection (for the server's ``max_payload``) is one too.

Every other module goes through this one, so an upgrade of nats-py that renames them breaks one
module, and ``tests/nats/test_natsinternals.py`` says which (it reads each against a real
nats-server). The versions the operator is tested with are bounded in ``libs/aimcore/pyproject.toml``.
"""

from __future__ import annotations

from dataclasses import dataclass

from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

__all__ = ["BucketStream", "bucket_stream", "client_of"]


@dataclass(frozen=True)
class BucketStream:
    """The stream behind a KV bucket, as the bucket's own client reaches it."""

    js: JetStreamContext
    stream: str  # ``KV_<bucket>``
    prefix: str  # the subject of key ``k`` is ``prefix + k`` (``$KV.<bucket>.``, or a domain's)
    direct: bool  # whether the bucket allows direct gets (its client reads with them)

    def subject(self, key: str) -> str:
        return self.prefix + key

    def key(self, subject: str) -> str:
        """The key a message of the stream is about (its subject without the prefix)."""
        return subject[len(self.prefix) :]


def bucket_stream(kv: KeyValue) -> BucketStream:
    """The stream, subject prefix and read mode of ``kv``."""
    return BucketStream(js=kv._js, stream=kv._stream, prefix=kv._pre, direct=kv._direct)


def client_of(js: JetStreamContext) -> Client:
    """The connection a JetStream context publishes on (the server's limits are on it)."""
    client: Client = js._nc
    return client
