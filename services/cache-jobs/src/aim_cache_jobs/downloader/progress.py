"""Download progress as users see it: the wire dict of ``status.progress``, the one-line summary
shown in condition messages and logs, and a rate meter over a sliding window (so the ETA follows
the current speed, not the average since the start). Pure: time is always passed in."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from aimcore.domain.units import format_bytes, format_duration, format_rate

PHASES = ("listing", "downloading", "verifying", "done")


@dataclass(frozen=True)
class Progress:
    downloaded_bytes: int
    total_bytes: int
    files_done: int
    files_total: int
    phase: str  # "listing" | "downloading" | "verifying" | "done"


class RateMeter:
    """Bytes per second over the last ``window`` seconds, from ``(monotonic time, downloaded bytes)``
    samples. A rate needs at least ``min_span`` seconds of samples; a drop in the byte count (a file
    started over) restarts the window."""

    def __init__(self, window: float = 15.0, min_span: float = 1.0) -> None:
        self.window = window
        self.min_span = min_span
        self._samples: deque[tuple[float, int]] = deque()
        self._last_growth: float | None = None
        self._last_bytes: int | None = None

    def add(self, now: float, downloaded_bytes: int) -> None:
        if self._last_bytes is not None and downloaded_bytes < self._last_bytes:
            self._samples.clear()
        if self._last_bytes is None or downloaded_bytes != self._last_bytes or self._last_growth is None:
            self._last_growth = now
        self._last_bytes = downloaded_bytes
        if self._samples and now < self._samples[-1][0]:
            return  # out of order: ignore
        self._samples.append((now, downloaded_bytes))
        # Keep one sample at or before the window start so the span covers the whole window.
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Bytes per second, or None until ``min_span`` seconds of samples exist."""
        if len(self._samples) < 2:
            return None
        (t0, b0), (t1, b1) = self._samples[0], self._samples[-1]
        span = t1 - t0
        if span < self.min_span:
            return None
        return max(0.0, (b1 - b0) / span)

    def eta(self, total: int) -> float | None:
        """Seconds until ``total`` bytes at the current rate; None when unknown (no rate, or 0)."""
        rate = self.rate()
        if rate is None or rate <= 0 or self._last_bytes is None:
            return None
        return max(0.0, (total - self._last_bytes) / rate)

    def stalled_for(self, now: float) -> float:
        """Seconds since the byte count last changed (0 before the first sample)."""
        return 0.0 if self._last_growth is None else max(0.0, now - self._last_growth)


def percentage(p: Progress) -> int:
    """0..99 while bytes are coming, 100 once every byte is in (verifying: the released original
    sets 100 % when the transfer ends, before it verifies; ``DownloadComplete`` and the condition's
    reason say Verifying until it is Verified) and when done."""
    if p.phase == "done" or (p.phase == "verifying" and p.downloaded_bytes >= p.total_bytes):
        return 100
    if p.total_bytes <= 0:
        return 0
    return max(0, min(99, math.floor(100 * p.downloaded_bytes / p.total_bytes)))


def _live(p: Progress, meter: RateMeter | None) -> tuple[float | None, float | None]:
    """(rate, eta) while downloading; None when unknown or not meaningful in this phase."""
    if meter is None or p.phase != "downloading":
        return None, None
    return meter.rate(), meter.eta(p.total_bytes)


def progress_fields(p: Progress, meter: RateMeter | None, *, now: float) -> dict[str, Any]:
    """The ``status.progress`` dict (camelCase, as the CRDs spell it)."""
    pct = percentage(p)
    fields: dict[str, Any] = {
        "totalBytes": p.total_bytes,
        "downloadedBytes": p.downloaded_bytes,
        "percentage": pct,
        "displayPercentage": f"{pct} %",
    }
    rate, eta = _live(p, meter)
    if rate is not None:
        fields["bytesPerSecond"] = round(rate)
        fields["displayRate"] = format_rate(rate)
    if eta is not None:
        fields["etaSeconds"] = math.ceil(eta)
        fields["displayEta"] = format_duration(eta)
    return fields


def summary(p: Progress, meter: RateMeter | None, *, now: float) -> str:
    """One line: ``45 % · 1.2 GiB of 2.6 GiB · 310 MiB/s · ETA 5s``."""
    if p.phase == "listing":
        return "listing the source"
    pct = percentage(p)
    parts = [f"{pct} %", f"{format_bytes(p.downloaded_bytes)} of {format_bytes(p.total_bytes)}"]
    if p.phase == "downloading":
        rate, eta = _live(p, meter)
        if rate is not None:
            parts.append(format_rate(rate))
        if eta is not None:
            parts.append(f"ETA {format_duration(eta)}")
        stalled = meter.stalled_for(now) if meter is not None else 0.0
        if stalled >= 10:
            parts.append(f"no data for {format_duration(stalled)}")
    elif p.phase == "verifying":
        parts.append("verifying")
    else:
        files = f"{p.files_total} file" + ("" if p.files_total == 1 else "s")
        parts = [f"{pct} %", format_bytes(p.total_bytes), files, "done"]
    return " · ".join(parts)
