"""``aim_cache.llmkube.state.compose``: the phase, the Available/Progressing/Degraded (and, only when
observed, SourceDrifted) conditions, and the status fields for every branch, plus the precedence
between branches (failure > fetching > pending > cached > nothing).

A ``pvc://`` source is never staged: once its verify Job has hashed the file in the claim it is a
``Cached`` whose ``mounted`` says how the workload reaches it, and a re-verification is a ``verify``
fetch that, unlike a download or copy, leaves a verified Model Ready."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from aim_cache.llmkube import drift
from aim_cache.llmkube.state import (
    Cached,
    Failure,
    Fetching,
    Observed,
    compose,
)
from aimcore.api.bus.messages import ConditionReport
from aimcore.domain.units import format_bytes

SIZE = 1_610_612_736  # 1.5 GiB
CACHED = Cached(
    path="/cache/llmkube/0123456789abcdef/model.gguf",
    size=SIZE,
    sha256="ab" * 32,
    verified=True,
    completed_at="2025-06-01T12:00:00Z",
)
UNVERIFIED = replace(CACHED, verified=False, sha256="cd" * 32)
DOWNLOAD = Fetching(kind="download", waiting=False, summary="1.2 GiB of 3 GiB at 310 MiB/s", attempt=1)
COPY = Fetching(kind="copy", waiting=False, summary="", attempt=2)
WAITING = Fetching(kind="download", waiting=True, summary="ignored while waiting", attempt=1)
WAITING_COPY = Fetching(kind="copy", waiting=True, summary="", attempt=3)
PERMANENT = Failure(reason="SourceNotFound", message="HTTP 404: http://h/m.gguf does not exist")
RETRYING = Failure(reason="DownloadStalled", message="no data for 60 s from h", retry_in=310.0)
PENDING = ("PVCNotBound", "claim models is not bound yet")
MOUNT_MESSAGE = "claim models is bound; the workload mounts it read-only at /model-source"
MOUNTED = replace(CACHED, path="/model-source/llama.gguf", mounted=MOUNT_MESSAGE)
VERIFY = Fetching(kind="verify", waiting=False, summary="hashing /model-source/llama.gguf", attempt=1)
WAITING_VERIFY = Fetching(kind="verify", waiting=True, summary="ignored while waiting", attempt=2)
MISMATCH = Failure(
    reason="IntegrityCheckFailed", message="sha256 of /model-source/llama.gguf does not match spec.sha256"
)
NO_GPU = (False, "no node has a GPU with 24 GiB free")

FIELD_KEYS = {
    "cacheKey",
    "stagedFiles",
    "acceleratorReady",
    "gguf",
    "lastRevalidated",
    "sourceETag",
    "sourceContentLength",
    "path",
    "size",
    "sha256",
    "lastUpdated",
    "phase",
}
COPY_FIELDS = ("path", "size", "sha256", "lastUpdated")

Cond = tuple[str, str, str]  # (status, reason, message)


def conditions(conds: list[ConditionReport]) -> dict[str, Cond]:
    types = [c.type for c in conds]
    assert len(types) == len(set(types)), f"duplicate condition types: {types}"
    return {c.type: (c.status, c.reason, c.message) for c in conds}


# -- every branch: phase and the three conditions, exactly ------------------------------------------

CASES: list[tuple[str, Observed, str, Cond, Cond, Cond]] = [
    (
        "nothing",
        Observed(),
        "Pending",
        ("False", "NotStaged", "not staged yet"),
        ("True", "Pending", "waiting to be fetched"),
        ("False", "Healthy", ""),
    ),
    (
        "cached-verified",
        Observed(cached=CACHED),
        "Ready",
        (
            "True",
            "ModelReady",
            f"staged at {CACHED.path} (1.5 GiB, sha256 verified against spec.sha256)",
        ),
        ("False", "Complete", ""),
        ("False", "Healthy", ""),
    ),
    (
        "cached-recorded",
        Observed(cached=UNVERIFIED),
        "Ready",
        ("True", "ModelReady", f"staged at {CACHED.path} (1.5 GiB, sha256 recorded)"),
        ("False", "Complete", ""),
        ("False", "Healthy", ""),
    ),
    (
        "mounted-verified",
        Observed(cached=MOUNTED),
        "Ready",
        ("True", "ModelReady", f"{MOUNT_MESSAGE} (1.5 GiB, sha256 verified against spec.sha256)"),
        ("False", "Complete", ""),
        ("False", "Healthy", ""),
    ),
    (
        "mounted-recorded",
        Observed(cached=replace(MOUNTED, verified=False)),
        "Ready",
        ("True", "ModelReady", f"{MOUNT_MESSAGE} (1.5 GiB, sha256 recorded)"),
        ("False", "Complete", ""),
        ("False", "Healthy", ""),
    ),
    (
        "pending",
        Observed(pending=PENDING),
        "Pending",
        ("False", "PVCNotBound", "claim models is not bound yet"),
        ("True", "PVCNotBound", "claim models is not bound yet"),
        ("False", "Healthy", ""),
    ),
    (
        "downloading",
        Observed(fetching=DOWNLOAD),
        "Downloading",
        ("False", "Downloading", "not staged yet"),
        ("True", "Downloading", "1.2 GiB of 3 GiB at 310 MiB/s"),
        ("False", "Healthy", ""),
    ),
    (
        "copying-no-summary",
        Observed(fetching=COPY),
        "Copying",
        ("False", "Copying", "not staged yet"),
        ("True", "Copying", "copy attempt 2 started"),
        ("False", "Healthy", ""),
    ),
    (
        "download-no-summary",
        Observed(fetching=replace(DOWNLOAD, summary="", attempt=4)),
        "Downloading",
        ("False", "Downloading", "not staged yet"),
        ("True", "Downloading", "download attempt 4 started"),
        ("False", "Healthy", ""),
    ),
    (
        "waiting-download-slot",
        Observed(fetching=WAITING),
        "Downloading",
        ("False", "WaitingForDownloadSlot", "not staged yet"),
        ("True", "WaitingForDownloadSlot", "waiting for a free download slot"),
        ("False", "Healthy", ""),
    ),
    (
        "waiting-copy-slot",
        Observed(fetching=WAITING_COPY),
        "Copying",
        ("False", "WaitingForDownloadSlot", "not staged yet"),
        ("True", "WaitingForDownloadSlot", "waiting for a free copy slot"),
        ("False", "Healthy", ""),
    ),
    (
        "verifying",
        Observed(fetching=VERIFY),
        "Pending",
        ("False", "Verifying", "not verified yet"),
        ("True", "Verifying", "hashing /model-source/llama.gguf"),
        ("False", "Healthy", ""),
    ),
    (
        "verify-no-summary",
        Observed(fetching=replace(VERIFY, summary="", attempt=3)),
        "Pending",
        ("False", "Verifying", "not verified yet"),
        ("True", "Verifying", "verify attempt 3 started"),
        ("False", "Healthy", ""),
    ),
    (
        "waiting-verify-slot",
        Observed(fetching=WAITING_VERIFY),
        "Pending",
        ("False", "WaitingForDownloadSlot", "not verified yet"),
        ("True", "WaitingForDownloadSlot", "waiting for a free verify slot"),
        ("False", "Healthy", ""),
    ),
    (
        "reverifying-mounted",
        Observed(cached=MOUNTED, fetching=VERIFY),
        "Ready",
        ("True", "ModelReady", f"{MOUNT_MESSAGE} (1.5 GiB, sha256 verified against spec.sha256)"),
        ("True", "Verifying", "hashing /model-source/llama.gguf"),
        ("False", "Healthy", ""),
    ),
    (
        "reverify-waiting-mounted-recorded",
        Observed(cached=replace(MOUNTED, verified=False), fetching=WAITING_VERIFY),
        "Ready",
        ("True", "ModelReady", f"{MOUNT_MESSAGE} (1.5 GiB, sha256 recorded)"),
        ("True", "WaitingForDownloadSlot", "waiting for a free verify slot"),
        ("False", "Healthy", ""),
    ),
    (
        "refreshing-with-cached-copy",
        Observed(cached=CACHED, fetching=DOWNLOAD),
        "Downloading",
        ("True", "ModelReady", "serving the cached copy until the refresh completes"),
        ("True", "Downloading", "1.2 GiB of 3 GiB at 310 MiB/s"),
        ("False", "Healthy", ""),
    ),
    (
        "failed-permanent",
        Observed(failure=PERMANENT),
        "Failed",
        ("False", "SourceNotFound", "HTTP 404: http://h/m.gguf does not exist"),
        (
            "False",
            "WaitingForSpecChange",
            "HTTP 404: http://h/m.gguf does not exist (fix the spec (or the operator's policy) to retry)",
        ),
        (
            "True",
            "SourceNotFound",
            "HTTP 404: http://h/m.gguf does not exist (fix the spec (or the operator's policy) to retry)",
        ),
    ),
    (
        "failed-retrying",
        Observed(failure=RETRYING),
        "Failed",
        ("False", "DownloadStalled", "no data for 60 s from h"),
        ("False", "RetryScheduled", "no data for 60 s from h (next attempt in 5m10s)"),
        ("True", "DownloadStalled", "no data for 60 s from h (next attempt in 5m10s)"),
    ),
    (
        "refresh-failed-with-cached-copy",
        Observed(cached=CACHED, failure=RETRYING),
        "Ready",
        ("True", "ModelReady", f"serving the cached copy at {CACHED.path}"),
        ("False", "RetryScheduled", "no data for 60 s from h (next attempt in 5m10s)"),
        ("True", "DownloadStalled", "no data for 60 s from h (next attempt in 5m10s)"),
    ),
    (
        "refresh-failed-permanently-with-cached-copy",
        Observed(cached=CACHED, failure=PERMANENT),
        "Ready",
        ("True", "ModelReady", f"serving the cached copy at {CACHED.path}"),
        (
            "False",
            "WaitingForSpecChange",
            "HTTP 404: http://h/m.gguf does not exist (fix the spec (or the operator's policy) to retry)",
        ),
        (
            "True",
            "SourceNotFound",
            "HTTP 404: http://h/m.gguf does not exist (fix the spec (or the operator's policy) to retry)",
        ),
    ),
    (
        "reverify-failed-with-mounted-copy",
        Observed(cached=MOUNTED, failure=RETRYING),
        "Ready",
        ("True", "ModelReady", f"{MOUNT_MESSAGE} (last verified)"),
        ("False", "RetryScheduled", "no data for 60 s from h (next attempt in 5m10s)"),
        ("True", "DownloadStalled", "no data for 60 s from h (next attempt in 5m10s)"),
    ),
    (
        "verify-mismatch",
        Observed(failure=MISMATCH),
        "Failed",
        ("False", "IntegrityCheckFailed", MISMATCH.message),
        (
            "False",
            "WaitingForSpecChange",
            f"{MISMATCH.message} (fix the spec (or the operator's policy) to retry)",
        ),
        (
            "True",
            "IntegrityCheckFailed",
            f"{MISMATCH.message} (fix the spec (or the operator's policy) to retry)",
        ),
    ),
    (
        "failure-retry-in-seconds",
        Observed(failure=replace(RETRYING, retry_in=0.2)),
        "Failed",
        ("False", "DownloadStalled", "no data for 60 s from h"),
        ("False", "RetryScheduled", "no data for 60 s from h (next attempt in 1s)"),
        ("True", "DownloadStalled", "no data for 60 s from h (next attempt in 1s)"),
    ),
]


@pytest.mark.parametrize(
    ("obs", "phase", "available", "progressing", "degraded"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_branch(obs: Observed, phase: str, available: Cond, progressing: Cond, degraded: Cond) -> None:
    fields, conds = compose(obs)
    assert fields["phase"] == phase
    assert [c.type for c in conds] == ["Available", "Progressing", "Degraded"]
    assert conditions(conds) == {"Available": available, "Progressing": progressing, "Degraded": degraded}
    assert set(fields) == FIELD_KEYS


# -- precedence ------------------------------------------------------------------------------------

PRECEDENCE: list[tuple[str, Observed, str, str, str]] = [
    # (id, observed, phase, Available reason, Progressing reason)
    (
        "failure-beats-everything",
        Observed(failure=RETRYING, fetching=DOWNLOAD, pending=PENDING, cached=CACHED),
        "Ready",  # the cached copy still serves
        "ModelReady",
        "RetryScheduled",
    ),
    (
        "failure-beats-verify-pending-mounted",
        Observed(failure=MISMATCH, fetching=VERIFY, pending=PENDING, cached=MOUNTED),
        "Ready",  # the last verified file still serves
        "ModelReady",
        "WaitingForSpecChange",
    ),
    (
        "failure-beats-fetching-pending",
        Observed(failure=PERMANENT, fetching=DOWNLOAD, pending=PENDING),
        "Failed",
        "SourceNotFound",
        "WaitingForSpecChange",
    ),
    (
        "failure-beats-verify",
        Observed(failure=MISMATCH, fetching=VERIFY),
        "Failed",
        "IntegrityCheckFailed",
        "WaitingForSpecChange",
    ),
    (
        "fetching-beats-pending-cached",
        Observed(fetching=COPY, pending=PENDING, cached=CACHED),
        "Copying",
        "ModelReady",
        "Copying",
    ),
    (
        "fetching-beats-pending",
        Observed(fetching=WAITING, pending=PENDING),
        "Downloading",
        "WaitingForDownloadSlot",
        "WaitingForDownloadSlot",
    ),
    (
        "verify-beats-pending-mounted",
        Observed(fetching=VERIFY, pending=PENDING, cached=MOUNTED),
        "Ready",
        "ModelReady",
        "Verifying",
    ),
    (
        "verify-beats-pending",
        Observed(fetching=VERIFY, pending=PENDING),
        "Pending",
        "Verifying",
        "Verifying",
    ),
    (
        "pending-beats-cached",
        Observed(pending=PENDING, cached=CACHED),
        "Pending",
        "PVCNotBound",
        "PVCNotBound",
    ),
    (
        "pending-beats-mounted",
        Observed(pending=PENDING, cached=MOUNTED),
        "Pending",
        "PVCNotBound",
        "PVCNotBound",
    ),
    ("cached-beats-nothing", Observed(cached=CACHED), "Ready", "ModelReady", "Complete"),
    ("mounted-beats-nothing", Observed(cached=MOUNTED), "Ready", "ModelReady", "Complete"),
    ("nothing", Observed(), "Pending", "NotStaged", "Pending"),
]


@pytest.mark.parametrize(
    ("obs", "phase", "available_reason", "progressing_reason"),
    [case[1:] for case in PRECEDENCE],
    ids=[case[0] for case in PRECEDENCE],
)
def test_precedence(obs: Observed, phase: str, available_reason: str, progressing_reason: str) -> None:
    fields, conds = compose(obs)
    got = conditions(conds)
    assert fields["phase"] == phase
    assert got["Available"][1] == available_reason
    assert got["Progressing"][1] == progressing_reason


def test_refresh_failure_keeps_the_mounted_wording() -> None:
    fields, conds = compose(Observed(cached=MOUNTED, failure=PERMANENT))
    assert fields["path"] == "/model-source/llama.gguf"
    status, reason, message = conditions(conds)["Available"]
    assert (status, reason, message) == ("True", "ModelReady", f"{MOUNT_MESSAGE} (last verified)")
    assert "serving the cached copy" not in message  # nothing was staged


# -- status fields ---------------------------------------------------------------------------------

NO_COPY = [
    Observed(),
    Observed(pending=PENDING),
    Observed(fetching=DOWNLOAD),
    Observed(fetching=WAITING_COPY),
    Observed(failure=PERMANENT),
    Observed(failure=RETRYING),
    Observed(fetching=VERIFY),
    Observed(fetching=WAITING_VERIFY),
    Observed(failure=MISMATCH, fetching=VERIFY),
]


@pytest.mark.parametrize(
    "obs",
    NO_COPY,
    ids=[
        "nothing",
        "pending",
        "downloading",
        "waiting",
        "failed",
        "retry",
        "verifying",
        "waiting-verify",
        "mismatch",
    ],
)
def test_without_a_copy_the_copy_fields_are_removed(obs: Observed) -> None:
    fields, _ = compose(obs)
    for key in COPY_FIELDS:
        assert key in fields
        assert fields[key] is None, key


@pytest.mark.parametrize(
    "obs",
    [
        Observed(cached=MOUNTED),
        Observed(cached=MOUNTED, fetching=VERIFY),
        Observed(cached=MOUNTED, failure=MISMATCH),
    ],
    ids=["ready", "reverifying", "reverify-failed"],
)
def test_mounted_copy_sets_path_size_sha256(obs: Observed) -> None:
    fields, _ = compose(obs)
    assert {k: fields[k] for k in COPY_FIELDS} == {
        "path": "/model-source/llama.gguf",
        "size": "1.5 GiB",
        "sha256": "ab" * 32,
        "lastUpdated": "2025-06-01T12:00:00Z",
    }


CACHED_FIELDS = {
    "path": CACHED.path,
    "size": "1.5 GiB",
    "sha256": "ab" * 32,
    "lastUpdated": "2025-06-01T12:00:00Z",
}


@pytest.mark.parametrize(
    "obs",
    [
        Observed(cached=CACHED),
        Observed(cached=CACHED, fetching=DOWNLOAD),
        Observed(cached=CACHED, failure=PERMANENT),
    ],
    ids=["ready", "refreshing", "refresh-failed"],
)
def test_copy_fields_when_cached(obs: Observed) -> None:
    fields, _ = compose(obs)
    assert {k: fields[k] for k in COPY_FIELDS} == CACHED_FIELDS


@pytest.mark.parametrize("size", [0, 950, 1024, 1536, 512 << 20, (1 << 30) - 1, 3 << 40])
@pytest.mark.parametrize("copy", [CACHED, MOUNTED], ids=["staged", "mounted"])
def test_size_is_format_bytes(copy: Cached, size: int) -> None:
    fields, conds = compose(Observed(cached=replace(copy, size=size)))
    assert fields["size"] == format_bytes(size)
    assert f"({format_bytes(size)}, " in conditions(conds)["Available"][2]


def test_size_examples() -> None:
    assert compose(Observed(cached=replace(CACHED, size=950)))[0]["size"] == "950 B"
    assert compose(Observed(cached=replace(CACHED, size=512 << 20)))[0]["size"] == "512 MiB"


def test_cached_without_sha256() -> None:
    fields, _ = compose(Observed(cached=replace(CACHED, sha256=None, completed_at=None, verified=False)))
    assert fields["sha256"] is None
    assert fields["lastUpdated"] is None
    assert fields["path"] == CACHED.path


def test_pass_through_fields() -> None:
    gguf = {"architecture": "llama", "layerCount": 6}
    fields, _ = compose(
        Observed(
            cache_key="0123456789abcdef",
            staged_files=("model.gguf", "mmproj.gguf"),
            gguf=gguf,
            last_revalidated="2025-06-01T13:00:00Z",
            accelerator=NO_GPU,
        )
    )
    assert fields["cacheKey"] == "0123456789abcdef"
    assert fields["stagedFiles"] == ["model.gguf", "mmproj.gguf"]
    assert fields["gguf"] == gguf
    assert fields["lastRevalidated"] == "2025-06-01T13:00:00Z"
    assert fields["acceleratorReady"] is False


def test_empty_pass_through_fields_are_removed() -> None:
    fields, _ = compose(Observed(gguf={}))
    assert fields["cacheKey"] is None
    assert fields["stagedFiles"] is None
    assert fields["gguf"] is None
    assert fields["lastRevalidated"] is None
    assert fields["acceleratorReady"] is True


# -- fingerprint fields ----------------------------------------------------------------------------

FINGERPRINTS: list[tuple[str, drift.Fingerprint | None, dict[str, Any]]] = [
    ("none", None, {"sourceETag": None, "sourceContentLength": None}),
    ("empty", drift.Fingerprint(), {"sourceETag": None, "sourceContentLength": None}),
    ("http", drift.Fingerprint(etag="abc", length=42), {"sourceETag": "abc", "sourceContentLength": 42}),
    (
        "local",
        drift.Fingerprint(length=42, mtime=1_700_000_000.5),
        {"sourceETag": "local-mtime=1700000000.5", "sourceContentLength": 42},
    ),
    (
        "etag-wins-over-mtime",
        drift.Fingerprint(etag="abc", length=7, mtime=1.25),
        {"sourceETag": "abc", "sourceContentLength": 7},
    ),
    ("length-only", drift.Fingerprint(length=0), {"sourceETag": None, "sourceContentLength": 0}),
]


@pytest.mark.parametrize(("fp", "expected"), [c[1:] for c in FINGERPRINTS], ids=[c[0] for c in FINGERPRINTS])
@pytest.mark.parametrize(
    "base",
    [
        Observed(),
        Observed(cached=CACHED),
        Observed(cached=MOUNTED),
        Observed(failure=PERMANENT),
        Observed(fetching=DOWNLOAD),
        Observed(fetching=VERIFY),
    ],
    ids=["nothing", "cached", "mounted", "failed", "fetching", "verifying"],
)
def test_fingerprint_fields(base: Observed, fp: drift.Fingerprint | None, expected: dict[str, Any]) -> None:
    fields, _ = compose(replace(base, fingerprint=fp))
    got = {"sourceETag": fields["sourceETag"], "sourceContentLength": fields["sourceContentLength"]}
    assert got == expected
    assert got == drift.status_fields(fp or drift.Fingerprint())


def test_local_mtime_round_trips_through_status() -> None:
    fp = drift.Fingerprint(length=42, mtime=1_700_000_000.123456)
    fields, _ = compose(Observed(cached=CACHED, fingerprint=fp))
    assert fields["sourceETag"].startswith("local-mtime=")
    assert drift.from_status(fields) == fp


# -- SourceDrifted ---------------------------------------------------------------------------------

DRIFTED = ("True", "UpstreamChanged", "upstream source changed since it was cached (ETag a -> b)")
IN_SYNC = ("False", "InSync", "cached copy matches the upstream source")

ALL_BRANCHES = [case[1] for case in CASES]


@pytest.mark.parametrize("obs", ALL_BRANCHES, ids=[case[0] for case in CASES])
def test_no_source_drifted_without_drift(obs: Observed) -> None:
    _, conds = compose(obs)
    assert "SourceDrifted" not in {c.type for c in conds}


@pytest.mark.parametrize("observed_drift", [DRIFTED, IN_SYNC], ids=["drifted", "in-sync"])
@pytest.mark.parametrize("obs", ALL_BRANCHES, ids=[case[0] for case in CASES])
def test_source_drifted_when_observed(obs: Observed, observed_drift: Cond) -> None:
    plain_fields, plain = compose(obs)
    fields, conds = compose(replace(obs, drift=observed_drift))
    assert conds[0] == ConditionReport(
        type="SourceDrifted", status=observed_drift[0], reason=observed_drift[1], message=observed_drift[2]
    )
    assert conds[1:] == plain  # the other conditions are unaffected
    assert fields == plain_fields


# -- accelerator -----------------------------------------------------------------------------------

NOTE = "; no node has a GPU with 24 GiB free"


@pytest.mark.parametrize(
    ("obs", "available_message"),
    [
        (
            Observed(cached=CACHED),
            f"staged at {CACHED.path} (1.5 GiB, sha256 verified against spec.sha256){NOTE}",
        ),
        (
            Observed(cached=MOUNTED),
            f"{MOUNT_MESSAGE} (1.5 GiB, sha256 verified against spec.sha256){NOTE}",
        ),
        (
            Observed(cached=MOUNTED, fetching=VERIFY),
            f"{MOUNT_MESSAGE} (1.5 GiB, sha256 verified against spec.sha256){NOTE}",
        ),
        (Observed(cached=MOUNTED, failure=MISMATCH), f"{MOUNT_MESSAGE} (last verified){NOTE}"),
        (
            Observed(cached=CACHED, fetching=DOWNLOAD),
            f"serving the cached copy until the refresh completes{NOTE}",
        ),
        (Observed(cached=CACHED, failure=RETRYING), f"serving the cached copy at {CACHED.path}{NOTE}"),
    ],
    ids=[
        "cached",
        "mounted",
        "reverifying-mounted",
        "reverify-failed-mounted",
        "refreshing",
        "refresh-failed",
    ],
)
def test_accelerator_not_ready_appends_to_available(obs: Observed, available_message: str) -> None:
    fields, conds = compose(replace(obs, accelerator=NO_GPU))
    assert fields["acceleratorReady"] is False
    status, reason, message = conditions(conds)["Available"]
    assert (status, reason) == ("True", "ModelReady")
    assert message == available_message
    # Ready, with or without a GPU: the accelerator only adds a note.
    assert fields["phase"] == compose(obs)[0]["phase"]


@pytest.mark.parametrize(
    "accelerator",
    [(True, ""), (True, "a message that is ignored while ready"), (False, "")],
    ids=["ready", "ready-with-message", "not-ready-no-message"],
)
def test_accelerator_without_note(accelerator: tuple[bool, str]) -> None:
    fields, conds = compose(Observed(cached=CACHED, accelerator=accelerator))
    assert fields["acceleratorReady"] is accelerator[0]
    assert conditions(conds)["Available"][2] == (
        f"staged at {CACHED.path} (1.5 GiB, sha256 verified against spec.sha256)"
    )


@pytest.mark.parametrize(
    "obs",
    [
        Observed(),
        Observed(pending=PENDING),
        Observed(fetching=DOWNLOAD),
        Observed(fetching=VERIFY),
        Observed(failure=PERMANENT),
    ],
    ids=["nothing", "pending", "fetching", "verifying", "failed"],
)
def test_accelerator_note_not_added_when_unavailable(obs: Observed) -> None:
    _, plain = compose(obs)
    fields, conds = compose(replace(obs, accelerator=NO_GPU))
    assert fields["acceleratorReady"] is False
    assert conds == plain
