"""Pure parts of the downloader: model URI parsing, path safety, byte-range planning, S3 digest
extraction, the manifest and resume identity, and secret-free messages."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from huggingface_hub import hf_hub_url

from aim_cache_jobs.downloader import fetch, partial
from aim_cache_jobs.downloader.errors import (
    AUTH_ERROR,
    DOWNLOAD_STALLED,
    INVALID_SOURCE,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    DownloadError,
    redact_url,
)
from aim_cache_jobs.downloader.filejob import new_hasher
from aim_cache_jobs.downloader.hfsource import hf_file_url, hf_info_entries
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile, validate_path
from aim_cache_jobs.downloader.manifest import Manifest, ManifestFile, build, matches
from aim_cache_jobs.downloader.rangefetch import RANGE_RETRY
from aim_cache_jobs.downloader.ranges import RangeSet, split
from aim_cache_jobs.downloader.s3source import s3_digests as _s3_digests
from aim_cache_jobs.downloader.sources import _with_expected, model_id_for, normalize_sha256, parse_source

SHA = "a" * 64

# -- parsing -----------------------------------------------------------------------------------


def test_hf_with_and_without_revision() -> None:
    p = parse_source("hf://org/model")
    assert (p.scheme, p.repo_id, p.revision) == ("hf", "org/model", None)
    p = parse_source("hf://org/model@main")
    assert (p.repo_id, p.revision) == ("org/model", "main")
    p = parse_source("hf://meta-llama/Llama-3.1-8B@refs/pr/1")
    assert (p.repo_id, p.revision) == ("meta-llama/Llama-3.1-8B", "refs/pr/1")
    assert parse_source("hf://gpt2").repo_id == "gpt2"
    assert parse_source("  hf://org/model/  ").repo_id == "org/model"


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "   ",
        "hf://",
        "hf://org/model@",
        "hf://org/../x",
        "hf://org/model/extra",
        "hf://-org/model",
        "hf://org/mo del",
        "hf://org/model@rev with space",
        "s3://",
        "s3://Bad_Bucket/x",
        "s3://ab/x",
        "s3://bucket/a/../b",
        "ftp://host/file",
        "relative/path",
        "file://otherhost/etc/passwd",
        "https:///nohost",
        "hf://org/mo\ndel",
        "hf://org/mo\x00del",
    ],
)
def test_bad_uris_are_invalid_source(uri: str) -> None:
    with pytest.raises(DownloadError) as info:
        parse_source(uri)
    assert info.value.reason == INVALID_SOURCE
    assert info.value.transient is False


def test_s3_bucket_and_prefix() -> None:
    p = parse_source("s3://models/llama/8b/")
    assert (p.scheme, p.bucket, p.prefix) == ("s3", "models", "llama/8b")
    p = parse_source("s3://models")
    assert (p.bucket, p.prefix) == ("models", "")


def test_http_and_local() -> None:
    p = parse_source("https://example.com/m.gguf?X-Amz-Signature=secret")
    assert p.scheme == "https" and p.url.endswith("secret")  # type: ignore[union-attr]
    assert p.display == "https://example.com/m.gguf"
    assert parse_source("file:///data/models/x").path == "/data/models/x"
    assert parse_source("/data/models/x/../y").path == "/data/models/y"
    assert parse_source("file://localhost/data/a%20b").path == "/data/a b"


def test_invalid_http_source_message_has_no_query() -> None:
    with pytest.raises(DownloadError) as info:
        parse_source("https:///x?token=secret")
    assert "secret" not in info.value.message


def test_model_id_for() -> None:
    assert model_id_for("hf://org/name") == "org/name"
    assert model_id_for("hf://org/name@v1") == "org/name"
    assert model_id_for("s3://bucket/org/name") is None
    assert model_id_for("not a uri") is None


def test_expected_sha256() -> None:
    assert normalize_sha256(None) is None
    assert normalize_sha256("SHA256:" + "AB" * 32) == "ab" * 32
    with pytest.raises(DownloadError):
        normalize_sha256("abc")
    one = Listing("src", None, (RemoteFile("a", 1, "http://h/a"),))
    assert _with_expected(one, SHA).files[0].digests == (Digest("sha256", SHA),)
    two = Listing("src", None, (RemoteFile("a", 1, "http://h/a"), RemoteFile("b", 1, "http://h/b")))
    with pytest.raises(DownloadError) as info:
        _with_expected(two, SHA)
    assert info.value.reason == INVALID_SOURCE
    conflicting = Listing(
        "src", None, (RemoteFile("a", 1, "http://h/a", digests=(Digest("sha256", "b" * 64),)),)
    )
    with pytest.raises(DownloadError):
        _with_expected(conflicting, SHA)


# -- path safety -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a/./b",
        "a//b",
        "a/",
        "a\\b",
        "..\\x",
        "a\x00b",
        ".aim-manifest.json",
        ".aim-partial/x.part",
        "..",
    ],
)
def test_traversal_and_reserved_paths_are_rejected(path: str) -> None:
    with pytest.raises(DownloadError) as info:
        RemoteFile(path, 1, "http://h/x")
    assert info.value.reason == INVALID_SOURCE


def test_ordinary_paths_are_accepted() -> None:
    for path in ("config.json", "a/b/c.safetensors", ".gitattributes", "sub/.aim-manifest.json", "x..y"):
        assert validate_path(path) == path


def test_digest_validation() -> None:
    assert Digest("sha256", "AB" * 32).value == "ab" * 32
    for algorithm, value in (("sha256", "zz" * 32), ("md5", "ab"), ("crc32", "00")):
        with pytest.raises(ValueError):
            Digest(algorithm, value)


# -- range planning ----------------------------------------------------------------------------


def test_rangeset_merges_and_finds_gaps() -> None:
    r = RangeSet()
    r.add(10, 20)
    r.add(30, 40)
    r.add(20, 30)
    assert r.ranges() == [(10, 40)]
    assert r.prefix() == 0
    r.add(0, 5)
    assert r.prefix() == 5
    assert r.missing(50) == [(5, 10), (40, 50)]
    r.add(3, 12)
    assert r.ranges() == [(0, 40)] and r.prefix() == 40 and r.total() == 40
    r.add(5, 5)  # empty: ignored
    assert r.covers(0, 40) and not r.covers(30, 41)
    assert RangeSet([(0, 10), (20, 30)]).clipped(25).ranges() == [(0, 10), (20, 25)]
    assert RangeSet().missing(0) == []


def test_split_cuts_in_order_without_tiny_tails() -> None:
    assert list(split([(0, 95)], 30)) == [(0, 30), (30, 60), (60, 95)]  # a 5-byte tail is folded
    assert list(split([(0, 100)], 25)) == [(0, 25), (25, 50), (50, 75), (75, 100)]
    assert list(split([(0, 5), (10, 12)], 100)) == [(0, 5), (10, 12)]
    with pytest.raises(ValueError):
        list(split([(0, 1)], 0))


def test_backoff_grows_and_is_capped() -> None:
    assert [RANGE_RETRY.delay(a, jitter=None) for a in (1, 2, 3, 4)] == [0.25, 0.5, 1.0, 2.0]
    assert RANGE_RETRY.delay(20, jitter=None) == 8.0


def test_git_blob_hasher() -> None:
    data = b"hello\n"
    h = new_hasher("git-sha1", len(data))
    h.update(data)
    assert h.hexdigest() == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object


# -- S3 digests --------------------------------------------------------------------------------


def test_s3_digests_full_object_only() -> None:
    data = b"weights"
    b64 = base64.b64encode(hashlib.sha256(data).digest()).decode()
    md5 = hashlib.md5(data).hexdigest()
    digests, etag = _s3_digests({"ChecksumSHA256": b64, "ETag": f'"{md5}"'})
    assert digests == (Digest("sha256", hashlib.sha256(data).hexdigest()), Digest("md5", md5))
    assert etag == md5
    composite, _ = _s3_digests({"ChecksumSHA256": b64 + "-3", "ETag": '"abc-3"'})
    assert composite == ()
    typed, _ = _s3_digests({"ChecksumSHA256": b64, "ChecksumType": "COMPOSITE"})
    assert typed == ()
    kms, _ = _s3_digests({"ETag": f'"{md5}"', "ServerSideEncryption": "aws:kms"})
    assert kms == ()


# -- messages ----------------------------------------------------------------------------------


def test_redact_url_drops_secrets() -> None:
    url = "https://user:pw@bucket.s3.amazonaws.com:8443/k/m.bin?X-Amz-Signature=abc&X-Amz-Security-Token=t#f"
    assert redact_url(url) == "https://bucket.s3.amazonaws.com:8443/k/m.bin"


def test_status_errors() -> None:
    url = "https://cdn.example/x?sig=secret"
    auth = fetch.status_error(403, url, had_token=True)
    assert isinstance(auth, DownloadError) and auth.reason == AUTH_ERROR and not auth.transient
    missing = fetch.status_error(404, url)
    assert isinstance(missing, DownloadError) and missing.reason == SOURCE_NOT_FOUND
    busy = fetch.status_error(503, url)
    assert isinstance(busy, fetch.Transient) and busy.error.reason == SOURCE_UNREACHABLE
    for e in (auth, missing, busy.error):
        assert "secret" not in e.message
    stall = fetch.transient(TimeoutError(), url, 60.0)
    assert isinstance(stall, fetch.Transient)
    assert (
        stall.error.reason == DOWNLOAD_STALLED and stall.error.message == "no data for 60 s from cdn.example"
    )
    assert stall.error.transient


# -- manifest and resume identity --------------------------------------------------------------


def listing_of(*files: RemoteFile, revision: str | None = "c0ffee") -> Listing:
    return Listing("hf://org/m", revision, files)


def test_manifest_roundtrip_and_match(tmp_path: Path) -> None:
    f = RemoteFile("w/a.bin", 3, "http://h/a", digests=(Digest("sha256", SHA),))
    listing = listing_of(f)
    m = build(listing, [ManifestFile("w/a.bin", 3, f.digests)], completed_at=1.0)
    assert m.verified == ("sha256",) and m.total_bytes == 3
    assert Manifest.from_json(m.to_json()) == m
    assert not matches(m, listing, tmp_path)  # the file is missing
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "a.bin").write_bytes(b"abc")
    assert matches(m, listing, tmp_path)
    assert not matches(m, listing_of(f, revision="other"), tmp_path)
    changed = RemoteFile("w/a.bin", 3, "http://h/a", digests=(Digest("sha256", "b" * 64),))
    assert not matches(m, listing_of(changed), tmp_path)
    extra = RemoteFile("b.bin", 1, "http://h/b")
    assert not matches(m, listing_of(f, extra), tmp_path)


def test_manifest_rejects_unsafe_paths() -> None:
    data = {
        "schema": 1,
        "source": "s",
        "revision": None,
        "totalBytes": 1,
        "files": [{"path": "../x", "size": 1}],
    }
    with pytest.raises(DownloadError):
        Manifest.from_json(data)


def test_identity_ignores_signatures_but_not_content() -> None:
    a = RemoteFile("m.bin", 10, "https://h/b/m.bin?X-Amz-Signature=1", etag="e1")
    b = RemoteFile("m.bin", 10, "https://h/b/m.bin?X-Amz-Signature=2", etag="e1")
    c = RemoteFile("m.bin", 10, "https://h/b/m.bin?X-Amz-Signature=2", etag="e2")
    assert partial.identity(a) == partial.identity(b)
    assert partial.identity(a) != partial.identity(c)
    assert "Signature" not in str(partial.identity(a))


def test_state_roundtrip(tmp_path: Path) -> None:
    path = tmp_path / ".aim-partial" / "sub" / "x.state.json"
    state = partial.PartialState({"url": "u"}, RangeSet([(0, 10), (20, 30)]))
    partial.save_state(path, state)
    loaded = partial.load_state(path)
    assert loaded is not None and loaded.done.ranges() == [(0, 10), (20, 30)] and not loaded.placed
    path.write_text("{not json")
    assert partial.load_state(path) is None


# -- the Hub listing's stdlib path ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["config.json", "sub dir/model+1.safetensors", "ü/%20#?.bin"])
def test_hf_file_url_is_what_huggingface_hub_builds(path: str) -> None:
    expected = hf_hub_url("org/model", path, revision="refs/pr/1", endpoint="http://hub:8080")
    assert hf_file_url("http://hub:8080", "org/model", "refs/pr/1", path) == expected


def test_hf_info_entries() -> None:
    info = {
        "sha": "c" * 40,
        "siblings": [
            {"rfilename": "config.json", "size": 2, "blobId": "b" * 40},
            {"rfilename": "m.safetensors", "size": 9, "blobId": "d" * 40, "lfs": {"sha256": SHA, "size": 9}},
        ],
    }
    assert hf_info_entries(info) == (
        "c" * 40,
        [("config.json", 2, "b" * 40, None), ("m.safetensors", 9, "d" * 40, SHA)],
    )
    # anything missing or odd: None (the caller lists through huggingface_hub instead)
    broken: object
    for broken in (
        {**info, "sha": None},
        {**info, "siblings": None},
        {**info, "siblings": [{"rfilename": "config.json", "blobId": "b" * 40}]},
        {**info, "siblings": [{"rfilename": "config.json", "size": "2", "blobId": "b" * 40}]},
        {**info, "siblings": [{"rfilename": "a", "size": 1, "blobId": "b" * 40, "lfs": {}}]},
        [],
    ):
        assert hf_info_entries(broken) is None
