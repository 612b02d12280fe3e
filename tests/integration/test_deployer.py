"""The deployer as a real process against a real API server: AIMServices of both groups become KServe
InferenceServices (and HTTPRoutes) with every resolution step visible in status.

The tests play the other services and the controllers that cannot run here: they mark models,
templates and template caches Ready by patching their status (as the discovery and cache services
would), and play KServe and the kubelet by patching InferenceService status and creating predictor
pods, the way the original's "frozen" end-to-end tests do. The discovery and cache services are
stopped for these tests so nothing else writes those statuses.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from aim_deployer.model_resolution import auto_model_name
from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.kinds import GATEWAY, HTTP_ROUTE, INFERENCE_SERVICE, NODE, POD, KindRef, by_kind
from aimcore.runtime import Kube
from tests.helpers import condition, eventually, has, manifest, status_of
from tests.integration.conftest import Services, drained

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
SERVICE = by_kind(AIM, "AIMService")
MODEL = by_kind(AIM, "AIMModel")
CLUSTER_MODEL = by_kind(AIM, "AIMClusterModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
CLUSTER_TEMPLATE = by_kind(AIM, "AIMClusterServiceTemplate")
TEMPLATE_CACHE = by_kind(AIM, "AIMTemplateCache")
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
RUNTIME_CONFIG = by_kind(AIM, "AIMRuntimeConfig")
IMAGE = "ghcr.io/acme/aim-llama:1.0.0"
PAUSED = {"aim.eai.amd.com/reconciliation-paused": "true"}


def CACHE_COMING(status: dict[str, Any]) -> bool:  # noqa: N802 - a predicate used like has(...)
    """The service waits for a cache it created (just created, or created and filling)."""
    return condition(status, "CacheReady").get("reason") in ("CacheCreating", "CacheNotReady")


@pytest.fixture
def deployer(running: Services) -> Services:
    """The session's services with discovery and cache stopped: the tests play their part."""
    for name in ("discovery", "cache", "registry-sync"):
        proc = running.procs.pop(name, None)
        if proc is not None:
            proc.stop()
    return running


def uid() -> str:
    return secrets.token_hex(3)


async def ready(kube: Kube, ref: KindRef, namespace: str | None, name: str, status: dict[str, Any]) -> None:
    await kube.patch_status(ref, namespace, name, {"status": status})


async def make_model(
    kube: Kube, namespace: str | None, name: str, image: str = IMAGE, state: str = "Ready", **spec: Any
) -> None:
    ref = MODEL if namespace else CLUSTER_MODEL
    await kube.create(ref, manifest(ref, name, namespace, {"image": image, **spec}), namespace)
    await ready(kube, ref, namespace, name, {"status": state})


async def make_template(
    kube: Kube,
    namespace: str | None,
    name: str,
    model: str,
    *,
    metric: str = "latency",
    precision: str = "fp8",
    gpu: str | None = None,
    count: int = 1,
    kind: str = "optimized",
    state: str = "Ready",
    **spec: Any,
) -> None:
    ref = TEMPLATE if namespace else CLUSTER_TEMPLATE
    body: dict[str, Any] = {"modelName": model, "metric": metric, "precision": precision, **spec}
    if gpu:
        body["gpu"] = {"model": gpu, "requests": count}
    await kube.create(ref, manifest(ref, name, namespace, body), namespace)
    metadata = {"type": kind, "metric": metric, "precision": precision, "gpu_count": count}
    if gpu:
        metadata["gpu"] = gpu
    await ready(kube, ref, namespace, name, {"status": state, "profile": {"metadata": metadata}})


async def seen_ready(services: Services, ref: KindRef, namespace: str | None, *names: str) -> None:
    """Wait until the deployer has seen ``names`` Ready: their status in the object mirror it reads,
    and every event so far handled. A service made next is selected among all of them (selection
    is sticky once made: one made before could be given the only template it saw Ready then)."""
    nc = await connect_as(services.servers.nats, "reader")
    try:
        kv = await topology.objects_bucket(nc.jetstream())

        async def mirrored_ready() -> bool:
            for name in names:
                try:
                    entry = await kv.get(subjects.object_key(ref, namespace, name))
                except Exception:
                    return False
                if not entry.value or (json.loads(entry.value).get("status") or {}).get("status") != "Ready":
                    return False
            return True

        await eventually(mirrored_ready, timeout=60, what=f"{', '.join(names)} Ready in the mirror")
    finally:
        await nc.close()
    await drained(services.servers)


async def make_service(
    kube: Kube, namespace: str, name: str, spec: dict[str, Any], ref: KindRef = SERVICE
) -> None:
    await kube.create(ref, manifest(ref, name, namespace, spec), namespace)


async def wait_service(
    kube: Kube, namespace: str, name: str, predicate: Any, what: str, *, ref: KindRef = SERVICE
) -> dict[str, Any]:
    obj: dict[str, Any] = await status_of(kube, ref, namespace, name, predicate, what)
    return obj


async def isvc_of(kube: Kube, namespace: str, service: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        items = (await kube.list(INFERENCE_SERVICE, namespace))[0]
        owned = [
            i
            for i in items
            if any(o.get("name") == service for o in i["metadata"].get("ownerReferences") or [])
        ]
        return owned[0] if owned else None

    found: dict[str, Any] = await eventually(probe, timeout=30, what=f"the InferenceService of {service}")
    return found


def container(isvc: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = isvc["spec"]["predictor"]["containers"][0]
    return c


def env_of(isvc: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in container(isvc).get("env") or []}


def container_status(ready: bool, state: dict[str, Any], restarts: int = 0, **extra: Any) -> dict[str, Any]:
    """The kubelet's status of the predictor container."""
    return {
        "name": "kserve-container",
        "ready": ready,
        "restartCount": restarts,
        "image": "x",
        "imageID": "",
        "state": state,
        **extra,
    }


async def play_kserve(kube: Kube, namespace: str, isvc: dict[str, Any], *, ready_pods: bool = True) -> str:
    """KServe and the kubelet: the InferenceService reports Ready and its pod runs."""
    name = isvc["metadata"]["name"]
    await kube.patch_status(
        INFERENCE_SERVICE,
        namespace,
        name,
        {
            "status": {
                "url": f"http://{name}.{namespace}",
                "conditions": [{"type": "Ready", "status": "True"}],
            }
        },
    )
    pod = f"{name}-predictor-{uid()}"
    await kube.create(
        POD,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod,
                "namespace": namespace,
                "labels": {
                    "serving.kserve.io/inferenceservice": name,
                    "app.kubernetes.io/part-of": "aim-engine",
                },
            },
            "spec": {"containers": [{"name": "kserve-container", "image": container(isvc)["image"]}]},
        },
        namespace,
    )
    cs = container_status(ready_pods, {"running": {"startedAt": "2026-11-22T00:00:00Z"}})
    await kube.patch_status(
        POD,
        namespace,
        pod,
        {
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True" if ready_pods else "False"},
                    {"type": "PodScheduled", "status": "True"},
                ],
                "containerStatuses": [cs],
            }
        },
    )
    return pod


# -- model resolution ---------------------------------------------------------------------------


async def test_service_by_name_runs_once_kserve_reports_ready(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "llama")
    await make_template(kube, namespace, "llama-lat", "llama", env=[{"name": "FROM_TEMPLATE", "value": "t"}])
    await kube.create(
        RUNTIME_CONFIG,
        manifest(
            RUNTIME_CONFIG,
            "default",
            namespace,
            {"env": [{"name": "FROM_CONFIG", "value": "c"}, {"name": "FROM_TEMPLATE", "value": "config"}]},
        ),
        namespace,
    )
    await make_service(
        kube,
        namespace,
        "chat",
        {
            "model": {"name": "llama"},
            "env": [{"name": "FROM_SERVICE", "value": "s"}, {"name": "FROM_CONFIG", "value": "service"}],
            "resources": {"limits": {"memory": "100Gi"}},
        },
    )
    isvc = await isvc_of(kube, namespace, "chat")
    assert container(isvc)["image"] == IMAGE
    env = env_of(isvc)
    # the seeds' order (the default behaviour): template < runtime config < service
    assert env["FROM_SERVICE"] == "s" and env["FROM_CONFIG"] == "service" and env["FROM_TEMPLATE"] == "config"
    names = [e["name"] for e in container(isvc)["env"]]
    assert len(names) == len(set(names)), names
    assert container(isvc)["resources"]["limits"]["memory"] == "100Gi"
    labels = isvc["metadata"]["labels"]
    assert labels["aim.eai.amd.com/service"] == "chat" and labels["aim.eai.amd.com/template"] == "llama-lat"
    assert isvc["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] == "none"

    starting = await wait_service(
        kube, namespace, "chat", lambda s: s.get("status") == "Starting", "Starting"
    )
    status = starting["status"]
    assert status["resolvedModel"]["name"] == "llama" and status["resolvedTemplate"]["name"] == "llama-lat"
    assert condition(status, "ModelReady")["status"] == "True"
    assert condition(status, "CacheReady")["reason"] == "NoCache"

    await play_kserve(kube, namespace, isvc)
    running = await wait_service(kube, namespace, "chat", lambda s: s.get("status") == "Running", "Running")
    assert condition(running["status"], "InferenceServicePodsReady")["reason"] == "PodsReady"
    assert condition(running["status"], "Ready")["status"] == "True"


async def test_missing_model_fails_with_reason_and_recovers(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_service(kube, namespace, "lost", {"model": {"name": "nope"}})
    failed = await wait_service(
        kube, namespace, "lost", has("ModelReady", "False", "ModelNotFound"), "ModelNotFound"
    )
    assert failed["status"]["status"] == "Failed"
    assert condition(failed["status"], "ConfigValid")["reason"] == "ReferenceNotFound"
    await make_model(kube, namespace, "nope")
    await make_template(kube, namespace, "nope-t", "nope")
    await isvc_of(kube, namespace, "lost")
    await wait_service(
        kube, namespace, "lost", lambda s: s.get("status") == "Starting", "Starting after the model"
    )


async def test_service_by_image_creates_a_model_and_uses_it(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    image = f"ghcr.io/acme/aim-qwen-{uid()}:0.8.5"
    await kube.create(
        RUNTIME_CONFIG,
        manifest(RUNTIME_CONFIG, "default", namespace, {"model": {"autoDiscovery": False}}),
        namespace,
    )
    await make_service(kube, namespace, "by-image", {"model": {"image": image}})
    creating = await wait_service(
        kube,
        namespace,
        "by-image",
        lambda s: condition(s, "ModelReady").get("reason") in ("CreatingModel", "ModelNotReady"),
        "the model created",
    )
    models = [m for m in (await kube.list(MODEL, namespace))[0] if m["spec"]["image"] == image]
    assert len(models) == 1, models
    model = models[0]
    assert model["metadata"]["name"].startswith(image.rsplit("/", 1)[1].split(":", maxsplit=1)[0] + "-0-8-5-")
    assert model["metadata"]["labels"]["aim.eai.amd.com/origin"] == "auto-generated"
    assert model["spec"]["discovery"] == {"extractMetadata": False, "createServiceTemplates": False}
    assert "Component Model is not ready" in condition(creating["status"], "Ready")["message"]
    # discovery's part: the model is ready and has a template
    await ready(kube, MODEL, namespace, model["metadata"]["name"], {"status": "Ready"})
    await make_template(kube, namespace, "qwen-t", model["metadata"]["name"])
    await isvc_of(kube, namespace, "by-image")
    done = await wait_service(
        kube, namespace, "by-image", has("ModelReady", "True", "ModelResolved"), "resolved"
    )
    assert done["status"]["resolvedModel"]["name"] == model["metadata"]["name"]
    # a second service with the same image uses the same model
    await make_service(kube, namespace, "by-image-2", {"model": {"image": image}})
    await isvc_of(kube, namespace, "by-image-2")
    assert len([m for m in (await kube.list(MODEL, namespace))[0] if m["spec"]["image"] == image]) == 1


async def test_image_ambiguity_and_invalid_reference_have_reasons(
    deployer, kube: Kube, namespace: str
) -> None:  # type: ignore[no-untyped-def]
    image = f"ghcr.io/acme/twin-{uid()}:1"
    await make_model(kube, namespace, "twin-a", image)
    await make_model(kube, namespace, "twin-b", image)
    await make_service(kube, namespace, "twins", {"model": {"image": image}})
    twins = await wait_service(
        kube, namespace, "twins", has("ModelReady", "False", "MultipleModelsFound"), "ambiguous"
    )
    assert "twin-a" in condition(twins["status"], "ModelReady")["message"]
    assert twins["status"]["status"] == "Failed"
    await make_service(kube, namespace, "bad-image", {"model": {"image": "ghcr.io/acme/UPPER:1"}})
    bad = await wait_service(
        kube, namespace, "bad-image", has("ModelReady", "False", "InvalidImageReference"), "invalid"
    )
    assert bad["status"]["status"] == "Failed"


def custom_service(endpoint: str, hardware: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "model": {
            "custom": {
                "baseImage": "ghcr.io/acme/aim-base:1",
                "modelSources": [
                    {
                        "modelId": "acme/tiny",
                        "sourceUri": "s3://bucket/tiny",
                        "env": [{"name": "AWS_ENDPOINT_URL", "value": endpoint}],
                    }
                ],
                "hardware": hardware,
            }
        },
        **spec,
    }


async def owners_of_models(kube: Kube, namespace: str) -> dict[str, set[str]]:
    """Each model's name → the names of the services owning it."""
    found = (await kube.list(MODEL, namespace))[0]
    return {
        m["metadata"]["name"]: {o["name"] for o in m["metadata"].get("ownerReferences") or []} for m in found
    }


async def test_identical_custom_models_are_shared(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """Services asking for the same custom model share it; a different S3 endpoint, and (issue 15)
    different hardware or env, get a model of their own instead of silently running on the first
    creator's."""
    one_gpu = {"gpu": {"requests": 1}}
    await make_service(kube, namespace, "c1", custom_service("http://s3-a", one_gpu))
    await make_service(kube, namespace, "c2", custom_service("http://s3-a", one_gpu))
    await make_service(kube, namespace, "c3", custom_service("http://s3-b", one_gpu))
    await make_service(kube, namespace, "c4", custom_service("http://s3-a", {"gpu": {"requests": 1000000}}))
    await make_service(
        kube,
        namespace,
        "c5",
        custom_service("http://s3-a", one_gpu, env=[{"name": "HF_TOKEN", "value": "t"}]),
    )

    async def models() -> dict[str, set[str]] | None:
        owners = await owners_of_models(kube, namespace)
        return (
            owners if sorted(map(sorted, owners.values())) == [["c1", "c2"], ["c3"], ["c4"], ["c5"]] else None
        )

    owners = await eventually(models, timeout=30, what="four custom models, one shared by c1 and c2")
    by_owner = {",".join(sorted(o)): name for name, o in owners.items()}
    shared = await kube.get(MODEL, namespace, by_owner["c1,c2"])
    assert shared["metadata"]["labels"]["aim.eai.amd.com/custom-model"] == "true"
    assert shared["spec"]["custom"]["hardware"]["gpu"]["requests"] == 1
    assert "env" not in shared["spec"]
    big = await kube.get(MODEL, namespace, by_owner["c4"])
    assert big["spec"]["custom"]["hardware"]["gpu"]["requests"] == 1000000
    with_env = await kube.get(MODEL, namespace, by_owner["c5"])
    assert with_env["spec"]["env"] == [{"name": "HF_TOKEN", "value": "t"}]
    for service, model in (
        ("c1", shared),
        ("c2", shared),
        ("c4", big),
        ("c5", with_env),
    ):  # each service waits for its own model, none deploys on another's
        name = model["metadata"]["name"]
        await wait_service(
            kube,
            namespace,
            service,
            lambda s, n=name: n in condition(s, "ModelReady").get("message", ""),
            f"{service} on {name}",
        )


async def test_a_custom_model_made_for_another_request_is_left_once_the_service_moves(
    deployer, kube: Kube, namespace: str
) -> None:  # type: ignore[no-untyped-def]
    """The upgrade path: a service sharing a custom model made for a different request (as before
    issue 15, or after its own request changed) gets one of its own, runs on it, and then stops
    owning the old one; a model left with no owner is deleted."""
    request = custom_service("http://s3-u", {"gpu": {"requests": 1}})
    await make_service(kube, namespace, "first", request)
    owners = await eventually(
        lambda: owners_of_models(kube, namespace), timeout=30, what="the first service's model"
    )
    (old,) = owners
    # what the old matching did: a service asking for other hardware co-owns the first one's model
    # (made paused, so the deployer sees it only once that is so)
    second = custom_service("http://s3-u", {"gpu": {"requests": 2}})
    await kube.create(SERVICE, manifest(SERVICE, "second", namespace, second, annotations=PAUSED), namespace)
    owner = {
        "apiVersion": SERVICE.api_version,
        "kind": "AIMService",
        "name": "second",
        "uid": (await kube.get(SERVICE, namespace, "second"))["metadata"]["uid"],
    }
    references = (await kube.get(MODEL, namespace, old))["metadata"]["ownerReferences"]
    await kube.patch(MODEL, namespace, old, {"metadata": {"ownerReferences": [*references, owner]}})
    await kube.patch(
        SERVICE,
        namespace,
        "second",
        {"metadata": {"annotations": {"aim.eai.amd.com/reconciliation-paused": None}}},
    )

    async def own_model() -> str | None:
        owners = await owners_of_models(kube, namespace)
        mine = [name for name, o in owners.items() if o == {"second"}]
        return mine[0] if mine else None

    new = await eventually(own_model, timeout=30, what="a model of the second service's own")
    assert (await kube.get(MODEL, namespace, new))["spec"]["custom"]["hardware"]["gpu"]["requests"] == 2
    assert (await owners_of_models(kube, namespace))[old] == {"first", "second"}  # not yet: not running on it

    # discovery's part: the new model and its template are ready; the service runs on them
    await ready(kube, MODEL, namespace, new, {"status": "Ready"})
    await make_template(kube, namespace, f"{new}-t", new)
    await isvc_of(kube, namespace, "second")

    async def released() -> bool:
        return (await owners_of_models(kube, namespace)).get(old) == {"first"}

    await eventually(released, timeout=30, what="the second service to release the old model")

    # the first service's request changes (env): it moves to a new model too, and the old one,
    # without owners now, is deleted
    await ready(kube, MODEL, namespace, old, {"status": "Ready"})
    await make_template(kube, namespace, f"{old}-t", old)
    await isvc_of(kube, namespace, "first")
    await kube.patch(SERVICE, namespace, "first", {"spec": {"env": [{"name": "EXTRA", "value": "1"}]}})

    async def moved() -> str | None:
        owners = await owners_of_models(kube, namespace)
        mine = [name for name, o in owners.items() if o == {"first"} and name != old]
        return mine[0] if mine else None

    newer = await eventually(moved, timeout=30, what="the first service's new model")
    assert await kube.get(MODEL, namespace, old) is not None  # still running on it
    await ready(kube, MODEL, namespace, newer, {"status": "Ready"})
    await make_template(kube, namespace, f"{newer}-t", newer)

    async def deleted() -> bool:
        return await kube.get(MODEL, namespace, old) is None

    await eventually(deleted, timeout=30, what="the unused old model to be deleted")


async def test_a_name_held_by_another_model_is_a_conflict(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """The model a service would create has a name another model already holds (a user made it
    for another image): not "creating" forever, but a conflict naming the model."""
    image = f"ghcr.io/acme/aim-held-{uid()}:1"
    await make_model(kube, namespace, auto_model_name(image), image="ghcr.io/acme/something-else:2")
    await make_service(kube, namespace, "held", {"model": {"image": image}})
    svc = await wait_service(
        kube, namespace, "held", has("ModelReady", "False", "ModelNameConflict"), "the conflict"
    )
    assert auto_model_name(image) in condition(svc["status"], "ModelReady")["message"]
    assert svc["status"]["status"] == "Failed"


def cond_of(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-11-22T00:00:00Z",
    }


async def frozen_model(
    kube: Kube, namespace: str, name: str, state: str, *conditions: dict[str, Any]
) -> None:
    """A model as discovery would leave it, paused so only the test writes its status."""
    await kube.create(
        MODEL,
        manifest(MODEL, name, namespace, {"image": f"ghcr.io/acme/{name}:1"}, annotations=PAUSED),
        namespace,
    )
    await ready(kube, MODEL, namespace, name, {"status": state, "conditions": list(conditions)})


async def test_a_service_says_why_its_model_has_no_templates(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """Not "no templates exist for this model" forever: the model's own reason for having none."""
    # the registry keeps failing: the model is Degraded (usable in principle) and has no templates
    await frozen_model(
        kube,
        namespace,
        "no-meta",
        "Degraded",
        cond_of("ImageMetadataReady", "False", "RegistryError", "registry.example: connection refused"),
        cond_of("ServiceTemplatesReady", "False", "AwaitingMetadata", "No templates until ..."),
    )
    await make_service(kube, namespace, "on-no-meta", {"model": {"name": "no-meta"}})
    svc = await wait_service(
        kube, namespace, "on-no-meta", has("TemplateReady", "False", "RegistryError"), "the metadata failure"
    )
    message = condition(svc["status"], "TemplateReady")["message"]
    assert "AIMModel no-meta" in message and "connection refused" in message, message
    assert svc["status"]["status"] == "Degraded"

    # the image recommends no deployment and the model defines no custom templates: only a user can
    # change that
    await frozen_model(
        kube,
        namespace,
        "no-labels",
        "Ready",
        cond_of("ImageMetadataReady", "True", "ImageFound", "Read labels (no AIM model name)"),
        cond_of(
            "ServiceTemplatesReady",
            "True",
            "NoTemplatesExpected",
            "No templates: the image ... recommends none",
        ),
    )
    await make_service(kube, namespace, "on-no-labels", {"model": {"name": "no-labels"}})
    svc = await wait_service(
        kube, namespace, "on-no-labels", has("TemplateReady", "False", "ModelHasNoTemplates"), "no templates"
    )
    assert "recommends none" in condition(svc["status"], "TemplateReady")["message"]
    assert svc["status"]["status"] == "Failed"
    # a user adds a template naming the model: the service goes on
    await make_template(kube, namespace, "no-labels-t", "no-labels")
    await wait_service(kube, namespace, "on-no-labels", has("TemplateReady", "True", "Resolved"), "resolved")

    # an image that does not exist: the model failed, and the service names the model's reason
    await frozen_model(
        kube,
        namespace,
        "no-image",
        "Failed",
        cond_of("ImageMetadataReady", "False", "ImageNotFound", "ghcr.io/acme/no-image:1: manifest unknown"),
        cond_of("Ready", "False", "ImageNotFound", "Component ImageMetadata is not ready: manifest unknown"),
    )
    await make_service(kube, namespace, "on-no-image", {"model": {"name": "no-image"}})
    # the original's vocabulary: ModelNotReady whatever the model's state, the state in the message;
    # a Failed model fails the service (issue 18)
    svc = await wait_service(
        kube, namespace, "on-no-image", has("ModelReady", "False", "ModelNotReady"), "the model failed"
    )
    message = condition(svc["status"], "ModelReady")["message"]
    assert message.startswith("AIMModel no-image is Failed: ImageNotFound"), message
    assert svc["status"]["status"] == "Failed"
    assert condition(svc["status"], "Ready")["reason"] == "ModelNotReady"


async def test_children_the_api_server_refuses_are_reported(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """A route annotation key Kubernetes does not allow: the API server refuses the HTTPRoute (422).
    The service fails naming the refusal instead of retrying with no word in its status, and
    recovers when the annotation is fixed."""
    await make_model(kube, namespace, "ra")
    await make_template(kube, namespace, "ra-t", "ra")
    routing = {"enabled": True, "gatewayRef": {"name": "gw"}, "annotations": {"not a valid key!": "x"}}
    await make_service(kube, namespace, "annotated", {"model": {"name": "ra"}, "routing": routing})
    svc = await wait_service(
        kube,
        namespace,
        "annotated",
        has("HTTPRouteReady", "False", "HTTPRouteCreateRejected"),
        "the refused route",
    )
    message = condition(svc["status"], "HTTPRouteReady")["message"]
    assert "not a valid key!" in message and "422" in message, message
    assert svc["status"]["status"] == "Failed"
    assert not (await kube.list(HTTP_ROUTE, namespace))[0]
    # the InferenceService is not held back by the route
    await isvc_of(kube, namespace, "annotated")

    await kube.patch(
        SERVICE,
        namespace,
        "annotated",
        {"spec": {"routing": {"annotations": {"not a valid key!": None, "example.com/team": "ml"}}}},
    )
    await wait_service(
        kube, namespace, "annotated", has("HTTPRouteReady", "False", "HTTPRoutePending"), "the route applied"
    )
    (route,) = (await kube.list(HTTP_ROUTE, namespace))[0]
    assert route["metadata"]["annotations"] == {"example.com/team": "ml"}


async def test_a_shared_gateway_needs_hostnames_and_gets_them(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """The parent Gateway has two listeners: a route without hostnames would take every host of it,
    so there is none and the spec is invalid (the released original's 0.2.5); hostnames on the
    service make the route, with them."""
    await make_model(kube, namespace, "rh")
    await make_template(kube, namespace, "rh-t", "rh")
    listeners = [
        {"name": "http", "port": 80, "protocol": "HTTP"},
        {"name": "admin", "port": 8080, "protocol": "HTTP", "hostname": "admin.example.com"},
    ]
    gateway = {"apiVersion": GATEWAY.api_version, "kind": GATEWAY.kind, "metadata": {"name": "shared"}}
    await kube.create(
        GATEWAY, {**gateway, "spec": {"gatewayClassName": "x", "listeners": listeners}}, namespace
    )
    routing = {"enabled": True, "gatewayRef": {"name": "shared"}}
    await make_service(kube, namespace, "hosted", {"model": {"name": "rh"}, "routing": routing})
    svc = await wait_service(
        kube, namespace, "hosted", has("HTTPRouteReady", "False", "RouteHostnameRequired"), "no hostnames"
    )
    message = condition(svc["status"], "HTTPRouteReady")["message"]
    assert message.startswith(
        f"parent gateway {namespace}/shared has 2 listeners but no routing hostnames"
    ), message
    assert condition(svc["status"], "ConfigValid")["reason"] == "RouteHostnameRequired"
    assert svc["status"]["status"] == "Failed"
    assert not (await kube.list(HTTP_ROUTE, namespace))[0]
    await isvc_of(kube, namespace, "hosted")  # the InferenceService is not held back by the route

    hostnames = {"hostnames": ["chat.example.com"]}
    await kube.patch(SERVICE, namespace, "hosted", {"spec": {"routing": hostnames}})
    svc = await wait_service(
        kube, namespace, "hosted", has("HTTPRouteReady", "False", "HTTPRoutePending"), "the route applied"
    )
    (route,) = (await kube.list(HTTP_ROUTE, namespace))[0]
    assert route["spec"]["hostnames"] == ["chat.example.com"]
    assert route["spec"]["parentRefs"][0]["name"] == "shared"
    assert condition(svc["status"], "ConfigValid").get("status") != "False"


# -- template selection -------------------------------------------------------------------------


async def test_automatic_selection_ranks_and_explains(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    model = f"rank-{uid()}"
    await make_model(kube, None, model)
    try:
        await make_template(kube, None, f"{model}-fp16", model, precision="fp16")
        await make_template(kube, None, f"{model}-fp8", model, precision="fp8")
        await make_template(kube, None, f"{model}-unopt", model, precision="fp8", kind="unoptimized")
        names = (f"{model}-fp16", f"{model}-fp8", f"{model}-unopt")
        await seen_ready(deployer, CLUSTER_TEMPLATE, None, *names)
        await make_service(kube, namespace, "ranked", {"model": {"name": model}})
        svc = await wait_service(
            kube, namespace, "ranked", has("TemplateReady", "True", "Resolved"), "selected"
        )
        assert svc["status"]["resolvedTemplate"]["name"] == f"{model}-fp8"
        assert svc["status"]["resolvedTemplate"]["scope"] == "Cluster"
        # with allowUnoptimized the unoptimized fp8 template competes, and ranks after the optimized one
        await make_service(
            kube, namespace, "loose", {"model": {"name": model}, "template": {"allowUnoptimized": True}}
        )
        loose = await wait_service(
            kube, namespace, "loose", has("TemplateReady", "True", "Resolved"), "selected"
        )
        assert loose["status"]["resolvedTemplate"]["name"] == f"{model}-fp8"
        # a namespace template shadows the cluster ones (a service naming it first shows the
        # deployer has seen it: selection is sticky once made)
        await make_template(kube, namespace, "local-fp16", model, precision="fp16")
        await make_service(
            kube, namespace, "named", {"model": {"name": model}, "template": {"name": "local-fp16"}}
        )
        await wait_service(
            kube, namespace, "named", has("TemplateReady", "True", "Resolved"), "named template"
        )
        await make_service(kube, namespace, "local", {"model": {"name": model}})
        local = await wait_service(
            kube, namespace, "local", has("TemplateReady", "True", "Resolved"), "selected"
        )
        assert local["status"]["resolvedTemplate"]["name"] == "local-fp16"
    finally:
        for name in (f"{model}-fp16", f"{model}-fp8", f"{model}-unopt"):
            await kube.delete(CLUSTER_TEMPLATE, None, name)
        await kube.delete(CLUSTER_MODEL, None, model)


async def test_selection_outcomes_have_their_own_reasons(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "m")
    await make_template(kube, namespace, "m-a", "m", precision="fp8")
    await make_template(kube, namespace, "m-b", "m", precision="fp8")
    await make_service(kube, namespace, "tie", {"model": {"name": "m"}})
    tie = await wait_service(
        kube, namespace, "tie", has("TemplateReady", "False", "TemplateSelectionAmbiguous"), "ambiguous"
    )
    message = condition(tie["status"], "TemplateReady")["message"]
    assert "m-a" in message and "m-b" in message

    await make_model(kube, namespace, "u")
    await make_template(kube, namespace, "u-1", "u", kind="unoptimized")
    await make_service(kube, namespace, "strict", {"model": {"name": "u"}})
    strict = await wait_service(
        kube, namespace, "strict", has("TemplateReady", "False", "UnoptimizedTemplatesFiltered"), "filtered"
    )
    assert "allowUnoptimized" in condition(strict["status"], "TemplateReady")["message"]
    await make_service(
        kube, namespace, "lenient", {"model": {"name": "u"}, "template": {"allowUnoptimized": True}}
    )
    await wait_service(
        kube, namespace, "lenient", has("TemplateReady", "True", "Resolved"), "unoptimized allowed"
    )

    await make_model(kube, namespace, "g")
    await make_template(kube, namespace, "g-mi355", "g", gpu="MI355X")
    await make_service(kube, namespace, "gpu", {"model": {"name": "g"}})
    gpu = await wait_service(
        kube, namespace, "gpu", has("TemplateReady", "False", "RequiredGPUNotInCluster"), "no GPU"
    )
    assert "MI355X" in condition(gpu["status"], "TemplateReady")["message"]
    # a node with that GPU appears: the service goes on
    node = f"gpu-node-{uid()}"
    await kube.create(
        NODE,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node, "labels": {"amd.com/gpu.device-id": "75a3"}},
        },
    )
    try:
        await wait_service(
            kube, namespace, "gpu", has("TemplateReady", "True", "Resolved"), "GPU now present"
        )
        isvc = await isvc_of(kube, namespace, "gpu")
        terms = isvc["spec"]["predictor"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert "75a3" in terms[0]["matchExpressions"][0]["values"]
        assert container(isvc)["resources"]["limits"]["amd.com/gpu"] == "1"
    finally:
        await kube.delete(NODE, None, node)


async def test_a_template_written_the_released_way_gives_its_hardware_to_the_service(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    """Issue 18 item 6: a template whose GPU and CPU are given as ``spec.hardware`` (the released original's
    spelling) had them pruned, so the service ran without its GPUs. The template's status is written here
    as discovery would before it has run (no GPU facts in the profile, no resolvedHardware), so the
    InferenceService's resources can only come from the template's spec."""
    await make_model(kube, namespace, "rel")
    spec = {
        "modelName": "rel",
        "metric": "latency",
        "precision": "fp8",
        "hardware": {"gpu": {"model": "MI325X", "requests": 2}, "cpu": {"requests": "6"}},
    }
    await kube.create(TEMPLATE, manifest(TEMPLATE, "rel-t", namespace, spec), namespace)
    profile = {"metadata": {"type": "optimized", "metric": "latency", "precision": "fp8"}}
    await ready(kube, TEMPLATE, namespace, "rel-t", {"status": "Ready", "profile": profile})

    await make_model(kube, namespace, "rel-cpu")
    cpu_spec = {"modelName": "rel-cpu", "hardware": {"cpu": {"requests": "2", "limits": "4"}}}
    await kube.create(TEMPLATE, manifest(TEMPLATE, "rel-cpu-t", namespace, cpu_spec), namespace)
    await ready(kube, TEMPLATE, namespace, "rel-cpu-t", {"status": "Ready", "profile": profile})

    # the GPU is required: selection waits for a node that has it
    await make_service(kube, namespace, "rel-svc", {"model": {"name": "rel"}})
    waiting = await wait_service(
        kube, namespace, "rel-svc", has("TemplateReady", "False", "RequiredGPUNotInCluster"), "no MI325X yet"
    )
    assert "MI325X" in condition(waiting["status"], "TemplateReady")["message"]
    node = f"mi325x-{uid()}"
    await kube.create(
        NODE,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node, "labels": {"amd.com/gpu.device-id": "74a5"}},
        },
    )
    try:
        isvc = await isvc_of(kube, namespace, "rel-svc")
        resources = container(isvc)["resources"]
        assert resources["limits"]["amd.com/gpu"] == "2" and resources["requests"]["amd.com/gpu"] == "2"
        assert resources["requests"]["cpu"] == "6", resources  # hardware.cpu over the 4-per-GPU default
        terms = isvc["spec"]["predictor"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert "74a5" in terms[0]["matchExpressions"][0]["values"]
    finally:
        await kube.delete(NODE, None, node)

    await make_service(kube, namespace, "rel-cpu-svc", {"model": {"name": "rel-cpu"}})
    isvc = await isvc_of(kube, namespace, "rel-cpu-svc")
    assert container(isvc)["resources"] == {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}
    assert "affinity" not in isvc["spec"]["predictor"]


async def test_overrides_create_a_derived_template(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "o")
    await make_template(kube, namespace, "o-lat", "o", metric="latency", precision="fp8")
    await make_service(
        kube, namespace, "thr", {"model": {"name": "o"}, "overrides": {"metric": "throughput"}}
    )
    waiting = await wait_service(
        kube,
        namespace,
        "thr",
        lambda s: (
            condition(s, "TemplateReady").get("reason") in ("CreatingDerivedTemplate", "TemplateNotReady")
        ),
        "derived",
    )
    assert "o-lat" in condition(waiting["status"], "TemplateReady")["message"]
    derived = [
        t for t in (await kube.list(TEMPLATE, namespace))[0] if t["metadata"]["name"].startswith("o-lat-ovr-")
    ]
    assert len(derived) == 1
    spec = derived[0]["spec"]
    assert spec["metric"] == "throughput" and spec["precision"] == "fp8" and spec["modelName"] == "o"
    assert derived[0]["metadata"]["labels"]["aim.eai.amd.com/origin"] == "derived"
    # discovery's part
    name = derived[0]["metadata"]["name"]
    await ready(
        kube,
        TEMPLATE,
        namespace,
        name,
        {
            "status": "Ready",
            "profile": {"metadata": {"type": "optimized", "metric": "throughput", "precision": "fp8"}},
        },
    )
    svc = await wait_service(kube, namespace, "thr", has("TemplateReady", "True", "Resolved"), "uses derived")
    assert svc["status"]["resolvedTemplate"]["name"] == name
    isvc = await isvc_of(kube, namespace, "thr")
    assert env_of(isvc)["AIM_METRIC"] == "throughput"


async def test_overrides_written_the_released_way_are_honoured(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """The released original's service overrides spell the GPU ``overrides.hardware.gpu`` and add
    ``hardware.cpu``; pruned, the service ran on its template's hardware. Both spellings now name the same
    derived template, the CPU reaches the InferenceService, and two disagreeing spellings are InvalidSpec."""
    await make_model(kube, namespace, "ho")
    await make_template(kube, namespace, "ho-t", "ho", metric="latency", precision="fp8")
    overrides = {"hardware": {"gpu": {"requests": 2}, "cpu": {"requests": "5", "limits": "7"}}}
    await make_service(kube, namespace, "ho-svc", {"model": {"name": "ho"}, "overrides": overrides})
    await wait_service(
        kube,
        namespace,
        "ho-svc",
        lambda s: (
            condition(s, "TemplateReady").get("reason") in ("CreatingDerivedTemplate", "TemplateNotReady")
        ),
        "derived",
    )
    derived = [
        t for t in (await kube.list(TEMPLATE, namespace))[0] if t["metadata"]["name"].startswith("ho-t-ovr-")
    ]
    assert len(derived) == 1, [t["metadata"]["name"] for t in derived]
    name = derived[0]["metadata"]["name"]
    assert name.startswith("ho-t-ovr-2gpu-"), name  # the seed spelling's name: overrides.gpu.requests 2
    assert derived[0]["spec"]["gpu"]["requests"] == 2 and "hardware" not in derived[0]["spec"]
    profile = {"metadata": {"type": "optimized", "metric": "latency", "precision": "fp8"}}
    await ready(kube, TEMPLATE, namespace, name, {"status": "Ready", "profile": profile})
    await wait_service(kube, namespace, "ho-svc", has("TemplateReady", "True", "Resolved"), "uses derived")
    resources = container(await isvc_of(kube, namespace, "ho-svc"))["resources"]
    assert resources["requests"]["amd.com/gpu"] == "2" and resources["limits"]["amd.com/gpu"] == "2"
    assert (resources["requests"]["cpu"], resources["limits"]["cpu"]) == ("5", "7"), resources

    both = {"gpu": {"requests": 1}, "hardware": {"gpu": {"requests": 2}}}
    await make_service(kube, namespace, "ho-both", {"model": {"name": "ho"}, "overrides": both})
    refused = await wait_service(
        kube, namespace, "ho-both", has("ConfigValid", "False", "InvalidSpec"), "both spellings differ"
    )
    assert (
        "hardware.gpu and gpu are both set but differ"
        in condition(refused["status"], "ConfigValid")["message"]
    )


# -- caching ------------------------------------------------------------------------------------


async def test_caching_modes(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "cm")
    await make_template(kube, namespace, "cm-t", "cm")
    await make_service(kube, namespace, "never", {"model": {"name": "cm"}, "caching": {"mode": "Never"}})
    await make_service(kube, namespace, "always", {"model": {"name": "cm"}, "caching": {"mode": "Always"}})
    never = await isvc_of(kube, namespace, "never")
    assert not container(never).get("volumeMounts") or all(
        m["name"] == "dshm" for m in container(never)["volumeMounts"]
    )
    creating = await wait_service(kube, namespace, "always", CACHE_COMING, "creating")
    assert creating["metadata"]["finalizers"] == ["aim.eai.amd.com/template-cache-cleanup"]
    caches = (await kube.list(TEMPLATE_CACHE, namespace))[0]
    assert len(caches) == 1
    tc = caches[0]
    assert (
        tc["spec"]["templateName"] == "cm-t"
        and tc["metadata"]["labels"]["aim.eai.amd.com/service"] == "always"
    )
    assert (
        await kube.get(INFERENCE_SERVICE, namespace, isvc_name_of(never).replace("never", "always")) is None
    )
    # the cache service's part: the cache is ready with one model cache
    await ready(
        kube,
        TEMPLATE_CACHE,
        namespace,
        tc["metadata"]["name"],
        {
            "status": "Ready",
            "modelCaches": {
                "acme/llama": {
                    "name": "mc-1",
                    "status": "Ready",
                    "persistentVolumeClaim": "mc-1-cache",
                    "model": "acme/llama",
                    "mountPoint": "/workspace/model-cache/acme/llama",
                }
            },
        },
    )
    always = await isvc_of(kube, namespace, "always")
    mounts = {m["name"]: m["mountPath"] for m in container(always)["volumeMounts"]}
    assert mounts["mc-1"] == "/workspace/model-cache/acme/llama"
    volumes = {v["name"]: v for v in always["spec"]["predictor"]["volumes"]}
    assert volumes["mc-1"]["persistentVolumeClaim"]["claimName"] == "mc-1-cache"
    svc = await wait_service(
        kube, namespace, "always", has("CacheReady", "True", "CacheReady"), "cache ready"
    )
    assert svc["status"]["cache"]["templateCacheRef"]["name"] == tc["metadata"]["name"]
    # Auto finds the same cache and mounts it too
    await make_service(kube, namespace, "auto", {"model": {"name": "cm"}})
    auto = await isvc_of(kube, namespace, "auto")
    assert "mc-1" in {m["name"] for m in container(auto)["volumeMounts"]}


def isvc_name_of(isvc: dict[str, Any]) -> str:
    return str(isvc["metadata"]["name"])


async def test_failed_cache_is_retried_once_then_degrades(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "rm")
    await make_template(kube, namespace, "rm-t", "rm")
    await make_service(kube, namespace, "retry", {"model": {"name": "rm"}, "caching": {"mode": "Always"}})
    await wait_service(kube, namespace, "retry", CACHE_COMING, "creating")
    tc = ((await kube.list(TEMPLATE_CACHE, namespace))[0])[0]["metadata"]["name"]

    async def fail_with(mc: str) -> None:
        await kube.create(
            MODEL_CACHE,
            manifest(
                MODEL_CACHE,
                mc,
                namespace,
                {"sourceUri": "hf://acme/llama"},
                labels={"aim.eai.amd.com/template-cache.name": tc},
            ),
            namespace,
        )
        await ready(kube, MODEL_CACHE, namespace, mc, {"status": "Failed"})
        await ready(
            kube,
            TEMPLATE_CACHE,
            namespace,
            tc,
            {
                "status": "Failed",
                "modelCaches": {"acme/llama": {"name": mc, "status": "Failed", "model": "acme/llama"}},
            },
        )

    await fail_with("mc-a")
    retrying = await wait_service(
        kube, namespace, "retry", lambda s: (s.get("cache") or {}).get("retryAttempts") == 1, "retry"
    )
    assert condition(retrying["status"], "CacheReady")["reason"] == "CacheRetrying"
    marked = await kube.get(TEMPLATE_CACHE, namespace, tc)
    assert marked is not None and marked["metadata"]["annotations"]["aim.eai.amd.com/cache-retried"] == "1"
    await eventually(
        lambda: _gone(kube, MODEL_CACHE, namespace, "mc-a"), timeout=20, what="the failed model cache deleted"
    )
    await fail_with("mc-b")
    degraded = await wait_service(
        kube, namespace, "retry", has("CacheReady", "False", "CacheFailed"), "degraded"
    )
    assert degraded["status"]["status"] == "Degraded"
    assert await kube.get(MODEL_CACHE, namespace, "mc-b") is not None  # no second retry
    await isvc_of(kube, namespace, "retry")  # runs without the cache rather than not at all


async def _gone(kube: Kube, ref: KindRef, namespace: str, name: str) -> bool:
    return await kube.get(ref, namespace, name) is None


async def test_delete_removes_the_caches_it_created_unless_ready(
    deployer, kube: Kube, namespace: str
) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "dm")
    await make_template(kube, namespace, "dm-t", "dm")
    await make_service(kube, namespace, "gone", {"model": {"name": "dm"}, "caching": {"mode": "Always"}})
    await wait_service(kube, namespace, "gone", CACHE_COMING, "creating")
    tc = ((await kube.list(TEMPLATE_CACHE, namespace))[0])[0]["metadata"]["name"]
    await kube.delete(SERVICE, namespace, "gone")
    await eventually(
        lambda: _gone(kube, TEMPLATE_CACHE, namespace, tc), timeout=30, what="the unready cache deleted"
    )
    await eventually(lambda: _gone(kube, SERVICE, namespace, "gone"), timeout=30, what="the service deleted")


# -- autoscaling, routing, readiness ------------------------------------------------------------


async def test_autoscaling_fields_reach_the_inference_service(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "as")
    await make_template(kube, namespace, "as-t", "as")
    metric = {
        "type": "PodMetric",
        "podmetric": {
            "metric": {
                "backend": "opentelemetry",
                "metricNames": ["vllm:num_requests_running"],
                "query": "vllm:num_requests_running",
            },
            "target": {"type": "Value", "value": "1"},
        },
    }
    await make_service(
        kube,
        namespace,
        "scaled",
        {"model": {"name": "as"}, "minReplicas": 2, "maxReplicas": 5, "autoScaling": {"metrics": [metric]}},
    )
    isvc = await isvc_of(kube, namespace, "scaled")
    predictor = isvc["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (2, 5)
    annotations = isvc["metadata"]["annotations"]
    assert annotations["serving.kserve.io/autoscalerClass"] == "keda"
    assert annotations["sidecar.opentelemetry.io/inject"] == f"{isvc['metadata']['name']}-predictor"
    pm = predictor["autoScaling"]["metrics"][0]["podmetric"]
    assert pm["metric"]["serverAddress"] == "keda-otel-scaler.keda.svc:4317"
    assert pm["target"] == {"type": "Value", "value": "1"}


async def test_routing_on_off_and_invalid_template(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "rt")
    await make_template(kube, namespace, "rt-t", "rt")
    routing = {
        "enabled": True,
        "gatewayRef": {"name": "gw", "namespace": "gateways"},
        "pathTemplate": "/{.metadata.namespace}/{.metadata.labels['team']}/{.metadata.name}",
    }
    await kube.create(
        SERVICE,
        manifest(
            SERVICE,
            "Routed".lower(),
            namespace,
            {"model": {"name": "rt"}, "routing": routing},
            labels={"team": "ML_Team"},
        ),
        namespace,
    )

    async def route() -> dict[str, Any] | None:
        items = (await kube.list(HTTP_ROUTE, namespace))[0]
        return items[0] if items else None

    found = await eventually(route, timeout=30, what="the HTTPRoute")
    rule = found["spec"]["rules"][0]
    assert rule["matches"][0]["path"]["value"] == f"/{namespace}/ml-team/routed"
    assert found["spec"]["parentRefs"][0]["name"] == "gw"
    svc = await wait_service(
        kube, namespace, "routed", lambda s: (s.get("routing") or {}).get("path"), "path"
    )
    assert svc["status"]["routing"]["path"] == f"/{namespace}/ml-team/routed"
    assert condition(svc["status"], "HTTPRouteReady")["reason"] == "HTTPRoutePending"
    # the gateway accepts it
    await kube.patch_status(
        HTTP_ROUTE,
        namespace,
        found["metadata"]["name"],
        {
            "status": {
                "parents": [
                    {
                        "parentRef": {"name": "gw"},
                        "controllerName": "example.com/gw",
                        "conditions": [
                            {
                                "type": "Accepted",
                                "status": "True",
                                "reason": "Accepted",
                                "message": "",
                                "lastTransitionTime": "2026-11-22T00:00:00Z",
                            }
                        ],
                    }
                ]
            }
        },
    )
    await wait_service(
        kube, namespace, "routed", has("HTTPRouteReady", "True", "HTTPRouteAccepted"), "accepted"
    )
    # a label the template needs disappears: Degraded, no route, no silent fallback
    await kube.patch(SERVICE, namespace, "routed", {"metadata": {"labels": {"team": None}}})
    bad = await wait_service(
        kube, namespace, "routed", has("HTTPRouteReady", "False", "PathTemplateInvalid"), "invalid"
    )
    assert bad["status"]["status"] == "Degraded"
    assert "team" in condition(bad["status"], "HTTPRouteReady")["message"]
    await eventually(lambda: _no_routes(kube, namespace), timeout=20, what="the route removed")
    # routing off: no route
    await kube.patch(SERVICE, namespace, "routed", {"spec": {"routing": {"enabled": False}}})
    await wait_service(
        kube, namespace, "routed", has("HTTPRouteReady", "True", "RoutingDisabled"), "routing off"
    )


async def _no_routes(kube: Kube, namespace: str) -> bool:
    return not (await kube.list(HTTP_ROUTE, namespace))[0]


async def test_pod_problems_have_specific_reasons(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    await make_model(kube, namespace, "pp")
    await make_template(kube, namespace, "pp-t", "pp")
    await make_service(kube, namespace, "pull", {"model": {"name": "pp"}})
    isvc = await isvc_of(kube, namespace, "pull")
    pod = await play_kserve(kube, namespace, isvc, ready_pods=False)
    pulling = {
        "waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image: manifest unknown"}
    }
    await kube.patch_status(
        POD, namespace, pod, {"status": {"containerStatuses": [container_status(False, pulling)]}}
    )
    svc = await wait_service(
        kube, namespace, "pull", has("InferenceServicePodsReady", "False", "ImageNotFound"), "pull"
    )
    assert svc["status"]["status"] == "Failed"
    crashing = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting"}}
    last = {"terminated": {"exitCode": 1, "reason": "Error"}}
    status = container_status(False, crashing, restarts=4, lastState=last)
    await kube.patch_status(POD, namespace, pod, {"status": {"containerStatuses": [status]}})
    crash = await wait_service(
        kube, namespace, "pull", has("InferenceServicePodsReady", "False", "CrashLoopBackOff"), "crash"
    )
    assert crash["status"]["status"] == "Degraded"


# -- the legacy group ---------------------------------------------------------------------------


async def test_legacy_service_is_deployed_the_same_way(deployer, kube: Kube, namespace: str) -> None:  # type: ignore[no-untyped-def]
    image_ref, template_ref, service_ref = (
        by_kind(LEGACY, "AIMImage"),
        by_kind(LEGACY, "AIMServiceTemplate"),
        by_kind(LEGACY, "AIMService"),
    )
    await kube.create(
        image_ref,
        manifest(
            image_ref, "old-llama", namespace, {"image": IMAGE, "resources": {"requests": {"cpu": "1"}}}
        ),
        namespace,
    )
    await ready(kube, image_ref, namespace, "old-llama", {"status": "Ready"})
    await kube.create(
        template_ref,
        manifest(
            template_ref,
            "old-t",
            namespace,
            {
                "aimImageName": "old-llama",
                "metric": "latency",
                "precision": "fp16",
                "runtimeConfigName": "default",
            },
        ),
        namespace,
    )
    await ready(
        kube,
        template_ref,
        namespace,
        "old-t",
        {
            "status": "Available",
            "profile": {"metadata": {"type": "optimized", "metric": "latency", "precision": "fp16"}},
        },
    )
    await make_service(
        kube, namespace, "legacy", {"aimImageName": "old-llama", "templateRef": "old-t"}, ref=service_ref
    )
    isvc = await isvc_of(kube, namespace, "legacy")
    assert container(isvc)["image"] == IMAGE
    await play_kserve(kube, namespace, isvc)
    svc = await wait_service(
        kube, namespace, "legacy", lambda s: s.get("status") == "Running", "legacy Running", ref=service_ref
    )
    assert svc["status"]["resolvedTemplate"]["name"] == "old-t"
    assert svc["status"]["resolvedImage"]["name"] == "old-llama"


async def test_waiting_on_a_dependency_is_pending_as_in_the_original(
    deployer, kube: Kube, namespace: str
) -> None:  # type: ignore[no-untyped-def]
    """Issue 18, items 1 and 3: a model still in progress keeps a service Pending (not Starting: no
    InferenceService exists); when every template of a model has failed, the service reports
    ``TemplateNotReady`` and waits (Pending) — a template may still recover."""
    await make_model(kube, namespace, "slow", state="Progressing")
    await make_template(kube, namespace, "slow-t", "slow")
    await make_service(kube, namespace, "waits", {"model": {"name": "slow"}})
    waiting = await wait_service(
        kube, namespace, "waits", has("ModelReady", "False", "ModelNotReady"), "waiting for the model"
    )
    assert waiting["status"]["status"] == "Pending"
    assert condition(waiting["status"], "ModelReady")["message"].startswith("AIMModel slow is Progressing")
    assert not (await kube.list(INFERENCE_SERVICE, namespace))[0]

    await make_model(kube, namespace, "broken")
    await make_template(kube, namespace, "broken-a", "broken", precision="fp8", state="Failed")
    await make_template(kube, namespace, "broken-b", "broken", precision="fp16", state="Failed")
    await make_service(kube, namespace, "may-recover", {"model": {"name": "broken"}})
    failed_templates = await wait_service(
        kube, namespace, "may-recover", has("TemplateReady", "False", "TemplateNotReady"), "not ready"
    )
    assert failed_templates["status"]["status"] == "Pending"
    assert "all 2 templates failed" in condition(failed_templates["status"], "TemplateReady")["message"]
    # and it does recover when one does
    await ready(
        kube,
        TEMPLATE,
        namespace,
        "broken-a",
        {"status": "Ready", "profile": {"metadata": {"type": "optimized"}}},
    )
    await wait_service(kube, namespace, "may-recover", has("TemplateReady", "True", "Resolved"), "recovered")
