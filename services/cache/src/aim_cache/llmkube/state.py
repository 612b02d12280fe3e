"""What a Model's status says, as a pure function of what the reconciler observed.

The reconciler (:mod:`aim_cache.llmkube.reconciler`) gathers observations (is a complete copy on
disk, is a fetch running or waiting to retry, what did the last probe of the upstream say, can any
node run it); :func:`compose` turns them into LLMKube's vocabulary: ``phase``
(Pending|Downloading|Copying|Ready|Failed), the ``Available``/``Progressing``/``Degraded``/
``SourceDrifted`` conditions, and the status fields. Keeping this pure keeps the wording and the
precedence rules (a failure beats a fetch beats waiting beats ready) testable without servers.

Unlike the original, ``Ready`` always means the bytes are on disk and verified: a remote source is
downloaded by the cache service before the model turns Ready, never left to a pod's init container.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aim_cache.llmkube import drift
from aimcore.api.bus.messages import ConditionReport
from aimcore.domain.units import format_bytes, format_duration
from aimcore.runtime import condition as cond

PENDING = "Pending"
DOWNLOADING = "Downloading"
COPYING = "Copying"
READY = "Ready"
FAILED = "Failed"

AVAILABLE = "Available"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"

REASON_READY = "ModelReady"
REASON_COMPLETE = "Complete"
REASON_HEALTHY = "Healthy"
REASON_WAITING_FOR_SLOT = "WaitingForDownloadSlot"
REASON_RETRY = "RetryScheduled"
REASON_NEEDS_FIX = "WaitingForSpecChange"
REASON_NOT_STAGED = "NotStaged"
INTEGRITY_CHECK_FAILED = "IntegrityCheckFailed"
VERIFYING = "Verifying"


@dataclass(frozen=True)
class Cached:
    """A complete, verified copy on disk."""

    path: str
    size: int
    sha256: str | None
    verified: bool  # spec.sha256 was given and matched
    completed_at: str | None  # RFC 3339
    mounted: str | None = None  # pvc:// sources: how the workload reaches the file (nothing is staged)


@dataclass(frozen=True)
class Fetching:
    kind: Literal["download", "copy", "verify"]  # verify: a pvc:// source's verify Job
    waiting: bool
    summary: str
    attempt: int


@dataclass(frozen=True)
class Failure:
    reason: str
    message: str
    retry_in: float | None = None  # None: retrying will not help until the spec changes


@dataclass(frozen=True)
class Observed:
    cache_key: str | None = None
    staged_files: tuple[str, ...] = ()
    cached: Cached | None = None
    fetching: Fetching | None = None
    failure: Failure | None = None
    pending: tuple[str, str] | None = None  # (reason, message): e.g. PVCNotBound
    accelerator: tuple[bool, str] = (True, "")
    gguf: dict[str, Any] | None = None
    fingerprint: drift.Fingerprint | None = None
    drift: tuple[str, str, str] | None = None  # SourceDrifted (status, reason, message)
    last_revalidated: str | None = None


def _retry_text(failure: Failure) -> str:
    if failure.retry_in is None:
        return "fix the spec (or the operator's policy) to retry"
    return f"next attempt in {format_duration(failure.retry_in)}"


def _serving(cached: Cached) -> str:
    return (
        f"{cached.mounted} (last verified)" if cached.mounted else f"serving the cached copy at {cached.path}"
    )


def _ready_text(cached: Cached) -> str:
    checked = "sha256 verified against spec.sha256" if cached.verified else "sha256 recorded"
    where = cached.mounted or f"staged at {cached.path}"
    return f"{where} ({format_bytes(cached.size)}, {checked})"


def compose(obs: Observed) -> tuple[dict[str, Any], list[ConditionReport]]:
    """The status fields and conditions for ``obs``. Fields set to None are removed from status."""
    ready, accel_message = obs.accelerator
    fields: dict[str, Any] = {
        "cacheKey": obs.cache_key,
        "stagedFiles": list(obs.staged_files) or None,
        "acceleratorReady": ready,
        "gguf": obs.gguf or None,
        "lastRevalidated": obs.last_revalidated,
        **drift.status_fields(obs.fingerprint or drift.Fingerprint()),
        "path": None,
        "size": None,
        "sha256": None,
        "lastUpdated": None,
    }
    cached = obs.cached
    if cached is not None:
        fields |= {
            "path": cached.path,
            "size": format_bytes(cached.size),
            "sha256": cached.sha256,
            "lastUpdated": cached.completed_at,
        }
    conditions: list[ConditionReport] = []
    if obs.drift is not None:
        status, reason, message = obs.drift
        conditions.append(
            ConditionReport(type=drift.CONDITION_TYPE, status=status, reason=reason, message=message)
        )
    available_note = f"; {accel_message}" if accel_message and not ready else ""

    if obs.failure is not None:
        failure = obs.failure
        message = f"{failure.message} ({_retry_text(failure)})"
        progress_reason = REASON_NEEDS_FIX if failure.retry_in is None else REASON_RETRY
        if cached is not None:  # a refresh failed: the cached copy still serves
            fields["phase"] = READY
            conditions += [
                cond(AVAILABLE, True, REASON_READY, f"{_serving(cached)}{available_note}"),
                cond(PROGRESSING, False, progress_reason, message),
                cond(DEGRADED, True, failure.reason, message),
            ]
        else:
            fields["phase"] = FAILED
            conditions += [
                cond(AVAILABLE, False, failure.reason, failure.message),
                cond(PROGRESSING, False, progress_reason, message),
                cond(DEGRADED, True, failure.reason, message),
            ]
        return fields, conditions

    if obs.fetching is not None:
        fetching = obs.fetching
        verb = fetching.kind
        summary = fetching.summary or f"{verb} attempt {fetching.attempt} started"
        if fetching.waiting:
            reason, summary = REASON_WAITING_FOR_SLOT, f"waiting for a free {verb} slot"
        else:
            reason = {"download": "Downloading", "copy": "Copying", "verify": VERIFYING}[verb]
        if verb == "verify":  # a pvc:// source: the claim is read in place, never staged
            fields["phase"] = READY if cached is not None else PENDING
        else:
            fields["phase"] = DOWNLOADING if verb == "download" else COPYING
        if cached is None:
            available = cond(
                AVAILABLE, False, reason, "not verified yet" if verb == "verify" else "not staged yet"
            )
        elif verb == "verify":
            available = cond(AVAILABLE, True, REASON_READY, f"{_ready_text(cached)}{available_note}")
        else:
            available = cond(
                AVAILABLE,
                True,
                REASON_READY,
                f"serving the cached copy until the refresh completes{available_note}",
            )
        conditions += [
            available,
            cond(PROGRESSING, True, reason, summary),
            cond(DEGRADED, False, REASON_HEALTHY),
        ]
        return fields, conditions

    if obs.pending is not None:
        reason, message = obs.pending
        fields["phase"] = PENDING
        conditions += [
            cond(AVAILABLE, False, reason, message),
            cond(PROGRESSING, True, reason, message),
            cond(DEGRADED, False, REASON_HEALTHY),
        ]
        return fields, conditions

    if cached is not None:
        fields["phase"] = READY
        conditions += [
            cond(AVAILABLE, True, REASON_READY, f"{_ready_text(cached)}{available_note}"),
            cond(PROGRESSING, False, REASON_COMPLETE),
            cond(DEGRADED, False, REASON_HEALTHY),
        ]
        return fields, conditions

    fields["phase"] = PENDING
    conditions += [
        cond(AVAILABLE, False, REASON_NOT_STAGED, "not staged yet"),
        cond(PROGRESSING, True, PENDING, "waiting to be fetched"),
        cond(DEGRADED, False, REASON_HEALTHY),
    ]
    return fields, conditions
