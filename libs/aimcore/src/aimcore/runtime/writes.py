"""One verb to write a child, shaped like controller-runtime's ``CreateOrUpdate``: every
reconciler writes its children (a service's model, template cache, InferenceService, HTTPRoute; a
model's templates; a template's discovery Job) through :meth:`Children.write`, which

1. does not send a body the API server refused for its content before (it is refused until it
   changes: :class:`~aimcore.runtime.refusals.RefusedBodies`);
2. creates or applies it (:class:`How`);
3. returns the API server's refusal (400/422: the body's content; 403: the operator's
   permissions) as a value, remembered, instead of raising it; anything else (a conflict, a
   server or network error) raises, to be retried with backoff as before;
4. records a child this object controls at the version written
   (:class:`~aimcore.runtime.ownwrites.OwnWrites`), so its change event does not repeat the
   reconcile that wrote it; a caller that reads the child back from its cache rather than going
   on with what was written passes ``record=False`` (the event is what shows it the child);

and leaves the decision to the caller: which condition a refusal becomes, what goes in the audit
stream, whether the reconcile goes on.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any

from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime.children import controlled_by
from aimcore.runtime.kube import ApiException, Kube
from aimcore.runtime.refusals import Refusal, RefusedBodies, refusal
from aimcore.runtime.request import Request

__all__ = ["Children", "How", "Written"]

log = logging.getLogger(__name__)


class How(enum.Enum):
    """How a child is written."""

    APPLY = "apply"
    """Server-side apply: created or changed to the body (a child this object controls)."""
    CREATE = "create"
    """Created; one of that name already there is left as it is (a child others may share: an
    apply would replace its creator's owner reference with this object's)."""
    CREATE_OR_APPLY = "create-or-apply"
    """Created when the caller has not seen it (a create costs the API server less than an
    apply), applied over one it has seen or that appeared meanwhile."""


@dataclass(frozen=True)
class Written:
    """A write the API server did."""

    obj: Obj | None
    """The child as the API server returned it; ``None`` when :attr:`How.CREATE` found one there."""
    created: bool
    """Whether this write created it (``False`` for an apply, which may also have)."""


class Children:
    """Writes one reconciler's children (:meth:`write`); one per reconciler, which keeps the
    bodies refused for their content."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.refused = RefusedBodies()

    def refused_before(self, kind: KindRef, body: Obj) -> Refusal | None:
        """The refusal :meth:`write` would return for ``body`` without sending it (for a caller
        that must not claim anything for a write that will not happen, or decide twice)."""
        return self.refused.get(kind, body)

    async def write(
        self,
        request: Request[Any],
        kind: KindRef,
        body: Obj,
        *,
        how: How = How.APPLY,
        seen: bool = False,
        record: bool = True,
    ) -> Written | Refusal:
        """Write ``body`` (a ``kind``) for ``request``'s object: what was written, or the refusal.
        ``seen``: the caller's cache has the child (:attr:`How.CREATE_OR_APPLY` applies then)."""
        known = self.refused.get(kind, body)
        if known is not None:
            return known  # refused as it is: not sent again until it changes
        try:
            written = await self._send(kind, body, how, seen)
        except ApiException as exc:
            found = refusal(exc)
            if found is None:
                raise
            name = body["metadata"].get("name")
            log.warning("the API server refused %s %s: %s", kind.kind, name, found.describe())
            self.refused.remember(kind, body, found)
            return found
        self.refused.forget(kind, body)
        if record and written.obj is not None and controlled_by(body, request.obj["metadata"].get("uid")):
            request.writes.record(kind, written.obj)
        return written

    async def _send(self, kind: KindRef, body: Obj, how: How, seen: bool) -> Written:
        if how is How.APPLY or (how is How.CREATE_OR_APPLY and seen):
            return Written(await self.kube.apply(kind, body), created=False)
        created = await self.kube.create_if_absent(kind, body)
        if created is not None or how is How.CREATE:
            return Written(created, created=created is not None)
        return Written(await self.kube.apply(kind, body), created=False)  # appeared meanwhile
