"""Installing CustomResourceDefinitions and waiting until the API server serves them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from aimcore.api.kinds import KindRef
from aimcore.runtime import Kube

CRD = KindRef("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)


def strip_cel(node: Any) -> Any:
    """Drop ``x-kubernetes-validations``: a server that does not know the field (before 1.23) refuses
    a server-side apply carrying it, and none before 1.25 runs the rules (docs/deploy.md)."""
    if isinstance(node, dict):
        return {k: strip_cel(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [strip_cel(v) for v in node]
    return node


async def server_minor(kube: Kube) -> int:
    info = await kube._call("GET", "/version")
    return int(str(info.get("minor", "0")).rstrip("+"))


def established(crd: Mapping[str, Any] | None) -> bool:
    """Whether the API server says it serves ``crd`` (``Established=True``). A CRD just created
    may have no status yet, or ``status.conditions: null`` (not ``[]``): both are "not yet", not an
    error (reading them with ``.get("conditions", [])`` iterated ``None`` and crashed
    ``aimctl up``)."""
    status = (crd or {}).get("status") or {}
    conditions = status.get("conditions") or []
    return any(
        isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
        for c in conditions
    )


async def install(kube: Kube, crds: Iterable[dict[str, Any]], timeout: float = 60.0) -> None:
    """Apply every CRD (server-side) and wait until each is Established."""
    keep_cel = await server_minor(kube) >= 25
    names = []
    for crd in crds:
        body = crd if keep_cel else strip_cel(crd)
        await kube.apply(CRD, body)
        names.append(crd["metadata"]["name"])
    async with asyncio.timeout(timeout):
        for name in names:
            while True:
                if established(await kube.get(CRD, None, name)):
                    break
                await asyncio.sleep(0.05)
