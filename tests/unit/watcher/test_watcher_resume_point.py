"""A resume point survives its round trip through the bucket, and anything unreadable in its place
is no point at all (the next leader lists), never an exception."""

from __future__ import annotations

import pytest

from aim_watcher.resume import ResumePoint, decode, encode, key
from aimcore.api.kinds import by_kind


def test_a_point_round_trips() -> None:
    point = ResumePoint("123456", 789, "2026-11-27T11:00:00+00:00")
    assert decode(encode(point)) == point


@pytest.mark.parametrize(
    "raw",
    [
        None,
        b"",
        b"not json",
        b"[]",
        b'{"resourceVersion": "5"}',
        b'{"resourceVersion": "5", "publishedThrough": "many", "mirror": "m"}',
        b'{"resourceVersion": "", "publishedThrough": 3, "mirror": "m"}',
    ],
)
def test_anything_unreadable_is_no_point(raw: bytes | None) -> None:
    assert decode(raw) is None


def test_each_kind_has_its_own_key() -> None:
    a = key(by_kind("aim.eai.amd.com", "AIMModel"))
    b = key(by_kind("aim.silogen.ai", "AIMModel"))
    assert a != b and "." in a and ">" not in a and "*" not in a
