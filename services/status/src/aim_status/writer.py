"""Applies status reports to the cluster: read, merge (with the composer it is given: the kinds'
aggregation rules), conditional status patch, retry on conflict with fresh state, nothing written
when nothing changes, and paused or replaced objects left alone. Several reports for one object (a
coalesced progress report and the report that follows it) are applied in order in one write.

The first read is from the NATS object mirror when there is one (the reporter has just seen the
object there, so it is almost always current): the patch is conditional on its resourceVersion, so
a stale copy costs a 409 and a read from the API server, never a lost update. Concluding that
nothing changes is only trusted from the API server (a stale copy could hide a needed write). Under
a burst this takes one API request per status write instead of two.

After a 409 Conflict the reports' order is checked again on the stream (:meth:`Ordering.current
<aim_status.ordering.Ordering.current>`) before the write is recomputed: the conflict is usually
another status replica writing a newer report of the same object.

Metrics: ``aim_status_writes_total``, ``aim_status_conflicts_total`` and ``aim_status_noops_total``
by kind (see ``docs/deploy.md``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from nats.errors import Error as NatsError
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KeyValue
from opentelemetry import trace
from prometheus_client import Counter

from aim_status import authority, oversize
from aim_status.ordering import Ordering, Sequenced
from aimcore.api.bus import mirror, subjects
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.errors import PermanentError, TransientError
from aimcore.api.kinds import KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.status.compose import AIM_STATUS
from aimcore.runtime import REGISTRY, ApiException, Kube, describe_error, logs
from aimcore.runtime.composer import Composer, from_the_future, is_paused, patch_for

log = logging.getLogger(__name__)
tracer = trace.get_tracer("aim.status")


MAX_CONFLICTS = 5

WRITES = Counter(
    "aim_status_writes_total", "Status patches the API server accepted.", ["group", "kind"], registry=REGISTRY
)
CONFLICTS = Counter(
    "aim_status_conflicts_total",
    "Status patches refused with 409 Conflict (the object changed meanwhile; recomputed and retried).",
    ["group", "kind"],
    registry=REGISTRY,
)
NOOPS = Counter(
    "aim_status_noops_total",
    "Status reports that changed nothing (no write sent).",
    ["group", "kind"],
    registry=REGISTRY,
)


@dataclass(frozen=True)
class Written:
    """One successful status write, for the audit record."""

    ref: KindRef
    object: ObjectRef
    uid: str
    old: Obj
    new: Obj
    resource_version: str


OnWrite = Callable[[Written], Awaitable[None]]


class StatusWriter:
    def __init__(
        self,
        kube: Kube,
        on_write: OnWrite | None = None,
        mirror: KeyValue | None = None,
        composer: Composer = AIM_STATUS,
        ordering: Ordering | None = None,
    ) -> None:
        self.kube = kube
        self.composer = composer
        self.ordering = ordering
        self.on_write = on_write
        self.mirror = mirror
        self.mirror_reads = 0
        self.writes = 0
        self.noops = 0
        self.conflicts = 0
        self.oversize = oversize.Oversize()

    async def apply_all(self, reports: Sequence[Sequenced]) -> bool:
        return await self.apply(*reports)

    async def apply(self, *placed: Sequenced) -> bool:
        """Write the reports (all about one object, oldest first); True if the API server was
        written to."""
        if not placed:
            return False
        target = placed[0].report.object
        try:
            ref = by_kind(target.group, target.kind)
        except KeyError as exc:
            raise PermanentError(
                "UnknownKind", f"status report for an unknown kind: {target.display}"
            ) from exc
        ns, name = target.namespace, target.name
        with logs.about(target), tracer.start_as_current_span(f"write status {ref.kind}") as span:
            span.set_attribute("k8s.object", target.display)
            span.set_attribute("aim.status.reports", len(placed))
            candidate = await self._mirrored(ref, ns, name)
            conflicted = False
            for _ in range(MAX_CONFLICTS):
                if conflicted and self.ordering is not None:
                    placed = tuple(await self.ordering.current(placed))
                    if not placed:
                        return False  # newer reports from their sources say everything they said
                conflicted = False
                from_mirror = candidate is not None
                obj = candidate if candidate is not None else await self.kube.get(ref, ns, name)
                candidate = None
                uid, live = self._live(obj, [p.report for p in placed], from_mirror=from_mirror)
                change = (
                    self.composer.status_change(obj, live, datetime.now(UTC))
                    if obj is not None and live and not is_paused(obj)
                    else None
                )
                if change is None and from_mirror:
                    continue  # nothing to write, per the mirror: only the API server may say so
                if obj is None or is_paused(obj):
                    return False  # deleted, or the user froze it
                if not live:
                    return False  # a new object under the same name: the reports are about the old one
                fitted = self._fitted(ref, obj, change)
                if fitted is None:
                    return False  # nothing changes
                new, patch = fitted
                try:
                    result = await self._patch(ref, obj, new, patch)
                except ApiException as exc:
                    if exc.status == 409:
                        self.conflicts += 1
                        CONFLICTS.labels(ref.group, ref.kind).inc()
                        conflicted = True
                        continue  # someone else wrote in between: check the order, recompute on fresh state
                    if exc.status == 404:
                        return False
                    raise
                if result is None:
                    return False  # nothing that fits is new
                await self._written(ref, target, uid, live, obj, new, result)
                return True
        raise TransientError(f"status of {target.display}: {MAX_CONFLICTS} conflicts in a row")

    def _live(
        self, obj: Obj | None, reports: list[StatusReport], *, from_mirror: bool
    ) -> tuple[str, list[StatusReport]]:
        """The object's uid, and the reports about it: not those about an object of the same name
        that was deleted (another uid), nor, on a copy from the API server, those claiming a
        generation it has never had."""
        uid = str(((obj or {}).get("metadata") or {}).get("uid", ""))
        live = [r for r in reports if not r.uid or r.uid == uid]
        if obj is not None and not from_mirror:
            live = self._refuse_future(obj, live)
        return uid, live

    def _fitted(self, ref: KindRef, obj: Obj, change: tuple[Obj, Obj] | None) -> tuple[Obj, Obj] | None:
        """The new status and its patch, made to fit what the API server is known to store for the
        object (:meth:`aim_status.oversize.Oversize.known`); ``None``, counted, when nothing changes."""
        if change is not None:
            new, patch = change
            fitted = self.oversize.known(obj, new)
            if fitted is new:
                return new, patch
            if fitted != (obj.get("status") or {}):
                return fitted, patch_for(obj, fitted)
        self.noops += 1
        NOOPS.labels(ref.group, ref.kind).inc()
        return None

    async def _written(  # noqa: PLR0917
        self,
        ref: KindRef,
        target: ObjectRef,
        uid: str,
        live: Sequence[StatusReport],
        obj: Obj,
        new: Obj,
        result: Obj,
    ) -> None:
        """Count and log a status write the API server accepted (``result``), and hand it to
        ``on_write`` for the audit record."""
        self.writes += 1
        WRITES.labels(ref.group, ref.kind).inc()
        log.info(
            "status written (resourceVersion %s, observedGeneration %s) from %s: %s",
            result.get("metadata", {}).get("resourceVersion", ""),
            new.get("observedGeneration", "-"),
            ", ".join(dict.fromkeys(r.source for r in live)),
            summary(live),
            extra=logs.fields(target),
        )
        if self.on_write is not None:
            old = obj.get("status") or {}
            await self.on_write(
                Written(
                    ref=ref,
                    object=target,
                    uid=uid,
                    old=old,
                    # What we wrote, not the server's echo: defaults the server adds
                    # (e.g. ``status: Pending``) are not our change.
                    new=new,
                    resource_version=str(result.get("metadata", {}).get("resourceVersion", "")),
                )
            )

    async def _patch(self, ref: KindRef, obj: Obj, new: Obj, patch: Obj) -> Obj | None:
        """Write ``patch``; when the API server refuses the object for its size, write it again
        without the status's largest fields, with a condition saying so (:mod:`aim_status.oversize`).
        ``None`` when what fits is what the object already has."""
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace"), str(meta.get("name", ""))
        while True:
            try:
                return await self.kube.patch_status(ref, ns, name, patch)
            except ApiException as exc:
                if not oversize.too_large(exc):
                    raise
                fitted = self.oversize.shrink(obj, new, exc)
                if fitted is None:
                    raise PermanentError(
                        oversize.REASON, f"status of {ref.kind} {name}: {describe_error(exc)}"
                    ) from exc
                log.warning(
                    "the status of %s %s is too large for the API server (%s): writing it without %s",
                    ref.kind,
                    name,
                    describe_error(exc),
                    ", ".join(k for k in new if k not in fitted),
                )
                if fitted == (obj.get("status") or {}):
                    return None
                new, patch = fitted, patch_for(obj, fitted)

    def _refuse_future(self, obj: Obj, reports: list[StatusReport]) -> list[StatusReport]:
        """``reports`` without those claiming a generation the object has never had (read from the
        API server: the mirror may lag), each refused and counted."""
        generation = (obj.get("metadata") or {}).get("generation")
        generation = generation if isinstance(generation, int) else None
        kept = []
        for report in reports:
            if from_the_future(report, generation):
                authority.REFUSED.labels(authority.FUTURE_GENERATION).inc()
                log.warning(
                    "refused a status report from %s claiming generation %s of %s (at generation %s)",
                    report.source,
                    report.observed_generation,
                    report.object.display,
                    generation,
                )
                continue
            kept.append(report)
        return kept

    async def _mirrored(self, ref: KindRef, namespace: str | None, name: str) -> Obj | None:
        """The object as the mirror holds it, or None."""
        if self.mirror is None:
            return None
        try:
            entry = await self.mirror.get(subjects.object_key(ref, namespace, name))
        except (KeyNotFoundError, KeyDeletedError, NatsError, TimeoutError):
            return None
        if not entry.value:
            return None
        try:
            obj = json.loads(entry.value)
        except ValueError:
            return None
        if not isinstance(obj, dict) or not (obj.get("metadata") or {}).get("resourceVersion"):
            return None
        if mirror.too_large(obj) is not None:
            return None  # a placeholder holds no status to merge into
        self.mirror_reads += 1
        return obj


def summary(reports: Sequence[StatusReport]) -> str:
    """What the reports set, in a few words: ``Ready=False (Pending), status=Pending``."""
    parts: dict[str, str] = {}
    for report in reports:  # oldest first: a later report's value wins
        for condition in report.conditions:
            parts[condition.type] = f"{condition.type}={condition.status} ({condition.reason})"
        for key, value in report.fields.items():
            if isinstance(value, str | int | float | bool) or value is None:
                parts[f"field {key}"] = f"{key}={value}"
            else:
                parts[f"field {key}"] = f"{key} set"
    return ", ".join(parts.values()) or "no change reported"
