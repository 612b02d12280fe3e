"""AIMClusterModelSource filters: parsing, matching, ordering, maxModels planning, durations, and what
a sync reports."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from aim_registry_sync.filters import (
    Filter,
    Image,
    InvalidFilter,
    order_tags,
    parse_duration,
    parse_filters,
    plan,
)
from aim_registry_sync.sync import Created, FilterError, Listing, sync_interval, sync_report
from aimcore.api.crds.aim import AIMClusterModelSourceSpec

TAGS = ["0.7.0", "0.8.0", "v0.8.5", "0.8.1-rc1", "0.9.0", "1.0.0-rc1", "1.0.0", "latest", "dev"]


def spec(*filters: dict[str, Any], **extra: Any) -> AIMClusterModelSourceSpec:
    return AIMClusterModelSourceSpec.model_validate({"filters": list(filters), **extra})


def one(image: str, registry: str = "docker.io", **fields: Any) -> Filter:
    return parse_filters(spec({"image": image, **fields}, registry=registry))[0]


@pytest.mark.parametrize(
    ("image", "registry", "want"),
    [
        ("amdenterpriseai/aim-*", "docker.io", ("docker.io", "amdenterpriseai/aim-*", None, True)),
        ("silogen/aim-llama:1.0.0", "ghcr.io", ("ghcr.io", "silogen/aim-llama", "1.0.0", False)),
        (
            "ghcr.io/silogen/aim-gemma:0.8.1-rc1",
            "docker.io",
            ("ghcr.io", "silogen/aim-gemma", "0.8.1-rc1", False),
        ),
        ("ghcr.io/silogen/aim-*", "docker.io", ("ghcr.io", "silogen/aim-*", None, True)),
        ("127.0.0.1:5000/team/model", "docker.io", ("127.0.0.1:5000", "team/model", None, False)),
        ("localhost:5000/x/*:1.0", "docker.io", ("localhost:5000", "x/*", "1.0", True)),
        ("silogen/aim-llama", "GHCR.io", ("ghcr.io", "silogen/aim-llama", None, False)),
    ],
)
def test_parse_filter(image: str, registry: str, want: tuple[str, str, str | None, bool]) -> None:
    f = one(image, registry)
    assert (f.registry, f.repository, f.tag, f.wildcard) == want


@pytest.mark.parametrize(
    ("pattern", "repo", "match"),
    [
        ("silogen/aim-*", "silogen/aim-llama", True),
        ("silogen/aim-*", "silogen/aim-", True),
        ("silogen/aim-*", "other/aim-llama", False),
        ("*/aim-*", "silogen/aim-llama", True),
        ("silogen/*-llama", "silogen/aim-meta-llama", True),
        ("silogen/*-llama", "silogen/aim-llama-2", False),
        ("*", "a/b/c", True),
        ("silogen/aim.x*", "silogen/aimZx", False),  # '.' is literal
        ("silogen/aim-llama", "silogen/aim-llama", True),
        ("silogen/aim-llama", "silogen/aim-llama2", False),
    ],
)
def test_repository_matching(pattern: str, repo: str, match: bool) -> None:
    assert one(pattern).matches_repository(repo) is match


def test_exclude_is_exact_and_ignores_registry() -> None:
    f = one("ghcr.io/silogen/aim-*", exclude=["silogen/aim-base"])
    assert not f.matches_repository("silogen/aim-base")
    assert f.matches_repository("silogen/aim-base-2")
    assert f.matches_repository("silogen/aim-llama")


@pytest.mark.parametrize(
    ("filter_versions", "global_versions", "want"),
    [
        (None, None, order_tags(TAGS)),  # no constraints: every tag, non-semver included
        (None, [">=0.8.0 <1.0.0"], ["0.9.0", "v0.8.5", "0.8.1-rc1", "0.8.0"]),
        (None, [">=0.8.0", "<0.9.0"], ["v0.8.5", "0.8.1-rc1", "0.8.0"]),  # a list is ANDed
        ([">=1.0.0"], [">=0.8.0 <1.0.0"], ["1.0.0"]),  # the filter's versions override global
        ([], [">=0.9.0"], ["1.0.0", "1.0.0-rc1", "0.9.0"]),  # empty filter versions → global
        (["^0.8.0"], None, ["v0.8.5", "0.8.1-rc1", "0.8.0"]),
        (["*"], None, ["1.0.0", "1.0.0-rc1", "0.9.0", "v0.8.5", "0.8.1-rc1", "0.8.0", "0.7.0"]),
        ([">=0.8.1-rc1 <0.8.5"], None, ["0.8.1-rc1"]),
    ],
)
def test_version_constraints(filter_versions, global_versions, want) -> None:  # type: ignore[no-untyped-def]
    s = spec({"image": "org/repo", "versions": filter_versions}, versions=global_versions)
    assert parse_filters(s)[0].select_tags(TAGS) == want


def test_exact_tag_overrides_versions() -> None:
    s = spec({"image": "org/repo:latest", "versions": [">=1.0.0"]}, versions=[">=2.0.0"])
    f = parse_filters(s)[0]
    assert f.select_tags(TAGS) == ["latest"]
    assert f.constraints == ()


@pytest.mark.parametrize(
    ("filters", "extra", "message"),
    [
        ([{"image": "org/repo", "versions": [">=banana"]}], {}, "filters[0].versions: invalid version"),
        ([{"image": "a/b"}, {"image": "org/repo"}], {"versions": ["~>"]}, "spec.versions: invalid version"),
        ([{"image": "Org/Repo"}], {}, "filters[0].image"),
        ([{"image": "org/repo@sha256:" + "a" * 64}], {}, "digests are not supported"),
        ([{"image": "org/repo:bad tag"}], {}, "filters[0].image"),
        ([{"image": "a/b"}], {"registry": "https://"}, "spec.registry"),
        # used to be trimmed, or accepted with a port no registry can listen on
        ([{"image": "org/repo:1.0\n"}], {}, "filters[0].image 'org/repo:1.0"),
        ([{"image": " org/repo"}], {}, "contains whitespace"),
        ([{"image": "ghcr.io:99999/org/repo"}], {}, "port 99999 is not in 1-65535"),
        ([{"image": "a/b"}], {"registry": "ghcr.io\n"}, "spec.registry"),
        ([{"image": "a/b"}], {"registry": "ghcr.io:99999"}, "port 99999"),
    ],
)
def test_invalid_filters(filters: list[dict[str, Any]], extra: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidFilter, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_filters(spec(*filters, **extra))


def test_tag_order_is_newest_semver_first_then_text() -> None:
    assert order_tags(["b", "1.0.0", "a", "1.10.0", "1.2.0", "1.0.0-rc1", "v1.2.0", "1.2.0"]) == [
        "1.10.0",
        "1.2.0",
        "v1.2.0",
        "1.0.0",
        "1.0.0-rc1",
        "a",
        "b",
    ]


def img(repo: str, tag: str, registry: str = "r.example:5000") -> Image:
    return Image(registry, repo, tag)


def test_plan_respects_max_models_in_order_and_never_deletes() -> None:
    matched = [img("a", "2.0.0"), img("a", "1.0.0"), img("b", "1.0.0"), img("a", "2.0.0"), img("c", "1.0.0")]
    existing = {img("b", "1.0.0").uri, img("zzz", "9.9.9").uri}  # zzz no longer matches: kept
    p = plan(matched, existing, existing_count=2, max_models=3)
    assert p.create == (img("a", "2.0.0"),)
    assert p.present == (img("b", "1.0.0"),)
    assert p.over_limit == (img("a", "1.0.0"), img("c", "1.0.0"))
    unlimited = plan(matched, set(), existing_count=0, max_models=100)
    assert [i.uri for i in unlimited.create] == [
        "r.example:5000/a:2.0.0",
        "r.example:5000/a:1.0.0",
        "r.example:5000/b:1.0.0",
        "r.example:5000/c:1.0.0",
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1h", 3600),
        ("15m", 900),
        ("30s", 30),
        ("1h30m", 5400),
        ("2h30m15s", 9015),
        ("1.5h", 5400),
        ("300ms", 0.3),
        ("0", 0),
        ("", 3600),
        (None, 3600),
    ],
)
def test_parse_duration(text: str | None, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["1", "1d", "h", "1h 30m", "-5m", "abc", "1.h2"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(InvalidFilter, match="syncInterval"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "seconds", "clamped"),
    [("1h", 3600, False), ("30s", 30, False), ("29s", 30, True), ("1ms", 30, True), ("0", 30, True)],
)
def test_sync_interval_is_clamped_and_says_so(text: str, seconds: float, clamped: bool) -> None:
    every = sync_interval(text)
    assert every.seconds == seconds
    condition = every.condition
    assert (condition.type, condition.status) == ("ConfigValid", "True")
    if clamped:
        assert condition.reason == "SyncIntervalClamped"
        assert condition.message == f"syncInterval {text} is below the minimum of 30s; syncing every 30s"
    else:
        assert (condition.reason, condition.message) == ("ConfigurationValid", "")


def _image(tag: str) -> Image:
    return Image("docker.io", "amdenterpriseai/aim-qwen", tag)


def test_a_sync_over_maxmodels_is_ready_and_names_the_images_left_without_a_model() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    the_plan = plan([_image("1.0.0"), _image("1.1.0"), _image("1.2.0")], {_image("1.0.0").uri}, 1, 2)
    outcome = Created(created=[_image("1.1.0")])

    synced = sync_report(
        Listing(matched=list(the_plan.create)),
        the_plan,
        outcome,
        1,
        every=sync_interval("1h"),
        max_models=2,
        at=at,
    )

    assert [(c.type, c.status, c.reason) for c in synced.conditions] == [
        ("ConfigValid", "True", "ConfigurationValid"),
        ("RegistryReachable", "True", "Reachable"),
        ("MaxModelsLimitReached", "True", "LimitReached"),
        ("Ready", "True", "Synced"),
    ]
    assert synced.conditions[2].message == (
        "maxModels 2 reached: 1 matching image(s) have no model (amdenterpriseai/aim-qwen:1.2.0)"
    )
    assert synced.summary == (
        "3 matching image(s); created 1, 1 already present, 1 over maxModels, 0 owned by another source"
    )
    assert synced.conditions[3].message == synced.summary
    assert synced.fields == {
        "status": "Ready",
        "lastSyncTime": "2026-01-02T03:04:05Z",
        "discoveredModels": 2,
        "availableModels": 3,
        "modelsLimitReached": True,
    }
    assert synced.problems == []


def test_a_sync_with_a_failed_filter_or_create_is_degraded_and_says_every_problem() -> None:
    failed = one("amdenterpriseai/aim-*")
    listing = Listing(errors=[FilterError(failed, "AuthFailed", "401 from docker.io", transient=True)])
    the_plan = plan([], set(), 0, 10)
    outcome = Created(errors=["amdenterpriseai/aim-qwen:1.0.0: refused"])

    synced = sync_report(
        listing,
        the_plan,
        outcome,
        0,
        every=sync_interval("10s"),
        max_models=10,
        at=datetime(2026, 1, 2, tzinfo=UTC),
    )

    problems = [
        "filters[0] (amdenterpriseai/aim-*): 401 from docker.io",
        "create amdenterpriseai/aim-qwen:1.0.0: refused",
    ]
    assert synced.problems == problems
    assert [(c.type, c.status, c.reason, c.message) for c in synced.conditions[1:]] == [
        ("RegistryReachable", "False", "AuthFailed", "; ".join(problems)),
        ("MaxModelsLimitReached", "False", "WithinLimit", "0 of at most 10 models"),
        ("Ready", "False", "SomeFiltersFailed", "; ".join(problems)),
    ]
    assert synced.conditions[0].reason == "SyncIntervalClamped"
    assert (synced.fields["status"], synced.fields["modelsLimitReached"]) == ("Degraded", False)
