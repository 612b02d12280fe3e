"""Display formatting shared by status and logs: binary sizes with two significant figures (as the
original operator's displaySize), rates, durations, and PVC rounding to whole GiB."""

from __future__ import annotations

import math

import pytest

from aimcore.domain.units import GIB, ceil_gib, format_bytes, format_duration, format_rate

KIB, MIB = 1024, 1024 * 1024


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (950, "950 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (10 * KIB, "10 KiB"),
        (512 * MIB, "512 MiB"),
        (int(1.5 * GIB), "1.5 GiB"),
        (int(1.23 * GIB), "1.2 GiB"),
        (int(9.96 * GIB), "10 GiB"),
        (int(1.5 * 1024 * GIB), "1.5 TiB"),
        (1024 * MIB - 1, "1 GiB"),  # rounds up into the next unit, never "1024 MiB"
        (-2048, "-2 KiB"),
    ],
)
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [
        (310 * MIB, "310 MiB/s"),
        (1.5 * GIB, "1.5 GiB/s"),
        (100.4, "100 B/s"),
        (0, "0 B/s"),
        (-5, "0 B/s"),
        (math.nan, "0 B/s"),
        (math.inf, "0 B/s"),
    ],
)
def test_format_rate(rate: float, text: str) -> None:
    assert format_rate(rate) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (-3, "0s"),
        (0.2, "1s"),
        (45, "45s"),
        (59.5, "1m00s"),
        (60, "1m00s"),
        (310, "5m10s"),
        (3599, "59m59s"),
        (3600, "1h00m"),
        (2 * 3600 + 3 * 60 + 20, "2h03m"),
        (26 * 3600, "1d02h"),
        (math.inf, "0s"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("n", "expected"),
    [(0, 0), (-1, 0), (1, GIB), (GIB, GIB), (GIB + 1, 2 * GIB), (int(10.5 * GIB), 11 * GIB)],
)
def test_ceil_gib(n: int, expected: int) -> None:
    assert ceil_gib(n) == expected
