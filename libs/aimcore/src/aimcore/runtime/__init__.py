"""The reconcile runtime: what a service author uses, in one place (as ``import kopf`` or
controller-runtime's ``ctrl``)::

    from aimcore import runtime
    from aimcore.runtime import Controller, Request, Result, Watch, run_controller, to_owners

- **declaring a controller**: :class:`Controller` (the primary kinds, the dependency
  :class:`Watch`\\ es, indexes, one ``reconcile``), :func:`dispatch` for several kind families,
  :func:`run_controller` to run it on the service's consumer;
- **in a reconcile**: the :class:`Request` (the object parsed into its kind's model, the
  :class:`Informer`, the :class:`Reporter`), the :class:`Result` (``requeue_after``),
  :func:`publish_requeue` / :func:`schedule_requeue` for work that finishes elsewhere or later;
- **mapping a dependency's change to primaries** (a Watch's mapper): :func:`to_owners`,
  :func:`through`, :func:`through_job_to_owner`, :func:`by_index`, :func:`indexed`, :func:`filed`,
  :func:`every`, :func:`any_of`, :func:`changed`, :func:`scope`, :func:`keep_cached`,
  :func:`group_of`; indexes: :func:`resource_indexer`, :func:`field_indexer`;
- **writing children**: :class:`Children` (``write(request, kind, body, how=How.APPLY)`` →
  :class:`Written` or :class:`Refusal`), the labels and owner references children carry
  (:func:`child_labels`, :func:`owner_reference`, :func:`owned_by`, :func:`differs`,
  :func:`contains`), finalizers (:func:`has_finalizer`, :func:`add_finalizer`);
- **conditions and reports**: :func:`condition`, :func:`refused_condition` (and the reason and
  message of a refusal), :func:`publish_report` and :func:`offer_progress` outside a reconcile;
- **the process**: :func:`run_service` and its :class:`ServiceContext` (settings read once, the
  NATS and Kubernetes clients), :func:`run_consumer` for a consumer that is not a controller,
  :func:`connect_bus` for a program that is not a service (a Job reporting progress),
  :func:`until_answered` to wait out a bus that is down or still starting (paced by
  :data:`BUS_RETRY`),
  :class:`Kube` (:class:`ApiException`, :func:`describe_error`), the metrics :data:`REGISTRY`.

What only the two platform services need stays in its module: the watcher's mirror scans
(:mod:`.mirrorscan`) and leader lease (:mod:`.kvlease`), the status service's composition
(:mod:`.composer`); settings are the :mod:`.settings` package; ``logs`` and ``tracing`` are modules.

Names are loaded on first use (PEP 562): importing this package costs nothing, so a process that
needs only the bus client and the Kubernetes client (the watcher) does not load the CRD models the
controller machinery parses objects with. The face is the imports under ``TYPE_CHECKING`` below
and ``__all__`` (``tests/unit/runtime/test_runtime_face.py`` keeps the two the same).
"""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimcore.runtime.bus import BUS_RETRY, connect_bus, until_answered
    from aimcore.runtime.children import (
        child_labels,
        contains,
        controlled_by,
        differs,
        owned_by,
        owner_reference,
    )
    from aimcore.runtime.conditions import condition, refused_condition, refused_message, refused_reason
    from aimcore.runtime.consumer import Consuming, run_consumer
    from aimcore.runtime.controller import Build, Controller, Watch, consumer_name, dispatch, validate_only
    from aimcore.runtime.engine import run_controller
    from aimcore.runtime.finalizers import add_finalizer, has_finalizer
    from aimcore.runtime.indexers import Indexer, ResourceIndexer, field_indexer, resource_indexer
    from aimcore.runtime.informer import Informer
    from aimcore.runtime.kube import ApiException, Kube, describe_error
    from aimcore.runtime.mappers import (
        Mapper,
        Target,
        any_of,
        by_index,
        changed,
        every,
        filed,
        group_of,
        indexed,
        keep_cached,
        scope,
        through,
        through_job_to_owner,
        to_owners,
    )
    from aimcore.runtime.metrics import REGISTRY
    from aimcore.runtime.refusals import Refusal
    from aimcore.runtime.report import Reporter, offer_progress, publish_report
    from aimcore.runtime.request import Reconcile, Request, Result
    from aimcore.runtime.requeue import publish_requeue, schedule_requeue
    from aimcore.runtime.service import ServiceContext, run_service
    from aimcore.runtime.writes import Children, How, Written

__all__ = [
    "BUS_RETRY",
    "REGISTRY",
    "ApiException",
    "Build",
    "Children",
    "Consuming",
    "Controller",
    "How",
    "Indexer",
    "Informer",
    "Kube",
    "Mapper",
    "Reconcile",
    "Refusal",
    "Reporter",
    "Request",
    "ResourceIndexer",
    "Result",
    "ServiceContext",
    "Target",
    "Watch",
    "Written",
    "add_finalizer",
    "any_of",
    "by_index",
    "changed",
    "child_labels",
    "condition",
    "connect_bus",
    "consumer_name",
    "contains",
    "controlled_by",
    "describe_error",
    "differs",
    "dispatch",
    "every",
    "field_indexer",
    "filed",
    "group_of",
    "has_finalizer",
    "indexed",
    "keep_cached",
    "offer_progress",
    "owned_by",
    "owner_reference",
    "publish_report",
    "publish_requeue",
    "refused_condition",
    "refused_message",
    "refused_reason",
    "resource_indexer",
    "run_consumer",
    "run_controller",
    "run_service",
    "schedule_requeue",
    "scope",
    "through",
    "through_job_to_owner",
    "to_owners",
    "until_answered",
    "validate_only",
]


@functools.cache
def _modules() -> dict[str, str]:
    """Each name of the face and the module that defines it: the imports above, read from this
    file (one list of the face, for the type checker and for the loader alike)."""
    tree = ast.parse(Path(__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If))  # ``if TYPE_CHECKING:``
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def __getattr__(name: str) -> Any:
    module = _modules().get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
