"""Download progress as a status report on NATS: the status service merges it into the cache
object's status (coalesced, as ``progress=True`` allows). The legacy ``aim.silogen.ai``
AIMModelCache has no ``status.progress`` field, so it gets the condition only; an ``AIMArtifact``
also gets ``DownloadComplete`` and ``status.download`` (:mod:`.downloadstate`)."""

from __future__ import annotations

from aim_cache_jobs.downloader.downloadstate import (
    Attempt,
    Phase,
    download_complete,
    download_fields,
    reports_download,
)
from aim_cache_jobs.downloader.progress import Progress, RateMeter, progress_fields, summary
from aimcore.api.bus.messages import ConditionReport, ObjectRef, StatusReport
from aimcore.api.kinds import GROUP_LEGACY

SOURCE = "cache"
CONDITION = "DownloadReady"
LEGACY_GROUP = GROUP_LEGACY


def progress_report(
    obj: ObjectRef, uid: str | None, p: Progress, meter: RateMeter | None, *, now: float, attempt: Attempt
) -> StatusReport:
    """``p`` as the report an offer carries; ``attempt`` is the protocol the download is on."""
    reason = "Verifying" if p.phase in ("verifying", "done") else "Downloading"
    condition = ConditionReport(
        type=CONDITION, status="False", reason=reason, message=summary(p, meter, now=now)
    )
    fields = {} if obj.group == LEGACY_GROUP else {"progress": progress_fields(p, meter, now=now)}
    conditions = [condition]
    if reports_download(obj.group, obj.kind):
        phase = Phase.VERIFYING if reason == "Verifying" else Phase.DOWNLOADING
        conditions.append(download_complete(phase))
        fields["download"] = download_fields(phase, attempt)
    return StatusReport(
        object=obj, uid=uid, source=SOURCE, conditions=tuple(conditions), fields=fields, progress=True
    )
