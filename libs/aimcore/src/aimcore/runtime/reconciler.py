"""The reconcile runtime every service runs on, so none re-invents it
(docs/design.md#level-triggered-reconciles).

A service declares a :class:`Controller`: the primary kinds it reconciles, the dependency kinds it
watches with a function mapping a dependency's change to the primaries that depend on it (as
controller-runtime's ``Watches``), indexes for its lookups, and one ``reconcile`` function. The
runtime then:

- consumes change events through the service's durable consumer (replicas share it);
- keeps an informer cache of the primary and dependency kinds, fed by the KV mirror;
- takes the object's lease (one reconcile per object across replicas, no lost trigger);
- reads the object never older than the event, skips deleted and paused objects;
- validates the spec by parsing it and reports ``InvalidSpec`` instead of retrying invalid input;
- reports ``ObjectTooLarge`` for an object the bus cannot carry (:mod:`aimcore.api.bus.mirror`);
- runs ``reconcile``; a transient error is retried with backoff through a nak, a
  :class:`Result` with ``requeue_after`` schedules the object again (time-based work, with a timer
  JetStream keeps: :func:`schedule_requeue`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from typing_extensions import TypeVar

from aimcore.api.bus import mirror, subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ConditionReport, ObjectRef
from aimcore.api.bus.topology import ConsumerSpec
from aimcore.api.crds.base import Resource
from aimcore.api.crds.validation import INVALID_SPEC
from aimcore.api.kinds import KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.runtime import logs, metrics, tracing
from aimcore.runtime.composer import Composer, is_paused
from aimcore.runtime.consumer import Consuming, run_consumer
from aimcore.runtime.informer import Indexer, Informer
from aimcore.runtime.lease import ObjectLeases
from aimcore.runtime.mappers import Mapper
from aimcore.runtime.report import Reporter
from aimcore.runtime.service import ServiceContext

log = logging.getLogger(__name__)

FAILED = "Failed"


@dataclass(frozen=True)
class Result:
    """What a reconcile asks of the runtime beyond its writes."""

    requeue_after: float | None = None


_WriteKey = tuple[str, str, str | None, str]  # group, kind, namespace, name


class OwnWrites:
    """The children this replica wrote, at the resourceVersion the API server returned.

    A child's change event at exactly that version describes what the reconcile that wrote it
    already knew, so mapping it back to the owner would only repeat that reconcile (for the
    deployer: a second full reconcile per new InferenceService). Events at any other version (the
    child's status moving on, someone else's edit) are mapped as usual. Bounded: forgetting an
    entry only costs the repeat."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._versions: OrderedDict[_WriteKey, str] = OrderedDict()

    def record(self, ref: KindRef, obj: Obj) -> tuple[_WriteKey, str] | None:
        """Remember ``obj`` as written here; what was recorded (for :meth:`forget`)."""
        meta = obj.get("metadata") or {}
        version = meta.get("resourceVersion")
        if not version:
            return None
        key = (ref.group, ref.kind, meta.get("namespace"), str(meta.get("name")))
        self._versions[key] = str(version)
        self._versions.move_to_end(key)
        while len(self._versions) > self.LIMIT:
            self._versions.popitem(last=False)
        return key, str(version)

    def forget(self, recorded: Iterable[tuple[_WriteKey, str]]) -> None:
        """Forget writes recorded before, unless a later write of the same child replaced them."""
        for key, version in recorded:
            if self._versions.get(key) == version:
                del self._versions[key]

    def consume(self, event: ChangeEvent) -> bool:
        """True (once) if ``event`` is a child's change this replica wrote itself."""
        key = (event.object.group, event.object.kind, event.object.namespace, event.object.name)
        if event.change is ChangeType.DELETED or self._versions.get(key) != event.resource_version:
            return False
        del self._versions[key]
        return True


class RunWrites:
    """The children one reconcile writes, recorded in its replica's :class:`OwnWrites` at once
    (their change events may arrive before the reconcile ends) and forgotten if the reconcile
    fails: a child's event is only "already known" to a reconcile that completed. Before, the
    event of a child written by a reconcile that then failed was skipped by the replica that wrote
    it, while the failed reconcile's retry went to the other replica: nothing ran again."""

    def __init__(self, own: OwnWrites | None = None) -> None:
        self.own = own if own is not None else OwnWrites()
        self._recorded: list[tuple[_WriteKey, str]] = []

    def record(self, ref: KindRef, obj: Obj) -> None:
        recorded = self.own.record(ref, obj)
        if recorded is not None:
            self._recorded.append(recorded)

    def withdraw(self) -> None:
        """The reconcile failed: its writes are news to it after all."""
        self.own.forget(self._recorded)
        self._recorded.clear()


R_co = TypeVar("R_co", bound=Resource, default=Resource, covariant=True)


@dataclass
class Request(Generic[R_co]):
    """Everything a reconcile needs about one object; ``Request[AIMService]`` says which kind
    ``resource`` is (the runtime parsed and validated it: :meth:`Informer.decoded`)."""

    ref: KindRef
    resource: R_co
    obj: Obj  # as stored: the status (the status service's), fragments a child copies verbatim
    informer: Informer
    reporter: Reporter
    # a reconcile records the children it writes here (see RunWrites; aimcore.runtime.writes)
    writes: RunWrites = field(default_factory=RunWrites)

    @property
    def namespace(self) -> str | None:
        ns: str | None = self.obj["metadata"].get("namespace")
        return ns

    @property
    def name(self) -> str:
        name: str = self.obj["metadata"]["name"]
        return name

    async def report(
        self,
        conditions: Sequence[ConditionReport] = (),
        fields: dict[str, Any] | None = None,
        *,
        progress: bool = False,
    ) -> bool:
        """Report this object's conditions and status fields (:meth:`Reporter.report`)."""
        return await self.reporter.report(self.ref, self.obj, conditions, fields, progress=progress)

    async def decide(self, action: str, reason: str, message: str, **details: Any) -> None:
        """Record a decision about this object in the audit stream (:meth:`Reporter.decide`)."""
        await self.reporter.decide(self.ref, self.obj, action, reason, message, **details)


Reconcile = Callable[[Request[Any]], Awaitable[Result | None]]


@dataclass(frozen=True)
class Watch:
    """A dependency: changes of ``kind`` enqueue the primaries ``mapper`` returns (the verbs that
    build mappers are in :mod:`aimcore.runtime.mappers`)."""

    kind: KindRef
    mapper: Mapper

    @classmethod
    def each(cls, kinds: Iterable[KindRef], mapper: Mapper) -> list[Watch]:
        """The same mapping for each kind of a family (``Watch.each(TEMPLATE_KINDS, ...)``)."""
        return [cls(kind, mapper) for kind in kinds]


def dispatch(*routes: tuple[Iterable[KindRef], Reconcile]) -> Reconcile:
    """The reconcile of a controller of several kind families: each object goes to its family's
    reconcile (``dispatch((MODEL_KINDS, models.reconcile), (TEMPLATE_KINDS, ...))``)."""
    table = {kind: reconcile for kinds, reconcile in routes for kind in kinds}

    async def reconcile(request: Request[Any]) -> Result | None:
        route = table.get(request.ref)
        if route is None:
            log.error("no reconcile for %s %s", request.ref.short, request.name)
            return None
        return await route(request)

    return reconcile


@dataclass
class Controller:
    service: str
    kinds: Sequence[KindRef]
    reconcile: Reconcile
    watches: Sequence[Watch] = ()
    indexers: dict[str, Indexer] = field(default_factory=dict)
    # Skip a primary's own MODIFIED event when only its status changed since this replica last
    # reconciled it (controller-runtime's GenerationChanged + labels/annotations predicates): for
    # controllers whose decisions do not depend on their own status having been written.
    ignore_own_status: bool = False
    # the kinds' status rules its reports are checked against before they are sent (the
    # composition the status service writes with); default: none
    composer: Composer = field(default_factory=Composer)


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


def failed_fields(ref: KindRef, composer: Composer) -> dict[str, Any]:
    """The top-level status field that says "failed" for a kind (its rules name the field)."""
    return {composer.state_field(ref): FAILED}


def invalid_spec_conditions(message: str, reason: str = INVALID_SPEC) -> list[ConditionReport]:
    return [
        ConditionReport(type="ConfigValid", status="False", reason=reason, message=message),
        ConditionReport(type="Ready", status="False", reason=reason, message=message),
    ]


RUNTIME_VERDICTS = frozenset({INVALID_SPEC, mirror.OBJECT_TOO_LARGE})
"""The ``ConfigValid`` reasons the runtime itself reports (and withdraws), not a controller."""


def spec_valid_again(ref: KindRef, composer: Composer) -> tuple[list[ConditionReport], dict[str, Any]]:
    """What undoes the runtime's own verdict (``InvalidSpec``, ``ObjectTooLarge``) once the object
    is usable again; the controller's reconcile, which runs right after, reports the real state."""
    conditions = [
        ConditionReport(type="ConfigValid", status="True", reason="ConfigurationValid"),
        ConditionReport(
            type="Ready", status="False", reason="Reconciling", message="The spec is valid again"
        ),
    ]
    return conditions, {composer.state_field(ref): "Pending"}


def _rejected_by_runtime(obj: Obj) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "ConfigValid" and c.get("reason") in RUNTIME_VERDICTS for c in conditions)


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


def consumer_name(service: str) -> str:
    """The durable consumer of ``service``'s controller (shared by its replicas)."""
    return f"aim-{service}"


def event_consumer(controller: Controller) -> ConsumerSpec:
    kinds = [*controller.kinds, *(w.kind for w in controller.watches)]
    filters = [subjects.kind_filter(subjects.EVENTS_PREFIX, k) for k in dict.fromkeys(kinds)]
    filters.append(f"{subjects.REQUEUE_PREFIX}.{subjects.escape(controller.service)}.>")
    return ConsumerSpec(
        durable=consumer_name(controller.service), stream=topology.EVENTS_STREAM, filter_subjects=filters
    )


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
            obj = await self.informer.wait_for(ref, namespace, name, version)
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
        if _rejected_by_runtime(obj):
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


def _requeue_event(ref: KindRef, obj: Obj) -> ChangeEvent:
    meta = obj["metadata"]
    return ChangeEvent(
        object=ObjectRef.of(ref, meta.get("namespace"), meta["name"]),
        uid=meta.get("uid", ""),
        resource_version=str(meta.get("resourceVersion", "")),
        generation=meta.get("generation"),
        change=ChangeType.REQUEUE,
    )


async def publish_requeue(js: JetStreamContext, service: str, ref: KindRef, obj: Obj) -> None:
    """Ask ``service`` to reconcile ``obj`` again now: for work that finishes outside a reconcile
    (a background download) and must be looked at level-triggered, like any other change."""
    meta = obj["metadata"]
    event = _requeue_event(ref, obj)
    subject = subjects.requeue_subject(service, ref, meta.get("namespace"), meta["name"])
    headers = {"Nats-Msg-Id": f"requeue:{event.uid}:{event.resource_version}:{time.time_ns()}"}
    await js.publish(subject, event.encode(), headers=tracing.inject(headers))


async def schedule_requeue(js: JetStreamContext, service: str, ref: KindRef, obj: Obj, delay: float) -> None:
    """Ask ``service`` to reconcile ``obj`` again after ``delay`` seconds (time-based work: a retry's
    backoff, a progress poll, a periodic sync).

    The timer is JetStream's, not this process's: a scheduled message (``Nats-Schedule: @at …``) on
    the object's schedule subject, which the server publishes as a requeue when it is due. It
    survives the replica that set it (a timer in memory died with a killed replica, and the object
    waited for the periodic resync), and one object has one timer per service: a newer schedule on
    the subject replaces the older, from whichever replica."""
    meta = obj["metadata"]
    namespace, name = meta.get("namespace"), meta["name"]
    due = datetime.now(UTC) + timedelta(seconds=max(0.0, delay))
    headers = {
        "Nats-Schedule": "@at " + due.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "Nats-Schedule-Target": subjects.requeue_subject(service, ref, namespace, name),
    }
    subject = subjects.schedule_subject(service, ref, namespace, name)
    await js.publish(subject, _requeue_event(ref, obj).encode(), headers=tracing.inject(headers))


Build = Callable[[], Awaitable[Controller]]
"""Builds a controller that needs the bus's topology (a bucket the watcher declares)."""


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


async def validate_only(request: Request[Any]) -> Result | None:
    """The reconcile of kinds whose controller is not built yet: validation (done by the runtime)
    is all that happens, and nothing else is claimed."""
    log.debug("%s %s is valid; no controller for it yet", request.ref.short, request.name)
    return None
