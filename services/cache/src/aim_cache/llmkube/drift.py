"""Upstream-drift detection for LLMKube ``Model``s (``refreshPolicy`` and the ``SourceDrifted`` condition).

A cached model is revalidated on a cadence (``status.lastRevalidated``): the upstream is probed
(HTTP HEAD headers, or ``stat`` for a local file), the fingerprint compared with the one recorded
in status, and the outcome mapped to an action (flag only under ``IfNotPresent``, re-fetch under
``OnChange``) and to the ``SourceDrifted`` condition. What we do differently from the original:

* local sources compare mtime as well as size (the original read mtime and ignored it, so an
  in-place rewrite of the same length went unnoticed); status has no mtime field, so it travels in
  ``sourceETag`` as ``local-mtime=<float>`` (see :func:`status_fields` / :func:`from_status`);
* Hugging Face's ``X-Linked-Etag``/``X-Linked-Size`` win over ``ETag``/``Content-Length`` when a
  HEAD is not redirected (those describe the LFS blob; the plain headers describe the redirect);
  weak-ETag prefixes and quotes are stripped the same way on both sides, so a CDN switching between
  weak and strong validators is not reported as a change;
* an indeterminate probe (network error, no validators) never counts as drift, and a first
  fingerprint (e.g. after an operator upgrade) is only a baseline: neither triggers a re-fetch.

Everything here is pure except :func:`local_fingerprint` (one ``os.stat``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

Outcome = Literal["skipped", "indeterminate", "baseline", "in-sync", "drifted"]
Action = Literal["none", "flag", "refetch"]

CONDITION_TYPE = "SourceDrifted"
REASON_DRIFTED = "UpstreamChanged"
REASON_IN_SYNC = "InSync"
ON_CHANGE = "OnChange"
MTIME_PREFIX = "local-mtime="


@dataclass(frozen=True)
class Fingerprint:
    """What identifies the upstream bytes: an HTTP ETag, a length, and (local files) an mtime."""

    etag: str | None = None
    length: int | None = None
    mtime: float | None = None

    @property
    def empty(self) -> bool:
        return self.etag is None and self.length is None and self.mtime is None


def due(last_revalidated: datetime | None, now: datetime, interval: timedelta) -> bool:
    """Whether the revalidation gate is open: never revalidated, or ``interval`` has passed.

    A timestamp in the future (clock skew between replicas, a hand-edited status) opens the gate
    too, rather than stalling revalidation until the clock catches up. Naive datetimes are UTC.
    """
    if last_revalidated is None:
        return True
    elapsed = _aware(now) - _aware(last_revalidated)
    return elapsed >= interval or elapsed < timedelta(0)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def compare(recorded: Fingerprint | None, probed: Fingerprint | None) -> Outcome:
    """Compare the recorded fingerprint with a fresh probe.

    No usable probe → ``indeterminate``; nothing recorded, or nothing the two have in common (the
    server stopped sending an ETag, say) → ``baseline``; ETags when both have one, else length
    (and mtime when both have one) → ``in-sync`` or ``drifted``.
    """
    if probed is None or probed.empty:
        return "indeterminate"
    if recorded is None or recorded.empty:
        return "baseline"
    if recorded.etag is not None and probed.etag is not None:
        return "in-sync" if recorded.etag == probed.etag else "drifted"
    compared = False
    if recorded.length is not None and probed.length is not None:
        if recorded.length != probed.length:
            return "drifted"
        compared = True
    if recorded.mtime is not None and probed.mtime is not None:
        if recorded.mtime != probed.mtime:
            return "drifted"
        compared = True
    return "in-sync" if compared else "baseline"


def describe(recorded: Fingerprint | None, probed: Fingerprint | None) -> str:
    """A short human description of what differs (or what was recorded), for condition messages."""
    if probed is None or probed.empty:
        return "upstream gave no ETag or length"
    if recorded is None or recorded.empty:
        return f"recorded {_show(probed)}"
    changes: list[str] = []
    if recorded.etag is not None and probed.etag is not None:
        if recorded.etag != probed.etag:
            changes.append(f"ETag {recorded.etag} -> {probed.etag}")
    else:
        if recorded.length is not None and probed.length is not None and recorded.length != probed.length:
            changes.append(f"size {recorded.length} -> {probed.length} bytes")
        if recorded.mtime is not None and probed.mtime is not None and recorded.mtime != probed.mtime:
            changes.append(f"mtime {_stamp(recorded.mtime)} -> {_stamp(probed.mtime)}")
    return "; ".join(changes) if changes else _show(probed)


def shown(fp: Fingerprint) -> str:
    """``fp`` as condition messages name it."""
    return describe(None, fp).removeprefix("recorded ")


def _stamp(mtime: float) -> str:
    return datetime.fromtimestamp(mtime, UTC).isoformat().replace("+00:00", "Z")


def _show(fp: Fingerprint) -> str:
    parts = []
    if fp.etag is not None:
        parts.append(f"ETag {fp.etag}")
    if fp.length is not None:
        parts.append(f"size {fp.length} bytes")
    if fp.mtime is not None:
        parts.append(f"mtime {_stamp(fp.mtime)}")
    return ", ".join(parts)


def local_fingerprint(path: str | os.PathLike[str]) -> Fingerprint:
    """Size and mtime of a local file (follows symlinks); raises ``OSError`` if it cannot be stat'ed."""
    st = os.stat(path)
    return Fingerprint(length=st.st_size, mtime=st.st_mtime)


def normalize_etag(value: str | None) -> str | None:
    """``W/"abc"`` and ``"abc"`` both become ``abc``; empty → None."""
    if value is None:
        return None
    tag = value.strip()
    if tag[:2] in ("W/", "w/"):
        tag = tag[2:].strip()
    if len(tag) >= 2 and tag[0] == '"' and tag[-1] == '"':
        tag = tag[1:-1]
    return tag or None


def _parse_length(value: str | None) -> int | None:
    if value is None:
        return None
    values = {v.strip() for v in value.split(",")}
    if len(values) != 1:
        return None  # conflicting Content-Length values: trust none
    (text,) = values
    if not text.isdigit():
        return None
    return int(text)


def http_fingerprint(headers: Mapping[str, str]) -> Fingerprint:
    """The fingerprint in a HEAD response's headers (names case-insensitive).

    ``X-Linked-Etag``/``X-Linked-Size`` (Hugging Face LFS, on the un-followed redirect) take
    precedence over ``ETag``/``Content-Length``.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    etag = normalize_etag(lower.get("x-linked-etag")) or normalize_etag(lower.get("etag"))
    length = _parse_length(lower.get("x-linked-size"))
    if length is None:
        length = _parse_length(lower.get("content-length"))
    return Fingerprint(etag=etag, length=length)


def action(outcome: Outcome, policy: str | None) -> Action:
    """What to do: only drift acts; ``OnChange`` re-fetches, anything else (``IfNotPresent``) flags."""
    if outcome != "drifted":
        return "none"
    return "refetch" if policy == ON_CHANGE else "flag"


def advances_last_revalidated(outcome: Outcome) -> bool:
    """Whether ``status.lastRevalidated`` moves: not when skipped or indeterminate (retry next time)."""
    return outcome in ("baseline", "in-sync", "drifted")


def drift_condition(outcome: Outcome, detail: str) -> tuple[str, str, str] | None:
    """``(status, reason, message)`` for the ``SourceDrifted`` condition, or None to leave it as is."""
    suffix = f" ({detail})" if detail else ""
    if outcome == "drifted":
        return ("True", REASON_DRIFTED, f"upstream source changed since it was cached{suffix}")
    if outcome == "in-sync":
        return ("False", REASON_IN_SYNC, f"cached copy matches the upstream source{suffix}")
    if outcome == "baseline":
        return ("False", REASON_IN_SYNC, f"recorded the upstream fingerprint as the baseline{suffix}")
    return None


def status_fields(fp: Fingerprint) -> dict[str, Any]:
    """The status fields (``sourceETag``, ``sourceContentLength``) that record ``fp``.

    Status has no mtime field: a local file's mtime is stored in ``sourceETag`` with a prefix no
    HTTP ETag we record carries (HTTP ETags are recorded without quotes but never with this prefix
    in practice).
    """
    etag = fp.etag
    if etag is None and fp.mtime is not None:
        etag = f"{MTIME_PREFIX}{fp.mtime!r}"
    return {"sourceETag": etag, "sourceContentLength": fp.length}


def from_status(status: Mapping[str, Any] | None) -> Fingerprint | None:
    """The recorded fingerprint in a wire-format ``status``, or None if nothing was recorded."""
    if not status:
        return None
    raw_etag = status.get("sourceETag")
    raw_length = status.get("sourceContentLength")
    etag = raw_etag if isinstance(raw_etag, str) and raw_etag else None
    length = raw_length if isinstance(raw_length, int) and not isinstance(raw_length, bool) else None
    mtime: float | None = None
    if etag is not None and etag.startswith(MTIME_PREFIX):
        try:
            mtime = float(etag[len(MTIME_PREFIX) :])
        except ValueError:
            mtime = None
        if mtime is not None and not math.isfinite(mtime):
            mtime = None
        etag = None
    fp = Fingerprint(etag=etag, length=length, mtime=mtime)
    return None if fp.empty else fp
