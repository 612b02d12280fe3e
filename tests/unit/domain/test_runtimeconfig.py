"""Runtime-config resolution and merge (``aimcore.domain.runtimeconfig``,
docs/original.md#runtime-config-resolution)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from aim_discovery.runtimeconfigs import problems
from aimcore.api.kinds import KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain.runtimeconfig import (
    CONFIG_FOUND,
    DEFAULT_CONFIG_NOT_FOUND,
    SCOPE_CLUSTER,
    SCOPE_MERGED,
    SCOPE_NAMESPACE,
    ConfigNotFound,
    Resolved,
    config_kinds,
    config_name,
    glob_error,
    merge,
    merge_env,
    migrate_deprecated,
    propagated_labels,
    resolve,
    users_of,
)

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"
GROUPS = [AIM, LEGACY]


def config(
    group: str, kind: str, name: str, spec: Obj, *, namespace: str | None = None, uid: str = ""
) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if uid:
        meta["uid"] = uid
    return {"apiVersion": f"{group}/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}


class Store:
    """A dict-backed lookup ``(KindRef, namespace | None, name) -> obj | None`` that records its calls."""

    def __init__(self, *objs: Obj) -> None:
        self.objs: dict[tuple[str, str, str | None, str], Obj] = {}
        self.calls: list[tuple[KindRef, str | None, str]] = []
        for obj in objs:
            group = obj["apiVersion"].split("/")[0]
            meta = obj["metadata"]
            self.objs[(group, obj["kind"], meta.get("namespace"), meta["name"])] = obj

    def __call__(self, ref: KindRef, namespace: str | None, name: str) -> Obj | None:
        self.calls.append((ref, namespace, name))
        return self.objs.get((ref.group, ref.kind, namespace, name))


def ns_config(name: str, spec: Obj, group: str = AIM, namespace: str = "ns", uid: str = "ns-uid") -> Obj:
    return config(group, "AIMRuntimeConfig", name, spec, namespace=namespace, uid=uid)


def cluster_config(name: str, spec: Obj, group: str = AIM, uid: str = "cl-uid") -> Obj:
    return config(group, "AIMClusterRuntimeConfig", name, spec, uid=uid)


# -- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (None, "default"),
        ({}, "default"),
        ({"runtimeConfigName": ""}, "default"),
        ({"runtimeConfigName": None}, "default"),
        ({"runtimeConfigName": "gpu-team"}, "gpu-team"),
    ],
)
def test_config_name_defaults_to_default(spec: Obj | None, want: str) -> None:
    assert config_name(spec) == want


def test_users_of_matches_objects_resolving_to_the_name() -> None:
    uses_default = users_of("default")
    uses_team = users_of("team")
    assert uses_default({"spec": {}})
    assert uses_default({})
    assert uses_default({"spec": {"runtimeConfigName": ""}})
    assert not uses_default({"spec": {"runtimeConfigName": "team"}})
    assert uses_team({"spec": {"runtimeConfigName": "team"}})
    assert not uses_team({"spec": {}})


@pytest.mark.parametrize("group", GROUPS)
def test_config_kinds_per_group(group: str) -> None:
    kinds = config_kinds(group)
    assert kinds.namespaced == by_kind(group, "AIMRuntimeConfig")
    assert kinds.cluster == by_kind(group, "AIMClusterRuntimeConfig")
    assert kinds.namespaced.namespaced
    assert not kinds.cluster.namespaced


# -- resolution ------------------------------------------------------------------------------------


@pytest.mark.parametrize("group", GROUPS)
def test_missing_default_config_is_not_an_error(group: str) -> None:
    resolved = resolve(Store(), group, "ns", {})
    assert resolved.name == "default"
    assert resolved.spec == {}
    assert not resolved.found
    assert resolved.scope is None
    assert resolved.reference() is None
    assert resolved.condition_reason()[0] == DEFAULT_CONFIG_NOT_FOUND


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("namespace", ["ns", None])
def test_missing_named_config_raises(group: str, namespace: str | None) -> None:
    with pytest.raises(ConfigNotFound) as info:
        resolve(Store(), group, namespace, {"runtimeConfigName": "team"})
    assert info.value.name == "team"
    assert info.value.namespace == namespace
    assert "team" in str(info.value)
    if namespace:
        assert "namespace ns" in str(info.value)
    else:
        assert "AIMRuntimeConfig in namespace" not in str(info.value)


def test_named_config_in_another_namespace_is_not_found() -> None:
    store = Store(ns_config("team", {"routing": {"enabled": True}}, namespace="other"))
    with pytest.raises(ConfigNotFound):
        resolve(store, AIM, "ns", {"runtimeConfigName": "team"})


@pytest.mark.parametrize("group", GROUPS)
def test_namespace_config_only(group: str) -> None:
    store = Store(ns_config("team", {"routing": {"enabled": True}}, group=group))
    resolved = resolve(store, group, "ns", {"runtimeConfigName": "team"})
    assert resolved.found
    assert resolved.scope == SCOPE_NAMESPACE
    assert resolved.spec == {"routing": {"enabled": True}}
    assert resolved.cluster_config is None
    assert resolved.reference() == {
        "name": "team",
        "namespace": "ns",
        "scope": SCOPE_NAMESPACE,
        "kind": "AIMRuntimeConfig",
        "uid": "ns-uid",
    }
    reason, message = resolved.condition_reason()
    assert reason == CONFIG_FOUND
    assert "'team'" in message
    assert "namespace scope" in message


@pytest.mark.parametrize("group", GROUPS)
def test_cluster_config_only(group: str) -> None:
    store = Store(cluster_config("default", {"model": {"autoDiscovery": False}}, group=group))
    resolved = resolve(store, group, "ns", None)
    assert resolved.scope == SCOPE_CLUSTER
    assert resolved.get("model", "autoDiscovery") is False
    ref = resolved.reference()
    assert ref == {
        "name": "default",
        "scope": SCOPE_CLUSTER,
        "kind": "AIMClusterRuntimeConfig",
        "uid": "cl-uid",
    }
    assert "namespace" not in ref
    assert resolved.condition_reason() == (CONFIG_FOUND, "Using runtime config 'default' (cluster scope)")


@pytest.mark.parametrize("group", GROUPS)
def test_both_configs_merge_namespace_over_cluster(group: str) -> None:
    store = Store(
        cluster_config("default", {"routing": {"enabled": True, "pathTemplate": "/x"}}, group=group),
        ns_config("default", {"routing": {"enabled": False}}, group=group),
    )
    resolved = resolve(store, group, "ns", {})
    assert resolved.scope == SCOPE_MERGED
    assert resolved.spec == {"routing": {"enabled": False, "pathTemplate": "/x"}}
    assert resolved.namespace_config is not None
    assert resolved.cluster_config is not None
    # a merged config names the namespace config (the one on top)
    assert resolved.reference() == {
        "name": "default",
        "namespace": "ns",
        "scope": SCOPE_MERGED,
        "kind": "AIMRuntimeConfig",
        "uid": "ns-uid",
    }
    assert "merged scope" in resolved.condition_reason()[1]


def test_lookup_uses_the_groups_kinds_and_namespace() -> None:
    store = Store()
    resolve(store, LEGACY, "ns", {"runtimeConfigName": "default"})
    assert store.calls == [
        (by_kind(LEGACY, "AIMRuntimeConfig"), "ns", "default"),
        (by_kind(LEGACY, "AIMClusterRuntimeConfig"), None, "default"),
    ]


def test_cluster_scoped_object_skips_namespace_lookup() -> None:
    # a namespace config with a matching name must not be picked by a cluster-scoped object
    store = Store(ns_config("team", {"routing": {"enabled": True}}), cluster_config("team", {"a": 1}))
    resolved = resolve(store, AIM, None, {"runtimeConfigName": "team"})
    assert [call[0].kind for call in store.calls] == ["AIMClusterRuntimeConfig"]
    assert resolved.scope == SCOPE_CLUSTER
    assert resolved.spec == {"a": 1}


def test_groups_do_not_see_each_others_configs() -> None:
    store = Store(cluster_config("team", {"a": 1}, group=LEGACY))
    with pytest.raises(ConfigNotFound):
        resolve(store, AIM, "ns", {"runtimeConfigName": "team"})
    assert resolve(store, LEGACY, "ns", {"runtimeConfigName": "team"}).spec == {"a": 1}


def test_config_without_spec_resolves_to_empty_spec() -> None:
    store = Store(
        {"apiVersion": f"{AIM}/v1alpha1", "kind": "AIMClusterRuntimeConfig", "metadata": {"name": "x"}}
    )
    resolved = resolve(store, AIM, "ns", {"runtimeConfigName": "x"})
    assert resolved.found
    assert resolved.spec == {}
    assert resolved.reference() == {"name": "x", "scope": SCOPE_CLUSTER, "kind": "AIMClusterRuntimeConfig"}


def test_resolve_does_not_mutate_the_stored_configs() -> None:
    cluster = cluster_config("default", {"pvcHeadroomPercent": 10, "env": [{"name": "A", "value": "1"}]})
    ns = ns_config("default", {"env": [{"name": "A", "value": "2"}]})
    before = copy.deepcopy([cluster, ns])
    resolved = resolve(Store(cluster, ns), AIM, "ns", {})
    assert resolved.spec == {"storage": {"pvcHeadroomPercent": 10}, "env": [{"name": "A", "value": "2"}]}
    assert [cluster, ns] == before


@pytest.mark.parametrize(
    ("path", "want"),
    [
        (("routing", "enabled"), True),
        (("routing",), {"enabled": True}),
        (("routing", "missing"), None),
        (("routing", "enabled", "deeper"), None),
        (("nothing", "at", "all"), None),
    ],
)
def test_resolved_get(path: tuple[str, ...], want: Any) -> None:
    assert Resolved("x", {"routing": {"enabled": True}}).get(*path) == want


# -- merge: objects, scalars, lists -------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "over", "want"),
    [
        # explicitly set false / 0 in the namespace config win (mergo would drop them)
        ({"routing": {"enabled": True}}, {"routing": {"enabled": False}}, {"routing": {"enabled": False}}),
        (
            {"storage": {"pvcHeadroomPercent": 20}},
            {"storage": {"pvcHeadroomPercent": 0}},
            {"storage": {"pvcHeadroomPercent": 0}},
        ),
        ({"serviceAccountName": "a"}, {"serviceAccountName": ""}, {"serviceAccountName": ""}),
        # None means unset
        ({"routing": {"enabled": True}}, {"routing": {"enabled": None}}, {"routing": {"enabled": True}}),
        ({"routing": {"enabled": True}}, {"routing": None}, {"routing": {"enabled": True}}),
        # keys only in one side are kept
        ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
        # annotations merge key-wise
        (
            {"routing": {"annotations": {"a": "1", "b": "1"}}},
            {"routing": {"annotations": {"b": "2", "c": "2"}}},
            {"routing": {"annotations": {"a": "1", "b": "2", "c": "2"}}},
        ),
        # gatewayRef merges field-wise
        (
            {"routing": {"gatewayRef": {"name": "gw", "namespace": "gateways"}}},
            {"routing": {"gatewayRef": {"name": "other"}}},
            {"routing": {"gatewayRef": {"name": "other", "namespace": "gateways"}}},
        ),
        # other lists are replaced, not concatenated
        (
            {"labelPropagation": {"enabled": True, "match": ["team/*", "app"]}},
            {"labelPropagation": {"match": ["cost-center"]}},
            {"labelPropagation": {"enabled": True, "match": ["cost-center"]}},
        ),
        (
            {"imagePullSecrets": [{"name": "a"}, {"name": "b"}]},
            {"imagePullSecrets": [{"name": "c"}]},
            {"imagePullSecrets": [{"name": "c"}]},
        ),
        ({"imagePullSecrets": [{"name": "a"}]}, {"imagePullSecrets": []}, {"imagePullSecrets": []}),
        # a scalar replaces an object and vice versa
        ({"x": {"y": 1}}, {"x": 3}, {"x": 3}),
        ({"x": 3}, {"x": {"y": 1}}, {"x": {"y": 1}}),
    ],
)
def test_merge(base: Obj, over: Obj, want: Obj) -> None:
    assert merge(base, over) == want


def test_merge_does_not_mutate_inputs_or_share_structure() -> None:
    base = {"routing": {"annotations": {"a": "1"}}, "env": [{"name": "A", "value": "1"}], "list": [1]}
    over = {"routing": {"annotations": {"b": "2"}}, "env": [{"name": "B", "value": "2"}], "other": {"k": [1]}}
    saved = copy.deepcopy((base, over))
    out = merge(base, over)
    assert (base, over) == saved
    out["routing"]["annotations"]["z"] = "z"
    out["env"][0]["value"] = "changed"
    out["list"].append(2)
    out["other"]["k"].append(2)
    assert (base, over) == saved


# -- merge: env ----------------------------------------------------------------------------------


def test_env_merges_by_name_namespace_wins_order_kept() -> None:
    base = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}, {"name": "C", "value": "1"}]}
    over = {"env": [{"name": "D", "value": "2"}, {"name": "B", "value": "2"}]}
    assert merge(base, over)["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "1"},
        {"name": "D", "value": "2"},
    ]


def test_env_entry_is_replaced_whole() -> None:
    base = [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    over = [{"name": "A", "value": "plain"}]
    assert merge_env(base, over) == [{"name": "A", "value": "plain"}]


def test_env_only_on_one_side() -> None:
    env = [{"name": "A", "value": "1"}]
    assert merge({"env": env}, {})["env"] == env
    assert merge({}, {"env": env})["env"] == env


def _args(env: list[Obj]) -> Any:
    return json.loads(next(e["value"] for e in env if e["name"] == "AIM_ENGINE_ARGS"))


def test_engine_args_json_objects_are_deep_merged() -> None:
    base = [
        {"name": "X", "value": "1"},
        {"name": "AIM_ENGINE_ARGS", "value": json.dumps({"a": 1, "nested": {"x": 1, "y": 1}, "keep": True})},
    ]
    over = [{"name": "AIM_ENGINE_ARGS", "value": json.dumps({"b": 2, "nested": {"y": 2}, "keep": False})}]
    out = merge({"env": base}, {"env": over})["env"]
    assert [e["name"] for e in out] == ["X", "AIM_ENGINE_ARGS"]
    assert _args(out) == {"a": 1, "b": 2, "nested": {"x": 1, "y": 2}, "keep": False}


@pytest.mark.parametrize(
    ("base_value", "over_value"),
    [
        ("--max-model-len 4096", json.dumps({"a": 1})),
        (json.dumps({"a": 1}), "--tensor-parallel-size 2"),
        (json.dumps(["a"]), json.dumps({"a": 1})),
        (json.dumps({"a": 1}), json.dumps([1, 2])),
        ("", json.dumps({"a": 1})),
    ],
)
def test_engine_args_not_both_json_objects_are_replaced(base_value: str, over_value: str) -> None:
    out = merge_env(
        [{"name": "AIM_ENGINE_ARGS", "value": base_value}], [{"name": "AIM_ENGINE_ARGS", "value": over_value}]
    )
    assert out == [{"name": "AIM_ENGINE_ARGS", "value": over_value}]


def test_engine_args_only_in_namespace_is_appended_verbatim() -> None:
    value = json.dumps({"a": 1}, indent=2)
    assert merge_env([], [{"name": "AIM_ENGINE_ARGS", "value": value}]) == [
        {"name": "AIM_ENGINE_ARGS", "value": value}
    ]


# -- deprecated storage fields --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"pvcHeadroomPercent": 10}, {"storage": {"pvcHeadroomPercent": 10}}),
        ({"pvcHeadroomPercent": 0}, {"storage": {"pvcHeadroomPercent": 0}}),
        ({"defaultStorageClassName": "fast"}, {"storage": {"defaultStorageClassName": "fast"}}),
        # the new field wins when set
        (
            {"pvcHeadroomPercent": 10, "storage": {"pvcHeadroomPercent": 30}},
            {"storage": {"pvcHeadroomPercent": 30}},
        ),
        (
            {"defaultStorageClassName": "old", "storage": {"defaultStorageClassName": "new", "x": 1}},
            {"storage": {"defaultStorageClassName": "new", "x": 1}},
        ),
        # unset (null) new field is filled from the deprecated one
        (
            {"pvcHeadroomPercent": 5, "storage": {"pvcHeadroomPercent": None}},
            {"storage": {"pvcHeadroomPercent": 5}},
        ),
        # a null deprecated field is dropped
        ({"pvcHeadroomPercent": None, "a": 1}, {"a": 1}),
        ({"a": 1}, {"a": 1}),
        ({}, {}),
    ],
)
def test_migrate_deprecated(spec: Obj, want: Obj) -> None:
    saved = copy.deepcopy(spec)
    assert migrate_deprecated(spec) == want
    assert spec == saved


def test_namespace_deprecated_field_overrides_cluster_new_field() -> None:
    store = Store(
        cluster_config("default", {"storage": {"pvcHeadroomPercent": 20, "defaultStorageClassName": "slow"}}),
        ns_config("default", {"pvcHeadroomPercent": 0, "defaultStorageClassName": "fast"}),
    )
    resolved = resolve(store, AIM, "ns", {})
    assert resolved.get("storage") == {"pvcHeadroomPercent": 0, "defaultStorageClassName": "fast"}
    assert "pvcHeadroomPercent" not in resolved.spec
    assert "defaultStorageClassName" not in resolved.spec


def test_cluster_deprecated_field_is_migrated_under_namespace_new_field() -> None:
    store = Store(
        cluster_config("default", {"pvcHeadroomPercent": 20, "defaultStorageClassName": "slow"}),
        ns_config("default", {"storage": {"pvcHeadroomPercent": 5}}),
    )
    assert resolve(store, AIM, "ns", {}).get("storage") == {
        "pvcHeadroomPercent": 5,
        "defaultStorageClassName": "slow",
    }


def test_single_config_is_migrated_too() -> None:
    store = Store(cluster_config("default", {"pvcHeadroomPercent": 15}))
    assert resolve(store, AIM, None, {}).spec == {"storage": {"pvcHeadroomPercent": 15}}


# -- label propagation ---------------------------------------------------------------------------

PARENT_LABELS = {
    "aim.eai.amd.com/model": "m",
    "aim.eai.amd.com/custom": "x",
    "team/name": "ml",
    "team/cost": "42",
    "app": "chat",
    "app.kubernetes.io/name": "other",
}


@pytest.mark.parametrize(
    ("propagation", "want_extra"),
    [
        (None, {}),
        ({"enabled": False, "match": ["*"]}, {}),
        ({"enabled": True}, {}),
        ({"enabled": True, "match": []}, {}),
        ({"enabled": True, "match": ["team/*"]}, {"team/name": "ml", "team/cost": "42"}),
        ({"enabled": True, "match": ["app"]}, {"app": "chat"}),
        ({"enabled": True, "match": ["ap?"]}, {"app": "chat"}),
        ({"enabled": True, "match": ["team/[n]*", "app"]}, {"team/name": "ml", "app": "chat"}),
        ({"enabled": True, "match": ["TEAM/*"]}, {}),  # case-sensitive
        ({"enabled": True, "match": ["*"]}, {k: v for k, v in PARENT_LABELS.items()}),
    ],
)
def test_propagated_labels(propagation: Obj | None, want_extra: dict[str, str]) -> None:
    spec = {"labelPropagation": propagation} if propagation is not None else {}
    resolved = Resolved("default", spec)
    want = {"aim.eai.amd.com/model": "m", "aim.eai.amd.com/custom": "x", **want_extra}
    assert propagated_labels(PARENT_LABELS, resolved) == want


def test_aim_labels_propagate_without_a_config() -> None:
    assert propagated_labels(PARENT_LABELS, None) == {
        "aim.eai.amd.com/model": "m",
        "aim.eai.amd.com/custom": "x",
    }
    assert propagated_labels(None, None) == {}
    assert propagated_labels({}, Resolved("x", {"labelPropagation": {"enabled": True, "match": ["*"]}})) == {}


def test_propagated_labels_does_not_mutate_parent_labels() -> None:
    labels = dict(PARENT_LABELS)
    out = propagated_labels(labels, Resolved("x", {"labelPropagation": {"enabled": True, "match": ["*"]}}))
    out["new"] = "v"
    assert labels == PARENT_LABELS


# -- checks of a config on its own (the runtime-config status) -------------------------------------


@pytest.mark.parametrize(
    "pattern", ["org.my/my-key-*", "team", "*", "a?c", "[a-z]*", "[^a]b", "[!a]b", "a[b]c", "\\[x", "[\\]]"]
)
def test_well_formed_globs(pattern: str) -> None:
    assert glob_error(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("team-[", "'[' is not closed"),
        ("[a", "'[' is not closed"),
        ("[]", "unexpected ']'"),
        ("[-a]", "unexpected '-'"),
        ("[a-]", "unexpected ']'"),
        ("key\\", "ends with an escape"),
        ("[z-a]", "reversed (matches nothing)"),
    ],
)
def test_malformed_globs(pattern: str, says: str) -> None:
    problem = glob_error(pattern)
    assert problem is not None and says in problem


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (
            {"routing": {"pathTemplate": "/{.metadata.name"}},
            "routing.pathTemplate '/{.metadata.name': unbalanced",
        ),
        ({"routing": {"pathTemplate": "/" + "x" * 10_000}}, "(10001 characters): renders a segment of 10000"),
        ({"routing": {"routeTemplate": "/{.spec[*]}"}}, "routing.routeTemplate '/{.spec[*]}': unsupported"),
        ({"labelPropagation": {"enabled": True, "match": ["ok-*", "team-["]}}, "labelPropagation.match[1]"),
        ({"labelPropagation": {"enabled": False, "match": ["[]"]}}, "labelPropagation.match[0]"),
    ],
)
def test_runtime_config_problems(spec: Obj, says: str) -> None:
    found = problems(spec)
    assert len(found) == 1 and says in found[0], found


def test_runtime_config_without_problems() -> None:
    spec = {
        "routing": {"enabled": True, "gatewayRef": {"name": "gw"}, "pathTemplate": "/{.metadata.name}"},
        "labelPropagation": {"enabled": True, "match": ["org.my/*"]},
    }
    assert problems(spec) == []
