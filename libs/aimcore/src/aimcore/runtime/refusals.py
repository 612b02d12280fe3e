"""Writes the API server refuses, told apart from writes worth retrying.

The operator writes objects on users' behalf (a model's templates, a service's model, template
cache, InferenceService and HTTPRoute). When the API server refuses one because of what is in it
(HTTP 400/422: a schema, enum or metadata rule) sending the same body again can never succeed, and
when it refuses for lack of permission (403) only an administrator can help. Either way the object
that asked for the write must say so in a condition naming the refusal and the server's message,
instead of waiting forever or retrying in a loop (docs/design.md#acks-and-backoff: bad input gets a
condition, no retry storm).

:func:`refusal` classifies an error; :class:`RefusedBodies` remembers the bodies refused for their
content, so the same body is not sent again until it changes (a spec change, new image labels...).
Conflicts (409), missing objects (404), throttling (429), server errors and network failures are
not refusals: the caller retries them as before.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.kinds import KindRef
from aimcore.runtime.kube import ApiException

__all__ = ["FORBIDDEN", "MAX_MESSAGE", "REFUSED_STATUSES", "Refusal", "RefusedBodies", "refusal"]

FORBIDDEN = 403
REFUSED_STATUSES = frozenset({400, FORBIDDEN, 422})
MAX_MESSAGE = 600


@dataclass(frozen=True)
class Refusal:
    """The API server's answer to a write it will not do."""

    status: int
    reason: str  # the API server's reason (Invalid, BadRequest, Forbidden)
    message: str  # the API server's message (which field, which rule)

    @property
    def forbidden(self) -> bool:
        """A permission problem (may be fixed without changing the body: retry later)."""
        return self.status == FORBIDDEN

    def describe(self) -> str:
        detail = f": {self.message}" if self.message else ""
        return f"HTTP {self.status} {self.reason}{detail}"


def refusal(exc: BaseException) -> Refusal | None:
    """The refusal ``exc`` is, or ``None`` when the write may succeed if retried."""
    if not isinstance(exc, ApiException) or exc.status not in REFUSED_STATUSES:
        return None
    status = int(exc.status)
    reason, message = str(exc.reason or ""), ""
    raw = exc.body.decode(errors="replace") if isinstance(exc.body, bytes) else str(exc.body or "")
    try:
        body = json.loads(raw or "{}")
    except ValueError:
        body = None
    if isinstance(body, Mapping):
        message = str(body.get("message") or "")
        reason = str(body.get("reason") or reason)
    else:
        message = raw
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return Refusal(status, reason or ("Forbidden" if status == FORBIDDEN else "Invalid"), message)


def _fingerprint(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


class RefusedBodies:
    """Bodies refused for their content (400/422), by object: the same body is not sent again.

    Bounded (least recently refused forgotten first): forgetting one costs one more refused
    request, nothing else. Per process: a restarted replica tries each once more."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._refused: OrderedDict[tuple[str, str, str | None, str], tuple[str, Refusal]] = OrderedDict()

    @staticmethod
    def _key(ref: KindRef, body: Mapping[str, Any]) -> tuple[str, str, str | None, str]:
        meta = body.get("metadata") or {}
        return ref.group, ref.kind, meta.get("namespace"), str(meta.get("name"))

    def get(self, ref: KindRef, body: Mapping[str, Any]) -> Refusal | None:
        """The refusal of exactly this body, if it was refused before."""
        found = self._refused.get(self._key(ref, body))
        if found is None or found[0] != _fingerprint(body):
            return None
        return found[1]

    def remember(self, ref: KindRef, body: Mapping[str, Any], refused: Refusal) -> None:
        if refused.forbidden:
            return  # permissions can change without the body changing
        key = self._key(ref, body)
        self._refused[key] = (_fingerprint(body), refused)
        self._refused.move_to_end(key)
        while len(self._refused) > self.LIMIT:
            self._refused.popitem(last=False)

    def forget(self, ref: KindRef, body: Mapping[str, Any]) -> None:
        self._refused.pop(self._key(ref, body), None)
