"""Whose word a status report is (docs/design.md#security): the status service takes a report's
source from the subject it was published on, never from its payload, and applies it only if that
source owns the kind's status.

nats-server already lets each service publish only on ``aim.status.<itself>.<group>.<Kind>.…`` for
the kinds it owns (:mod:`aimcore.api.bus.auth`), so the subject is proof of the sender; this check
keeps the status service honest about it whatever the server's configuration (an ``admin`` key, a
hand-written one): a report naming another object than its subject, or a kind its sender does not
own, is refused. Before, every service could publish anywhere under ``aim.status`` and the status
service believed the payload's ``source``: discovery's key turned a Failed AIMService into
Running/Ready "from the deployer".

Refusals are counted by reason (``aim_status_refused_reports_total``) and logged; they are never
retried.
"""

from __future__ import annotations

from prometheus_client import Counter

from aimcore.api.bus import subjects
from aimcore.api.bus.messages import StatusReport
from aimcore.api.errors import PermanentError
from aimcore.api.kinds import status_owner
from aimcore.runtime import REGISTRY

REFUSED = Counter(
    "aim_status_refused_reports_total",
    "Status reports refused: from a service that does not own the kind, naming another object than "
    "their subject, or claiming a generation the object never had.",
    ["reason"],
    registry=REGISTRY,
)

NOT_OWNER = "NotOwner"
WRONG_SUBJECT = "WrongSubject"
FUTURE_GENERATION = "FutureGeneration"


def refuse(reason: str, message: str) -> PermanentError:
    REFUSED.labels(reason).inc()
    return PermanentError(reason, message)


def authentic(subject: str, report: StatusReport) -> StatusReport:
    """``report`` with its source taken from ``subject``; raises (a permanent error: acknowledged,
    never applied) if the subject's service does not own the object's status."""
    parsed = subjects.parse_sourced(subject, subjects.STATUS_PREFIX)
    if parsed is None:
        raise refuse(WRONG_SUBJECT, f"status report on {subject}: not a status report subject")
    source, (group, kind, namespace, name) = parsed
    target = report.object
    if (target.group, target.kind, target.namespace, target.name) != (group, kind, namespace, name):
        raise refuse(WRONG_SUBJECT, f"status report on {subject} is about another object: {target.display}")
    owner = status_owner(group, kind)
    if owner != source:
        raise refuse(
            NOT_OWNER,
            f"status report on {subject}: {source!r} does not own the status of {kind}.{group} "
            f"({owner or 'no service'} does)",
        )
    return report if report.source == source else report.model_copy(update={"source": source})
