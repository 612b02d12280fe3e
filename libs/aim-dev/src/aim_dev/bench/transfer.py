"""The transfer alone: the downloader's throughput against ``curl`` from the same server
(docs/design.md#performance-budgets: at least 90 % of curl's), in-process, without the Job
program's start-up (``aimctl bench download``, :mod:`aim_dev.bench.download`, measures the whole
``aim-download`` process). Tooling: in no image.

:func:`measure` runs ``curl -s -o FILE URL`` and then :func:`~aim_cache_jobs.downloader.run.download` of
the same URL into the same directory, after an untimed warm-up curl; before each timed run the
previous output is deleted and dirty pages are flushed, so neither pays for the other's writeback
or page allocation, and reports both rates. The downloader's time includes everything a download
does: listing, transfer, fsync and atomic placement.

By hand: ``python -m aim_dev.bench.transfer --size 2GiB [--dir DIR] [--repeat 3]`` writes a
random file, serves it with aiohttp's ``FileResponse`` (sendfile) in a child process, and measures;
or ``--url URL`` measures against an existing server. Human lines go to stderr; the last stdout line
is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aim_cache_jobs.downloader.run import download
from aimcore.domain.outbound import OutboundPolicy


async def measure(url: str, dest_dir: Path, *, curl: str = "curl", connections: int = 8) -> dict[str, Any]:
    """curl, then the downloader, on ``url``; bytes per second of each and their ratio."""
    dest_dir = Path(dest_dir)
    curl_out = dest_dir / "curl.out"
    ours = dest_dir / "downloader"
    await asyncio.to_thread(_clean, curl_out, ours)
    dest_dir.mkdir(parents=True, exist_ok=True)
    try:
        # Warm-up (untimed): the server's page cache, and the guest memory a VM may have handed
        # back to its host while idle; each timed run then writes into memory freed just before.
        await _curl(curl, url, curl_out)
        await asyncio.to_thread(_settle, curl_out)
        curl_seconds = await _curl(curl, url, curl_out)
        size = curl_out.stat().st_size
        await asyncio.to_thread(_settle, curl_out)
        started = time.monotonic()
        # the URL is the benchmark's own choice (a local server): its host is allow-listed
        policy = OutboundPolicy(allowed_hosts=frozenset({urlsplit(url).hostname or ""}))
        manifest = await download(url, ours, env={}, connections=connections, policy=policy)
        ours_seconds = time.monotonic() - started
        if manifest.total_bytes != size:
            raise RuntimeError(f"curl got {size} bytes, the downloader {manifest.total_bytes}")
    finally:
        await asyncio.to_thread(_clean, curl_out, ours)
    curl_rate, ours_rate = size / curl_seconds, size / ours_seconds
    return {
        "bytes": size,
        "curl_bytes_per_s": round(curl_rate),
        "downloader_bytes_per_s": round(ours_rate),
        "ratio_vs_curl": round(ours_rate / curl_rate, 3),
        "curl_seconds": round(curl_seconds, 3),
        "downloader_seconds": round(ours_seconds, 3),
    }


async def _curl(curl: str, url: str, out: Path) -> float:
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(curl, "-s", "-f", "-o", str(out), url)
    if await proc.wait() != 0:
        raise RuntimeError(f"curl exited with {proc.returncode} for {url}")
    return time.monotonic() - started


def _settle(*paths: Path) -> None:
    """Delete the previous run's output and flush dirty pages, so no run pays for another's."""
    _clean(*paths)
    os.sync()


def _clean(*paths: Path) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def parse_size(text: str) -> int:
    """``2GiB``, ``512M``, ``1.5G``, ``1000`` -> bytes (binary units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    return int(float(match.group(1)) * 1024 ** " KMGT".index(match.group(2) or " "))


def write_random_file(path: Path, size: int) -> None:
    block = os.urandom(8 << 20)
    with path.open("wb") as f:
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
    os.sync()


def serve(root: Path, port: int) -> None:
    """aiohttp ``FileResponse`` over ``root`` (sendfile, honours Range); prints the port."""
    from aiohttp import web  # noqa: PLC0415

    files = {p.name: p for p in root.iterdir() if p.is_file()}  # fixed at start: no path handling

    async def handle(request: web.Request) -> web.StreamResponse:
        path = files.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound()
        return web.FileResponse(path)

    async def run() -> None:
        app = web.Application()
        app.router.add_get("/{name}", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        print(json.dumps({"port": runner.addresses[0][1]}), flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m aim_dev.bench.transfer", description=__doc__)
    parser.add_argument("--url", help="measure this URL (otherwise a local file is served)")
    parser.add_argument("--size", default="2GiB", help="size of the served random file")
    parser.add_argument("--dir", type=Path, help="working directory (default: a temporary one)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--curl", default="curl")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port)
        return
    work = args.dir or Path(tempfile.mkdtemp(prefix="aim-dl-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    server: subprocess.Popen[str] | None = None
    try:
        url = args.url
        if url is None:
            size = parse_size(args.size)
            served = work / "served"
            served.mkdir(exist_ok=True)
            print(f"writing a {size}-byte random file", file=sys.stderr)
            write_random_file(served / "model.bin", size)
            server = subprocess.Popen(
                [sys.executable, "-m", "aim_dev.bench.transfer", "--serve", str(served)],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert server.stdout is not None
            port = json.loads(server.stdout.readline())["port"]
            url = f"http://127.0.0.1:{port}/model.bin"
        runs = []
        for i in range(args.repeat):
            result = asyncio.run(measure(url, work / "out", curl=args.curl, connections=args.connections))
            runs.append(result)
            print(
                f"run {i + 1}: curl {result['curl_bytes_per_s'] / 2**20:.0f} MiB/s, downloader "
                f"{result['downloader_bytes_per_s'] / 2**20:.0f} MiB/s, ratio {result['ratio_vs_curl']}",
                file=sys.stderr,
            )
        best = {
            "bytes": runs[0]["bytes"],
            "runs": runs,
            "median_ratio_vs_curl": sorted(r["ratio_vs_curl"] for r in runs)[len(runs) // 2],
        }
        print(json.dumps(best))
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
