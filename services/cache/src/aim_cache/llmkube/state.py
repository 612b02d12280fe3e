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
from datetime import UTC, datetime
from typing import Any, Literal

from aim_cache.llmkube import drift
from aimcore.api.bus.messages import ConditionReport
from aimcore.domain.units import format_bytes, format_duration
from aimcore.runtime import condition as cond
from aimcore.runtime.composer import rfc3339

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


def stamp(when: float) -> str:
    """A wall-clock time as status writes it (RFC 3339)."""
    return rfc3339(datetime.fromtimestamp(when, UTC))


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
    """The status fields and conditions for ``obs``. Fields set to None are removed from status.
    The first of these that applies decides the phase and the conditions: a failure, a fetch (or a
    verify round), a pending reason, a complete copy; else the Model waits to be fetched."""
    fields: dict[str, Any] = {
        "cacheKey": obs.cache_key,
        "stagedFiles": list(obs.staged_files) or None,
        "acceleratorReady": obs.accelerator[0],
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
    if obs.failure is not None:
        phase, own = _failed(obs.failure, cached, _available_note(obs))
    elif obs.fetching is not None:
        phase, own = _fetching(obs.fetching, cached, _available_note(obs))
    elif obs.pending is not None:
        phase, own = _pending(*obs.pending)
    elif cached is not None:
        phase, own = (
            READY,
            [
                cond(AVAILABLE, True, REASON_READY, f"{_ready_text(cached)}{_available_note(obs)}"),
                cond(PROGRESSING, False, REASON_COMPLETE),
                cond(DEGRADED, False, REASON_HEALTHY),
            ],
        )
    else:
        phase, own = (
            PENDING,
            [
                cond(AVAILABLE, False, REASON_NOT_STAGED, "not staged yet"),
                cond(PROGRESSING, True, PENDING, "waiting to be fetched"),
                cond(DEGRADED, False, REASON_HEALTHY),
            ],
        )
    fields["phase"] = phase
    return fields, conditions + own


def _available_note(obs: Observed) -> str:
    """Why no node can run the Model yet, said after ``Available``'s message."""
    ready, accel_message = obs.accelerator
    return f"; {accel_message}" if accel_message and not ready else ""


def _failed(failure: Failure, cached: Cached | None, note: str) -> tuple[str, list[ConditionReport]]:
    message = f"{failure.message} ({_retry_text(failure)})"
    progress_reason = REASON_NEEDS_FIX if failure.retry_in is None else REASON_RETRY
    if cached is not None:  # a refresh failed: the cached copy still serves
        available = cond(AVAILABLE, True, REASON_READY, f"{_serving(cached)}{note}")
    else:
        available = cond(AVAILABLE, False, failure.reason, failure.message)
    return READY if cached is not None else FAILED, [
        available,
        cond(PROGRESSING, False, progress_reason, message),
        cond(DEGRADED, True, failure.reason, message),
    ]


def _fetching(fetching: Fetching, cached: Cached | None, note: str) -> tuple[str, list[ConditionReport]]:
    verb = fetching.kind
    summary = fetching.summary or f"{verb} attempt {fetching.attempt} started"
    if fetching.waiting:
        reason, summary = REASON_WAITING_FOR_SLOT, f"waiting for a free {verb} slot"
    else:
        reason = {"download": "Downloading", "copy": "Copying", "verify": VERIFYING}[verb]
    if verb == "verify":  # a pvc:// source: the claim is read in place, never staged
        phase = READY if cached is not None else PENDING
    else:
        phase = DOWNLOADING if verb == "download" else COPYING
    if cached is None:
        not_yet = "not verified yet" if verb == "verify" else "not staged yet"
        available = cond(AVAILABLE, False, reason, not_yet)
    elif verb == "verify":
        available = cond(AVAILABLE, True, REASON_READY, f"{_ready_text(cached)}{note}")
    else:
        available = cond(
            AVAILABLE, True, REASON_READY, f"serving the cached copy until the refresh completes{note}"
        )
    return phase, [available, cond(PROGRESSING, True, reason, summary), cond(DEGRADED, False, REASON_HEALTHY)]


def _pending(reason: str, message: str) -> tuple[str, list[ConditionReport]]:
    return PENDING, [
        cond(AVAILABLE, False, reason, message),
        cond(PROGRESSING, True, reason, message),
        cond(DEGRADED, False, REASON_HEALTHY),
    ]
