"""The registry-sync service as a real process: AIMClusterModelSources against a real registry.

AIMClusterModels are cluster-scoped and shared by the session, so every test uses its own
repository names and source name (a random suffix) and deletes what it created."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.local.registry import Registry
from aim_dev.testing.oci import push_image
from aim_registry_sync.filters import Image
from aimcore.api.bus import subjects
from aimcore.api.kinds import NAMESPACE, SECRET, by_kind
from aimcore.runtime import ApiException, Kube
from tests.file_server import FileServer
from tests.helpers import api_requests, eventually, stored_messages
from tests.integration.conftest import ensure_service

SOURCE = by_kind("aim.eai.amd.com", "AIMClusterModelSource")
MODEL = by_kind("aim.eai.amd.com", "AIMClusterModel")
SOURCE_LABEL = "aim.eai.amd.com/model-source"
SYSTEM_NS = "aim-system"  # where the services look for pull secrets (AIM_SYSTEM_NAMESPACE)


@pytest.fixture
async def sync_running(running, js: JetStreamContext):  # type: ignore[no-untyped-def]
    """The session's services plus registry-sync (started once, then shared)."""
    return await ensure_service(running, js, "registry-sync")


@pytest.fixture
async def sources(kube: Kube) -> AsyncIterator[list[str]]:
    """Names of the sources a test creates; they and their models are deleted afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        await kube.delete(SOURCE, None, name)
        models, _ = await kube.list(MODEL, label_selector=f"{SOURCE_LABEL}={name}")
        for model in models:
            await kube.delete(MODEL, None, model["metadata"]["name"])


def suffix() -> str:
    return secrets.token_hex(3)


async def create_source(kube: Kube, sources: list[str], name: str, spec: dict[str, Any]) -> None:
    body = {"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": SOURCE.kind, "metadata": {"name": name}}
    sources.append(name)
    await kube.create(SOURCE, {**body, "spec": spec})


async def status_when(kube: Kube, name: str, predicate: Any, what: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        obj = await kube.get(SOURCE, None, name)
        status = (obj or {}).get("status") or {}
        return status if status and predicate(status) else None

    return await eventually(probe, timeout=30, what=what)


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions") or [] if c["type"] == kind)


async def models_of(kube: Kube, source: str) -> dict[str, dict[str, Any]]:
    models, _ = await kube.list(MODEL, label_selector=f"{SOURCE_LABEL}={source}")
    return {m["metadata"]["name"]: m for m in models}


async def sync_decisions(js: JetStreamContext, source: str) -> list[dict[str, Any]]:
    """The source's sync decisions the stream holds (read to ``num_pending == 0``), oldest first."""
    subject = subjects.decision_subject("registry-sync", SOURCE, None, source)
    decisions = [json.loads(msg.data) for msg in await stored_messages(js, subject)]
    return [d for d in decisions if d["action"] == "sync"]


async def test_wildcard_exclude_and_range_create_exactly_the_matching_models(  # type: ignore[no-untyped-def]
    sync_running, kube: Kube, js: JetStreamContext, oci_registry: Registry, sources: list[str]
) -> None:
    org = f"rs{suffix()}"
    for repo, tags in {
        f"{org}/aim-llama": ["0.7.0", "0.8.0", "0.9.1", "1.0.0-rc1", "1.0.0", "latest"],
        f"{org}/aim-qwen": ["v0.8.5"],
        f"{org}/aim-base": ["0.8.0"],  # excluded
        f"{org}/other": ["0.8.0"],  # does not match the pattern
    }.items():
        for tag in tags:
            push_image(oci_registry.url, repo, tag)
    name = f"src-{org}"
    await create_source(
        kube,
        sources,
        name,
        {
            "registry": oci_registry.host,
            "filters": [{"image": f"{org}/aim-*", "exclude": [f"{org}/aim-base"]}],
            "versions": [">=0.8.0 <1.0.0"],
        },
    )
    status = await status_when(kube, name, lambda s: s.get("status") == "Ready", "the source Ready")

    expected = [
        Image(oci_registry.host, f"{org}/aim-llama", "0.9.1"),
        Image(oci_registry.host, f"{org}/aim-llama", "0.8.0"),
        Image(oci_registry.host, f"{org}/aim-qwen", "v0.8.5"),
    ]
    models = await models_of(kube, name)
    assert sorted(models) == sorted(i.model_name for i in expected)
    for image in expected:
        model = models[image.model_name]
        assert model["spec"]["image"] == f"{oci_registry.host}/{image.repository}:{image.tag}"
        assert model["metadata"]["labels"][SOURCE_LABEL] == name
        assert model["metadata"]["labels"]["aim.eai.amd.com/origin"] == "auto-generated"
        assert {k: v for k, v in model["metadata"]["annotations"].items() if "source-" in k} == {
            "aim.eai.amd.com/source-registry": oci_registry.host,
            "aim.eai.amd.com/source-repository": image.repository,
            "aim.eai.amd.com/source-tag": image.tag,
        }
    assert models[expected[0].model_name]["metadata"]["name"].startswith(f"{org}-aim-llama-0-9-1-")
    assert status["discoveredModels"] == 3
    assert status["availableModels"] == 3
    assert status["modelsLimitReached"] is False
    assert status["lastSyncTime"]
    assert condition(status, "Ready")["status"] == "True"
    assert condition(status, "Ready")["reason"] == "Synced"
    assert condition(status, "RegistryReachable")["status"] == "True"
    assert condition(status, "MaxModelsLimitReached")["status"] == "False"

    first = await eventually(lambda: sync_decisions(js, name), what="the first sync decision")
    assert sorted(first[0]["details"]["created"]) == sorted(i.uri for i in expected)

    # a second reconcile (forced by touching an annotation) creates nothing new
    await kube.patch(SOURCE, None, name, {"metadata": {"annotations": {"test/touch": "1"}}})

    async def second_sync() -> list[dict[str, Any]] | None:
        found = await sync_decisions(js, name)
        return found if len(found) >= 2 else None

    decisions = await eventually(second_sync, what="a second sync decision")
    assert decisions[1]["details"]["created"] == []
    assert sorted(decisions[1]["details"]["present"]) == sorted(i.uri for i in expected)
    assert sorted(await models_of(kube, name)) == sorted(models)


async def test_max_models_stops_creation_and_says_so(  # type: ignore[no-untyped-def]
    sync_running, kube: Kube, oci_registry: Registry, sources: list[str]
) -> None:
    org = f"rs{suffix()}"
    for tag in ("1.0.0", "1.1.0", "1.2.0"):
        push_image(oci_registry.url, f"{org}/model", tag)
    name = f"src-{org}"
    await create_source(
        kube,
        sources,
        name,
        {"registry": oci_registry.host, "filters": [{"image": f"{org}/model"}], "maxModels": 2},
    )
    status = await status_when(kube, name, lambda s: "modelsLimitReached" in s, "the sync's counts")
    assert status["modelsLimitReached"] is True
    assert status["discoveredModels"] == 2
    assert status["availableModels"] == 3
    limit = condition(status, "MaxModelsLimitReached")
    assert (limit["status"], limit["reason"]) == ("True", "LimitReached")
    assert f"{oci_registry.host}/{org}/model:1.0.0" in limit["message"]  # the oldest is left out
    models = await models_of(kube, name)
    assert sorted(m["spec"]["image"].rsplit(":", 1)[1] for m in models.values()) == ["1.1.0", "1.2.0"]


async def test_invalid_version_constraint_is_reported(  # type: ignore[no-untyped-def]
    sync_running, kube: Kube, oci_registry: Registry, sources: list[str]
) -> None:
    name = f"src-invalid-{suffix()}"
    await create_source(
        kube,
        sources,
        name,
        {"registry": oci_registry.host, "filters": [{"image": "x/y", "versions": [">=banana"]}]},
    )
    status = await status_when(kube, name, lambda s: s.get("status") == "Failed", "the source Failed")
    ready = condition(status, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "InvalidFilter")
    assert "filters[0].versions" in ready["message"] and "'>=banana'" in ready["message"]
    assert condition(status, "ConfigValid")["reason"] == "InvalidFilter"
    assert await models_of(kube, name) == {}


async def test_unreachable_registry_is_reported(  # type: ignore[no-untyped-def]
    sync_running, kube: Kube, sources: list[str]
) -> None:
    name = f"src-unreachable-{suffix()}"
    await create_source(kube, sources, name, {"registry": "127.0.0.1:1", "filters": [{"image": "org/*"}]})
    status = await status_when(kube, name, lambda s: s.get("status") == "Failed", "the source Failed")
    ready = condition(status, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "RegistryUnreachable")
    assert "127.0.0.1:1" in ready["message"]
    reachable = condition(status, "RegistryReachable")
    assert (reachable["status"], reachable["reason"]) == ("False", "RegistryUnreachable")


async def _system_namespace(kube: Kube) -> str:
    try:
        await kube.create(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}}
        )
    except ApiException as exc:
        if exc.status != 409:
            raise
    return SYSTEM_NS


async def _pull_secret(kube: Kube, name: str, registry: Registry, password: str) -> None:
    auth = base64.b64encode(f"{registry.username}:{password}".encode()).decode()
    config = {"auths": {registry.host: {"auth": auth}}}
    await kube.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": name, "namespace": await _system_namespace(kube)},
            "data": {".dockerconfigjson": base64.b64encode(json.dumps(config).encode()).decode()},
        },
    )


async def test_pull_secrets_missing_wrong_and_right(  # type: ignore[no-untyped-def]
    sync_running, kube: Kube, oci_registry_auth: Registry, sources: list[str]
) -> None:
    registry = oci_registry_auth
    assert registry.auth is not None and registry.password is not None
    org = f"priv{suffix()}"
    push_image(registry.url, f"{org}/aim-private", "0.9.0", auth=registry.auth)
    spec = {"registry": registry.host, "filters": [{"image": f"{org}/aim-*"}]}

    missing = f"src-nosecret-{suffix()}"
    await create_source(
        kube, sources, missing, {**spec, "imagePullSecrets": [{"name": f"absent-{suffix()}"}]}
    )
    status = await status_when(
        kube, missing, lambda s: s.get("status") == "Failed", "a missing secret reported"
    )
    assert condition(status, "Ready")["reason"] == "SecretNotFound"

    wrong_password = f"wrong-{secrets.token_hex(8)}"
    wrong_secret = f"wrong-{suffix()}"
    await _pull_secret(kube, wrong_secret, registry, wrong_password)
    wrong = f"src-wrong-{suffix()}"
    await create_source(kube, sources, wrong, {**spec, "imagePullSecrets": [{"name": wrong_secret}]})
    status = await status_when(
        kube, wrong, lambda s: s.get("status") == "Failed", "wrong credentials reported"
    )
    ready = condition(status, "Ready")
    assert ready["reason"] == "AuthFailed"
    assert wrong_password not in json.dumps(status)  # secrets never reach status
    assert await models_of(kube, wrong) == {}

    right_secret = f"right-{suffix()}"
    await _pull_secret(kube, right_secret, registry, registry.password)
    right = f"src-right-{suffix()}"
    await create_source(kube, sources, right, {**spec, "imagePullSecrets": [{"name": right_secret}]})
    await status_when(kube, right, lambda s: s.get("status") == "Ready", "the private registry synced")
    models = await models_of(kube, right)
    assert [m["spec"]["image"] for m in models.values()] == [f"{registry.host}/{org}/aim-private:0.9.0"]
    for secret in (wrong_secret, right_secret):
        await kube.delete(SECRET, SYSTEM_NS, secret)


async def test_registries_the_outbound_policy_refuses_are_reported(  # type: ignore[no-untyped-def]
    sync_running, kube: Kube, sources: list[str], other_host: FileServer
) -> None:
    """A source naming the metadata service or a host the operator does not allow fails with
    ``AddressNotAllowed``; registry-sync never connects there."""
    registries = {
        f"src-metadata-{suffix()}": "169.254.169.254",
        f"src-other-{suffix()}": f"127.0.0.2:{other_host.server_address[1]}",
    }
    for name, registry in registries.items():
        await create_source(kube, sources, name, {"registry": registry, "filters": [{"image": "org/*"}]})
    for name, registry in registries.items():
        status = await status_when(kube, name, lambda s: s.get("status") == "Failed", f"{name} Failed")
        ready, reachable = condition(status, "Ready"), condition(status, "RegistryReachable")
        assert (ready["status"], ready["reason"]) == ("False", "AddressNotAllowed")
        assert (reachable["status"], reachable["reason"]) == ("False", "AddressNotAllowed")
        assert registry.split(":")[0] in ready["message"]
        assert await models_of(kube, name) == {}
    assert other_host.requests == []


async def test_a_model_another_source_holds_is_not_posted_again_on_every_sync(  # type: ignore[no-untyped-def]
    sync_running, kube: Kube, js: JetStreamContext, oci_registry: Registry, sources: list[str]
) -> None:
    """Two sources matching one image: the second finds the model held by the first. Before
    (issue 24), every sync of the second POSTed it again and got 409 (8 refused creates a minute
    on an idle system); now it reads the informer cache and posts nothing. Each sync is forced by
    touching an annotation and waited for (its decision record); the API server counts the POSTs."""
    repository = f"dup{suffix()}/aim-llama"
    push_image(oci_registry.url, repository, "1.0.0")
    spec = {"registry": oci_registry.host, "filters": [{"image": f"{repository}:1.0.0"}]}
    first, second = f"src-first-{suffix()}", f"src-second-{suffix()}"
    await create_source(kube, sources, first, spec)
    await status_when(kube, first, lambda s: s.get("discoveredModels") == 1, "the first source's model")
    posts = await api_requests(kube, "POST", "aimclustermodels")

    await create_source(kube, sources, second, spec)
    for sync in range(1, 5):
        if sync > 1:  # a metadata change starts a sync at once
            touch = {"metadata": {"annotations": {"test.aim/touch": str(sync)}}}
            await kube.patch(SOURCE, None, second, touch)

        async def synced(count: int = sync) -> list[dict[str, Any]] | None:
            found = await sync_decisions(js, second)
            return found if len(found) >= count else None

        decision = (await eventually(synced, timeout=30, what=f"sync {sync} of the second source"))[-1]
        assert decision["details"]["ownedByAnotherSource"] == [f"{oci_registry.host}/{repository}:1.0.0"], (
            decision
        )
    assert await api_requests(kube, "POST", "aimclustermodels") == posts  # before: one 409 per sync
    assert await models_of(kube, second) == {}
