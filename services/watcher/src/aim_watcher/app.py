"""The watcher: the only process that watches the Kubernetes API. It declares the NATS topology
(it owns the streams and buckets), then runs one list/watch loop per kind."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence

from nats.js.kv import KeyValue

from aim_watcher.kind_watch import KindWatcher
from aim_watcher.publisher import Publisher
from aimcore.bus import subjects, topology
from aimcore.kinds import KindRef, crd_kinds
from aimcore.service import ServiceContext, run_service

log = logging.getLogger(__name__)


async def mirrored(kv: KeyValue, ref: KindRef) -> list[dict[str, object]]:
    """Objects of one kind currently in the mirror."""
    prefix = f"{subjects.group_token(ref.group)}.{ref.kind}."
    try:
        keys = await kv.keys(filters=[prefix + ">"])
    except Exception:  # nats-py raises NoKeysError on an empty bucket
        return []
    out = []
    for key in keys:
        entry = await kv.get(key)
        if entry.value:
            out.append(json.loads(entry.value))
    return out


async def start_watchers(ctx: ServiceContext, kinds: Sequence[KindRef]) -> list[KindWatcher]:
    await topology.ensure_topology(ctx.js)
    kv = await topology.objects_bucket(ctx.js)
    publisher = Publisher(ctx.js, kv)
    assert ctx.kube is not None
    watchers = []
    for ref in kinds:
        w = KindWatcher(ctx.kube, ref, publisher, resync_seconds=ctx.settings.resync_seconds)
        w.seed(await mirrored(kv, ref))
        watchers.append(w)
    return watchers


async def main(ctx: ServiceContext) -> None:
    watchers = await start_watchers(ctx, crd_kinds())
    log.info("watching %d kinds", len(watchers))
    await asyncio.gather(*(w.run(ctx.stop) for w in watchers))


def run() -> None:
    asyncio.run(run_service("watcher", main, needs_kube=True))
