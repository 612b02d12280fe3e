"""The caching modes of an AIMService (``aim_deployer.caching``): what ``caching.mode`` means under
each behaviour (the seeds' as written, the released original's mapping), the names and owners of
the template caches a service makes, which caches a Shared and a Dedicated service find, what a
cache deleted under a running service reports, and the immutable ``caching``/``template``
(``aimcore.domain.immutability``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aim_deployer.caching import (
    CACHE_ROOT,
    DEDICATED,
    RELEASED_CACHE_ROOT,
    SHARED,
    TEMPLATE_CACHE_LABEL,
    cache_body,
    cache_root,
    dedicated_cache_name,
    find_cache,
    mounts_of,
    plan_cache,
    service_mode,
    shared_cache_name,
)
from aim_deployer.inference import CacheMount
from aim_deployer.service_view import ServiceView
from aim_deployer.services import IMMUTABLE
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus import subjects
from aimcore.api.crds.validation import parse
from aimcore.api.kinds import by_kind
from aimcore.domain import immutability
from aimcore.domain.families.caches import TemplateCache
from aimcore.domain.families.templates import Template
from aimcore.runtime import Informer

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
SERVICE = by_kind(AIM, "AIMService")
TEMPLATE = by_kind(AIM, "AIMServiceTemplate")
TEMPLATE_CACHE = by_kind(AIM, "AIMTemplateCache")
SEEDS, RELEASED = Behaviour.SEEDS, Behaviour.RELEASED


def service(
    spec_extra: dict[str, Any] | None = None, *, name: str = "chat", uid: str = "uid-1"
) -> ServiceView:
    obj: dict[str, Any] = {
        "apiVersion": SERVICE.api_version,
        "kind": "AIMService",
        "metadata": {"name": name, "namespace": "ml", "uid": uid},
        "spec": {"model": {"name": "llama"}, **(spec_extra or {})},
    }
    return ServiceView.of(SERVICE, parse(obj), obj)


def legacy(cache_model: bool) -> ServiceView:
    ref = by_kind(LEGACY, "AIMService")
    obj: dict[str, Any] = {
        "apiVersion": ref.api_version,
        "kind": "AIMService",
        "metadata": {"name": "chat", "namespace": "ml", "uid": "uid-1"},
        "spec": {"aimImageName": "llama", "cacheModel": cache_model},
    }
    return ServiceView.of(ref, parse(obj), obj)


def template() -> Template:
    return Template(
        TEMPLATE,
        {
            "apiVersion": TEMPLATE.api_version,
            "kind": TEMPLATE.kind,
            "metadata": {"name": "tpl", "namespace": "ml", "uid": "tpl-uid"},
            "spec": {"modelName": "llama"},
            "status": {"status": "Ready"},
        },
    )


def template_cache(
    name: str, mode: str, *, owner: str | None = None, status: str = "Ready", model_caches: Any = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"{name}-uid"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": SERVICE.api_version, "kind": "AIMService", "name": "chat", "uid": owner}
        ]
    return {
        "apiVersion": TEMPLATE_CACHE.api_version,
        "kind": TEMPLATE_CACHE.kind,
        "metadata": meta,
        "spec": {"templateName": "tpl", "templateScope": "Namespace", "mode": mode},
        "status": {"status": status, "modelCaches": model_caches or {}},
    }


def informer_of(*objs: dict[str, Any]) -> Informer:
    informer = Informer(None, [], {})  # type: ignore[arg-type]  # filled here, not by a KV watch
    for o in objs:
        ref = by_kind(AIM, o["kind"])
        informer._store(subjects.object_key(ref, "ml", o["metadata"]["name"]), o)
    return informer


# -- what a mode means -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("caching", "seeds", "released"),
    [
        ({"caching": {"mode": "Always"}}, "Always", SHARED),
        ({"caching": {"mode": "Auto"}}, "Auto", SHARED),
        ({"caching": {"mode": "Never"}}, "Never", DEDICATED),
        ({"caching": {"mode": "Shared"}}, SHARED, SHARED),
        ({"caching": {"mode": "Dedicated"}}, DEDICATED, DEDICATED),
        ({}, "Auto", SHARED),  # unset: the seeds' Auto, the released original's Shared
        ({"cacheModel": False}, "Never", SHARED),  # the released original ignores cacheModel
        ({"cacheModel": True}, "Always", SHARED),
    ],
)
def test_each_behaviour_reads_the_mode_its_generation_does(
    caching: dict[str, Any], seeds: str, released: str
) -> None:
    view = service(caching)
    assert service_mode(view, SEEDS) == seeds
    assert service_mode(view, RELEASED) == released


def test_the_legacy_group_keeps_its_own_reading_under_both() -> None:
    for behaviour in (SEEDS, RELEASED):
        assert service_mode(legacy(True), behaviour) == "Always"
        assert service_mode(legacy(False), behaviour) == "Auto"


def test_the_mount_root_is_the_generations() -> None:
    assert cache_root(SEEDS) == CACHE_ROOT == "/workspace/model-cache"
    assert cache_root(RELEASED) == RELEASED_CACHE_ROOT == "/workspace/cache"


# -- names and owners --------------------------------------------------------------------------


def test_a_dedicated_cache_is_named_for_template_and_service_and_owned_by_it() -> None:
    view = service({"caching": {"mode": "Dedicated"}})
    kind, body = cache_body(view, template(), DEDICATED)
    assert kind == TEMPLATE_CACHE
    name = body["metadata"]["name"]
    assert name == dedicated_cache_name("tpl", "chat", "uid-1")
    assert name.startswith("tpl-chat-")
    assert body["spec"]["mode"] == DEDICATED
    (owner,) = body["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("AIMService", "chat", "uid-1")


def test_the_service_uid_enters_the_dedicated_name_hash() -> None:
    # a service deleted and made again under its name gets a new cache, not the old one's
    assert dedicated_cache_name("tpl", "chat", "uid-1") != dedicated_cache_name("tpl", "chat", "uid-2")
    assert dedicated_cache_name("tpl", "chat", "uid-1") == dedicated_cache_name("tpl", "chat", "uid-1")


def test_a_shared_cache_is_named_for_template_and_namespace_and_owned_by_none() -> None:
    for mode in (SHARED, "Always"):
        _, body = cache_body(service(), template(), mode)
        assert body["metadata"]["name"] == shared_cache_name("tpl", "ml")
        assert body["spec"]["mode"] == SHARED
        assert "ownerReferences" not in body["metadata"]


# -- which cache each mode uses ----------------------------------------------------------------


def test_a_shared_service_ignores_dedicated_caches() -> None:
    own = dedicated_cache_name("tpl", "chat", "uid-1")
    informer = informer_of(template_cache(own, DEDICATED, owner="uid-1"))
    assert find_cache(informer, AIM, "ml", template()) is None
    shared = template_cache(shared_cache_name("tpl", "ml"), SHARED)
    informer = informer_of(template_cache(own, DEDICATED, owner="uid-1"), shared)
    found = find_cache(informer, AIM, "ml", template())
    assert found is not None and found.name == shared["metadata"]["name"]


def test_a_dedicated_service_uses_only_the_cache_it_owns() -> None:
    view = service({"caching": {"mode": "Dedicated"}})
    own = dedicated_cache_name("tpl", "chat", "uid-1")
    shared = template_cache(shared_cache_name("tpl", "ml"), SHARED)
    assert find_cache(informer_of(shared), AIM, "ml", template(), view) is None
    # its name, but another service's (a namesake deleted and made again): not its own
    assert (
        find_cache(informer_of(template_cache(own, DEDICATED, owner="uid-0")), AIM, "ml", template(), view)
        is None
    )
    found = find_cache(
        informer_of(shared, template_cache(own, DEDICATED, owner="uid-1")), AIM, "ml", template(), view
    )
    assert found is not None and found.name == own


# -- a cache deleted under a running service ---------------------------------------------------

LIVE = (CacheMount("mc", "mc-cache-1", "/workspace/model-cache/acme/tiny"),)


@pytest.mark.parametrize("behaviour", [SEEDS, RELEASED])
def test_a_deleted_dedicated_cache_is_being_recreated_with_the_volumes_kept(behaviour: Behaviour) -> None:
    plan = plan_cache(informer_of(), service({"caching": {"mode": "Dedicated"}}), template(), LIVE, behaviour)
    assert (plan.condition.status, plan.condition.reason) == ("False", "CacheCreating")
    assert plan.condition.message == "Dedicated template cache is being recreated"
    assert plan.mounts == LIVE and not plan.wait
    assert plan.create is not None and plan.create[1]["metadata"]["ownerReferences"]


@pytest.mark.parametrize("behaviour", [SEEDS, RELEASED])
def test_a_deleted_shared_cache_is_lost_and_made_again_unowned(behaviour: Behaviour) -> None:
    plan = plan_cache(informer_of(), service({"caching": {"mode": "Shared"}}), template(), LIVE, behaviour)
    assert (plan.condition.status, plan.condition.reason) == ("False", "CacheLost")
    assert "Shared template cache was deleted" in plan.condition.message
    assert plan.mounts == LIVE and not plan.wait
    assert plan.create is not None and "ownerReferences" not in plan.create[1]["metadata"]


def test_without_volumes_a_missing_cache_is_created_and_waited_for() -> None:
    plan = plan_cache(informer_of(), service({"caching": {"mode": "Dedicated"}}), template(), (), SEEDS)
    assert (plan.condition.reason, plan.wait) == ("CacheCreating", True)


def test_under_released_never_makes_a_dedicated_cache_and_unset_a_shared_one() -> None:
    never = plan_cache(informer_of(), service({"caching": {"mode": "Never"}}), template(), (), RELEASED)
    assert never.create is not None and never.create[1]["spec"]["mode"] == DEDICATED
    unset = plan_cache(informer_of(), service(), template(), (), RELEASED)
    assert unset.create is not None and unset.create[1]["spec"]["mode"] == SHARED
    # the seeds: Never uses no cache, unset (Auto) creates none
    assert (
        plan_cache(informer_of(), service({"caching": {"mode": "Never"}}), template(), (), SEEDS).create
        is None
    )
    assert plan_cache(informer_of(), service(), template(), (), SEEDS).create is None


def test_a_cache_failed_after_its_retry_keeps_a_released_service_waiting() -> None:
    failed = template_cache(shared_cache_name("tpl", "ml"), SHARED, status="Failed")
    failed["metadata"]["annotations"] = {"aim.eai.amd.com/cache-retried": "1"}
    model_cache = {  # failed again after the retry
        "apiVersion": TEMPLATE_CACHE.api_version,
        "kind": "AIMModelCache",
        "metadata": {"name": "mc", "namespace": "ml", "uid": "mc-2", "labels": {TEMPLATE_CACHE_LABEL: "tc"}},
        "spec": {"sourceUri": "hf://acme/tiny"},
        "status": {"status": "Failed"},
    }
    failed["metadata"]["name"] = "tc"
    view = service({"caching": {"mode": "Shared"}})
    seeds = plan_cache(informer_of(failed, model_cache), view, template(), (), SEEDS)
    released = plan_cache(informer_of(failed, model_cache), view, template(), (), RELEASED)
    assert seeds.condition.reason == released.condition.reason == "CacheFailed"
    assert not seeds.wait  # the seeds: running without it
    assert released.wait  # the released original: no InferenceService without a Ready cache


def test_the_released_mount_root_ignores_the_listed_mount_point() -> None:
    entry = {
        "acme/tiny": {
            "name": "mc",
            "status": "Ready",
            "model": "acme/tiny",
            "persistentVolumeClaim": "mc-cache-1",
            "mountPoint": "/workspace/model-cache/acme/tiny",
        }
    }
    tc = TemplateCache(TEMPLATE_CACHE, template_cache("tc", SHARED, model_caches=entry))
    informer = informer_of()
    assert mounts_of(informer, AIM, tc) == (
        CacheMount("mc", "mc-cache-1", "/workspace/model-cache/acme/tiny"),
    )
    assert mounts_of(informer, AIM, tc, RELEASED_CACHE_ROOT) == (
        CacheMount("mc", "mc-cache-1", "/workspace/cache/acme/tiny"),
    )


def test_an_imported_cache_is_mounted_read_only_at_its_directory() -> None:
    entry = {
        "meta/llama": {
            "name": "llama",
            "status": "Ready",
            "model": "meta/llama",
            "persistentVolumeClaim": "shared-weights",
            "mountPoint": "/workspace/model-cache/meta/llama",
        }
    }
    tc = TemplateCache(TEMPLATE_CACHE, template_cache("tc", SHARED, model_caches=entry))
    imported = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModelCache",
        "metadata": {"name": "llama", "namespace": "ml", "uid": "mc-1"},
        "spec": {"sourceUri": "pvc://shared-weights/models/llama"},
        "status": {"status": "Ready", "persistentVolumeClaim": "shared-weights"},
    }
    assert mounts_of(informer_of(imported), AIM, tc) == (
        CacheMount(
            "llama",
            "shared-weights",
            "/workspace/model-cache/meta/llama",
            sub_path="models/llama",
            read_only=True,
        ),
    )
    downloaded = {**imported, "spec": {"sourceUri": "hf://meta/llama"}}
    assert mounts_of(informer_of(downloaded), AIM, tc) == (
        CacheMount("llama", "shared-weights", "/workspace/model-cache/meta/llama"),
    )


# -- immutable caching and template ------------------------------------------------------------


def obj(spec: dict[str, Any], record: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "chat"}
    if record is not None:
        meta["annotations"] = {immutability.ANNOTATION: json.dumps(record)}
    return {"metadata": meta, "spec": {"model": {"name": "llama"}, **spec}}


def test_what_is_set_is_recorded_once() -> None:
    first = immutability.check(obj({"caching": {"mode": "Shared"}}), IMMUTABLE)
    assert first.refused is None and first.record is not None
    assert json.loads(first.record) == {"caching": {"mode": "Shared"}}
    again = immutability.check(
        obj({"caching": {"mode": "Shared"}}, {"caching": {"mode": "Shared"}}), IMMUTABLE
    )
    assert again == immutability.Check()  # nothing to write
    assert immutability.check(obj({}), IMMUTABLE) == immutability.Check()


@pytest.mark.parametrize("field", ["caching", "template"])
def test_a_change_of_a_set_field_is_refused_naming_both_values(field: str) -> None:
    before = {"caching": {"mode": "Shared"}, "template": {"name": "a"}}
    after = {"caching": {"mode": "Dedicated"}, "template": {"name": "b"}}
    spec = {**before, field: after[field]}
    found = immutability.check(obj(spec, before), IMMUTABLE)
    assert found.record is None
    assert found.refused is not None
    assert f"spec.{field} is immutable once set" in found.refused
    assert json.dumps(before[field], separators=(",", ":")) in found.refused
    other = "template" if field == "caching" else "caching"
    assert f"spec.{other}" not in found.refused


def test_setting_a_field_first_or_removing_it_is_accepted_as_cel_does() -> None:
    added = immutability.check(
        obj({"caching": {"mode": "Shared"}, "template": {"name": "a"}}, {"caching": {"mode": "Shared"}}),
        IMMUTABLE,
    )
    assert added.refused is None and added.record is not None
    assert json.loads(added.record)["template"] == {"name": "a"}
    removed = immutability.check(obj({}, {"caching": {"mode": "Shared"}}), IMMUTABLE)
    assert removed.refused is None and removed.record == "{}"
