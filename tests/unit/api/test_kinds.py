"""The kinds table (the ground floor, which loads no CRD model) says what the CRD models say."""

from __future__ import annotations

import subprocess
import sys

from aimcore.api.crds.registry import ALL_KINDS
from aimcore.api.kinds import (
    AIM_GROUPS,
    CRD_KINDS,
    GROUP_AIM,
    GROUP_LEGACY,
    MODEL_CACHE_KINDS,
    MODEL_KINDS,
    MODEL_SOURCE_KINDS,
    RUNTIME_CONFIG_KINDS,
    SERVICE_KINDS,
    TEMPLATE_CACHE_KINDS,
    TEMPLATE_KINDS,
    KindRef,
    by_kind,
    twins,
)


def test_the_table_matches_the_models() -> None:
    from_models = tuple(
        KindRef(k.crd.group, k.crd.version, k.crd.kind, k.crd.plural, k.crd.namespaced) for k in ALL_KINDS
    )
    assert from_models == CRD_KINDS
    assert {k.group for k in CRD_KINDS} == set(AIM_GROUPS)
    assert by_kind("inference.llmkube.dev", "Model").plural == "models"


def test_the_ground_floor_loads_no_crd_model() -> None:
    probe = (
        "import sys, aimcore.api.kinds, aimcore.api.bus.subjects, aimcore.api.bus.messages;"
        "print(sorted(m for m in sys.modules if m.startswith('aimcore.api.crds') or m == 'pydantic'))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "aimcore.api.crds" not in loaded


def test_each_kind_family_lists_the_current_kinds_then_their_legacy_twins() -> None:
    families = (
        MODEL_KINDS,
        TEMPLATE_KINDS,
        RUNTIME_CONFIG_KINDS,
        SERVICE_KINDS,
        TEMPLATE_CACHE_KINDS,
        MODEL_CACHE_KINDS,
    )
    for family in families:
        current = [k.kind for k in family if k.group == GROUP_AIM]
        legacy = [k.kind for k in family if k.group == GROUP_LEGACY]
        assert [k.group for k in family] == [GROUP_AIM] * len(current) + [GROUP_LEGACY] * len(legacy)
        # AIMArtifact, the released name of the model cache, is the current group's only
        assert set(current) - {"AIMArtifact"} <= set(legacy), "every current kind has its legacy twin"
        assert all(k in CRD_KINDS for k in family)
    # generation-1 images are legacy models without a current twin; sources exist only in the current group
    assert {k.kind for k in MODEL_KINDS if k.group == GROUP_LEGACY} == {
        "AIMModel",
        "AIMClusterModel",
        "AIMImage",
        "AIMClusterImage",
    }
    assert (by_kind(GROUP_AIM, "AIMClusterModelSource"),) == MODEL_SOURCE_KINDS
    assert twins("AIMService") == SERVICE_KINDS
    # no kind is in two families
    members = [k for family in families for k in family]
    assert len(members) == len(set(members))
