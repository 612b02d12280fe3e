"""The names this module held before it was split (kept while the services move to the runtime's
face, :mod:`aimcore.runtime`): the request (:mod:`.request`), the builder (:mod:`.controller`),
the engine (:mod:`.engine`) and requeues (:mod:`.requeue`)."""

from aimcore.runtime.controller import (
    Build,
    Controller,
    Watch,
    consumer_name,
    dispatch,
    event_consumer,
    validate_only,
)
from aimcore.runtime.engine import Runtime, run_controller
from aimcore.runtime.ownwrites import OwnWrites, RunWrites
from aimcore.runtime.request import Reconcile, Request, Result
from aimcore.runtime.requeue import publish_requeue, schedule_requeue

__all__ = [
    "Build",
    "Controller",
    "OwnWrites",
    "Reconcile",
    "Request",
    "Result",
    "RunWrites",
    "Runtime",
    "Watch",
    "consumer_name",
    "dispatch",
    "event_consumer",
    "publish_requeue",
    "run_controller",
    "schedule_requeue",
    "validate_only",
]
