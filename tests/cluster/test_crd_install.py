"""The real install path (``aim_dev.crdinstall.install``, what ``aimctl up`` and the test plugin
run) against a real API server, with CRDs it has never seen: each is applied and waited for while
the server is still establishing it (no status yet, or ``status.conditions: null`` on a fresh
machine: issue 24), and is served when ``install`` returns."""

from __future__ import annotations

import secrets
from typing import Any

from aim_dev import crdinstall
from aimcore.api.kinds import KindRef
from aimcore.runtime import Kube


def _crd(group: str, kind: str) -> dict[str, Any]:
    plural = kind.lower() + "s"
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


async def test_fresh_crds_are_served_when_install_returns(kube: Kube, namespace: str) -> None:
    group = f"install-{secrets.token_hex(4)}.example.com"
    crds = [_crd(group, f"Thing{i}") for i in range(6)]
    try:
        await crdinstall.install(kube, crds, timeout=60)
        for crd in crds:
            assert crdinstall.established(await kube.get(crdinstall.CRD, None, crd["metadata"]["name"]))
            names = crd["spec"]["names"]
            ref = KindRef(group, "v1", names["kind"], names["plural"], True)
            body = {"apiVersion": f"{group}/v1", "kind": names["kind"], "metadata": {"name": "one"}}
            await kube.create(ref, body, namespace)  # served: no 404 right after install
            assert (await kube.get(ref, namespace, "one")) is not None
    finally:
        for crd in crds:
            await kube.delete(crdinstall.CRD, None, crd["metadata"]["name"])
