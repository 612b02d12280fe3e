"""The ``aim-test-model`` program as a real process on loopback (what the node tier runs in its
image): discovery output the operator's own parser accepts, the health and ``/v1/models``
endpoints of an AIM container, a loading phase, refusals, and a server without its model files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from aim_dev import testmodel
from aim_dev.local.processes import free_port
from aim_discovery.dryrun import parse_output
from tests.helpers import eventually

SERVER = str(testmodel.SERVER)


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, SERVER, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=30,
        check=False,
    )


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = resp.read()
            return resp.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class Served:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.url = f"http://127.0.0.1:{port}"


def serve(**env: str) -> Served:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER],
        env={**os.environ, "AIM_HOST": "127.0.0.1", "AIM_PORT": str(port), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return Served(proc, port)


@pytest.fixture
def stop_after() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for s in started:
        s.proc.terminate()
        s.proc.communicate(timeout=10)  # waits, and closes the output pipe


def test_dry_run_prints_discovery_output_the_operator_parses() -> None:
    done = run("dry-run", "--format=json", AIM_LOG_LEVEL="CRITICAL")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # AIM_LOG_LEVEL=CRITICAL: nothing but the JSON
    output = json.loads(done.stdout)
    assert output == testmodel.server.discovery_output({})
    result = parse_output(done.stdout)
    assert result.gpu_count == 0
    assert result.gpu_model is None
    [source] = result.model_sources
    assert source["modelId"] == testmodel.CANONICAL_NAME
    assert source["sourceUri"] == f"hf://{testmodel.CANONICAL_NAME}"


def test_dry_run_follows_the_discovery_jobs_environment() -> None:
    done = run(
        "dry-run",
        "--format=json",
        AIM_METRIC="throughput",
        AIM_PRECISION="bf16",
        AIM_GPU_MODEL="MI300X",
        AIM_GPU_COUNT="2",
        AIM_TEST_MODEL_SOURCE="hf://acme/other",
        AIM_TEST_MODEL_SIZE_GB="0.5",
    )
    assert done.returncode == 0, done.stderr
    assert "selecting a profile" in done.stderr  # logs go to stderr, never into the JSON
    [element] = json.loads(done.stdout)
    assert element["profile"]["metadata"] == {
        "engine": "aim-test",
        "precision": "bf16",
        "gpu_count": 2,
        "metric": "throughput",
        "type": "unoptimized",
        "gpu": "MI300X",
    }
    result = parse_output(done.stderr + done.stdout)  # the pod log has both; the parser copes
    assert (result.gpu_model, result.gpu_count) == ("MI300X", 2)
    assert result.model_sources[0]["sourceUri"] == "hf://acme/other"
    assert result.model_sources[0]["size"] == "512Mi"


def test_a_failing_dry_run_exits_1_with_its_message_even_when_logs_are_off() -> None:
    done = run(
        "dry-run",
        "--format=json",
        AIM_LOG_LEVEL="CRITICAL",
        AIM_TEST_MODEL_DRY_RUN_FAIL="no profile matches this hardware",
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == "dry-run: no profile matches this hardware\n"


@pytest.mark.parametrize("args", [["dry-run", "--format=yaml"], ["dry-run", "--bogus"], ["train"]])
def test_bad_arguments_exit_2_with_a_message(args: list[str]) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip()


async def test_serves_health_and_models_once_loaded(stop_after: list[Served]) -> None:
    s = serve(AIM_TEST_MODEL_LOAD_SECONDS="1.5", AIM_MODEL_ID="acme/served")
    stop_after.append(s)

    async def answering() -> int | None:
        try:
            return get(f"{s.url}/health")[0]
        except (urllib.error.URLError, ConnectionError):
            return None

    assert await eventually(answering, timeout=10, what="the server to listen") == 503  # loading
    assert get(f"{s.url}/v1/models")[0] == 503

    async def healthy() -> bool:
        return get(f"{s.url}/health")[0] == 200

    await eventually(healthy, timeout=10, what="the model to load")
    status, models = get(f"{s.url}/v1/models")
    assert status == 200
    assert [m["id"] for m in models["data"]] == ["acme/served"]
    assert models["object"] == "list"

    status, answer = post(f"{s.url}/v1/chat/completions", {"model": "acme/served", "messages": []})
    assert status == 200
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert post(f"{s.url}/v1/completions", {"model": "acme/other", "prompt": "x"})[0] == 404
    assert get(f"{s.url}/nope")[0] == 404


def test_without_its_model_files_the_server_exits_1(tmp_path: Any) -> None:
    done = run(AIM_TEST_MODEL_REQUIRE=str(tmp_path / "missing"), AIM_PORT=str(free_port()))
    assert done.returncode == 1
    assert "model files not found" in done.stderr
