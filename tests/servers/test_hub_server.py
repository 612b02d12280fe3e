"""The local Hugging Face Hub server against the real ``huggingface_hub`` client (and urllib /
http.client for ranges, faults and hostile paths): listings, metadata, downloads, auth errors,
Range, fault injection and the request log."""

from __future__ import annotations

import hashlib
import http.client
import json
import secrets
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile, RepoFolder

from aim_dev.local.hub import (
    META_NAME,
    HubServer,
    add_file,
    add_repo,
    git_blob_sha1,
    index_repo,
    lfs_pointer,
    load_repo,
)

LFS_THRESHOLD = 64
FILES = {
    "config.json": b'{"model_type": "llama"}',
    "README.md": b"# tiny\n",
    "weights/model-00001.safetensors": bytes(range(256)) * 2,  # LFS (512 bytes >= 64)
    "weights/sub/tokenizer.json": b'{"v": 1}',
    "weights/model-00002.safetensors": b"\x01" * 100,  # LFS
}


def new_repo_id(prefix: str = "m") -> str:
    return f"aim-tests/{prefix}-{secrets.token_hex(4)}"


def wait_for(check: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def settled_requests(server: HubServer, count: int) -> list[dict[str, Any]]:
    """The request log once it holds ``count`` entries whose handlers have all finished."""

    def check() -> list[dict[str, Any]] | None:
        log = server.requests()
        return log if len(log) == count and all(r["done"] for r in log) else None

    result: list[dict[str, Any]] = wait_for(check, what=f"{count} finished requests in the log")
    return result


def get(
    url: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def raw_get(server: HubServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A request with the path sent exactly as given (no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.fixture
def repo(hub_server: HubServer) -> tuple[str, dict[str, bytes]]:
    repo_id = new_repo_id()
    add_repo(hub_server.root, repo_id, FILES, lfs_threshold=LFS_THRESHOLD)
    return repo_id, FILES


@pytest.fixture
def clean_faults(hub_server: HubServer) -> Any:
    hub_server.clear_faults()
    yield
    hub_server.clear_faults()


# ---------------------------------------------------------------------------------------------
# Content helpers
# ---------------------------------------------------------------------------------------------


def test_add_repo_records_hashes_lfs_and_a_deterministic_commit(tmp_path: Path) -> None:
    a = add_repo(tmp_path, "org/a", FILES, lfs_threshold=LFS_THRESHOLD)
    b = add_repo(tmp_path / "other", "org/a", dict(reversed(FILES.items())), lfs_threshold=LFS_THRESHOLD)
    assert a.commit == b.commit and len(a.commit) == 40
    data = FILES["weights/model-00001.safetensors"]
    f = a.files["weights/model-00001.safetensors"]
    assert (f.size, f.lfs) == (512, True)
    assert f.sha256 == hashlib.sha256(data).hexdigest()
    assert f.git_sha1 == hashlib.sha1(b"blob 512\x00" + data).hexdigest()
    assert f.blob_id == git_blob_sha1(lfs_pointer(f.sha256, f.size))  # git stores the pointer
    assert (
        not a.files["config.json"].lfs and a.files["config.json"].blob_id == a.files["config.json"].git_sha1
    )
    assert load_repo(tmp_path, "org/a") == a
    changed = add_repo(tmp_path, "org/a", {**FILES, "README.md": b"changed"}, lfs_threshold=LFS_THRESHOLD)
    assert changed.commit != a.commit
    with pytest.raises(ValueError):
        add_repo(tmp_path, "org/b", {"../escape": b"x"})
    with pytest.raises(ValueError):
        add_repo(tmp_path, "../x", {"a": b"x"})


def test_add_file_streams_from_a_generator_or_a_path_and_index_repo_picks_up_the_tree(
    hub_server: HubServer, tmp_path: Path
) -> None:
    repo_id = new_repo_id("stream")
    add_repo(hub_server.root, repo_id, {"a.txt": b"a"}, token=None, lfs_threshold=1000)
    chunks = [bytes([i]) * 700 for i in range(3)]
    info = add_file(hub_server.root, repo_id, "big/blob.bin", iter(chunks))
    whole = b"".join(chunks)
    assert (
        info.files["big/blob.bin"].lfs
        and info.files["big/blob.bin"].sha256 == hashlib.sha256(whole).hexdigest()
    )
    source = tmp_path / "src.bin"
    source.write_bytes(b"z" * 10)
    info = add_file(hub_server.root, repo_id, "small.bin", source)
    assert set(info.files) == {"a.txt", "big/blob.bin", "small.bin"} and not info.files["small.bin"].lfs

    downloaded = hf_hub_download(
        repo_id, "big/blob.bin", endpoint=hub_server.endpoint, cache_dir=tmp_path / "cache", token=False
    )
    assert Path(downloaded).read_bytes() == whole

    (hub_server.root / repo_id / "hand" / "made.txt").parent.mkdir()
    (hub_server.root / repo_id / "hand" / "made.txt").write_bytes(b"by hand")
    reindexed = index_repo(hub_server.root, repo_id, lfs_threshold=1000)
    assert "hand/made.txt" in reindexed.files and reindexed.commit != info.commit
    assert reindexed.files["big/blob.bin"] == info.files["big/blob.bin"]


# ---------------------------------------------------------------------------------------------
# API: tree, model_info, paths-info
# ---------------------------------------------------------------------------------------------


def test_list_repo_tree_recursive_expand(hub_server: HubServer, repo: tuple[str, dict[str, bytes]]) -> None:
    repo_id, files = repo
    info = load_repo(hub_server.root, repo_id)
    assert info is not None
    entries = list(HfApi(endpoint=hub_server.endpoint).list_repo_tree(repo_id, recursive=True, expand=True))
    by_path = {e.path: e for e in entries}
    assert set(by_path) == set(files) | {"weights", "weights/sub"}
    for path, data in files.items():
        e = by_path[path]
        assert isinstance(e, RepoFile)
        assert e.size == len(data)
        assert e.last_commit is not None and e.last_commit.oid == info.commit
        if len(data) >= LFS_THRESHOLD:
            assert e.lfs is not None and e.lfs.sha256 == hashlib.sha256(data).hexdigest()
            assert e.lfs.size == len(data) and e.lfs.pointer_size == len(lfs_pointer(e.lfs.sha256, len(data)))
            assert e.blob_id == info.files[path].blob_id  # the pointer's blob id, as on the Hub
        else:
            assert e.lfs is None and e.blob_id == git_blob_sha1(data)
    assert isinstance(by_path["weights"], RepoFolder) and isinstance(by_path["weights/sub"], RepoFolder)

    top = {e.path for e in HfApi(endpoint=hub_server.endpoint).list_repo_tree(repo_id)}
    assert top == {"config.json", "README.md", "weights"}
    sub = {
        e.path for e in HfApi(endpoint=hub_server.endpoint).list_repo_tree(repo_id, path_in_repo="weights")
    }
    assert sub == {"weights/model-00001.safetensors", "weights/model-00002.safetensors", "weights/sub"}
    with pytest.raises(EntryNotFoundError):
        list(HfApi(endpoint=hub_server.endpoint).list_repo_tree(repo_id, path_in_repo="nope"))


def test_list_repo_tree_follows_link_pagination(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]], tmp_path: Path
) -> None:
    repo_id, files = repo
    small_pages = HubServer(hub_server.root, workdir=tmp_path / "paged", page_size=2).start()
    try:
        status, headers, body = get(f"{small_pages.endpoint}/api/models/{repo_id}/tree/main?recursive=true")
        assert status == 200 and len(json.loads(body)) == 2
        assert 'rel="next"' in headers["Link"] and "cursor=2" in headers["Link"]
        api = HfApi(endpoint=small_pages.endpoint)
        paged = [
            (e.path, getattr(e, "size", None))
            for e in api.list_repo_tree(repo_id, recursive=True, expand=True)
        ]
        whole = [
            (e.path, getattr(e, "size", None))
            for e in HfApi(endpoint=hub_server.endpoint).list_repo_tree(repo_id, recursive=True, expand=True)
        ]
        assert paged == whole and len(paged) == len(files) + 2
    finally:
        small_pages.stop()


def test_model_info_with_files_metadata(hub_server: HubServer, repo: tuple[str, dict[str, bytes]]) -> None:
    repo_id, files = repo
    info = load_repo(hub_server.root, repo_id)
    assert info is not None
    api = HfApi(endpoint=hub_server.endpoint)
    mi = api.model_info(repo_id, files_metadata=True, token=False)
    assert (mi.id, mi.sha, mi.private) == (repo_id, info.commit, False)
    assert mi.siblings is not None
    siblings = {s.rfilename: s for s in mi.siblings}
    assert set(siblings) == set(files)
    for path, data in files.items():
        s = siblings[path]
        assert s.size == len(data) and s.blob_id == info.files[path].blob_id
        assert (s.lfs.sha256 if s.lfs else None) == (
            hashlib.sha256(data).hexdigest() if len(data) >= LFS_THRESHOLD else None
        )
    plain = api.model_info(repo_id, revision=info.commit, token=False)
    assert plain.sha == info.commit and plain.siblings and plain.siblings[0].size is None

    paths = api.get_paths_info(repo_id, ["weights", "config.json", "missing.txt"], expand=True)
    assert sorted(p.path for p in paths) == ["config.json", "weights"]


# ---------------------------------------------------------------------------------------------
# Downloads, metadata, auth and errors
# ---------------------------------------------------------------------------------------------


def test_hf_hub_download_and_file_metadata(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]], tmp_path: Path
) -> None:
    repo_id, files = repo
    info = load_repo(hub_server.root, repo_id)
    assert info is not None
    for path, data in files.items():
        local = hf_hub_download(repo_id, path, endpoint=hub_server.endpoint, cache_dir=tmp_path, token=False)
        assert Path(local).read_bytes() == data
        assert info.commit in local  # snapshots/<commit>/...

    lfs = get_hf_file_metadata(
        hf_hub_url(repo_id, "weights/model-00001.safetensors", endpoint=hub_server.endpoint), token=False
    )
    data = files["weights/model-00001.safetensors"]
    assert (lfs.commit_hash, lfs.etag, lfs.size) == (info.commit, hashlib.sha256(data).hexdigest(), len(data))
    regular = get_hf_file_metadata(
        hf_hub_url(repo_id, "config.json", endpoint=hub_server.endpoint), token=False
    )
    assert regular.etag == git_blob_sha1(files["config.json"]) and regular.size == len(files["config.json"])

    status, headers, _ = get(hub_server.url(repo_id, "weights/model-00001.safetensors"), method="HEAD")
    assert (
        status == 200 and headers["Accept-Ranges"] == "bytes" and headers["Content-Length"] == str(len(data))
    )
    assert headers["X-Linked-Size"] == str(len(data)) and headers["X-Repo-Commit"] == info.commit

    by_commit = hf_hub_download(
        repo_id, "config.json", revision=info.commit, endpoint=hub_server.endpoint, cache_dir=tmp_path / "c2"
    )
    assert Path(by_commit).read_bytes() == files["config.json"]


def test_private_repo_and_error_types(hub_server: HubServer, tmp_path: Path) -> None:
    token = "hf_" + secrets.token_hex(8)
    repo_id = new_repo_id("private")
    add_repo(
        hub_server.root, repo_id, {"config.json": b"{}", "w.bin": b"w" * 100}, token=token, lfs_threshold=50
    )
    endpoint = hub_server.endpoint

    def download(**kwargs: Any) -> str:
        args: dict[str, Any] = {"repo_id": repo_id, "filename": "config.json", "token": token}
        args.update(kwargs)
        return str(hf_hub_download(endpoint=endpoint, cache_dir=tmp_path / secrets.token_hex(4), **args))

    assert Path(download()).read_bytes() == b"{}"
    assert Path(download(filename="w.bin")).read_bytes() == b"w" * 100
    assert HfApi(endpoint=endpoint).model_info(repo_id, token=token).private is True

    with pytest.raises(RepositoryNotFoundError) as no_token:  # as the Hub: existence is not leaked
        download(token=False)
    assert not isinstance(no_token.value, GatedRepoError)
    assert no_token.value.response.status_code == 401

    with pytest.raises(HfHubHTTPError) as wrong:
        download(token="hf_wrong")
    assert type(wrong.value) is HfHubHTTPError and wrong.value.response.status_code == 401
    assert wrong.value.response.headers.get("X-Error-Code") is None

    with pytest.raises(RepositoryNotFoundError) as missing_repo:
        download(repo_id=new_repo_id("missing"))
    assert missing_repo.value.response.status_code == 404
    with pytest.raises(RepositoryNotFoundError):
        download(repo_id=new_repo_id("missing"), token=False)
    with pytest.raises(EntryNotFoundError):
        download(filename="nope.bin")
    with pytest.raises(RevisionNotFoundError):
        download(revision="v9")
    with pytest.raises(RevisionNotFoundError):
        download(revision="refs/pr/1")  # sent %2F-encoded
    with pytest.raises(RevisionNotFoundError):
        HfApi(endpoint=endpoint).model_info(repo_id, revision="refs/pr/1", token=token)
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=endpoint).model_info(new_repo_id("missing"), token=False)
    with pytest.raises(RepositoryNotFoundError):
        list(HfApi(endpoint=endpoint).list_repo_tree(repo_id, token=False))


# ---------------------------------------------------------------------------------------------
# Range
# ---------------------------------------------------------------------------------------------


def test_range_requests(hub_server: HubServer, repo: tuple[str, dict[str, bytes]]) -> None:
    repo_id, files = repo
    data = files["weights/model-00001.safetensors"]
    url = hub_server.url(repo_id, "weights/model-00001.safetensors")
    size = len(data)
    cases = {
        "bytes=2-5": (2, 6),
        "bytes=500-": (500, size),
        "bytes=-3": (size - 3, size),
        "bytes=10-100000": (10, size),
    }
    for header, (start, end) in cases.items():
        status, headers, body = get(url, {"Range": header})
        assert status == 206, header
        assert body == data[start:end], header
        assert headers["Content-Range"] == f"bytes {start}-{end - 1}/{size}", header
        assert headers["Content-Length"] == str(end - start), header
    for header in ("bytes=512-", f"bytes={size + 10}-{size + 20}", "bytes=-0"):
        status, headers, _ = get(url, {"Range": header})
        assert status == 416, header
        assert headers["Content-Range"] == f"bytes */{size}", header
    status, _, body = get(url, {"Range": "bytes=5-2"})  # invalid: ignored, as RFC 9110 allows
    assert status == 200 and body == data


# ---------------------------------------------------------------------------------------------
# Faults and the request log
# ---------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("clean_faults")
def test_corrupt_fault_flips_one_byte_at_an_absolute_offset(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]]
) -> None:
    repo_id, files = repo
    path = "weights/model-00001.safetensors"
    data = files[path]
    url = hub_server.url(repo_id, path)
    _, clean_headers, _ = get(url)

    hub_server.corrupt(repo_id, path, offset=300, count=2)
    assert [f["count"] for f in hub_server.faults()] == [2]
    status, headers, body = get(url)
    assert status == 200 and len(body) == len(data)
    assert [i for i in range(len(data)) if body[i] != data[i]] == [300]
    assert body[300] == data[300] ^ 0xFF
    assert (
        headers["ETag"] == clean_headers["ETag"]
        and headers["Content-Length"] == clean_headers["Content-Length"]
    )

    status, _, body = get(url, {"Range": "bytes=298-301"})  # the offset is absolute, not body-relative
    assert status == 206 and body == data[298:300] + bytes([data[300] ^ 0xFF]) + data[301:302]
    assert hub_server.faults() == []  # disarmed after its two requests
    assert get(url)[2] == data


@pytest.mark.usefixtures("clean_faults")
def test_drop_after_cuts_the_body_and_a_range_request_resumes(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]]
) -> None:
    repo_id, files = repo
    path = "weights/model-00001.safetensors"
    data = files[path]
    hub_server.clear_requests()
    hub_server.drop_after(repo_id, path, 100)

    conn = http.client.HTTPConnection("127.0.0.1", hub_server.port, timeout=10)
    conn.request("GET", f"/{repo_id}/resolve/main/{path}")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.headers["Content-Length"] == str(len(data))
    with pytest.raises(http.client.IncompleteRead) as short:
        resp.read()
    conn.close()
    assert short.value.partial == data[:100]

    status, _, rest = get(hub_server.url(repo_id, path), {"Range": "bytes=100-"})
    assert status == 206 and data[:100] + rest == data

    log = settled_requests(hub_server, 2)
    assert [(r["range"], r["status"], r["bytes_sent"], r["fault"]) for r in log] == [
        (None, 200, 100, "drop_after"),
        ("bytes=100-", 206, len(data) - 100, None),
    ]


@pytest.mark.usefixtures("clean_faults")
def test_hf_hub_download_resumes_a_dropped_download_with_a_range(
    hub_server: HubServer, tmp_path: Path
) -> None:
    # huggingface_hub reads the body in 10 MiB chunks and only counts whole chunks towards the resume
    # offset (httpx drops a partial chunk when the connection breaks), so the drop must come after one.
    chunk = 10 * 1024 * 1024
    repo_id = new_repo_id("resume")
    parts = [secrets.token_bytes(1024 * 1024) for _ in range(11)]
    data = b"".join(parts)
    add_repo(hub_server.root, repo_id, {}, lfs_threshold=LFS_THRESHOLD)
    add_file(hub_server.root, repo_id, "model.safetensors", iter(parts), size=len(data))
    hub_server.clear_requests()
    hub_server.drop_after(repo_id, "model.safetensors", chunk + 1000)

    local = hf_hub_download(
        repo_id, "model.safetensors", endpoint=hub_server.endpoint, cache_dir=tmp_path, token=False
    )
    assert Path(local).read_bytes() == data
    log = settled_requests(hub_server, 3)  # HEAD, dropped GET, resumed GET
    gets = [(r["range"], r["status"], r["bytes_sent"]) for r in log if r["method"] == "GET"]
    assert gets == [(None, 200, chunk + 1000), (f"bytes={chunk}-", 206, len(data) - chunk)]


@pytest.mark.usefixtures("clean_faults")
def test_stall_after_is_seen_as_a_read_timeout_and_ends_when_the_client_leaves(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]]
) -> None:
    repo_id, files = repo
    path = "weights/model-00001.safetensors"
    data = files[path]
    hub_server.clear_requests()
    hub_server.stall_after(repo_id, path, 64, seconds=60)

    conn = http.client.HTTPConnection("127.0.0.1", hub_server.port, timeout=10)
    conn.request("GET", f"/{repo_id}/resolve/main/{path}")
    resp = conn.getresponse()
    assert resp.read(64) == data[:64]
    assert conn.sock is not None
    conn.sock.settimeout(0.3)
    with pytest.raises((TimeoutError, socket.timeout)):
        resp.read(1)
    conn.close()
    (entry,) = settled_requests(hub_server, 1)  # the handler ends when the client goes away
    assert (entry["fault"], entry["bytes_sent"], entry["error"]) == (
        "stall_after",
        64,
        "client went away during stall",
    )


@pytest.mark.usefixtures("clean_faults")
def test_stall_with_resume_delivers_the_whole_body_late(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]]
) -> None:
    repo_id, files = repo
    path = "weights/model-00002.safetensors"
    hub_server.stall_after(repo_id, path, 10, seconds=0.2, resume=True)
    started = time.monotonic()
    status, _, body = get(hub_server.url(repo_id, path))
    assert status == 200 and body == files[path] and time.monotonic() - started >= 0.2


@pytest.mark.usefixtures("clean_faults")
def test_fault_api_validates_and_head_does_not_consume(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]]
) -> None:
    repo_id, _ = repo
    with pytest.raises(ValueError, match="kind"):
        hub_server.add_fault(repo_id, "config.json", "explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path"):
        hub_server.add_fault(repo_id, "../x", "corrupt")
    hub_server.corrupt(repo_id, "config.json", offset=0)
    get(hub_server.url(repo_id, "config.json"), method="HEAD")
    assert len(hub_server.faults()) == 1
    hub_server.clear_faults()
    assert hub_server.faults() == []


# ---------------------------------------------------------------------------------------------
# Hostile paths
# ---------------------------------------------------------------------------------------------


def test_path_traversal_is_refused(hub_server: HubServer, tmp_path: Path) -> None:
    secret = b"top-secret-" + secrets.token_hex(8).encode()
    outside = hub_server.root / "outside.txt"
    outside.write_bytes(secret)
    token = "hf_" + secrets.token_hex(8)
    repo_id = new_repo_id("trav")
    add_repo(hub_server.root, repo_id, {"ok.txt": b"ok", "link.txt": secret})
    link = hub_server.root / repo_id / "link.txt"
    link.unlink()
    link.symlink_to(outside)  # same size as indexed, but resolves outside the repo
    private_id = new_repo_id("travp")
    add_repo(hub_server.root, private_id, {"a": b"a"}, token=token)

    base = f"/{repo_id}/resolve/main"
    attempts = [
        f"{base}/../../outside.txt",
        f"{base}/%2e%2e/%2e%2e/outside.txt",
        f"{base}/..%2F..%2Foutside.txt",
        f"{base}/%2Fetc%2Fpasswd",
        f"{base}//etc/passwd",
        f"{base}/ok.txt%00.bin",
        f"{base}/link.txt",
        f"{base}/{META_NAME}",
        f"/{private_id}/resolve/main/{META_NAME}",
        f"/%2e%2e/{repo_id.split('/')[1]}/resolve/main/ok.txt",
        f"/api/models/{repo_id}/tree/main/..%2F..",
        "/api/models/%2e%2e/x/tree/main",
    ]
    for path in attempts:
        status, body = raw_get(hub_server, path, {"Authorization": f"Bearer {token}"})
        assert status in (400, 404), path
        assert secret not in body and token.encode() not in body, path
    assert raw_get(hub_server, f"{base}/ok.txt") == (200, b"ok")
    assert raw_get(hub_server, "/no/such/route/at/all")[0] == 404


def test_hostile_input_never_crashes_the_server(
    hub_server: HubServer, repo: tuple[str, dict[str, bytes]]
) -> None:
    repo_id, files = repo
    base = f"/{repo_id}/resolve/main"
    for path in (
        f"{base}/a%0d%0aX-Injected:%20yes",
        f"{base}/%ff%fe.bin",
        f"/{repo_id}/resolve/%0d%0a/config.json",
        f"/api/models/{repo_id}/tree/main?cursor=" + "9" * 5000,
        f"/api/models/{repo_id}/tree/main?cursor=%C2%B2",
    ):
        status, _ = raw_get(hub_server, path)
        assert status in (400, 404), path
    status, body = raw_get(hub_server, f"{base}/config.json", {"Range": "bytes=" + "9" * 5000 + "-"})
    assert (status, body) == (200, files["config.json"])  # unparseable range: ignored
    assert raw_get(hub_server, f"{base}/config.json")[0] == 200  # and the server is still there
