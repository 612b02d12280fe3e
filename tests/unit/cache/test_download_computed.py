"""Digests the downloader computes for files whose source gives none (``compute=``): hashed while the
bytes arrive (local copies and HTTP, held buffers and read-back), recorded in the manifest apart from
the verified ones, kept when a complete destination is found again, and trusted like verified ones
when a later listing gives that algorithm. Real files, the local source and a thread-based HTTP
server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from aim_cache_jobs.downloader import (
    CHECKSUM_MISMATCH,
    INVALID_SOURCE,
    MANIFEST,
    Digest,
    DownloadError,
    Listing,
    Manifest,
    ManifestFile,
    RemoteFile,
    download,
    download_listing,
    list_source,
    read_manifest,
)
from aim_cache_jobs.downloader import rangefetch as rangefetch_module
from aim_cache_jobs.downloader import transfer as transfer_module
from aim_cache_jobs.downloader.manifest import SCHEMA, build, matches
from tests.helpers import LOOPBACK

KIB, MIB = 1024, 1024 * 1024
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def blob(size: int, seed: int = 0) -> bytes:
    """Deterministic bytes that differ from block to block (fast to make)."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += hashlib.sha256(b"%d/%d" % (seed, i)).digest() * 2048  # 64 KiB
        i += 1
    return bytes(out[:size])


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def by_path(manifest: Manifest) -> dict[str, ManifestFile]:
    return {f.path: f for f in manifest.files}


def stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """256 KiB ranges and 64 KiB buffers: several ranges per file, arriving out of order."""
    monkeypatch.setattr(transfer_module, "CHUNK_SIZE", 256 * KIB)
    monkeypatch.setattr(rangefetch_module, "BUFFER_SIZE", 64 * KIB)
    yield


# -- a local HTTP server with Range support ----------------------------------------------------

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    files: dict[str, bytes] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, body: bool) -> None:
        data = self.files.get(self.path)
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start, end = 0, len(data)
        match = _RANGE.match(self.headers.get("Range") or "")
        if match:
            start = int(match.group(1))
            end = min(len(data), int(match.group(2)) + 1) if match.group(2) else len(data)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{sha256(data)[:16]}"')
        self.send_header("Content-Length", str(end - start))
        self.end_headers()
        if body:
            self.wfile.write(data[start:end])

    def do_HEAD(self) -> None:
        self._send(body=False)

    def do_GET(self) -> None:
        self._send(body=True)


@pytest.fixture
def http_files() -> Iterator[tuple[str, dict[str, bytes]]]:
    """(base URL, path -> bytes served): fill the dict, then download ``base + path``."""
    files: dict[str, bytes] = {}
    handler = type("Handler", (_Handler,), {"files": files})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", files
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- computing while downloading ---------------------------------------------------------------


async def test_local_files_get_their_sha256_computed(tmp_path: Path, small_chunks: None) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    files = {"big.bin": blob(5 * MIB + 123, 1), "sub/small.json": b'{"a": 1}', "empty.txt": b""}
    for path, data in files.items():
        (src / path).write_bytes(data)
    manifest = await download(str(src), tmp_path / "dest", env={}, connections=4, compute=("sha256",))
    assert manifest.verified == ()  # computing is not verifying
    got = by_path(manifest)
    for path, data in files.items():
        assert (tmp_path / "dest" / path).read_bytes() == data
        assert got[path].digests == ()
        assert got[path].computed == (Digest("sha256", sha256(data)),)
        assert got[path].digest("sha256") == sha256(data)
    assert got["empty.txt"].computed == (Digest("sha256", EMPTY_SHA256),)
    assert read_manifest(tmp_path / "dest") == manifest
    assert not (tmp_path / "dest" / ".aim-partial").exists()


async def test_single_empty_and_large_file(tmp_path: Path) -> None:
    (tmp_path / "empty.bin").write_bytes(b"")
    data = blob(9 * MIB + 7, 2)  # more than one default range
    (tmp_path / "large.bin").write_bytes(data)
    empty = await download(str(tmp_path / "empty.bin"), tmp_path / "d1", env={}, compute=("sha256",))
    assert empty.files[0].computed == (Digest("sha256", EMPTY_SHA256),)
    large = await download(
        str(tmp_path / "large.bin"), tmp_path / "d2", env={}, compute=("sha256", "md5", "git-sha1")
    )
    assert large.files[0].computed == (
        Digest("sha256", sha256(data)),
        Digest("md5", hashlib.md5(data).hexdigest()),
        Digest("git-sha1", git_sha1(data)),
    )


async def test_http_download_computes_from_held_and_read_back_buffers(
    tmp_path: Path, small_chunks: None, http_files: tuple[str, dict[str, bytes]]
) -> None:
    base, served = http_files
    data = blob(3 * MIB + 5, 3)
    served["/w.bin"] = data
    served["/empty.bin"] = b""
    manifest = await download(
        f"{base}/w.bin", tmp_path / "d1", env={}, connections=4, compute=("sha256",), policy=LOOPBACK
    )
    assert (tmp_path / "d1" / "w.bin").read_bytes() == data
    assert manifest.files[0].computed == (Digest("sha256", sha256(data)),)
    assert manifest.verified == ()
    empty = await download(
        f"{base}/empty.bin", tmp_path / "d2", env={}, compute=("sha256", "git-sha1"), policy=LOOPBACK
    )
    assert empty.files[0].computed == (Digest("sha256", EMPTY_SHA256), Digest("git-sha1", git_sha1(b"")))


async def test_a_digest_the_source_gives_is_verified_not_computed(
    tmp_path: Path, http_files: tuple[str, dict[str, bytes]]
) -> None:
    base, served = http_files
    data = blob(700 * KIB, 4)
    served["/w.bin"] = data
    manifest = await download(
        f"{base}/w.bin",
        tmp_path,
        env={},
        expected_sha256=sha256(data),
        compute=("sha256", "md5"),
        policy=LOOPBACK,
    )
    f = manifest.files[0]
    assert f.digests == (Digest("sha256", sha256(data)),)
    assert f.computed == (Digest("md5", hashlib.md5(data).hexdigest()),)
    assert manifest.verified == ("sha256",)
    assert f.digest("sha256") == sha256(data) and f.digest("git-sha1") is None


async def test_without_compute_nothing_is_computed(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(blob(100 * KIB, 5))
    manifest = await download(str(tmp_path / "a.bin"), tmp_path / "d", env={})
    assert manifest.files[0].computed == ()
    assert "computed" not in json.loads((tmp_path / "d" / MANIFEST).read_text())["files"][0]


async def test_unknown_algorithm_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"abc")
    with pytest.raises(DownloadError) as info:
        await download(str(tmp_path / "a.bin"), tmp_path / "d", env={}, compute=("sha512",))
    assert info.value.reason == INVALID_SOURCE and "sha512" in info.value.message
    with pytest.raises(ValueError):
        transfer_module.Transfer([], compute=("crc32",))


# -- a complete destination found again --------------------------------------------------------


async def test_second_download_does_nothing_and_keeps_the_computed_digest(tmp_path: Path) -> None:
    data = blob(2 * MIB, 6)
    (tmp_path / "m.bin").write_bytes(data)
    dest = tmp_path / "dest"
    first = await download(str(tmp_path / "m.bin"), dest, env={}, compute=("sha256",))
    before, manifest_before = stamp(dest / "m.bin"), stamp(dest / MANIFEST)
    again = await download(str(tmp_path / "m.bin"), dest, env={}, compute=("sha256",))
    assert again == first and again.files[0].digest("sha256") == sha256(data)
    assert stamp(dest / "m.bin") == before and stamp(dest / MANIFEST) == manifest_before


async def test_expected_sha256_is_checked_against_the_computed_one(tmp_path: Path) -> None:
    data = blob(1 * MIB + 3, 7)
    src = tmp_path / "m.bin"
    src.write_bytes(data)
    dest = tmp_path / "dest"
    first = await download(str(src), dest, env={}, compute=("sha256",))
    before = stamp(dest / "m.bin")

    # The expected sha256 equals the one computed: the manifest matches, nothing is fetched.
    same = await download(str(src), dest, env={}, expected_sha256=sha256(data).upper())
    assert same == first
    assert stamp(dest / "m.bin") == before

    # A different one does not match: the source is fetched again and fails verification, and the
    # file in place and its manifest stay as they were.
    wrong = "0" * 64
    with pytest.raises(DownloadError) as info:
        await download(str(src), dest, env={}, expected_sha256=wrong, compute=("sha256",))
    assert info.value.reason == CHECKSUM_MISMATCH and wrong in info.value.message
    assert (dest / "m.bin").read_bytes() == data and stamp(dest / "m.bin") == before
    assert read_manifest(dest) == first

    # The destination is still complete for the right digest.
    assert await download(str(src), dest, env={}, expected_sha256=sha256(data)) == first


async def test_a_file_recognised_by_its_computed_digest_is_kept(tmp_path: Path) -> None:
    """A later listing that gives a digest equal to one computed earlier reuses the file without
    reading it, verified by that digest, and passes on the other computed digests."""
    src = tmp_path / "src"
    src.mkdir()
    a = blob(600 * KIB, 8)
    (src / "a.bin").write_bytes(a)
    dest = tmp_path / "dest"
    await download(str(src), dest, env={}, compute=("sha256", "git-sha1"))
    before = stamp(dest / "a.bin")

    b = b"new file"
    (src / "b.txt").write_bytes(b)
    listing = await list_source(str(src), {})
    files = tuple(
        RemoteFile(f.path, f.size, f.url, f.headers, (Digest("git-sha1", git_sha1(a)),), f.etag)
        if f.path == "a.bin"
        else f
        for f in listing.files
    )
    manifest = await download_listing(
        Listing(listing.source, listing.revision, files), dest, compute=("sha256",)
    )
    assert stamp(dest / "a.bin") == before  # not copied again
    got = by_path(manifest)
    assert got["a.bin"].digests == (Digest("git-sha1", git_sha1(a)),)
    assert got["a.bin"].computed == (Digest("sha256", sha256(a)),)  # from the earlier manifest
    assert got["b.txt"].digests == () and got["b.txt"].computed == (Digest("sha256", sha256(b)),)
    assert manifest.verified == ("git-sha1",)
    assert read_manifest(dest) == manifest


# -- the manifest ------------------------------------------------------------------------------


def _listing(*files: RemoteFile) -> Listing:
    return Listing("file:///src", None, files)


def test_manifest_json_round_trip_with_and_without_computed() -> None:
    sha = sha256(b"abc")
    remote = RemoteFile("a.bin", 3, "file:///src/a.bin")
    plain = build(_listing(remote), [ManifestFile("a.bin", 3, ())], completed_at=1.0)
    data = plain.to_json()
    assert data["schema"] == SCHEMA == 1 and "computed" not in data["files"][0]
    assert Manifest.from_json(json.loads(json.dumps(data))) == plain

    with_computed = build(
        _listing(remote), [ManifestFile("a.bin", 3, (), (Digest("sha256", sha),))], completed_at=1.0
    )
    data = with_computed.to_json()
    assert data["files"][0]["computed"] == {"sha256": sha}
    assert with_computed.verified == ()  # computed digests are not verification
    assert Manifest.from_json(json.loads(json.dumps(data))) == with_computed

    # A manifest written before computed digests existed still loads.
    old = {
        "schema": 1,
        "source": "file:///src",
        "revision": None,
        "totalBytes": 3,
        "verified": ["sha256"],
        "files": [{"path": "a.bin", "size": 3, "digests": {"sha256": sha}}],
    }
    loaded = Manifest.from_json(old)
    assert loaded.files[0] == ManifestFile("a.bin", 3, (Digest("sha256", sha),))
    assert loaded.files[0].computed == ()


def test_manifest_file_digest() -> None:
    sha, md5 = sha256(b"x"), hashlib.md5(b"x").hexdigest()
    f = ManifestFile("x", 1, (Digest("md5", md5),), (Digest("sha256", sha),))
    assert f.digest("md5") == md5
    assert f.digest("sha256") == sha
    assert f.digest("git-sha1") is None
    verified_first = ManifestFile("x", 1, (Digest("sha256", sha),), (Digest("sha256", "0" * 64),))
    assert verified_first.digest("sha256") == sha


def test_matches_treats_a_computed_digest_like_a_verified_one(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"abc")
    sha = sha256(b"abc")
    manifest = build(
        _listing(RemoteFile("a.bin", 3, "file:///src/a.bin")),
        [ManifestFile("a.bin", 3, (), (Digest("sha256", sha),))],
        completed_at=1.0,
    )

    def listing(*digests: Digest) -> Listing:
        return _listing(RemoteFile("a.bin", 3, "file:///src/a.bin", digests=digests))

    assert matches(manifest, listing(), tmp_path)
    assert matches(manifest, listing(Digest("sha256", sha)), tmp_path)
    assert not matches(manifest, listing(Digest("sha256", "0" * 64)), tmp_path)
    assert not matches(manifest, listing(Digest("md5", hashlib.md5(b"abc").hexdigest())), tmp_path)
