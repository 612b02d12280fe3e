"""The one retry delay (aimcore.api.backoff): the exponential schedule, equal jitter within it, and
the three sources of jitter (a random draw, a stable key, none)."""

from __future__ import annotations

import random

import pytest

from aimcore.api.backoff import Backoff, backoff, exponential, jitter_key


@pytest.mark.parametrize(
    ("failed", "delay"),
    [(0, 0.0), (1, 30.0), (2, 60.0), (3, 120.0), (5, 480.0), (6, 600.0), (50, 600.0), (10**9, 600.0)],
)
def test_retry_delay_custom_base_and_cap(failed: int, delay: float) -> None:
    assert backoff(failed, 30.0, 600.0, jitter=None) == delay


def test_retry_delay_large_cap_keeps_doubling() -> None:
    assert backoff(41, 1.0, 1e15, jitter=None) == 2.0**40
    assert backoff(5000, 1.0, 1e300, jitter=None) == 1e300


def test_nothing_to_wait_before_a_failure() -> None:
    for jitter in (None, random.random, "uid-1"):
        assert backoff(0, 0.5, 60.0, jitter=jitter) == 0.0
        assert backoff(-3, 0.5, 60.0, jitter=jitter) == 0.0


def test_equal_jitter_stays_between_half_and_all_of_the_schedule() -> None:
    rng = random.Random(16)
    for attempt in range(1, 40):
        exact = exponential(attempt, 0.5, 60.0)
        for _ in range(50):
            delay = backoff(attempt, 0.5, 60.0, jitter=rng.random)
            assert exact / 2 <= delay <= exact
    assert backoff(3, 0.5, 60.0, jitter=lambda: 0.0) == 1.0  # the lowest draw: half
    assert backoff(3, 0.5, 60.0, jitter=lambda: 1.0) == 2.0  # the highest: all of it
    assert backoff(30, 0.5, 60.0, jitter=lambda: 5.0) == 60.0  # a draw out of range never exceeds the cap


def test_a_seeded_draw_is_reproducible() -> None:
    first = [backoff(n, 1.0, 60.0, jitter=random.Random(7).random) for n in range(1, 10)]
    again = [backoff(n, 1.0, 60.0, jitter=random.Random(7).random) for n in range(1, 10)]
    assert first == again


def test_a_key_gives_the_same_delay_for_the_same_attempt_and_spreads_objects() -> None:
    schedule = Backoff(base=60.0, cap=3600.0)
    # golden values: every process (a restarted controller, another replica) waits the same
    assert schedule.delay(3, jitter="uid-a") == 233.12252064225794
    assert schedule.delay(4, jitter="uid-a") == 331.24250084773587
    assert (
        schedule.delay(3, jitter="uid-a") != schedule.delay(4, jitter="uid-a") / 2
    )  # a new draw per attempt
    spread = {schedule.delay(3, jitter=f"uid-{i}") for i in range(100)}
    assert len(spread) > 90  # objects that failed together do not retry together
    assert all(120.0 <= d <= 240.0 for d in spread)


def test_jitter_key_is_the_uid_or_the_name() -> None:
    assert jitter_key({"metadata": {"uid": "u-1", "name": "x", "namespace": "ns"}}) == "u-1"
    assert jitter_key({"metadata": {"name": "x", "namespace": "ns"}}) == "ns/x"
    assert jitter_key({"metadata": {"name": "x"}}) == "/x"
