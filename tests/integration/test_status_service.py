"""The status service as a real process: progress bursts are coalesced (few API writes, the last
value lands), component conditions drive ``status``/``Ready`` through the kinds' rules, and every
write publishes one ``write-status`` decision for the audit trail.

Objects here are AIMModelCache / AIMTemplateCache with the cache service stopped (the session may
have started it; a later test that needs it starts it again), so the test reporter is the only
source of reports. Counts, not durations, are asserted. The coalescer and the audit summary alone,
in-process: ``tests/unit/status/test_status_coalescer.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from aim_status.coalesce import StreamGuard
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ConditionReport, Decision, ObjectRef, StatusReport
from aimcore.api.kinds import KindRef, by_kind
from aimcore.runtime import Kube, Reporter
from tests.helpers import eventually, manifest
from tests.integration.conftest import Services

MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
TEMPLATE_CACHE = by_kind("aim.eai.amd.com", "AIMTemplateCache")

# -- the real process ----------------------------------------------------------------------------


class Audit:
    """``write-status`` decisions about one object, as ``aimctl events`` would see them."""

    def __init__(self) -> None:
        self.records: list[Decision] = []
        self.headers: list[dict[str, str]] = []

    async def on_msg(self, msg: Msg) -> None:
        self.records.append(Decision.model_validate_json(msg.data))
        self.headers.append(dict(msg.headers or {}))

    def last(self) -> Decision | None:
        return self.records[-1] if self.records else None


@contextlib.asynccontextmanager
async def audit_of(nc: NatsClient, ref: KindRef, namespace: str, name: str) -> AsyncIterator[Audit]:
    audit = Audit()
    sub = await nc.subscribe(subjects.decision_subject("status", ref, namespace, name), cb=audit.on_msg)
    await nc.flush()
    try:
        yield audit
    finally:
        await sub.unsubscribe()


@contextlib.asynccontextmanager
async def api_writes(
    kube: Kube, ref: KindRef, namespace: str, name: str, rv: str
) -> AsyncIterator[list[str]]:
    """resourceVersions of every modification of the object the API server reports."""
    seen: list[str] = []

    async def watch() -> None:
        async for event in kube.watch(ref, rv, namespace=namespace):
            obj = event.get("object") or {}
            if event.get("type") == "MODIFIED" and (obj.get("metadata") or {}).get("name") == name:
                seen.append(obj["metadata"]["resourceVersion"])

    task = asyncio.create_task(watch())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


@pytest.fixture
def without_cache(running: Services) -> Services:
    """The session's services with the cache service stopped: it owns these kinds."""
    proc = running.procs.pop("cache", None)
    if proc is not None:
        proc.stop()
    return running


def model_cache(name: str, namespace: str) -> dict[str, Any]:
    return manifest(MODEL_CACHE, name, namespace, {"sourceUri": "hf://org/model"})


def template_cache(name: str, namespace: str) -> dict[str, Any]:
    return manifest(TEMPLATE_CACHE, name, namespace, {"templateName": "llama-mi300x"})


async def status_of(kube: Kube, ref: KindRef, namespace: str, name: str) -> dict[str, Any]:
    obj = await kube.get(ref, namespace, name)
    return (obj or {}).get("status") or {}


async def drained(js: JetStreamContext) -> bool:
    info = await js.consumer_info(topology.STATUS_STREAM, "aim-status")
    return bool(info.num_pending == 0 and info.num_ack_pending == 0)


def downloaded(status: dict[str, Any]) -> int | None:
    return (status.get("progress") or {}).get("downloadedBytes")


async def _true(value: bool) -> bool:
    return value


async def test_progress_burst_is_coalesced_and_the_last_value_lands(  # type: ignore[no-untyped-def]
    without_cache, kube: Kube, namespace: str, js: JetStreamContext, nats_client: NatsClient
) -> None:
    created = await kube.create(MODEL_CACHE, model_cache("burst", namespace))
    reporter = Reporter(js, "cache")  # the owner of the caches' status
    async with (
        audit_of(nats_client, MODEL_CACHE, namespace, "burst") as audit,
        api_writes(kube, MODEL_CACHE, namespace, "burst", created["metadata"]["resourceVersion"]) as writes,
    ):
        for i in range(1, 51):
            fields = {"progress": {"totalBytes": 50, "downloadedBytes": i, "percentage": 2 * i}}
            assert await reporter.report(MODEL_CACHE, created, fields=fields, progress=True)

        async def last_value_landed() -> dict[str, Any] | None:
            status = await status_of(kube, MODEL_CACHE, namespace, "burst")
            return status if downloaded(status) == 50 else None

        status = await eventually(last_value_landed, what="the burst's last value to land")
        assert status["progress"] == {"totalBytes": 50, "downloadedBytes": 50, "percentage": 100}

        async def audited_last() -> bool:
            last = audit.last()
            return last is not None and downloaded(last.details["fields"]) == 50

        await eventually(audited_last, what="the write-status decision of the last value")
        await eventually(lambda: drained(js), what="the status consumer to drain")
        await eventually(lambda: _true(len(writes) == len(audit.records)), what="one decision per API write")
        assert 1 <= len(writes) <= 5, f"50 progress reports made {len(writes)} API writes"
        assert [d.details["resourceVersion"] for d in audit.records] == writes

        # A non-progress report right after more progress is written at once and has the last word.
        for i in range(51, 61):
            fields = {"progress": {"totalBytes": 60, "downloadedBytes": i, "percentage": 100 * i // 60}}
            assert await reporter.report(MODEL_CACHE, created, fields=fields, progress=True)
        done = [
            ConditionReport(type="CachePvcReady", status="True", reason="PvcBound"),
            ConditionReport(type="DownloadJobReady", status="True", reason="JobComplete"),
        ]
        done_fields = {"progress": {"totalBytes": 60, "downloadedBytes": 60, "percentage": 100}}
        assert await reporter.report(MODEL_CACHE, created, done, done_fields)

        async def ready() -> dict[str, Any] | None:
            status = await status_of(kube, MODEL_CACHE, namespace, "burst")
            return status if status.get("status") == "Ready" else None

        status = await eventually(ready, what="the final report to land")
        await eventually(lambda: drained(js), what="the status consumer to drain")
        await eventually(lambda: _true(len(writes) == len(audit.records)), what="one decision per API write")
        final_status = await status_of(kube, MODEL_CACHE, namespace, "burst")
        assert downloaded(final_status) == 60  # no stale progress landed after the final report
        assert final_status["status"] == "Ready"
        last = audit.last()
        assert last is not None and last.reason == "Ready"
        assert len(writes) <= 10, f"{len(writes)} API writes for 61 reports"


async def test_component_conditions_drive_status_and_ready(  # type: ignore[no-untyped-def]
    without_cache, kube: Kube, namespace: str, js: JetStreamContext, nats_client: NatsClient
) -> None:
    await kube.create(TEMPLATE_CACHE, template_cache("tc", namespace))
    reporter = Reporter(js, "cache")  # the owner of the caches' status

    async def report(*conditions: tuple[str, str, str, str]) -> None:
        obj = await kube.get(TEMPLATE_CACHE, namespace, "tc")
        assert obj is not None
        conds = [ConditionReport(type=t, status=s, reason=r, message=m) for t, s, r, m in conditions]
        assert await reporter.report(TEMPLATE_CACHE, obj, conds)

    async def status_is(value: str) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            status = await status_of(kube, TEMPLATE_CACHE, namespace, "tc")
            return status if status.get("status") == value else None

        return await eventually(probe, what=f"AIMTemplateCache status {value}")

    def ready_of(status: dict[str, Any]) -> dict[str, Any]:
        return next(c for c in status["conditions"] if c["type"] == "Ready")

    async with audit_of(nats_client, TEMPLATE_CACHE, namespace, "tc") as audit:
        # The template is not found: a template cache fails (the original's e2e "fails-if-*"),
        # Ready=False explained by the component.
        # (What the cache service reports: a missing upstream object is ReferenceNotFound.)
        await report(
            ("ServiceTemplateReady", "False", "ReferenceNotFound", "template llama-mi300x not found")
        )
        pending = await status_is("Failed")
        assert pending.get("conditions"), pending
        ready = ready_of(pending)
        assert (ready["status"], ready["reason"]) == ("False", "ReferenceNotFound")
        assert ready["message"] == "Component ServiceTemplate is not ready: template llama-mi300x not found"
        assert ready["observedGeneration"] == pending["observedGeneration"] == 1

        # Template found, caches being created: Progressing; Ready stays False, so its time is kept.
        await report(
            ("ServiceTemplateReady", "True", "TemplateReady", ""),
            ("ArtifactsReady", "False", "CreatingCaches", ""),
        )
        progressing = await status_is("Progressing")
        assert ready_of(progressing)["lastTransitionTime"] == ready["lastTransitionTime"]

        # Everything ready.
        await report(("ArtifactsReady", "True", "AllCachesReady", ""))
        done = await status_is("Ready")
        ready = ready_of(done)
        assert (ready["status"], ready["reason"]) == ("True", "AllComponentsReady")

        async def decision_with(reason: str) -> Decision | None:
            return next((d for d in audit.records if d.reason == reason), None)

        decision = await eventually(lambda: decision_with("Ready"), what="the Ready write's decision")
        assert decision.source == "status"
        assert decision.action == "write-status"
        assert decision.message == (
            "Ready False→True (AllComponentsReady); status Progressing→Ready; "
            "ArtifactsReady False→True (AllCachesReady)"
        )
        assert {c["type"] for c in decision.details["conditions"]} == {"Ready", "ArtifactsReady"}
        assert decision.details["fields"] == {"status": "Ready"}
        obj = await kube.get(TEMPLATE_CACHE, namespace, "tc")
        assert obj is not None
        assert decision.details["resourceVersion"] == obj["metadata"]["resourceVersion"]

        # A failed component fails the object with its reason.
        await report(("ArtifactsReady", "False", "VerificationFailed", "sha256 mismatch"))
        failed = await status_is("Failed")
        ready = ready_of(failed)
        assert (ready["reason"], ready["message"]) == (
            "VerificationFailed",
            "Component Artifacts is not ready: sha256 mismatch",
        )

        await eventually(lambda: decision_with("Failed"), what="the Failed write's decision")
        await eventually(lambda: drained(js), what="the status consumer to drain")
        # One decision per write, each traced, and nothing written twice.
        assert [d.reason for d in audit.records] == ["Failed", "Progressing", "Ready", "Failed"]
        assert all("traceparent" in h for h in audit.headers), audit.headers
        raw = [json.loads(d.encode()) for d in audit.records]
        assert all(set(r["details"]) == {"conditions", "fields", "resourceVersion"} for r in raw)


async def test_stream_guard_sees_newer_reports_from_the_same_source(  # type: ignore[no-untyped-def]
    without_cache, namespace: str, js: JetStreamContext
) -> None:
    """What keeps a replica's delayed progress from landing after a newer value another replica
    wrote: the stream is asked whether the same source reported again on the object's subject."""
    subject = subjects.status_subject("cache", MODEL_CACHE, namespace, "guarded")
    ref = ObjectRef.of(MODEL_CACHE, namespace, "guarded")
    seqs = []
    for source, value in (("a", 1), ("b", 1), ("a", 2)):
        report = StatusReport(object=ref, source=source, fields={"progress": {"downloadedBytes": value}})
        seqs.append((await js.publish(subject, report.encode())).seq)
    guard = StreamGuard(js, topology.STATUS_STREAM)
    assert await guard(subject, seqs[0], "a")  # a's second report, past b's
    assert not await guard(subject, seqs[1], "b")
    assert not await guard(subject, seqs[2], "a")
    assert not await StreamGuard(js, topology.STATUS_STREAM, lookahead=1)(subject, seqs[0], "a")


async def test_paused_objects_get_no_status_and_no_decision(  # type: ignore[no-untyped-def]
    without_cache, kube: Kube, namespace: str, js: JetStreamContext, nats_client: NatsClient
) -> None:
    paused = template_cache("frozen", namespace)
    paused["metadata"]["annotations"] = {"aim.eai.amd.com/reconciliation-paused": "true"}
    obj = await kube.create(TEMPLATE_CACHE, paused)
    witness = await kube.create(TEMPLATE_CACHE, template_cache("witness", namespace))
    reporter = Reporter(js, "cache")  # the owner of the caches' status
    conds = [ConditionReport(type="ServiceTemplateReady", status="True", reason="TemplateReady")]
    async with audit_of(nats_client, TEMPLATE_CACHE, namespace, "frozen") as audit:
        assert await reporter.report(TEMPLATE_CACHE, obj, conds)
        assert await reporter.report(TEMPLATE_CACHE, witness, conds)

        async def witness_ready() -> bool:
            return (await status_of(kube, TEMPLATE_CACHE, namespace, "witness")).get("status") == "Ready"

        await eventually(witness_ready, what="the witness to be Ready")
        await eventually(lambda: drained(js), what="the status consumer to drain")
        assert await status_of(kube, TEMPLATE_CACHE, namespace, "frozen") == {}
        assert audit.records == []
