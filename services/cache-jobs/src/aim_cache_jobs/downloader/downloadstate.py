"""What an ``AIMArtifact`` (the released original's name of the model cache) says about its download
besides what every model cache says: ``status.download`` (the protocol of the current attempt, its
number in the protocol sequence, the sequence, a short message) and the condition
``DownloadComplete`` (the released original's texts: Downloading → Verifying → Verified, or why it
failed). Pure: the download Job's progress offers (:mod:`.report`) and the cache service's verdict
both build them here, so the two never disagree. ``AIMModelCache`` gets neither: its schema stays
the seed's.

Which protocols a download tries, in which order, is :mod:`.protocols`; an :class:`Attempt` is one
of them, and the download Job's last line records the one it ended on (:meth:`Attempt.record`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import MODEL_CACHE_NAMES
from aimcore.runtime import condition as cond

DOWNLOAD_COMPLETE = "DownloadComplete"
DOWNLOADING = "Downloading"
VERIFYING = "Verifying"
VERIFIED = "Verified"
VERIFICATION_FAILED = "VerificationFailed"
COMPLETE = "Complete"
FAILED = "Failed"
NOT_AVAILABLE = "N/A"  # progress.displayPercentage of a failed download


class Phase(enum.StrEnum):
    """Where a download is, as ``DownloadComplete`` tells it apart."""

    DOWNLOADING = "downloading"  # bytes still coming
    VERIFYING = "verifying"  # every byte in, being verified (the original: progress at 100 %)
    SUCCEEDED = "succeeded"
    FAILED = "failed"


def reports_download(group: str, kind: str) -> bool:
    """Whether a model cache of this kind has ``status.download`` and ``DownloadComplete``: the
    released name's kind (``AIMArtifact``), not the seeds' (``AIMModelCache``)."""
    names = MODEL_CACHE_NAMES.get(group)
    return names is not None and names.released != names.seeds and kind == names.released.kind


def download_complete(phase: Phase, *, bytes_in: bool = False) -> ConditionReport:
    """``DownloadComplete`` for ``phase``; a failure after every byte was in (``bytes_in``: the
    download had reached verification, or verification itself failed) is ``VerificationFailed``."""
    if phase is Phase.SUCCEEDED:
        return cond(DOWNLOAD_COMPLETE, True, VERIFIED, "Download and verification complete")
    if phase is Phase.VERIFYING:
        return cond(DOWNLOAD_COMPLETE, True, VERIFYING, "Download complete, verifying integrity...")
    if phase is Phase.FAILED:
        if bytes_in:
            return cond(
                DOWNLOAD_COMPLETE, False, VERIFICATION_FAILED, "Download completed but verification failed"
            )
        return cond(DOWNLOAD_COMPLETE, False, DOWNLOADING, "Download failed before completion")
    return cond(DOWNLOAD_COMPLETE, False, DOWNLOADING, "Download in progress")


@dataclass(frozen=True)
class Attempt:
    """One attempt of the protocol sequence: ``protocol``, its 1-based place in ``sequence``."""

    protocol: str
    number: int
    sequence: tuple[str, ...]

    def fields(self, message: str) -> dict[str, Any]:
        """``status.download`` with ``message`` (``Downloading``, ``Verifying``, ``Complete``,
        ``Failed``)."""
        return {
            "protocol": self.protocol,
            "attempt": self.number,
            "totalAttempts": len(self.sequence),
            "protocolSequence": ",".join(self.sequence),
            "message": message,
        }

    def record(self) -> dict[str, Any]:
        """The attempt in the download Job's result line (read back by :meth:`from_record`)."""
        sequence = ",".join(self.sequence)
        return {"protocol": self.protocol, "attempt": self.number, "protocolSequence": sequence}

    @classmethod
    def from_record(cls, record: Any) -> Attempt | None:
        """The attempt a result line records; ``None`` when it records none, or nothing sane."""
        if not isinstance(record, dict):
            return None
        protocol, number, sequence = (record.get(k) for k in ("protocol", "attempt", "protocolSequence"))
        if not (isinstance(protocol, str) and isinstance(number, int) and isinstance(sequence, str)):
            return None
        names = tuple(sequence.split(","))
        if not 1 <= number <= len(names) or names[number - 1] != protocol:
            return None
        return cls(protocol, number, names)


_MESSAGES = {
    Phase.DOWNLOADING: DOWNLOADING,
    Phase.VERIFYING: VERIFYING,
    Phase.SUCCEEDED: COMPLETE,
    Phase.FAILED: FAILED,
}


def download_fields(phase: Phase, attempt: Attempt) -> dict[str, Any]:
    """``status.download`` for ``phase``."""
    return attempt.fields(_MESSAGES[phase])
