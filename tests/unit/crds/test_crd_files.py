"""The CRD files: the committed YAML in ``deploy/crds`` is what the models generate (and a drift is
detected), 22 kinds in three groups, and the seed examples the cluster tier applies
(``tests/cluster/test_crds.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aim_dev import crdgen as generate
from aimcore.api.crds.registry import ALL_KINDS
from tests import seeds

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.timeout(90)  # generates every CRD: 10 s on a loaded two-core machine
def test_committed_crds_match_the_models() -> None:
    assert generate.diff(REPO / "deploy" / "crds") == []


@pytest.mark.timeout(90)  # generates and writes every CRD, twice: 21 s on a loaded two-core machine
def test_drift_is_detected(tmp_path: Path) -> None:
    generate.write(tmp_path)
    assert generate.diff(tmp_path) == []
    victim = tmp_path / "aim.eai.amd.com_aimservices.yaml"
    victim.write_text(victim.read_text().replace("aimsvc", "aimsvx"))
    (tmp_path / "stale.yaml").write_text("kind: Nothing\n")
    assert generate.diff(tmp_path) == ["aim.eai.amd.com_aimservices.yaml", "stale.yaml"]


def test_twenty_three_kinds_in_three_groups() -> None:
    groups = {}
    for k in ALL_KINDS:
        groups.setdefault(k.crd.group, []).append(k.crd.kind)
    assert {g: len(v) for g, v in groups.items()} == {
        "aim.eai.amd.com": 11,  # the seed's ten and AIMArtifact (the released name of the model cache)
        "aim.silogen.ai": 11,
        "inference.llmkube.dev": 1,
    }


OUR_GROUPS = {k.crd.group for k in ALL_KINDS}
EXAMPLES = [d for d in seeds.whole_objects() if d["apiVersion"].split("/")[0] in OUR_GROUPS]


def test_there_are_seed_examples() -> None:
    assert len(EXAMPLES) >= 14
