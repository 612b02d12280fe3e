"""How a service declares a controller (as controller-runtime's builder): the primary kinds it
reconciles, the dependency kinds it watches with a mapper from a dependency's change to the primaries
that depend on it (:class:`Watch`; the verbs that build mappers are in :mod:`aimcore.runtime.mappers`),
the indexes its lookups use, and one ``reconcile``. :mod:`aimcore.runtime.engine` runs it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aimcore.api.bus import subjects, topology
from aimcore.api.bus.topology import ConsumerSpec
from aimcore.api.kinds import KindRef
from aimcore.runtime.composer import Composer
from aimcore.runtime.indexers import Indexer
from aimcore.runtime.mappers import Mapper
from aimcore.runtime.request import Reconcile, Request, Result

log = logging.getLogger(__name__)


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


Build = Callable[[], Awaitable[Controller]]
"""Builds a controller that needs the bus's topology (a bucket the watcher declares)."""


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


async def validate_only(request: Request[Any]) -> Result | None:
    """The reconcile of kinds whose controller is not built yet: validation (done by the runtime)
    is all that happens, and nothing else is claimed."""
    log.debug("%s %s is valid; no controller for it yet", request.ref.short, request.name)
    return None
