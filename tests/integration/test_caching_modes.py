"""The caching modes of an AIMService against a real API server (with its garbage collector), the
deployer a real process: Shared template caches are owned by no one and shared, Dedicated ones
are the service's own (named from template and service, deleted with it), each mode ignores the
other's; under ``AIM_BEHAVIOUR=released`` the older modes map as the released original maps them;
``spec.caching``/``spec.template`` are refused once set; a cache deleted under a running service
is made again while the InferenceService keeps its volumes, and the service runs again with the
same InferenceService.

As in ``test_deployer``, the service tests play the cache service (they mark template caches Ready
with their model caches' volumes), KServe and the kubelet; the last test runs the cache service
itself (local executor, a local Hub server), under ``released``, where a Shared template cache
makes its own model cache rather than promoting a Dedicated one's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_deployer.caching import dedicated_cache_name, shared_cache_name
from aim_dev.local.hub import HubServer
from aimcore.api.kinds import EVENT, INFERENCE_SERVICE, by_kind
from aimcore.runtime import Kube
from tests.helpers import condition, eventually, has, manifest
from tests.integration import test_deployer
from tests.integration.conftest import Services, ensure_service, restarted_with
from tests.integration.test_cache import cache_dir, cache_name_of, dedicated_then_shared, model_caches
from tests.integration.test_deployer import (
    CACHE_COMING,
    SERVICE,
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

deployer = test_deployer.deployer  # the fixture: the session's services, discovery and cache stopped
__all__ = ["cache_dir"]  # a fixture of test_cache's: the one cache directory of the session
SERVICE_LABEL = "aim.eai.amd.com/service"
MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
# the template named, not selected: a service that selects one is woken by its template's caches
# only once its status (resolvedTemplate) reaches the deployer, and a cache that changes before
# that is missed (a race of the deployer's, reported with this work, not what these tests test)
MODEL_T = {"model": {"name": "m"}, "template": {"name": "t"}}


@pytest.fixture
async def released(deployer: Services, js: JetStreamContext) -> AsyncIterator[Services]:
    """The deployer restarted with ``AIM_BEHAVIOUR=released`` for one test (the seeds' after it)."""
    async with restarted_with(deployer, js, "deployer", {"AIM_BEHAVIOUR": "released"}) as services:
        yield services


async def caches_of(kube: Kube, namespace: str, service: str) -> list[dict[str, Any]]:
    """The template caches a service created (labelled with it)."""
    items = (await kube.list(TEMPLATE_CACHE, namespace))[0]
    return [i for i in items if i["metadata"].get("labels", {}).get(SERVICE_LABEL) == service]


async def cache_named(kube: Kube, namespace: str, name: str, *, not_uid: str | None = None) -> dict[str, Any]:
    """The template cache ``name`` once it exists (and is not the object with ``not_uid``)."""

    async def probe() -> dict[str, Any] | None:
        obj = await kube.get(TEMPLATE_CACHE, namespace, name)
        return obj if obj is not None and obj["metadata"]["uid"] != not_uid else None

    found: dict[str, Any] = await eventually(probe, timeout=30, what=f"template cache {name}")
    return found


async def fill(kube: Kube, namespace: str, name: str, model_cache: str) -> None:
    """The cache service's part: the template cache is Ready with one model cache and its volume."""
    entry = {
        "name": model_cache,
        "status": "Ready",
        "persistentVolumeClaim": f"{model_cache}-cache",
        "model": "acme/llama",
        "mountPoint": "/workspace/model-cache/acme/llama",
    }
    await ready(
        kube, TEMPLATE_CACHE, namespace, name, {"status": "Ready", "modelCaches": {"acme/llama": entry}}
    )


def claims(isvc: dict[str, Any]) -> set[str]:
    return {
        v["persistentVolumeClaim"]["claimName"]
        for v in isvc["spec"]["predictor"].get("volumes") or []
        if v.get("persistentVolumeClaim")
    }


async def service_uid(kube: Kube, namespace: str, name: str) -> str:
    obj = await kube.get(SERVICE, namespace, name)
    assert obj is not None
    return str(obj["metadata"]["uid"])


def cache_ref(status: dict[str, Any]) -> str | None:
    return ((status.get("cache") or {}).get("templateCacheRef") or {}).get("name")


async def test_dedicated_and_shared_caches_are_apart_and_owned_as_their_mode_says(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    await make_model(kube, namespace, "m")
    await make_template(kube, namespace, "t", "m")
    # a Shared service first: its cache is the namespace's, owned by no one
    await make_service(kube, namespace, "a", {**MODEL_T, "caching": {"mode": "Shared"}})
    shared = await cache_named(kube, namespace, shared_cache_name("t", namespace))
    assert shared["spec"]["mode"] == "Shared"
    assert not shared["metadata"].get("ownerReferences")
    # a Dedicated service ignores it and makes its own, named from template and service
    await make_service(kube, namespace, "solo", {**MODEL_T, "caching": {"mode": "Dedicated"}})
    solo_uid = await service_uid(kube, namespace, "solo")
    own_name = dedicated_cache_name("t", "solo", solo_uid)
    assert own_name.startswith("t-solo-")
    own = await cache_named(kube, namespace, own_name)
    assert own["spec"]["mode"] == "Dedicated"
    (owner,) = own["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("AIMService", "solo", solo_uid)
    # a second Shared service ignores the Dedicated cache and shares the first one's
    await make_service(kube, namespace, "b", {**MODEL_T, "caching": {"mode": "Shared"}})
    await fill(kube, namespace, own_name, "mc-solo")
    await fill(kube, namespace, shared["metadata"]["name"], "mc-shared")
    for name, cache, claim in (
        ("a", shared["metadata"]["name"], "mc-shared-cache"),
        ("b", shared["metadata"]["name"], "mc-shared-cache"),
        ("solo", own_name, "mc-solo-cache"),
    ):
        svc = await wait_service(
            kube, namespace, name, has("CacheReady", "True", "CacheReady"), f"{name} cached"
        )
        assert cache_ref(svc["status"]) == cache
        assert claims(await isvc_of(kube, namespace, name)) == {claim}
    names = {c["metadata"]["name"] for c in (await kube.list(TEMPLATE_CACHE, namespace))[0]}
    assert names == {shared["metadata"]["name"], own_name}

    # the Dedicated cache goes with its service (Ready: the finalizer keeps it, the owner does not);
    # the Shared one outlives both of its users
    for name in ("solo", "a", "b"):
        await kube.delete(SERVICE, namespace, name)

    async def collected() -> bool:
        left = {c["metadata"]["name"] for c in (await kube.list(TEMPLATE_CACHE, namespace))[0]}
        return left == {shared["metadata"]["name"]}

    await eventually(collected, timeout=45, what="the dedicated cache collected, the shared one kept")


async def test_the_services_caching_env_reaches_the_download_and_never_the_predictor(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    """``spec.caching.env`` (the released original's 0.2.6): a token for the download goes into the
    template cache the service makes (whose model caches hand it to their download Jobs), above the
    template's caching env and below the service's own env; the InferenceService never has it."""
    await make_model(kube, namespace, "m")
    caching_env = [{"name": "HF_TOKEN", "value": "template-token"}, {"name": "MIRROR", "value": "t"}]
    await make_template(kube, namespace, "t", "m", caching={"enabled": True, "env": caching_env})
    spec = {
        **MODEL_T,
        "caching": {
            "mode": "Dedicated",
            "env": [{"name": "HF_TOKEN", "value": "download-only"}, {"name": "SHARED", "value": "caching"}],
        },
        "env": [{"name": "SHARED", "value": "service"}],
    }
    await make_service(kube, namespace, "s", spec)
    own = await cache_named(
        kube, namespace, dedicated_cache_name("t", "s", await service_uid(kube, namespace, "s"))
    )
    env = {e["name"]: e.get("value") for e in own["spec"]["env"]}
    assert env == {"HF_TOKEN": "download-only", "MIRROR": "t", "SHARED": "service"}
    await fill(kube, namespace, own["metadata"]["name"], "mc-s")
    await wait_service(kube, namespace, "s", has("CacheReady", "True", "CacheReady"), "s cached")
    predictor = env_of(await isvc_of(kube, namespace, "s"))
    assert "HF_TOKEN" not in predictor and "MIRROR" not in predictor
    assert predictor["SHARED"] == "service"


async def test_the_seeds_modes_are_unchanged(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "m")
    await make_template(kube, namespace, "t", "m")
    await make_service(kube, namespace, "never", {**MODEL_T, "caching": {"mode": "Never"}})
    await make_service(kube, namespace, "auto", MODEL_T)
    for name in ("never", "auto"):  # no cache, deployed at once
        isvc = await isvc_of(kube, namespace, name)
        assert claims(isvc) == set()
        assert env_of(isvc)["AIM_CACHE_PATH"] == "/workspace/model-cache"
    assert (await kube.list(TEMPLATE_CACHE, namespace))[0] == []
    await make_service(kube, namespace, "always", {**MODEL_T, "caching": {"mode": "Always"}})
    tc = await cache_named(kube, namespace, shared_cache_name("t", namespace))
    assert tc["spec"]["mode"] == "Shared" and not tc["metadata"].get("ownerReferences")
    await fill(kube, namespace, tc["metadata"]["name"], "mc")
    mounts = {m["mountPath"] for m in container(await isvc_of(kube, namespace, "always"))["volumeMounts"]}
    assert "/workspace/model-cache/acme/llama" in mounts


async def test_released_maps_the_older_modes_as_the_original(  # type: ignore[no-untyped-def]
    released, kube: Kube, namespace: str
) -> None:
    await make_model(kube, namespace, "m")
    await make_template(kube, namespace, "t", "m")
    for name, caching in (
        ("always", {"caching": {"mode": "Always"}}),
        ("auto", {"caching": {"mode": "Auto"}}),
        ("unset", {}),
        ("never", {"caching": {"mode": "Never"}}),
    ):
        await make_service(kube, namespace, name, {**MODEL_T, **caching})
    never_uid = await service_uid(kube, namespace, "never")
    shared = await cache_named(kube, namespace, shared_cache_name("t", namespace))
    dedicated = await cache_named(kube, namespace, dedicated_cache_name("t", "never", never_uid))
    assert shared["spec"]["mode"] == "Shared" and not shared["metadata"].get("ownerReferences")
    assert dedicated["spec"]["mode"] == "Dedicated"
    assert dedicated["metadata"]["ownerReferences"][0]["uid"] == never_uid
    names = {c["metadata"]["name"] for c in (await kube.list(TEMPLATE_CACHE, namespace))[0]}
    assert names == {shared["metadata"]["name"], dedicated["metadata"]["name"]}
    # no InferenceService before the cache is Ready; then mounted at the original's path
    waiting = await wait_service(kube, namespace, "never", CACHE_COMING, "waiting for its cache")
    assert condition(waiting["status"], "InferenceServiceReady")["reason"] == "AwaitingCache"
    await fill(kube, namespace, dedicated["metadata"]["name"], "mc-never")
    await fill(kube, namespace, shared["metadata"]["name"], "mc-shared")
    for name in ("always", "auto", "unset", "never"):
        isvc = await isvc_of(kube, namespace, name)
        mounts = {m["mountPath"] for m in container(isvc)["volumeMounts"]}
        assert "/workspace/cache/acme/llama" in mounts, name
        assert env_of(isvc)["AIM_CACHE_PATH"] == "/workspace/cache"
    assert claims(await isvc_of(kube, namespace, "never")) == {"mc-never-cache"}
    assert claims(await isvc_of(kube, namespace, "auto")) == {"mc-shared-cache"}


async def test_caching_and_template_are_refused_once_set(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "m")
    await make_template(kube, namespace, "t", "m")
    await make_template(kube, namespace, "t2", "m")
    spec = {"model": {"name": "m"}, "template": {"name": "t"}, "caching": {"mode": "Never"}}
    await make_service(kube, namespace, "fixed", spec)
    isvc = await isvc_of(kube, namespace, "fixed")

    async def recorded() -> bool:
        obj = await kube.get(SERVICE, namespace, "fixed")
        return bool(obj and (obj["metadata"].get("annotations") or {}).get("aim.eai.amd.com/immutable-spec"))

    await eventually(recorded, timeout=30, what="the accepted caching and template recorded")
    for change in ({"caching": {"mode": "Dedicated"}}, {"template": {"name": "t2"}}):
        await kube.patch(SERVICE, namespace, "fixed", {"spec": change})
        refused = await wait_service(
            kube,
            namespace,
            "fixed",
            has("ConfigValid", "False", "ImmutableFieldChanged"),
            f"refused {change}",
        )
        assert refused["status"]["status"] == "Failed"
        field = next(iter(change))
        assert f"spec.{field} is immutable once set" in condition(refused["status"], "ConfigValid")["message"]
        assert (await kube.list(TEMPLATE_CACHE, namespace))[0] == []  # nothing done about the change
        await kube.patch(SERVICE, namespace, "fixed", {"spec": {field: spec[field]}})
        await wait_service(
            kube, namespace, "fixed", has("ConfigValid", "True", "ConfigurationValid"), "set back"
        )
    again = await isvc_of(kube, namespace, "fixed")
    assert again["metadata"]["uid"] == isvc["metadata"]["uid"]
    assert again["spec"] == isvc["spec"]


LOST = {
    "Dedicated": ("CacheCreating", "Dedicated template cache is being recreated"),
    "Shared": (
        "CacheLost",
        "Shared template cache was deleted but InferenceService still references cached storage volumes",
    ),
}


@pytest.mark.parametrize("mode", sorted(LOST))
async def test_a_cache_deleted_under_a_running_service_is_made_again(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str, mode: str
) -> None:
    reason, message = LOST[mode]
    await make_model(kube, namespace, "m")
    await make_template(kube, namespace, "t", "m")
    await make_service(kube, namespace, "s", {**MODEL_T, "caching": {"mode": mode}})
    uid = await service_uid(kube, namespace, "s")
    name = dedicated_cache_name("t", "s", uid) if mode == "Dedicated" else shared_cache_name("t", namespace)
    first = await cache_named(kube, namespace, name)
    await fill(kube, namespace, name, "mc-1")
    isvc = await isvc_of(kube, namespace, "s")
    await eventually(lambda: _with_claims(kube, namespace, "s", {"mc-1-cache"}), timeout=30, what="mounted")
    await play_kserve(kube, namespace, isvc)
    await wait_service(kube, namespace, "s", lambda s: s.get("status") == "Running", "running")

    await kube.delete(TEMPLATE_CACHE, namespace, name)

    async def said() -> bool:  # the status write's Event (the condition may have moved on since)
        events = (await kube.list(EVENT, namespace))[0]
        return any(
            e["involvedObject"].get("uid") == uid
            and e.get("reason") == reason
            and e.get("message") == message
            for e in events
        )

    await eventually(said, timeout=30, what=f"CacheReady=False/{reason}")
    again = await cache_named(kube, namespace, name, not_uid=first["metadata"]["uid"])
    if mode == "Dedicated":
        assert again["metadata"]["ownerReferences"][0]["uid"] == uid
    else:
        assert not again["metadata"].get("ownerReferences")
    kept = await kube.get(INFERENCE_SERVICE, namespace, isvc["metadata"]["name"])
    assert kept is not None and claims(kept) == {"mc-1-cache"}  # the volumes kept meanwhile

    # the new cache is Ready (a Dedicated one with model caches of its own)
    claim = "mc-2" if mode == "Dedicated" else "mc-1"
    await fill(kube, namespace, name, claim)
    back = await wait_service(
        kube,
        namespace,
        "s",
        lambda s: s.get("status") == "Running" and has("CacheReady", "True", "CacheReady")(s),
        "running again",
    )
    assert cache_ref(back["status"]) == name
    now = await eventually(
        lambda: _with_claims(kube, namespace, "s", {f"{claim}-cache"}), timeout=30, what="the new volumes"
    )
    assert now["metadata"]["uid"] == isvc["metadata"]["uid"]  # the same InferenceService


async def test_an_imported_cache_is_mounted_read_only_at_its_directory(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    """A template cache whose model cache imports a claim (``pvc://CLAIM/PATH``): the predictor
    mounts the claim's directory read-only, never the whole claim writable."""
    await make_model(kube, namespace, "m")
    await make_template(kube, namespace, "t", "m")
    paused = {"aim.eai.amd.com/reconciliation-paused": "true"}  # the cache service's part is played
    spec = {"sourceUri": "pvc://shared-weights/acme/llama", "modelId": "acme/llama"}
    await kube.create(
        MODEL_CACHE, manifest(MODEL_CACHE, "imported", namespace, spec, annotations=paused), namespace
    )
    await make_service(kube, namespace, "s", {**MODEL_T, "caching": {"mode": "Shared"}})
    name = shared_cache_name("t", namespace)
    await cache_named(kube, namespace, name)
    entry = {
        "name": "imported",
        "status": "Ready",
        "persistentVolumeClaim": "shared-weights",
        "model": "acme/llama",
        "mountPoint": "/workspace/model-cache/acme/llama",
    }
    await ready(
        kube, TEMPLATE_CACHE, namespace, name, {"status": "Ready", "modelCaches": {"acme/llama": entry}}
    )
    isvc = await eventually(
        lambda: _with_claims(kube, namespace, "s", {"shared-weights"}), timeout=30, what="mounted"
    )
    predictor = isvc["spec"]["predictor"]
    [volume] = [v for v in predictor["volumes"] if v.get("persistentVolumeClaim")]
    assert volume["persistentVolumeClaim"] == {"claimName": "shared-weights", "readOnly": True}
    [mount] = [m for m in container(isvc)["volumeMounts"] if m["name"] == volume["name"]]
    assert mount == {
        "name": volume["name"],
        "mountPath": "/workspace/model-cache/acme/llama",
        "subPath": "acme/llama",
        "readOnly": True,
    }


async def _with_claims(kube: Kube, namespace: str, service: str, expected: set[str]) -> dict[str, Any] | None:
    isvc = await isvc_of(kube, namespace, service)
    return isvc if claims(isvc) == expected else None


# -- the cache service: a Shared template cache and owned model caches ---------------------------


@pytest.fixture
async def released_cache(running: Services, js: JetStreamContext, cache_dir: Path) -> AsyncIterator[Services]:
    """The cache service (local executor) with ``AIM_BEHAVIOUR=released`` for one test; stopped
    after it (the next test that needs the cache service starts its own)."""
    old = running.procs.pop("cache", None)
    if old is not None:
        old.stop()
    env = {
        "AIM_CACHE_EXECUTOR": "local",
        "AIM_CACHE_DIR": str(cache_dir),
        "AIM_DOWNLOAD_STALL_SECONDS": "5",
        "AIM_BEHAVIOUR": "released",
    }
    await ensure_service(running, js, "cache", env=env)
    try:
        yield running
    finally:
        running.procs.pop("cache").stop()
        running.service_env.pop("cache", None)


async def test_released_a_shared_template_cache_ignores_owned_model_caches(  # type: ignore[no-untyped-def]
    released_cache, kube: Kube, namespace: str, hub_server: HubServer
) -> None:
    uri, ready_one, shared = await dedicated_then_shared(kube, namespace, hub_server)
    owned, own = cache_name_of(ready_one), cache_name_of(shared)
    assert own != owned  # not promoted, as the seeds would: a cache of its own
    caches = {c["metadata"]["name"]: c for c in await model_caches(kube, namespace, uri)}
    assert set(caches) == {owned, own}
    assert not caches[own]["metadata"].get("ownerReferences")
    assert caches[owned]["metadata"]["ownerReferences"][0]["uid"] == ready_one["metadata"]["uid"]
