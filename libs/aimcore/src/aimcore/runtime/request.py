"""What a reconcile is handed (:class:`Request`: the object parsed into its kind's model, the
informer, the reporter, the record of its writes) and what it hands back (:class:`Result`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from typing_extensions import TypeVar

from aimcore.api.bus.messages import ConditionReport
from aimcore.api.crds.base import Resource
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime.informer import Informer
from aimcore.runtime.ownwrites import RunWrites
from aimcore.runtime.report import Reporter


@dataclass(frozen=True)
class Result:
    """What a reconcile asks of the runtime beyond its writes."""

    requeue_after: float | None = None


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
