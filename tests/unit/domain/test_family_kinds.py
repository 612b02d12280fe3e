"""Each kind family answers its kinds by API group and scope (``ModelCache.kind(group)``,
``Model.kind(group, cluster=True)``...), from the kinds table: services name no kind by a string."""

from __future__ import annotations

import pytest

from aimcore.api.behaviour import Behaviour
from aimcore.api.kinds import (
    GROUP_AIM,
    GROUP_LEGACY,
    GROUP_LLMKUBE,
    MODEL_CACHE_KINDS,
    MODEL_KINDS,
    TEMPLATE_PAIRS,
    KindPair,
    by_kind,
    in_group,
)
from aimcore.domain.families.caches import ModelCache, TemplateCache
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.domain.families.models import Model
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.families.templates import Template, template_kinds
from aimcore.domain.runtimeconfig import config_kinds

AIM_GROUPS = (GROUP_AIM, GROUP_LEGACY)


@pytest.mark.parametrize("group", AIM_GROUPS)
def test_scoped_families_answer_their_namespaced_and_cluster_kinds(group: str) -> None:
    for family, namespaced, cluster in (
        (Model, "AIMModel", "AIMClusterModel"),
        (Template, "AIMServiceTemplate", "AIMClusterServiceTemplate"),
        (RuntimeConfig, "AIMRuntimeConfig", "AIMClusterRuntimeConfig"),
    ):
        assert family.kind(group) == by_kind(group, namespaced)
        assert family.kind(group, cluster=False) == by_kind(group, namespaced)
        assert family.kind(group, cluster=True) == by_kind(group, cluster)
        assert family.kind(group).namespaced
        assert not family.kind(group, cluster=True).namespaced


@pytest.mark.parametrize("group", AIM_GROUPS)
def test_cache_families_answer_their_kind(group: str) -> None:
    assert TemplateCache.kind(group) == by_kind(group, "AIMTemplateCache")
    assert ModelCache.kind(group) == by_kind(group, "AIMModelCache")


def test_the_model_cache_kind_created_follows_the_behaviour_and_both_are_read() -> None:
    assert ModelCache.kind(GROUP_AIM, Behaviour.RELEASED) == by_kind(GROUP_AIM, "AIMArtifact")
    assert ModelCache.kind(GROUP_AIM, Behaviour.SEEDS) == by_kind(GROUP_AIM, "AIMModelCache")
    # the legacy group has no AIMArtifact: its model cache is the one kind either way
    assert ModelCache.kind(GROUP_LEGACY, Behaviour.RELEASED) == by_kind(GROUP_LEGACY, "AIMModelCache")
    assert ModelCache.kinds_in(GROUP_AIM) == (
        by_kind(GROUP_AIM, "AIMModelCache"),
        by_kind(GROUP_AIM, "AIMArtifact"),
    )
    assert ModelCache.kinds_in(GROUP_LEGACY) == (by_kind(GROUP_LEGACY, "AIMModelCache"),)
    assert TemplateCache.kinds_in(GROUP_AIM) == (by_kind(GROUP_AIM, "AIMTemplateCache"),)


def test_llmkube_model_answers_its_kind() -> None:
    assert LLMKubeModel.kind(GROUP_LLMKUBE) == by_kind(GROUP_LLMKUBE, "Model")


def test_a_kind_is_one_of_its_familys() -> None:
    for group in AIM_GROUPS:
        for cluster in (False, True):
            assert Model.kind(group, cluster=cluster) in Model.kinds
            assert Template.kind(group, cluster=cluster) in Template.kinds
        assert TemplateCache.kind(group) in TemplateCache.kinds
        assert ModelCache.kind(group) in ModelCache.kinds


def test_a_group_without_the_family_has_no_kind_of_it() -> None:
    with pytest.raises(KeyError):
        Model.kind(GROUP_LLMKUBE)
    with pytest.raises(KeyError):
        Template.kind(GROUP_LLMKUBE, cluster=True)
    with pytest.raises(KeyError):
        ModelCache.kind(GROUP_LLMKUBE)
    with pytest.raises(KeyError, match="serves 0"):
        LLMKubeModel.kind(GROUP_AIM)


def test_in_group_wants_exactly_one_kind() -> None:
    assert in_group(MODEL_CACHE_KINDS, GROUP_LEGACY) == by_kind(GROUP_LEGACY, "AIMModelCache")
    with pytest.raises(KeyError, match="serves 2"):
        in_group(MODEL_KINDS, GROUP_AIM)
    with pytest.raises(KeyError, match="serves 4"):
        in_group(MODEL_KINDS, GROUP_LEGACY)


@pytest.mark.parametrize("group", AIM_GROUPS)
def test_a_pair_is_the_namespaced_kind_then_the_clusters(group: str) -> None:
    pair = TEMPLATE_PAIRS[group]
    assert isinstance(pair, KindPair)
    assert list(pair) == [by_kind(group, "AIMServiceTemplate"), by_kind(group, "AIMClusterServiceTemplate")]
    assert pair.scoped(cluster=False) == pair.namespaced
    assert pair.scoped(cluster=True) == pair.cluster
    assert template_kinds(group) == pair
    namespaced, cluster = config_kinds(group)
    assert (namespaced, cluster) == (RuntimeConfig.kind(group), RuntimeConfig.kind(group, cluster=True))


@pytest.mark.parametrize(
    ("group", "template", "want"),
    [
        (GROUP_AIM, "AIMServiceTemplate", ["AIMModel", "AIMClusterModel"]),
        (GROUP_AIM, "AIMClusterServiceTemplate", ["AIMClusterModel"]),
        (GROUP_LEGACY, "AIMServiceTemplate", ["AIMModel", "AIMImage", "AIMClusterModel", "AIMClusterImage"]),
        (GROUP_LEGACY, "AIMClusterServiceTemplate", ["AIMClusterModel", "AIMClusterImage"]),
    ],
)
def test_where_a_template_looks_its_model_up(group: str, template: str, want: list[str]) -> None:
    kinds = Model.kinds_for(by_kind(group, template))
    assert [k.kind for k in kinds] == want
    assert all(k.group == group for k in kinds)
    assert all(k in Model.kinds for k in kinds)
