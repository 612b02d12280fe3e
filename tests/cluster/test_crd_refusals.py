"""Hostile objects the real API server refuses at apply time, because the generated CRDs say what
the fields allow (issue 15, item 7): before, each was stored and later adjusted or ignored by a
service (``replicas: 0`` and ``-5`` deployed as 1, negative quantities copied into the
InferenceService, an image with a trailing newline used as written, a negative sync interval).
Issue 24 added replicas no cluster can run (2^31-1, 2^53: above the schema's ``maximum``) and an
autoscaling utilisation of -50. Each case names the field the server's message must point at."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aimcore.api.kinds import KindRef, by_kind
from aimcore.runtime import ApiException, Kube
from tests.helpers import manifest

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
MODEL = {"name": "llama"}
CACHE = by_kind(AIM, "AIMModelCache")


def _service(**spec: Any) -> tuple[KindRef, dict[str, Any]]:
    return by_kind(AIM, "AIMService"), {"model": MODEL, **spec}


def _metric_target(target: dict[str, Any]) -> dict[str, Any]:
    return {"metrics": [{"type": "PodMetric", "podmetric": {"target": {"type": "Value", **target}}}]}


HOSTILE: dict[str, tuple[tuple[KindRef, dict[str, Any]], str]] = {
    "replicas-zero": (_service(replicas=0), "spec.replicas"),
    "replicas-negative": (_service(replicas=-5), "spec.replicas"),
    "legacy-replicas-zero": (
        (by_kind(LEGACY, "AIMService"), {"model": MODEL, "replicas": 0}),
        "spec.replicas",
    ),
    "negative-cpu-string": (_service(resources={"requests": {"cpu": "-2"}}), "spec.resources.requests.cpu"),
    "negative-memory-int": (_service(resources={"limits": {"memory": -5}}), "spec.resources.limits.memory"),
    "negative-gpu": (_service(resources={"limits": {"amd.com/gpu": "-1"}}), "spec.resources.limits"),
    "negative-target": (_service(autoScaling=_metric_target({"value": "-1"})), "value"),
    # issue 24: deployed before, with no condition
    "replicas-int32-max": (_service(replicas=2**31 - 1), "spec.replicas"),
    "replicas-2-to-the-53": (_service(replicas=2**53), "spec.replicas"),
    "max-replicas-2-to-the-53": (_service(minReplicas=1, maxReplicas=2**53), "spec.maxReplicas"),
    "legacy-replicas-int32-max": (
        (by_kind(LEGACY, "AIMService"), {"model": MODEL, "replicas": 2**31 - 1}),
        "spec.replicas",
    ),
    "negative-utilization": (
        _service(
            autoScaling={
                "metrics": [
                    {
                        "type": "PodMetric",
                        "podmetric": {"target": {"type": "Utilization", "averageUtilization": -50}},
                    }
                ]
            }
        ),
        "averageUtilization",
    ),
    "zero-utilization": (
        _service(autoScaling=_metric_target({"averageUtilization": 0})),
        "averageUtilization",
    ),
    "service-image-newline": (
        (by_kind(AIM, "AIMService"), {"model": {"image": "ghcr.io/acme/llama:1.0\n"}}),
        "spec.model.image",
    ),
    "model-image-newline": ((by_kind(AIM, "AIMModel"), {"image": "ghcr.io/acme/llama:1.0\n"}), "spec.image"),
    "legacy-image-newline": (
        (by_kind(LEGACY, "AIMImage"), {"image": " ghcr.io/acme/llama:1.0"}),
        "spec.image",
    ),
    "download-image-space": (
        (CACHE, {"sourceUri": "hf://a/b", "modelDownloadImage": "busybox latest"}),
        "spec.modelDownloadImage",
    ),
    "negative-cache-size": (
        (CACHE, {"sourceUri": "hf://a/b", "size": "-10Gi"}),
        "spec.size",
    ),
    "negative-min-vram": (
        (by_kind(AIM, "AIMServiceTemplate"), {"modelName": "m", "gpu": {"minVram": "-64Gi"}}),
        "spec.gpu.minVram",
    ),
    "sync-interval-negative": (
        (by_kind(AIM, "AIMClusterModelSource"), {"filters": [{"image": "a/b"}], "syncInterval": "-5m"}),
        "spec.syncInterval",
    ),
    "sync-interval-days": (
        (by_kind(AIM, "AIMClusterModelSource"), {"filters": [{"image": "a/b"}], "syncInterval": "1d"}),
        "spec.syncInterval",
    ),
    "request-timeout-words": (
        (by_kind(AIM, "AIMRuntimeConfig"), {"routing": {"requestTimeout": "ten seconds"}}),
        "spec.routing.requestTimeout",
    ),
    "negative-deprecated-headroom": (
        (by_kind(AIM, "AIMRuntimeConfig"), {"pvcHeadroomPercent": -50}),
        "spec.pvcHeadroomPercent",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_the_api_server_refuses(kube: Kube, namespace: str, case: str) -> None:
    (ref, spec), field = HOSTILE[case]
    with pytest.raises(ApiException) as refused:
        await kube.create(ref, manifest(ref, case, namespace if ref.namespaced else None, spec))
    assert refused.value.status == 422, refused.value
    assert field in json.dumps(refused.value.body or refused.value.reason), refused.value.body


@pytest.mark.parametrize("interval", ["1h", "1.5h", "2h30m15s", "300ms", "1µs", "0"])
async def test_go_durations_are_accepted(kube: Kube, interval: str) -> None:
    ref = by_kind(AIM, "AIMClusterModelSource")
    name = f"durations-{abs(hash(interval)) % 10**8}"
    await kube.create(
        ref, manifest(ref, name, None, {"filters": [{"image": "a/b"}], "syncInterval": interval})
    )
    try:
        stored = await kube.get(ref, None, name)
        assert stored is not None and stored["spec"]["syncInterval"] == interval  # kept as written
    finally:
        await kube.delete(ref, None, name)
