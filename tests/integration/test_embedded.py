"""The embedded default as the README tells a newcomer to use it: ``aimctl up --detach --demo``
brings everything up, writes the kubeconfig into ``$AIM_HOME``, shows the sample AIMService
Pending and a model cache downloaded to Ready; kubectl then sees every CRD; a service that crashes
is restarted; ``aimctl down`` stops every process it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aim_dev.local import binaries
from aim_dev.local.gguf_sample import tiny_gguf
from aimcore.api.crds.registry import ALL_KINDS


def aimctl(home: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AIM_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "aimctl.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def wait_for(probe: Callable[[], int | None], timeout: float, what: str) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := probe()) is not None:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_up_detach_demo_then_down(tmp_path: Path) -> None:
    home = tmp_path / "aim-home"
    try:
        up = aimctl(home, "up", "--detach", "--demo")
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"export KUBECONFIG={home / 'kubeconfig'}" in up.stdout
        pending_row = [line for line in up.stdout.splitlines() if line.startswith("qwen3-chat")]
        assert pending_row and pending_row[0].split()[1] == "Pending", up.stdout
        # the CPU custom-model service reached its KServe InferenceService (nothing serves it here)
        isvc_rows = [line for line in up.stdout.splitlines() if line.startswith("tiny-chat-")]
        assert isvc_rows, up.stdout
        model_row = [line for line in up.stdout.splitlines() if line.startswith("qwen3-32b")]
        assert model_row and model_row[0].split()[1] == "NotAvailable", up.stdout
        template_rows = [
            line for line in up.stdout.splitlines() if line.startswith("amdenterpriseai-aim-qwen")
        ]
        assert len(template_rows) == 2 and all("NotAvailable" in row for row in template_rows), up.stdout
        # the model cache: downloaded and verified by the local executor (no kubelet here)
        cache_row = [line.split() for line in up.stdout.splitlines() if line.startswith("default ")]
        assert cache_row and cache_row[0][1:3] == ["tiny-llm", "Ready"], up.stdout
        assert " 100 % " in " ".join(cache_row[0]) + " ", up.stdout
        models = home / "models" / "default" / "tiny-llm"
        assert (models / "model.safetensors").stat().st_size == 1024 * 1024
        assert (models / ".aim-manifest.json").exists()
        # the LLMKube Model: fetched, its sha256 enforced, its GGUF header in status
        gguf_row = [line.split() for line in up.stdout.splitlines() if line.startswith("tiny-gguf ")]
        size = str(len(tiny_gguf()))
        assert gguf_row and gguf_row[0][1:6] == ["Ready", size, "B", "cpu", "llama"], up.stdout
        assert '"modelName":"Tiny Demo"' in up.stdout and '"quantization":"Q4_K_M"' in up.stdout, up.stdout

        state = json.loads((home / "state.json").read_text())
        pids = state["pids"]
        assert {"etcd", "kube-apiserver", "kube-controller-manager", "nats-server"} <= set(pids)
        assert {
            f"aim-{s}" for s in ("watcher", "status", "deployer", "discovery", "registry-sync", "cache")
        } <= set(pids)
        # detached, a crashed service is restarted as in the foreground (and recorded for `down`)
        crashed = pids["aim-deployer"]
        os.kill(crashed, signal.SIGKILL)

        def restarted() -> int | None:
            now = json.loads((home / "state.json").read_text())["pids"].get("aim-deployer")
            return now if now != crashed and now is not None and alive(now) else None

        replacement = wait_for(restarted, timeout=60, what="the supervisor to restart aim-deployer")
        crds = subprocess.run(
            [binaries.kubectl(), "--kubeconfig", str(home / "kubeconfig"), "get", "crd", "-o", "name"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for kind in ALL_KINDS:
            assert kind.crd.crd_name in crds
    finally:
        down = aimctl(home, "down")
    assert down.returncode == 0
    assert not (home / "state.json").exists()
    assert [name for name, pid in pids.items() if alive(pid)] == []
    assert not alive(replacement)
