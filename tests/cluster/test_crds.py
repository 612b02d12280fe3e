"""The CRDs against a real kube-apiserver: all 22 kinds are served with their short names,
categories and printer columns, and every seed example is accepted without the server pruning any
of its fields. The committed YAML is what the models generate: ``tests/unit/crds/test_crd_files.py``."""

from __future__ import annotations

import re
from typing import Any

import pytest

from aim_dev.crdinstall import CRD
from aim_dev.local.cluster import ControlPlane
from aimcore.api.crds.registry import ALL_KINDS
from aimcore.api.kinds import by_kind
from aimcore.runtime import Kube
from tests import helpers
from tests.unit.crds.test_crd_files import EXAMPLES


def kubectl(cp: ControlPlane, *args: str) -> str:
    return helpers.kubectl(*args, kubeconfig=cp.kubeconfig_path)


async def test_every_kind_is_established(aim_cluster: ControlPlane, kube: Kube) -> None:
    for k in ALL_KINDS:
        crd = await kube.get(CRD, None, k.crd.crd_name)
        assert crd is not None, k.crd.crd_name
        conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conds["Established"] == "True"
        assert conds.get("NonStructuralSchema") is None, k.crd.crd_name
    names = kubectl(aim_cluster, "get", "crd", "-o", "name")
    assert all(f"customresourcedefinition.apiextensions.k8s.io/{k.crd.crd_name}" in names for k in ALL_KINDS)


def test_short_names_and_category_work_with_kubectl(aim_cluster: ControlPlane) -> None:
    resources = kubectl(aim_cluster, "api-resources", "--api-group=aim.eai.amd.com", "-o", "wide")
    for short in ("aimsvc", "aimmdl", "aimclmdl", "aimtpl", "aimcltpl", "aimtc", "aimmc", "aimrc", "aimclrc"):
        assert f" {short} " in resources or f" {short}\n" in resources, short
    kubectl(aim_cluster, "get", "aimservices.aim.silogen.ai", "-A")


async def test_categories(kube: Kube) -> None:
    for k in ALL_KINDS:
        crd = await kube.get(CRD, None, k.crd.crd_name)
        assert crd is not None
        categories = crd["spec"]["names"].get("categories", [])
        if k.crd.group in ("aim.eai.amd.com", "aim.silogen.ai"):
            # the original's legacy CRDs were in `aim` and `all` too (issue 18)
            assert categories == ["aim", "all"], k.crd.kind


async def test_printer_columns(aim_cluster: ControlPlane, kube: Kube, namespace: str) -> None:
    ref = by_kind("aim.eai.amd.com", "AIMService")
    await kube.create(
        ref,
        {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "metadata": {"name": "cols", "namespace": namespace},
            "spec": {"model": {"name": "llama"}},
        },
    )
    header = kubectl(aim_cluster, "get", "aimsvc", "-n", namespace).splitlines()[0].split()
    assert header[:2] == ["NAME", "STATUS"]
    assert "MODEL" in header and "TEMPLATE" in header and header[-1] == "AGE"
    # The `aim` category lists it too, and a legacy user's objects with it.
    legacy = by_kind("aim.silogen.ai", "AIMService")
    await kube.create(
        legacy,
        {
            "apiVersion": legacy.api_version,
            "kind": legacy.kind,
            "metadata": {"name": "old-cols", "namespace": namespace},
            "spec": {"aimImageName": "llama"},
        },
    )
    listed = kubectl(aim_cluster, "get", "aim", "-n", namespace, "-o", "name")
    assert "aimservice.aim.eai.amd.com/cols" in listed
    assert "aimservice.aim.silogen.ai/old-cols" in listed


def applicable_name(name: str) -> str:
    """One example names its object ``auto-<hash-of-image>`` as a placeholder; make it a name."""
    return re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-")


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{d['kind']}-{d['metadata']['name']}" for d in EXAMPLES])
async def test_seed_example_is_accepted_unpruned(kube: Kube, namespace: str, example: dict[str, Any]) -> None:
    group = example["apiVersion"].split("/")[0]
    ref = by_kind(group, example["kind"])
    body = {
        **example,
        "metadata": {**example["metadata"], "name": applicable_name(example["metadata"]["name"])},
    }
    if ref.namespaced:
        body["metadata"]["namespace"] = namespace
    else:
        body["metadata"]["name"] = f"{namespace}-{body['metadata']['name']}"
    created = await kube.create(ref, body)
    try:
        assert helpers.missing_or_changed(body.get("spec") or {}, created.get("spec") or {}) == []
    finally:
        if not ref.namespaced:
            await kube.delete(ref, None, body["metadata"]["name"])
