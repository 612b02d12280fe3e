"""``aimctl bench download``: the downloader against ``curl`` from the same local server, and the
status writes a download costs (docs/design.md#performance-budgets: ≥ 90 % of curl's throughput,
integrity verified, status written at most once per object every few seconds).

1. **Throughput.** A file of ``--size`` random bytes is served by the local Hub-compatible server
   (sendfile) as an LFS file of a model repo. ``curl -o`` fetches it (after an untimed warm-up),
   then ``aim-download hf://bench/model`` (the downloader as it runs in a download Job: listing,
   ranged transfer, sha256 verification, fsync, atomic placement) into the same filesystem,
   alternating with curl. The median of ``--repeat`` runs of each; ``ratio_vs_curl`` is curl's
   median time over the downloader's; ``ratio_vs_curl_paired`` the median of each curl run's time
   over the next downloader run's (on a shared machine, load that comes and goes hits neighbouring
   runs alike). ``write_path`` is how the downloader wrote (``direct``: ``O_DIRECT``,
   ``buffered``: the page cache), as its write probe chose it (``--write-path auto``, with the
   probe's figures) or as asked for. ``curl_synced_bytes_per_s`` adds the ``fsync`` of curl's file
   (timed after curl exits): what curl takes to give the durability the downloader gives; on a
   machine whose disk is slower than the network it, not curl, bounds any durable download.
2. **Status writes.** The embedded stack runs; an AIMModelCache receives progress reports at 10 per
   second for ``--window`` seconds (far more often than a downloader sends them), as the status
   service would see from a fast download, and a watch counts the writes of the object's status:
   ``status_writes_per_min`` is what the coalescing lets through.

The tool runs ``aim-download`` as a process (aimcore never imports a service). Human lines go to
stderr; the last stdout line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aim_dev.local.hub import HubServer, add_file
from aim_dev.local.stack import Stack
from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.kinds import by_kind
from aimcore.domain.outbound import ALLOWED_HOSTS_ENV
from aimcore.runtime import Kube, connect_bus
from aimcore.runtime.bus import BusSettings
from aimcore.runtime.kube import connect

MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
REPO = "bench/model"
BLOCK = 64 * 1024 * 1024


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _blocks(size: int) -> Iterator[bytes]:
    block = os.urandom(BLOCK)
    left = size
    while left > 0:
        chunk = block[: min(BLOCK, left)]
        left -= len(chunk)
        yield chunk


def _flush(*paths: Path) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    os.sync()


def _aim_download() -> str:
    found = Path(sys.executable).with_name("aim-download")
    if not found.exists():
        raise SystemExit("aim-download is not installed next to this Python (uv sync installs it)")
    return str(found)


def throughput(work: Path, size: int, repeat: int, write_path: str = "auto") -> dict[str, Any]:
    root = work / "repos"
    add_file(root, REPO, "model.safetensors", _blocks(size), size=size)
    hub = HubServer(root, workdir=work / "hub").start()
    try:
        url = hub.url(REPO, "model.safetensors")
        curl_out, ours = work / "curl.out", work / "downloaded"
        subprocess.run(["curl", "-sfo", str(curl_out), url], check=True)  # warm-up
        curl_times: list[float] = []
        ours_times: list[float] = []
        synced_times: list[float] = []
        verified: list[str] = []
        paths: list[str] = []
        probe: dict[str, Any] = {}
        for _ in range(repeat):
            _flush(curl_out, ours)
            started = time.monotonic()
            subprocess.run(["curl", "-sfo", str(curl_out), url], check=True)
            curl_times.append(time.monotonic() - started)
            fd = os.open(curl_out, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            synced_times.append(time.monotonic() - started)
            _flush(curl_out, ours)
            started = time.monotonic()
            done = subprocess.run(
                [_aim_download(), "--write-path", write_path, f"hf://{REPO}", str(ours)],
                # the hub is on loopback: allow-listed, as the embedded stack does
                env={**os.environ, "HF_ENDPOINT": hub.endpoint, ALLOWED_HOSTS_ENV: "127.0.0.1"},
                capture_output=True,
                text=True,
                check=False,
            )
            ours_times.append(time.monotonic() - started)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if result.get("result") != "ok":
                raise SystemExit(f"aim-download failed: {result}")
            verified = list(result.get("verified") or [])
            paths.append(str(result.get("write_path")))
            probe = {k: v for k, v in result.items() if k.startswith(("write_path_", "probe_"))}
            curl_rate, ours_rate = size / curl_times[-1] / 2**20, size / ours_times[-1] / 2**20
            synced_rate = size / synced_times[-1] / 2**20
            say(
                f"  curl {curl_rate:.0f} MiB/s ({synced_rate:.0f} with fsync), "
                f"aim-download {ours_rate:.0f} MiB/s ({paths[-1]}: {probe})"
            )
        _flush(curl_out, ours)
    finally:
        hub.stop()
    curl_s, ours_s = statistics.median(curl_times), statistics.median(ours_times)
    synced_s = statistics.median(synced_times)
    return {
        "bytes": size,
        "curl_bytes_per_s": round(size / curl_s),
        "downloader_bytes_per_s": round(size / ours_s),
        "ratio_vs_curl": round(curl_s / ours_s, 3),
        "ratio_vs_curl_paired": round(
            statistics.median(c / o for c, o in zip(curl_times, ours_times, strict=True)), 3
        ),
        "curl_synced_bytes_per_s": round(size / synced_s),
        "ratio_vs_curl_synced": round(synced_s / ours_s, 3),
        "verified": verified,
        "write_path": paths[0] if len(set(paths)) == 1 else paths,
        **probe,
    }


def _progress(target: ObjectRef, uid: str, done: int, total: int) -> StatusReport:
    pct = min(99, done * 100 // total)
    fields = {
        "progress": {
            "totalBytes": total,
            "downloadedBytes": done,
            "percentage": pct,
            "displayPercentage": f"{pct} %",
        }
    }
    return StatusReport(object=target, uid=uid, source="cache", fields=fields, progress=True)


async def status_writes(kubeconfig: str, bus: BusSettings, window: float) -> dict[str, Any]:
    kube = Kube(await connect(kubeconfig), field_manager="aim-bench")
    nc = await connect_bus(bus, "aimctl-bench", forever=False)
    try:
        body = {
            "apiVersion": MODEL_CACHE.api_version,
            "kind": MODEL_CACHE.kind,
            "metadata": {"name": "bench-progress", "namespace": "default"},
            # no repository named: the spec is refused at once (InvalidSpec, not retried), so what
            # is counted is the status path alone
            "spec": {"sourceUri": "hf://bench"},
        }
        created = await kube.create(MODEL_CACHE, body, "default")
        uid = created["metadata"]["uid"]
        target = ObjectRef.of(MODEL_CACHE, "default", "bench-progress")
        subject = subjects.status_subject("cache", MODEL_CACHE, "default", "bench-progress")
        js = nc.jetstream()
        await asyncio.sleep(3)  # let the create's own writes settle before counting
        start_rv = (await kube.get(MODEL_CACHE, "default", "bench-progress") or {})["metadata"][
            "resourceVersion"
        ]
        total, sent = 10**12, 0
        started = time.monotonic()
        while time.monotonic() - started < window:
            sent += 1
            report = _progress(target, uid, sent * 10**9, total)
            await js.publish(subject, report.encode(), headers={"Nats-Msg-Id": report.msg_id})
            await asyncio.sleep(0.1)
        await asyncio.sleep(6)  # the trailing write
        writes = 0
        async for event in kube.watch(MODEL_CACHE, start_rv, namespace="default", timeout_seconds=2):
            if event.get("type") == "MODIFIED" and event["object"]["metadata"]["name"] == "bench-progress":
                writes += 1
        await kube.delete(MODEL_CACHE, "default", "bench-progress")
    finally:
        await nc.close()
        await kube.close()
    return {
        "progress_reports": sent,
        "status_writes": writes,
        "status_writes_per_min": round(writes * 60 / window, 1),
    }


def main(home: str | None, size: int, repeat: int, window: float, write_path: str = "auto") -> int:
    with tempfile.TemporaryDirectory(prefix="aim-bench-download-", dir=home) as tmp:
        work = Path(tmp)
        say(f"throughput: {size / 2**30:.1f} GiB from a local Hub server, curl vs aim-download ...")
        figures = throughput(work, size, repeat, write_path)
        stack = Stack(home=work / "stack")
        say(f"status writes: the embedded stack, progress at 10/s for {window:.0f}s ...")
        stack.start()
        try:
            assert stack.nats is not None
            figures |= asyncio.run(status_writes(str(stack.kubeconfig), stack.nats.client("admin"), window))
        finally:
            stack.stop()
    figures["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    figures["date"] = time.strftime("%Y-%m-%d")
    print(json.dumps(figures))
    return 0
