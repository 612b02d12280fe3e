"""The permissions tables of docs/deploy.md, generated from the manifests (deploy/base/rbac.yaml and
deploy/base/bus-credentials.yaml for the operator's own roles, deploy/crds/aim-user-roles.yaml for
the user roles), so the page cannot drift from what is installed: ``aimctl rbac docs`` rewrites the
tables between their markers and ``--check`` (and tests/unit/cli/test_rbac_docs.py) fails when they
are stale."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from aim_dev import images

PAGE = Path("docs") / "deploy.md"
SOURCES = {
    "services": (Path("deploy") / "base" / "rbac.yaml", Path("deploy") / "base" / "bus-credentials.yaml"),
    "users": (Path("deploy") / "crds" / "aim-user-roles.yaml",),
}
"""Each table's manifests, in the order its rows are listed."""
CORE = "core"


def _markers(table: str) -> tuple[str, str]:
    return (
        f"<!-- rbac:{table} begin: generated from {' and '.join(p.as_posix() for p in SOURCES[table])} by "
        "`aimctl rbac docs`; "
        "do not edit by hand -->",
        f"<!-- rbac:{table} end -->",
    )


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _rule(rule: dict[str, Any]) -> str:
    groups = ", ".join(g or CORE for g in (rule.get("apiGroups") or []))
    names = (
        f" named {', '.join(f'`{n}`' for n in rule['resourceNames'])}" if rule.get("resourceNames") else ""
    )
    resources = ", ".join(f"`{r}`" for r in (rule.get("resources") or []))
    return f"{', '.join(rule['verbs'])} {resources}{names} ({groups})"


def _where(role: dict[str, Any]) -> str:
    if role["kind"] == "Role":
        return f"namespace `{role['metadata']['namespace']}`"
    aggregate = [
        k.rsplit("-", 1)[-1]
        for k, v in (role["metadata"].get("labels") or {}).items()
        if k.startswith("rbac.authorization.k8s.io/aggregate-to-") and v == "true"
    ]
    return f"cluster; in `{'`, `'.join(aggregate)}`" if aggregate else "cluster"


def table(documents: Iterable[dict[str, Any]]) -> str:
    rows = ["| role | kind, where | may |", "| --- | --- | --- |"]
    for role in documents:
        if role["kind"] not in ("ClusterRole", "Role"):
            continue
        rules = "<br>".join(_rule(r) for r in role["rules"])
        rows.append(f"| `{role['metadata']['name']}` | {role['kind']}, {_where(role)} | {rules} |")
    return "\n".join(rows)


def render(page: str, root: Path | None = None) -> str:
    """``page`` with every table replaced by what the manifests under ``root`` say (between the
    markers ``<!-- rbac:NAME begin ... -->`` and ``<!-- rbac:NAME end -->``)."""
    root = root or images.repo_root()
    for name, sources in SOURCES.items():
        begin, end = _markers(name)
        opening = f"<!-- rbac:{name} begin"
        if opening not in page or end not in page:
            raise ValueError(f"{PAGE} lacks the markers of the {name} table: {opening} ... {end}")
        head, rest = page.split(opening, 1)
        _, tail = rest.split(end, 1)
        page = (
            f"{head}{begin}\n{table(d for source in sources for d in _documents(root / source))}\n{end}{tail}"
        )
    return page


def write(path: Path | None = None) -> None:
    path = path or images.repo_root() / PAGE
    path.write_text(render(path.read_text()))


def stale(path: Path | None = None) -> bool:
    path = path or images.repo_root() / PAGE
    text = path.read_text()
    return render(text) != text
