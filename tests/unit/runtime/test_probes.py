"""The pure parts of the health endpoints: readiness checks and their verdict, the liveness
answer from the heartbeat's age, the watchdog's one report per stall, and the download byte tally."""

from __future__ import annotations

from aim_cache.download_metrics import ByteTally
from aimcore.runtime.probes import (
    OK,
    UNAVAILABLE,
    Heartbeat,
    Readiness,
    StallWatch,
    liveness_answer,
    readiness_answer,
)


def test_readiness_lists_what_is_not_ready_by_name() -> None:
    checks = Readiness()
    bound = False
    checks.add("nats", lambda: None)
    checks.add("consumer aim-x", lambda: None if bound else "not bound")
    checks.waiting("informer", "loading")
    assert checks.problems() == ["consumer aim-x: not bound", "informer: loading"]
    bound = True
    checks.remove("informer")
    assert checks.problems() == []


def test_a_check_added_under_a_taken_name_replaces_the_placeholder() -> None:
    checks = Readiness()
    checks.waiting("consumer aim-x", "waiting for the stream")
    checks.add("consumer aim-x", lambda: None)
    assert checks.problems() == []
    assert checks.names() == ["consumer aim-x"]


def test_a_broken_check_is_reported_not_raised() -> None:
    checks = Readiness()

    def broken() -> str | None:
        raise RuntimeError("boom")

    checks.add("x", broken)
    assert checks.problems() == ["x: check failed: RuntimeError: boom"]


def test_readiness_answer() -> None:
    assert readiness_answer([]) == (OK, "ready\n")
    status, text = readiness_answer(["nats: not connected", "informer: loading"])
    assert status == UNAVAILABLE
    assert text == "not ready:\n- nats: not connected\n- informer: loading\n"


def test_liveness_fails_once_the_heartbeat_is_older_than_the_limit() -> None:
    now = [100.0]
    beat = Heartbeat(clock=lambda: now[0])
    assert liveness_answer(beat.silent_for(), 30)[0] == OK
    now[0] = 131.0
    status, text = liveness_answer(beat.silent_for(), 30)
    assert status == UNAVAILABLE and "silent for 31.0s" in text
    beat.beat()
    assert liveness_answer(beat.silent_for(), 30)[0] == OK


def test_the_watchdog_reports_each_stall_once() -> None:
    watch = StallWatch(limit=5)
    assert [watch.look(s) for s in (1, 6, 7, 8)] == [False, True, False, False]
    assert [watch.look(s) for s in (0.5, 9)] == [False, True]
    assert watch.stalls == 2


def test_byte_tally_counts_growth_and_takes_a_restart_as_a_new_baseline() -> None:
    tally = ByteTally()
    assert tally.add("a", 100) == 100
    assert tally.add("a", 250) == 150
    assert tally.add("b", 10) == 10
    assert tally.add("a", 250) == 0
    assert tally.add("a", 40) == 0  # started over
    assert tally.add("a", 90) == 50
