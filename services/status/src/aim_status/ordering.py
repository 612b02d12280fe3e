"""Reports are written in the order their sources published them, whatever order they arrive in.

A status report can reach the status service late: redelivered after its ack wait because the
replica that held it stopped (even a graceful stop can leave messages the server delivered after
the client stopped fetching), or handled by one replica while another already wrote a newer one.
Written then, it would put back what its source has since corrected (``observedGeneration`` going
backwards, a service falling from ``Starting`` to ``Pending`` until the next resync).

The stream is the record of order. Before a report is applied, :class:`Ordering` walks the object's
subject forward from the report's sequence: every condition type and status field that a *newer*
report *from the same source* also sets is taken out of it (each has one owner, and the newer value
wins; a newer *progress* report overrides only older progress, never an outcome, and a newer report
computed from an older generation overrides nothing: two replicas of a source can publish out of
generation order when one's copy of the object lags, and the composition refuses the older one once
the newer generation is composed, :func:`aimcore.runtime.composer.is_stale`); what remains is
applied, and a report with nothing left is acknowledged without a write. In
the usual case (no newer report) this is one direct read of the stream. Reports from an older
generation are also refused by the composition itself (:func:`aimcore.runtime.composer.is_stale`).

The check is made again before every retry of a write that met a 409 Conflict
(:meth:`Ordering.current`): with several status replicas, the conflict is usually another replica
writing a newer report of the same object, and the first check was made before it existed. A check
that cannot read the stream is a :class:`~aimcore.api.errors.TransientError` (the report is retried
with backoff), never a pass: applying a report whose order is unknown could put an older value back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from pydantic import ValidationError

from aimcore.api.bus.messages import StatusReport
from aimcore.api.errors import TransientError

log = logging.getLogger(__name__)

LOOKAHEAD = 256


class Sequenced(NamedTuple):
    """A report with where the stream holds it (``seq`` 0: not from the stream, nothing to check)."""

    subject: str
    seq: int
    report: StatusReport


def remainder(report: StatusReport, conditions: set[str], fields: set[str]) -> StatusReport | None:
    """``report`` without the ``conditions`` and ``fields`` newer reports set; ``None`` if nothing is
    left that newer reports do not say."""
    keep_conditions = tuple(c for c in report.conditions if c.type not in conditions)
    keep_fields = {k: v for k, v in report.fields.items() if k not in fields}
    if not keep_conditions and not keep_fields:
        return None
    if len(keep_conditions) == len(report.conditions) and len(keep_fields) == len(report.fields):
        return report
    return report.model_copy(update={"conditions": keep_conditions, "fields": keep_fields})


def _older_generation(newer: StatusReport, report: StatusReport) -> bool:
    """True when ``newer`` (later on the stream) was computed from an older generation than
    ``report``: a replica whose copy of the object lagged, reporting after one that had seen the new
    spec. Letting it override would leave ``observedGeneration`` behind until the next resync."""
    return (
        newer.observed_generation is not None
        and report.observed_generation is not None
        and newer.observed_generation < report.observed_generation
    )


class Ordering:
    def __init__(self, js: JetStreamContext, stream: str, lookahead: int = LOOKAHEAD) -> None:
        self.js = js
        self.stream = stream
        self.lookahead = lookahead
        self.superseded = 0  # reports dropped entirely
        self.trimmed = 0  # reports applied in part

    async def latest_part(self, subject: str, seq: int, report: StatusReport) -> StatusReport | None:
        """What of ``report`` (stream sequence ``seq`` on ``subject``) no newer report from its
        source overrides; ``None`` when newer reports override all of it."""
        if not seq:
            return report
        conditions: set[str] = set()
        fields: set[str] = set()
        cursor = seq + 1
        try:
            for _ in range(self.lookahead):
                raw = await self.js.get_msg(self.stream, seq=cursor, subject=subject, next=True)
                if raw.seq is None or raw.data is None:
                    break
                cursor = raw.seq + 1
                try:
                    newer = StatusReport.model_validate_json(raw.data)
                except ValidationError:
                    continue
                if newer.source != report.source or newer.uid != report.uid:
                    continue
                if newer.progress and not report.progress:
                    continue  # progress is a passing view: it never overrides an outcome
                if _older_generation(newer, report):
                    continue  # computed from an older spec: the composition refuses it after this
                conditions.update(c.type for c in newer.conditions)
                fields.update(newer.fields)
        except NotFoundError:
            pass  # no (more) newer report on the subject
        except (NatsError, TimeoutError) as exc:
            raise TransientError(f"cannot check the order of the report on {subject}: {exc!r}") from exc
        if not conditions and not fields:
            return report
        rest = remainder(report, conditions, fields)
        if rest is None:
            self.superseded += 1
        elif rest is not report:
            self.trimmed += 1
        return rest

    async def current(self, reports: Sequence[Sequenced]) -> list[Sequenced]:
        """What of ``reports`` no newer report from its source overrides now, in order."""
        kept: list[Sequenced] = []
        for placed in reports:
            rest = await self.latest_part(placed.subject, placed.seq, placed.report)
            if rest is not None:
                kept.append(placed._replace(report=rest))
        return kept
