"""The engine that runs a :class:`~aimcore.runtime.controller.Controller` against the bus, so no
service re-invents it (docs/design.md#level-triggered-reconciles). For each change event it:

- consumes it through the service's durable consumer (replicas share it);
- keeps an informer cache of the primary and dependency kinds, fed by the KV mirror;
- takes the object's lease (one reconcile per object across replicas, no lost trigger);
- reads the object never older than the event, skips deleted and paused objects;
- validates the spec by parsing it and reports ``InvalidSpec`` instead of retrying invalid input,
  and ``ObjectTooLarge`` for an object the bus cannot carry (:mod:`aimcore.runtime.verdicts`);
- maps a dependency's change to the primaries its watch names, skipping a child's change this
  replica wrote itself (:mod:`aimcore.runtime.ownwrites`);
- runs ``reconcile`` with a :class:`~aimcore.runtime.request.Request`; a transient error is
  retried with backoff through a nak, a ``Result`` with ``requeue_after`` schedules the object
  again (:func:`aimcore.runtime.requeue.schedule_requeue`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from nats.aio.msg import Msg
from nats.js import JetStreamContext

from aimcore.api.bus import mirror, subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.crds.validation import INVALID_SPEC
from aimcore.api.kinds import KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.runtime import logs, metrics
from aimcore.runtime.composer import is_paused
from aimcore.runtime.consumer import Consuming, run_consumer
from aimcore.runtime.controller import Build, Controller, consumer_name, event_consumer
from aimcore.runtime.informer import Informer
from aimcore.runtime.lease import ObjectLeases
from aimcore.runtime.ownwrites import OwnWrites, RunWrites
from aimcore.runtime.report import Reporter
from aimcore.runtime.request import Request
from aimcore.runtime.requeue import schedule_requeue
from aimcore.runtime.service import ServiceContext
from aimcore.runtime.verdicts import (
    failed_fields,
    invalid_spec_conditions,
    rejected_by_runtime,
    spec_valid_again,
)

log = logging.getLogger(__name__)


def _fingerprint(obj: Obj) -> str:
    """Everything of an object but its status and bookkeeping: what a reconcile may react to."""
    meta = obj.get("metadata") or {}
    kept = {
        "uid": meta.get("uid"),
        "generation": meta.get("generation"),
        "labels": meta.get("labels"),
        "annotations": meta.get("annotations"),
        "finalizers": meta.get("finalizers"),
        "ownerReferences": meta.get("ownerReferences"),
        "deletionTimestamp": meta.get("deletionTimestamp"),
        "spec": obj.get("spec"),
    }
    return json.dumps(kept, sort_keys=True, default=str)


class Journal:
    """Optional record of every reconcile (``AIM_RECONCILE_JOURNAL=path``): one JSON line per run
    with the object, this process and monotonic start/end times. For diagnosing concurrency; the
    scaling tests use it to prove no two replicas reconcile an object at once."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.pid = os.getpid()

    def record(self, key: str, started: int, ended: int) -> None:
        if not self.path:
            return
        line = json.dumps({"key": key, "pid": self.pid, "start": started, "end": ended}) + "\n"
        with open(self.path, "a") as f:  # one short write per line: appends are atomic
            f.write(line)


class Runtime:
    """Runs one :class:`Controller` against the bus."""

    def __init__(
        self,
        js: JetStreamContext,
        controller: Controller,
        informer: Informer,
        leases: ObjectLeases,
        reporter: Reporter,
        *,
        journal: str | None = None,
    ) -> None:
        self.js = js
        self.controller = controller
        self.informer = informer
        self.leases = leases
        self.reporter = reporter
        self.primaries = {(k.group, k.kind) for k in controller.kinds}
        self.watches = {(w.kind.group, w.kind.kind): w for w in controller.watches}
        self._reconciled: dict[str, str] = {}  # object key -> _fingerprint at its last reconcile
        self.own_writes = OwnWrites()
        self.reconciled = 0
        self.journal = Journal(journal)

    async def handle(self, msg: Msg) -> None:
        event = ChangeEvent.model_validate_json(msg.data)
        identity = (event.object.group, event.object.kind)
        ref = by_kind(*identity)
        if identity in self.primaries and event.change is not ChangeType.DELETED:
            # a deleted primary needs nothing: its children go with their owner references
            await self.reconcile_object(
                ref,
                event.object.namespace,
                event.object.name,
                event.resource_version,
                own_change=event.change is ChangeType.MODIFIED,
            )
        watch = self.watches.get(identity)
        if watch is None:
            return  # (a kind may be both a primary and a dependency of other primaries)
        if event.change is ChangeType.RESYNC:
            # A version its dependents were woken for when it was new; each of them gets its own
            # resync in the same relist (as controller-runtime's workqueue folds the owners a
            # resync maps to into one request each). Fanning out made a resync cost five
            # reconciles per AIMService: its own, its InferenceService's, its model's, template's
            # and template cache's (aimctl bench scale).
            return
        if self.own_writes.consume(event):
            log.debug("%s: written so by this replica", event.object.display)
            return  # a child exactly as this replica's reconcile wrote it
        if event.change is ChangeType.DELETED:  # its last state still names its owners
            dep = self.informer.last_known(ref, event.object.namespace, event.object.name)
        else:
            dep = await self.informer.wait_for(
                ref, event.object.namespace, event.object.name, event.resource_version
            )
        targets = list(dict.fromkeys(watch.mapper(event, dep, self.informer)))
        log.debug(
            "%s %s@%s wakes %s", event.change.value, event.object.display, event.resource_version, targets
        )
        for target_ref, ns, name in targets:
            await self.reconcile_object(target_ref, ns, name, None)

    async def reconcile_object(
        self,
        ref: KindRef,
        namespace: str | None,
        name: str,
        at_least: str | None,
        *,
        own_change: bool = False,
    ) -> None:
        key = subjects.object_key(ref, namespace, name)
        if own_change and self.controller.ignore_own_status and key in self._reconciled:
            # decided before taking the lease: skipping needs no exclusivity, and a status write
            # per object would otherwise cost three lease round trips for nothing
            obj = await self.informer.wait_for(ref, namespace, name, at_least)
            if obj is not None and self._reconciled.get(key) == _fingerprint(obj):
                log.debug("%s: only its status changed since the last reconcile here", key)
                return

        async def work(version: str | None) -> None:
            with logs.about(ObjectRef.of(ref, namespace, name)):
                await reconcile(version)

        async def reconcile(version: str | None) -> None:
            obj = await self.informer.current(ref, namespace, name, version)
            if obj is None or is_paused(obj):
                log.debug("%s: %s", key, "not in the mirror" if obj is None else "paused")
                return
            fingerprint = _fingerprint(obj) if self.controller.ignore_own_status else None
            if own_change and fingerprint is not None and self._reconciled.get(key) == fingerprint:
                return  # only the status changed since the last reconcile here
            started = time.monotonic_ns()
            try:
                await self._reconcile(ref, obj)
            except Exception:
                metrics.RECONCILE_ERRORS.labels(ref.group, ref.kind).inc()
                raise
            finally:
                ended = time.monotonic_ns()
                metrics.RECONCILE_SECONDS.labels(ref.group, ref.kind).observe((ended - started) / 1e9)
                self.journal.record(key, started, ended)
            if fingerprint is not None:
                self._reconciled[key] = fingerprint

        if not await self.leases.run_exclusive(key, work, at_least):
            log.debug("%s: handed to the replica holding its lease", key)

    def _failed(self, ref: KindRef) -> dict[str, Any]:
        return failed_fields(ref, self.reporter.composer)

    async def _reconcile(self, ref: KindRef, obj: Obj) -> None:
        if (big := mirror.too_large(obj)) is not None:
            conditions = invalid_spec_conditions(big.message, mirror.OBJECT_TOO_LARGE)
            if await self.reporter.report(ref, obj, conditions, self._failed(ref)):
                await self.reporter.decide(ref, obj, "reject", mirror.OBJECT_TOO_LARGE, big.message)
            return
        read = self.informer.decoded(ref, obj)  # parsed once per resourceVersion
        if read.invalid is not None or read.resource is None:
            message = read.invalid or "the object does not read as its kind"
            if await self.reporter.report(ref, obj, invalid_spec_conditions(message), self._failed(ref)):
                await self.reporter.decide(ref, obj, "reject", INVALID_SPEC, message)
            return
        resource = read.resource
        if rejected_by_runtime(obj):
            conditions, fields = spec_valid_again(ref, self.reporter.composer)
            await self.reporter.report(ref, obj, conditions, fields)
        writes = RunWrites(self.own_writes)
        request = Request(ref, resource, obj, self.informer, self.reporter, writes)
        try:
            result = await self.controller.reconcile(request)
        except BaseException:
            writes.withdraw()
            raise
        self.reconciled += 1
        if result and result.requeue_after is not None:
            await schedule_requeue(self.js, self.controller.service, ref, obj, result.requeue_after)


async def run_controller(ctx: ServiceContext, controller: Controller | Build) -> Runtime | None:
    """Run ``controller`` until the service stops, on the service's consumer
    (:func:`~aimcore.runtime.consumer.run_consumer`): once the events stream exists, an informer of
    its kinds, its leases, its reporter (with the controller's composer). A controller given as a
    :data:`Build` is built then, when the topology it needs exists."""
    runtimes: list[Runtime] = []

    @contextlib.asynccontextmanager
    async def serve() -> AsyncIterator[Consuming]:
        built = controller if isinstance(controller, Controller) else await controller()
        kinds = list(dict.fromkeys([*built.kinds, *(w.kind for w in built.watches)]))
        informer = Informer(await topology.objects_bucket(ctx.js), kinds, built.indexers)
        await informer.start()
        try:
            runtime = Runtime(
                ctx.js,
                built,
                informer,
                ObjectLeases(await topology.leases_bucket(ctx.js), built.service, stop=ctx.stop),
                Reporter(ctx.js, ctx.name, built.composer),
                journal=ctx.settings.reconcile_journal,
            )
            runtimes.append(runtime)
            yield Consuming(event_consumer(built), runtime.handle)
        finally:
            await informer.stop()

    await run_consumer(ctx, topology.EVENTS_STREAM, consumer_name(ctx.name), serve)
    return runtimes[0] if runtimes else None
