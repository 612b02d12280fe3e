"""The ``aim-llamacpp`` runtime as a real process on loopback (what the node runs in its image), with
the tiny generated models served by the Hub server: a real forward pass answers each model's own
sentence (chat, streaming, completions); discovery reads the precision from the GGUF header through
the outbound policy; with no cache the weights are downloaded first, verified, under the same policy
as the downloader; a file llama.cpp cannot load ends the process with llama.cpp's own reason in
the termination message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aim_dev import llamacpp, tinyllm
from aim_dev.local.hub import HubServer, add_repo
from aim_dev.local.processes import free_port
from aim_discovery.dryrun import parse_output
from tests.helpers import eventually

RUNTIME = str(llamacpp.RUNTIME)


@pytest.fixture(scope="module")
def hub(hub_server: HubServer) -> HubServer:
    tinyllm.publish(hub_server.root, (tinyllm.MODEL_A, tinyllm.MODEL_B))
    return hub_server


def hub_env(hub: HubServer) -> dict[str, str]:
    return {"HF_ENDPOINT": hub.endpoint, "AIM_OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"}


def dry_run(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, RUNTIME, "dry-run", "--format=json"],
        capture_output=True,
        text=True,
        env={**os.environ, "AIM_LOG_LEVEL": "CRITICAL", **env},
        timeout=60,
        check=False,
    )


class Served:
    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.termination = tmp / f"termination-{self.port}"
        self.termination.write_text("")
        self.proc = subprocess.Popen(
            [sys.executable, RUNTIME],
            env={
                **os.environ,
                "AIM_HOST": "127.0.0.1",
                "AIM_PORT": str(self.port),
                "AIM_TERMINATION_LOG": str(self.termination),
                "AIM_FAILURE_DIR": str(tmp),
                **env,
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def health(self) -> int | None:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    async def ready(self) -> None:
        async def up() -> bool:
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            return self.health() == 200

        await eventually(up, timeout=60, interval=0.1, what="/health 200")

    def post(self, path: str, body: dict[str, Any]) -> bytes:
        req = urllib.request.Request(
            f"{self.url}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            data: bytes = resp.read()
            return data

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=5) as resp:
            return json.loads(resp.read())

    def chat(self, question: str, **extra: Any) -> str:
        body = {"messages": [{"role": "user", "content": question}], "max_tokens": 40, **extra}
        answer: str = json.loads(self.post("/v1/chat/completions", body))["choices"][0]["message"]["content"]
        return answer


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    started: list[Served] = []

    def start(**env: str) -> Served:
        served = Served(env, tmp_path)
        started.append(served)
        return served

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.terminate()
        s.proc.wait(timeout=30)
        if s.proc.stderr:
            s.proc.stderr.close()


@pytest.mark.parametrize(("model", "precision"), [(tinyllm.MODEL_A, "fp16"), (tinyllm.MODEL_B, "int8")])
def test_discovery_reads_the_precision_from_the_gguf_header(
    hub: HubServer, model: tinyllm.TinyModel, precision: str
) -> None:
    done = dry_run(AIM_MODEL_ID=model.repo, **hub_env(hub))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # AIM_LOG_LEVEL=CRITICAL: no log lines
    [profile] = json.loads(done.stdout)
    assert profile["profile"]["metadata"] == {
        "engine": "llama.cpp",
        "precision": precision,
        "gpu_count": 0,
        "metric": "latency",
        "type": "unoptimized",
    }
    assert profile["profile"]["env_vars"] == {"AIM_MODEL_FILE": model.filename}
    size = (hub.root / model.repo / model.filename).stat().st_size
    size += len(tinyllm.model_card(model))
    assert profile["models"] == [{"name": model.repo, "source": f"hf://{model.repo}", "size_gb": size / 1e9}]
    parsed = parse_output(done.stdout)  # what the operator's discovery makes of it
    assert parsed.profile["metadata"]["precision"] == precision

    wrong = dry_run(AIM_MODEL_ID=model.repo, AIM_PRECISION="int4", **hub_env(hub))
    assert wrong.returncode == 1
    assert f"no profile for precision int4: {model.filename} is {precision}" in wrong.stderr
    refused = dry_run(AIM_MODEL_ID=model.repo, HF_ENDPOINT=hub.endpoint, AIM_OUTBOUND_ALLOWED_HOSTS="")
    assert refused.returncode == 1
    assert "not allowed" in refused.stderr.lower(), refused.stderr


@pytest.mark.timeout(120)  # downloads and loads two models with llama.cpp: 30 s on a loaded machine
async def test_without_a_cache_the_weights_are_downloaded_then_each_model_answers_its_sentence(
    hub: HubServer, serve: Any, tmp_path: Path
) -> None:
    a = serve(AIM_MODEL_ID=tinyllm.MODEL_A.repo, AIM_CACHE_PATH=str(tmp_path / "a"), **hub_env(hub))
    b = serve(AIM_MODEL_ID=tinyllm.MODEL_B.repo, AIM_CACHE_PATH=str(tmp_path / "b"), **hub_env(hub))
    await a.ready()
    await b.ready()
    # downloaded into the cache path, verified (the downloader's manifest), as a mounted cache is
    downloaded = tmp_path / "b" / tinyllm.MODEL_B.repo
    assert (downloaded / tinyllm.MODEL_B.filename).read_bytes() == (
        hub.root / tinyllm.MODEL_B.repo / tinyllm.MODEL_B.filename
    ).read_bytes()
    assert (downloaded / ".aim-manifest.json").is_file()

    for question in ("What is your name?", "Tell me a joke about CPUs."):
        assert a.chat(question) == tinyllm.MODEL_A.sentence
        assert b.chat(question) == tinyllm.MODEL_B.sentence
    assert b.chat("hi", temperature=0) == tinyllm.MODEL_B.sentence
    assert [m["id"] for m in a.get("/v1/models")["data"]] == [tinyllm.MODEL_A.repo]

    # streaming: server-sent events whose deltas make the sentence
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, "stream": True}
    events = [
        json.loads(line[len("data: ") :])
        for line in a.post("/v1/chat/completions", body).decode().splitlines()
        if line.startswith("data: {")
    ]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert text == tinyllm.MODEL_A.sentence
    # a plain completion whose prompt ends as a chat prompt does
    completion = json.loads(a.post("/v1/completions", {"prompt": "Say it:\n", "max_tokens": 40}))
    assert completion["choices"][0]["text"] == tinyllm.MODEL_A.sentence

    # a second start finds the complete download and serves it without fetching again
    a.proc.terminate()
    assert a.proc.wait(timeout=30) == 0
    hub.clear_requests()
    again = serve(AIM_MODEL_ID=tinyllm.MODEL_A.repo, AIM_CACHE_PATH=str(tmp_path / "a"), **hub_env(hub))
    await again.ready()
    assert again.chat("again?") == tinyllm.MODEL_A.sentence
    assert hub.requests() == []


async def test_a_gguf_llamacpp_cannot_load_ends_the_process_with_its_reason(
    hub: HubServer, serve: Any, tmp_path: Path
) -> None:
    whole = (hub.root / tinyllm.MODEL_A.repo / tinyllm.MODEL_A.filename).read_bytes()
    add_repo(hub.root, "aim-tests/truncated", {"model.gguf": whole[: len(whole) // 2]}, lfs_threshold=1024)
    broken = serve(AIM_MODEL_ID="aim-tests/truncated", AIM_CACHE_PATH=str(tmp_path), **hub_env(hub))
    assert broken.proc.wait(timeout=60) == 1
    message = broken.termination.read_text()
    assert message.startswith("llama.cpp cannot load model.gguf: ")
    assert "not within the file bounds" in message, message
    # a restart in the same pod (the failure record survives) ends at once, downloading nothing
    hub.clear_requests()
    again = serve(AIM_MODEL_ID="aim-tests/truncated", AIM_CACHE_PATH=str(tmp_path / "fresh"), **hub_env(hub))
    assert again.proc.wait(timeout=60) == 1
    assert again.termination.read_text() == f"{message} (not loaded again in this pod: it failed before)"
    assert hub.requests() == []

    refused = serve(
        AIM_MODEL_ID=tinyllm.MODEL_B.repo,
        AIM_CACHE_PATH=str(tmp_path),
        HF_ENDPOINT=hub.endpoint,
        AIM_OUTBOUND_ALLOWED_HOSTS="",  # the strict default: loopback is refused
    )
    assert refused.proc.wait(timeout=60) == 1
    message = refused.termination.read_text()
    assert message.startswith(
        f"downloading hf://{tinyllm.MODEL_B.repo} failed (exit code 1): AddressNotAllowed"
    )

    incomplete = tmp_path / "partial" / tinyllm.MODEL_A.repo
    incomplete.mkdir(parents=True)
    (incomplete / tinyllm.MODEL_A.filename).write_bytes(whole)  # the file, but no manifest
    partial = serve(AIM_MODEL_ID=tinyllm.MODEL_A.repo, AIM_CACHE_PATH=str(tmp_path / "partial"))
    assert partial.proc.wait(timeout=60) == 1
    assert "is incomplete: no download manifest" in partial.termination.read_text()
