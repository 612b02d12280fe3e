"""The discovery service as a real process, against a real registry, API server (with the garbage
collector and Job controller) and a fake kubelet serving the discovery pods' logs.

Nodes and cluster-scoped objects are shared by the session: GPU models are chosen per test (MI355X
never has a node, MI325X only in the GPU test) and cluster objects get random names."""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any

import pytest
from nats.js import JetStreamContext

from aim_dev.local.registry import Registry
from aim_dev.testing.kubelet import FakeKubelet, bind_pod, finish_pod, wait_for_service_account
from aim_dev.testing.oci import push_image
from aimcore.api.bus import subjects
from aimcore.api.kinds import JOB, NAMESPACE, NODE, POD, SECRET, KindRef, by_kind
from aimcore.domain.naming import derived_name
from aimcore.runtime import ApiException, Kube
from tests.file_server import FileServer
from tests.helpers import condition, eventually, has, manifest, status_of, stored_messages
from tests.integration.conftest import ensure_service
from tests.oci_servers import PASSWORD, Servers, registry_servers

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
MODEL = by_kind(AIM, "AIMModel")
CLUSTER_MODEL = by_kind(AIM, "AIMClusterModel")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
CLUSTER_TEMPLATE = by_kind(AIM, "AIMClusterServiceTemplate")
TEMPLATE_CACHE = by_kind(AIM, "AIMTemplateCache")
RUNTIME_CONFIG = by_kind(AIM, "AIMRuntimeConfig")
CLUSTER_RUNTIME_CONFIG = by_kind(AIM, "AIMClusterRuntimeConfig")
LEGACY_IMAGE = by_kind(LEGACY, "AIMImage")
LEGACY_TEMPLATE = by_kind(LEGACY, "AIMServiceTemplate")
LEGACY_MODEL = by_kind(LEGACY, "AIMModel")
SYSTEM_NS = "aim-system"

DEPLOYMENTS = (
    "{'gpuModel': 'MI355X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency'}, "
    "{'gpuModel': 'MI355X', 'gpuCount': 8, 'precision': 'fp16', 'metric': 'throughput'}"
)
AIM_LABELS = {
    "com.amd.aim.model.canonicalName": "acme/demo-7b",
    "com.amd.aim.model.recommendedDeployments": DEPLOYMENTS,
    "org.opencontainers.image.title": "demo",
}

DISCOVERY_OUTPUT = [
    {
        "filename": "vllm-mi325x-fp8-tp1-latency.yaml",
        "profile": {
            "model": "acme/demo-7b",
            "metadata": {
                "engine": "vllm",
                "gpu": "MI325X",
                "precision": "fp8",
                "gpu_count": 1,
                "metric": "latency",
                "type": "optimized",
            },
            "engine_args": {"tensor-parallel-size": 1},
            "env_vars": {"VLLM_USE_TRITON_FLASH_ATTN": 0},
        },
        "models": [{"name": "acme/demo-7b", "source": "hf://acme/demo-7b", "size_gb": 0.5}],
    }
]


@pytest.fixture
async def discovery(running, js: JetStreamContext, kube: Kube):  # type: ignore[no-untyped-def]
    """The session's services plus discovery (started once, then shared)."""
    if await kube.get(NAMESPACE, None, SYSTEM_NS) is None:
        try:
            await kube.create(
                NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}}
            )
        except ApiException as exc:
            if exc.status != 409:
                raise
    return await ensure_service(running, js, "discovery")


def suffix() -> str:
    return secrets.token_hex(3)


async def owned_templates(kube: Kube, namespace: str, model_uid: str) -> dict[str, dict[str, Any]]:
    items, _ = await kube.list(TEMPLATE, namespace)
    return {
        t["metadata"]["name"]: t
        for t in items
        if any(o["uid"] == model_uid for o in t["metadata"].get("ownerReferences") or [])
    }


async def test_image_labels_create_templates_that_go_with_the_model(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, oci_registry: Registry
) -> None:
    repo = f"disc{suffix()}/aim-demo"
    push_image(oci_registry.url, repo, "0.1.0", AIM_LABELS)
    image = f"{oci_registry.host}/{repo}:0.1.0"
    await kube.create(MODEL, manifest(MODEL, "demo", namespace, {"image": image}), namespace)

    model = await status_of(
        kube, MODEL, namespace, "demo", lambda s: s.get("status") == "NotAvailable", "the model NotAvailable"
    )
    status = model["status"]
    assert status["sourceType"] == "Image"
    assert status["imageMetadata"]["model"]["canonicalName"] == "acme/demo-7b"
    assert status["imageMetadata"]["oci"]["title"] == "demo"
    assert condition(status, "ImageMetadataReady")["reason"] == "ImageMetadataFound"
    assert condition(status, "ServiceTemplatesReady")["reason"] == "NoTemplatesAvailable"
    assert condition(status, "RuntimeConfigReady")["reason"] == "DefaultConfigNotFound"
    assert "resolvedRuntimeConfig" not in status

    uid = model["metadata"]["uid"]
    templates = await owned_templates(kube, namespace, uid)
    expected = {
        derived_name([image, "1x-MI355X-lat-fp8"], [f"demo-{image}-MI355X-x1-latency-fp8"], hash_length=4): (
            1,
            "fp8",
        ),
        derived_name(
            [image, "8x-MI355X-thr-fp16"], [f"demo-{image}-MI355X-x8-throughput-fp16"], hash_length=4
        ): (
            8,
            "fp16",
        ),
    }
    assert sorted(templates) == sorted(expected)
    for name, (count, precision) in expected.items():
        template = templates[name]
        labels = template["metadata"]["labels"]
        assert labels["aim.eai.amd.com/model"] == "demo"
        assert labels["aim.eai.amd.com/origin"] == "auto-generated"
        (owner,) = template["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("AIMModel", "demo", True)
        assert template["spec"]["modelName"] == "demo"
        # as the original writes them (issue 39, point 8): spec.hardware.gpu, no type
        assert template["spec"]["hardware"]["gpu"]["requests"] == count
        assert template["spec"]["hardware"]["gpu"]["model"] == "MI355X"
        assert "gpu" not in template["spec"] and "type" not in template["spec"]
        assert template["spec"]["precision"] == precision
        done = await status_of(
            kube,
            TEMPLATE,
            namespace,
            name,
            lambda s: s.get("status") == "NotAvailable",
            f"{name} NotAvailable",
        )
        assert condition(done["status"], "GPUReady")["reason"] == "GPUNotAvailable"
        assert done["status"]["resolvedModel"]["name"] == "demo"

    await kube.delete(MODEL, namespace, "demo")

    async def collected() -> bool:
        return not await owned_templates(kube, namespace, uid)

    await eventually(collected, timeout=60, what="the garbage collector to delete the templates")


async def test_bad_images_and_secrets_give_clear_conditions(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, oci_registry: Registry
) -> None:
    org = f"bad{suffix()}"
    push_image(
        oci_registry.url,
        f"{org}/malformed",
        "1.0",
        {"com.amd.aim.model.recommendedDeployments": "{{not json"},
    )
    cases = {
        "missing-image": ({"image": f"{oci_registry.host}/{org}/nothing:1.0"}, "ImageNotFound"),
        "missing-secret": (
            {"image": f"{oci_registry.host}/{org}/malformed:1.0", "imagePullSecrets": [{"name": "nosuch"}]},
            "SecretNotFound",
        ),
        "malformed-labels": (
            {"image": f"{oci_registry.host}/{org}/malformed:1.0"},
            "MetadataExtractionFailed",
        ),
    }
    for name, (spec, _) in cases.items():
        await kube.create(MODEL, manifest(MODEL, name, namespace, spec), namespace)
    for name, (_, reason) in cases.items():
        model = await status_of(
            kube, MODEL, namespace, name, lambda s, r=reason: has("ImageMetadataReady", "False", r)(s), name
        )
        status = model["status"]
        message = condition(status, "ImageMetadataReady")["message"]
        assert message, f"{name}: no message"
        assert status["status"] == "Failed", (name, status)
        assert condition(status, "Ready")["status"] == "False"
        # no "The model defines no templates": the templates wait for the metadata, saying why
        templates = condition(status, "ServiceTemplatesReady")
        assert (templates["status"], templates["reason"]) == ("False", "AwaitingMetadata"), templates
        assert reason in templates["message"], templates
    assert (
        "nosuch"
        in condition((await kube.get(MODEL, namespace, "missing-secret"))["status"], "ImageMetadataReady")[
            "message"
        ]
    )
    # the original's vocabulary: a missing upstream object (the pull secret) is ReferenceNotFound,
    # with ConfigValid=False; the component keeps the specific SecretNotFound (issue 18)
    secretless = (await kube.get(MODEL, namespace, "missing-secret"))["status"]
    config = condition(secretless, "ConfigValid")
    assert (config["status"], config["reason"]) == ("False", "ReferenceNotFound")
    assert "nosuch" in config["message"]
    assert condition(secretless, "Ready")["reason"] == "ReferenceNotFound"
    assert "gpuModel" not in json.dumps(
        condition((await kube.get(MODEL, namespace, "malformed-labels"))["status"], "Ready")
    )


async def test_named_runtime_config_missing_then_created_and_merged(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    config = f"rc-{suffix()}"
    spec = {
        "image": "example.invalid/acme/air-gapped:1.0",
        "runtimeConfigName": config,
        "imageMetadata": {"model": {"canonicalName": "acme/air"}},
    }
    await kube.create(MODEL, manifest(MODEL, "air", namespace, spec), namespace)
    model = await status_of(
        kube, MODEL, namespace, "air", has("RuntimeConfigReady", "False", "ConfigNotFound"), "ConfigNotFound"
    )
    assert model["status"]["status"] == "Failed"
    assert condition(model["status"], "ConfigValid")["reason"] == "ReferenceNotFound"

    await kube.create(
        CLUSTER_RUNTIME_CONFIG,
        manifest(
            CLUSTER_RUNTIME_CONFIG,
            config,
            None,
            {"routing": {"enabled": False}, "storage": {"pvcHeadroomPercent": 20}},
        ),
    )
    try:
        await kube.create(
            RUNTIME_CONFIG,
            manifest(
                RUNTIME_CONFIG,
                config,
                namespace,
                {"routing": {"enabled": True, "gatewayRef": {"name": "gw"}}},
            ),
            namespace,
        )
        model = await status_of(
            kube,
            MODEL,
            namespace,
            "air",
            lambda s: (s.get("resolvedRuntimeConfig") or {}).get("scope") == "Merged",
            "the model to resolve the merged config",
        )
        status = model["status"]
        ns_config = await kube.get(RUNTIME_CONFIG, namespace, config)
        assert status["resolvedRuntimeConfig"] == {
            "name": config,
            "namespace": namespace,
            "scope": "Merged",
            "kind": "AIMRuntimeConfig",
            "uid": ns_config["metadata"]["uid"],
        }
        assert condition(status, "RuntimeConfigReady")["reason"] == "ConfigFound"
        assert condition(status, "ImageMetadataReady")["reason"] == "MetadataFromSpec"
        # copied into status, as the original does for metadata it reads (issue 18)
        assert status["imageMetadata"] == spec["imageMetadata"]
        assert status["status"] != "Failed"
        rc = await status_of(
            kube,
            RUNTIME_CONFIG,
            namespace,
            config,
            lambda s: condition(s, "Ready").get("status") == "True",
            "rc Ready",
        )
        assert "merged over AIMClusterRuntimeConfig" in condition(rc["status"], "Ready")["message"]
    finally:
        await kube.delete(CLUSTER_RUNTIME_CONFIG, None, config)


async def test_custom_model_template_ready_from_inline_sources_and_caching(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, js: JetStreamContext
) -> None:
    sources = [{"modelId": "acme/custom-1b", "sourceUri": "s3://models/acme/custom-1b", "size": "2Gi"}]
    spec = {
        "image": "example.invalid/aim-base:1.0",
        "modelSources": sources,
        "custom": {"hardware": {"cpu": {"requests": "2"}}},
    }
    await kube.create(MODEL, manifest(MODEL, "custom", namespace, spec), namespace)
    model = await status_of(
        kube, MODEL, namespace, "custom", lambda s: s.get("status") == "Ready", "custom model Ready"
    )
    assert model["status"]["sourceType"] == "Custom"
    assert condition(model["status"], "ServiceTemplatesReady")["reason"] == "AllTemplatesReady"
    (template,) = (await owned_templates(kube, namespace, model["metadata"]["uid"])).values()
    assert template["metadata"]["name"].startswith("custom-custom-")
    assert template["spec"]["modelSources"] == sources
    assert template["spec"]["type"] == "unoptimized"
    assert template["spec"]["resources"]["requests"]["cpu"] == "2"
    status = (await kube.get(TEMPLATE, namespace, template["metadata"]["name"]))["status"]
    assert status["modelSources"] == sources
    discovered = condition(status, "Discovered")
    assert discovered["reason"] == "InlineModelSources"
    # the original's message exactly, which automation matches (issues 18 and 28); how many sources
    # and that no Job runs are in status.modelSources and the audit decision
    assert discovered["message"] == "Model sources provided in-line in spec", discovered
    subject = subjects.decision_subject("discovery", TEMPLATE, namespace, template["metadata"]["name"])

    async def decision() -> dict[str, Any] | None:
        decisions = [json.loads(msg.data) for msg in await stored_messages(js, subject)]
        return next((dict(d) for d in decisions if d["reason"] == "InlineModelSources"), None)

    said = await eventually(decision, timeout=10, what="the inline-sources decision")
    assert said["message"] == "1 model source(s) given in the spec; no discovery job", said

    # a namespaced template with caching enabled gets its AIMTemplateCache
    cached = manifest(
        TEMPLATE,
        "cached",
        namespace,
        {"modelName": "custom", "modelSources": sources, "caching": {"enabled": True}},
    )
    await kube.create(TEMPLATE, cached, namespace)
    done = await status_of(
        kube,
        TEMPLATE,
        namespace,
        "cached",
        lambda s: (s.get("resolvedCache") or {}).get("uid"),
        "resolvedCache",
    )
    cache = await kube.get(TEMPLATE_CACHE, namespace, "cached")
    assert cache is not None
    assert cache["spec"]["templateName"] == "cached"
    assert cache["spec"]["modelSources"] == sources
    assert cache["metadata"]["ownerReferences"][0]["uid"] == done["metadata"]["uid"]
    assert done["status"]["resolvedCache"]["uid"] == cache["metadata"]["uid"]


async def templates_of(
    kube: Kube, ref: KindRef, owner: dict[str, Any], count: int
) -> dict[str, dict[str, Any]]:
    """The ``count`` templates of kind ``ref`` a model owns, by alias (``""``: none), once made."""

    async def made() -> dict[str, dict[str, Any]] | None:
        items, _ = await kube.list(ref, owner["metadata"].get("namespace"))
        found = {
            (t["metadata"].get("labels") or {}).get("aim.eai.amd.com/template.alias", ""): t
            for t in items
            if any(o["uid"] == owner["metadata"]["uid"] for o in t["metadata"].get("ownerReferences") or [])
        }
        return found if len(found) == count else None

    found: dict[str, dict[str, Any]] = await eventually(
        made, timeout=30, what=f"the templates of {owner['metadata']['name']}"
    )
    return found


async def test_templates_of_custom_models_carry_their_hardware_the_released_way(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """Issue 28, items 1 and 2: the templates made for a custom model (one per ``customTemplates``
    entry, one from ``custom.hardware`` alone, one for a service's inline custom model) carry their
    hardware in ``spec.hardware``, as the released original writes them (the CPU in
    ``spec.resources`` too), not in ``spec.gpu``; every quantity as Kubernetes writes it back, as
    the original's Go types copy it (issue 39, point 8: ``2000m`` is ``"2"``, an integer ``2`` is
    ``"2"``), up to ``status.resolvedHardware``. The legacy
    group's templates have no ``spec.hardware`` (docs/specification.md#the-legacy-api-reference):
    the GPU stays ``gpuSelector``."""
    sources = [{"modelId": "acme/hw-1b", "sourceUri": "s3://models/acme/hw-1b", "size": "2Gi"}]
    default = {"cpu": {"requests": "2", "limits": 4}}
    base = {"image": "example.invalid/aim-base:1.0", "modelSources": sources, "custom": {"hardware": default}}
    entries = [
        {"name": "small", "hardware": {"cpu": {"requests": "500m", "limits": "1000m"}}},
        {"name": "gpu", "hardware": {"gpu": {"requests": 1, "model": "MI355X"}}},
    ]
    await kube.create(
        MODEL, manifest(MODEL, "entries", namespace, {**base, "customTemplates": entries}), namespace
    )
    await kube.create(MODEL, manifest(MODEL, "plain", namespace, base), namespace)
    inline = {"modelSources": sources, "hardware": {"cpu": {"requests": 1, "limits": "2"}}}
    service = by_kind(AIM, "AIMService")
    await kube.create(
        service, manifest(service, "inline", namespace, {"model": {"custom": inline}}), namespace
    )

    async def service_model() -> dict[str, Any] | None:
        items, _ = await kube.list(MODEL, namespace)
        owned = [
            m for m in items if any(o["name"] == "inline" for o in m["metadata"].get("ownerReferences") or [])
        ]
        return owned[0] if owned else None

    gpu = {"requests": 1, "model": "MI355X", "resourceName": "amd.com/gpu"}
    kept = {"cpu": {"requests": "2", "limits": "4"}}  # default, as Kubernetes writes it back
    cases = [
        (
            await kube.get(MODEL, namespace, "entries"),
            {"small": {"cpu": {"requests": "500m", "limits": "1"}}, "gpu": {**kept, "gpu": gpu}},
        ),
        (await kube.get(MODEL, namespace, "plain"), {"": kept}),
        (
            await eventually(service_model, timeout=30, what="the service's model"),
            {"": {"cpu": {"requests": "1", "limits": "2"}}},
        ),
    ]
    for model, expected in cases:
        made = await templates_of(kube, TEMPLATE, model, len(expected))
        assert made.keys() == expected.keys(), made.keys()
        for alias, hardware in expected.items():
            spec = made[alias]["spec"]
            name = made[alias]["metadata"]["name"]
            assert spec["hardware"] == hardware and "gpu" not in spec, (name, spec)
            cpu = hardware["cpu"]
            assert spec["resources"] == {
                "requests": {"cpu": cpu["requests"]},
                "limits": {"cpu": cpu["limits"]},
            }
            settled = await status_of(
                kube, TEMPLATE, namespace, name, lambda s: "resolvedHardware" in s, f"{name} resolvedHardware"
            )
            assert settled["status"]["resolvedHardware"]["cpu"] == cpu, (name, settled["status"])
            if "gpu" in hardware:
                assert settled["status"]["resolvedHardware"]["gpu"] == gpu, settled["status"]

    # the legacy group: the same hardware in the fields its templates have
    legacy = {**base, "custom": {"hardware": {**default, "gpu": {"requests": 2, "model": "MI355X"}}}}
    await kube.create(LEGACY_MODEL, manifest(LEGACY_MODEL, "old", namespace, legacy), namespace)
    old = await kube.get(LEGACY_MODEL, namespace, "old")
    (template,) = (await templates_of(kube, LEGACY_TEMPLATE, old, 1)).values()
    assert template["spec"]["gpuSelector"] == {"count": 2, "model": "MI355X"}, template["spec"]
    resources = {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}
    assert template["spec"]["resources"] == resources, template["spec"]


async def test_gpu_template_ready_when_a_node_has_the_gpu_and_not_available_when_it_goes(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, kubelet: FakeKubelet
) -> None:
    spec = {"image": "example.invalid/aim-gpu:1.0", "imageMetadata": {"model": {"canonicalName": "acme/gpu"}}}
    await kube.create(MODEL, manifest(MODEL, "gpu-model", namespace, spec), namespace)
    sources = [{"modelId": "acme/gpu-1b", "sourceUri": "hf://acme/gpu-1b", "size": "1Gi"}]
    body = manifest(
        TEMPLATE,
        "gpu",
        namespace,
        {"modelName": "gpu-model", "gpu": {"requests": 1, "model": "MI325X"}, "modelSources": sources},
    )
    await kube.create(TEMPLATE, body, namespace)
    await status_of(
        kube, TEMPLATE, namespace, "gpu", lambda s: s.get("status") == "NotAvailable", "NotAvailable"
    )

    node = f"gpu-node-{suffix()}"
    await kubelet.register_node(
        kube, node, labels={"amd.com/gpu.device-id": "74a5"}, allocatable={"amd.com/gpu": "8"}
    )
    ready = await status_of(
        kube, TEMPLATE, namespace, "gpu", lambda s: s.get("status") == "Ready", "Ready with the node"
    )
    assert condition(ready["status"], "GPUReady")["reason"] == "GPUAvailable"
    assert ready["status"]["resolvedHardware"]["gpu"]["model"] == "MI325X"

    await kubelet.cleanup(kube)
    gone = await status_of(
        kube,
        TEMPLATE,
        namespace,
        "gpu",
        lambda s: s.get("status") == "NotAvailable",
        "NotAvailable once the node is gone",
    )
    assert "MI325X" in condition(gone["status"], "GPUReady")["message"]


async def test_a_gpu_with_enough_vram_is_gpu_available_as_in_the_original(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, kubelet: FakeKubelet
) -> None:
    """Issue 28, items 3 and 2: a template whose GPU is present and whose ``minVram`` is met is
    ``GPUReady=True/GPUAvailable`` (the original's reason; was ``VRAMAvailable``), the VRAM said in
    the message; ``status.resolvedHardware`` keeps ``minVram`` as written."""
    spec = {
        "image": "example.invalid/aim-vram:1.0",
        "imageMetadata": {"model": {"canonicalName": "acme/vram"}},
    }
    await kube.create(MODEL, manifest(MODEL, "vram-model", namespace, spec), namespace)
    sources = [{"modelId": "acme/vram-1b", "sourceUri": "hf://acme/vram-1b", "size": "1Gi"}]
    gpu = {"requests": 1, "minVram": "200Gi"}
    body = manifest(
        TEMPLATE, "vram", namespace, {"modelName": "vram-model", "gpu": gpu, "modelSources": sources}
    )
    await kube.create(TEMPLATE, body, namespace)
    node = f"vram-node-{suffix()}"
    # an MI325X has 256 GB (the original's table), more than 200 GiB
    await kubelet.register_node(
        kube, node, labels={"amd.com/gpu.device-id": "74a5"}, allocatable={"amd.com/gpu": "8"}
    )
    try:
        ready = await status_of(
            kube, TEMPLATE, namespace, "vram", lambda s: s.get("status") == "Ready", "Ready with the node"
        )
    finally:
        await kubelet.cleanup(kube)
    gpu_ready = condition(ready["status"], "GPUReady")
    assert (gpu_ready["status"], gpu_ready["reason"]) == ("True", "GPUAvailable"), gpu_ready
    assert "VRAM" in gpu_ready["message"] and "200Gi" in gpu_ready["message"], gpu_ready
    assert ready["status"]["resolvedHardware"]["gpu"]["minVram"] == "200Gi", ready["status"]


async def test_templates_written_the_released_way_keep_their_hardware(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """Issue 18 item 6: the released original (v0.2) spells a template's hardware ``spec.hardware {gpu,
    cpu}``. That field was pruned, so a template applied from its documentation asking for an MI300X came
    out Ready as a CPU template (``GPUReady=True/NoGPURequired``). Both spellings now mean the same, both
    set and different is ``InvalidSpec``, and every template says what it runs on."""
    spec = {"image": "example.invalid/aim-hw:1.0", "imageMetadata": {"model": {"canonicalName": "acme/hw"}}}
    await kube.create(MODEL, manifest(MODEL, "hw", namespace, spec), namespace)
    sources = [{"modelId": "acme/hw-1b", "sourceUri": "hf://acme/hw-1b", "size": "1Gi"}]

    def template(name: str, **fields: Any) -> dict[str, Any]:
        return manifest(TEMPLATE, name, namespace, {"modelName": "hw", **fields})

    # the GPU given only as spec.hardware.gpu, on a cluster without MI300X nodes
    mi300x = {"model": "MI300X", "requests": 1}
    await kube.create(
        TEMPLATE, template("released", hardware={"gpu": mi300x}, modelSources=sources), namespace
    )
    missing = await status_of(
        kube, TEMPLATE, namespace, "released", lambda s: s.get("status") == "NotAvailable", "NotAvailable"
    )
    status = missing["status"]
    gpu_ready = condition(status, "GPUReady")
    assert (gpu_ready["status"], gpu_ready["reason"]) == ("False", "GPUNotAvailable"), gpu_ready
    assert "MI300X" in gpu_ready["message"]
    assert status["hardwareSummary"] == "1 x MI300X"
    assert status["resolvedHardware"]["gpu"] == {**mi300x, "resourceName": "amd.com/gpu"}

    # CPU-only templates, in either spelling or saying nothing about CPU, say so too
    cpu = {"requests": "2", "limits": "4"}
    await kube.create(
        TEMPLATE, template("cpu-released", hardware={"cpu": cpu}, modelSources=sources), namespace
    )
    resources = {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}
    await kube.create(TEMPLATE, template("cpu-seed", resources=resources, modelSources=sources), namespace)
    await kube.create(TEMPLATE, template("cpu-bare", modelSources=sources), namespace)
    for name, resolved in (
        ("cpu-released", {"cpu": cpu}),
        ("cpu-seed", {"cpu": cpu}),
        ("cpu-bare", {"gpu": {"requests": 0, "resourceName": "amd.com/gpu"}}),
    ):
        ready = await status_of(
            kube, TEMPLATE, namespace, name, lambda s: s.get("status") == "Ready", f"{name} Ready"
        )
        assert condition(ready["status"], "GPUReady")["reason"] == "NoGPURequired"
        assert ready["status"]["resolvedHardware"] == resolved, name
        assert ready["status"]["hardwareSummary"] == "CPU", name

    # both spellings, disagreeing: the spec is wrong, said once, not guessed at
    both = template(
        "both", gpu=mi300x, hardware={"gpu": {"model": "MI325X", "requests": 1}}, modelSources=sources
    )
    await kube.create(TEMPLATE, both, namespace)
    refused = await status_of(
        kube, TEMPLATE, namespace, "both", has("ConfigValid", "False", "InvalidSpec"), "InvalidSpec"
    )
    assert refused["status"]["status"] == "Failed"
    message = condition(refused["status"], "ConfigValid")["message"]
    assert "hardware.gpu and gpu are both set but differ" in message and "'MI325X' vs 'MI300X'" in message

    # the cluster-scoped kind reads it too
    name = f"hw-{suffix()}"
    await kube.create(CLUSTER_MODEL, manifest(CLUSTER_MODEL, name, None, spec))
    cluster = manifest(
        CLUSTER_TEMPLATE,
        name,
        None,
        {"modelName": name, "hardware": {"gpu": mi300x}, "modelSources": sources},
    )
    await kube.create(CLUSTER_TEMPLATE, cluster)
    try:
        found = await status_of(
            kube,
            CLUSTER_TEMPLATE,
            None,
            name,
            has("GPUReady", "False", "GPUNotAvailable"),
            "cluster template",
        )
        assert found["status"]["hardwareSummary"] == "1 x MI300X"
    finally:
        await kube.delete(CLUSTER_TEMPLATE, None, name)
        await kube.delete(CLUSTER_MODEL, None, name)

    # an MI300X node appears: the template is Ready on it, and a released template that needs discovery
    # asks the discovery Job for its GPU
    await kube.create(
        TEMPLATE, template("released-job", hardware={"gpu": {"model": "MI300X", "requests": 2}}), namespace
    )
    node = f"mi300x-{suffix()}"
    labels = {"amd.com/gpu.device-id": "74a1", "amd.com/gpu.device-id.74a1": "8"}
    await kube.create(
        NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels}}
    )
    try:
        ready = await status_of(
            kube, TEMPLATE, namespace, "released", lambda s: s.get("status") == "Ready", "Ready on the node"
        )
        assert condition(ready["status"], "GPUReady")["reason"] == "GPUAvailable"

        async def job() -> dict[str, Any] | None:
            items, _ = await kube.list(JOB, namespace, label_selector="aim.eai.amd.com/template=released-job")
            return items[0] if items else None

        found_job = await eventually(job, timeout=45, what="the discovery Job of released-job")
        (container,) = found_job["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in container.get("env") or []}
        assert (env.get("AIM_GPU_MODEL"), env.get("AIM_GPU_COUNT")) == ("MI300X", "2"), env
    finally:
        await kube.delete(NODE, None, node)


async def test_a_node_that_does_not_say_how_many_gpus_it_has_is_not_counted_as_one(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """Issue 18 item 7: nodes labelled only with the device id and VRAM (no count label, no device plugin
    resources; the original's CI cluster is like that) counted as one GPU each, so a 2 x MI300X template was
    NotAvailable. As in the original, a node whose labels name the model now satisfies any count, and the
    condition says the count could not be checked."""
    spec = {"image": "example.invalid/aim-count:1.0", "imageMetadata": {"model": {"canonicalName": "acme/n"}}}
    await kube.create(MODEL, manifest(MODEL, "count", namespace, spec), namespace)
    sources = [{"modelId": "acme/n-1b", "sourceUri": "hf://acme/n-1b", "size": "1Gi"}]
    body = {"modelName": "count", "gpu": {"model": "MI300X", "requests": 2}, "modelSources": sources}
    await kube.create(TEMPLATE, manifest(TEMPLATE, "two", namespace, body), namespace)
    await status_of(
        kube, TEMPLATE, namespace, "two", lambda s: s.get("status") == "NotAvailable", "no node yet"
    )

    node = f"ci-mi300x-{suffix()}"
    labels = {"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "192G"}
    await kube.create(
        NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels}}
    )
    try:
        ready = await status_of(
            kube,
            TEMPLATE,
            namespace,
            "two",
            lambda s: s.get("status") == "Ready",
            "Ready on the uncounted node",
        )
        gpu_ready = condition(ready["status"], "GPUReady")
        assert (gpu_ready["status"], gpu_ready["reason"]) == ("True", "GPUAvailable"), gpu_ready
        assert "2 GPUs per node could not be checked" in gpu_ready["message"], gpu_ready["message"]
        assert ready["status"]["hardwareSummary"] == "2 x MI300X"
    finally:
        await kube.delete(NODE, None, node)


async def _discovery_pod(kube: Kube, namespace: str, template: str) -> tuple[dict[str, Any], dict[str, Any]]:
    async def job() -> dict[str, Any] | None:
        items, _ = await kube.list(JOB, namespace, label_selector=f"aim.eai.amd.com/template={template}")
        return items[0] if items else None

    found = await eventually(job, timeout=45, what=f"the discovery Job of {template}")

    async def pod() -> dict[str, Any] | None:
        items, _ = await kube.list(POD, namespace, label_selector=f"job-name={found['metadata']['name']}")
        return items[0] if items else None

    return found, await eventually(pod, timeout=45, what=f"the pod of {found['metadata']['name']}")


async def test_discovery_job_output_becomes_sources_and_bad_output_fails(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, kubelet: FakeKubelet
) -> None:
    await wait_for_service_account(kube, namespace)
    node = f"disc-node-{suffix()}"
    await kubelet.register_node(kube, node)
    spec = {"image": "example.invalid/aim-dry:1.0", "imageMetadata": {"model": {"canonicalName": "acme/dry"}}}
    await kube.create(MODEL, manifest(MODEL, "dry", namespace, spec), namespace)
    for name, precision in (("good", "fp8"), ("garbage", "fp16"), ("denied", "bf16")):
        await kube.create(
            TEMPLATE,
            manifest(TEMPLATE, name, namespace, {"modelName": "dry", "precision": precision}),
            namespace,
        )

    job, pod = await _discovery_pod(kube, namespace, "good")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["dry-run", "--format=json"]
    assert container["image"] == "example.invalid/aim-dry:1.0"
    assert job["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    await bind_pod(kube, namespace, pod["metadata"]["name"], node)
    kubelet.set_log(
        namespace, pod["metadata"]["name"], "discovery", "starting\n" + json.dumps(DISCOVERY_OUTPUT) + "\n"
    )
    await finish_pod(kube, namespace, pod["metadata"]["name"], exit_code=0)
    good = await status_of(
        kube, TEMPLATE, namespace, "good", lambda s: s.get("status") == "Ready", "good Ready"
    )
    status = good["status"]
    assert status["modelSources"] == [
        {"modelId": "acme/demo-7b", "sourceUri": "hf://acme/demo-7b", "size": "512Mi"}
    ]
    assert status["profile"]["metadata"]["engine"] == "vllm"
    assert status["profile"]["engine_args"] == {"tensor-parallel-size": 1}
    assert status["resolvedHardware"]["gpu"]["model"] == "MI325X"
    assert condition(status, "Discovered")["reason"] == "DiscoveryComplete"

    async def job_deleted() -> bool:
        return await kube.get(JOB, namespace, job["metadata"]["name"]) is None

    await eventually(job_deleted, timeout=30, what="the finished discovery Job to be deleted")

    job, pod = await _discovery_pod(kube, namespace, "garbage")
    await bind_pod(kube, namespace, pod["metadata"]["name"], node)
    kubelet.set_log(namespace, pod["metadata"]["name"], "discovery", "Traceback: profile not found\n")
    await finish_pod(kube, namespace, pod["metadata"]["name"], exit_code=0)
    bad = await status_of(
        kube, TEMPLATE, namespace, "garbage", lambda s: s.get("status") == "Failed", "garbage Failed"
    )
    assert condition(bad["status"], "Discovered")["reason"] == "InvalidDiscoveryOutput"
    assert condition(bad["status"], "Discovered")["message"] == (
        f"Discovery Job {job['metadata']['name']} output is unusable: discovery output holds no JSON "
        "array (last line: 'Traceback: profile not found')"
    )
    assert not bad["status"].get("modelSources")

    job, pod = await _discovery_pod(kube, namespace, "denied")
    await bind_pod(kube, namespace, pod["metadata"]["name"], node)
    kubelet.set_log(
        namespace,
        pod["metadata"]["name"],
        "discovery",
        "downloading\n401 Client Error: Unauthorized token=hf_abcdefghijklmnop\n",
    )
    await finish_pod(kube, namespace, pod["metadata"]["name"], exit_code=1)
    denied = await status_of(
        kube,
        TEMPLATE,
        namespace,
        "denied",
        has("DiscoveryJobReady", "False", "AuthError"),
        "denied AuthError",
    )
    message = condition(denied["status"], "DiscoveryJobReady")["message"]
    assert "next attempt at" in message
    assert "hf_abcdefghijklmnop" not in json.dumps(denied["status"])
    assert denied["status"]["status"] == "Failed"


async def test_legacy_image_creates_legacy_templates(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, oci_registry: Registry
) -> None:
    repo = f"legacy{suffix()}/aim-old"
    labels = {
        "org.amd.silogen.model.canonicalName": "acme/old-7b",
        "org.amd.silogen.model.recommendedDeployments": json.dumps(
            [{"gpuModel": "MI355X", "gpuCount": 2, "precision": "fp16", "metric": "latency"}]
        ),
    }
    push_image(oci_registry.url, repo, "0.7.0", labels)
    image = f"{oci_registry.host}/{repo}:0.7.0"
    await kube.create(
        LEGACY_IMAGE,
        manifest(
            LEGACY_IMAGE,
            "old",
            namespace,
            {
                "image": image,
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
            },
        ),
        namespace,
    )
    found = await status_of(
        kube,
        LEGACY_IMAGE,
        namespace,
        "old",
        lambda s: (s.get("imageMetadata") or {}).get("model"),
        "legacy metadata",
    )
    assert found["status"]["imageMetadata"]["model"]["canonicalName"] == "acme/old-7b"

    async def templates() -> list[dict[str, Any]] | None:
        items, _ = await kube.list(LEGACY_TEMPLATE, namespace)
        return items or None

    (template,) = await eventually(templates, timeout=30, what="the legacy template")
    assert template["spec"]["aimImageName"] == "old"
    assert template["spec"]["gpuSelector"] == {"count": 2, "model": "MI355X"}
    assert template["metadata"]["ownerReferences"][0]["kind"] == "AIMImage"


async def test_labels_read_with_the_models_pull_secret(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, oci_registry_auth: Registry
) -> None:
    repo = f"private{suffix()}/aim-demo"
    push_image(oci_registry_auth.url, repo, "1.0.0", AIM_LABELS, auth=oci_registry_auth.auth)
    image = f"{oci_registry_auth.host}/{repo}:1.0.0"
    await kube.create(MODEL, manifest(MODEL, "anonymous", namespace, {"image": image}), namespace)
    denied = await status_of(
        kube,
        MODEL,
        namespace,
        "anonymous",
        has("ImageMetadataReady", "False", "ImagePullAuthFailure"),
        "denied",
    )
    assert denied["status"]["status"] == "Failed"

    auth = base64.b64encode(f"{oci_registry_auth.username}:{oci_registry_auth.password}".encode()).decode()
    config = {"auths": {oci_registry_auth.host: {"auth": auth}}}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "registry-login", "namespace": namespace},
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(config).encode()).decode()},
    }
    await kube.create(SECRET, secret, namespace)
    spec = {"image": image, "imagePullSecrets": [{"name": "registry-login"}]}
    await kube.create(MODEL, manifest(MODEL, "with-secret", namespace, spec), namespace)
    model = await status_of(
        kube,
        MODEL,
        namespace,
        "with-secret",
        has("ImageMetadataReady", "True", "ImageMetadataFound"),
        "labels read",
    )
    assert model["status"]["imageMetadata"]["model"]["canonicalName"] == "acme/demo-7b"
    assert oci_registry_auth.password not in json.dumps(denied["status"]) + json.dumps(model["status"])


async def test_templates_the_api_server_refuses_are_reported_not_awaited(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, oci_registry: Registry
) -> None:
    """Labels recommending a metric the template CRD does not allow: the API server refuses the
    template (422). The model says so, naming the template and the server's message, instead of
    "Creating 1 template(s)" forever; a model with one good and one refused template is Degraded
    (the good one stays usable). A new image (a spec change) is tried again."""
    org = f"refused{suffix()}"
    balanced = "{'gpuModel': 'MI355X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'balanced'}"
    push_image(oci_registry.url, f"{org}/odd", "1.0", {"com.amd.aim.model.recommendedDeployments": balanced})
    push_image(
        oci_registry.url,
        f"{org}/mixed",
        "1.0",
        {"com.amd.aim.model.recommendedDeployments": f"{balanced}, {DEPLOYMENTS}"},
    )
    odd = f"{oci_registry.host}/{org}/odd:1.0"
    await kube.create(MODEL, manifest(MODEL, "odd", namespace, {"image": odd}), namespace)
    await kube.create(
        MODEL,
        manifest(MODEL, "mixed", namespace, {"image": f"{oci_registry.host}/{org}/mixed:1.0"}),
        namespace,
    )

    model = await status_of(
        kube,
        MODEL,
        namespace,
        "odd",
        has("ServiceTemplatesReady", "False", "TemplateCreateRejected"),
        "refused",
    )
    status = model["status"]
    assert status["status"] == "Failed"
    message = condition(status, "ServiceTemplatesReady")["message"]
    (planned,) = [
        derived_name([odd, "1x-MI355X-balanced-fp8"], [f"odd-{odd}-MI355X-x1-balanced-fp8"], hash_length=4)
    ]
    assert planned in message and "balanced" in message and "422" in message, message
    assert condition(status, "Ready")["reason"] == "TemplateCreateRejected"
    assert not await owned_templates(kube, namespace, model["metadata"]["uid"])

    mixed = await status_of(
        kube,
        MODEL,
        namespace,
        "mixed",
        has("ServiceTemplatesReady", "False", "SomeTemplatesRejected"),
        "partly",
    )
    assert mixed["status"]["status"] == "Degraded"
    assert "1 of 3" in condition(mixed["status"], "ServiceTemplatesReady")["message"]
    assert len(await owned_templates(kube, namespace, mixed["metadata"]["uid"])) == 2

    # the user points the model at an image whose labels fit: templates are created again
    repo = f"{org}/fixed"
    push_image(oci_registry.url, repo, "1.0", AIM_LABELS)
    await kube.patch(MODEL, namespace, "odd", {"spec": {"image": f"{oci_registry.host}/{repo}:1.0"}})
    fixed = await status_of(
        kube, MODEL, namespace, "odd", lambda s: s.get("status") == "NotAvailable", "the fixed model"
    )
    assert condition(fixed["status"], "ServiceTemplatesReady")["reason"] == "NoTemplatesAvailable"


async def test_a_discovery_job_the_api_server_refuses_says_why(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """An environment variable name a Pod may not have: the API server refuses the discovery Job
    (422). The template fails with the server's message (which names the variable), not a bare
    "HTTP 422", and the Job is not asked for again until the spec changes."""
    spec = {"image": "example.invalid/aim-env:1.0", "imageMetadata": {"model": {"canonicalName": "acme/env"}}}
    await kube.create(MODEL, manifest(MODEL, "env-model", namespace, spec), namespace)
    body = {"modelName": "env-model", "precision": "fp8", "env": [{"name": "1 NOT VALID", "value": "x"}]}
    await kube.create(TEMPLATE, manifest(TEMPLATE, "bad-env", namespace, body), namespace)
    refused = await status_of(
        kube, TEMPLATE, namespace, "bad-env", has("DiscoveryJobReady", "False", "JobCreateFailed"), "refused"
    )
    assert refused["status"]["status"] == "Failed"
    message = condition(refused["status"], "DiscoveryJobReady")["message"]
    assert "1 NOT VALID" in message and "422" in message, message
    items, _ = await kube.list(JOB, namespace, label_selector="aim.eai.amd.com/template=bad-env")
    assert not items


async def test_a_template_name_held_by_another_models_template_is_a_conflict(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """The name of a template the model plans is held by another model's template: the model says
    so instead of "Creating 1 template(s)" forever."""
    planned = derived_name(["clash", "custom", "x"], ["clash", 0, "x"])
    await kube.create(
        TEMPLATE, manifest(TEMPLATE, planned, namespace, {"modelName": "someone-else"}), namespace
    )
    spec = {
        "image": "example.invalid/aim-clash:1.0",
        "imageMetadata": {"model": {"canonicalName": "acme/clash"}},
        "customTemplates": [{"name": "x", "hardware": {"cpu": {"requests": "1"}}}],
    }
    await kube.create(MODEL, manifest(MODEL, "clash", namespace, spec), namespace)
    model = await status_of(
        kube,
        MODEL,
        namespace,
        "clash",
        has("ServiceTemplatesReady", "False", "TemplateNameConflict"),
        "conflict",
    )
    assert model["status"]["status"] == "Failed"
    message = condition(model["status"], "ServiceTemplatesReady")["message"]
    assert planned in message and "someone-else" in message, message


async def test_images_where_the_outbound_policy_refuses_fail_and_nothing_is_contacted(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str, other_host: FileServer
) -> None:
    """An image on the metadata service (by address or name) or on a host the operator does not
    allow fails its model with ``AddressNotAllowed``: discovery never connects there."""
    port = other_host.server_address[1]
    cases = {
        "metadata": "169.254.169.254/acme/demo:1.0",
        "metadata-name": "metadata.google.internal/acme/demo:1.0",
        "mapped": "[::ffff:169.254.169.254]:443/acme/demo:1.0",
        "other-host": f"127.0.0.2:{port}/acme/demo:1.0",
    }
    for name, image in cases.items():
        await kube.create(MODEL, manifest(MODEL, name, namespace, {"image": image}), namespace)
    for name in cases:
        model = await status_of(
            kube, MODEL, namespace, name, has("ImageMetadataReady", "False", "AddressNotAllowed"), name
        )
        status = model["status"]
        assert status["status"] == "Failed", (name, status)
        ready = condition(status, "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "AddressNotAllowed")
        assert "not allowed" in condition(status, "ImageMetadataReady")["message"]
    assert (
        "127.0.0.2 (loopback)"
        in condition((await kube.get(MODEL, namespace, "other-host"))["status"], "ImageMetadataReady")[
            "message"
        ]
    )
    assert other_host.requests == []


async def test_the_pull_secret_never_reaches_a_plain_http_token_realm_on_another_host(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """The registry (127.0.0.1) sends its token requests to 127.0.0.2 over plain HTTP: discovery
    fails the model with ``InsecureTokenRealm`` and the token server never hears from it."""
    async with registry_servers() as servers:
        await _realm_case(kube, namespace, servers)


async def _realm_case(kube: Kube, namespace: str, servers: Servers) -> None:
    servers.realm = f"{servers.other}/token"
    auth = base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
    config = {"auths": {servers.registry: {"auth": auth}}}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "realm-login", "namespace": namespace},
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(config).encode()).decode()},
    }
    await kube.create(SECRET, secret, namespace)
    spec = {"image": f"{servers.registry}/acme/demo:1.0", "imagePullSecrets": [{"name": "realm-login"}]}
    await kube.create(MODEL, manifest(MODEL, "realm", namespace, spec), namespace)
    model = await status_of(
        kube, MODEL, namespace, "realm", has("ImageMetadataReady", "False", "InsecureTokenRealm"), "refused"
    )
    assert model["status"]["status"] == "Failed"
    assert servers.registry_log  # the registry was asked (and challenged)
    assert servers.other_log == []
    assert PASSWORD not in json.dumps(model["status"])


async def test_a_template_naming_a_missing_model_fails_until_it_appears(  # type: ignore[no-untyped-def]
    discovery, kube: Kube, namespace: str
) -> None:
    """Issue 18, item 2: as in the original, every missing upstream object is ReferenceNotFound with
    ConfigValid=False (the component keeps the specific ModelNotFound); it recovers by itself."""
    model = f"later-{suffix()}"
    sources = [{"sourceUri": "hf://acme/later", "modelId": "acme/later"}]
    spec = {"modelName": model, "modelSources": sources}
    await kube.create(TEMPLATE, manifest(TEMPLATE, "orphan", namespace, spec), namespace)
    failed = await status_of(
        kube,
        TEMPLATE,
        namespace,
        "orphan",
        has("ConfigValid", "False", "ReferenceNotFound"),
        "ReferenceNotFound",
    )
    assert failed["status"]["status"] == "Failed"
    assert condition(failed["status"], "Ready")["reason"] == "ReferenceNotFound"
    assert condition(failed["status"], "ModelReady")["reason"] == "ModelNotFound"
    assert model in condition(failed["status"], "ConfigValid")["message"]
    meta = {"model": {"canonicalName": "acme/later"}}
    body = {
        "image": "example.invalid/acme/later:1.0",
        "imageMetadata": meta,
        "discovery": {"createServiceTemplates": False},
    }
    await kube.create(MODEL, manifest(MODEL, model, namespace, body), namespace)
    await status_of(
        kube, TEMPLATE, namespace, "orphan", has("ConfigValid", "True", "ConfigurationValid"), "valid"
    )
