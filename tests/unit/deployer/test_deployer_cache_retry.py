"""The one retry of a failed template cache: the model caches it deleted still look failed until the
deletion reaches the informer, and must not count as the retry having failed too (a race the
frozen integration test hit under load: CacheFailed right after CacheRetrying). And a mounted
volume whose model cache was deleted is lost, not merely "progressing"."""

from __future__ import annotations

from typing import Any

from aim_deployer.caching import (
    RETRIED_ANNOTATION,
    RETRIED_UIDS_ANNOTATION,
    TEMPLATE_CACHE_LABEL,
    failed_model_caches,
    lost_claims,
    retried_uids,
)
from aim_deployer.inference import CacheMount
from aimcore.api.bus import subjects
from aimcore.api.kinds import GROUP_AIM, by_kind
from aimcore.domain.families.caches import TemplateCache
from aimcore.runtime import Informer

MODEL_CACHE = by_kind(GROUP_AIM, "AIMModelCache")
TEMPLATE_CACHE = by_kind(GROUP_AIM, "AIMTemplateCache")


def model_cache(name: str, uid: str, status: str) -> dict[str, Any]:
    return {
        "apiVersion": MODEL_CACHE.api_version,
        "kind": MODEL_CACHE.kind,
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "labels": {TEMPLATE_CACHE_LABEL: "tc"}},
        "spec": {"sourceUri": "hf://acme/tiny"},
        "status": {"status": status},
    }


def template_cache(**annotations: str) -> TemplateCache:
    obj = {
        "metadata": {"name": "tc", "namespace": "ns", "annotations": annotations},
        "spec": {"templateName": "t"},
        "status": {},
    }
    return TemplateCache(TEMPLATE_CACHE, obj)


def cache_of(*objs: dict[str, Any]) -> Informer:
    informer = Informer(None, [], {})  # type: ignore[arg-type]  # filled here, not by a KV watch
    for o in objs:
        informer._store(subjects.object_key(MODEL_CACHE, "ns", o["metadata"]["name"]), o)
    return informer


def test_the_caches_a_retry_deleted_are_not_its_failure() -> None:
    tc = template_cache(**{RETRIED_ANNOTATION: "1", RETRIED_UIDS_ANNOTATION: "uid-a"})
    assert retried_uids(tc) == {"uid-a"}
    old = model_cache("mc", "uid-a", "Failed")
    assert failed_model_caches(cache_of(old), GROUP_AIM, tc, skip_uids=retried_uids(tc)) == []
    # re-created under the same name, and failed again: that is the retry failing
    again = model_cache("mc", "uid-b", "Failed")
    assert failed_model_caches(cache_of(again), GROUP_AIM, tc, skip_uids=retried_uids(tc)) == ["mc"]


def test_without_a_retry_every_failed_cache_counts() -> None:
    tc = template_cache()
    assert retried_uids(tc) == frozenset()
    caches = cache_of(model_cache("a", "u1", "Failed"), model_cache("b", "u2", "Ready"))
    assert failed_model_caches(caches, GROUP_AIM, tc, skip_uids=retried_uids(tc)) == ["a"]


def test_a_mounted_claim_whose_model_cache_is_gone_is_lost() -> None:
    kept = model_cache("kept", "u1", "Ready")
    kept["status"]["persistentVolumeClaim"] = "kept-cache-1"
    going = model_cache("going", "u2", "Ready")
    going["status"]["persistentVolumeClaim"] = "going-cache-2"
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    mounts = [
        CacheMount("kept", "kept-cache-1", "/workspace/model-cache/a"),
        CacheMount("going", "going-cache-2", "/workspace/model-cache/b"),
        CacheMount("gone", "gone-cache-3", "/workspace/model-cache/c"),
    ]
    assert lost_claims(cache_of(kept, going), GROUP_AIM, "ns", mounts) == ["going-cache-2", "gone-cache-3"]
