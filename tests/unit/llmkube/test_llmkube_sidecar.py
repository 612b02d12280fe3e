"""The LLMKube fetch's sidecar (``aim_cache.llmkube.runs``: what a download recorded of its
upstream, read back or refused when corrupt) and the revision a fingerprint names, without a server
(the fetch against a real local HTTP server: ``tests/servers/test_llmkube_fetch.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aim_cache.llmkube import drift, fetch, runs


def test_sidecar_round_trip_local_fingerprint(tmp_path: Path) -> None:
    recorded = runs.Recorded(drift.Fingerprint(length=42, mtime=1_700_000_000.123456), 1_700_000_100.0)
    runs.write_sidecar(tmp_path, recorded)
    assert runs.read_sidecar(tmp_path) == recorded
    newer = runs.Recorded(drift.Fingerprint(etag="abc", length=43), 1_700_000_200.0)
    runs.write_sidecar(tmp_path, newer)  # replaced in place
    assert runs.read_sidecar(tmp_path) == newer
    assert sorted(p.name for p in tmp_path.iterdir()) == [runs.SIDECAR]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b'{"etag": "abc", "length": 4, "recordedAt": 1.0',  # truncated
        b'{"etag": "abc", "length": 4}',  # no recordedAt
        b'{"recordedAt": "yesterday"}',
        b'{"recordedAt": null}',
        b"\xff\xfe\x00garbage",
    ],
    ids=["empty", "not-json", "truncated", "no-recorded-at", "bad-recorded-at", "null-recorded-at", "binary"],
)
def test_read_sidecar_corrupt(tmp_path: Path, content: bytes) -> None:
    (tmp_path / runs.SIDECAR).write_bytes(content)
    assert runs.read_sidecar(tmp_path) is None


def test_read_sidecar_missing_or_a_directory(tmp_path: Path) -> None:
    assert runs.read_sidecar(tmp_path) is None
    assert runs.read_sidecar(tmp_path / "no-such-dir") is None
    (tmp_path / runs.SIDECAR).mkdir()
    assert runs.read_sidecar(tmp_path) is None


@pytest.mark.parametrize("content", [b"[]", b"null", b"1", b'"x"'], ids=["list", "null", "number", "string"])
def test_read_sidecar_non_object_json(tmp_path: Path, content: bytes) -> None:
    (tmp_path / runs.SIDECAR).write_bytes(content)
    assert runs.read_sidecar(tmp_path) is None


def test_read_sidecar_wrong_types(tmp_path: Path) -> None:
    (tmp_path / runs.SIDECAR).write_text(json.dumps({"etag": 5, "length": "big", "recordedAt": 1.0}))
    assert runs.read_sidecar(tmp_path) is None


def test_revision_of() -> None:
    assert fetch.revision_of(None) is None
    assert fetch.revision_of(drift.Fingerprint()) is None
    assert fetch.revision_of(drift.Fingerprint(etag="abc", length=5)) == "abc|5|None"
    assert fetch.revision_of(drift.Fingerprint(length=5, mtime=1.5)) == "None|5|1.5"
