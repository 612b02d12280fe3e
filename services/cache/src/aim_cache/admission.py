"""The storage quota gate in front of a model cache's volume: the I/O around the pure rules of
:mod:`aim_cache.quota` (what counts, who is evicted, the conditions).

Before the cache service creates a cache's PVC it takes the quota lock, reads what the decision
needs fresh from the API server (the runtime config's ``artifactStorageQuota`` arrives merged in
the config it was given; the namespace's annotation; every model cache of the current group with
the PVC it holds; the template caches using them), decides, and creates the PVC while still holding
the lock, so two caches never both pass on the same remaining room.

- **The lock** (the released original's Lease ``aim-artifact-quota-lock``) is one key of the bus's
  lease bucket (``cache.storage-quota``), taken with a create that only one replica can win and
  expiring with the bucket's TTL if its holder dies; within a replica an ``asyncio.Lock`` queues
  the reconciles. Not taken within :data:`LOCK_TIMEOUT`: the reconcile comes back in
  :data:`BUSY_REQUEUE` seconds.
- **What a cache takes** is its PVC's request, read from the PVC itself (the status service writes
  ``status.allocatedSize`` later than the PVC exists: counting by status would let two caches in
  a row pass on the same room). A cache without a PVC takes nothing, whatever its size.
- **Eviction** deletes each victim with foreground propagation, after a Warning Event ``Evicted``
  on it: the victim stays (being deleted) until its PVC is gone, so its room counts as *freeing*
  and the waiting cache is admitted only once the storage is free.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from nats.js.kv import KeyValue

from aim_cache import imports, plan, quota
from aimcore.api.errors import AimError
from aimcore.api.events import WARNING, Involved, event_object
from aimcore.api.kinds import EVENT, GROUP_AIM, NAMESPACE, PVC
from aimcore.api.quantities import amount
from aimcore.api.types import Obj
from aimcore.domain.families.base import StatusCondition
from aimcore.domain.families.caches import ModelCache, TemplateCache
from aimcore.runtime import Kube
from aimcore.runtime.kvlease import KvLease, holder_id

log = logging.getLogger(__name__)

LOCK_KEY = "cache.storage-quota"
LOCK_TIMEOUT = 30.0
LOCK_POLL = 0.1
BUSY_REQUEUE = 2.0
EVICT_REQUEUE = 5.0
"""While victims are deleted: how soon the waiting cache decides again."""
BLOCK_REQUEUE = 30.0
"""A blocked cache decides again this often (a raised quota admits it without another change)."""
EVICTED = "Evicted"
COMPONENT = "aim-cache"
REPORTING_CONTROLLER = "aim.eai.amd.com/aim-cache"


class QuotaBusy(AimError):
    """The quota lock was not free within :data:`LOCK_TIMEOUT` (the reconcile comes back soon)."""

    reason = "StorageQuotaBusy"
    transient = True


class StorageQuota:
    """The gate: :meth:`held` serialises admissions, :meth:`decide` judges one cache, :meth:`evict`
    carries out an eviction."""

    def __init__(
        self,
        kube: Kube,
        leases: Callable[[], Awaitable[KeyValue]] | None,
        *,
        clock: Callable[[], float] = time.time,
        lock_timeout: float = LOCK_TIMEOUT,
    ) -> None:
        self.kube = kube
        self.leases = leases
        self.clock = clock
        self.lock_timeout = lock_timeout
        self.local = asyncio.Lock()
        self.holder = holder_id()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """The quota lock, across this replica's reconciles and every replica; :class:`QuotaBusy`
        when it stays taken for :attr:`lock_timeout` seconds."""
        try:
            await asyncio.wait_for(self.local.acquire(), self.lock_timeout)
        except TimeoutError:
            raise QuotaBusy("another admission in this replica holds the storage quota lock") from None
        try:
            if self.leases is None:
                yield
                return
            lease = KvLease(await self.leases(), LOCK_KEY, self.holder.encode())
            deadline = time.monotonic() + self.lock_timeout
            while not await lease.take():
                if time.monotonic() >= deadline:
                    raise QuotaBusy("another cache service replica holds the storage quota lock")
                await asyncio.sleep(LOCK_POLL)
            try:
                yield
            finally:
                with contextlib.suppress(Exception):  # the key expires with the bucket's TTL
                    await lease.release()
        finally:
            self.local.release()

    async def decide(self, cache: ModelCache, size: int, config: Mapping[str, Any]) -> quota.Decision | None:
        """The quota decision for ``cache``'s volume of ``size`` bytes before headroom (``config``:
        its runtime config, merged); ``None`` when no quota applies and none did before (nothing
        to say). Call it holding :meth:`held`."""
        namespace = str(cache.namespace)
        ns_obj = await self.kube.get(NAMESPACE, None, namespace)
        annotations = ((ns_obj or {}).get("metadata") or {}).get("annotations") or {}
        limits = quota.parse_limits(config, annotations, namespace=namespace)
        said_before = StatusCondition.find(cache.obj, quota.QUOTA_READY) is not None
        if limits.namespace is None and limits.cluster is None and limits.warning is None and not said_before:
            return None
        where = None if limits.cluster is not None else namespace
        caches = await self._caches(where)
        in_use = quota.in_use_uids(await self._template_caches(where))
        headroom = plan.headroom_percent(config)
        default = ((config.get("artifact") or {}) if isinstance(config, Mapping) else {}).get(
            "defaultRetentionPriority"
        )
        default_priority = default if isinstance(default, int) and not isinstance(default, bool) else None
        mine = [c for c in caches if c.namespace == namespace]
        return quota.decide(cache.obj, mine, caches, limits, in_use, headroom, default_priority, size=size)

    async def evict(self, subject: ModelCache, victims: tuple[quota.Cache, ...]) -> None:
        """A Warning Event ``Evicted`` on each victim, then its deletion (foreground: it stays,
        being deleted, until its PVC is gone)."""
        message = quota.evicted_message(str(subject.namespace), subject.name)
        for victim in victims:
            ref = next((k for k in ModelCache.kinds_in(GROUP_AIM) if k.kind == victim.kind), None)
            if ref is None:
                continue
            obj = await self.kube.get(ref, victim.namespace, victim.name)
            if obj is None or str(obj["metadata"].get("uid")) != victim.uid:
                continue  # gone already, or made again since
            await self._event(obj, message)
            log.warning("evicting %s/%s %s: %s", victim.namespace, victim.name, victim.kind, message)
            await self.kube.delete(ref, victim.namespace, victim.name, propagation="Foreground")

    async def _event(self, obj: Obj, message: str) -> None:
        now = self.clock()
        involved = Involved.of(obj)
        name = f"{involved.name[:200]}.{int(now * 1e9):x}{secrets.token_hex(4)}"
        body = event_object(
            involved,
            str(involved.namespace),
            WARNING,
            EVICTED,
            message,
            name=name,
            now=now,
            component=COMPONENT,
            reporting_controller=REPORTING_CONTROLLER,
            instance=self.holder,
        )
        try:
            await self.kube.create(EVENT, body, involved.namespace)
        except Exception:  # the eviction goes on: the audit stream has the decision
            log.exception("could not record the Evicted Event of %s/%s", involved.namespace, involved.name)

    async def _caches(self, namespace: str | None) -> list[quota.Cache]:
        """Every model cache of the current group (in ``namespace``, or all), each holding the PVC
        the API server has for it (its own, or the claim it imports) with its request as its
        allocated size, or none."""
        claims: dict[tuple[str, str], Obj] = {}
        for pvc in (await self.kube.list(PVC, namespace))[0]:
            meta = pvc["metadata"]
            claims[(str(meta.get("namespace")), str(meta["name"]))] = pvc
        out: list[quota.Cache] = []
        for ref in ModelCache.kinds_in(GROUP_AIM):
            for item in (await self.kube.list(ref, namespace))[0]:
                found = quota.Cache.from_object({**item, "apiVersion": ref.api_version, "kind": ref.kind})
                name = (
                    imports.parse(found.source_uri).name
                    if found.imported
                    else plan.pvc_name(found.name, found.uid)
                )
                claim = claims.get((found.namespace, name))
                out.append(holding(found, claim))
        return out

    async def _template_caches(self, namespace: str | None) -> list[Obj]:
        kinds = TemplateCache.kinds_in(GROUP_AIM)
        return [obj for ref in kinds for obj in (await self.kube.list(ref, namespace))[0]]


def holding(cache: quota.Cache, pvc: Obj | None) -> quota.Cache:
    """``cache`` as the API server's PVCs say: holding ``pvc`` (its request is what the cache
    takes), or nothing at all (whatever its status says)."""
    if pvc is None:
        return dataclasses.replace(cache, claim=None, allocated=None)
    request = ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
    try:
        allocated = amount(request) if request is not None else None
    except ValueError:
        allocated = None
    return dataclasses.replace(cache, claim=str(pvc["metadata"]["name"]), allocated=allocated or None)
