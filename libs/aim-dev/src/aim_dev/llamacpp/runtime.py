"""The entrypoint of the ``aim-llamacpp`` image: an AIM-compatible model container for CPUs, on
llama.cpp's own server (the ``xllamacpp`` wheel).

It honours the contract the operator relies on, as AIM's images do (vLLM underneath there):

- ``runtime.py dry-run --format=json``: discovery. Lists the model source (``AIM_MODEL_SOURCE``,
  default ``hf://$AIM_MODEL_ID``), reads the GGUF file's header with range requests (no weights are
  fetched) and prints one profile: ``metric`` (``AIM_METRIC``, default latency), ``precision`` from
  the file's quantization (``F16`` → fp16, ``BF16`` → bf16, ``Q8_0`` → int8; left out for those an
  AIM profile cannot name, F32 and the 2- to 6-bit ones), ``gpu_count`` 0, and the model source with
  its size. ``AIM_PRECISION`` that the
  file does not have, or ``AIM_GPU_COUNT`` above 0, is an error on stderr (exit 1), as an image with
  no profile for the hardware fails discovery.
- ``runtime.py`` (or ``serve``): loads ``$AIM_CACHE_PATH/$AIM_MODEL_ID`` (default
  ``/workspace/model-cache/<id>``, where the operator mounts the model cache) when it is there: it
  must be a complete download (the downloader's manifest), and its one ``.gguf`` file (or
  ``AIM_MODEL_FILE``) is served. With no cache mounted it downloads the source there first with the
  operator's own downloader (``aim-download``: the same outbound address policy,
  ``AIM_OUTBOUND_ALLOWED_HOSTS`` / ``AIM_OUTBOUND_ALLOW_PRIVATE``, and the same verification).
  llama.cpp's server then answers on ``0.0.0.0:$AIM_PORT`` (8000): ``/health`` (200 once the weights
  are loaded; nothing listens before), ``/v1/models`` (the model as ``AIM_MODEL_ID``),
  ``/v1/chat/completions`` and ``/v1/completions`` (streaming too), ``/metrics``.
- A model that cannot be loaded (or downloaded) ends the process with exit code 1 and llama.cpp's
  (or the downloader's) own words in ``/dev/termination-log`` (``AIM_TERMINATION_LOG``; written only
  where the file exists, as the kubelet makes it), which the kubelet keeps in the container's last
  state: KServe reports it as the model's load failure, and so does the operator. A file that
  failed to load is not tried again in the same pod (:class:`LoadFailures`): the kubelet's restarts
  then end at once, with the same message.

Threads: ``AIM_ENGINE_ARGS`` (a JSON object; ``threads``, ``ctx-size``, ``parallel``, ``batch-size``)
wins; otherwise as many threads as the container may use (its CPU quota, rounded up, within its CPU
affinity), so a CPU limit does not make llama.cpp oversubscribe the cores it is given.

This file is copied alone into the image (the standard library, ``xllamacpp`` and the ``aim-cache``
package it is built on), so it imports nothing else of this project.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CACHE_ROOT = "/workspace/model-cache"
PORT = 8000
TERMINATION_LOG = "/dev/termination-log"
MANIFEST = ".aim-manifest.json"
ERROR_LINES = 6
"""How many of llama.cpp's last error lines the termination message keeps."""

PRECISIONS = {"F16": "fp16", "BF16": "bf16", "Q8_0": "int8"}
"""The quantizations whose precision an AIM profile can name (its enum: bf16, fp16, fp8, int8)."""


def log(message: str, env: Mapping[str, str] = os.environ) -> None:
    if env.get("AIM_LOG_LEVEL", "").upper() == "CRITICAL":  # what the discovery Job sets
        return
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} aim-llamacpp {message}", file=sys.stderr, flush=True)


class Failed(Exception):
    """A reason the container cannot serve, in words for its user."""


def precision_of(quantization: str) -> str | None:
    """The AIM profile precision of a llama.cpp quantization name (``general.file_type``); ``None``
    for one a profile cannot name (F32, the 2- to 6-bit ones)."""
    return PRECISIONS.get(quantization)


def model_id(env: Mapping[str, str]) -> str:
    value = (env.get("AIM_MODEL_ID") or "").strip().strip("/")
    if not value:
        raise Failed("AIM_MODEL_ID is not set: the image does not know which model to serve")
    return value


def model_dir(env: Mapping[str, str]) -> Path:
    parts = [p for p in model_id(env).split("/") if p not in ("", ".", "..")]
    return Path(env.get("AIM_CACHE_PATH") or CACHE_ROOT).joinpath(*parts)


def source_of(env: Mapping[str, str]) -> str:
    return (env.get("AIM_MODEL_SOURCE") or "").strip() or f"hf://{model_id(env)}"


def pick_gguf(names: list[str], env: Mapping[str, str]) -> str:
    """The model file among ``names``: ``AIM_MODEL_FILE``, else the only ``.gguf`` one."""
    wanted = (env.get("AIM_MODEL_FILE") or "").strip()
    if wanted:
        if wanted not in names:
            raise Failed(f"AIM_MODEL_FILE {wanted} is not among the model's files ({', '.join(names)})")
        return wanted
    ggufs = sorted(n for n in names if n.endswith(".gguf"))
    if len(ggufs) != 1:
        found = ", ".join(ggufs) or "none"
        raise Failed(f"the model must have exactly one .gguf file (found: {found}); set AIM_MODEL_FILE")
    return ggufs[0]


# ---------------------------------------------------------------------------------------------
# dry-run
# ---------------------------------------------------------------------------------------------


def discovery_output(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The discovery array: the source's files listed and the GGUF header read through the
    operator's outbound policy (the downloader's and the GGUF reader's own code)."""
    import asyncio  # noqa: PLC0415 - dry-run only

    from aim_cache_jobs.downloader import DownloadError, list_source  # noqa: PLC0415
    from aim_cache_jobs.gguf import GGUFError, quantization_name, read_remote  # noqa: PLC0415
    from aimcore.domain.outbound import OutboundPolicy, OutboundRefused  # noqa: PLC0415

    ident, source = model_id(env), source_of(env)
    if int(env.get("AIM_GPU_COUNT") or 0) > 0:
        raise Failed(f"this is a CPU runtime: no profile for {env.get('AIM_GPU_COUNT')} GPUs")
    policy = OutboundPolicy.from_env(env)
    try:
        listing = asyncio.run(list_source(source, dict(env), policy=policy))
        by_path = {f.path: f for f in listing.files}
        remote = by_path[pick_gguf(sorted(by_path), env)]
        if not remote.url.startswith(("http://", "https://")):
            raise Failed(f"cannot read the GGUF header of {source}: not an http(s) source")
        header = read_remote(remote.url, headers=remote.headers, policy=policy)
    except (DownloadError, GGUFError, OutboundRefused) as exc:
        raise Failed(f"cannot read {source}: {exc}") from exc
    file_type = header.metadata.get("general.file_type")
    if not isinstance(file_type, int):
        raise Failed(f"{remote.path} has no general.file_type: its quantization is unknown")
    quantization = quantization_name(file_type)
    precision = precision_of(quantization)
    asked = (env.get("AIM_PRECISION") or "").strip().lower()
    if asked and asked not in (precision, "auto"):
        raise Failed(f"no profile for precision {asked}: {remote.path} is {precision or quantization}")
    metric = (env.get("AIM_METRIC") or "").strip() or "latency"
    arch = header.metadata.get("general.architecture")
    context = header.metadata.get(f"{arch}.context_length")
    name = precision or quantization.lower()
    profile_id = (env.get("AIM_PROFILE_ID") or "").strip() or f"llamacpp-cpu-{name}-{metric}"
    metadata: dict[str, Any] = {"engine": "llama.cpp", "precision": precision, "gpu_count": 0}
    metadata |= {"metric": metric, "type": "unoptimized"}
    return [
        {
            "filename": f"{profile_id}.yaml",
            "profile": {
                "model": ident,
                "quantized_model": ident,
                "metadata": {k: v for k, v in metadata.items() if v is not None},
                "engine_args": {"ctx-size": min(int(context), 4096) if isinstance(context, int) else 4096},
                "env_vars": {"AIM_MODEL_FILE": remote.path},
            },
            "models": [
                {"name": ident, "source": source, "size_gb": listing.total_bytes / 1e9},
            ],
        }
    ]


def dry_run(args: list[str], env: Mapping[str, str]) -> int:
    if args != ["--format=json"]:
        print(f"dry-run: expected --format=json, got {' '.join(args) or 'nothing'}", file=sys.stderr)
        return 2
    log("dry-run: reading the model's GGUF header", env)
    try:
        output = discovery_output(env)
    except Failed as exc:  # stderr even at AIM_LOG_LEVEL=CRITICAL: it is the error, not a log line
        print(f"dry-run: {exc}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps(output), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# serve
# ---------------------------------------------------------------------------------------------


class StderrTail:
    """Copies file descriptor 2 (llama.cpp logs there) through a pipe back to the real stderr,
    keeping the last error lines, so a failed load can say what llama.cpp said."""

    def __init__(self) -> None:
        self.errors: deque[str] = deque(maxlen=ERROR_LINES)
        read, write = os.pipe()
        self._out = os.dup(2)
        os.dup2(write, 2)
        os.close(write)
        sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)
        self._thread = threading.Thread(target=self._copy, args=(read,), daemon=True)
        self._thread.start()

    def _copy(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for raw in pipe:
                os.write(self._out, raw)
                line = raw.decode(errors="replace").strip()
                # llama.cpp's level letter: "0.00.008.675 E llama_model_load: error loading ..."
                fields = line.split(" ", 2)
                if len(fields) == 3 and fields[1] == "E":
                    self.errors.append(fields[2])

    def reason(self) -> str:
        time.sleep(0.05)  # the copier runs behind the writer: let it catch up
        errors = list(self.errors)
        # llama.cpp's own reason ("llama_model_load: error loading model: ..."), else its error lines
        loading = [e for e in errors if "error loading model" in e]
        useful = loading or [e for e in errors if "error" in e.lower() or "failed" in e.lower()]
        return " | ".join(useful or errors)


def cpu_threads() -> int:
    """The cores this process may use: its affinity, capped by its cgroup's CPU quota (v1 or v2)."""
    count = len(os.sched_getaffinity(0))
    quota = None
    try:
        text = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if text and text[0] != "max":
            quota = int(text[0]) / int(text[1])
    except (OSError, ValueError, IndexError):
        try:
            q = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
            p = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
            quota = q / p if q > 0 and p > 0 else None
        except (OSError, ValueError):
            quota = None
    return max(1, min(count, math.ceil(quota))) if quota else count


def engine_args(env: Mapping[str, str]) -> dict[str, Any]:
    text = (env.get("AIM_ENGINE_ARGS") or "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Failed(f"AIM_ENGINE_ARGS is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise Failed("AIM_ENGINE_ARGS must be a JSON object")
    return value


def cached_model(directory: Path, env: Mapping[str, str]) -> Path:
    """The GGUF file of a complete download in ``directory``."""
    manifest = directory / MANIFEST
    if not manifest.is_file():
        raise Failed(f"the model cache at {directory} is incomplete: no download manifest ({MANIFEST})")
    try:
        files = {f["path"]: f for f in json.loads(manifest.read_text())["files"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Failed(f"the model cache's manifest {manifest} is unreadable: {exc}") from exc
    name = pick_gguf(sorted(files), env)
    path = directory / name
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise Failed(f"the model cache at {directory} lost {name}: {exc.strerror}") from exc
    if size != files[name].get("size"):
        raise Failed(f"{path} is {size} bytes, the download manifest says {files[name].get('size')}")
    return path


def download(source: str, directory: Path, env: Mapping[str, str]) -> None:
    """Download ``source`` into ``directory`` with ``aim-download`` (verified, resumable)."""
    tool = Path(sys.executable).with_name("aim-download")
    argv = [str(tool) if tool.exists() else "aim-download", source, str(directory)]
    log(f"no model cache at {directory}: downloading {source}", env)
    done = subprocess.run(argv, env=dict(env), stdout=subprocess.PIPE, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if done.returncode != 0 or result.get("result") != "ok":
        detail = f"{result.get('reason', 'DownloadFailed')}: {result.get('message', '')}".rstrip(": ")
        raise Failed(f"downloading {source} failed (exit code {done.returncode}): {detail}")
    log(f"downloaded {result.get('files')} files, {result.get('bytes')} bytes", env)


class LoadFailures:
    """The model files that failed to load in this pod, kept where a restarted container finds them
    (``AIM_FAILURE_DIR``, default ``/dev/shm``: the pod's memory volume the operator mounts, which
    outlives the container). A restart that finds its file there exits at once with the same
    reason instead of downloading and loading it again: the kubelet's restarts cost nothing, and the
    container is never seen running (and the service ``Starting``) between them. A new pod, or a
    changed file, tries again."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.path = Path(env.get("AIM_FAILURE_DIR") or "/dev/shm") / ".aim-llamacpp-load-failures.json"

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def check(self, key: str) -> None:
        reason = self._read().get(key)
        if reason is not None:
            raise Failed(f"{reason} (not loaded again in this pod: it failed before)")

    def record(self, key: str, reason: str) -> None:
        with contextlib.suppress(OSError):
            self.path.write_text(json.dumps({**self._read(), key: reason}))


def locate(env: Mapping[str, str], failures: LoadFailures) -> tuple[Path, str]:
    """The GGUF file to serve (from the mounted cache, else downloaded first) and its identity."""
    directory = model_dir(env)
    if not directory.exists():  # nothing mounted there (a mounted cache is never downloaded into)
        key = f"{model_id(env)} {source_of(env)}"
        failures.check(key)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Failed(f"no model cache at {directory}, and cannot download there: {exc.strerror}") from exc
        download(source_of(env), directory, env)
        return cached_model(directory, env), key
    path = cached_model(directory, env)
    stat = path.stat()
    key = f"{model_id(env)} {path} {stat.st_size} {stat.st_mtime_ns}"
    failures.check(key)
    return path, key


def serve(env: Mapping[str, str]) -> int:
    tail = StderrTail()
    failures = LoadFailures(env)
    try:
        path, key = locate(env, failures)
        args = engine_args(env)
        import xllamacpp  # noqa: PLC0415 - serve only (dry-run runs without loading the engine)

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.model_alias = {model_id(env)}
        params.hostnames = [env.get("AIM_HOST") or "0.0.0.0"]
        params.port = int(env.get("AIM_PORT") or PORT)
        params.endpoint_metrics = True
        threads = int(args.get("threads") or cpu_threads())
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        if args.get("ctx-size"):
            params.n_ctx = int(args["ctx-size"])
        if args.get("parallel"):
            params.n_parallel = int(args["parallel"])
        if args.get("batch-size"):
            params.n_batch = int(args["batch-size"])
        log(f"loading {path} as {model_id(env)} ({threads} threads)", env)
        try:
            server = xllamacpp.Server(params)
        except RuntimeError as exc:
            reason = f"llama.cpp cannot load {path.name}: {tail.reason() or exc}"
            failures.record(key, reason)
            raise Failed(reason) from exc
    except Failed as exc:
        log(f"cannot serve: {exc}", env)
        termination = Path(env.get("AIM_TERMINATION_LOG") or TERMINATION_LOG)
        if termination.exists():  # the kubelet's file (never made where there is none)
            with contextlib.suppress(OSError):
                termination.write_text(str(exc)[:4000])
        return 1
    log(f"serving {model_id(env)} on {server.listening_address}", env)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    del server
    log("stopped", env)
    return 0


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    if argv and argv[0] == "dry-run":
        return dry_run(argv[1:], env)
    if not argv or argv[0] == "serve":
        return serve(env)
    print(f"usage: {os.path.basename(sys.argv[0])} [serve | dry-run --format=json]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
