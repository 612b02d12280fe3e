"""The informer cache fed by a real KV bucket: indexes follow updates and deletes, reads never go
back in time, and a cache miss falls back to the mirror itself."""

from __future__ import annotations

import json
import secrets

import pytest
from nats.js import JetStreamContext

from aimcore.api.bus import mirror, subjects
from aimcore.api.errors import TransientError
from aimcore.api.kinds import by_kind
from aimcore.runtime import Informer, field_indexer
from aimcore.runtime.mirrorscan import kind_pattern, snapshot, snapshot_identities
from aimcore.runtime.natsinternals import bucket_stream
from tests.helpers import eventually

TEMPLATE = by_kind("aim.eai.amd.com", "AIMServiceTemplate")
SERVICE = by_kind("aim.eai.amd.com", "AIMService")


def template(name: str, model: str, rv: int, owner: str | None = None) -> dict[str, object]:
    meta: dict[str, object] = {
        "name": name,
        "namespace": "ns",
        "resourceVersion": str(rv),
        "uid": f"u-{name}",
    }
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": owner}]
    return {
        "apiVersion": TEMPLATE.api_version,
        "kind": TEMPLATE.kind,
        "metadata": meta,
        "spec": {"modelName": model},
    }


async def put(kv, obj) -> None:  # type: ignore[no-untyped-def]
    meta = obj["metadata"]
    await kv.put(subjects.object_key(TEMPLATE, meta["namespace"], meta["name"]), json.dumps(obj).encode())


async def test_indexes_follow_updates_and_deletes(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket=f"mirror-{secrets.token_hex(4)}")
    await put(kv, template("t.1", "llama", 10, owner="svc-uid"))
    informer = Informer(kv, [TEMPLATE, SERVICE], {"model": field_indexer("spec", "modelName")})
    await informer.start()
    try:
        assert [o["metadata"]["name"] for o in informer.by_index("model", "llama")] == ["t.1"]
        assert [o["metadata"]["name"] for o in informer.by_index("owner", "svc-uid")] == ["t.1"]

        await put(kv, template("t.1", "qwen", 11))
        await put(kv, template("t.2", "qwen", 12))

        async def moved() -> bool:
            return len(informer.by_index("model", "qwen")) == 2

        await eventually(moved, what="the index to follow the update")
        assert informer.by_index("model", "llama") == []
        assert informer.by_index("owner", "svc-uid") == []

        await kv.delete(subjects.object_key(TEMPLATE, "ns", "t.2"))

        async def removed() -> bool:
            return informer.get(TEMPLATE, "ns", "t.2") is None

        await eventually(removed, what="the delete")
        assert [o["metadata"]["name"] for o in informer.by_index("model", "qwen")] == ["t.1"]
        assert [o["metadata"]["name"] for o in informer.list(TEMPLATE, "ns")] == ["t.1"]
    finally:
        await informer.stop()


async def test_reads_never_go_back_in_time(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket=f"mirror-{secrets.token_hex(4)}")
    informer = Informer(kv, [TEMPLATE])
    await informer.start()
    try:
        await put(kv, template("t", "llama", 20))
        # Whether or not the watch has delivered it yet, a read at rv 20 returns rv >= 20.
        obj = await informer.wait_for(TEMPLATE, "ns", "t", "20")
        assert obj is not None and obj["metadata"]["resourceVersion"] == "20"
        with pytest.raises(TransientError):
            await informer.wait_for(TEMPLATE, "ns", "t", "21")  # the mirror has not seen 21
        assert await informer.wait_for(TEMPLATE, "ns", "missing", "1") is None
        await put(kv, template("t", "older", 19))  # a lagging writer
        await put(kv, template("marker", "m", 30))  # the watch delivers in order: once the
        # marker is in the cache, the older write has been seen too

        async def seen_marker() -> bool:
            return informer.get(TEMPLATE, "ns", "marker") is not None

        await eventually(seen_marker)
        cached = informer.get(TEMPLATE, "ns", "t")
        assert cached is not None and cached["spec"]["modelName"] == "llama"
    finally:
        await informer.stop()


async def test_snapshot_is_exact_with_many_keys(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket=f"mirror-{secrets.token_hex(4)}")
    for i in range(300):
        await put(kv, template(f"t-{i:03d}", "m", i + 1))
    await kv.delete(subjects.object_key(TEMPLATE, "ns", "t-007"))
    other = {**template("svc", "m", 1), "kind": SERVICE.kind}
    await kv.put(subjects.object_key(SERVICE, "ns", "svc"), json.dumps(other).encode())
    for _ in range(5):  # the nats-py KV watch could end its initial values early; this must not
        got = await snapshot(kv, kind_pattern(TEMPLATE))
        assert len(got) == 299
        assert subjects.object_key(TEMPLATE, "ns", "t-007") not in got
    assert len(await snapshot(kv, kind_pattern(TEMPLATE, "elsewhere"))) == 0
    informer = Informer(kv, [TEMPLATE])
    await informer.start()
    try:
        assert len(informer.list(TEMPLATE)) == 299  # complete as soon as start() returns
    finally:
        await informer.stop()


async def test_a_value_delivered_again_is_not_parsed_again(js: JetStreamContext) -> None:
    """The KV watch re-sends every current value at start (which the snapshot has stored) and after
    each re-watch: the same bytes are kept as they are; different bytes at the same version, or a
    newer version, replace them."""
    kv = await js.create_key_value(bucket=f"mirror-{secrets.token_hex(4)}")
    await put(kv, template("t.1", "llama", 10))
    informer = Informer(kv, [TEMPLATE], {"model": field_indexer("spec", "modelName")})
    await informer.start()
    key = subjects.object_key(TEMPLATE, "ns", "t.1")
    try:
        stored = informer.objects[key]
        raw = json.dumps(template("t.1", "llama", 10)).encode()
        informer._store_raw(key, raw)  # what a re-watch delivers
        assert informer.objects[key] is stored
        await put(kv, template("t.1", "qwen", 11))

        async def moved() -> bool:
            return informer.by_index("model", "qwen") != []

        await eventually(moved, what="the newer version stored")
        informer._store_raw(key, raw)  # the old bytes again, late: older, refused
        assert informer.objects[key]["spec"] == {"modelName": "qwen"}
        newer = informer.objects[key]
        informer._store_raw(key, json.dumps(newer, indent=1).encode())  # the same version, other bytes
        assert informer.objects[key] is not newer and informer.objects[key] == newer
    finally:
        await informer.stop()


async def test_identities_are_read_from_the_entries_headers_without_their_objects(
    js: JetStreamContext,
) -> None:
    """A new watcher leader seeds itself from the mirror's headers: each current entry's revision
    and its object's uid, resourceVersion and generation, deleted keys left out; an entry written
    without the headers (by an older watcher) is read whole."""
    kv = await js.create_key_value(bucket=f"mirror-{secrets.token_hex(4)}")
    prefix = bucket_stream(kv).prefix
    with_headers = {
        **template("t-1", "m", 7),
        "metadata": {**template("t-1", "m", 7)["metadata"], "generation": 3},
    }
    await js.publish(
        prefix + subjects.object_key(TEMPLATE, "ns", "t-1"),
        mirror.encode(with_headers),
        headers=mirror.identity_headers(with_headers),
    )
    await put(kv, template("t-2", "m", 8))  # no headers
    await put(kv, template("gone", "m", 9))
    await kv.delete(subjects.object_key(TEMPLATE, "ns", "gone"))
    got = await snapshot_identities(kv, kind_pattern(TEMPLATE))
    assert {key: identity for key, (_, identity) in got.items()} == {
        subjects.object_key(TEMPLATE, "ns", "t-1"): mirror.Identity("u-t-1", "7", 3),
        subjects.object_key(TEMPLATE, "ns", "t-2"): mirror.Identity("u-t-2", "8", None),
    }
    entry = await kv.get(subjects.object_key(TEMPLATE, "ns", "t-1"))
    assert got[subjects.object_key(TEMPLATE, "ns", "t-1")][0] == entry.revision


async def test_the_watch_starts_where_the_snapshot_read_and_sends_nothing_again(js: JetStreamContext) -> None:
    """After start() the watch delivers only what changed since: the current values the snapshot
    read are not pushed again (200 MB at 50,000 services, which cut the deployer off as a slow
    consumer), and a change right after start is applied."""
    kv = await js.create_key_value(bucket=f"mirror-{secrets.token_hex(4)}")
    for i in range(300):
        await put(kv, template(f"t.{i}", "llama", 10 + i))
    informer = Informer(kv, [TEMPLATE], {"model": field_indexer("spec", "modelName")})
    handled: list[str] = []
    store_raw = informer._store_raw

    def counting(key: str, raw: bytes) -> None:
        handled.append(key)
        store_raw(key, raw)

    informer._store_raw = counting  # type: ignore[method-assign]
    await informer.start()
    assert len(handled) == 300  # the snapshot's
    try:
        assert len(informer.list(TEMPLATE)) == 300
        await put(kv, template("t.7", "qwen", 1000))
        await kv.delete(subjects.object_key(TEMPLATE, "ns", "t.8"))

        async def followed() -> bool:
            return informer.get(TEMPLATE, "ns", "t.8") is None and informer.by_index("model", "qwen") != []

        await eventually(followed, what="the update and the delete after start")
        assert handled[300:] == [subjects.object_key(TEMPLATE, "ns", "t.7")]
        assert len(informer.list(TEMPLATE)) == 299
    finally:
        await informer.stop()
