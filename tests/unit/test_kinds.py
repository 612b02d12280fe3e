"""The kinds table (the ground floor, which loads no CRD model) says what the CRD models say."""

from __future__ import annotations

import subprocess
import sys

from aimcore.api.crds.registry import ALL_KINDS
from aimcore.api.kinds import AIM_GROUPS, CRD_KINDS, KindRef, by_kind


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
