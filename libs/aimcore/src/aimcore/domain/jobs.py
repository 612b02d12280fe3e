"""Reading the Kubernetes Jobs the services run - their state, when they ended, why they failed or
what their pod is waiting for - kept free of I/O and of what the Job does, so every service that runs
one (the discovery dry-run, the cache's model downloads) reports it the same way.

Failure messages are written for a status condition: they never quote env values, and log excerpts
are short and redacted (:func:`redact`, :func:`log_excerpt`). ``what`` names the Job's purpose in
every message ("discovery", "download") and ``container`` is the Job's main container, looked at
before any other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from aimcore.api.backoff import Backoff

__all__ = [
    "JOB_RETRY",
    "REASON_AUTH_ERROR",
    "REASON_IMAGE_NOT_FOUND",
    "REASON_IMAGE_PULL_AUTH_FAILURE",
    "REASON_IMAGE_PULL_BACK_OFF",
    "REASON_INVALID_IMAGE_REFERENCE",
    "REASON_JOB_BACKOFF_LIMIT_EXCEEDED",
    "REASON_JOB_DEADLINE_EXCEEDED",
    "REASON_JOB_EVICTED",
    "REASON_JOB_RUNNING",
    "REASON_PODS_PENDING",
    "REASON_POD_OOM_KILLED",
    "REASON_SECRET_NOT_FOUND",
    "REASON_SOURCE_NOT_FOUND",
    "REASON_STORAGE_FULL",
    "STATE_ACTIVE",
    "STATE_FAILED",
    "STATE_SUCCEEDED",
    "classify_failure",
    "finished_at",
    "job_state",
    "last_json_line",
    "log_excerpt",
    "pod_problem",
    "pod_progress",
    "redact",
]

# -- condition reasons (all known to aimcore.domain.status.rules.REASON_STATES) -------------------------

REASON_IMAGE_PULL_AUTH_FAILURE = "ImagePullAuthFailure"
REASON_IMAGE_NOT_FOUND = "ImageNotFound"
REASON_IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
REASON_INVALID_IMAGE_REFERENCE = "InvalidImageReference"
REASON_SECRET_NOT_FOUND = "SecretNotFound"
REASON_POD_OOM_KILLED = "PodOOMKilled"
REASON_AUTH_ERROR = "AuthError"
REASON_SOURCE_NOT_FOUND = "SourceNotFound"
REASON_STORAGE_FULL = "StorageFull"
REASON_JOB_DEADLINE_EXCEEDED = "JobDeadlineExceeded"
REASON_JOB_EVICTED = "JobEvicted"
REASON_JOB_BACKOFF_LIMIT_EXCEEDED = "JobBackoffLimitExceeded"
REASON_PODS_PENDING = "PodsPending"
REASON_JOB_RUNNING = "JobRunning"

# -- job states ----------------------------------------------------------------------------------

STATE_SUCCEEDED = "succeeded"
STATE_FAILED = "failed"
STATE_ACTIVE = "active"

DEFAULT_BACKOFF_LIMIT = 6
"""Kubernetes' ``spec.backoffLimit`` when a Job does not set one."""

# -- message hygiene -----------------------------------------------------------------------------

LOG_LINES = 3
LOG_LINE_LIMIT = 200

_REDACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"hf_[A-Za-z0-9]{10,}"), "***"),
    (re.compile(r"AKIA[0-9A-Z]{16}"), "***"),
    (re.compile(r"(?i)(token|secret|password|key)=\S+"), r"\1=***"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 ***"),
)

_AUTH_LOG = re.compile(
    r"\b401\b|unauthorized|invalid token|AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|gated repo",
    re.IGNORECASE,
)
_NOT_FOUND_LOG = re.compile(
    r"Repository Not Found|\b404\b|NoSuchKey|NoSuchBucket|RepositoryNotFoundError", re.IGNORECASE
)
_STORAGE_FULL_LOG = re.compile(r"No space left on device", re.IGNORECASE)

_PULL_WAITING = frozenset({"ErrImagePull", "ImagePullBackOff"})
_PULL_AUTH = ("unauthorized", "authentication required", "denied")
_PULL_NOT_FOUND = ("not found", "manifest unknown")

_D = TypeVar("_D")


# ---------------------------------------------------------------------------------------------
# Job state
# ---------------------------------------------------------------------------------------------


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = obj.get("status") or {}
    return [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]


def _true_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in _conditions(obj):
        if c.get("type") == type_ and c.get("status") == "True":
            return c
    return None


def _int(value: Any, default: _D) -> int | _D:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def job_state(job: Mapping[str, Any]) -> str:
    """:data:`STATE_SUCCEEDED`, :data:`STATE_FAILED` or :data:`STATE_ACTIVE`."""
    if _true_condition(job, "Complete") is not None:
        return STATE_SUCCEEDED
    if _true_condition(job, "Failed") is not None:
        return STATE_FAILED
    status = job.get("status") or {}
    if _int(status.get("succeeded"), 0) >= 1:
        return STATE_SUCCEEDED
    backoff_limit = _int((job.get("spec") or {}).get("backoffLimit"), DEFAULT_BACKOFF_LIMIT)
    if _int(status.get("failed"), 0) > backoff_limit:
        return STATE_FAILED
    return STATE_ACTIVE


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def finished_at(job: Mapping[str, Any]) -> datetime | None:
    """When the Job finished: ``status.completionTime``, else the ``lastTransitionTime`` of its true
    ``Complete``/``Failed`` condition; ``None`` while it runs."""
    done = _parse_time((job.get("status") or {}).get("completionTime"))
    if done is not None:
        return done
    for type_ in ("Complete", "Failed"):
        cond = _true_condition(job, type_)
        if cond is not None:
            when = _parse_time(cond.get("lastTransitionTime"))
            if when is not None:
                return when
    return None


JOB_RETRY = Backoff(base=60.0, cap=3600.0)
"""A failed Job's next attempt waits 60 s doubling to an hour (0 before any failure). The delay of an
object's attempt is computed again on every reconcile from when the Job ended, so callers key the
jitter by the object (``jitter=uid``): the next attempt's time in its status stays put."""


# ---------------------------------------------------------------------------------------------
# Logs
# ---------------------------------------------------------------------------------------------


def redact(text: str) -> str:
    """``text`` with anything that looks like a credential replaced by ``***``."""
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


def _clip(text: str, limit: int = LOG_LINE_LIMIT) -> str:
    """``text`` on one line, redacted, cut to ``limit`` characters (the last one an ellipsis)."""
    text = redact(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def log_excerpt(log_tail: str | None) -> str:
    """The last (at most 3) non-blank lines of ``log_tail``, redacted, each cut to 200 characters,
    joined with `` | ``; ``""`` without a log."""
    if not log_tail:
        return ""
    lines = [line for line in log_tail.splitlines() if line.strip()]
    return " | ".join(_clip(line) for line in lines[-LOG_LINES:])


def last_json_line(log: str | None) -> dict[str, Any] | None:
    """The last line of ``log`` that is, on its own, a JSON object; lines that are blank, not JSON or
    JSON but not an object (wherever they stand) are passed over. ``None`` when there is none."""
    for line in reversed((log or "").splitlines()):
        text = line.strip()
        if not text.startswith("{"):
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _with_log(message: str, log_tail: str | None) -> str:
    excerpt = log_excerpt(log_tail)
    return f"{message}; last log lines: {excerpt}" if excerpt else message


# ---------------------------------------------------------------------------------------------
# Pods
# ---------------------------------------------------------------------------------------------


def _pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "<unnamed>")


def _newest_first(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(
        pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True
    )


def _container_statuses(pod: Mapping[str, Any], container: str) -> list[Mapping[str, Any]]:
    """The pod's container statuses, ``container`` first, then the others, then init containers."""
    status = pod.get("status") or {}
    main = [s for s in status.get("containerStatuses") or [] if isinstance(s, Mapping)]
    main.sort(key=lambda s: s.get("name") != container)
    init = [s for s in status.get("initContainerStatuses") or [] if isinstance(s, Mapping)]
    return main + init


def _waiting(cs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    waiting = (cs.get("state") or {}).get("waiting")
    return waiting if isinstance(waiting, Mapping) else None


def _terminated(cs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for key in ("state", "lastState"):
        term = (cs.get(key) or {}).get("terminated")
        if isinstance(term, Mapping):
            return term
    return None


def _image_problem(pod: Mapping[str, Any], what: str, container: str) -> tuple[str, str] | None:
    """A failed image pull or an unusable container config, from the pod's waiting containers."""
    for cs in _container_statuses(pod, container):
        waiting = _waiting(cs)
        if waiting is None:
            continue
        reason = str(waiting.get("reason") or "")
        detail = _clip(str(waiting.get("message") or reason))
        # Classified by the whole message: containerd says "not found" at the end of a long one.
        lowered = str(waiting.get("message") or reason).lower()
        if reason in _PULL_WAITING:
            if any(word in lowered for word in _PULL_AUTH):
                return REASON_IMAGE_PULL_AUTH_FAILURE, f"{what} image pull not authorized: {detail}"
            if any(word in lowered for word in _PULL_NOT_FOUND):
                return REASON_IMAGE_NOT_FOUND, f"{what} image not found: {detail}"
            return REASON_IMAGE_PULL_BACK_OFF, f"cannot pull the {what} image: {detail}"
        if reason == "InvalidImageName":
            return REASON_INVALID_IMAGE_REFERENCE, f"invalid {what} image: {detail}"
        if reason == "CreateContainerConfigError" and "secret" in lowered:
            return REASON_SECRET_NOT_FOUND, f"{what} pod {_pod_name(pod)} cannot start: {detail}"
    return None


def _oom(pod: Mapping[str, Any], what: str, container: str) -> tuple[str, str] | None:
    for cs in _container_statuses(pod, container):
        term = _terminated(cs)
        if term is not None and term.get("reason") == "OOMKilled":
            return (
                REASON_POD_OOM_KILLED,
                f"{what} container {cs.get('name', container)} in pod {_pod_name(pod)} "
                "was killed for running out of memory (OOMKilled)",
            )
    return None


def pod_problem(pod: Mapping[str, Any], *, what: str, container: str) -> tuple[str, str] | None:
    """``(reason, message)`` for what keeps one pod from running, as :func:`classify_failure` words
    it: a failed image pull (auth, not found, back-off), an invalid image name, a missing secret,
    else a container killed for running out of memory; ``None`` when the pod shows none of these.
    Also used for pods no Job owns, such as the inference server's."""
    return _image_problem(pod, what, container) or _oom(pod, what, container)


def _termination_summary(pods: Sequence[Mapping[str, Any]], what: str, container: str) -> str:
    for pod in pods:
        for cs in _container_statuses(pod, container):
            term = _terminated(cs)
            if term is None:
                continue
            text = f"{what} container exited with code {term.get('exitCode', '?')}"
            if term.get("reason"):
                text += f" ({_clip(str(term['reason']), 60)})"
            if term.get("message"):
                text += f": {_clip(str(term['message']))}"
            return text
    return f"{what} job failed"


def _deadline_message(job: Mapping[str, Any], what: str, default_deadline: int | None) -> str:
    deadline = _int((job.get("spec") or {}).get("activeDeadlineSeconds"), default_deadline)
    if deadline is None:
        return f"{what} did not finish within its deadline"
    return f"{what} did not finish within {deadline}s"


# ---------------------------------------------------------------------------------------------
# Failure classification and progress
# ---------------------------------------------------------------------------------------------


def classify_failure(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    log_tail: str | None,
    *,
    what: str,
    container: str,
    default_deadline: int | None = None,
) -> tuple[str, str]:
    """``(reason, message)`` for a failed Job, most specific cause first: image pull, missing
    secret, OOM kill, what the log says (auth, not found, disk full), the Job's deadline
    (``spec.activeDeadlineSeconds``, else ``default_deadline``), eviction, else the container's
    exit. Messages never quote env values and show at most the last 3 log lines, each cut to 200
    characters, with credential-like text redacted."""
    ordered = _newest_first(pods)
    for pod in ordered:
        found = _image_problem(pod, what, container) or _oom(pod, what, container)
        if found is not None:
            return found

    if log_tail:
        if _AUTH_LOG.search(log_tail):
            message = f"{what} could not authenticate to the model source"
            return REASON_AUTH_ERROR, _with_log(message, log_tail)
        if _NOT_FOUND_LOG.search(log_tail):
            return REASON_SOURCE_NOT_FOUND, _with_log(f"{what} could not find the model source", log_tail)
        if _STORAGE_FULL_LOG.search(log_tail):
            return REASON_STORAGE_FULL, _with_log(f"{what} ran out of disk space", log_tail)

    failed = _true_condition(job, "Failed")
    if failed is not None and failed.get("reason") == "DeadlineExceeded":
        message = _deadline_message(job, what, default_deadline)
        return REASON_JOB_DEADLINE_EXCEEDED, _with_log(message, log_tail)

    for pod in ordered:
        status = pod.get("status") or {}
        if status.get("reason") == "Evicted":
            detail = _clip(str(status.get("message") or "no details"))
            return REASON_JOB_EVICTED, f"{what} pod {_pod_name(pod)} was evicted: {detail}"

    summary = _termination_summary(ordered, what, container)
    return REASON_JOB_BACKOFF_LIMIT_EXCEEDED, _with_log(summary, log_tail)


def _scheduling_message(pod: Mapping[str, Any]) -> str:
    for c in _conditions(pod):
        if c.get("type") == "PodScheduled" and c.get("message"):
            return _clip(str(c["message"]))
    return f"pod {_pod_name(pod)} is not scheduled yet"


def pod_progress(pods: Sequence[Mapping[str, Any]], *, what: str, container: str) -> tuple[str, str] | None:
    """``(reason, message)`` describing the newest pod of a still-active Job; ``None`` without pods.
    An image pull failure or a missing secret is reported as in :func:`classify_failure` (the Job
    would otherwise sit until its deadline)."""
    if not pods:
        return None
    pod = _newest_first(pods)[0]
    problem = _image_problem(pod, what, container)
    if problem is not None:
        return problem
    name = _pod_name(pod)
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase == "Pending" and not (pod.get("spec") or {}).get("nodeName"):
        return REASON_PODS_PENDING, f"waiting for a node: {_scheduling_message(pod)}"
    for cs in _container_statuses(pod, container):
        waiting = _waiting(cs)
        if waiting is not None:
            reason = _clip(str(waiting.get("reason") or "waiting"), 60)
            return REASON_JOB_RUNNING, f"{what} pod {name} starting ({reason})"
    if phase == "Running":
        return REASON_JOB_RUNNING, f"{what} pod {name} running"
    if phase == "Pending":
        return REASON_JOB_RUNNING, f"{what} pod {name} starting"
    return REASON_JOB_RUNNING, f"{what} pod {name} {str(phase or 'unknown').lower()}"


def retry_note(attempt: int, due: float) -> str:
    """``attempt N failed; next attempt at <UTC time>``: an absolute time, never a countdown, so a
    condition message stays the same across reconciles (a countdown would change every second and
    each status write would trigger the next reconcile, and the next write)."""
    when = datetime.fromtimestamp(due, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"attempt {attempt} failed; next attempt at {when}"
