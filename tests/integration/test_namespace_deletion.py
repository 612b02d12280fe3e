"""``kubectl delete namespace`` of a namespace full of AIM objects finishes (issue 39, point 6): a
Ready model with spec-provided image metadata and the templates it generated, a custom template,
an AIMService whose template cache it created (the service's finalizer
``aim.eai.amd.com/template-cache-cleanup``) and that cache (the cache service's finalizer
``aim.eai.amd.com/artifactcleanup``), with a model cache that never becomes ready. The real API
server's namespace controller (kube-controller-manager) deletes them; the services see the
namespace terminating, drop their finalizers without their cleanup work (no ``CleanupNotReady``
decision: the not-ready model cache is left to the namespace) and the namespace is gone. Under
both behaviours (``AIM_BEHAVIOUR``), on a stack of the test's own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.js.api import ConsumerConfig, DeliverPolicy

from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import Decision
from aimcore.api.kinds import NAMESPACE, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import condition, eventually, manifest, status_of
from tests.integration.conftest import Services, bound, own_services

AIM = "aim.eai.amd.com"
MODEL = by_kind(AIM, "AIMModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
SERVICE = by_kind(AIM, "AIMService")
TEMPLATE_CACHE = by_kind(AIM, "AIMTemplateCache")
ARTIFACT = by_kind(AIM, "AIMArtifact")  # what a template cache creates under released
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
NS = "finalizer-cleanup"
SERVICE_FINALIZER = "aim.eai.amd.com/template-cache-cleanup"
CACHE_FINALIZER = "aim.eai.amd.com/artifactcleanup"
GONE_WITHIN = 60  # a bound on the wait, not on the speed: the namespace controller backs off

METADATA = {
    "model": {
        "canonicalName": "spec-provided-model",
        "recommendedDeployments": [
            {"gpuModel": "MI300X", "gpuCount": 1, "metric": "throughput", "precision": "fp16"}
        ],
    }
}


@pytest.fixture(params=["seeds", "released"])
def stack(request: pytest.FixtureRequest, private_stack: LocalServers, tmp_path: Path) -> Iterator[Services]:
    env = {
        "AIM_BEHAVIOUR": request.param,
        "AIM_CACHE_EXECUTOR": "local",
        "AIM_CACHE_DIR": str(tmp_path / "caches"),
    }
    with own_services(
        private_stack, ("watcher", "status", "deployer", "discovery", "cache"), env
    ) as services:
        yield services


@pytest.fixture
async def kube(private_stack: LocalServers) -> AsyncIterator[Kube]:
    client = Kube(await connect(private_stack.kubeconfig), field_manager="aim-tests")
    try:
        yield client
    finally:
        await client.close()


async def _decisions(servers: LocalServers, namespace: str) -> list[Decision]:
    """Every decision recorded about an object of ``namespace`` (the stream holds them all)."""
    nc = await connect_as(servers.nats)
    try:
        js = nc.jetstream()
        wanted = f"{subjects.DECISIONS_PREFIX}.*.*.*.{subjects.escape(namespace)}.*"
        config = ConsumerConfig(filter_subject=wanted, deliver_policy=DeliverPolicy.ALL)
        sub = await js.pull_subscribe(wanted, stream=topology.DECISIONS_STREAM, config=config)
        pending = (await sub.consumer_info()).num_pending or 0
        found: list[Decision] = []
        while len(found) < pending:
            for msg in await sub.fetch(pending - len(found), timeout=10):
                found.append(Decision.model_validate_json(msg.data))
                await msg.ack()
        await sub.unsubscribe()
        return found
    finally:
        await nc.close()


async def _fill(kube: Kube) -> None:
    """The namespace's AIM objects: a model from spec metadata (its templates generated), a CPU
    template with a source nobody serves, a service that caches it."""
    for name in ("aim-system", NS):  # the operator's namespace, then the test's
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    image = "this-registry-does-not-exist-12345.invalid/fake-model:v1"
    await kube.create(
        MODEL, manifest(MODEL, "spec-meta", NS, {"image": image, "imageMetadata": METADATA}), NS
    )
    metadata = {"model": {"canonicalName": "acme/m"}}  # no registry to read, no template of its own
    await kube.create(
        MODEL, manifest(MODEL, "m", NS, {"image": "ghcr.io/acme/llama:1.0", "imageMetadata": metadata}), NS
    )
    sources = [
        {
            "modelId": "acme/missing",
            "sourceUri": "hf://acme/missing",
            "env": [{"name": "HF_ENDPOINT", "value": "http://127.0.0.1:9"}],  # nothing listens
        }
    ]
    spec = {"modelName": "m", "metric": "latency", "precision": "fp16", "modelSources": sources}
    await kube.create(TEMPLATE, manifest(TEMPLATE, "t", NS, spec), NS)
    body = {"model": {"name": "m"}, "template": {"name": "t"}, "caching": {"mode": "Always"}}
    await kube.create(SERVICE, manifest(SERVICE, "svc", NS, body), NS)


async def test_deleting_a_namespace_full_of_aim_objects_finishes_without_cleanup(
    private_stack: LocalServers, stack: Services, kube: Kube
) -> None:
    await bound(private_stack, stack)
    await _fill(kube)

    model = await status_of(
        kube,
        MODEL,
        NS,
        "spec-meta",
        lambda s: condition(s, "ImageMetadataReady").get("status") == "True",
        "metadata",
    )
    assert model["status"]["imageMetadata"]["model"]["canonicalName"] == "spec-provided-model"

    async def generated() -> list[dict[str, Any]]:
        items = (await kube.list(TEMPLATE, NS))[0]
        return [t for t in items if t["spec"].get("modelName") == "spec-meta"]

    assert await eventually(generated, timeout=45, what="the model's generated templates")

    async def held() -> dict[str, Any] | None:
        svc = await kube.get(SERVICE, NS, "svc")
        caches = (await kube.list(TEMPLATE_CACHE, NS))[0]
        if svc is None or SERVICE_FINALIZER not in (svc["metadata"].get("finalizers") or []):
            return None
        held = [c for c in caches if CACHE_FINALIZER in (c["metadata"].get("finalizers") or [])]
        model_caches = (await kube.list(MODEL_CACHE, NS))[0] + (await kube.list(ARTIFACT, NS))[0]
        return held[0] if held and model_caches else None

    try:
        cache = await eventually(held, timeout=60, what="the service's and its template cache's finalizers")
    except AssertionError as exc:
        svc = await kube.get(SERVICE, NS, "svc")
        template = await kube.get(TEMPLATE, NS, "t")
        raise AssertionError(f"{exc}; service: {svc}; template: {template}") from None
    assert cache["metadata"]["labels"]["aim.eai.amd.com/service"] == "svc"
    assert cache.get("status", {}).get("status") != "Ready"  # the cleanup would delete its model cache

    await kube.delete(NAMESPACE, None, NS)
    terminating = await kube.get(NAMESPACE, None, NS)
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")

    async def gone() -> bool:
        return await kube.get(NAMESPACE, None, NS) is None

    await eventually(gone, timeout=GONE_WITHIN, interval=0.5, what=f"namespace {NS} to be gone")
    cleanups = [d for d in await _decisions(private_stack, NS) if d.reason == "CleanupNotReady"]
    assert cleanups == [], [d.message for d in cleanups]
    stack.assert_alive()
