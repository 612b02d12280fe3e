"""The storage quota gate's pure parts around the rules (``aim_cache.quota``): a cache takes what
its PVC requests, and nothing without one, whatever its status says; the status fields read from
the PVC; and a template cache carries a model cache's quota verdict up with its figures."""

from __future__ import annotations

from typing import Any

from aim_cache import quota
from aim_cache.admission import holding
from aim_cache.modelcaches import allocated
from aim_cache.plan import ANNOTATION_HEADROOM
from aim_cache.templatecaches import caches_condition
from aimcore.api.kinds import by_kind
from aimcore.domain.families.caches import ModelCache

MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
GIB = 1024**3


def cache_obj(name: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModelCache",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"sourceUri": "hf://acme/tiny", "size": "1Gi"},
        "status": status or {},
    }


def pvc(name: str, request: str, headroom: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if headroom is not None:
        meta["annotations"] = {ANNOTATION_HEADROOM: headroom}
    return {"metadata": meta, "spec": {"resources": {"requests": {"storage": request}}}}


def test_a_cache_takes_what_its_pvc_requests_and_nothing_without_one() -> None:
    # the status says 5Gi and a claim, but the PVC the API server has asks for 2Gi
    said = quota.Cache.from_object(cache_obj("a", {"persistentVolumeClaim": "old", "allocatedSize": "5Gi"}))
    held = holding(said, pvc("a-cache-xyz", "2Gi"))
    assert (held.claim, held.allocated) == ("a-cache-xyz", 2 * GIB)
    assert held.holds_storage and quota.usage_bytes(held, 10) == 2 * GIB
    # its PVC is gone (or not made yet): it takes nothing, whatever the status still says
    none = holding(said, None)
    assert not none.holds_storage and none.claim is None and none.allocated is None


def test_the_status_fields_come_from_the_pvc() -> None:
    assert allocated(pvc("c", "2Gi", "20")) == {"allocatedSize": "2Gi", "headroomPercent": 20}
    assert allocated(pvc("c", str(3 * GIB))) == {"allocatedSize": "3Gi"}  # as the API server keeps it
    assert allocated(pvc("c", "2Gi")) == {"allocatedSize": "2Gi"}  # made before the annotation
    assert allocated({"metadata": {"name": "c"}, "spec": {}}) == {}


def test_a_template_cache_carries_the_quota_verdict_up() -> None:
    message = "Namespace quota exceeded: 1Gi used + 1Gi needed > 1Gi limit"
    conditions = [
        {"type": "Ready", "status": "False", "reason": "Progressing", "message": message},
        {
            "type": "StorageQuotaReady",
            "status": "False",
            "reason": "NamespaceQuotaExceeded",
            "message": message,
        },
    ]
    blocked = ModelCache(MODEL_CACHE, cache_obj("b", {"status": "Pending", "conditions": conditions}))
    said = caches_condition([("b", blocked)])
    assert (said.status, said.reason) == ("False", "NamespaceQuotaExceeded")
    assert said.message == f"model cache b: {message}"
    # once admitted, the quota says nothing more up the chain
    admitted = [{**conditions[0], "reason": "Progressing", "message": "downloading"}]
    admitted.append({"type": "StorageQuotaReady", "status": "True", "reason": "WithinQuota", "message": "ok"})
    going = ModelCache(MODEL_CACHE, cache_obj("b", {"status": "Progressing", "conditions": admitted}))
    assert caches_condition([("b", going)]).reason == "CachesNotReady"
