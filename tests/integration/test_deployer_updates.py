"""Edits of a running AIMService reach its InferenceService in place (issue 39.3): the deployer is a
real process against a real API server; the tests play KServe, the discovery and the cache services
as :mod:`tests.integration.test_deployer` does.

Each edit must update the existing InferenceService (same uid: an update, not a new object), its
autoscaler annotations included, and keep the cache volume it mounts; ``status.runtime`` follows.
The env order is asserted on the predictor under each generation's behaviour (``AIM_BEHAVIOUR``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_deployer.replica_status import Replicas
from aimcore.api.kinds import INFERENCE_SERVICE
from aimcore.runtime import Kube
from tests.helpers import eventually, has, manifest
from tests.integration import test_deployer
from tests.integration.conftest import Services, restarted_with
from tests.integration.test_deployer import (
    RUNTIME_CONFIG,
    SERVICE,
    TEMPLATE,
    TEMPLATE_CACHE,
    container,
    env_of,
    isvc_of,
    make_model,
    make_service,
    make_template,
    play_kserve,
    ready,
    wait_service,
)
from tests.integration.test_deployer_replicas import runtime_is

deployer = test_deployer.deployer  # the fixture: the session's services, discovery and cache stopped

CLASS = "serving.kserve.io/autoscalerClass"
OTEL = "sidecar.opentelemetry.io/inject"


async def updated(
    kube: Kube, namespace: str, name: str, check: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """The InferenceService ``name`` once ``check`` holds for it."""

    async def probe() -> dict[str, Any] | None:
        obj = await kube.get(INFERENCE_SERVICE, namespace, name)
        return obj if obj is not None and check(obj) else None

    found: dict[str, Any] = await eventually(probe, timeout=30, what=what)
    return found


def bounds(isvc: dict[str, Any]) -> tuple[int, int, str | None]:
    predictor = isvc["spec"]["predictor"]
    return predictor["minReplicas"], predictor["maxReplicas"], isvc["metadata"]["annotations"].get(CLASS)


async def test_replicas_and_autoscaling_bounds_update_the_running_inference_service(
    deployer: Services, kube: Kube, namespace: str
) -> None:
    await make_model(kube, namespace, "up")
    await make_template(kube, namespace, "up-t", "up")
    await make_service(kube, namespace, "svc", {"model": {"name": "up"}, "replicas": 1})
    isvc = await isvc_of(kube, namespace, "svc")
    name, uid = isvc["metadata"]["name"], isvc["metadata"]["uid"]
    assert bounds(isvc) == (1, 1, "none")
    await play_kserve(kube, namespace, isvc)
    await wait_service(kube, namespace, "svc", lambda s: s.get("status") == "Running", "Running")

    steps: list[tuple[dict[str, Any], tuple[int, int, str], Replicas]] = [
        ({"replicas": 2}, (2, 2, "none"), Replicas(2, 2, 2, 0)),
        # the same bounds, autoscaled: only the autoscaler class changes, and it must
        ({"replicas": None, "minReplicas": 2}, (2, 2, "keda"), Replicas(2, 2, 2, 0)),
        ({"minReplicas": 1, "maxReplicas": 3}, (1, 3, "keda"), Replicas(1, 3, 1, 0)),
        ({"minReplicas": 2, "maxReplicas": 5}, (2, 5, "keda"), Replicas(2, 5, 2, 0)),
        ({"minReplicas": None, "maxReplicas": None, "replicas": 3}, (3, 3, "none"), Replicas(3, 3, 3, 0)),
    ]
    for patch, want, runtime in steps:
        await kube.patch(SERVICE, namespace, "svc", {"spec": patch})
        now = await updated(kube, namespace, name, _at(want), f"{name} at {want}")
        assert now["metadata"]["uid"] == uid, "updated in place, not made again"
        scaled = want[2] == "keda"
        assert (OTEL in now["metadata"]["annotations"]) is scaled, now["metadata"]["annotations"]
        await wait_service(kube, namespace, "svc", runtime_is(**runtime.wire()), f"status.runtime {runtime}")


async def test_env_and_resources_edits_reach_the_running_inference_service_in_the_seeds_order(
    deployer: Services, kube: Kube, namespace: str
) -> None:
    await make_model(kube, namespace, "ev")
    await make_template(kube, namespace, "ev-t", "ev", env=[{"name": "LAYER", "value": "template"}])
    config = {"env": [{"name": "LAYER", "value": "config"}, {"name": "FROM_CONFIG", "value": "1"}]}
    await kube.create(RUNTIME_CONFIG, manifest(RUNTIME_CONFIG, "default", namespace, config), namespace)
    await make_service(kube, namespace, "ev", {"model": {"name": "ev"}})
    isvc = await isvc_of(kube, namespace, "ev")
    name, uid = isvc["metadata"]["name"], isvc["metadata"]["uid"]
    env = env_of(isvc)
    # the seeds' order: template < runtime config < service
    assert (env["LAYER"], env["FROM_CONFIG"], env["AIM_METRIC"]) == ("config", "1", "latency")
    await play_kserve(kube, namespace, isvc)

    # the service's env and resources
    spec = {"env": [{"name": "FROM_SERVICE", "value": "s"}], "resources": {"limits": {"memory": "64Gi"}}}
    await kube.patch(SERVICE, namespace, "ev", {"spec": spec})
    now = await updated(
        kube, namespace, name, lambda i: env_of(i).get("FROM_SERVICE") == "s", "the service's env on it"
    )
    assert now["metadata"]["uid"] == uid
    assert container(now)["resources"]["limits"]["memory"] == "64Gi"

    # the runtime config's env
    await kube.patch(
        RUNTIME_CONFIG, namespace, "default", {"spec": {"env": [{"name": "LAYER", "value": "c2"}]}}
    )
    now = await updated(kube, namespace, name, lambda i: env_of(i).get("LAYER") == "c2", "the config's env")
    assert now["metadata"]["uid"] == uid and "FROM_CONFIG" not in env_of(now)

    # the template's env (seeds: below the runtime config's, so only a name of its own shows)
    template_env = [{"name": "LAYER", "value": "t2"}, {"name": "FROM_TEMPLATE", "value": "t"}]
    await kube.patch(TEMPLATE, namespace, "ev-t", {"spec": {"env": template_env}})
    now = await updated(
        kube, namespace, name, lambda i: env_of(i).get("FROM_TEMPLATE") == "t", "template env"
    )
    assert now["metadata"]["uid"] == uid and env_of(now)["LAYER"] == "c2"

    # the service's env is above all
    await kube.patch(SERVICE, namespace, "ev", {"spec": {"env": [{"name": "LAYER", "value": "svc"}]}})
    now = await updated(kube, namespace, name, lambda i: env_of(i).get("LAYER") == "svc", "service env wins")
    assert now["metadata"]["uid"] == uid
    names = [e["name"] for e in container(now)["env"]]
    assert names == sorted(set(names)), names


@pytest.fixture
async def released(deployer: Services, js: JetStreamContext) -> AsyncIterator[Services]:
    """The deployer restarted with ``AIM_BEHAVIOUR=released`` for one test, then as it was."""
    async with restarted_with(deployer, js, "deployer", {"AIM_BEHAVIOUR": "released"}) as services:
        yield services


async def test_env_order_of_the_released_original(released: Services, kube: Kube, namespace: str) -> None:
    await make_model(kube, namespace, "rel")
    template_env = [{"name": "LAYER", "value": "template"}, {"name": "AIM_METRIC", "value": "from-template"}]
    await make_template(kube, namespace, "rel-t", "rel", env=template_env, profileId="rel-profile")
    config = {"env": [{"name": "LAYER", "value": "config"}, {"name": "AIM_PROFILE_ID", "value": "config"}]}
    await kube.create(RUNTIME_CONFIG, manifest(RUNTIME_CONFIG, "default", namespace, config), namespace)
    await make_service(
        kube, namespace, "rel", {"model": {"name": "rel"}, "env": [{"name": "S", "value": "s"}]}
    )
    # released: unset caching is Shared, and the InferenceService waits for a Ready template cache
    await wait_service(kube, namespace, "rel", test_deployer.CACHE_COMING, "creating its cache")
    tc = (await kube.list(TEMPLATE_CACHE, namespace))[0][0]["metadata"]["name"]
    entry = {
        "name": "mc-rel",
        "status": "Ready",
        "persistentVolumeClaim": "mc-rel-cache",
        "model": "acme/llama",
        "mountPoint": "/workspace/cache/acme/llama",
    }
    status = {"status": "Ready", "modelCaches": {"acme/llama": entry}}
    await ready(kube, TEMPLATE_CACHE, namespace, tc, status)
    env = env_of(await isvc_of(kube, namespace, "rel"))
    # defaults < runtime config < profile id/metric/precision < template env < service env
    assert env["LAYER"] == "template"
    assert env["AIM_PROFILE_ID"] == "rel-profile"
    assert (env["AIM_METRIC"], env["AIM_PRECISION"]) == ("from-template", "fp8")
    assert env["S"] == "s" and env["AIM_CACHE_PATH"] == "/workspace/cache"


async def test_an_update_keeps_the_cache_volume_the_inference_service_mounts(
    deployer: Services, kube: Kube, namespace: str
) -> None:
    await make_model(kube, namespace, "kc")
    await make_template(kube, namespace, "kc-t", "kc")
    await make_service(kube, namespace, "kc", {"model": {"name": "kc"}, "caching": {"mode": "Always"}})
    await wait_service(kube, namespace, "kc", test_deployer.CACHE_COMING, "creating its cache")
    tc = (await kube.list(TEMPLATE_CACHE, namespace))[0][0]["metadata"]["name"]
    entry = {
        "name": "mc-1",
        "status": "Ready",
        "persistentVolumeClaim": "mc-1-cache",
        "model": "acme/llama",
        "mountPoint": "/workspace/model-cache/acme/llama",
    }
    await ready(
        kube, TEMPLATE_CACHE, namespace, tc, {"status": "Ready", "modelCaches": {"acme/llama": entry}}
    )
    isvc = await isvc_of(kube, namespace, "kc")
    name, uid = isvc["metadata"]["name"], isvc["metadata"]["uid"]
    mounted = await updated(kube, namespace, name, lambda i: _mounts(i).get("mc-1") is not None, "mounted")
    await play_kserve(kube, namespace, mounted)
    await wait_service(kube, namespace, "kc", has("CacheReady", "True", "CacheReady"), "cache ready")

    # the template cache's entry is briefly not Ready (its model cache re-made): the cache lists no
    # volume, and the service is edited meanwhile
    await ready(
        kube, TEMPLATE_CACHE, namespace, tc, {"modelCaches": {"acme/llama": {"status": "Progressing"}}}
    )
    await kube.patch(SERVICE, namespace, "kc", {"spec": {"replicas": 2}})
    now = await updated(kube, namespace, name, lambda i: bounds(i)[0] == 2, "the update applied")
    assert now["metadata"]["uid"] == uid
    assert _mounts(now)["mc-1"] == "/workspace/model-cache/acme/llama", _mounts(now)
    claims = {v["name"]: v.get("persistentVolumeClaim") for v in now["spec"]["predictor"]["volumes"]}
    assert claims["mc-1"] == {"claimName": "mc-1-cache"}


async def test_an_edit_reaches_a_running_inference_service_while_a_cache_fills(
    deployer: Services, kube: Kube, namespace: str
) -> None:
    """Running without a cache (Auto found none), then a template cache of its template appears and
    fills: the service reports the cache, and its edits still reach the InferenceService."""
    await make_model(kube, namespace, "fc")
    await make_template(kube, namespace, "fc-t", "fc")
    await make_service(kube, namespace, "fc", {"model": {"name": "fc"}})
    isvc = await isvc_of(kube, namespace, "fc")
    name, uid = isvc["metadata"]["name"], isvc["metadata"]["uid"]
    await play_kserve(kube, namespace, isvc)
    await wait_service(kube, namespace, "fc", has("CacheReady", "True", "NoCache"), "no cache")

    body = manifest(TEMPLATE_CACHE, "fc-cache", namespace, {"templateName": "fc-t"})
    await kube.create(TEMPLATE_CACHE, body, namespace)
    await ready(kube, TEMPLATE_CACHE, namespace, "fc-cache", {"status": "Progressing"})
    await wait_service(kube, namespace, "fc", has("CacheReady", "False", "CacheNotReady"), "cache filling")
    await kube.patch(SERVICE, namespace, "fc", {"spec": {"env": [{"name": "EDITED", "value": "1"}]}})
    now = await updated(
        kube, namespace, name, lambda i: env_of(i).get("EDITED") == "1", "edited while filling"
    )
    assert now["metadata"]["uid"] == uid


def _at(want: tuple[int, int, str]) -> Callable[[dict[str, Any]], bool]:
    return lambda isvc: bounds(isvc) == want


def _mounts(isvc: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container(isvc).get("volumeMounts") or []}
