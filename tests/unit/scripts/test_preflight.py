"""``scripts/preflight.sh`` refuses a machine ``up.sh`` cannot run on, naming each unmet need and
what to do, before anything is installed: run as a user would, with the machine's answers (``id``,
``stat``) swapped for small programs earlier on ``PATH`` where the test needs another machine."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PREFLIGHT = ROOT / "scripts" / "preflight.sh"


def shim(bin_dir: Path, name: str, output: str) -> None:
    """A program ``name`` on ``bin_dir`` that prints ``output`` whatever its arguments."""
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\necho {output}\n")
    path.chmod(0o755)


def preflight(tmp_path: Path, mode: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The script in ``mode`` with the caches under ``tmp_path`` and ``tmp_path/bin`` first on PATH."""
    environ = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), **env}
    environ["PATH"] = f"{tmp_path / 'bin'}:{environ['PATH']}"
    return subprocess.run(
        ["bash", str(PREFLIGHT), mode], env=environ, capture_output=True, text=True, timeout=30, check=False
    )


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    return tmp_path / "bin"


def test_a_cgroup_v2_machine_is_told_how_to_boot_cgroup_v1_or_run_without_the_node(
    tmp_path: Path, bin_dir: Path
) -> None:
    shim(bin_dir, "stat", "cgroup2fs")
    shim(bin_dir, "id", "0")
    result = preflight(tmp_path, "node", AIM_PREFLIGHT_MIN_FREE_GB="0")
    assert result.returncode == 2, result
    assert "cgroup v2" in result.stderr
    assert "systemd.unified_cgroup_hierarchy=0" in result.stderr
    assert "--no-node" in result.stderr


def test_the_node_without_root_is_refused_and_the_stack_without_a_kubelet_offered(
    tmp_path: Path, bin_dir: Path
) -> None:
    shim(bin_dir, "stat", "tmpfs")
    shim(bin_dir, "id", "1000")
    result = preflight(tmp_path, "node", AIM_PREFLIGHT_MIN_FREE_GB="0")
    assert result.returncode == 2, result
    assert "needs root" in result.stderr
    assert "cgroup v2" not in result.stderr


def test_too_little_disk_names_the_figures_and_where_the_caches_go(tmp_path: Path, bin_dir: Path) -> None:
    result = preflight(tmp_path, "no-node", AIM_PREFLIGHT_MIN_FREE_GB="1000000")
    assert result.returncode == 2, result
    assert "1000000 GiB needed" in result.stderr
    assert "XDG_CACHE_HOME" in result.stderr


def test_the_stack_without_a_kubelet_asks_neither_root_nor_cgroup_v1(tmp_path: Path, bin_dir: Path) -> None:
    shim(bin_dir, "stat", "cgroup2fs")
    shim(bin_dir, "id", "1000")
    result = preflight(tmp_path, "no-node", AIM_PREFLIGHT_MIN_FREE_GB="0")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
