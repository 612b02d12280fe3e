"""The user-facing ClusterRoles for the AIM kinds (aim-admin, aim-editor, aim-viewer), generated from
the CRD models so every kind of the three API groups is in them and none is forgotten when a kind is
added. They carry the ``rbac.authorization.k8s.io/aggregate-to-*`` labels, so Kubernetes' built-in
``admin``, ``edit`` and ``view`` roles include them: a user bound to ``view`` in a namespace reads the
AIM objects there, as they do Deployments. They are written next to the CRDs (``deploy/crds``) and
installed with them, so uninstalling the operator leaves users able to reach their objects."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aimcore.api.crds.base import Resource

READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete", "deletecollection"]

ROLES: tuple[tuple[str, str, list[str], str], ...] = (
    # (name, aggregated into, verbs on the kinds, what it is for)
    ("aim-viewer", "view", READ, "read every AIM object"),
    ("aim-editor", "edit", READ + WRITE, "create, change and delete AIM objects"),
    ("aim-admin", "admin", READ + WRITE, "everything an editor may, for namespace admins"),
)


def _resources_by_group(kinds: Iterable[type[Resource]]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for k in kinds:
        groups.setdefault(k.crd.group, []).append(k.crd.plural)
    return {g: sorted(p) for g, p in sorted(groups.items())}


def cluster_roles(kinds: Iterable[type[Resource]]) -> list[dict[str, Any]]:
    """The three aggregated ClusterRoles over ``kinds``: each kind's objects with the role's verbs,
    and their status read-only (the operator alone writes status)."""
    groups = _resources_by_group(kinds)
    roles = []
    for name, aggregate, verbs, purpose in ROLES:
        rules: list[dict[str, Any]] = []
        for group, plurals in groups.items():
            rules.append({"apiGroups": [group], "resources": plurals, "verbs": list(verbs)})
            rules.append(
                {"apiGroups": [group], "resources": [f"{p}/status" for p in plurals], "verbs": list(READ)}
            )
        roles.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {
                    "name": name,
                    "labels": {
                        "app.kubernetes.io/part-of": "aim-engine",
                        f"rbac.authorization.k8s.io/aggregate-to-{aggregate}": "true",
                    },
                    "annotations": {"aim.eai.amd.com/purpose": purpose},
                },
                "rules": rules,
            }
        )
    return roles
