"""LLMKube Model drift detection: the revalidation gate, fingerprint comparison (mtime included,
unlike the original), HEAD header parsing, the refresh-policy action and the SourceDrifted
condition."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from aim_cache.llmkube.drift import (
    Fingerprint,
    Outcome,
    action,
    advances_last_revalidated,
    compare,
    describe,
    drift_condition,
    due,
    from_status,
    http_fingerprint,
    local_fingerprint,
    normalize_etag,
    status_fields,
)
from aimcore.api.crds.llmkube import RefreshPolicy

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.mark.parametrize(
    ("last", "interval", "expected"),
    [
        (None, HOUR, True),
        (NOW - timedelta(minutes=59), HOUR, False),
        (NOW - HOUR, HOUR, True),
        (NOW - timedelta(hours=3), HOUR, True),
        (NOW, HOUR, False),
        (NOW, timedelta(0), True),
        (NOW + timedelta(minutes=5), HOUR, True),  # future timestamp (skew) must not stall the gate
        (datetime(2025, 6, 1, 11, 30), HOUR, False),  # naive means UTC
        (datetime(2025, 6, 1, 10, 30), HOUR, True),
        (datetime(2025, 6, 1, 13, 30, tzinfo=timezone(timedelta(hours=2))), HOUR, False),  # 11:30Z
    ],
)
def test_due(last: datetime | None, interval: timedelta, expected: bool) -> None:
    assert due(last, NOW, interval) is expected


E1 = Fingerprint(etag="abc", length=10)
E2 = Fingerprint(etag="def", length=10)


@pytest.mark.parametrize(
    ("recorded", "probed", "expected"),
    [
        (E1, None, "indeterminate"),
        (E1, Fingerprint(), "indeterminate"),
        (None, Fingerprint(), "indeterminate"),
        (None, E1, "baseline"),
        (Fingerprint(), E1, "baseline"),
        (E1, E1, "in-sync"),
        (E1, E2, "drifted"),
        (E1, Fingerprint(etag="abc", length=99), "in-sync"),  # ETags win when both have one
        (Fingerprint(length=10), Fingerprint(length=10), "in-sync"),
        (Fingerprint(length=10), Fingerprint(length=11), "drifted"),
        (E1, Fingerprint(length=10), "in-sync"),  # one side lacks an ETag: fall back to length
        (E1, Fingerprint(length=11), "drifted"),
        (Fingerprint(etag="abc"), Fingerprint(length=10), "baseline"),  # nothing in common
        (Fingerprint(length=10, mtime=1.5), Fingerprint(length=10, mtime=1.5), "in-sync"),
        (Fingerprint(length=10, mtime=1.5), Fingerprint(length=10, mtime=2.5), "drifted"),  # same size
        (Fingerprint(length=10, mtime=1.5), Fingerprint(length=12, mtime=1.5), "drifted"),
        (Fingerprint(length=10), Fingerprint(length=10, mtime=2.5), "in-sync"),  # no recorded mtime
        (Fingerprint(mtime=1.0), Fingerprint(mtime=1.0), "in-sync"),
        (Fingerprint(length=0), Fingerprint(length=0), "in-sync"),
    ],
)
def test_compare(recorded: Fingerprint | None, probed: Fingerprint | None, expected: Outcome) -> None:
    assert compare(recorded, probed) == expected


@pytest.mark.parametrize(
    ("outcome", "policy", "expected"),
    [
        ("drifted", "IfNotPresent", "flag"),
        ("drifted", "OnChange", "refetch"),
        ("drifted", None, "flag"),
        ("drifted", "onchange", "flag"),  # enum values are exact
        ("in-sync", "OnChange", "none"),
        ("baseline", "OnChange", "none"),  # an upgrade never mass-downloads
        ("indeterminate", "OnChange", "none"),  # a network blip never refetches
        ("skipped", "OnChange", "none"),
        ("in-sync", "IfNotPresent", "none"),
    ],
)
def test_action(outcome: Outcome, policy: str | None, expected: str) -> None:
    assert action(outcome, policy) == expected


def test_action_accepts_the_crd_enum() -> None:
    assert action("drifted", RefreshPolicy.ON_CHANGE) == "refetch"
    assert action("drifted", RefreshPolicy.IF_NOT_PRESENT) == "flag"


@pytest.mark.parametrize(
    ("outcome", "advances"),
    [("skipped", False), ("indeterminate", False), ("baseline", True), ("in-sync", True), ("drifted", True)],
)
def test_advances_last_revalidated(outcome: Outcome, advances: bool) -> None:
    assert advances_last_revalidated(outcome) is advances


@pytest.mark.parametrize(
    ("outcome", "status", "reason", "fragment"),
    [
        ("drifted", "True", "UpstreamChanged", "upstream source changed"),
        ("in-sync", "False", "InSync", "matches"),
        ("baseline", "False", "InSync", "baseline"),
        ("indeterminate", None, None, None),
        ("skipped", None, None, None),
    ],
)
def test_drift_condition(
    outcome: Outcome, status: str | None, reason: str | None, fragment: str | None
) -> None:
    got = drift_condition(outcome, "ETag a -> b")
    if status is None:
        assert got is None
        return
    assert got is not None
    assert got[:2] == (status, reason)
    assert fragment is not None and fragment in got[2]
    assert got[2].endswith("(ETag a -> b)")
    bare = drift_condition(outcome, "")
    assert bare is not None and not bare[2].endswith(")")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('"abc"', "abc"),
        ('W/"abc"', "abc"),
        ('w/"abc"', "abc"),
        ("abc", "abc"),
        ('  "abc"  ', "abc"),
        ('""', None),
        ("", None),
        (None, None),
        ('"a"b"', 'a"b'),
    ],
)
def test_normalize_etag(raw: str | None, expected: str | None) -> None:
    assert normalize_etag(raw) == expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"ETag": '"abc"', "Content-Length": "123"}, Fingerprint(etag="abc", length=123)),
        ({"etag": 'W/"abc"', "content-length": "123"}, Fingerprint(etag="abc", length=123)),
        ({"ETAG": "abc"}, Fingerprint(etag="abc")),
        ({"Content-Length": "0"}, Fingerprint(length=0)),
        ({"Content-Length": "12, 12"}, Fingerprint(length=12)),
        ({"Content-Length": "12, 13"}, Fingerprint()),
        ({"Content-Length": "-1"}, Fingerprint()),
        ({"Content-Length": "lots"}, Fingerprint()),
        ({}, Fingerprint()),
        (  # HF's un-followed LFS redirect: the linked headers describe the blob
            {
                "ETag": '"redirect"',
                "Content-Length": "1350",
                "X-Linked-Etag": '"sha"',
                "X-Linked-Size": "4200000000",
            },
            Fingerprint(etag="sha", length=4200000000),
        ),
        ({"ETag": '"e"', "Content-Length": "9", "X-Linked-Size": "bad"}, Fingerprint(etag="e", length=9)),
    ],
)
def test_http_fingerprint(headers: dict[str, str], expected: Fingerprint) -> None:
    assert http_fingerprint(headers) == expected


def test_weak_and_strong_etags_compare_equal() -> None:
    assert compare(http_fingerprint({"ETag": '"abc"'}), http_fingerprint({"ETag": 'W/"abc"'})) == "in-sync"


def test_local_fingerprint(tmp_path: Path) -> None:
    target = tmp_path / "m.gguf"
    target.write_bytes(b"12345")
    os.utime(target, (1_700_000_000.25, 1_700_000_000.25))
    first = local_fingerprint(target)
    assert first == Fingerprint(length=5, mtime=1_700_000_000.25)
    assert local_fingerprint(str(target)) == first
    # Same length rewritten in place: only mtime tells (the original missed this).
    target.write_bytes(b"54321")
    os.utime(target, (1_700_000_100.0, 1_700_000_100.0))
    assert compare(first, local_fingerprint(target)) == "drifted"
    with pytest.raises(FileNotFoundError):
        local_fingerprint(tmp_path / "missing")


@pytest.mark.parametrize(
    "fp",
    [
        Fingerprint(etag="abc", length=10),
        Fingerprint(length=10, mtime=1_700_000_000.123456),
        Fingerprint(length=10),
        Fingerprint(etag="abc"),
        Fingerprint(mtime=0.1 + 0.2),
    ],
)
def test_status_round_trip(fp: Fingerprint) -> None:
    fields = status_fields(fp)
    assert set(fields) == {"sourceETag", "sourceContentLength"}
    assert from_status(fields) == fp


def test_status_fields_store_local_mtime_in_etag() -> None:
    assert status_fields(Fingerprint(length=3, mtime=2.5)) == {
        "sourceETag": "local-mtime=2.5",
        "sourceContentLength": 3,
    }
    assert status_fields(Fingerprint()) == {"sourceETag": None, "sourceContentLength": None}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (None, None),
        ({}, None),
        ({"phase": "Ready"}, None),
        ({"sourceETag": "", "sourceContentLength": None}, None),
        ({"sourceETag": "abc"}, Fingerprint(etag="abc")),
        ({"sourceContentLength": 7}, Fingerprint(length=7)),
        ({"sourceContentLength": True}, None),
        ({"sourceContentLength": "7"}, None),
        ({"sourceETag": "local-mtime=nope", "sourceContentLength": 7}, Fingerprint(length=7)),
        ({"sourceETag": "local-mtime=nan", "sourceContentLength": 7}, Fingerprint(length=7)),
        ({"sourceETag": "local-mtime=3.5"}, Fingerprint(mtime=3.5)),
    ],
)
def test_from_status(status: dict[str, object] | None, expected: Fingerprint | None) -> None:
    assert from_status(status) == expected


@pytest.mark.parametrize(
    ("recorded", "probed", "fragment"),
    [
        (E1, E2, "ETag abc -> def"),
        (Fingerprint(length=1), Fingerprint(length=2), "size 1 -> 2 bytes"),
        (
            Fingerprint(length=1, mtime=0.0),
            Fingerprint(length=1, mtime=60.0),
            "mtime 1970-01-01T00:00:00Z -> ",
        ),
        (None, E1, "recorded ETag abc, size 10 bytes"),
        (E1, None, "no ETag or length"),
        (E1, E1, "ETag abc"),
    ],
)
def test_describe(recorded: Fingerprint | None, probed: Fingerprint | None, fragment: str) -> None:
    assert fragment in describe(recorded, probed)


def test_a_full_revalidation_pass() -> None:
    """The reconciler's sequence: read status, probe, compare, act, write condition and status."""
    status = {"sourceETag": "abc", "sourceContentLength": 10, "lastRevalidated": NOW - 2 * HOUR}
    assert due(status["lastRevalidated"], NOW, HOUR)
    recorded = from_status(status)
    probed = http_fingerprint({"ETag": '"def"', "Content-Length": "10"})
    outcome = compare(recorded, probed)
    assert outcome == "drifted"
    assert action(outcome, "IfNotPresent") == "flag"
    assert action(outcome, "OnChange") == "refetch"
    condition = drift_condition(outcome, describe(recorded, probed))
    assert condition == (
        "True",
        "UpstreamChanged",
        "upstream source changed since it was cached (ETag abc -> def)",
    )
    assert status_fields(probed) == {"sourceETag": "def", "sourceContentLength": 10}
