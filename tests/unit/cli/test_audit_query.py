"""Audit queries: kind names as kubectl users write them, time bounds, and the subject filters
the server applies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from aimcore.api.bus import subjects
from aimcore.api.kinds import by_kind
from aimctl.audit.query import (
    KindError,
    Query,
    TimeError,
    display_kind,
    parse_duration,
    parse_time,
    parse_types,
    resolve_kind,
)

AIM = "aim.eai.amd.com"
SILOGEN = "aim.silogen.ai"


@pytest.mark.parametrize(
    ("text", "group", "kind"),
    [
        ("aimsvc", AIM, "AIMService"),
        ("AIMService", AIM, "AIMService"),
        ("aimservice", AIM, "AIMService"),
        ("aimservices", AIM, "AIMService"),
        ("AIMSERVICES", AIM, "AIMService"),
        ("aimservices.aim.eai.amd.com", AIM, "AIMService"),
        ("aimservices.aim.silogen.ai", SILOGEN, "AIMService"),
        ("AIMService.aim.silogen.ai", SILOGEN, "AIMService"),
        ("aimservices.silogen", SILOGEN, "AIMService"),
        ("aimservices.v1alpha1.aim.silogen.ai", SILOGEN, "AIMService"),
        ("aimtpl", AIM, "AIMServiceTemplate"),
        ("aimst", SILOGEN, "AIMServiceTemplate"),  # a short name only the legacy group has
        ("aimimg", SILOGEN, "AIMImage"),
        ("aimclustermodel", AIM, "AIMClusterModel"),
        ("mdl", "inference.llmkube.dev", "Model"),
        ("models", "inference.llmkube.dev", "Model"),
        ("inferenceservices", "serving.kserve.io", "InferenceService"),
    ],
)
def test_kind_names_resolve_like_kubectl(text: str, group: str, kind: str) -> None:
    ref = resolve_kind(text)
    assert (ref.group, ref.kind) == (group, kind)
    assert ref == by_kind(group, kind)


def test_ambiguous_kind_prefers_the_current_api_and_group_qualifies() -> None:
    current, legacy = resolve_kind("aimmodel"), resolve_kind("aimmodels.aim.silogen.ai")
    assert current.group == AIM and legacy.group == SILOGEN
    assert current != legacy
    # Short names differ between the groups, so each picks its own.
    assert resolve_kind("aimrc").group == AIM
    assert resolve_kind("aimrcfg").group == SILOGEN


@pytest.mark.parametrize(
    "text", ["", "nosuchkind", "aimsvc.nosuch.group", "aimsvc.v2.aim.eai.amd.com", "a/b"]
)
def test_unknown_kinds_are_errors(text: str) -> None:
    with pytest.raises(KindError):
        resolve_kind(text)


def test_display_kind_qualifies_only_other_groups() -> None:
    assert display_kind(AIM, "AIMService") == "AIMService"
    assert display_kind(SILOGEN, "AIMService") == "AIMService.aim.silogen.ai"


NOW = datetime(2025, 3, 4, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("10m", timedelta(minutes=10)),
        ("2h", timedelta(hours=2)),
        ("90s", timedelta(seconds=90)),
        ("1h30m", timedelta(minutes=90)),
        ("7d", timedelta(days=7)),
        ("1w", timedelta(days=7)),
        ("1.5h", timedelta(minutes=90)),
        ("250ms", timedelta(milliseconds=250)),
    ],
)
def test_durations_count_back_from_now(text: str, delta: timedelta) -> None:
    assert parse_duration(text) == delta
    assert parse_time(text, NOW) == NOW - delta


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("2025-01-02T15:04:05Z", datetime(2025, 1, 2, 15, 4, 5, tzinfo=UTC)),
        ("2025-01-02T15:04:05.250Z", datetime(2025, 1, 2, 15, 4, 5, 250000, tzinfo=UTC)),
        ("2025-01-02T17:04:05+02:00", datetime(2025, 1, 2, 15, 4, 5, tzinfo=UTC)),
        ("2025-01-02T15:04:05", datetime(2025, 1, 2, 15, 4, 5, tzinfo=UTC)),
        ("2025-01-02", datetime(2025, 1, 2, tzinfo=UTC)),
        ("now", NOW),
    ],
)
def test_absolute_times_are_utc(text: str, when: datetime) -> None:
    got = parse_time(text, NOW)
    assert got == when
    assert got.tzinfo == UTC


def test_now_in_another_zone_becomes_utc() -> None:
    east = NOW.astimezone(timezone(timedelta(hours=5)))
    assert parse_time("1h", east).tzinfo == UTC
    assert parse_time("1h", east) == NOW - timedelta(hours=1)


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "10x", "m10", "2025-13-01T00:00:00Z", "-5m"])
def test_bad_times_are_errors(text: str) -> None:
    with pytest.raises(TimeError):
        parse_time(text, NOW)


def test_query_filters_use_the_subject_builders() -> None:
    svc = resolve_kind("aimsvc")
    q = Query(kind=svc, namespace="team-a", name="llama.3")
    assert q.filters() == {
        "change": subjects.event_subject(svc, "team-a", "llama.3"),
        "status": "aim.status.*." + subjects.object_tokens(svc, "team-a", "llama.3"),
        "decision": "aim.decisions.*." + subjects.object_tokens(svc, "team-a", "llama.3"),
    }
    assert Query().filters() == {
        "change": "aim.events.>",
        "status": "aim.status.>",
        "decision": "aim.decisions.>",
    }
    assert Query(kind=svc).filters()["change"] == "aim.events.aim.AIMService.*.*"
    assert Query(namespace="team.b").filters()["status"] == "aim.status.*.*.*.team=2Eb.*"
    assert Query(name="x").filters()["decision"] == "aim.decisions.*.*.*.*.x"


def test_query_filters_for_cluster_scope_sources_and_types() -> None:
    cluster = resolve_kind("aimclustermodel")
    assert (
        Query(kind=cluster, namespace="ignored").filters()["change"] == "aim.events.aim.AIMClusterModel._.*"
    )
    by_source = Query(source="deployer").filters()
    assert set(by_source) == {"status", "decision"}  # change events come only from the watcher
    assert by_source["decision"] == "aim.decisions.deployer.>"
    assert by_source["status"] == "aim.status.deployer.>"  # the subject names the source
    assert set(Query(source="watcher").filters()) == {"change", "status", "decision"}
    assert set(Query(types=frozenset({"decision"})).filters()) == {"decision"}


def test_query_rejects_contradictions() -> None:
    with pytest.raises(ValueError, match="follow"):
        Query(follow=True, until=NOW)
    with pytest.raises(ValueError, match="since"):
        Query(since=NOW, until=NOW - timedelta(seconds=1))


def test_parse_types() -> None:
    assert parse_types([]) == frozenset({"change", "status", "decision"})
    assert parse_types(["change,decisions"]) == frozenset({"change", "decision"})
    assert parse_types(["status", "events"]) == frozenset({"status", "change"})
    with pytest.raises(ValueError, match="unknown record type"):
        parse_types(["logs"])
