"""Version constraints for AIMClusterModelSource filters: tag parsing, npm-style ranges, the seed's
prerelease rule, rejected input and the normalised form."""

from __future__ import annotations

import re

import pytest
import semver

from aim_registry_sync.versions import Comparator, InvalidRange, Range, parse_version

V = semver.Version.parse


# --- tags --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("0.8.0", "0.8.0"),
        ("v0.8.5", "0.8.5"),
        ("0.8.1-rc1", "0.8.1-rc1"),
        ("0.8.5-rc1", "0.8.5-rc1"),
        ("v1.0.0-rc.1", "1.0.0-rc.1"),
        ("1.2.3+build.7", "1.2.3+build.7"),
        ("10.20.30", "10.20.30"),
        # not strict semver: never coerced
        ("latest", None),
        ("dev", None),
        ("1.0", None),
        ("v1", None),
        ("1.0.0.0", None),
        ("01.2.3", None),
        ("1.2.3-rc.01", None),
        ("vv1.2.3", None),
        ("V1.2.3", None),
        ("", None),
        ("v", None),
        ("sha-0123abc", None),
    ],
)
def test_parse_version(tag: str, expected: str | None) -> None:
    got = parse_version(tag)
    assert (None if got is None else str(got)) == expected


# --- normalised form ---------------------------------------------------------------------------------


NORMALISED = [
    # primitive comparators
    ("1.2.3", "1.2.3"),
    ("=1.2.3", "1.2.3"),
    ("v1.2.3", "1.2.3"),
    ("=v1.2.3", "1.2.3"),
    (">1.2.3", ">1.2.3"),
    (">=1.2.3", ">=1.2.3"),
    ("<=1.2.3", "<=1.2.3"),
    ("<1.2.3", "<1.2.3-0"),  # an exclusive upper bound excludes the bound's prereleases
    ("<1.2.3-rc.2", "<1.2.3-rc.2"),
    ("!=1.2.3", "!=1.2.3"),
    (">=1.2.3+build", ">=1.2.3"),  # build metadata never affects precedence
    # whitespace after an operator, around the range
    (">= 1.2.3", ">=1.2.3"),
    ("  >=1.2.3   <  2.0.0  ", ">=1.2.3 <2.0.0-0"),
    # caret
    ("^1.2.3", ">=1.2.3 <2.0.0-0"),
    ("^0.2.3", ">=0.2.3 <0.3.0-0"),
    ("^0.0.3", ">=0.0.3 <0.0.4-0"),
    ("^1.2.3-beta.2", ">=1.2.3-beta.2 <2.0.0-0"),
    ("^0.0.3-beta", ">=0.0.3-beta <0.0.4-0"),
    ("^1.2", ">=1.2.0 <2.0.0-0"),
    ("^1.2.x", ">=1.2.0 <2.0.0-0"),
    ("^1.x", ">=1.0.0 <2.0.0-0"),
    ("^1", ">=1.0.0 <2.0.0-0"),
    ("^0.1", ">=0.1.0 <0.2.0-0"),
    ("^0.0", ">=0.0.0 <0.1.0-0"),
    ("^0.0.x", ">=0.0.0 <0.1.0-0"),
    ("^0.x", ">=0.0.0 <1.0.0-0"),
    ("^0", ">=0.0.0 <1.0.0-0"),
    ("^*", "*"),
    ("^ 1.2.3", ">=1.2.3 <2.0.0-0"),
    # tilde
    ("~1.2.3", ">=1.2.3 <1.3.0-0"),
    ("~>1.2.3", ">=1.2.3 <1.3.0-0"),
    ("~1.2", ">=1.2.0 <1.3.0-0"),
    ("~1.2.x", ">=1.2.0 <1.3.0-0"),
    ("~1", ">=1.0.0 <2.0.0-0"),
    ("~1.x", ">=1.0.0 <2.0.0-0"),
    ("~0.2.3", ">=0.2.3 <0.3.0-0"),
    ("~0.0.1", ">=0.0.1 <0.1.0-0"),
    ("~1.2.3-beta.2", ">=1.2.3-beta.2 <1.3.0-0"),
    ("~*", "*"),
    # x-ranges and partial versions
    ("*", "*"),
    ("x", "*"),
    ("X", "*"),
    ("x.x.x", "*"),
    ("1.x", ">=1.0.0 <2.0.0-0"),
    ("1.X", ">=1.0.0 <2.0.0-0"),
    ("1.x.x", ">=1.0.0 <2.0.0-0"),
    ("1", ">=1.0.0 <2.0.0-0"),
    ("1.2.*", ">=1.2.0 <1.3.0-0"),
    ("1.2.x", ">=1.2.0 <1.3.0-0"),
    ("1.2", ">=1.2.0 <1.3.0-0"),
    ("=1.2", ">=1.2.0 <1.3.0-0"),
    ("v1.2", ">=1.2.0 <1.3.0-0"),
    (">=1.2", ">=1.2.0"),
    (">=1", ">=1.0.0"),
    (">1.2", ">=1.3.0"),
    (">1", ">=2.0.0"),
    ("<1.2", "<1.2.0-0"),
    ("<1", "<1.0.0-0"),
    ("<=1.2", "<1.3.0-0"),
    ("<=1", "<2.0.0-0"),
    (">=*", "*"),
    ("<=*", "*"),
    ("=*", "*"),
    # hyphen ranges
    ("1.2.3 - 2.3.4", ">=1.2.3 <=2.3.4"),
    ("v1.2.3 - v2.3.4", ">=1.2.3 <=2.3.4"),
    ("1.2 - 2.3.4", ">=1.2.0 <=2.3.4"),
    ("1.2.3 - 2.3", ">=1.2.3 <2.4.0-0"),
    ("1.2.3 - 2", ">=1.2.3 <3.0.0-0"),
    ("1.2.3 - 2.x", ">=1.2.3 <3.0.0-0"),
    ("* - 2", "<3.0.0-0"),
    ("1.2.3 - *", ">=1.2.3"),
    ("1.0.0-rc1 - 1.0.0", ">=1.0.0-rc1 <=1.0.0"),
    # AND / OR
    (">=0.8.0 <1.0.0", ">=0.8.0 <1.0.0-0"),
    ("<1.0.0 || >=2.0.0", "<1.0.0-0 || >=2.0.0"),
    ("^1 || ^3.1", ">=1.0.0 <2.0.0-0 || >=3.1.0 <4.0.0-0"),
    ("1.2.3||2.0.0", "1.2.3 || 2.0.0"),
    ("* || 1.2.3", "* || 1.2.3"),
    ("1.2.3 - 2.3.4 || ^3", ">=1.2.3 <=2.3.4 || >=3.0.0 <4.0.0-0"),
    (">=1.0.0 !=1.2.3 <2", ">=1.0.0 !=1.2.3 <2.0.0-0"),
    ("* >=1.2.3", ">=1.2.3"),
]


@pytest.mark.parametrize(("text", "normalised"), NORMALISED)
def test_normalised_form(text: str, normalised: str) -> None:
    assert str(Range.parse(text)) == normalised


@pytest.mark.parametrize(("text", "normalised"), NORMALISED)
def test_normalised_form_round_trips(text: str, normalised: str) -> None:
    parsed = Range.parse(text)
    assert Range.parse(normalised) == parsed
    assert str(Range.parse(normalised)) == normalised


# --- matching ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tag", "expected"),
    [
        # the CRD's typical window, against the tags a registry really holds
        (">=0.8.0 <1.0.0", "0.8.0", True),
        (">=0.8.0 <1.0.0", "0.9.12", True),
        (">=0.8.0 <1.0.0", "v0.8.5", True),
        (">=0.8.0 <1.0.0", "0.9.0-rc1", True),  # seed: a prerelease compares by precedence
        (">=0.8.0 <1.0.0", "0.8.5-rc1", True),
        (">=0.8.0 <1.0.0", "0.8.0-rc1", False),  # precedes 0.8.0
        (">=0.8.0 <1.0.0", "1.0.0-rc1", False),  # a 1.0.0 release candidate is not below 1.0.0
        (">=0.8.0 <1.0.0", "1.0.0", False),
        (">=0.8.0 <1.0.0", "0.7.9", False),
        (">=0.8.0 <1.0.0", "latest", False),
        (">=0.8.0 <1.0.0", "1.0", False),
        (">=0.8.0 <1.0.0", "0.9", False),  # partial tags are not coerced
        (">=0.8.0 <1.0.0", "dev", False),
        # seed examples for ModelSourceFilter.versions
        (">=0.8.0", "0.8.1-rc1", True),
        (">=0.8.1-rc1", "0.8.1-rc1", True),
        (">=0.8.1-rc1", "0.8.1-rc2", True),
        (">=0.8.1-rc1", "0.8.1", True),
        (">=0.8.1-rc1", "0.8.1-beta", False),
        (">=0.8.1-rc1", "0.8.0", False),
        (">=1.0.0", "1.0.0", True),
        (">=1.0.0", "v1.0.0", True),
        (">=1.0.0", "1.0.0-rc1", False),
        ("<2.0.0", "1.99.0", True),
        ("<2.0.0", "2.0.0-rc1", False),
        ("~1.2.0", "1.2.9", True),
        ("~1.2.0", "1.3.0", False),
        ("^1.0.0", "1.9.0", True),
        ("^1.0.0", "2.0.0", False),
        # each primitive operator
        ("1.2.3", "1.2.3", True),
        ("1.2.3", "1.2.4", False),
        ("1.2.3", "1.2.3-rc1", False),
        ("=1.2.3", "1.2.3+build.5", True),  # build metadata is ignored
        ("!=1.2.3", "1.2.4", True),
        ("!=1.2.3", "1.2.3", False),
        ("!=1.2.3", "1.2.3-rc1", True),
        (">1.2.3", "1.2.4", True),
        (">1.2.3", "1.2.3", False),
        (">1.2.3", "1.2.4-rc1", True),
        (">=1.2.3", "1.2.3", True),
        (">=1.2.3", "1.2.2", False),
        ("<1.2.3", "1.2.2", True),
        ("<1.2.3", "1.2.3", False),
        ("<1.2.3", "1.2.3-alpha", False),
        ("<1.2.3", "1.2.2-rc1", True),
        ("<1.2.3-rc.2", "1.2.3-rc.1", True),
        ("<1.2.3-rc.2", "1.2.3-rc.2", False),
        ("<=1.2.3", "1.2.3", True),
        ("<=1.2.3", "1.2.3-rc1", True),
        ("<=1.2.3", "1.2.4", False),
        # caret / tilde edges
        ("^0.2.3", "0.2.9", True),
        ("^0.2.3", "0.3.0", False),
        ("^0.2.3", "0.2.2", False),
        ("^0.0.3", "0.0.3", True),
        ("^0.0.3", "0.0.4", False),
        ("^0.0.3", "0.0.4-rc1", False),
        ("^0.0.3", "0.0.3-rc1", False),
        ("^0.0.3-beta", "0.0.3-rc1", True),
        ("^1.x", "1.0.0", True),
        ("^1.x", "1.99.99", True),
        ("^1.x", "2.0.0-rc1", False),
        ("^1.x", "0.9.0", False),
        ("^1.2.3-beta.2", "1.2.3-beta.4", True),
        ("^1.2.3-beta.2", "1.2.3-beta.1", False),
        ("^1.2.3-beta.2", "1.5.0-beta.1", True),  # precedence, not npm's same-tuple rule
        ("~1.2", "1.2.99", True),
        ("~1.2", "1.3.0", False),
        ("~1.2", "1.3.0-rc1", False),
        ("~1", "1.9.0", True),
        ("~1.2.3", "1.2.2", False),
        # x-ranges
        ("*", "0.0.0", True),
        ("*", "99.0.0", True),
        ("*", "1.0.0-rc1", True),  # seed: prereleases are semver tags like any other
        ("*", "latest", False),  # seed: non-semver tags are skipped
        ("1.x", "1.0.0", True),
        ("1.x", "1.0.0-rc1", False),
        ("1.x", "2.0.0", False),
        ("1.2.*", "1.2.0", True),
        ("1.2.*", "1.3.0", False),
        ("1.2", "1.2.7", True),
        (">=1.2", "1.2.0", True),
        (">=1.2", "1.1.9", False),
        (">1.2", "1.2.9", False),
        (">1.2", "1.3.0", True),
        ("<=1.2", "1.2.9", True),
        ("<=1.2", "1.3.0-rc1", False),
        ("<1.2", "1.1.9", True),
        ("<1.2", "1.2.0-rc1", False),
        # hyphen
        ("1.2.3 - 2.3.4", "2.3.4", True),
        ("1.2.3 - 2.3.4", "2.3.5", False),
        ("1.2.3 - 2.3", "2.3.9", True),
        ("1.2.3 - 2.3", "2.4.0", False),
        # AND / OR
        ("<1.0.0 || >=2.0.0", "0.9.0", True),
        ("<1.0.0 || >=2.0.0", "1.5.0", False),
        ("<1.0.0 || >=2.0.0", "2.0.0", True),
        ("^0.2 || ~2.3.4 >2.3.4", "2.3.4", False),
        ("^0.2 || ~2.3.4 >2.3.4", "2.3.5", True),
        (">=1.0.0 !=1.2.3 <2", "1.2.3", False),
        (">=1.0.0 !=1.2.3 <2", "1.2.4", True),
        ("1.0.0 2.0.0", "1.0.0", False),  # AND of two exact versions matches nothing
        ("1.0.0 || 2.0.0", "v2.0.0", True),
    ],
)
def test_matches_tag(text: str, tag: str, expected: bool) -> None:
    rng = Range.parse(text)
    assert rng.matches_tag(tag) is expected
    version = parse_version(tag)
    if version is not None:
        assert rng.matches(version) is expected


# Sets recorded from npm's node-semver 7 (`semver.satisfies(v, range)`); for release versions our rules
# and npm's agree exactly, they only part on prereleases (see the module docstring).
NPM_VERSIONS = [
    "0.0.3", "0.0.4", "0.2.3", "0.2.9", "0.3.0", "0.8.0", "0.9.12", "1.0.0", "1.2.0", "1.2.2",
    "1.2.3", "1.2.9", "1.3.0", "1.9.9", "2.0.0", "2.3.4", "2.3.5", "2.4.0", "3.0.0",
]  # fmt: skip
NPM_MATCHES = {
    "^1.2.3": {"1.2.3", "1.2.9", "1.3.0", "1.9.9"},
    "^0.2.3": {"0.2.3", "0.2.9"},
    "^0.0.3": {"0.0.3"},
    "^1.x": {"1.0.0", "1.2.0", "1.2.2", "1.2.3", "1.2.9", "1.3.0", "1.9.9"},
    "~1.2.3": {"1.2.3", "1.2.9"},
    "~1.2": {"1.2.0", "1.2.2", "1.2.3", "1.2.9"},
    "~1": {"1.0.0", "1.2.0", "1.2.2", "1.2.3", "1.2.9", "1.3.0", "1.9.9"},
    ">=0.8.0 <1.0.0": {"0.8.0", "0.9.12"},
    "1.x": {"1.0.0", "1.2.0", "1.2.2", "1.2.3", "1.2.9", "1.3.0", "1.9.9"},
    "1.2.*": {"1.2.0", "1.2.2", "1.2.3", "1.2.9"},
    "1.2": {"1.2.0", "1.2.2", "1.2.3", "1.2.9"},
    "*": set(NPM_VERSIONS),
    ">1.2": {"1.3.0", "1.9.9", "2.0.0", "2.3.4", "2.3.5", "2.4.0", "3.0.0"},
    "<=1.2": {
        "0.0.3",
        "0.0.4",
        "0.2.3",
        "0.2.9",
        "0.3.0",
        "0.8.0",
        "0.9.12",
        "1.0.0",
        "1.2.0",
        "1.2.2",
        "1.2.3",
        "1.2.9",
    },
    ">=1.2": {
        "1.2.0",
        "1.2.2",
        "1.2.3",
        "1.2.9",
        "1.3.0",
        "1.9.9",
        "2.0.0",
        "2.3.4",
        "2.3.5",
        "2.4.0",
        "3.0.0",
    },
    "<1": {"0.0.3", "0.0.4", "0.2.3", "0.2.9", "0.3.0", "0.8.0", "0.9.12"},
    "1.2.3 - 2.3.4": {"1.2.3", "1.2.9", "1.3.0", "1.9.9", "2.0.0", "2.3.4"},
    "1.2.3 - 2.3": {"1.2.3", "1.2.9", "1.3.0", "1.9.9", "2.0.0", "2.3.4", "2.3.5"},
    "<0.3.0 || >=2.3.4": {"0.0.3", "0.0.4", "0.2.3", "0.2.9", "2.3.4", "2.3.5", "2.4.0", "3.0.0"},
    "^0.2 || ~2.3.4 >2.3.4": {"0.2.3", "0.2.9", "2.3.5"},
    ">=v1.2.3 <=2": {"1.2.3", "1.2.9", "1.3.0", "1.9.9", "2.0.0", "2.3.4", "2.3.5", "2.4.0"},
}


@pytest.mark.parametrize("text", NPM_MATCHES)
def test_release_versions_agree_with_npm(text: str) -> None:
    rng = Range.parse(text)
    assert {v for v in NPM_VERSIONS if rng.matches(V(v))} == NPM_MATCHES[text]


def test_comparator_direct() -> None:
    assert Comparator(">=", V("1.0.0")).matches(V("1.0.1"))
    assert not Comparator("<", V("1.0.0")).matches(V("1.0.0"))
    assert str(Comparator("=", V("1.0.0"))) == "1.0.0"
    assert str(Comparator("!=", V("1.0.0-rc1"))) == "!=1.0.0-rc1"


def test_ranges_are_hashable_values() -> None:
    assert Range.parse("^1.2.3") == Range.parse(">=1.2.3 <2.0.0-0")
    assert len({Range.parse("~1.2"), Range.parse("1.2.x"), Range.parse("1.2")}) == 1


# --- invalid input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty version range"),
        ("   ", "empty version range"),
        ("1.0.0 ||", "empty alternative"),
        ("|| 1.0.0", "empty alternative"),
        ("1.0.0 |||| 2.0.0", "empty alternative"),
        (">=abc", "invalid version 'abc' in '>=abc'"),
        ("^^1", "invalid version '^1' in '^^1'"),
        ("~~1.2", "invalid version '~1.2' in '~~1.2'"),
        (">=", "missing version in '>='"),
        ("1.0.0 <", "missing version in '<'"),
        ("^", "missing version in '^'"),
        ("=>1.0.0", "invalid version '>1.0.0' in '=>1.0.0'"),
        ("latest", "invalid version 'latest'"),
        ("1.2.3.4", "invalid version '1.2.3.4'"),
        ("01.2.3", "invalid version '01.2.3'"),
        ("1.2.3-rc.01", "invalid version '1.2.3-rc.01'"),
        ("1.2-rc1", "invalid version '1.2-rc1'"),
        ("1.2.x-rc1", "prerelease needs a full version"),
        ("1.x.3", "a wildcard must be followed by wildcards only"),
        ("x.2", "a wildcard must be followed by wildcards only"),
        ("!=1.2", "!= needs a full version"),
        ("!=*", "'!=*' can never match"),
        ("<*", "'<*' can never match"),
        (">x", "'>x' can never match"),
        ("1.2.3 -", "invalid version '-' in '-'"),
        ("1.2.3 - abc", "invalid version 'abc' in '1.2.3 - abc'"),
        (">=1.2.3 - 2.0.0", "invalid version '>=1.2.3' in '>=1.2.3 - 2.0.0'"),
        ("1.0.0 && 2.0.0", "invalid version '&&'"),
        ("V1.2.3", "invalid version 'V1.2.3'"),
    ],
)
def test_invalid_ranges(text: str, message: str) -> None:
    with pytest.raises(InvalidRange, match=re.escape(message)):
        Range.parse(text)


def test_invalid_range_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid version"):
        Range.parse(">=1.0.0 <two")
