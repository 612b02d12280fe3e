"""The model downloader against real servers: the local Hugging Face Hub (with fault injection and a
request log), moto's S3, plain HTTP from the same Hub, local paths, and the ``aim-download`` CLI
publishing progress to a real nats-server. Bytes, digests, the manifest, resume with ``Range``,
stalls, corruption and auth/not-found distinctions are all checked end to end."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aim_cache_jobs.downloader import (
    AUTH_ERROR,
    CHECKSUM_MISMATCH,
    DOWNLOAD_STALLED,
    INVALID_SOURCE,
    MANIFEST,
    SOURCE_NOT_FOUND,
    STORAGE_FULL,
    Digest,
    DownloadError,
    Listing,
    Progress,
    RemoteFile,
    download,
    download_listing,
    hfsource,
    probe_size,
    protocols,
    read_manifest,
)
from aim_cache_jobs.downloader import disk as disk_module
from aim_cache_jobs.downloader import holding as holding_module
from aim_cache_jobs.downloader import rangefetch as rangefetch_module
from aim_cache_jobs.downloader import transfer as transfer_module
from aim_cache_jobs.downloader import writepath as writepath_module
from aim_cache_jobs.downloader.downloadstate import Attempt
from aim_cache_jobs.downloader.sequence import SequenceFailed, download_in_sequence
from aim_dev.local.hub import HubServer, add_repo
from aim_dev.local.natsserver import NatsServer
from aim_dev.local.s3 import S3Server
from aimcore.api.bus import progress, topology
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.kinds import by_kind
from aimcore.domain.outbound import ALLOWED_HOSTS_ENV
from tests.helpers import LOOPBACK, LOOPBACK_HOSTS

KIB, MIB = 1024, 1024 * 1024
LFS_THRESHOLD = 4 * KIB
MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")


def blob(size: int, seed: int = 0) -> bytes:
    """Deterministic incompressible-looking bytes (fast to make)."""
    block = hashlib.sha256(f"{seed}".encode()).digest() * 2048  # 64 KiB
    out = bytearray()
    i = 0
    while len(out) < size:
        out += hashlib.sha256(block[:64] + i.to_bytes(4, "big")).digest() + block[32 : 32 + 65504]
        i += 1
    return bytes(out[:size])


def model_files() -> dict[str, bytes]:
    return {
        "config.json": b'{"model_type": "llama", "hidden_size": 64}',
        "README.md": b"# tiny model\n",
        "tokenizer/tokenizer.json": b'{"version": "1.0"}' * 10,
        "model-00001-of-00002.safetensors": blob(300 * KIB, 1),  # LFS
        "model-00002-of-00002.safetensors": blob(2 * MIB + 123, 2),  # LFS, several ranges when chunked
        "empty.txt": b"",
    }


def new_repo(hub: HubServer, files: dict[str, bytes], *, token: str | None = None) -> str:
    repo_id = f"aim-tests/dl-{secrets.token_hex(4)}"
    add_repo(hub.root, repo_id, files, token=token, lfs_threshold=LFS_THRESHOLD)
    return repo_id


def hf_env(hub: HubServer, token: str | None = None) -> dict[str, str]:
    env = {"HF_ENDPOINT": hub.endpoint}
    if token:
        env["HF_TOKEN"] = token
    return env


def assert_tree(dest: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        assert (dest / path).read_bytes() == data, path
    assert not (dest / ".aim-partial").exists()


def resolves(hub: HubServer, repo_id: str, path: str | None = None) -> list[dict[str, Any]]:
    """The hub's GET resolve requests for ``repo_id`` (and ``path``), oldest first."""
    return [
        r
        for r in hub.requests()
        if r["repo_id"] == repo_id and r["method"] == "GET" and (path is None or r["path"] == path)
    ]


async def stalls_ended(hub: HubServer, repo_id: str, path: str) -> list[dict[str, Any]]:
    """:func:`resolves` once the hub has ended every one of them (it notices a client that hung up
    on a stall within 50 ms, and logs it so)."""

    def ended() -> list[dict[str, Any]] | None:
        requests = resolves(hub, repo_id, path)
        return requests if all(r["done"] for r in requests) else None

    ended_requests: list[dict[str, Any]] = await wait_until(ended, what="the hub to end every request")
    return ended_requests


def range_start(entry: dict[str, Any]) -> int:
    header = entry["range"]
    return 0 if header is None else int(header.split("=")[1].split("-")[0])


async def wait_until(check: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await asyncio.to_thread(check)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Cut files into 256 KiB ranges and read into 64 KiB buffers, so small test files exercise
    multi-range transfers, buffer flushes and hashing behind a moving prefix."""
    monkeypatch.setattr(transfer_module, "CHUNK_SIZE", 256 * KIB)
    monkeypatch.setattr(rangefetch_module, "BUFFER_SIZE", 64 * KIB)
    yield


@pytest.fixture
def hub(hub_server: HubServer) -> Iterator[HubServer]:
    hub_server.clear_faults()
    yield hub_server
    hub_server.clear_faults()


# -- Hugging Face ------------------------------------------------------------------------------


async def test_hf_model_downloads_verified(hub: HubServer, tmp_path: Path, small_chunks: None) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    seen: list[tuple[Progress, int]] = []
    manifest = await download(
        f"hf://{repo_id}",
        tmp_path,
        env=hf_env(hub),
        connections=4,
        on_progress=lambda p: seen.append((p, threading.get_ident())),
        policy=LOOPBACK,
    )
    assert_tree(tmp_path, files)
    info = json.loads((hub.root / repo_id / ".hub.json").read_text())
    assert manifest.revision == info["commit"]
    assert manifest.source == f"hf://{repo_id}"
    assert manifest.total_bytes == sum(len(d) for d in files.values())
    assert manifest.verified == ("git-sha1", "sha256")
    by_path = {f.path: f for f in manifest.files}
    big = by_path["model-00002-of-00002.safetensors"]
    assert [d.algorithm for d in big.digests] == ["sha256"]
    assert big.digests[0].value == hashlib.sha256(files[big.path]).hexdigest()
    assert [d.algorithm for d in by_path["config.json"].digests] == ["git-sha1"]
    assert read_manifest(tmp_path) == manifest

    # The big file went out as several ranges; progress came from the loop thread, ending in "done".
    big_requests = resolves(hub, repo_id, big.path)
    assert len(big_requests) >= 8 and all(r["range"] for r in big_requests)
    phases = [p.phase for p, _ in seen]
    assert phases[0] == "listing" and phases[-1] == "done" and "downloading" in phases
    assert {ident for _, ident in seen} == {threading.get_ident()}
    last = seen[-1][0]
    assert (last.downloaded_bytes, last.files_done, last.files_total) == (manifest.total_bytes, 6, 6)


async def test_complete_download_is_not_fetched_again(hub: HubServer, tmp_path: Path) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    first = await download(f"hf://{repo_id}@main", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    before = len(resolves(hub, repo_id))
    second = await download(f"hf://{repo_id}@main", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert second == first
    assert len(resolves(hub, repo_id)) == before  # only the listing went over the network


async def test_sha256_computed_where_the_hub_gives_none(
    hub: HubServer, tmp_path: Path, small_chunks: None
) -> None:
    """LFS files come with a sha256 (verified), small ones with a git blob id only: asked to,
    the download computes the sha256 of those while they arrive, and records it apart."""
    files = model_files()
    repo_id = new_repo(hub, files)
    manifest = await download(
        f"hf://{repo_id}", tmp_path, env=hf_env(hub), connections=4, compute=("sha256",), policy=LOOPBACK
    )
    assert_tree(tmp_path, files)
    assert manifest.verified == ("git-sha1", "sha256")
    for f in manifest.files:
        sha = hashlib.sha256(files[f.path]).hexdigest()
        assert f.digest("sha256") == sha, f.path
        if len(files[f.path]) > LFS_THRESHOLD:
            assert [d.algorithm for d in f.digests] == ["sha256"] and f.computed == ()
        else:
            assert [d.algorithm for d in f.digests] == ["git-sha1"]
            assert f.computed == (Digest("sha256", sha),)
    assert read_manifest(tmp_path) == manifest
    before = len(resolves(hub, repo_id))
    assert (
        await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), compute=("sha256",), policy=LOOPBACK)
        == manifest
    )
    assert len(resolves(hub, repo_id)) == before


async def test_new_revision_fetches_only_changed_files(hub: HubServer, tmp_path: Path) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    changed = dict(files)
    changed["config.json"] = b'{"model_type": "llama", "hidden_size": 128}'
    del changed["README.md"]
    add_repo(hub.root, repo_id, changed, lfs_threshold=LFS_THRESHOLD)
    before = len(resolves(hub, repo_id))
    manifest = await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    fetched = [r["path"] for r in resolves(hub, repo_id)[before:]]
    assert fetched == ["config.json"]
    assert_tree(tmp_path, changed)
    assert not (tmp_path / "README.md").exists()
    assert {f.path for f in manifest.files} == set(changed)


@pytest.mark.parametrize("path", ["model-00002-of-00002.safetensors", "config.json"])
async def test_corrupted_byte_is_caught(hub: HubServer, tmp_path: Path, path: str) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    offset = min(len(files[path]) - 1, 1_000_000)
    hub.corrupt(repo_id, path, offset, count=5)
    with pytest.raises(DownloadError) as info:
        await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    error = info.value
    assert error.reason == CHECKSUM_MISMATCH and error.transient
    algorithm = "sha256" if path.endswith(".safetensors") else "git-sha1"
    assert path in error.message and algorithm in error.message
    assert (
        hashlib.sha256(files[path]).hexdigest() in error.message
        or hashlib.sha1(b"blob %d\0" % len(files[path]) + files[path]).hexdigest() in error.message
    )
    assert not (tmp_path / path).exists()
    assert not (tmp_path / ".aim-partial" / f"{path}.part").exists()
    assert not (tmp_path / MANIFEST).exists()
    hub.clear_faults()
    await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert_tree(tmp_path, files)


def _is_direct(fd: int) -> bool:
    import fcntl  # noqa: PLC0415

    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & getattr(os, "O_DIRECT", 0))


@pytest.mark.parametrize("mode", ["held", "read back", "page cache"])
async def test_ranges_are_hashed_in_order_from_memory_or_disk(
    hub: HubServer, tmp_path: Path, small_chunks: None, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Ranges arrive out of order over several connections; the hash consumes the file in order
    from the buffers the bytes arrived in ("held"), or reads back what it could not hold ("read
    back"), with O_DIRECT writes or through the page cache; a corrupted byte is caught either way."""
    if mode == "read back":
        monkeypatch.setattr(holding_module, "HOLD_BYTES", 0)
        monkeypatch.setattr(holding_module, "HOLD_WAIT", 0.0)
    real_preadv, real_pwrite = os.preadv, os.pwrite
    read_back: list[int] = []
    direct_writes: list[int] = []

    def preadv(fd: int, buffers: Any, offset: int) -> int:
        n = real_preadv(fd, buffers, offset)
        read_back.append(n)
        return n

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if _is_direct(fd):
            direct_writes.append(len(data))
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "preadv", preadv)
    monkeypatch.setattr(os, "pwrite", pwrite)
    path = "model.safetensors"
    files = {path: blob(3 * MIB + 4097, 11), "config.json": b"{}"}
    direct_io = mode != "page cache"
    await download(
        f"hf://{new_repo(hub, files)}",
        tmp_path / "ok",
        env=hf_env(hub),
        connections=4,
        direct_io=direct_io,
        policy=LOOPBACK,
    )
    assert_tree(tmp_path / "ok", files)
    if mode == "read back":
        assert sum(read_back) > 0
    else:
        assert sum(read_back) == 0  # hashed from memory: no second pass over the file
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    fd = disk_module.open_direct(probe)
    if fd is not None:  # the filesystem has O_DIRECT: whole blocks went through it
        os.close(fd)
        assert bool(direct_writes) == direct_io
        assert all(n % disk_module.ALIGN == 0 for n in direct_writes)

    corrupt = new_repo(hub, files)
    hub.corrupt(corrupt, path, 2 * MIB + 100, count=1000)  # whichever range request covers it
    with pytest.raises(DownloadError) as info:
        await download(
            f"hf://{corrupt}",
            tmp_path / "bad",
            env=hf_env(hub),
            connections=4,
            direct_io=direct_io,
            policy=LOOPBACK,
        )
    assert info.value.reason == CHECKSUM_MISMATCH and path in info.value.message
    assert hashlib.sha256(files[path]).hexdigest() in info.value.message
    assert not (tmp_path / "bad" / path).exists()
    assert not (tmp_path / "bad" / ".aim-partial" / f"{path}.part").exists()
    assert not (tmp_path / "bad" / MANIFEST).exists()
    served = [r for r in resolves(hub, corrupt, path) if r["range"] and range_start(r) <= 2 * MIB + 100]
    assert served and any(r["fault"] == "corrupt" for r in served)


@pytest.mark.parametrize("case", [(0.01, 0.02, "direct"), (0.02, 0.01, "buffered")])
async def test_probed_write_path_is_used_and_still_verifies_every_byte(
    hub: HubServer,
    tmp_path: Path,
    small_chunks: None,
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[float, float, str],
) -> None:
    """With no write path asked for, the probe's verdict (seconds direct, seconds through the page
    cache -> the path) decides whether full buffers go through O_DIRECT; either way every byte is
    hashed and a corrupted one fails the download."""
    direct_s, buffered_s, path = case
    monkeypatch.setattr(transfer_module, "PROBE_MIN_BYTES", 0)
    monkeypatch.setattr(writepath_module, "_verdicts", {})
    monkeypatch.setattr(writepath_module, "_last", {})
    probed: list[Path] = []

    def probe(directory: Path) -> writepath_module.ProbeResult:
        probed.append(directory)
        return writepath_module.ProbeResult(MIB, direct_s, buffered_s)

    monkeypatch.setattr(writepath_module, "probe", probe)
    real_pwrite = os.pwrite
    direct_writes: list[int] = []

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if _is_direct(fd):
            direct_writes.append(len(data))
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    name = "model.safetensors"
    files = {name: blob(3 * MIB + 4097, 13), "config.json": b"{}"}
    await download(
        f"hf://{new_repo(hub, files)}", tmp_path / "ok", env=hf_env(hub), connections=4, policy=LOOPBACK
    )
    assert_tree(tmp_path / "ok", files)
    assert len(probed) == 1  # while listing, in the nearest existing directory (same filesystem)
    chosen = writepath_module.chosen(tmp_path / "ok")
    assert chosen is not None and chosen.path == path
    (tmp_path / "x").write_bytes(b"")
    fd = disk_module.open_direct(tmp_path / "x")
    if fd is not None:  # the filesystem has O_DIRECT
        os.close(fd)
        assert bool(direct_writes) == (path == "direct")

    corrupt = new_repo(hub, files)
    hub.corrupt(corrupt, name, 2 * MIB + 100, count=1000)  # whichever range request covers it
    with pytest.raises(DownloadError) as info:
        await download(f"hf://{corrupt}", tmp_path / "bad", env=hf_env(hub), connections=4, policy=LOOPBACK)
    assert info.value.reason == CHECKSUM_MISMATCH and name in info.value.message
    assert not (tmp_path / "bad" / name).exists()
    assert len(probed) == 1  # the same filesystem: the verdict is reused


async def test_refused_direct_writes_fall_back_to_the_page_cache(
    hub: HubServer, tmp_path: Path, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_pwrite = os.pwrite
    refused: list[int] = []

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if _is_direct(fd):
            refused.append(offset)
            raise OSError(22, "Invalid argument")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    files = {"model.safetensors": blob(MIB + 5, 12)}
    await download(f"hf://{new_repo(hub, files)}", tmp_path, env=hf_env(hub), connections=2, policy=LOOPBACK)
    assert_tree(tmp_path, files)
    assert len(refused) <= 2  # refused once per file (a second worker may have been writing too)


async def test_dropped_connection_resumes_with_range(hub: HubServer, tmp_path: Path) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    path = "model-00002-of-00002.safetensors"
    cut = 700 * KIB + 17
    hub.drop_after(repo_id, path, cut)
    await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert_tree(tmp_path, files)
    requests = resolves(hub, repo_id, path)
    assert [r["fault"] for r in requests] == ["drop_after", None]
    assert requests[0]["bytes_sent"] == cut
    assert requests[1]["range"] == f"bytes={cut}-{len(files[path]) - 1}"  # nothing fetched twice


async def test_stall_is_retried_from_where_it_stopped(hub: HubServer, tmp_path: Path) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    path = "model-00001-of-00002.safetensors"
    hub.stall_after(repo_id, path, 100 * KIB, seconds=30)
    await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), stall_timeout=0.5, policy=LOOPBACK)
    assert_tree(tmp_path, files)
    requests = await stalls_ended(hub, repo_id, path)
    assert [r["fault"] for r in requests] == ["stall_after", None]
    # the downloader hung up on the stall (its stall timeout), long before the hub's 30 s were out
    assert requests[0]["error"] == "client went away during stall"
    assert range_start(requests[1]) == 100 * KIB


async def test_persistent_stall_raises_download_stalled(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rangefetch_module, "RANGE_JITTER", None)  # the exact schedule: its time is asserted
    files = {"model.safetensors": blob(200 * KIB, 3)}
    repo_id = new_repo(hub, files)
    hub.stall_after(repo_id, "model.safetensors", 0, seconds=30, count=50)
    started = time.monotonic()
    with pytest.raises(DownloadError) as info:
        await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), stall_timeout=0.3, policy=LOOPBACK)
    elapsed = time.monotonic() - started
    assert info.value.reason == DOWNLOAD_STALLED and info.value.transient
    host = hub.endpoint.removeprefix("http://")
    assert info.value.message == f"no data for 0.3 s from {host}"
    attempts = await stalls_ended(hub, repo_id, "model.safetensors")
    assert len(attempts) == rangefetch_module.MAX_ATTEMPTS  # a few attempts, never a tight loop
    # each attempt hung up on the stall (its stall timeout), never waiting out the hub's 30 s
    assert {r["error"] for r in attempts} == {"client went away during stall"}
    # and waited out the schedule between them: 0.25, 0.5 and 1 s (a lower bound holds under load)
    assert elapsed >= 4 * 0.3 + 0.25 + 0.5 + 1.0 - 0.1
    assert not (tmp_path / MANIFEST).exists()


async def test_interrupted_download_does_not_refetch_completed_bytes(hub: HubServer, tmp_path: Path) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    path = "model-00002-of-00002.safetensors"
    size = len(files[path])
    hub.stall_after(repo_id, path, 1200 * KIB, seconds=60)
    task = asyncio.create_task(download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK))

    def stalled() -> bool:
        return any(r["bytes_sent"] >= 1200 * KIB for r in resolves(hub, repo_id, path))

    await wait_until(stalled, what="the stalled request to have sent its bytes")
    await wait_until(lambda: _part_size(tmp_path, path) >= 1200 * KIB, what="the bytes to be written")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    state = json.loads((tmp_path / ".aim-partial" / f"{path}.state.json").read_text())
    assert state["done"] == [[0, 1200 * KIB]]
    assert not (tmp_path / path).exists() and not (tmp_path / MANIFEST).exists()

    before = len(resolves(hub, repo_id, path))
    hub.clear_faults()
    await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert_tree(tmp_path, files)
    again = resolves(hub, repo_id, path)[before:]
    assert [r["range"] for r in again] == [f"bytes={1200 * KIB}-{size - 1}"]
    assert sum(r["bytes_sent"] for r in again) == size - 1200 * KIB


def _part_size(dest: Path, path: str) -> int:
    try:
        return (dest / ".aim-partial" / f"{path}.part").stat().st_size
    except FileNotFoundError:
        return 0


async def test_changed_file_starts_over(hub: HubServer, tmp_path: Path) -> None:
    """Partial bytes of another version of a file are never reused."""
    path = "model.safetensors"
    repo_id = new_repo(hub, {path: blob(600 * KIB, 4)})
    hub.drop_after(repo_id, path, 300 * KIB)
    hub.drop_after(repo_id, path, 0, count=10)  # then no progress at all: the attempts run out
    with pytest.raises(DownloadError):
        await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert _part_size(tmp_path, path) == 300 * KIB
    hub.clear_faults()
    new = {path: blob(600 * KIB, 5)}
    add_repo(hub.root, repo_id, new, lfs_threshold=LFS_THRESHOLD)
    before = len(resolves(hub, repo_id, path))
    await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert_tree(tmp_path, new)
    assert [r["range"] for r in resolves(hub, repo_id, path)[before:]] == [f"bytes=0-{600 * KIB - 1}"]


async def test_private_repo_token_vs_missing_repo(hub: HubServer, tmp_path: Path) -> None:
    token = "hf_" + secrets.token_hex(12)
    files = {"config.json": b"{}", "model.safetensors": blob(10 * KIB, 6)}
    repo_id = new_repo(hub, files, token=token)

    with pytest.raises(DownloadError) as wrong:
        await download(
            f"hf://{repo_id}", tmp_path, env=hf_env(hub, "hf_wrong" + secrets.token_hex(4)), policy=LOOPBACK
        )
    assert wrong.value.reason == AUTH_ERROR and not wrong.value.transient

    with pytest.raises(DownloadError) as anonymous:
        await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert anonymous.value.reason == SOURCE_NOT_FOUND and "HF_TOKEN" in anonymous.value.message

    with pytest.raises(DownloadError) as missing:
        await download("hf://aim-tests/does-not-exist", tmp_path, env=hf_env(hub, token), policy=LOOPBACK)
    assert missing.value.reason == SOURCE_NOT_FOUND

    with pytest.raises(DownloadError) as revision:
        await download(f"hf://{repo_id}@v9", tmp_path, env=hf_env(hub, token), policy=LOOPBACK)
    assert revision.value.reason == SOURCE_NOT_FOUND and "v9" in revision.value.message

    for e in (wrong.value, anonymous.value, missing.value, revision.value):
        assert token not in e.message and "hf_wrong" not in e.message

    manifest = await download(
        f"hf://{repo_id}", tmp_path, env={"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": token}, policy=LOOPBACK
    )
    assert_tree(tmp_path, files)
    assert manifest.verified == ("git-sha1", "sha256")


@pytest.mark.parametrize("private", [False, True])
async def test_stdlib_listing_equals_the_huggingface_hub_listing(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch, private: bool
) -> None:
    """The listing's fast path (one stdlib request, no ``huggingface_hub`` import) gives exactly
    what ``HfApi.model_info`` gives, and steps aside (None) whenever it is not a plain success."""
    token = "hf_" + secrets.token_hex(12) if private else None
    repo_id = new_repo(hub, model_files(), token=token)
    env = hf_env(hub, token)
    for uri in (f"hf://{repo_id}", f"hf://{repo_id}@main"):
        parsed = hfsource.parse_hf(uri)
        fast = hfsource._list_hf_direct(parsed, env, policy=LOOPBACK)
        with monkeypatch.context() as m:
            m.setattr(hfsource, "_list_hf_direct", lambda *_: None)
            slow = hfsource.list_hf(parsed, env, policy=LOOPBACK)
        assert fast is not None and fast == slow
        assert [f.url for f in fast.files] == [f.url for f in slow.files]
    missing = hfsource.parse_hf("hf://aim-tests/does-not-exist")
    assert hfsource._list_hf_direct(missing, env, policy=LOOPBACK) is None
    bad_revision = hfsource.parse_hf(f"hf://{repo_id}@v9")
    assert hfsource._list_hf_direct(bad_revision, env, policy=LOOPBACK) is None
    if private:
        assert (
            hfsource._list_hf_direct(hfsource.parse_hf(f"hf://{repo_id}"), hf_env(hub), policy=LOOPBACK)
            is None
        )


async def test_probe_size(hub: HubServer) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    assert await probe_size(f"hf://{repo_id}", hf_env(hub), policy=LOOPBACK) == sum(
        len(d) for d in files.values()
    )


async def test_hostile_listing_is_refused_before_writing(hub: HubServer, tmp_path: Path) -> None:
    """A server that lists ``../`` paths gets nothing written, inside or outside the destination."""
    repo_id = new_repo(hub, {"config.json": b"{}"})
    index_path = hub.root / repo_id / ".hub.json"
    index = json.loads(index_path.read_text())
    entry = dict(index["files"]["config.json"])
    index["files"]["../../escaped.json"] = entry
    index_path.write_text(json.dumps(index))
    dest = tmp_path / "dest"
    with pytest.raises(DownloadError) as info:
        await download(f"hf://{repo_id}", dest, env=hf_env(hub), policy=LOOPBACK)
    assert info.value.reason == INVALID_SOURCE and "../../escaped.json" in info.value.message
    assert not (tmp_path / "escaped.json").exists()
    assert not dest.exists() or not any(dest.iterdir())
    assert resolves(hub, repo_id) == []


async def test_symlinked_directory_in_dest_cannot_lead_outside(hub: HubServer, tmp_path: Path) -> None:
    repo_id = new_repo(hub, {"weights/deep/model.safetensors": blob(8 * KIB, 13)})
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "weights").symlink_to(outside)
    with pytest.raises(DownloadError) as info:
        await download(f"hf://{repo_id}", dest, env=hf_env(hub), policy=LOOPBACK)
    assert info.value.reason == INVALID_SOURCE and "outside" in info.value.message
    assert list(outside.iterdir()) == []


async def test_storage_full(hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = model_files()
    repo_id = new_repo(hub, files)
    real_disk_usage = disk_module.shutil.disk_usage

    def tiny(path: Any) -> Any:
        return real_disk_usage(path)._replace(free=1000)

    monkeypatch.setattr(disk_module.shutil, "disk_usage", tiny)
    with pytest.raises(DownloadError) as early:
        await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert early.value.reason == STORAGE_FULL and "needed" in early.value.message
    assert resolves(hub, repo_id) == []  # refused before fetching anything
    monkeypatch.setattr(disk_module.shutil, "disk_usage", real_disk_usage)

    real_pwrite = os.pwrite

    def full_after_a_while(fd: int, data: Any, offset: int) -> int:
        if offset >= 256 * KIB:
            raise OSError(28, "No space left on device")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(disk_module.os, "pwrite", full_after_a_while)
    with pytest.raises(DownloadError) as late:
        await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert late.value.reason == STORAGE_FULL and ".safetensors" in late.value.message
    assert not (tmp_path / MANIFEST).exists()
    monkeypatch.setattr(disk_module.os, "pwrite", real_pwrite)
    # resumes once there is room
    await download(f"hf://{repo_id}", tmp_path, env=hf_env(hub), policy=LOOPBACK)
    assert_tree(tmp_path, files)


# -- plain HTTP and local paths ----------------------------------------------------------------


async def test_http_url_with_expected_sha256(hub: HubServer, tmp_path: Path) -> None:
    data = blob(700 * KIB, 7)
    repo_id = new_repo(hub, {"weights.gguf": data})
    url = hub.url(repo_id, "weights.gguf")
    manifest = await download(
        url, tmp_path, env={}, expected_sha256=hashlib.sha256(data).hexdigest(), policy=LOOPBACK
    )
    assert (tmp_path / "weights.gguf").read_bytes() == data
    assert manifest.verified == ("sha256",) and manifest.revision is None

    wrong = "0" * 64
    with pytest.raises(DownloadError) as info:
        await download(url, tmp_path / "other", env={}, expected_sha256=wrong, policy=LOOPBACK)
    assert info.value.reason == CHECKSUM_MISMATCH and wrong in info.value.message
    assert not (tmp_path / "other" / "weights.gguf").exists()

    with pytest.raises(DownloadError) as missing:
        await download(hub.url(repo_id, "nope.bin"), tmp_path / "x", env={}, policy=LOOPBACK)
    assert missing.value.reason == SOURCE_NOT_FOUND


async def test_local_directory_and_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    files = {"a.bin": blob(300 * KIB, 8), "sub/b.json": b"{}"}
    for path, data in files.items():
        (src / path).write_bytes(data)
    (src / "sub" / "link.json").symlink_to(src / "sub" / "b.json")
    manifest = await download(f"file://{src}", tmp_path / "d1", env={}, policy=LOOPBACK)
    assert_tree(tmp_path / "d1", {**files, "sub/link.json": b"{}"})
    assert manifest.verified == ()

    single = await download(
        str(src / "a.bin"),
        tmp_path / "d2",
        env={},
        expected_sha256=hashlib.sha256(files["a.bin"]).hexdigest(),
        policy=LOOPBACK,
    )
    assert (tmp_path / "d2" / "a.bin").read_bytes() == files["a.bin"] and single.verified == ("sha256",)

    (src / "escape").symlink_to("/etc/hostname")
    with pytest.raises(DownloadError) as info:
        await download(str(src), tmp_path / "d3", env={}, policy=LOOPBACK)
    assert info.value.reason == INVALID_SOURCE and "escape" in info.value.message

    with pytest.raises(DownloadError) as missing:
        await download(str(tmp_path / "nothing"), tmp_path / "d4", env={}, policy=LOOPBACK)
    assert missing.value.reason == SOURCE_NOT_FOUND


async def test_redirect_to_another_host_drops_the_token(tmp_path: Path, small_chunks: None) -> None:
    """The Hub redirects LFS files to a CDN: follow it, never send the token there, and send the
    later ranges straight to the redirect target."""
    data = blob(1 * MIB + 5, 12)
    (tmp_path / "cdn").mkdir()
    (tmp_path / "cdn" / "w.bin").write_bytes(data)
    seen: dict[str, list[str | None]] = {"origin": [], "cdn": []}

    async def cdn(request: web.Request) -> web.StreamResponse:
        seen["cdn"].append(request.headers.get("Authorization"))
        return web.FileResponse(tmp_path / "cdn" / "w.bin")

    cdn_runner = web.AppRunner(_app("/w.bin", cdn))
    await cdn_runner.setup()
    await web.TCPSite(cdn_runner, "127.0.0.1", 0).start()
    cdn_port = cdn_runner.addresses[0][1]

    async def origin(request: web.Request) -> web.StreamResponse:
        seen["origin"].append(request.headers.get("Authorization"))
        raise web.HTTPFound(f"http://localhost:{cdn_port}/w.bin?signature=secret")

    origin_runner = web.AppRunner(_app("/w.bin", origin))
    await origin_runner.setup()
    await web.TCPSite(origin_runner, "127.0.0.1", 0).start()
    origin_port = origin_runner.addresses[0][1]
    try:
        remote = RemoteFile(
            "w.bin",
            len(data),
            f"http://127.0.0.1:{origin_port}/w.bin",
            {"Authorization": "Bearer hf_secret"},
            (Digest("sha256", hashlib.sha256(data).hexdigest()),),
        )
        manifest = await download_listing(
            Listing("test", None, (remote,)), tmp_path / "dest", connections=2, policy=LOOPBACK
        )
    finally:
        await origin_runner.cleanup()
        await cdn_runner.cleanup()
    assert (tmp_path / "dest" / "w.bin").read_bytes() == data and manifest.verified == ("sha256",)
    assert seen["origin"] and set(seen["origin"]) == {"Bearer hf_secret"}
    assert len(seen["cdn"]) >= 4 and set(seen["cdn"]) == {None}
    assert len(seen["origin"]) <= 2  # one redirect per connection; the rest go to the CDN directly


def _app(path: str, handler: Callable[[web.Request], Any]) -> web.Application:
    app = web.Application()
    app.router.add_get(path, handler)
    return app


# -- S3 ----------------------------------------------------------------------------------------


def s3_files() -> dict[str, bytes]:
    return {"config.json": b'{"a": 1}', "weights/model.safetensors": blob(900 * KIB, 9), "empty": b""}


async def test_s3_model_downloads_verified(s3_server: S3Server, tmp_path: Path, small_chunks: None) -> None:
    bucket = f"models-{secrets.token_hex(3)}"
    files = s3_files()
    s3_server.put_model(bucket, "org/model", files, checksum=True)
    multipart = blob(11 * MIB, 10)
    s3_server.put_multipart(bucket, "org/model/weights/big.bin", multipart)
    manifest = await download(
        f"s3://{bucket}/org/model", tmp_path, env=s3_server.credentials_env(), policy=LOOPBACK
    )
    assert_tree(tmp_path, {**files, "weights/big.bin": multipart})
    assert manifest.verified == ("md5", "sha256")
    by_path = {f.path: {d.algorithm for d in f.digests} for f in manifest.files}
    assert by_path["weights/model.safetensors"] == {"md5", "sha256"}
    assert by_path["weights/big.bin"] == set()  # a multipart ETag is no md5, and no checksum was stored
    assert manifest.revision is None and manifest.source == f"s3://{bucket}/org/model"

    single = await download(
        f"s3://{bucket}/org/model/config.json",
        tmp_path / "one",
        env=s3_server.credentials_env(),
        policy=LOOPBACK,
    )
    assert [f.path for f in single.files] == ["config.json"]


async def test_s3_wrong_secret_vs_missing_bucket(s3_server: S3Server, tmp_path: Path) -> None:
    bucket = f"models-{secrets.token_hex(3)}"
    s3_server.put_model(bucket, "m", {"a.bin": b"x"})
    env = s3_server.credentials_env()
    bad_secret = "wrong-" + secrets.token_hex(8)

    with pytest.raises(DownloadError) as auth:
        await download(
            f"s3://{bucket}/m", tmp_path, env={**env, "AWS_SECRET_ACCESS_KEY": bad_secret}, policy=LOOPBACK
        )
    assert auth.value.reason == AUTH_ERROR and not auth.value.transient
    assert bad_secret not in auth.value.message and env["AWS_SECRET_ACCESS_KEY"] not in auth.value.message

    with pytest.raises(DownloadError) as unknown_key:
        await download(
            f"s3://{bucket}/m", tmp_path, env={**env, "AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY"}, policy=LOOPBACK
        )
    assert unknown_key.value.reason == AUTH_ERROR

    with pytest.raises(DownloadError) as no_bucket:
        await download(f"s3://missing-{secrets.token_hex(3)}/m", tmp_path, env=env, policy=LOOPBACK)
    assert no_bucket.value.reason == SOURCE_NOT_FOUND

    with pytest.raises(DownloadError) as no_prefix:
        await download(f"s3://{bucket}/nothing-here", tmp_path, env=env, policy=LOOPBACK)
    assert no_prefix.value.reason == SOURCE_NOT_FOUND


# -- the CLI -----------------------------------------------------------------------------------


async def run_cli(args: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aim_cache_jobs.downloader.cli",
        *args,
        env={**_base_env(), **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _base_env() -> dict[str, str]:
    """What a download Job's container gets besides the source's env: the operator's outbound policy
    (here: the test servers' loopback hosts allow-listed, as the cache service would pass it)."""
    keep = ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR")
    return {**{k: os.environ[k] for k in keep if k in os.environ}, ALLOWED_HOSTS_ENV: LOOPBACK_HOSTS}


async def terminated(proc: asyncio.subprocess.Process, until: Awaitable[object]) -> tuple[bytes, bytes]:
    """What ``proc`` wrote once stopped by SIGTERM after ``until``; killed if anything fails first."""
    try:
        await until
        proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(proc.communicate(), 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def last_json(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.strip()]
    result = json.loads(lines[-1])
    assert isinstance(result, dict)
    return result


async def test_cli_publishes_progress_and_prints_result(
    hub: HubServer, tmp_path: Path, aim_nats: NatsServer, nats_client: NatsClient, js: JetStreamContext
) -> None:
    await topology.ensure_topology(js)
    files = model_files()
    repo_id = new_repo(hub, files)
    name = f"cache-{secrets.token_hex(3)}"
    target = ObjectRef.of(MODEL_CACHE, "ns", name)
    key = progress.key_from_seed("the cache service's seed")
    received: list[StatusReport] = []
    tokens: list[str | None] = []
    sub = await nats_client.subscribe(progress.subject(target), cb=_collect(received, tokens))
    try:
        code, out, err = await run_cli(
            [
                f"hf://{repo_id}",
                str(tmp_path / "dest"),
                "--object",
                f"{MODEL_CACHE.group}/{MODEL_CACHE.version}/AIMModelCache/ns/{name}",
                "--uid",
                "uid-123",
            ],
            {
                **hf_env(hub),
                **aim_nats.client("download").env(),
                "AIM_PROGRESS_TOKEN": progress.token(key, target, "uid-123"),
            },
        )
        assert code == 0, err
        result = last_json(out)
        assert result["result"] == "ok"
        assert result["files"] == len(files) and result["bytes"] == sum(len(d) for d in files.values())
        assert result["verified"] == ["git-sha1", "sha256"] and len(result["revision"]) == 40
        assert isinstance(result["seconds"], float)
        assert_tree(tmp_path / "dest", files)
        await wait_until(
            lambda: received and received[-1].fields["progress"]["percentage"] == 100, what="report"
        )
    finally:
        await sub.unsubscribe()
    report = received[-1]
    # what the Job offers is exactly what the cache service relays (its token checks out)
    assert progress.vet(key, progress.subject(target), report.encode(), tokens[-1]) == report
    assert report.source == "cache" and report.progress and report.uid == "uid-123"
    assert report.object.name == name and report.object.namespace == "ns"
    (condition,) = report.conditions
    assert condition.type == "DownloadReady" and condition.status == "False"
    assert report.fields["progress"]["totalBytes"] == result["bytes"]
    assert "downloading" in err and "done:" in err


def _collect(into: list[StatusReport], tokens: list[str | None]) -> Callable[[Any], Any]:
    async def cb(msg: Any) -> None:
        into.append(StatusReport.model_validate_json(msg.data))
        tokens.append((msg.headers or {}).get(progress.TOKEN_HEADER))

    return cb


async def test_cli_without_nats_still_downloads(hub: HubServer, tmp_path: Path) -> None:
    files = {"config.json": b"{}"}
    repo_id = new_repo(hub, files)
    code, out, err = await run_cli(
        [f"hf://{repo_id}", str(tmp_path), "--object", "aim.eai.amd.com/v1alpha1/AIMModelCache/ns/x"],
        {**hf_env(hub), "AIM_NATS_URL": "nats://127.0.0.1:9", "AIM_PROGRESS_TOKEN": "t"},
    )
    assert code == 0, err
    assert last_json(out)["result"] == "ok"
    assert err.count("cannot connect to NATS") == 1


async def test_cli_logs_json_lines_on_request(hub: HubServer, tmp_path: Path) -> None:
    """With AIM_LOG_FORMAT=json (the cache service passes its own to its Jobs) every stderr line
    is a JSON object from aimcore's log configuration: its progress lines and its warnings."""
    files = {"config.json": b"{}"}
    repo_id = new_repo(hub, files)
    code, out, err = await run_cli(
        [f"hf://{repo_id}", str(tmp_path), "--object", "aim.eai.amd.com/v1alpha1/AIMModelCache/ns/x"],
        {
            **hf_env(hub),
            "AIM_NATS_URL": "nats://127.0.0.1:9",
            "AIM_PROGRESS_TOKEN": "t",
            "AIM_LOG_FORMAT": "json",
        },
    )
    assert code == 0, err
    lines = [json.loads(line) for line in err.splitlines()]
    assert lines, "no log lines"
    assert all(line["service"] == "aim-download" for line in lines), lines
    assert any(line["level"] == "WARNING" and "cannot connect to NATS" in line["message"] for line in lines)
    assert any(line["logger"] == "aim-download" and line["level"] == "INFO" for line in lines), lines
    assert last_json(out)["result"] == "ok"
    code, out, _ = await run_cli([f"hf://{repo_id}", str(tmp_path)], {**hf_env(hub), "AIM_LOG_FORMAT": "xml"})
    assert code == 2 and "AIM_LOG_FORMAT" in last_json(out)["message"]


async def test_cli_errors_are_json(hub: HubServer, tmp_path: Path) -> None:
    token = secrets.token_hex(8)
    code, out, err = await run_cli(["hf://aim-tests/nope", str(tmp_path)], hf_env(hub, token))
    assert code == 1
    # a failure no protocol can fix ends the sequence on its first attempt
    assert last_json(out) == {
        "result": "error",
        "reason": SOURCE_NOT_FOUND,
        "message": last_json(out)["message"],
        "download": {"protocol": "HF_TRANSFER", "attempt": 1, "protocolSequence": "HF_TRANSFER,HTTP"},
    }
    assert token not in out and token not in err

    code, out, _ = await run_cli(["hf://aim-tests/nope"], {})
    assert code == 2 and last_json(out)["reason"] == "UsageError"
    code, out, _ = await run_cli(["hf://a/b", str(tmp_path), "--object", "bad"], {})
    assert code == 2 and "--object" in last_json(out)["message"]
    code, out, _ = await run_cli(["ftp://x", str(tmp_path)], {})
    assert code == 1 and last_json(out)["reason"] == INVALID_SOURCE


async def test_cli_sigterm_keeps_partial_data_for_resume(hub: HubServer, tmp_path: Path) -> None:
    path = "model.safetensors"
    data = blob(3 * MIB, 11)
    repo_id = new_repo(hub, {path: data})
    hub.stall_after(repo_id, path, 1 * MIB, seconds=60)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aim_cache_jobs.downloader.cli",
        f"hf://{repo_id}",
        str(tmp_path),
        env={**_base_env(), **hf_env(hub)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await terminated(
        proc, wait_until(lambda: _part_size(tmp_path, path) >= MIB, what="the first MiB on disk")
    )
    assert proc.returncode == 143, err.decode()
    result = last_json(out.decode())
    assert result["result"] == "error" and "SIGTERM" in result["message"]
    state = json.loads((tmp_path / ".aim-partial" / f"{path}.state.json").read_text())
    assert state["done"] == [[0, MIB]]

    hub.clear_faults()
    before = len(resolves(hub, repo_id, path))
    code, out2, err2 = await run_cli([f"hf://{repo_id}", str(tmp_path)], hf_env(hub))
    assert code == 0, err2
    assert last_json(out2)["result"] == "ok"
    assert [r["range"] for r in resolves(hub, repo_id, path)[before:]] == [f"bytes={MIB}-{len(data) - 1}"]
    assert (tmp_path / path).read_bytes() == data


# -- the protocol sequence (AIM_DOWNLOADER_PROTOCOL) -----------------------------------------------


async def test_a_source_that_ignores_ranges_fails_hf_transfer_and_http_fetches_it(
    hub: HubServer, tmp_path: Path, small_chunks: None
) -> None:
    """The default sequence: ranged requests first; a server that answers them with whole files
    fails that protocol at once, and the plain requests of ``HTTP`` fetch and verify everything."""
    files = model_files()
    repo_id = new_repo(hub, files)
    path = "model-00002-of-00002.safetensors"  # several ranges with small chunks
    hub.add_fault(repo_id, path, "ignore_range", count=1000)
    began: list[Attempt] = []
    manifest, attempt = await download_in_sequence(
        f"hf://{repo_id}",
        tmp_path,
        sequence=protocols.DEFAULT,
        env=hf_env(hub),
        on_attempt=began.append,
        policy=LOOPBACK,
    )
    assert [(a.protocol, a.number) for a in began] == [("HF_TRANSFER", 1), ("HTTP", 2)]
    assert attempt == began[-1]
    assert_tree(tmp_path, files)
    assert sorted(f.path for f in manifest.files) == sorted(files)
    requests = resolves(hub, repo_id, path)
    ranged = [r for r in requests if r["range"]]
    assert ranged and all(r["fault"] == "ignore_range" for r in ranged)
    assert requests[-1]["range"] is None and requests[-1]["status"] == 200


async def test_a_failure_no_protocol_can_fix_ends_the_sequence(hub: HubServer, tmp_path: Path) -> None:
    began: list[Attempt] = []
    with pytest.raises(SequenceFailed) as failed:
        await download_in_sequence(
            "hf://aim-tests/no-such-repo",
            tmp_path,
            sequence=protocols.DEFAULT,
            env=hf_env(hub),
            on_attempt=began.append,
            policy=LOOPBACK,
        )
    assert failed.value.reason == SOURCE_NOT_FOUND
    assert failed.value.attempt == began[0] and len(began) == 1


async def test_cli_skips_a_protocol_it_lacks_and_records_the_attempt(hub: HubServer, tmp_path: Path) -> None:
    """``XET`` (not implemented here) fails at once and the sequence goes on; the result line
    records the attempt that made the download, which the cache service writes to status."""
    files = {"config.json": b"{}"}
    repo_id = new_repo(hub, files)
    code, out, err = await run_cli(
        [f"hf://{repo_id}", str(tmp_path / "a")], {**hf_env(hub), "AIM_DOWNLOADER_PROTOCOL": "xet, http"}
    )
    assert code == 0, err
    result = last_json(out)
    assert result["result"] == "ok"
    assert result["download"] == {"protocol": "HTTP", "attempt": 2, "protocolSequence": "XET,HTTP"}
    assert "XET is not available in this downloader" in err
    code, out, _ = await run_cli(
        [f"hf://{repo_id}", str(tmp_path / "b")], {**hf_env(hub), "AIM_DOWNLOADER_PROTOCOL": "XET"}
    )
    assert code == 1
    assert last_json(out)["reason"] == "ProtocolUnavailable"
    assert last_json(out)["download"] == {"protocol": "XET", "attempt": 1, "protocolSequence": "XET"}
    code, out, _ = await run_cli(
        [f"hf://{repo_id}", str(tmp_path / "c")], {**hf_env(hub), "AIM_DOWNLOADER_PROTOCOL": "HTTP,FTP"}
    )
    assert code == 1
    result = last_json(out)
    assert result["reason"] == "InvalidDownloadProtocol" and "'FTP'" in result["message"]
    assert "download" not in result and not (tmp_path / "c").exists()
