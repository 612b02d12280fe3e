"""docs/deploy.md's permission tables are what deploy/ installs: generated from deploy/base's roles and
deploy/crds/aim-user-roles.yaml, and stale the moment a rule changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aim_dev import images, rbacdoc


def test_the_committed_tables_match_the_manifests() -> None:
    assert not rbacdoc.stale(), "run `aimctl rbac docs`"


def test_a_changed_rule_makes_the_page_stale(tmp_path: Path) -> None:
    root = images.repo_root()
    for source in (s for sources in rbacdoc.SOURCES.values() for s in sources):
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / source, tmp_path / source)
    page = (root / rbacdoc.PAGE).read_text()
    assert rbacdoc.render(page, tmp_path) == page
    rbac = tmp_path / rbacdoc.SOURCES["services"][0]
    rbac.write_text(rbac.read_text().replace('verbs: ["get", "list", "watch"]', 'verbs: ["get", "list"]', 1))
    changed = rbacdoc.render(page, tmp_path)
    assert changed != page
    assert "| `aim-watcher` | ClusterRole, cluster | get, list `*`" in changed


def test_every_role_and_every_rule_is_in_the_page() -> None:
    page = (images.repo_root() / rbacdoc.PAGE).read_text()
    for source in (s for sources in rbacdoc.SOURCES.values() for s in sources):
        for doc in rbacdoc._documents(images.repo_root() / source):
            if doc["kind"] in ("ClusterRole", "Role"):
                assert f"| `{doc['metadata']['name']}` | {doc['kind']}" in page
                for rule in doc["rules"]:
                    assert rbacdoc._rule(rule) in page


def test_missing_markers_are_an_error() -> None:
    with pytest.raises(ValueError, match="markers"):
        rbacdoc.render("# no tables here\n")
