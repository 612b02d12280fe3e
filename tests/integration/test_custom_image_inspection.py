"""A custom model's base image (issue 39, point 5), with discovery as a real process against a real
registry and API server, under each behaviour (``AIM_BEHAVIOUR``, a stack of the test's own): the
seeds never read it (a missing image changes nothing); the released behaviour reads it, so an image
without AIM labels is ``ImageFound`` and the model Ready, and a missing one is
``BaseImageNotFound``, the model Degraded with no template made for it, and a template made by hand
Degraded with ``ModelReady=False/ModelFailed``."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from aim_dev.local.registry import Registry
from aim_dev.testing.oci import push_image
from aim_dev.testing.plugin import LocalServers
from aimcore.api.kinds import NAMESPACE, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import condition, eventually, manifest, status_of
from tests.integration.conftest import Services, bound, drained, own_services

AIM = "aim.eai.amd.com"
MODEL = by_kind(AIM, "AIMModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
NS = "custom-images"
SOURCES = [{"modelId": "acme/custom-1b", "sourceUri": "s3://models/acme/custom-1b", "size": "2Gi"}]
HARDWARE = {"cpu": {"requests": "500m", "limits": "2000m"}}


@pytest.fixture(params=["seeds", "released"])
def behaviour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stack(behaviour: str, private_stack: LocalServers, tmp_path: Path) -> Iterator[Services]:
    with own_services(
        private_stack, ("watcher", "status", "discovery"), {"AIM_BEHAVIOUR": behaviour}
    ) as services:
        yield services


@pytest.fixture
async def kube(private_stack: LocalServers, stack: Services) -> AsyncIterator[Kube]:
    client = Kube(await connect(private_stack.kubeconfig), field_manager="aim-tests")
    try:
        await bound(private_stack, stack, "discovery")
        for name in ("aim-system", NS):
            await client.create(
                NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
        yield client
    finally:
        await client.close()


async def _custom_model(kube: Kube, name: str, image: str) -> None:
    spec = {"image": image, "modelSources": SOURCES, "custom": {"hardware": HARDWARE}}
    await kube.create(MODEL, manifest(MODEL, name, NS, spec), NS)


async def _template_of(kube: Kube, model: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        items = [t for t in (await kube.list(TEMPLATE, NS))[0] if t["spec"].get("modelName") == model]
        return items[0] if items else None

    return await eventually(found, timeout=45, what=f"the template of {model}")


async def test_a_custom_models_base_image(
    behaviour: str, kube: Kube, oci_registry: Registry, private_stack: LocalServers
) -> None:
    repo = f"aim-base-{secrets.token_hex(3)}"
    push_image(oci_registry.url, repo, "0.9")  # no AIM labels
    await _custom_model(kube, "plain", f"{oci_registry.host}/{repo}:0.9")
    await _custom_model(kube, "missing", f"{oci_registry.host}/{repo}:0")  # never pushed

    plain = await status_of(kube, MODEL, NS, "plain", lambda s: s.get("status") == "Ready", "plain Ready")
    assert plain["status"]["sourceType"] == "Custom"
    found = condition(plain["status"], "ImageMetadataReady")
    template = await _template_of(kube, "plain")
    # issue 39, point 8: the template as the original writes it, quantities as Kubernetes does
    assert template["spec"]["hardware"] == {"cpu": {"requests": "500m", "limits": "2"}}
    assert template["spec"]["type"] == "unoptimized"
    if behaviour == "seeds":
        assert (found["status"], found["reason"]) == ("True", "ExtractionDisabled")
        missing = await status_of(kube, MODEL, NS, "missing", lambda s: s.get("status") == "Ready", "Ready")
        assert condition(missing["status"], "ImageMetadataReady")["reason"] == "ExtractionDisabled"
        return
    assert (found["status"], found["reason"]) == ("True", "ImageFound")

    def degraded(status: dict[str, Any]) -> bool:
        return (
            status.get("status") == "Degraded"
            and condition(status, "ImageMetadataReady").get("status") == "False"
        )

    missing = await status_of(kube, MODEL, NS, "missing", degraded, "missing Degraded")
    assert missing["status"]["sourceType"] == "Custom"
    assert condition(missing["status"], "ImageMetadataReady")["reason"] == "BaseImageNotFound"
    # no template is made while the image cannot be read (the released original's order: one made
    # now would be Ready for a moment, and a service could select it)
    await drained(private_stack, "discovery")
    assert [t for t in (await kube.list(TEMPLATE, NS))[0] if t["spec"].get("modelName") == "missing"] == []
    waiting = condition((await kube.get(MODEL, NS, "missing") or {})["status"], "ServiceTemplatesReady")
    assert (waiting["status"], waiting["reason"]) == ("False", "AwaitingMetadata"), waiting
    assert "BaseImageNotFound" in waiting["message"], waiting
    # a template a user makes for it (as the original's own test does) takes the model's failure
    name = "missing-tpl"
    spec = {"modelName": "missing", "type": "unoptimized", "hardware": HARDWARE, "modelSources": SOURCES}
    await kube.create(TEMPLATE, manifest(TEMPLATE, name, NS, spec), NS)

    def inherited(status: dict[str, Any]) -> bool:
        said = condition(status, "ModelReady")
        return status.get("status") == "Degraded" and (said.get("status"), said.get("reason")) == (
            "False",
            "ModelFailed",
        )

    failed = await status_of(kube, TEMPLATE, NS, name, inherited, "the template Degraded by its model")
    assert "is Degraded" in condition(failed["status"], "ModelReady")["message"]
    # the model keeps the state of its own failure: its template waits on it, not the other way
    await drained(private_stack, "discovery")
    again = await kube.get(MODEL, NS, "missing")
    assert again is not None and again["status"]["status"] == "Degraded"
    assert condition(again["status"], "ServiceTemplatesReady")["reason"] != "AllTemplatesFailed"
