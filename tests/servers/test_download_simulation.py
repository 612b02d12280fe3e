"""``aim-download`` under the released original's debug simulation switches (the ones its own
end-to-end tests set in an AIMArtifact's ``spec.env``), run as the program a download Job runs: the
result line, the attempts and progress it offers on a real nats-server (what the cache service
relays to ``status.download``, ``status.progress`` and ``DownloadComplete``), the bytes it writes
and its exit codes. The sources named here are unreachable from the tests (the outbound policy
allows loopback only and no Hub endpoint is set), so a success is also proof nothing was fetched."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aim_cache_jobs.downloader import CHECKSUM_MISMATCH, DOWNLOAD_FAILED, MANIFEST, read_manifest
from aim_dev.local.natsserver import NatsServer
from aimcore.api.bus import progress, topology
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.kinds import by_kind
from tests.servers.test_downloader import _base_env, _collect, last_json, run_cli, terminated

ARTIFACT = by_kind("aim.eai.amd.com", "AIMArtifact")
KEY = progress.key_from_seed("the cache service's seed")


@dataclass
class Offers:
    """The progress offers of one download Job's object, and how to run the Job for it."""

    name: str
    env: dict[str, str]
    received: list[StatusReport]

    def args(self, source: str, dest: Path) -> list[str]:
        return [
            source,
            str(dest),
            "--object",
            f"{ARTIFACT.group}/{ARTIFACT.version}/AIMArtifact/ns/{self.name}",
        ]

    def seen(self) -> list[tuple[str, str, int, dict[str, Any]]]:
        """Each offer as (DownloadComplete status, reason, percentage, status.download)."""
        out = []
        for report in self.received:
            complete = next(c for c in report.conditions if c.type == "DownloadComplete")
            out.append(
                (
                    complete.status,
                    complete.reason,
                    report.fields["progress"]["percentage"],
                    report.fields["download"],
                )
            )
        return out


@pytest.fixture
async def offers(
    aim_nats: NatsServer, nats_client: NatsClient, js: JetStreamContext
) -> AsyncIterator[Offers]:
    await topology.ensure_topology(js)
    name = f"sim-{secrets.token_hex(3)}"
    target = ObjectRef.of(ARTIFACT, "ns", name)
    received: list[StatusReport] = []
    sub = await nats_client.subscribe(progress.subject(target), cb=_collect(received, []))
    env = {**aim_nats.client("download").env(), "AIM_PROGRESS_TOKEN": progress.token(KEY, target, None)}
    try:
        yield Offers(name, env, received)
    finally:
        await sub.unsubscribe()


async def settled(nats_client: NatsClient) -> None:
    """Every offer the (exited) program published has reached the subscriber."""
    await nats_client.flush(timeout=5)


def attempts_of(seen: list[tuple[str, str, int, dict[str, Any]]]) -> list[tuple[str, int, int, str]]:
    """The attempts the offers name, each once, in order."""
    out: list[tuple[str, int, int, str]] = []
    for *_, d in seen:
        step = (d["protocol"], d["attempt"], d["totalAttempts"], d["protocolSequence"])
        if not out or out[-1] != step:
            out.append(step)
    return out


HF_FALLBACK = {
    "AIM_DOWNLOADER_PROTOCOL": "XET,HTTP",
    "AIM_DEBUG_SIMULATE_HF_DOWNLOAD": "true",
    "AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS": "XET",
    "AIM_DEBUG_SIMULATE_HF_DURATION": "2.5",
    "EXPECTED_SIZE_BYTES": "102400",
}


async def test_hf_simulation_falls_back_from_a_failing_protocol(
    offers: Offers, nats_client: NatsClient, tmp_path: Path
) -> None:
    """The original's ``protocol-switching`` fallback: XET fails, HTTP succeeds as attempt 2/2, the
    simulated bytes and the manifest are in place as after a real download."""
    code, out, err = await run_cli(
        offers.args("hf://test-org/test-model", tmp_path), {**offers.env, **HF_FALLBACK}
    )
    assert code == 0, err
    result = last_json(out)
    assert result["result"] == "ok" and (result["files"], result["bytes"]) == (1, 102400)
    assert result["download"] == {"protocol": "HTTP", "attempt": 2, "protocolSequence": "XET,HTTP"}
    assert (tmp_path / "simulated_data").read_bytes() == bytes(102400)
    manifest = read_manifest(tmp_path)
    assert manifest is not None and manifest.total_bytes == 102400
    await settled(nats_client)
    seen = offers.seen()
    assert attempts_of(seen) == [("XET", 1, 2, "XET,HTTP"), ("HTTP", 2, 2, "XET,HTTP")]
    assert seen[-1][:3] == ("True", "Verifying", 100)
    assert "simulated failure of XET" in err and "trying HTTP" in err


async def test_hf_simulation_with_every_protocol_failing_fails_on_the_last(tmp_path: Path) -> None:
    env = {
        **HF_FALLBACK,
        "AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS": "XET,HTTP",
        "AIM_DEBUG_SIMULATE_HF_DURATION": "0.2",
    }
    code, out, err = await run_cli(["hf://test-org/test-model", str(tmp_path)], env)
    assert code == 1, err
    result = last_json(out)
    assert result["reason"] == DOWNLOAD_FAILED and "all 2 attempts exhausted" in result["message"]
    assert result["download"] == {"protocol": "HTTP", "attempt": 2, "protocolSequence": "XET,HTTP"}
    assert not (tmp_path / "simulated_data").exists() and not (tmp_path / MANIFEST).exists()


async def test_hf_simulation_is_for_hf_sources_only(tmp_path: Path) -> None:
    """An s3:// source is downloaded for real, as the original's hf-download.sh is not run for it."""
    env = {**HF_FALLBACK, "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    code, out, _ = await run_cli(["s3://bucket/model", str(tmp_path)], env)
    result = last_json(out)
    assert code == 1 and "simulated" not in result["message"] and "AIM_DEBUG" not in result["message"]
    assert not (tmp_path / "simulated_data").exists()


PHASES = {
    "AIM_DEBUG_SIMULATE_DOWNLOAD": "true",
    "AIM_DEBUG_DOWNLOAD_DURATION": "2.5",
    "AIM_DEBUG_VERIFY_DURATION": "2.5",
    "EXPECTED_SIZE_BYTES": "1048576",
    "PROGRESS_INTERVAL": "3",
    "STALL_TIMEOUT": "120",
}


async def test_simulated_phases_say_downloading_then_verifying_at_100(
    offers: Offers, nats_client: NatsClient, tmp_path: Path
) -> None:
    """The original's ``progress-and-verification`` success path: below 100 % while downloading
    (``DownloadComplete=False/Downloading``), then 100 % and ``True/Verifying``, then success."""
    code, out, err = await run_cli(offers.args("hf://gpt2", tmp_path), {**offers.env, **PHASES})
    assert code == 0, err
    result = last_json(out)
    assert result["result"] == "ok" and result["bytes"] == 1048576
    assert result["download"] == {
        "protocol": "HF_TRANSFER",
        "attempt": 1,
        "protocolSequence": "HF_TRANSFER,HTTP",
    }
    assert (tmp_path / "simulated_data").stat().st_size == 1048576
    await settled(nats_client)
    seen = offers.seen()
    downloading = [pct for status, reason, pct, _ in seen if (status, reason) == ("False", "Downloading")]
    verifying = [pct for status, reason, pct, _ in seen if (status, reason) == ("True", "Verifying")]
    assert downloading and max(downloading) <= 99, seen
    assert verifying and set(verifying) == {100}, seen
    assert [s[:2] for s in seen] == sorted((s[:2] for s in seen), key=lambda s: s[0] == "True"), seen


async def test_simulated_verification_failure_is_a_checksum_mismatch_after_100(
    offers: Offers, nats_client: NatsClient, tmp_path: Path
) -> None:
    """``AIM_DEBUG_VERIFY_FAIL``: every byte in (100 %, Verifying), then the reason a real
    verification failure gives, which the cache service calls ``VerificationFailed``."""
    env = {**PHASES, "AIM_DEBUG_DOWNLOAD_DURATION": "0.2", "AIM_DEBUG_VERIFY_FAIL": "true"}
    code, out, err = await run_cli(offers.args("hf://gpt2", tmp_path), {**offers.env, **env})
    assert code == 1, err
    result = last_json(out)
    assert result["reason"] == CHECKSUM_MISMATCH and "AIM_DEBUG_VERIFY_FAIL" in result["message"]
    assert result["download"]["attempt"] == 1
    assert not (tmp_path / MANIFEST).exists()
    await settled(nats_client)
    assert offers.seen()[-1][:3] == ("True", "Verifying", 100)


async def test_cause_failure_fails_at_once(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        ["hf://gpt2", str(tmp_path)], {"AIM_DEBUG_CAUSE_FAILURE": "true"}, timeout=20
    )
    assert code == 1, err
    result = last_json(out)
    assert result["reason"] == DOWNLOAD_FAILED and "AIM_DEBUG_CAUSE_FAILURE" in result["message"]
    assert "download" not in result  # before any attempt, as in the original
    assert os.listdir(tmp_path) == []


async def test_cause_hang_runs_until_sigterm(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aim_cache_jobs.downloader.cli",
        "hf://gpt2",
        str(tmp_path),
        env={**_base_env(), "AIM_DEBUG_CAUSE_HANG": "true"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )

    async def hanging() -> None:
        assert proc.stderr is not None
        lines: list[bytes] = []
        while b"debug simulation" not in (lines[-1] if lines else b""):
            lines.append(await asyncio.wait_for(proc.stderr.readline(), 20))
            assert lines[-1], b"".join(lines)
        assert proc.returncode is None

    out, err = await terminated(proc, hanging())
    assert proc.returncode == 143, err.decode()
    assert "SIGTERM" in last_json(out.decode())["message"]


async def test_a_bad_switch_value_is_a_usage_error(tmp_path: Path) -> None:
    code, out, _ = await run_cli(
        ["hf://gpt2", str(tmp_path)], {"AIM_DEBUG_SIMULATE_DOWNLOAD": "sure"}, timeout=20
    )
    assert code == 2
    assert (
        last_json(out)["reason"] == "UsageError"
        and "AIM_DEBUG_SIMULATE_DOWNLOAD" in last_json(out)["message"]
    )
    assert json.loads(out.splitlines()[-1])["result"] == "error"
