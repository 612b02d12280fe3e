"""A tiny stand-in for an AIM model container: what the node tier runs where AIM images run.

This file is copied alone into the ``aim-test-model`` image, so it uses the standard library only.
Like an AIM container (vLLM underneath) it has two faces:

- ``server.py dry-run --format=json``: discovery. Prints a JSON array with one element - the
  profile chosen by ``AIM_METRIC``, ``AIM_PRECISION``, ``AIM_GPU_MODEL``, ``AIM_GPU_COUNT``,
  ``AIM_PROFILE_ID`` (what the discovery Job sets) and the model sources - in the shape
  ``aim_discovery.dryrun.parse_output`` reads. Log lines go to stderr, as AIM images log.
- ``server.py`` (or ``serve``): the inference server on ``0.0.0.0:$AIM_PORT`` (default 8000):
  ``GET /health`` (200 once "loaded", 503 before), ``GET /v1/models``, ``GET /metrics``,
  ``GET /version`` and canned answers to ``POST /v1/completions`` and ``/v1/chat/completions``.

Knobs (environment): ``AIM_MODEL_ID`` (the served model id; default the canonical name),
``AIM_TEST_MODEL_SOURCE`` and ``AIM_TEST_MODEL_SIZE_GB`` (the model source discovery reports),
``AIM_LOG_LEVEL=CRITICAL`` (no log lines, as the discovery Job asks of AIM images),
``AIM_TEST_MODEL_LOAD_SECONDS`` (how long /health answers 503 after start, like a model loading),
``AIM_TEST_MODEL_REQUIRE`` (a path that must exist before serving, e.g. the model cache; the server
exits 1 if it does not, as a model server without its weights would), ``AIM_TEST_MODEL_DRY_RUN_FAIL``
(a message: ``dry-run`` prints it to stderr and exits 1, as an image whose engine finds no profile
for the hardware does).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERSION = "0.1.0"
CANONICAL_NAME = "aim-test/tiny-model"
PORT = 8000
DEFAULT_SOURCE = f"hf://{CANONICAL_NAME}"
DEFAULT_SIZE_GB = 0.001


def log(message: str) -> None:
    if os.environ.get("AIM_LOG_LEVEL", "").upper() == "CRITICAL":  # what the discovery Job sets
        return
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} aim-test-model {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# dry-run
# ---------------------------------------------------------------------------------------------


def discovery_output(env: dict[str, str]) -> list[dict[str, Any]]:
    """The discovery array for ``env`` (the discovery Job's environment)."""
    model_id = env.get("AIM_MODEL_ID") or CANONICAL_NAME
    metric = env.get("AIM_METRIC") or "latency"
    precision = env.get("AIM_PRECISION") or "fp16"
    gpu_count = int(env.get("AIM_GPU_COUNT") or 0)
    gpu = env.get("AIM_GPU_MODEL") or ""
    profile_id = env.get("AIM_PROFILE_ID") or f"aim-test-{gpu.lower() or 'cpu'}-{precision}-{metric}"
    metadata: dict[str, Any] = {
        "engine": "aim-test",
        "precision": precision,
        "gpu_count": gpu_count,
        "metric": metric,
        "type": "unoptimized",
    }
    if gpu:
        metadata["gpu"] = gpu
    return [
        {
            "filename": f"{profile_id}.yaml",
            "profile": {
                "model": model_id,
                "quantized_model": model_id,
                "metadata": metadata,
                "engine_args": {"max-model-len": 64},
                "env_vars": {"AIM_TEST_MODEL": "1"},
            },
            "models": [
                {
                    "name": model_id,
                    "source": env.get("AIM_TEST_MODEL_SOURCE") or DEFAULT_SOURCE,
                    "size_gb": float(env.get("AIM_TEST_MODEL_SIZE_GB") or DEFAULT_SIZE_GB),
                }
            ],
        }
    ]


def dry_run(args: list[str], env: dict[str, str]) -> int:
    fmt = "text"
    for arg in args:
        if arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
        else:
            print(f"dry-run: unknown argument {arg!r}", file=sys.stderr)
            return 2
    if fmt != "json":
        print(f"dry-run: unsupported format {fmt!r} (only json)", file=sys.stderr)
        return 2
    failure = env.get("AIM_TEST_MODEL_DRY_RUN_FAIL")
    if failure:  # stderr even at AIM_LOG_LEVEL=CRITICAL: it is the error, not a log line
        print(f"dry-run: {failure}", file=sys.stderr, flush=True)
        return 1
    log("dry-run: selecting a profile")
    print(json.dumps(discovery_output(env)), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# serve
# ---------------------------------------------------------------------------------------------


class Model:
    def __init__(self, model_id: str, load_seconds: float) -> None:
        self.id = model_id
        self.created = int(time.time())
        self.ready_at = time.monotonic() + load_seconds
        self.requests = 0
        self.lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return time.monotonic() >= self.ready_at


class Handler(BaseHTTPRequestHandler):
    server_version = f"aim-test-model/{VERSION}"
    model: Model  # set on the class by serve()

    def log_message(self, format: str, *args: Any) -> None:
        log(f"{self.address_string()} {format % args}")

    def _send(self, status: int, body: Any) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        model = self.model
        if path == "/health":
            self._send(200, "") if model.loaded else self._send(503, {"error": "model loading"})
        elif path == "/v1/models":
            if not model.loaded:
                self._send(503, {"error": "model loading"})
                return
            card = {"id": model.id, "object": "model", "created": model.created, "owned_by": "aim-test-model"}
            self._send(200, {"object": "list", "data": [{**card, "root": model.id, "parent": None}]})
        elif path == "/version":
            self._send(200, {"version": VERSION})
        elif path == "/metrics":
            with model.lock:
                count = model.requests
            self._send(200, f"aim_test_model_requests_total {count}\n")
        else:
            self._send(404, {"error": f"no route {path}"})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": "body is not JSON"})
            return
        if not self.model.loaded:
            self._send(503, {"error": "model loading"})
            return
        if request.get("model") not in (None, self.model.id):
            self._send(404, {"error": f"model {request.get('model')!r} is not served here"})
            return
        with self.model.lock:
            self.model.requests += 1
        answer = "Hello from the AIM test model."
        if path == "/v1/completions":
            choice: dict[str, Any] = {"index": 0, "text": answer, "finish_reason": "stop"}
            self._send(200, {"object": "text_completion", "model": self.model.id, "choices": [choice]})
        elif path == "/v1/chat/completions":
            message = {"role": "assistant", "content": answer}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._send(200, {"object": "chat.completion", "model": self.model.id, "choices": [choice]})
        else:
            self._send(404, {"error": f"no route {path}"})


def serve(env: dict[str, str]) -> int:
    required = env.get("AIM_TEST_MODEL_REQUIRE")
    if required and not os.path.exists(required):
        log(f"model files not found at {required}")
        return 1
    port = int(env.get("AIM_PORT") or PORT)
    host = env.get("AIM_HOST") or "0.0.0.0"
    model = Model(
        env.get("AIM_MODEL_ID") or CANONICAL_NAME, float(env.get("AIM_TEST_MODEL_LOAD_SECONDS") or 0)
    )
    handler = type("BoundHandler", (Handler,), {"model": model})
    httpd = ThreadingHTTPServer((host, port), handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=httpd.shutdown, daemon=True).start())
    log(f"serving {model.id} on {host}:{httpd.server_address[1]}")
    try:
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
    log("stopped")
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
