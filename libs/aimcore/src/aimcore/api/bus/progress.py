"""Download progress from Jobs, relayed by the cache service, so a Job can speak only for its own
object (docs/design.md#security).

A download Job runs in the user's namespace, where anyone who can read the Job can read its
environment; its bus credential (role ``download``) therefore may do nothing but *offer* progress
on ``aim.progress.{g}.{k}.{ns}.{name}``, a subject no stream records. Each offer carries a token, an
HMAC of the object's identity (group, kind, namespace, name, uid) under a key only the cache
service holds (derived from its own NKey seed), given to the Job in ``AIM_PROGRESS_TOKEN``. The
cache service (:func:`vet`) accepts an offer only when the token matches the object it names and
the report is progress and nothing else (the ``DownloadReady`` condition as ``Downloading`` or
``Verifying``, an ``AIMArtifact``'s ``DownloadComplete`` while under way, the ``progress`` and
``download`` fields), then publishes it as its own status report. A leaked token
lets its holder fake the progress of that one object, which the namespace's users own anyway.
"""

from __future__ import annotations

import hashlib
import hmac

from aimcore.api.bus import subjects
from aimcore.api.bus.auth import PROGRESS_PREFIX
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.errors import PermanentError
from aimcore.api.kinds import by_kind

TOKEN_HEADER = "Aim-Progress-Token"
SOURCE = "cache"
CONDITION = "DownloadReady"
REASONS = frozenset({"Downloading", "Verifying"})
# what an offer may say: DownloadReady while under way, and an AIMArtifact's DownloadComplete (the
# released original's: False/Downloading, then True/Verifying once every byte is in)
OFFERED = frozenset(
    {(CONDITION, "False", reason) for reason in REASONS}
    | {("DownloadComplete", "False", "Downloading"), ("DownloadComplete", "True", "Verifying")}
)
FIELDS = frozenset({"progress", "download"})
REJECTED = "ProgressRejected"


def subject(obj: ObjectRef) -> str:
    ref = by_kind(obj.group, obj.kind)
    return f"{PROGRESS_PREFIX}.{subjects.object_tokens(ref, obj.namespace, obj.name)}"


def key_from_seed(seed: str) -> bytes:
    """The cache service's token key: its seed, hashed under a purpose label (never the seed)."""
    return hashlib.sha256(b"aim-progress-token/v1\0" + seed.strip().encode()).digest()


def token(key: bytes, obj: ObjectRef, uid: str | None) -> str:
    identity = "\0".join((obj.group, obj.kind, obj.namespace or "", obj.name, uid or ""))
    return hmac.new(key, identity.encode(), hashlib.sha256).hexdigest()


def vet(key: bytes, offered_on: str, body: bytes, offered_token: str | None) -> StatusReport:
    """The offered report if it may be relayed; :class:`PermanentError` (reason
    ``ProgressRejected``) naming why not."""
    try:
        report = StatusReport.model_validate_json(body)
    except ValueError as exc:
        raise PermanentError(REJECTED, f"unreadable progress offer on {offered_on}") from exc
    try:
        expected_subject = subject(report.object)
    except KeyError:
        raise PermanentError(REJECTED, f"progress offer for an unknown kind on {offered_on}") from None
    if offered_on != expected_subject:
        raise PermanentError(REJECTED, f"progress offer on {offered_on} names another object")
    if not offered_token or not hmac.compare_digest(offered_token, token(key, report.object, report.uid)):
        raise PermanentError(REJECTED, f"progress offer on {offered_on} has no valid token")
    if not report.progress or report.source != SOURCE:
        raise PermanentError(REJECTED, f"offer on {offered_on} is not a progress report")
    if any((c.type, c.status, c.reason) not in OFFERED for c in report.conditions):
        raise PermanentError(REJECTED, f"progress offer on {offered_on} reports other conditions")
    if set(report.fields) - FIELDS:
        raise PermanentError(REJECTED, f"progress offer on {offered_on} sets other status fields")
    return report
