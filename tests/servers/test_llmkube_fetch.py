"""``aim_cache.llmkube.fetch`` (and the sidecar in ``runs``) against a real local HTTP server
(``http.server`` in a thread, HTTP/1.1, HEAD and ranged GET): fingerprint probes (ETag and length,
Hugging Face's ``X-Linked-*`` on an un-followed redirect, plain redirects, 404, local files), the SSRF
guard on redirects to the metadata address (probe, listing, the downloader, the GGUF header read),
listings with ``spec.sha256`` on the primary file only, a real download of such a listing, the
``.aim-source.json`` sidecar, and the remote GGUF header."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aim_cache.llmkube import drift, fetch, runs
from aim_cache.llmkube.sources import Policy, Source, SourceError, parse_source
from aim_cache_jobs import gguf
from aim_cache_jobs.downloader import DownloadError, Listing, RemoteFile, download_listing, read_manifest
from aim_cache_jobs.downloader.listing import Digest
from tests.file_server import FileServer
from tests.helpers import LOOPBACK
from tests.unit.llmkube.test_gguf_reader import EXPECTED_STATUS, write_gguf

METADATA = "169.254.169.254"
METADATA_URL = f"http://{METADATA}/latest/meta-data/x.gguf"
POLICY = Policy(allowed_hosts=frozenset({"127.0.0.1"}))
HF_ETAG = '"' + "e" * 64 + '"'
HF_SIZE = 987_654_321


# -- the server --------------------------------------------------------------------------------


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FileServer]:
    root = tmp_path / "site"
    root.mkdir()
    srv = FileServer(root)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_gguf(tmp_path_factory.mktemp("gguf") / "m.gguf").read_bytes()


def put(root: Path, rel: str, data: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def strong_etag(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


class Recorder:
    """A guard that records every URL it is asked about and applies ``POLICY``."""

    def __init__(self, policy: Policy = POLICY) -> None:
        self.calls: list[str] = []
        self._check = fetch.guard_for(policy)

    def __call__(self, url: str) -> None:
        self.calls.append(url)
        self._check(url)


@pytest.fixture
def guard() -> Recorder:
    return Recorder()


@pytest.fixture
def dialed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every address a client connection is opened to; the metadata address is refused locally,
    so a request can never leave the machine even if a guard were missing."""
    seen: list[tuple[str, int]] = []
    real = socket.create_connection

    def create_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        seen.append((address[0], address[1]))
        if address[0] == METADATA:
            raise ConnectionRefusedError(f"test: refusing to dial {METADATA}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return seen


def http_source(url: str, **spec: Any) -> Source:
    return parse_source(url, **spec)


# -- probe -------------------------------------------------------------------------------------


async def test_probe_http_etag_and_length(server: FileServer, guard: Recorder, model_bytes: bytes) -> None:
    put(server.root, "model.gguf", model_bytes)
    url = f"{server.base}/model.gguf"
    fp = await fetch.probe(http_source(url), (), guard, outbound=LOOPBACK)
    assert fp == drift.Fingerprint(etag=strong_etag(model_bytes), length=len(model_bytes))
    assert server.requests == [("HEAD", "/model.gguf")]
    assert guard.calls == [url]


async def test_probe_hugging_face_redirect_is_not_followed(server: FileServer, guard: Recorder) -> None:
    server.redirects["/org/repo/resolve/main/model.gguf"] = {
        "Location": "/cdn/blob/abc",
        "X-Linked-Etag": HF_ETAG,
        "X-Linked-Size": str(HF_SIZE),
        "ETag": '"the-redirect-itself"',
    }
    url = f"{server.base}/org/repo/resolve/main/model.gguf"
    fp = await fetch.probe(http_source(url), (), guard, outbound=LOOPBACK)
    assert fp == drift.Fingerprint(etag="e" * 64, length=HF_SIZE)
    assert server.requests == [("HEAD", "/org/repo/resolve/main/model.gguf")]
    assert guard.calls == [url]


async def test_probe_follows_a_plain_redirect(
    server: FileServer, guard: Recorder, model_bytes: bytes
) -> None:
    put(server.root, "blobs/model.gguf", model_bytes)
    server.redirects["/old/model.gguf"] = {"Location": "/blobs/model.gguf"}
    url = f"{server.base}/old/model.gguf"
    fp = await fetch.probe(http_source(url), (), guard, outbound=LOOPBACK)
    assert fp == drift.Fingerprint(etag=strong_etag(model_bytes), length=len(model_bytes))
    assert server.requests == [("HEAD", "/old/model.gguf"), ("HEAD", "/blobs/model.gguf")]
    assert guard.calls == [url, f"{server.base}/blobs/model.gguf"]


async def test_probe_not_found(server: FileServer, guard: Recorder) -> None:
    assert await fetch.probe(http_source(f"{server.base}/missing.gguf"), (), guard, outbound=LOOPBACK) is None
    assert server.requests == [("HEAD", "/missing.gguf")]


async def test_probe_connection_refused_is_indeterminate(guard: Recorder) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert (
        await fetch.probe(
            http_source(f"http://127.0.0.1:{port}/m.gguf"), (), guard, timeout=5, outbound=LOOPBACK
        )
        is None
    )


async def test_probe_local_file(tmp_path: Path, guard: Recorder, model_bytes: bytes) -> None:
    path = put(tmp_path, "models/m.gguf", model_bytes)
    os.utime(path, (1_700_000_000.5, 1_700_000_000.5))
    source = http_source(str(path))
    assert source.kind == "file"
    st = path.stat()
    expected = drift.Fingerprint(length=len(model_bytes), mtime=st.st_mtime)
    assert expected.mtime == 1_700_000_000.5
    assert await fetch.probe(source, (str(path),), guard, outbound=LOOPBACK) == expected
    # falls back to the spec's path
    assert await fetch.probe(source, (), guard, outbound=LOOPBACK) == expected
    assert guard.calls == []  # local files are never guarded as URLs
    assert await fetch.probe(http_source(str(tmp_path / "gone.gguf")), (), guard, outbound=LOOPBACK) is None


async def test_probe_local_prefers_checked_path(tmp_path: Path, guard: Recorder) -> None:
    spec_path = put(tmp_path, "a/m.gguf", b"short")
    real_path = put(tmp_path, "b/m.gguf", b"a longer body")
    fp = await fetch.probe(http_source(str(spec_path)), (str(real_path),), guard, outbound=LOOPBACK)
    assert fp is not None
    assert fp.length == len(b"a longer body")


async def test_revision_changes_with_the_upstream(server: FileServer, guard: Recorder) -> None:
    put(server.root, "model.gguf", b"version one")
    source = http_source(f"{server.base}/model.gguf")
    first = fetch.revision_of(await fetch.probe(source, (), guard, outbound=LOOPBACK))
    again = fetch.revision_of(await fetch.probe(source, (), guard, outbound=LOOPBACK))
    put(server.root, "model.gguf", b"version two")  # same length, new content
    changed = fetch.revision_of(await fetch.probe(source, (), guard, outbound=LOOPBACK))
    put(server.root, "model.gguf", b"version three")
    longer = fetch.revision_of(await fetch.probe(source, (), guard, outbound=LOOPBACK))
    assert first == again == f"{strong_etag(b'version one')}|11|None"
    assert changed == f"{strong_etag(b'version two')}|11|None"
    assert longer == f"{strong_etag(b'version three')}|13|None"


# -- SSRF: a redirect to the metadata address ---------------------------------------------------


@pytest.fixture
def evil(server: FileServer) -> str:
    server.redirects["/evil.gguf"] = {"Location": METADATA_URL}
    return f"{server.base}/evil.gguf"


async def test_probe_refuses_redirect_to_metadata(
    evil: str, server: FileServer, guard: Recorder, dialed: list[tuple[str, int]]
) -> None:
    with pytest.raises(SourceError) as info:
        await fetch.probe(http_source(evil), (), guard, outbound=LOOPBACK)
    assert info.value.reason == "SourceNotAllowed"
    assert METADATA in info.value.message
    assert guard.calls == [evil, METADATA_URL]
    assert server.requests == [("HEAD", "/evil.gguf")]
    assert all(host != METADATA for host, _ in dialed)
    assert dialed  # the recorder is really in the path (the first HEAD went through it)


async def test_listing_refuses_redirect_to_metadata(
    evil: str, server: FileServer, guard: Recorder, dialed: list[tuple[str, int]]
) -> None:
    with pytest.raises(DownloadError) as info:
        await fetch.listing(
            http_source(evil), evil, (), expected_sha256=None, revision=None, guard=guard, outbound=LOOPBACK
        )
    assert info.value.reason == "SourceNotAllowed"
    assert info.value.transient is False
    assert guard.calls == [f"{server.base}/", f"http://{METADATA}:80/"]
    assert server.requests == [("HEAD", "/evil.gguf")]
    assert all(host != METADATA for host, _ in dialed)


async def test_download_refuses_redirect_to_metadata(
    evil: str, server: FileServer, guard: Recorder, dialed: list[tuple[str, int]], tmp_path: Path
) -> None:
    listing = Listing("evil", None, (RemoteFile("model.gguf", 4096, evil),))
    dest = tmp_path / "dest"
    with pytest.raises(DownloadError) as info:
        await download_listing(
            listing, dest, guard=fetch.download_guard(guard), stall_timeout=5, policy=LOOPBACK
        )
    assert info.value.reason == "SourceNotAllowed"
    assert info.value.transient is False
    assert guard.calls == [f"{server.base}/", f"http://{METADATA}:80/"]
    assert server.requests == [("GET", "/evil.gguf")]
    assert all(host != METADATA for host, _ in dialed)
    assert not (dest / "model.gguf").exists()
    assert read_manifest(dest) is None
    # Only the downloader's (empty) resume bookkeeping remains: no model bytes anywhere.
    files = [p.relative_to(dest) for p in dest.rglob("*") if p.is_file()]
    assert [f for f in files if not f.parts[0].startswith(".aim-partial")] == []
    assert sum((dest / f).stat().st_size for f in files if not f.name.endswith(".json")) == 0


async def test_remote_header_refuses_redirect_to_metadata(
    evil: str, server: FileServer, guard: Recorder, dialed: list[tuple[str, int]]
) -> None:
    assert await fetch.remote_header(evil, guard, outbound=LOOPBACK) is None
    assert guard.calls == [evil, METADATA_URL]
    assert [path for _, path in server.requests] == ["/evil.gguf"]
    assert all(host != METADATA for host, _ in dialed)


async def test_refused_start_url_sends_nothing(dialed: list[tuple[str, int]]) -> None:
    guard = Recorder()
    assert await fetch.remote_header(METADATA_URL, guard, outbound=LOOPBACK) is None
    with pytest.raises(SourceError) as info:
        await fetch.probe(http_source(METADATA_URL), (), guard, outbound=LOOPBACK)
    assert info.value.reason == "SourceNotAllowed"
    assert guard.calls == [METADATA_URL, METADATA_URL]
    assert dialed == []


async def test_connections_judge_the_address_again_when_connecting(
    server: FileServer, model_bytes: bytes
) -> None:
    """A URL check that passed is not the last word: every connection judges the address it
    connects to (as when a DNS answer changes between the check and the connect). Here the check
    allows loopback and the connect-time policy does not: nothing reaches the server."""
    put(server.root, "m.gguf", model_bytes)
    url = f"{server.base}/m.gguf"
    permissive, strict = Recorder(Policy(allow_private=True)), Policy().outbound
    with pytest.raises(SourceError) as info:
        await fetch.probe(http_source(url), (), permissive, outbound=strict)
    assert info.value.reason == "SourceNotAllowed"
    assert await fetch.remote_header(url, permissive, outbound=strict) is None
    with pytest.raises(DownloadError) as err:
        await fetch.listing(
            http_source(url), url, (), expected_sha256=None, revision=None, guard=permissive, outbound=strict
        )
    assert (err.value.reason, err.value.transient) == ("AddressNotAllowed", False)
    assert server.requests == []
    assert await fetch.probe(http_source(url), (), permissive, outbound=POLICY.outbound) is not None


def test_download_guard_translates_refusals() -> None:
    check = fetch.download_guard(fetch.guard_for(Policy()))
    with pytest.raises(DownloadError) as info:
        check(f"http://{METADATA}:80/")
    assert (info.value.reason, info.value.transient) == ("SourceNotAllowed", False)
    with pytest.raises(DownloadError) as info:
        check("http://127.0.0.1:8080/")  # loopback is private unless allow-listed
    assert (info.value.reason, info.value.transient) == ("SourceNotAllowed", False)
    fetch.download_guard(fetch.guard_for(POLICY))("http://127.0.0.1:8080/")  # allowed: no error


# -- listing -----------------------------------------------------------------------------------

SHA = "0f" * 32


async def test_listing_single_file_with_mmproj(
    server: FileServer, guard: Recorder, model_bytes: bytes
) -> None:
    put(server.root, "dir/Llama 3 Q4.gguf", model_bytes)
    put(server.root, "dir/mmproj-f16.gguf", b"projector")
    raw = f"{server.base}/dir/Llama%203%20Q4.gguf"
    source = parse_source(**{"source": raw, "mmproj": "mmproj-f16.gguf"})
    listing = await fetch.listing(
        source, raw, (), expected_sha256=SHA.upper(), revision="etag|1|None", guard=guard, outbound=LOOPBACK
    )
    assert listing.source == fetch.source_identity(source, raw) == f"{raw} [{source.cache_key}]"
    assert listing.revision == "etag|1|None"
    assert [(f.path, f.size, f.url) for f in listing.files] == [
        ("Llama_3_Q4.gguf", len(model_bytes), raw),
        ("mmproj-f16.gguf", len(b"projector"), f"{server.base}/dir/mmproj-f16.gguf"),
    ]
    assert listing.files[0].digests == (Digest("sha256", SHA),)
    assert listing.files[1].digests == ()
    assert [f.etag for f in listing.files] == [
        f'"{strong_etag(model_bytes)}"',
        f'"{strong_etag(b"projector")}"',
    ]
    assert all(f.ranges for f in listing.files)


@pytest.fixture
def repo(server: FileServer, model_bytes: bytes) -> dict[str, bytes]:
    files = {
        "model.gguf": model_bytes,
        "shards/part-00002.gguf": b"second shard " * 1000,
        "vision/mmproj.gguf": b"projector bytes",
    }
    for rel, data in files.items():
        put(server.root, f"repo/{rel}", data)
    return files


def repo_source(server: FileServer) -> tuple[Source, str]:
    raw = f"{server.base}/repo"
    return (
        parse_source(
            **{
                "source": raw,
                "files": ["model.gguf", "shards/part-00002.gguf"],
                "mmproj": "vision/mmproj.gguf",
            }
        ),
        raw,
    )


async def test_listing_files_at_staged_paths(
    server: FileServer, guard: Recorder, repo: dict[str, bytes]
) -> None:
    source, raw = repo_source(server)
    expected = hashlib.sha256(repo["model.gguf"]).hexdigest()
    listing = await fetch.listing(
        source, raw, (), expected_sha256=expected, revision=None, guard=guard, outbound=LOOPBACK
    )
    assert listing.source == f"{raw} [{source.cache_key}]"
    assert listing.revision is None
    assert [(f.path, f.size, f.url) for f in listing.files] == [
        (rel, len(data), f"{server.base}/repo/{rel}") for rel, data in repo.items()
    ]
    assert [f.digests for f in listing.files] == [(Digest("sha256", expected),), (), ()]
    assert {("HEAD", f"/repo/{rel}") for rel in repo} <= set(server.requests)
    assert set(guard.calls) == {f"{server.base}/"}  # each origin, before connecting


async def test_listing_without_sha256_has_no_digests(
    server: FileServer, guard: Recorder, repo: dict[str, bytes]
) -> None:
    source, raw = repo_source(server)
    listing = await fetch.listing(
        source, raw, (), expected_sha256=None, revision="r", guard=guard, outbound=LOOPBACK
    )
    assert [f.digests for f in listing.files] == [(), (), ()]
    assert listing.revision == "r"


async def test_listing_missing_file(server: FileServer, guard: Recorder, repo: dict[str, bytes]) -> None:
    (server.root / "repo/vision/mmproj.gguf").unlink()
    source, raw = repo_source(server)
    with pytest.raises(DownloadError) as info:
        await fetch.listing(
            source, raw, (), expected_sha256=None, revision=None, guard=guard, outbound=LOOPBACK
        )
    assert info.value.reason == "SourceNotFound"


async def test_listing_local_files(tmp_path: Path, model_bytes: bytes) -> None:
    put(tmp_path, "src/model.gguf", model_bytes)
    put(tmp_path, "src/sub/extra.bin", b"extra")
    raw = str(tmp_path / "src")
    source = parse_source(**{"source": raw, "files": ["model.gguf", "sub/extra.bin"]})
    real = (str(tmp_path / "src/model.gguf"), str(tmp_path / "src/sub/extra.bin"))
    listing = await fetch.listing(source, raw, real, expected_sha256=SHA, revision=None, outbound=LOOPBACK)
    assert [(f.path, f.size, f.url) for f in listing.files] == [
        ("model.gguf", len(model_bytes), f"file://{real[0]}"),
        ("sub/extra.bin", 5, f"file://{real[1]}"),
    ]
    assert [f.digests for f in listing.files] == [(Digest("sha256", SHA),), ()]


# -- download and the sidecar ------------------------------------------------------------------


async def test_download_listing_and_sidecar(
    server: FileServer, guard: Recorder, repo: dict[str, bytes], tmp_path: Path
) -> None:
    source, raw = repo_source(server)
    expected = hashlib.sha256(repo["model.gguf"]).hexdigest()
    fp = await fetch.probe(source, (), guard, outbound=LOOPBACK)
    assert fp == drift.Fingerprint(etag=strong_etag(repo["model.gguf"]), length=len(repo["model.gguf"]))
    listing = await fetch.listing(
        source,
        raw,
        (),
        expected_sha256=expected,
        revision=fetch.revision_of(fp),
        guard=guard,
        outbound=LOOPBACK,
    )
    dest = tmp_path / "cache" / source.cache_key
    manifest = await download_listing(
        listing,
        dest,
        compute=("sha256",),
        guard=fetch.download_guard(guard),
        stall_timeout=10,
        policy=LOOPBACK,
    )
    for rel, data in repo.items():
        assert (dest / rel).read_bytes() == data
    assert manifest.source == fetch.source_identity(source, raw)
    assert manifest.revision == fetch.revision_of(fp)
    assert manifest.verified == ("sha256",)
    by_path = {f.path: f for f in manifest.files}
    assert list(by_path) == list(repo)
    assert by_path["model.gguf"].digests == (Digest("sha256", expected),)
    for rel, data in repo.items():
        assert by_path[rel].digest("sha256") == hashlib.sha256(data).hexdigest()
        assert by_path[rel].size == len(data)
    assert by_path["shards/part-00002.gguf"].digests == ()
    assert read_manifest(dest) == manifest

    assert runs.read_sidecar(dest) is None
    assert fp is not None
    recorded = runs.Recorded(fp, 1_750_000_000.25)
    runs.write_sidecar(dest, recorded)
    assert runs.read_sidecar(dest) == recorded
    assert json.loads((dest / runs.SIDECAR).read_text()) == {
        "etag": fp.etag,
        "length": fp.length,
        "mtime": None,
        "recordedAt": 1_750_000_000.25,
    }
    assert [p.name for p in dest.iterdir() if p.name.startswith(runs.SIDECAR)] == [runs.SIDECAR]

    # The sidecar is not part of the download: the same listing is complete as it is.
    gets_before = sum(1 for method, _ in server.requests if method == "GET")
    again = await download_listing(
        listing, dest, compute=("sha256",), guard=fetch.download_guard(guard), policy=LOOPBACK
    )
    assert again == manifest
    assert sum(1 for method, _ in server.requests if method == "GET") == gets_before
    assert runs.read_sidecar(dest) == recorded


async def test_download_with_wrong_sha256_keeps_nothing(
    server: FileServer, guard: Recorder, repo: dict[str, bytes], tmp_path: Path
) -> None:
    source, raw = repo_source(server)
    listing = await fetch.listing(
        source, raw, (), expected_sha256=SHA, revision=None, guard=guard, outbound=LOOPBACK
    )
    dest = tmp_path / "dest"
    with pytest.raises(DownloadError) as info:
        await download_listing(
            listing, dest, compute=("sha256",), guard=fetch.download_guard(guard), policy=LOOPBACK
        )
    assert info.value.reason == "ChecksumMismatch"
    assert not (dest / "model.gguf").exists()
    assert read_manifest(dest) is None


# -- GGUF header ---------------------------------------------------------------------------------


async def test_remote_header_matches_local(server: FileServer, guard: Recorder, model_bytes: bytes) -> None:
    path = put(server.root, "model.gguf", model_bytes)
    url = f"{server.base}/model.gguf"
    header = await fetch.remote_header(url, guard, outbound=LOOPBACK)
    assert header == gguf.status_fields(gguf.read_local(path))
    assert header == EXPECTED_STATUS
    assert fetch.local_header(str(path)) == header
    assert guard.calls[0] == url
    assert all(method == "GET" for method, _ in server.requests)


async def test_remote_header_follows_an_allowed_redirect(
    server: FileServer, guard: Recorder, model_bytes: bytes
) -> None:
    put(server.root, "blobs/model.gguf", model_bytes)
    server.redirects["/resolve/main/model.gguf"] = {"Location": "/blobs/model.gguf"}
    url = f"{server.base}/resolve/main/model.gguf"
    assert await fetch.remote_header(url, guard, outbound=LOOPBACK) == EXPECTED_STATUS
    assert guard.calls == [url, f"{server.base}/blobs/model.gguf"]


async def test_remote_header_not_gguf_or_missing(server: FileServer, guard: Recorder, tmp_path: Path) -> None:
    put(server.root, "page.gguf", b"<html>not a model</html>")
    assert await fetch.remote_header(f"{server.base}/page.gguf", guard, outbound=LOOPBACK) is None
    assert await fetch.remote_header(f"{server.base}/missing.gguf", guard, outbound=LOOPBACK) is None
    assert fetch.local_header(str(put(tmp_path, "x.gguf", b"nope"))) is None
