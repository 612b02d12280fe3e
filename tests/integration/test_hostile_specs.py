"""Hostile objects the 1.20 API server stores (it does not run CEL rules and cannot compare two
fields or parse an image reference), applied to the real services, which must answer each with a
condition instead of adjusting or ignoring it (issue 15, item 7). What the generated schema can
refuse at apply time is in ``tests/cluster/test_crd_refusals.py``.

Before the fixes: ``minReplicas: 5, maxReplicas: 2`` deployed with the maximum dropped; requests
above limits, half a GPU and 10^30 bytes of memory reached the InferenceService; a model image on
port 99999 was accepted; a 10,000-character path template became a 63-character path; runtime
configs with an unparsable path template or glob were Ready; a GPU override on a CPU template
deployed without a GPU; ``syncInterval: 1ms`` was clamped to 30 s without a word.

Issue 24's batch (each deployed or was Ready with no condition, or said something else): custom
model ids and sources with ``..``, a source on a metadata address, an autoscaling target its type
does not read, a GPU override of 0 on a CPU template, a model whose default template does not
exist, templates with a traversing ``profileId`` or sources, a model cache of size 0 and
``hf://org`` without a repository.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.local.registry import Registry
from aimcore.api.kinds import HTTP_ROUTE, INFERENCE_SERVICE, JOB, NODE, PVC, KindRef, by_kind
from aimcore.runtime import Kube
from tests.helpers import condition, eventually, has, manifest, status_of
from tests.integration.conftest import Services, ensure_service

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
SERVICE = by_kind(AIM, "AIMService")
LEGACY_SERVICE = by_kind(LEGACY, "AIMService")
MODEL = by_kind(AIM, "AIMModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
RUNTIME_CONFIG = by_kind(AIM, "AIMRuntimeConfig")
SOURCE = by_kind(AIM, "AIMClusterModelSource")
MODEL_CACHE = by_kind(AIM, "AIMModelCache")
LEGACY_MODEL_CACHE = by_kind(LEGACY, "AIMModelCache")
IMAGE = "ghcr.io/acme/aim-llama:1.0.0"


def invalid_spec(status: dict[str, Any]) -> bool:
    return bool(has("ConfigValid", "False", "InvalidSpec")(status))


@pytest.fixture
def deployer(running: Services) -> Services:
    """The session's services with discovery, cache and registry-sync stopped: the tests play
    discovery's part (marking models and templates Ready)."""
    for name in ("discovery", "cache", "registry-sync"):
        proc = running.procs.pop(name, None)
        if proc is not None:
            proc.stop()
    return running


@pytest.fixture
async def discovery(running: Services, js: JetStreamContext) -> Services:
    return await ensure_service(running, js, "discovery")


async def ready_model(kube: Kube, namespace: str, name: str, ref: KindRef = MODEL, **spec: Any) -> None:
    await kube.create(ref, manifest(ref, name, namespace, {"image": IMAGE, **spec}), namespace)
    await kube.patch_status(ref, namespace, name, {"status": {"status": "Ready"}})


async def ready_template(
    kube: Kube, namespace: str, name: str, spec: dict[str, Any], profile: dict[str, Any]
) -> None:
    await kube.create(TEMPLATE, manifest(TEMPLATE, name, namespace, spec), namespace)
    status = {"status": "Ready", "profile": {"metadata": {"type": "optimized", **profile}}}
    await kube.patch_status(TEMPLATE, namespace, name, {"status": status})


async def isvcs_owned_by(kube: Kube, namespace: str, service: str) -> list[dict[str, Any]]:
    items = (await kube.list(INFERENCE_SERVICE, namespace))[0]
    return [
        i for i in items if any(o.get("name") == service for o in i["metadata"].get("ownerReferences") or [])
    ]


async def isvc_of(kube: Kube, namespace: str, service: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        owned = await isvcs_owned_by(kube, namespace, service)
        return owned[0] if owned else None

    found: dict[str, Any] = await eventually(probe, timeout=30, what=f"the InferenceService of {service}")
    return found


# -- the deployer ---------------------------------------------------------------------------------

CUSTOM_SOURCE = {"modelId": "acme/tiny", "sourceUri": "hf://acme/tiny", "size": "1Gi"}
CUSTOM = {"hardware": {"cpu": {"requests": "2"}}, "modelSources": [CUSTOM_SOURCE]}
CUSTOM_MODEL = {"custom": {"hardware": {"cpu": {"requests": "2"}}}}

HOSTILE_SERVICES: dict[str, tuple[KindRef, dict[str, Any], str]] = {
    "min-above-max": (
        SERVICE,
        {"minReplicas": 5, "maxReplicas": 2},
        "minReplicas must not be greater than maxReplicas (minReplicas 5, maxReplicas 2)",
    ),
    "legacy-min-above-max": (
        LEGACY_SERVICE,
        {"minReplicas": 3, "maxReplicas": 1},
        "minReplicas must not be greater than maxReplicas",
    ),
    "requests-above-limits": (
        SERVICE,
        {"resources": {"requests": {"cpu": "8"}, "limits": {"cpu": "2"}}},
        "requests.cpu '8' is more than limits.cpu '2'",
    ),
    "half-a-gpu": (SERVICE, {"resources": {"limits": {"amd.com/gpu": "0.5"}}}, "not a whole number"),
    "absurd-memory": (
        SERVICE,
        {"resources": {"limits": {"memory": "1e30"}}},
        "larger than Kubernetes represents",
    ),
    "override-min-vram": (
        SERVICE,
        {"overrides": {"gpu": {"minVram": "128Gi"}}},
        "gpu.minVram cannot be overridden",
    ),
    # issue 24: these deployed, with no condition (or, hf://org, said "cannot reach huggingface.co")
    "custom-model-id-dot-dot": (
        SERVICE,
        {"model": {"custom": {**CUSTOM, "modelSources": [{**CUSTOM_SOURCE, "modelId": "acme/.."}]}}},
        "modelId 'acme/..': the name '..' is a relative path segment",
    ),
    "custom-source-dot-dot": (
        SERVICE,
        {
            "model": {
                "custom": {**CUSTOM, "modelSources": [{**CUSTOM_SOURCE, "sourceUri": "s3://models/../keys"}]}
            }
        },
        "the key prefix has a '.' or '..' segment",
    ),
    "custom-hf-without-repository": (
        SERVICE,
        {"model": {"custom": {**CUSTOM, "modelSources": [{**CUSTOM_SOURCE, "sourceUri": "hf://@main"}]}}},
        "sourceUri 'hf://@main' names no repository",
    ),
    "utilization-without-target": (
        SERVICE,
        {
            "autoScaling": {
                "metrics": [{"type": "PodMetric", "podmetric": {"target": {"type": "Utilization"}}}]
            }
        },
        "type Utilization reads averageUtilization, which is not set",
    ),
    "custom-base-on-port-99999": (
        SERVICE,
        {
            "model": {
                "custom": {
                    "baseImage": "registry.example.com:99999/aim-base:1",
                    "modelSources": [{"modelId": "acme/tiny", "sourceUri": "hf://acme/tiny", "size": "1Gi"}],
                    "hardware": {"cpu": {"requests": "2"}},
                }
            }
        },
        "port 99999 is not in 1-65535",
    ),
}


async def test_service_specs_the_api_server_stores_are_invalid_spec(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    await ready_model(kube, namespace, "llama")
    await ready_model(kube, namespace, "llama", ref=by_kind(LEGACY, "AIMModel"))
    await ready_template(kube, namespace, "llama-t", {"modelName": "llama"}, {"metric": "latency"})
    legacy_template = by_kind(LEGACY, "AIMServiceTemplate")
    await kube.create(
        legacy_template, manifest(legacy_template, "llama-t", namespace, {"aimImageName": "llama"}), namespace
    )
    await kube.patch_status(legacy_template, namespace, "llama-t", {"status": {"status": "Available"}})
    for name, (ref, spec, _) in HOSTILE_SERVICES.items():
        body = {"model": {"name": "llama"}, **spec}
        await kube.create(ref, manifest(ref, name, namespace, body), namespace)
    await kube.create(SERVICE, manifest(SERVICE, "sane", namespace, {"model": {"name": "llama"}}), namespace)

    for name, (ref, _, message) in HOSTILE_SERVICES.items():
        obj = await status_of(kube, ref, namespace, name, invalid_spec, f"{name} InvalidSpec")
        assert message in condition(obj["status"], "ConfigValid")["message"], name
        assert obj["status"]["status"] == "Failed", name
        assert condition(obj["status"], "Ready")["reason"] == "InvalidSpec", name
    await isvc_of(kube, namespace, "sane")  # the deployer deploys what is valid
    for name in HOSTILE_SERVICES:
        assert await isvcs_owned_by(kube, namespace, name) == [], name


async def test_a_path_segment_over_63_characters_is_path_template_invalid(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    await ready_model(kube, namespace, "rt")
    await ready_template(kube, namespace, "rt-t", {"modelName": "rt"}, {"metric": "latency"})
    routing = {"enabled": True, "gatewayRef": {"name": "gw"}, "pathTemplate": "/" + "x" * 10_000}
    await kube.create(
        SERVICE,
        manifest(SERVICE, "long", namespace, {"model": {"name": "rt"}, "routing": routing}),
        namespace,
    )
    obj = await status_of(
        kube, SERVICE, namespace, "long", has("HTTPRouteReady", "False", "PathTemplateInvalid"), "invalid"
    )
    message = condition(obj["status"], "HTTPRouteReady")["message"]
    assert "renders a segment of 10000 characters (at most 63)" in message
    assert len(message) < 400  # the template is not repeated in full
    assert obj["status"]["status"] == "Degraded"
    assert not (await kube.list(HTTP_ROUTE, namespace))[0]  # before: a route to /xxx... (63 x)


async def test_request_timeouts_are_written_as_the_gateway_api_reads_them(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    """``requestTimeout`` is a Go duration; the HTTPRoute's ``timeouts.request`` a Gateway API one
    (``1.5h`` is valid in the first and refused by the second). It was copied as written."""
    await ready_model(kube, namespace, "to")
    await ready_template(kube, namespace, "to-t", {"modelName": "to"}, {"metric": "latency"})
    for name, timeout in (("hour-and-a-half", "1.5h"), ("microseconds", "250us")):
        routing = {"enabled": True, "gatewayRef": {"name": "gw"}, "requestTimeout": timeout}
        await kube.create(
            SERVICE,
            manifest(SERVICE, name, namespace, {"model": {"name": "to"}, "routing": routing}),
            namespace,
        )

    async def route_of(service: str) -> dict[str, Any] | None:
        items = (await kube.list(HTTP_ROUTE, namespace))[0]
        return next(
            (r for r in items if r["metadata"]["labels"].get("aim.eai.amd.com/service") == service), None
        )

    route = await eventually(lambda: route_of("hour-and-a-half"), timeout=30, what="the route")
    assert route["spec"]["rules"][0]["timeouts"] == {"request": "1h30m"}
    bad = await status_of(
        kube,
        SERVICE,
        namespace,
        "microseconds",
        has("HTTPRouteReady", "False", "RequestTimeoutInvalid"),
        "bad",
    )
    assert (
        "requestTimeout '250us' is finer than a millisecond"
        in condition(bad["status"], "HTTPRouteReady")["message"]
    )
    assert bad["status"]["status"] == "Degraded"
    assert await route_of("microseconds") is None


async def test_a_gpu_override_on_a_cpu_template_derives_a_gpu_template(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    await ready_model(kube, namespace, "cpu")
    cpu_spec = {"modelName": "cpu", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}
    await ready_template(kube, namespace, "cpu-t", cpu_spec, {"metric": "latency", "precision": "fp16"})
    overrides = {"gpu": {"model": "MI300X", "requests": 2}}
    await kube.create(
        SERVICE,
        manifest(SERVICE, "wants-gpu", namespace, {"model": {"name": "cpu"}, "overrides": overrides}),
        namespace,
    )
    await status_of(
        kube,
        SERVICE,
        namespace,
        "wants-gpu",
        lambda s: (
            condition(s, "TemplateReady").get("reason") in ("CreatingDerivedTemplate", "TemplateNotReady")
        ),
        "a derived template",
    )

    async def derived_templates() -> list[dict[str, Any]]:
        listed = (await kube.list(TEMPLATE, namespace))[0]
        return [t for t in listed if t["metadata"]["name"].startswith("cpu-t-ovr-")]

    # TemplateNotReady may still be about the base template (its Ready status not seen yet): the
    # derived one is there once the deployer has seen it Ready
    derived = await eventually(derived_templates, timeout=30, what="the derived template")
    assert len(derived) == 1, [t["metadata"]["name"] for t in derived]
    assert derived[0]["spec"]["gpu"] == {"model": "MI300X", "requests": 2, "resourceName": "amd.com/gpu"}
    assert await isvcs_owned_by(kube, namespace, "wants-gpu") == []  # not deployed on the CPU template
    # discovery's part: the derived template is Ready with two GPUs; the service waits for them
    name = derived[0]["metadata"]["name"]
    profile = {"type": "optimized", "metric": "latency", "precision": "fp16", "gpu": "MI300X", "gpu_count": 2}
    await kube.patch_status(
        TEMPLATE, namespace, name, {"status": {"status": "Ready", "profile": {"metadata": profile}}}
    )
    waiting = await status_of(
        kube,
        SERVICE,
        namespace,
        "wants-gpu",
        has("TemplateReady", "False", "RequiredGPUNotInCluster"),
        "no GPU",
    )
    assert "MI300X" in condition(waiting["status"], "TemplateReady")["message"]
    assert await isvcs_owned_by(kube, namespace, "wants-gpu") == []
    node = f"mi300x-{secrets.token_hex(3)}"
    labels = {"amd.com/gpu.device-id": "74a1"}
    await kube.create(
        NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels}}
    )
    try:
        svc = await status_of(
            kube,
            SERVICE,
            namespace,
            "wants-gpu",
            has("TemplateReady", "True", "Resolved"),
            "the derived template",
        )
        assert svc["status"]["resolvedTemplate"]["name"] == name
        isvc = await isvc_of(kube, namespace, "wants-gpu")
        limits = isvc["spec"]["predictor"]["containers"][0]["resources"]["limits"]
        assert limits["amd.com/gpu"] == "2"
    finally:
        await kube.delete(NODE, None, node)


async def test_zero_gpus_on_a_cpu_template_is_reported_not_dropped(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    """``gpu.requests: 0`` asks for GPU nodes without GPU resources; a CPU template names no GPU,
    so there are no such nodes to choose. Before (issue 24): the service deployed on CPU, Running,
    the override dropped without a word. With the GPU model named, it is honoured (below). (The
    legacy ``gpuSelector.count`` cannot be 0: the schema refuses it.)"""
    await ready_model(kube, namespace, "cpu0")
    cpu_spec = {"modelName": "cpu0", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}
    await ready_template(kube, namespace, "cpu0-t", cpu_spec, {"metric": "latency", "precision": "fp16"})
    for name, template in (("zero-named", {"name": "cpu0-t"}), ("zero-selected", None)):
        spec: dict[str, Any] = {"model": {"name": "cpu0"}, "overrides": {"gpu": {"requests": 0}}}
        if template:
            spec["template"] = template
        await kube.create(SERVICE, manifest(SERVICE, name, namespace, spec), namespace)
    for ref, name, field in (
        (SERVICE, "zero-named", "overrides.gpu.requests"),
        (SERVICE, "zero-selected", "overrides.gpu.requests"),
    ):
        obj = await status_of(
            kube, ref, namespace, name, has("TemplateReady", "False", "GPUOverrideNotApplicable"), name
        )
        message = condition(obj["status"], "TemplateReady")["message"]
        assert f"{field}: 0 asks for GPU nodes without GPU resources" in message, message
        assert "names no GPU model" in message and "set the GPU model in the override" in message
        assert obj["status"]["status"] == "Failed", name
        assert condition(obj["status"], "Ready")["reason"] == "GPUOverrideNotApplicable", name
        assert await isvcs_owned_by(kube, namespace, name) == [], name
    derived = [
        t["metadata"]["name"]
        for t in (await kube.list(TEMPLATE, namespace))[0]
        if "-ovr-" in t["metadata"]["name"]
    ]
    assert derived == []


async def test_gpu_count_and_resource_overrides_are_honoured(  # type: ignore[no-untyped-def]
    deployer, kube: Kube, namespace: str
) -> None:
    """``gpu.requests: 0`` ("GPU nodes, no GPU resources", per the seed) was dropped, and
    ``gpu.resourceName`` not looked at: the service got the template's GPU either way."""
    node = f"mi355x-{secrets.token_hex(3)}"
    labels = {"amd.com/gpu.device-id": "75a3"}
    await kube.create(
        NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels}}
    )
    try:
        await _zero_gpus(kube, namespace)
        await _other_resource(kube, namespace)
    finally:
        await kube.delete(NODE, None, node)


async def _zero_gpus(kube: Kube, namespace: str) -> None:
    await ready_model(kube, namespace, "one")
    gpu = {"model": "MI355X", "requests": 1}
    profile = {"metric": "latency", "precision": "fp8", "gpu": "MI355X", "gpu_count": 1}
    await ready_template(kube, namespace, "one-t", {"modelName": "one", "gpu": gpu}, profile)
    overrides = {"gpu": {"requests": 0}}
    await kube.create(
        SERVICE,
        manifest(SERVICE, "no-gpus", namespace, {"model": {"name": "one"}, "overrides": overrides}),
        namespace,
    )

    async def derived() -> dict[str, Any] | None:
        items = (await kube.list(TEMPLATE, namespace))[0]
        return next((t for t in items if t["metadata"]["name"].startswith("one-t-ovr-0gpu-")), None)

    template = await eventually(derived, timeout=30, what="the derived template with 0 GPUs")
    assert template["spec"]["gpu"]["requests"] == 0 and template["spec"]["gpu"]["model"] == "MI355X"
    assert await isvcs_owned_by(kube, namespace, "no-gpus") == []  # not deployed with the template's GPU
    status = {
        "status": "Ready",
        "profile": {"metadata": {"type": "optimized", **profile, "gpu_count": 0}},
        "resolvedHardware": {"gpu": {"model": "MI355X", "requests": 0}},
    }
    await kube.patch_status(TEMPLATE, namespace, template["metadata"]["name"], {"status": status})
    isvc = await isvc_of(kube, namespace, "no-gpus")
    resources = isvc["spec"]["predictor"]["containers"][0].get("resources") or {}
    assert "amd.com/gpu" not in (resources.get("limits") or {}), resources
    assert "affinity" in isvc["spec"]["predictor"]  # still on MI355X nodes


async def _other_resource(kube: Kube, namespace: str) -> None:
    await ready_model(kube, namespace, "two")
    profile = {"metric": "latency", "precision": "fp8", "gpu": "MI355X", "gpu_count": 1}
    gpu = {"model": "MI355X", "requests": 1}
    await ready_template(kube, namespace, "two-t", {"modelName": "two", "gpu": gpu}, profile)
    overrides = {"gpu": {"resourceName": "amd.com/gpu-partition"}}
    await kube.create(
        SERVICE,
        manifest(SERVICE, "partition", namespace, {"model": {"name": "two"}, "overrides": overrides}),
        namespace,
    )

    async def derived() -> dict[str, Any] | None:
        items = (await kube.list(TEMPLATE, namespace))[0]
        return next(
            (t for t in items if (t["spec"].get("gpu") or {}).get("resourceName") == "amd.com/gpu-partition"),
            None,
        )

    template = await eventually(derived, timeout=30, what="the derived template with the other resource")
    assert template["metadata"]["name"].startswith("two-t-ovr-")
    assert await isvcs_owned_by(kube, namespace, "partition") == []
    profile = {"type": "optimized", "metric": "latency", "precision": "fp8", "gpu": "MI355X", "gpu_count": 1}
    await kube.patch_status(
        TEMPLATE,
        namespace,
        template["metadata"]["name"],
        {"status": {"status": "Ready", "profile": {"metadata": profile}}},
    )
    isvc = await isvc_of(kube, namespace, "partition")
    limits = isvc["spec"]["predictor"]["containers"][0]["resources"]["limits"]
    assert limits.get("amd.com/gpu-partition") == "1" and "amd.com/gpu" not in limits, limits


# -- discovery ------------------------------------------------------------------------------------


async def test_models_the_api_server_stores_are_invalid_spec(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    cases = {
        "port-99999": (
            {"image": "ghcr.io:99999/acme/llama:1.0", "discovery": {"extractMetadata": False}},
            "port 99999 is not in 1-65535",
        ),
        "zero-cpu": (
            {
                "image": IMAGE,
                "modelSources": [{"modelId": "acme/tiny", "sourceUri": "hf://acme/tiny", "size": "1Gi"}],
                "custom": {"hardware": {"cpu": {"requests": "0"}}},
            },
            "requests must be > 0",
        ),
        # issue 24: these were Ready, their templates created and usable
        "source-model-id-dot-dot": (
            {"image": IMAGE, **CUSTOM_MODEL, "modelSources": [{**CUSTOM_SOURCE, "modelId": "acme/.."}]},
            "spec.modelSources.0.modelId: modelId 'acme/..'",
        ),
        "source-uri-dot-dot": (
            {
                "image": IMAGE,
                **CUSTOM_MODEL,
                "modelSources": [{**CUSTOM_SOURCE, "sourceUri": "hf://acme/../x"}],
            },
            "spec.modelSources.0.sourceUri: sourceUri 'hf://acme/../x' has 3 path segments",
        ),
    }
    for name, (spec, _) in cases.items():
        await kube.create(MODEL, manifest(MODEL, name, namespace, spec), namespace)
    for name, (_, message) in cases.items():
        obj = await status_of(kube, MODEL, namespace, name, invalid_spec, f"{name} InvalidSpec")
        assert message in condition(obj["status"], "ConfigValid")["message"], name
        assert obj["status"]["status"] == "Failed", name
    templates = (await kube.list(TEMPLATE, namespace))[0]
    assert not [t["metadata"]["name"] for t in templates if t["metadata"]["name"].startswith("source-")]


async def test_templates_the_api_server_stores_are_invalid_spec(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """Before: ``profileId: ../../etc/passwd`` ran a discovery Job (its pod pending: "waiting for a
    node") with ``AIM_PROFILE_ID=../../etc/passwd``; sources with ``..`` were used as written."""
    model = {"image": IMAGE, "discovery": {"extractMetadata": False}}
    await kube.create(MODEL, manifest(MODEL, "tm", namespace, model), namespace)
    cases = {
        "profile-traversal": (
            {"modelName": "tm", "profileId": "../../etc/passwd"},
            "spec.profileId: profileId '../../etc/passwd' is not a profile name",
        ),
        "sources-traversal": (
            {"modelName": "tm", "modelSources": [{**CUSTOM_SOURCE, "sourceUri": "s3://models/a/../../b"}]},
            "sourceUri 's3://models/a/../../b': the key prefix has a '.' or '..' segment",
        ),
    }
    for name, (spec, _) in cases.items():
        await kube.create(TEMPLATE, manifest(TEMPLATE, name, namespace, spec), namespace)
    for name, (_, message) in cases.items():
        obj = await status_of(kube, TEMPLATE, namespace, name, invalid_spec, f"{name} InvalidSpec")
        assert message in condition(obj["status"], "ConfigValid")["message"], name
        assert obj["status"]["status"] == "Failed", name
        assert condition(obj["status"], "Ready")["reason"] == "InvalidSpec", name
    jobs = (await kube.list(JOB, namespace))[0]
    assert not [j["metadata"]["name"] for j in jobs], "no discovery Job for an invalid template"


async def test_model_sources_on_a_metadata_address_are_address_not_allowed(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """Before (issue 24): a custom model whose source is on the metadata address deployed (the
    inference container, not the operator, would fetch it: the connect-time policy never saw it).
    Now discovery judges the sources a spec names with the outbound policy: the model (or template)
    is ``ConfigValid=False/AddressNotAllowed``, Failed, and a service using it Failed, undeployed."""
    metadata_bucket = {**CUSTOM_SOURCE, "sourceUri": "s3://169.254.169.254/latest/meta-data"}
    metadata_endpoint = {
        **CUSTOM_SOURCE,
        "sourceUri": "s3://models/acme/tiny",
        "env": [{"name": "AWS_ENDPOINT_URL", "value": "http://169.254.169.254"}],
    }
    for name, source in (("metadata-bucket", metadata_bucket), ("metadata-endpoint", metadata_endpoint)):
        body = {
            "model": {"custom": {**CUSTOM, "modelSources": [source]}},
            "template": {"allowUnoptimized": True},
        }
        await kube.create(SERVICE, manifest(SERVICE, name, namespace, body), namespace)
    hf = {**CUSTOM_SOURCE, "env": [{"name": "HF_ENDPOINT", "value": "http://metadata.google.internal"}]}
    await kube.create(
        MODEL,
        manifest(MODEL, "ht", namespace, {"image": IMAGE, "discovery": {"extractMetadata": False}}),
        namespace,
    )
    await kube.create(
        TEMPLATE,
        manifest(TEMPLATE, "metadata-hub", namespace, {"modelName": "ht", "modelSources": [hf]}),
        namespace,
    )

    for name, says in (
        ("metadata-bucket", "the bucket: address 169.254.169.254 (a cloud metadata address) is not allowed"),
        ("metadata-endpoint", "AWS_ENDPOINT_URL: address 169.254.169.254 (a cloud metadata address)"),
    ):
        svc = await status_of(
            kube, SERVICE, namespace, name, lambda s: s.get("status") == "Failed", f"{name} Failed"
        )
        model_ready = condition(svc["status"], "ModelReady")
        assert model_ready["reason"] == "ModelNotReady", model_ready
        assert "is Failed: AddressNotAllowed: spec.modelSources[0]" in model_ready["message"], model_ready
        assert says in model_ready["message"], model_ready
        # the custom model the deployer created for the service says why
        (model,) = [
            m
            for m in (await kube.list(MODEL, namespace))[0]
            if says in condition(m.get("status") or {}, "ConfigValid").get("message", "")
        ]
        assert condition(model["status"], "ConfigValid")["reason"] == "AddressNotAllowed"
        assert model["status"]["status"] == "Failed"
        assert await isvcs_owned_by(kube, namespace, name) == [], name
    template = await status_of(
        kube, TEMPLATE, namespace, "metadata-hub", has("ConfigValid", "False", "AddressNotAllowed"), "refused"
    )
    message = condition(template["status"], "ConfigValid")["message"]
    assert "HF_ENDPOINT: host 'metadata.google.internal' is a cloud metadata endpoint" in message
    assert template["status"]["status"] == "Failed"


async def test_a_default_template_that_does_not_exist_is_said_on_the_model_and_its_services(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """Before (issue 24): the model was Ready and the service deployed another template, picked by
    automatic selection, without a word. Now the model is Degraded (``DefaultTemplateNotFound``)
    and a service relying on the default fails (``TemplateNotFound``, ``ReferenceNotFound``) until
    the template exists; then both recover and the service runs on it."""
    spec = {"image": IMAGE, **CUSTOM_MODEL, "modelSources": [CUSTOM_SOURCE], "defaultServiceTemplate": "fast"}
    await kube.create(MODEL, manifest(MODEL, "dm", namespace, spec), namespace)
    service = {"model": {"name": "dm"}, "template": {"allowUnoptimized": True}}
    await kube.create(SERVICE, manifest(SERVICE, "uses-default", namespace, service), namespace)

    model = await status_of(
        kube,
        MODEL,
        namespace,
        "dm",
        has("ServiceTemplatesReady", "False", "DefaultTemplateNotFound"),
        "the model says its default template is missing",
    )
    message = condition(model["status"], "ServiceTemplatesReady")["message"]
    assert message.startswith(
        "spec.defaultServiceTemplate 'fast' names no AIMServiceTemplate in namespace"
    ), message
    assert model["status"]["status"] == "Degraded"
    svc = await status_of(
        kube,
        SERVICE,
        namespace,
        "uses-default",
        has("TemplateReady", "False", "TemplateNotFound"),
        "the service says the model's default template is missing",
    )
    message = condition(svc["status"], "TemplateReady")["message"]
    assert "AIMModel dm has spec.defaultServiceTemplate 'fast', but there is no AIMServiceTemplate" in message
    assert condition(svc["status"], "ConfigValid")["reason"] == "ReferenceNotFound"
    assert svc["status"]["status"] == "Failed"
    assert await isvcs_owned_by(kube, namespace, "uses-default") == []  # not another template instead

    template = {"modelName": "dm", "modelSources": [CUSTOM_SOURCE], "resources": {"requests": {"cpu": "2"}}}
    await kube.create(TEMPLATE, manifest(TEMPLATE, "fast", namespace, template), namespace)
    await status_of(kube, MODEL, namespace, "dm", lambda s: s.get("status") == "Ready", "the model Ready")
    svc = await status_of(
        kube, SERVICE, namespace, "uses-default", has("TemplateReady", "True", "Resolved"), "the default used"
    )
    assert svc["status"]["resolvedTemplate"]["name"] == "fast"
    assert "the model's default template" in condition(svc["status"], "TemplateReady")["message"]
    await isvc_of(kube, namespace, "uses-default")


async def test_runtime_configs_no_service_can_use_are_invalid_config(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    cases = {
        "long-segment": (
            {"routing": {"pathTemplate": "/" + "x" * 10_000}},
            "routing.pathTemplate '/xxxxxxxxxx",
        ),
        "unbalanced": ({"routing": {"pathTemplate": "/{.metadata.name"}}, "unbalanced '{'"),
        "wildcard": ({"routing": {"pathTemplate": "/{.metadata.labels[*]}"}}, "unsupported JSONPath"),
        "bad-glob": (
            {"labelPropagation": {"enabled": True, "match": ["team-*", "cost-[center"]}},
            "labelPropagation.match[1]: pattern 'cost-[center': character class '[' is not closed",
        ),
        "sane": ({"routing": {"pathTemplate": "/{.metadata.namespace}/{.metadata.name}"}}, None),
    }
    for name, (spec, _) in cases.items():
        await kube.create(RUNTIME_CONFIG, manifest(RUNTIME_CONFIG, name, namespace, spec), namespace)
    for name, (_, message) in cases.items():
        if message is None:
            await status_of(kube, RUNTIME_CONFIG, namespace, name, has("Ready", "True", "ConfigValid"), name)
            continue
        obj = await status_of(
            kube, RUNTIME_CONFIG, namespace, name, has("Ready", "False", "InvalidConfig"), name
        )
        assert message in condition(obj["status"], "Ready")["message"], name
        assert condition(obj["status"], "ConfigValid")["reason"] == "InvalidConfig", name


# -- the cache service ----------------------------------------------------------------------------


@pytest.fixture
async def cache(
    running: Services, js: JetStreamContext, tmp_path_factory: pytest.TempPathFactory
) -> Services:
    env = {"AIM_CACHE_EXECUTOR": "local", "AIM_CACHE_DIR": str(tmp_path_factory.mktemp("model-cache"))}
    return await ensure_service(running, js, "cache", env=env)


async def test_caches_the_api_server_stores_are_invalid_spec(  # type: ignore[no-untyped-def]
    cache, kube: Kube, namespace: str
) -> None:
    """Before: ``size: 0`` made a 1 GiB volume (``"0Gi"``) or listed the source as if no size were
    given (``0``); ``hf://acme`` failed later as "cannot reach huggingface.co"; a template cache's
    sources with ``..`` were downloaded as written."""
    cases: dict[str, tuple[KindRef, dict[str, Any], str]] = {
        "size-zero": (
            MODEL_CACHE,
            {"sourceUri": "hf://acme/tiny", "size": 0},
            "spec.size: size must be more than 0",
        ),
        "size-zero-gi": (
            MODEL_CACHE,
            {"sourceUri": "hf://acme/tiny", "size": "0Gi"},
            "spec.size: size must be more than 0 (is '0Gi'): give the model's size",
        ),
        "legacy-size-zero": (LEGACY_MODEL_CACHE, {"sourceUri": "hf://acme/tiny", "size": "0"}, "spec.size"),
        "hf-without-repository": (
            MODEL_CACHE,
            {"sourceUri": "hf://@main"},
            "spec.sourceUri: sourceUri 'hf://@main' names no repository",
        ),
        "template-cache-traversal": (
            by_kind(AIM, "AIMTemplateCache"),
            {"templateName": "t", "modelSources": [{**CUSTOM_SOURCE, "modelId": "acme/.."}]},
            "spec.modelSources.0.modelId: modelId 'acme/..'",
        ),
    }
    for name, (ref, spec, _) in cases.items():
        await kube.create(ref, manifest(ref, name, namespace, spec), namespace)
    for name, (ref, _, message) in cases.items():
        obj = await status_of(kube, ref, namespace, name, invalid_spec, f"{name} InvalidSpec")
        assert message in condition(obj["status"], "ConfigValid")["message"], name
        assert condition(obj["status"], "Ready")["reason"] == "InvalidSpec", name
        assert obj["status"]["status"] == "Failed", name
    assert not (await kube.list(PVC, namespace))[0]  # no volume for any of them


# -- registry-sync --------------------------------------------------------------------------------


@pytest.fixture
async def source_name(kube: Kube) -> AsyncIterator[str]:
    name = f"src-clamped-{secrets.token_hex(3)}"
    yield name
    await kube.delete(SOURCE, None, name)
    models, _ = await kube.list(
        by_kind(AIM, "AIMClusterModel"), label_selector=f"aim.eai.amd.com/model-source={name}"
    )
    for model in models:
        await kube.delete(by_kind(AIM, "AIMClusterModel"), None, model["metadata"]["name"])


async def test_a_clamped_sync_interval_is_reported(  # type: ignore[no-untyped-def]
    running, js: JetStreamContext, kube: Kube, oci_registry: Registry, source_name: str
) -> None:
    await ensure_service(running, js, "registry-sync")
    repository = f"clamp{secrets.token_hex(3)}/model"
    spec = {
        "registry": oci_registry.host,
        "syncInterval": "1ms",
        "filters": [{"image": f"{repository}:1.0.0"}],
    }
    await kube.create(SOURCE, manifest(SOURCE, source_name, None, spec))
    obj = await status_of(
        kube, SOURCE, None, source_name, has("Ready", "True", "Synced"), "the source synced"
    )
    valid = condition(obj["status"], "ConfigValid")
    assert (valid["status"], valid["reason"]) == ("True", "SyncIntervalClamped")
    assert valid["message"] == "syncInterval 1ms is below the minimum of 30s; syncing every 30s"
