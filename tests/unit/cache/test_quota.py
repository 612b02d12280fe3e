"""Storage quotas for model caches, decided purely: limits from the cluster runtime config and the
namespace annotation, what each cache costs, who counts, which caches are evicted and in what
order, and the exact reasons and messages the conditions carry (the released original's rules,
with its bugs fixed)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from aim_cache import quota
from aim_cache.quota import Action, Limits

GIB = 1024**3
MIB = 1024**2
NS = "team"


def cache(
    name: str,
    *,
    size: str | int | None = "1Gi",
    holds: bool = True,
    status: str = "Ready",
    priority: int | None = None,
    created: str = "2026-01-01T00:00:00Z",
    namespace: str = NS,
    **extra: Any,
) -> dict[str, Any]:
    """An AIMArtifact as the API server returns it; ``holds``: its PVC exists, at ``size``."""
    obj: dict[str, Any] = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMArtifact",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
        },
        "spec": {"sourceUri": f"hf://acme/{name}"},
        "status": {"status": status},
    }
    if size is not None:
        obj["spec"]["size"] = size
    if priority is not None:
        obj["spec"]["retentionPriority"] = priority
    if holds:
        obj["status"]["persistentVolumeClaim"] = f"{name}-cache-0123456789"
        if size is not None:
            obj["status"]["allocatedSize"] = size
    for path, value in extra.items():
        section, key = path.split("__")
        obj[section][key] = value
    return obj


def new(name: str = "new", size: str | None = "1Gi", **kw: Any) -> dict[str, Any]:
    return cache(name, size=size, holds=False, status="Pending", **kw)


def decide(
    subject: dict[str, Any],
    others: list[dict[str, Any]],
    *,
    namespace: int | None = None,
    cluster: int | None = None,
    everywhere: list[dict[str, Any]] | None = None,
    in_use: frozenset[str] = frozenset(),
    headroom: int = 0,
    default: int | None = 5,
    warning: str | None = None,
    size: int | None = None,
) -> quota.Decision:
    cluster_caches = [*others, *(everywhere or [])]
    limits = Limits(namespace=namespace, cluster=cluster, warning=warning)
    return quota.decide(subject, others, cluster_caches, limits, in_use, headroom, default, size=size)


def victims(decision: quota.Decision) -> list[str]:
    return [v.name for v in decision.victims]


# -- limits -----------------------------------------------------------------------------------------


def config(**quota_fields: Any) -> dict[str, Any]:
    return {"artifactStorageQuota": quota_fields}


def test_limits_from_the_config_and_the_annotation_overriding_the_default() -> None:
    spec = config(clusterLimit="1Ti", defaultNamespaceLimit="100Gi")
    assert quota.parse_limits(spec, {}, namespace=NS) == Limits(namespace=100 * GIB, cluster=1024 * GIB)
    annotated = quota.parse_limits(spec, {quota.QUOTA_ANNOTATION: "20Gi"}, namespace=NS)
    assert annotated == Limits(namespace=20 * GIB, cluster=1024 * GIB)
    assert quota.parse_limits(None, None, namespace=NS) == Limits()
    assert quota.parse_limits({}, {quota.QUOTA_ANNOTATION: "5G"}, namespace=NS) == Limits(namespace=5 * 10**9)
    assert quota.parse_limits(config(clusterLimit=0), {}, namespace=NS) == Limits(
        cluster=0
    )  # zero is a limit


def test_an_empty_annotation_is_unset() -> None:
    spec = config(defaultNamespaceLimit="100Gi", clusterLimit="")
    assert quota.parse_limits(spec, {quota.QUOTA_ANNOTATION: ""}, namespace=NS) == Limits(namespace=100 * GIB)


def test_an_unparsable_annotation_falls_back_to_the_default_with_a_warning() -> None:
    spec = config(defaultNamespaceLimit="100Gi")
    limits = quota.parse_limits(spec, {quota.QUOTA_ANNOTATION: "lots"}, namespace=NS)
    assert limits.namespace == 100 * GIB
    assert limits.warning is not None
    assert limits.warning.startswith(
        'invalid aim.eai.amd.com/artifact-storage-quota annotation "lots" on namespace team: '
        "not a Kubernetes quantity"
    )


def test_a_negative_annotation_is_not_a_limit() -> None:
    limits = quota.parse_limits(
        config(defaultNamespaceLimit="8Gi"), {quota.QUOTA_ANNOTATION: "-1Gi"}, namespace=NS
    )
    assert limits == Limits(
        namespace=8 * GIB,
        warning='invalid aim.eai.amd.com/artifact-storage-quota annotation "-1Gi" on namespace team: '
        "a negative quantity is not a limit",
    )


def test_negative_or_unparsable_config_limits_are_ignored_with_warnings() -> None:
    limits = quota.parse_limits(config(clusterLimit="-5Gi", defaultNamespaceLimit="ten"), {}, namespace=NS)
    assert (limits.namespace, limits.cluster) == (None, None)
    assert limits.warning is not None
    cluster_warning, default_warning = limits.warning.split("; ")
    assert cluster_warning == (
        'spec.artifactStorageQuota.clusterLimit "-5Gi" is not a quantity ≥ 0: '
        "a negative quantity is not a limit"
    )
    assert default_warning.startswith(
        'spec.artifactStorageQuota.defaultNamespaceLimit "ten" is not a quantity ≥ 0: '
        "not a Kubernetes quantity"
    )
    # the annotation still applies when the default is broken
    annotated = quota.parse_limits(
        config(defaultNamespaceLimit="ten"), {quota.QUOTA_ANNOTATION: "2Gi"}, namespace=NS
    )
    assert annotated.namespace == 2 * GIB and annotated.warning is not None


def test_a_limits_warning_is_appended_to_the_message() -> None:
    decision = decide(new(), [], warning="bad thing")
    assert decision.message == "No storage quota applies (warning: bad thing)"
    within = decide(new(), [], namespace=10 * GIB, warning="bad thing")
    assert within.message == "Storage usage is within quota limits (warning: bad thing)"


# -- usage ------------------------------------------------------------------------------------------


def test_usage_rounds_up_to_whole_gib() -> None:
    assert quota.usage_bytes(cache("a", size="1Mi", holds=False), 0) == GIB
    assert quota.usage_bytes(cache("a", size="2Gi", holds=False), 0) == 2 * GIB
    assert quota.usage_bytes(cache("a", size="2Gi", holds=False), 10) == 3 * GIB  # 2.2Gi
    assert quota.usage_bytes(cache("a", size="10Gi", holds=False), 10) == 11 * GIB  # exactly 11Gi
    # 9.5Gi + 5% = 9.975Gi; exact arithmetic, no float
    assert quota.usage_bytes(cache("a", size=str(19 * GIB // 2), holds=False), 5) == 10 * GIB
    assert quota.usage_bytes(cache("a", size=None, holds=False), 10) == 0


def test_allocated_size_wins_then_discovered_then_spec() -> None:
    held = cache("a", size="10Gi", status__allocatedSize="3Gi", status__discoveredSizeBytes=20 * GIB)
    assert quota.usage_bytes(held, 10) == 3 * GIB  # as allocated, no headroom
    discovered = cache("a", size="10Gi", holds=False, status__discoveredSizeBytes=5 * GIB)
    assert quota.usage_bytes(discovered, 10) == 6 * GIB  # 5.5Gi → 6Gi
    zero_allocated = cache("a", size="4Gi", holds=False, status__allocatedSize="0")
    assert quota.usage_bytes(zero_allocated, 0) == 4 * GIB
    assert quota.usage_bytes(quota.Cache.from_object(held), 10) == 3 * GIB


def test_the_subjects_need_adds_headroom_and_prefers_the_callers_size() -> None:
    assert decide(new(size="1Gi"), [], namespace=100 * GIB, headroom=10).need == 2 * GIB
    assert decide(new(size="10Gi"), [], namespace=100 * GIB, headroom=10).need == 11 * GIB
    probed = new(size=None, status__discoveredSizeBytes=3 * GIB)
    assert decide(probed, [], namespace=100 * GIB).need == 3 * GIB
    assert decide(new(size=None), [], namespace=100 * GIB, size=7 * GIB).need == 7 * GIB
    assert decide(new(size="1Mi"), [], namespace=100 * GIB).need == GIB  # whole GiB
    assert decide(new(size=None), [], namespace=100 * GIB).need == GIB  # unsized: the PVC's minimum


# -- admitting and blocking -------------------------------------------------------------------------


def test_no_limit_admits() -> None:
    decision = decide(new(size="1Ti"), [cache("a", size="10Ti")])
    assert decision.action is Action.ADMIT and decision.admitted
    assert (decision.reason, decision.message) == ("WithinQuota", "No storage quota applies")


def test_within_and_exactly_at_the_limit_is_admitted() -> None:
    held = [cache("a", size="2Gi")]
    within = decide(new(), held, namespace=10 * GIB)
    assert within.action is Action.ADMIT
    assert (within.reason, within.message) == ("WithinQuota", "Storage usage is within quota limits")
    assert decide(new(), held, namespace=3 * GIB).action is Action.ADMIT  # 2 + 1 = 3: fits
    assert decide(new(), held, namespace=3 * GIB - 1, default=None).action is Action.BLOCK


def test_blocked_with_the_exact_message_and_raising_the_limit_admits() -> None:
    held = [cache("a", size="3Gi", priority=None)]
    blocked = decide(new(size="2Gi"), held, namespace=4 * GIB, default=None)
    assert blocked.action is Action.BLOCK and not blocked.admitted and blocked.victims == ()
    assert blocked.reason == "NamespaceQuotaExceeded"
    assert blocked.message == "Namespace quota exceeded: 3Gi used + 2Gi needed > 4Gi limit"
    assert blocked.scope == "namespace"
    assert decide(new(size="2Gi"), held, namespace=5 * GIB, default=None).action is Action.ADMIT


def test_zero_is_a_limit_nothing_fits() -> None:
    blocked = decide(new(), [], namespace=0)
    assert blocked.action is Action.BLOCK
    assert blocked.message == "Namespace quota exceeded: 0 used + 1Gi needed > 0 limit"


def test_the_subject_never_counts_itself() -> None:
    subject = cache("new", size="2Gi")  # a retry after its PVC was made
    assert decide(subject, [subject], namespace=2 * GIB).action is Action.ADMIT


def test_caches_without_storage_do_not_count_and_racers_are_settled_in_turn() -> None:
    """The original counted every cache with a size, so two blocked caches kept each other out."""
    held = cache("held", size="1Gi", priority=None)
    first, second = new("first"), new("second")
    assert decide(first, [held, second], namespace=2 * GIB, default=None).action is Action.ADMIT
    # the first now holds its volume (the PVC made, no size allocated yet): it counts
    first["status"]["persistentVolumeClaim"] = "first-cache-0123456789"
    blocked = decide(second, [held, first], namespace=2 * GIB, default=None)
    assert blocked.action is Action.BLOCK
    assert blocked.message == "Namespace quota exceeded: 2Gi used + 1Gi needed > 2Gi limit"


def test_a_blocked_cache_holding_no_volume_does_not_block_others() -> None:
    waiting = new("waiting", size="100Gi")
    assert decide(new(), [waiting], namespace=2 * GIB).action is Action.ADMIT


# -- eviction ---------------------------------------------------------------------------------------


def test_the_released_originals_e2e_evicts_the_default_priority_cache() -> None:
    """Default priority 5, a 3Gi quota, three Ready Shared 1Gi caches at priority 5 (the
    default), 50 and 100: a new 1Gi cache evicts the default-priority one."""
    held = [cache("p100", priority=100), cache("p50", priority=50), cache("default")]
    decision = decide(new(), held, namespace=3 * GIB, default=5)
    assert decision.action is Action.EVICT and not decision.admitted
    assert victims(decision) == ["default"]
    assert decision.reason == "Evicting"
    assert decision.message == "Evicting 1 cache(s) to free storage quota: team/default"
    assert quota.evicted_message("team", "new") == "Evicted to free storage quota for artifact team/new"


def test_equal_priorities_evict_the_oldest_first_then_by_name() -> None:
    held = [
        cache("young", created="2026-03-01T00:00:00Z"),
        cache("old", created="2026-01-01T00:00:00Z"),
        cache("b-mid", created="2026-02-01T00:00:00Z", metadata__uid="uid-1"),
        cache("a-mid", created="2026-02-01T00:00:00Z", metadata__uid="uid-2"),
    ]
    assert victims(decide(new(), held, namespace=4 * GIB)) == ["old"]
    assert victims(decide(new(size="2Gi"), held, namespace=4 * GIB)) == ["old", "a-mid"]
    assert victims(decide(new(size="2Gi"), list(reversed(held)), namespace=4 * GIB)) == ["old", "a-mid"]
    # time zones compare as instants
    offset = [
        cache("a-late", created="2026-01-01T00:00:00Z"),
        cache("z-early", created="2026-01-01T05:00:00+06:00"),
    ]
    assert victims(decide(new(), offset, namespace=2 * GIB)) == ["z-early"]


def test_the_shortest_prefix_that_covers_the_deficit() -> None:
    held = [
        cache("small", size="1Gi", priority=1),
        cache("big", size="4Gi", priority=2),
        cache("c", priority=3),
    ]
    # 6Gi used + 3Gi needed against 7Gi: 2Gi short; small (1Gi) then big (4Gi) covers it, c stays
    decision = decide(new(size="3Gi"), held, namespace=7 * GIB)
    assert victims(decision) == ["small", "big"]
    assert decision.message == "Evicting 2 cache(s) to free storage quota: team/small, team/big"
    assert [v.uid for v in decision.victims] == ["uid-small", "uid-big"]


@pytest.mark.parametrize(
    "kept",
    [
        cache("kept", metadata__annotations={quota.PROTECTED_ANNOTATION: "true"}),
        cache("kept", metadata__ownerReferences=[{"kind": "AIMTemplateCache", "name": "tc", "uid": "u"}]),
        cache("kept", status="Progressing"),
        cache("kept", status="Failed"),
        cache("kept", spec__sourceUri="pvc://user-volume/models"),
    ],
    ids=["protected", "dedicated", "not-ready", "failed", "imported"],
)
def test_caches_that_are_never_evicted(kept: dict[str, Any]) -> None:
    """Each is the oldest and lowest-priority cache, yet the other one goes."""
    kept["spec"]["retentionPriority"] = 0
    other = cache("other", priority=9, created="2026-02-01T00:00:00Z")
    assert victims(decide(new(), [kept, other], namespace=2 * GIB)) == ["other"]


def test_a_protection_annotation_must_say_exactly_true() -> None:
    loose = cache("loose", priority=0, metadata__annotations={quota.PROTECTED_ANNOTATION: "True"})
    assert victims(decide(new(), [loose], namespace=1 * GIB)) == ["loose"]


def test_caches_in_use_and_without_priority_are_never_evicted() -> None:
    used = cache("used", priority=0)
    unranked = cache("unranked")  # no retentionPriority, no default
    other = cache("other", priority=9, created="2026-02-01T00:00:00Z")
    decision = decide(
        new(), [used, unranked, other], namespace=3 * GIB, in_use=frozenset({"uid-used"}), default=None
    )
    assert victims(decision) == ["other"]
    assert decide(
        new(), [used, unranked], namespace=2 * GIB, in_use=frozenset({"uid-used"}), default=None
    ).action is (Action.BLOCK)


def test_a_deficit_that_cannot_be_covered_blocks_and_evicts_nothing() -> None:
    held = [cache("a", priority=1), cache("b", size="2Gi", priority=None), cache("c", priority=2)]
    # 4Gi used + 3Gi needed against 5Gi: 2Gi short, the two evictable ones free exactly that
    assert victims(decide(new(size="3Gi"), held, namespace=5 * GIB, default=None)) == ["a", "c"]
    blocked = decide(new(size="4Gi"), held, namespace=5 * GIB, default=None)
    assert blocked.action is Action.BLOCK and blocked.victims == ()
    assert blocked.message == "Namespace quota exceeded: 4Gi used + 4Gi needed > 5Gi limit"


def test_an_imported_cache_counts_but_is_never_evicted() -> None:
    imported = cache("imported", size="3Gi", holds=False, priority=0, spec__sourceUri="pvc://vol/model")
    assert quota.Cache.from_object(imported).imported
    blocked = decide(new(), [imported], namespace=3 * GIB)
    assert blocked.action is Action.BLOCK
    assert blocked.message == "Namespace quota exceeded: 3Gi used + 1Gi needed > 3Gi limit"


def test_wait_while_a_victim_is_being_deleted() -> None:
    gone = cache("gone", size="2Gi", priority=1, metadata__deletionTimestamp="2026-04-01T00:00:00Z")
    held = [gone, cache("kept", priority=9)]
    decision = decide(new(), held, namespace=3 * GIB)
    assert decision.action is Action.WAIT and decision.victims == ()
    assert decision.reason == "Evicting"
    assert decision.message == "Waiting for 1 evicted cache(s) to release 2Gi"
    # once it is gone, the new cache fits
    assert decide(new(), held[1:], namespace=3 * GIB).action is Action.ADMIT
    # what is being freed is not enough: evict the rest of the deficit, not the deleting one
    evict = decide(new(size="3Gi"), held, namespace=3 * GIB)
    assert victims(evict) == ["kept"]


# -- the cluster -----------------------------------------------------------------------------------


def test_the_cluster_limit_counts_every_namespace() -> None:
    elsewhere = [cache("far", size="3Gi", namespace="other", priority=None)]
    blocked = decide(new(), [cache("near")], cluster=4 * GIB, everywhere=elsewhere, default=None)
    assert blocked.action is Action.BLOCK
    assert (blocked.reason, blocked.scope) == ("ClusterQuotaExceeded", "cluster")
    assert blocked.message == "Cluster quota exceeded: 4Gi used + 1Gi needed > 4Gi limit"
    # the namespace itself is fine; the cluster's candidates make room
    far = [cache("far", size="3Gi", namespace="other", priority=1)]
    decision = decide(new(), [cache("near", priority=9)], namespace=10 * GIB, cluster=4 * GIB, everywhere=far)
    assert victims(decision) == ["far"]
    assert decision.message == "Evicting 1 cache(s) to free storage quota: other/far"


def test_namespace_victims_count_for_the_cluster_and_its_candidates_cover_the_rest() -> None:
    near = [cache("near", size="2Gi", priority=1)]
    far = [cache("far", size="2Gi", namespace="other", priority=1, created="2025-01-01T00:00:00Z")]
    # the namespace (2Gi + 2Gi > 3Gi) evicts near; the cluster (4Gi + 2Gi > 4Gi) is then fine
    decision = decide(new(size="2Gi"), near, namespace=3 * GIB, cluster=4 * GIB, everywhere=far)
    assert victims(decision) == ["near"]
    # against 3Gi in the cluster, near's 2Gi is not enough: far goes too
    decision = decide(new(size="2Gi"), near, namespace=3 * GIB, cluster=3 * GIB, everywhere=far)
    assert victims(decision) == ["near", "far"]
    assert decision.message == "Evicting 2 cache(s) to free storage quota: team/near, other/far"
    assert decision.scope == "namespace"
    # and when far may not go, the cluster blocks, naming itself
    kept = [cache("far", size="2Gi", namespace="other", priority=None)]
    blocked = decide(new(size="2Gi"), near, namespace=3 * GIB, cluster=3 * GIB, everywhere=kept, default=None)
    assert blocked.action is Action.BLOCK and blocked.victims == ()
    assert blocked.reason == "ClusterQuotaExceeded"
    assert blocked.message == "Cluster quota exceeded: 4Gi used + 2Gi needed > 3Gi limit"


def test_the_cluster_waits_for_a_deletion_in_another_namespace() -> None:
    gone = [cache("far", size="3Gi", namespace="other", metadata__deletionTimestamp="2026-04-01T00:00:00Z")]
    decision = decide(new(), [cache("near", priority=1)], namespace=2 * GIB, cluster=4 * GIB, everywhere=gone)
    assert decision.action is Action.WAIT and decision.scope == "cluster"
    assert decision.message == "Waiting for 1 evicted cache(s) to release 3Gi"


def test_the_namespace_blocks_before_the_cluster_is_considered() -> None:
    blocked = decide(
        new(size="2Gi"), [cache("near", priority=None)], namespace=2 * GIB, cluster=GIB, default=None
    )
    assert (blocked.reason, blocked.scope) == ("NamespaceQuotaExceeded", "namespace")


# -- conditions ------------------------------------------------------------------------------------


def test_conditions_say_the_same_reason_and_message() -> None:
    admitted = decide(new(), [], namespace=10 * GIB)
    assert admitted.conditions() == (
        ("StorageQuotaExceeded", False, "WithinQuota", "Storage usage is within quota limits"),
        ("StorageQuotaReady", True, "WithinQuota", "Storage usage is within quota limits"),
    )
    blocked = decide(new(), [], cluster=0)
    message = "Cluster quota exceeded: 0 used + 1Gi needed > 0 limit"
    assert blocked.conditions() == (
        ("StorageQuotaExceeded", True, "ClusterQuotaExceeded", message),
        ("StorageQuotaReady", False, "ClusterQuotaExceeded", message),
    )
    evicting = decide(new(), [cache("a", priority=1)], namespace=GIB)
    message = "Evicting 1 cache(s) to free storage quota: team/a"
    assert evicting.conditions() == (
        ("StorageQuotaExceeded", True, "Evicting", message),
        ("StorageQuotaReady", False, "Evicting", message),  # the original said True while evicting
    )


# -- helpers ---------------------------------------------------------------------------------------


def test_effective_priority() -> None:
    assert quota.effective_priority(cache("a", priority=7), 5) == 7
    assert quota.effective_priority(cache("a", priority=0), 5) == 0
    assert quota.effective_priority(cache("a"), 5) == 5
    assert quota.effective_priority(cache("a"), None) is None
    assert quota.effective_priority(cache("a", priority=-1), 5) == 5
    assert quota.effective_priority(cache("a", spec__retentionPriority=True), None) is None
    assert quota.effective_priority(cache("a", spec__retentionPriority="3"), None) is None


def test_in_use_uids_reads_both_status_maps() -> None:
    template_caches = [
        {
            "status": {
                "modelCaches": {"llama": {"uid": "u1", "name": "c1"}},
                "artifacts": {"llama": {"uid": "u2"}},
            }
        },
        {"status": {"modelCaches": {"a": {"name": "no-uid"}, "b": {"uid": "u3"}}}},
        {"status": {}},
        {},
    ]
    assert quota.in_use_uids(template_caches) == frozenset({"u1", "u2", "u3"})
    assert quota.in_use_uids([]) == frozenset()


def test_cache_from_object() -> None:
    obj = cache(
        "a",
        size="1536Mi",
        priority=3,
        metadata__deletionTimestamp="2026-04-01T00:00:00Z",
        status__discoveredSizeBytes=1000,
    )
    c = quota.Cache.from_object(obj)
    assert (c.kind, c.ref, c.uid, c.priority) == ("AIMArtifact", "team/a", "uid-a", 3)
    assert c.deleting and c.ready and c.holds_storage and not c.owned and not c.protected and not c.imported
    assert (c.allocated, c.discovered, c.size) == (Fraction(1536 * MIB), Fraction(1000), Fraction(1536 * MIB))
    bare = quota.Cache.from_object(new("b", size=None))
    assert not bare.holds_storage and not bare.ready and bare.size is None
    # same name, other kind: a different cache
    other_kind = quota.Cache.from_object({**new("new"), "kind": "AIMModelCache", "metadata": {"name": "new"}})
    same_kind = quota.Cache.from_object({**new("new"), "metadata": {"name": "new"}})
    assert not other_kind.same(same_kind)
    assert same_kind.same(quota.Cache.from_object({**new("new"), "metadata": {"name": "new"}}))


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (1, "1"),
        (512, "512"),
        (1024, "1Ki"),
        (512 * 1024, "512Ki"),
        (GIB, "1Gi"),
        (1536 * MIB, "1536Mi"),
        (2 * 1024**4, "2Ti"),
        (10**9, "1000000000"),
        (GIB + 1, str(GIB + 1)),
        (2048 * 1024**6, "2048Ei"),
        (-GIB, "-1Gi"),
    ],
)
def test_format_quantity(n: int, text: str) -> None:
    assert quota.format_quantity(n) == text
