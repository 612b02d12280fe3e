"""The walking skeleton through real processes: kubectl apply an AIMService, and the watcher,
the deployer and the status service make ``kubectl get aimsvc`` show its state with the
generation observed; invalid specs get ``InvalidSpec``; paused objects are left alone. Services
here name models that do not exist, so their settled state is ``Failed`` with ``ModelNotFound``
(the deployer's own behaviour is tested in ``test_deployer``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import yaml
from nats.js import JetStreamContext

from aim_dev.testing.plugin import LocalServers
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef
from aimcore.api.kinds import by_kind
from aimcore.runtime import Kube
from tests import helpers
from tests.helpers import eventually, manifest

AIMSVC = by_kind("aim.eai.amd.com", "AIMService")
LEGACY_AIMSVC = by_kind("aim.silogen.ai", "AIMService")


def kubectl(servers: LocalServers, *args: str, stdin: str | None = None) -> str:
    return helpers.kubectl(*args, kubeconfig=servers.kubeconfig, stdin=stdin)


def service(name: str, namespace: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return manifest(AIMSVC, name, namespace, spec, **meta)


async def status_of(kube: Kube, namespace: str, name: str, ref: Any = AIMSVC) -> dict[str, Any]:
    obj = await kube.get(ref, namespace, name)
    return (obj or {}).get("status") or {}


@pytest.fixture
def without_discovery(running):  # type: ignore[no-untyped-def]
    """The session's services with discovery stopped (another module may have started it): the
    model a service auto-creates then stays Pending, as the skeleton has it. With discovery, its
    labels would be read from the public registry, and the outcome would depend on the network
    (no network: RegistryError, and the service says so: Degraded)."""
    proc = running.procs.pop("discovery", None)
    if proc is not None:
        proc.stop()
    return running


async def test_apply_then_get_shows_pending(without_discovery, aim_servers, kube, namespace) -> None:  # type: ignore[no-untyped-def]
    manifest = service(
        "qwen3-chat", namespace, {"model": {"image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"}}
    )
    kubectl(aim_servers, "apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(manifest))

    async def shows_pending() -> str | None:
        out = kubectl(aim_servers, "get", "aimsvc", "-n", namespace)
        return out if "Pending" in out else None

    table = await eventually(shows_pending, timeout=30, what="kubectl get aimsvc to show Pending")
    header, row = table.strip().splitlines()[:2]
    assert header.split()[:2] == ["NAME", "STATUS"]
    assert row.split()[:2] == ["qwen3-chat", "Pending"]

    obj = await kube.get(AIMSVC, namespace, "qwen3-chat")
    assert obj is not None
    status = obj["status"]
    assert status["observedGeneration"] == obj["metadata"]["generation"] == 1
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    assert ready["observedGeneration"] == 1
    assert ready["lastTransitionTime"]


async def test_spec_change_updates_observed_generation(running, kube, namespace) -> None:  # type: ignore[no-untyped-def]
    await kube.create(AIMSVC, service("gen", namespace, {"model": {"name": "llama"}, "replicas": 1}))

    async def observed(gen: int) -> bool:
        return (await status_of(kube, namespace, "gen")).get("observedGeneration") == gen

    await eventually(lambda: observed(1), what="generation 1 observed")
    first = (await status_of(kube, namespace, "gen"))["conditions"]
    await kube.patch(AIMSVC, namespace, "gen", {"spec": {"replicas": 3}})
    await eventually(lambda: observed(2), what="generation 2 observed")
    second = (await status_of(kube, namespace, "gen"))["conditions"]
    by_type = {c["type"]: c for c in second}
    assert all(c["observedGeneration"] == 2 for c in second)
    # Same status, so the transition time is kept.
    old_ready = next(c for c in first if c["type"] == "Ready")
    assert by_type["Ready"]["lastTransitionTime"] == old_ready["lastTransitionTime"]


async def test_invalid_spec_is_reported_not_retried(running, kube, namespace, js: JetStreamContext) -> None:  # type: ignore[no-untyped-def]
    # Both model.name and model.image: the seed says exactly one. The 1.20 server has no CEL,
    # so it accepts the object and the deployer must say why it will not act on it.
    bad = service("both", namespace, {"model": {"name": "llama", "image": "ghcr.io/x/y:1"}})
    await kube.create(AIMSVC, bad)

    async def failed() -> dict[str, Any] | None:
        st = await status_of(kube, namespace, "both")
        return st if st.get("status") == "Failed" else None

    status = await eventually(failed, what="InvalidSpec to be reported")
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "InvalidSpec"
    assert "exactly one" in ready["message"]
    assert status["observedGeneration"] == 1

    # Fixing the spec recovers the object.
    await kube.patch(AIMSVC, namespace, "both", {"spec": {"model": {"image": None}}})

    async def recovered_now() -> dict[str, Any] | None:
        st = await _status_is(kube, namespace, "both", "Failed")
        reason = next(
            (c["reason"] for c in (st or {}).get("conditions") or [] if c["type"] == "ModelReady"), None
        )
        return st if st and st.get("observedGeneration") == 2 and reason == "ModelNotFound" else None

    recovered = await eventually(recovered_now, what="recovery after the fix (the named model is missing)")

    assert recovered["observedGeneration"] == 2


async def _status_is(kube: Kube, namespace: str, name: str, value: str) -> dict[str, Any] | None:
    st = await status_of(kube, namespace, name)
    return st if st.get("status") == value else None


async def test_legacy_group_service_is_reconciled(running, kube, namespace) -> None:  # type: ignore[no-untyped-def]
    legacy = {
        "apiVersion": "aim.silogen.ai/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "legacy", "namespace": namespace},
        "spec": {"model": {"ref": "meta-llama-3-8b-instruct"}},
    }
    await kube.create(LEGACY_AIMSVC, legacy)
    status = await eventually(
        lambda: _legacy_pending(kube, namespace), what="legacy AIMService reconciled (its model is missing)"
    )
    assert status["observedGeneration"] == 1


async def _legacy_pending(kube: Kube, namespace: str) -> dict[str, Any] | None:
    st = await status_of(kube, namespace, "legacy", LEGACY_AIMSVC)
    return st if st.get("status") == "Failed" else None


async def test_paused_service_is_left_alone(running, kube, namespace, js: JetStreamContext) -> None:  # type: ignore[no-untyped-def]
    paused = service(
        "paused",
        namespace,
        {"model": {"name": "llama"}},
        annotations={"aim.eai.amd.com/reconciliation-paused": "true"},
    )
    await kube.create(AIMSVC, paused)
    await kube.create(AIMSVC, service("witness", namespace, {"model": {"name": "llama"}}))
    await eventually(lambda: _status_is(kube, namespace, "witness", "Failed"), what="witness reconciled")
    await _drained(js, topology.EVENTS_STREAM, "aim-deployer")
    await _drained(js, topology.STATUS_STREAM, "aim-status")
    assert await status_of(kube, namespace, "paused") == {}

    # Unpausing hands it back to the operator.
    await kube.patch(
        AIMSVC,
        namespace,
        "paused",
        {"metadata": {"annotations": {"aim.eai.amd.com/reconciliation-paused": None}}},
    )
    await eventually(lambda: _status_is(kube, namespace, "paused", "Failed"), what="unpaused reconciled")


async def _drained(js: JetStreamContext, stream: str, durable: str) -> None:
    async def idle() -> bool:
        info = await js.consumer_info(stream, durable)
        return info.num_pending == 0 and info.num_ack_pending == 0

    await eventually(idle, what=f"{durable} to finish its backlog")
    await asyncio.sleep(0)


async def test_duplicate_delivery_changes_nothing(running, kube, namespace, js: JetStreamContext) -> None:  # type: ignore[no-untyped-def]
    await kube.create(AIMSVC, service("dup", namespace, {"model": {"name": "llama"}}))
    await eventually(lambda: _status_is(kube, namespace, "dup", "Failed"), what="dup reconciled")
    await _drained(js, topology.EVENTS_STREAM, "aim-deployer")
    await _drained(js, topology.STATUS_STREAM, "aim-status")
    before = await kube.get(AIMSVC, namespace, "dup")
    assert before is not None
    meta = before["metadata"]
    # The same change delivered again (as after a crash before the ack), under a new Msg-Id so
    # the stream's dedup does not hide it: the handlers must find nothing to do.
    again = ChangeEvent(
        object=ObjectRef.of(AIMSVC, namespace, "dup"),
        uid=meta["uid"],
        resource_version=meta["resourceVersion"],
        generation=meta["generation"],
        change=ChangeType.MODIFIED,
    )
    for attempt in range(3):
        ack = await js.publish(
            subjects.event_subject(AIMSVC, namespace, "dup"),
            again.encode(),
            headers={"Nats-Msg-Id": f"{again.msg_id}:redelivery-{attempt}"},
        )
        assert not ack.duplicate
    await _drained(js, topology.EVENTS_STREAM, "aim-deployer")
    await _drained(js, topology.STATUS_STREAM, "aim-status")
    after = await kube.get(AIMSVC, namespace, "dup")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == meta["resourceVersion"]
