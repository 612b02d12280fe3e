"""nats-py's private attributes the operator reads (:mod:`aimcore.runtime.natsinternals`), checked
against a real nats-server: an upgrade of nats-py that moves one fails here, with its name, before
the informer, the leases or the watcher meet it."""

from __future__ import annotations

import secrets

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aimcore.runtime.natsinternals import bucket_stream, client_of


async def test_a_buckets_stream_prefix_and_read_mode_are_the_ones_its_client_uses(
    nats_client: NatsClient, js: JetStreamContext
) -> None:
    name = f"internals-{secrets.token_hex(4)}"
    kv = await js.create_key_value(bucket=name, direct=True)
    bucket = bucket_stream(kv)
    assert (bucket.stream, bucket.prefix, bucket.direct) == (f"KV_{name}", f"$KV.{name}.", True)
    assert bucket.js is js
    # the stream and subject are where the bucket's own client stores a key
    revision = await kv.put("a.b", b"one")
    msg = await bucket.js.get_msg(bucket.stream, subject=bucket.subject("a.b"), direct=bucket.direct)
    assert (msg.seq, msg.data, bucket.key(msg.subject or "")) == (revision, b"one", "a.b")
    plain = bucket_stream(await js.create_key_value(bucket=f"{name}-plain"))
    assert plain.direct is False


async def test_a_jetstream_context_publishes_on_its_connection(
    nats_client: NatsClient, js: JetStreamContext
) -> None:
    assert client_of(js) is nats_client
    assert client_of(js).max_payload == nats_client.max_payload > 0
