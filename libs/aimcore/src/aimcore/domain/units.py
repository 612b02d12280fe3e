"""Human-readable sizes, rates and durations, shared by status displays, logs and PVC sizing, so
every service shows "1.5 GiB" or "5m10s" the same way (the original operator's ``displaySize`` uses
binary units with two significant figures: "512 MiB", "1.5 TiB")."""

from __future__ import annotations

import math

GIB = 1 << 30
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def _scaled(value: float) -> str:
    """Two significant figures below 10 ("1.5", "9.9"), whole numbers above ("10", "512")."""
    if value < 9.95:
        text = f"{value:.1f}"
        return text[:-2] if text.endswith(".0") else text
    return str(round(value))


def format_bytes(n: int) -> str:
    """``0 B``, ``950 B``, ``1 KiB``, ``1.5 GiB``, ``512 MiB``, ``1.5 TiB`` (binary units)."""
    if n < 0:
        return "-" + format_bytes(-n)
    if n < 1024:
        return f"{n} B"
    value = float(n)
    unit = 0
    while unit < len(_UNITS) - 1 and value >= 1024:
        value /= 1024
        unit += 1
    # 1023.7 MiB rounds to "1024": show "1 GiB" instead.
    if round(value) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{_scaled(value)} {_UNITS[unit]}"


def format_rate(bytes_per_second: float) -> str:
    """``310 MiB/s``; a non-positive or non-finite rate shows as ``0 B/s``."""
    if not math.isfinite(bytes_per_second) or bytes_per_second <= 0:
        return "0 B/s"
    return f"{format_bytes(round(bytes_per_second))}/s"


def format_duration(seconds: float) -> str:
    """``45s``, ``5m10s``, ``2h03m``, ``3d04h``; rounded up to whole seconds (an ETA of 0.2 s is 1s)."""
    if not math.isfinite(seconds) or seconds <= 0:
        return "0s"
    total = math.ceil(seconds)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def ceil_gib(n_bytes: int) -> int:
    """``n_bytes`` rounded up to a whole number of GiB, in bytes (0 stays 0)."""
    if n_bytes <= 0:
        return 0
    return -(-n_bytes // GIB) * GIB
