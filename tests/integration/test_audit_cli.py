"""``aimctl events`` and ``aimctl describe`` as a user runs them (subprocesses), against the
session's NATS and API server, over records each test publishes itself (in a namespace of its
own, so other tests' history never matches)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from nats.js import JetStreamContext

from aim_dev.testing.plugin import LocalServers
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import (
    ChangeEvent,
    ChangeType,
    ConditionReport,
    Decision,
    ObjectRef,
    StatusReport,
)
from aimcore.api.kinds import KindRef, by_kind
from aimcore.runtime import Kube
from tests.helpers import eventually

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
AIMMODEL = by_kind("aim.eai.amd.com", "AIMModel")


@pytest.fixture
async def topo(
    js: JetStreamContext, aim_servers: LocalServers, tmp_path: Path
) -> AsyncIterator[JetStreamContext]:
    await topology.ensure_topology(js)  # idempotent; the watcher may have declared it already
    # aimctl finds the reader's key where `aimctl up` leaves it: $AIM_HOME/nats/creds
    creds = tmp_path / "aim-home" / "nats" / "creds"
    creds.mkdir(parents=True)
    shutil.copy(aim_servers.nats.credentials.seed_file("reader"), creds / "reader.nk")
    yield js


def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("AIM_", "KUBECONFIG", "COLUMNS"))}
    out["AIM_HOME"] = str(tmp_path / "aim-home")  # never the user's ~/.aim
    return out


async def aimctl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "aimctl.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(tmp_path),
    )


async def publish_change(js: JetStreamContext, ref: KindRef, ns: str, name: str, rv: str) -> None:
    event = ChangeEvent(
        object=ObjectRef.of(ref, ns, name), uid=f"uid-{name}", resource_version=rv, change=ChangeType.ADDED
    )
    await js.publish(subjects.event_subject(ref, ns, name), event.encode())


async def publish_decision(
    js: JetStreamContext,
    ref: KindRef,
    ns: str,
    name: str,
    what: tuple[str, str, str, str],
    **details: object,
) -> None:
    """Publish a decision; ``what`` is (source, action, reason, message)."""
    source, action, reason, message = what
    decision = Decision(
        object=ObjectRef.of(ref, ns, name),
        source=source,
        action=action,
        reason=reason,
        message=message,
        details=details,
    )
    await js.publish(subjects.decision_subject(source, ref, ns, name), decision.encode())


async def publish_status(js: JetStreamContext, ref: KindRef, ns: str, name: str, message: str) -> None:
    report = StatusReport(
        object=ObjectRef.of(ref, ns, name),
        source="deployer",
        conditions=(ConditionReport(type="Ready", status="False", reason="Pending", message=message),),
    )
    await js.publish(subjects.status_subject(report.source, ref, ns, name), report.encode())


async def test_events_replays_one_namespace_as_table_and_json(
    aim_servers: LocalServers, topo: JetStreamContext, tmp_path: Path
) -> None:
    js = topo
    ns = f"audit-{secrets.token_hex(4)}"
    await publish_change(js, AIMSVC, ns, "chat.v1", "11")
    await publish_status(js, AIMSVC, ns, "chat.v1", "waiting for a template")
    await publish_decision(
        js, AIMSVC, ns, "chat.v1", ("deployer", "select-template", "BestMatch", "tpl-a fits")
    )
    await publish_change(js, AIMMODEL, ns, "other", "12")
    await publish_change(js, AIMSVC, f"{ns}-elsewhere", "chat.v1", "13")

    done = await aimctl(tmp_path, "events", "aimsvc", "-n", ns, "--nats", aim_servers.nats.url, "-o", "json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["type"], r["source"], r["name"], r["namespace"]) for r in lines] == [
        ("change", "watcher", "chat.v1", ns),
        ("status", "deployer", "chat.v1", ns),
        ("decision", "deployer", "chat.v1", ns),
    ]
    assert [r["what"] for r in lines] == ["added", "Ready=False", "select-template (BestMatch)"]
    assert lines[2]["message"] == "tpl-a fits"
    times = [datetime.fromisoformat(r["time"]) for r in lines]
    assert times == sorted(times)

    table = await aimctl(tmp_path, "events", "-n", ns, "--nats", aim_servers.nats.url, "--width", "0")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["TIME", "SOURCE", "KIND", "NAMESPACE/NAME", "TYPE", "WHAT", "MESSAGE"]
    assert len(rows) == 4
    assert f"{ns}/chat.v1" in rows[0] and "added" in rows[0]
    assert "tpl-a fits" in rows[2]
    assert "AIMModel" in rows[3] and f"{ns}/other" in rows[3]

    since = lines[1]["time"]
    window = await aimctl(
        tmp_path,
        "events",
        "aimservices/chat.v1",
        "-n",
        ns,
        "--since",
        since,
        "--type",
        "decision",
        "--nats",
        aim_servers.nats.url,
        "-o",
        "json",
    )
    assert window.returncode == 0, window.stderr
    assert [json.loads(line)["type"] for line in window.stdout.splitlines()] == ["decision"]

    empty = await aimctl(tmp_path, "events", "-n", f"{ns}-nothing", "--nats", aim_servers.nats.url)
    assert empty.returncode == 0
    assert empty.stdout == ""
    assert "No records found" in empty.stderr

    bad = await aimctl(tmp_path, "events", "nosuchkind", "--nats", aim_servers.nats.url)
    assert bad.returncode == 2
    assert "unknown kind" in bad.stderr


async def test_events_follow_prints_new_records(
    aim_servers: LocalServers, topo: JetStreamContext, tmp_path: Path
) -> None:
    js = topo
    ns = f"audit-{secrets.token_hex(4)}"
    await publish_change(js, AIMSVC, ns, "old", "1")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aimctl.main",
        "events",
        "-n",
        ns,
        "-f",
        "--limit",
        "2",
        "-o",
        "json",
        "--nats",
        aim_servers.nats.url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env(tmp_path),
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        async with asyncio.timeout(60):
            first = json.loads(await proc.stdout.readline())
            assert first["name"] == "old"
            while b"following" not in (line := await proc.stderr.readline()):
                assert line, "aimctl events ended before following"
            await publish_decision(
                js, AIMSVC, ns, "new.one", ("deployer", "reject", "InvalidSpec", "bad spec")
            )
            second = json.loads(await proc.stdout.readline())
            assert await proc.wait() == 0
        assert (second["name"], second["what"], second["message"]) == (
            "new.one",
            "reject (InvalidSpec)",
            "bad spec",
        )
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_describe_shows_conditions_and_history(
    aim_servers: LocalServers, topo: JetStreamContext, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    js = topo
    name = "llama.3-8b"
    await kube.create(
        AIMMODEL,
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMModel",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"image": "ghcr.io/x/y:1"},
        },
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "AllComponentsReady",
        "message": "model resolved",
        "lastTransitionTime": now,
        "observedGeneration": 1,
    }
    await kube.patch_status(
        AIMMODEL,
        namespace,
        name,
        {"status": {"status": "Ready", "observedGeneration": 1, "conditions": [ready]}},
    )

    async def status_visible() -> bool:
        obj = await kube.get(AIMMODEL, namespace, name)
        return bool(obj and (obj.get("status") or {}).get("conditions"))

    await eventually(status_visible, what="the AIMModel's status")

    await publish_change(js, AIMMODEL, namespace, name, "101")
    await publish_decision(
        js,
        AIMMODEL,
        namespace,
        name,
        (
            "discovery",
            "resolve-runtime-config",
            "Resolved",
            "runtime config default selected: no other matched",
        ),
    )
    pending = {"type": "Ready", "status": "False", "reason": "Pending", "message": "waiting for discovery"}
    await publish_decision(
        js,
        AIMMODEL,
        namespace,
        name,
        ("status", "write-status", "Pending", "Ready →False (Pending)"),
        conditions=[pending],
        fields={"status": "Pending"},
        resourceVersion="102",
    )
    await publish_decision(
        js,
        AIMMODEL,
        namespace,
        name,
        ("status", "write-status", "Ready", "Ready False→True (AllComponentsReady); status Pending→Ready"),
        conditions=[ready],
        fields={"status": "Ready"},
        resourceVersion="103",
    )
    await publish_decision(
        js, AIMMODEL, namespace, "someone-else", ("discovery", "reject", "InvalidSpec", "x")
    )

    args = (
        "--nats",
        aim_servers.nats.url,
        "--kubeconfig",
        aim_servers.kubeconfig,
        "-n",
        namespace,
        "--width",
        "0",
    )
    done = await aimctl(tmp_path, "describe", f"aimmodel/{name}", *args)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    sections = ["Conditions:", "Condition history", "Recent decisions:", "Recent change events:"]
    positions = [out.index(s) for s in sections]
    assert positions == sorted(positions)
    header = out[: positions[0]]
    assert f"Name:                {name}" in header
    assert f"Namespace:           {namespace}" in header
    assert "Kind:                AIMModel (aim.eai.amd.com/v1alpha1)" in header
    assert "Generation:          1" in header and "ObservedGeneration:  1" in header
    assert "Status:              Ready" in header

    current = out[positions[0] : positions[1]]
    assert "AllComponentsReady" in current and "model resolved" in current

    history = [line for line in out[positions[1] : positions[2]].splitlines()[2:] if line.strip()]
    assert [line.split()[1:4] for line in history] == [
        ["Ready", "False", "Pending"],
        ["Ready", "True", "AllComponentsReady"],
    ]
    decisions = out[positions[2] : positions[3]]
    assert "discovery" in decisions and "resolve-runtime-config (Resolved)" in decisions
    assert "no other matched" in decisions
    assert "write-status" not in decisions and "InvalidSpec" not in decisions
    changes = out[positions[3] :]
    assert "added" in changes and "resourceVersion 101" in changes

    as_json = await aimctl(tmp_path, "describe", "aimmodels", name, *args, "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    view = json.loads(as_json.stdout)
    assert view["object"]["found"] is True
    assert view["object"]["name"] == name and view["object"]["status"] == "Ready"
    assert [c["reason"] for c in view["conditions"]] == ["AllComponentsReady"]
    assert [h["resourceVersion"] for h in view["conditionHistory"]] == ["102", "103"]
    assert [d["what"] for d in view["decisions"]] == ["resolve-runtime-config (Resolved)"]

    missing = await aimctl(tmp_path, "describe", "aimmodel/never-there", *args)
    assert missing.returncode == 1
    assert "not found" in missing.stdout
