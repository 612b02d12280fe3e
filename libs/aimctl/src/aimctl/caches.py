"""``aimctl caches``: model caches as an operator wants to see them during a download — status,
size, progress, rate, ETA and where the data lives — for both AIM API groups, read through kubectl
so it works against any cluster the user's kubeconfig reaches (or the embedded stack's)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aim_dev.local import binaries
from aimcore.api.kinds import MODEL_CACHE_KINDS
from aimcore.domain.units import format_bytes
from aimctl.events import kubeconfig_path

KINDS = tuple(f"{ref.plural}.{ref.group}" for ref in MODEL_CACHE_KINDS)  # AIMArtifact included
HEADER = ("NAMESPACE", "NAME", "STATUS", "SIZE", "PROGRESS", "RATE", "ETA", "STORAGE", "SOURCE", "REASON")


def _ready_reason(status: Mapping[str, Any]) -> str:
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            return "" if cond.get("status") == "True" else str(cond.get("reason") or "")
    return ""


def cache_row(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """One line of the table for one model cache (AIMModelCache of either group, AIMArtifact)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    progress = status.get("progress") or {}
    state = str(status.get("status") or "Pending")
    total = progress.get("totalBytes")
    size = format_bytes(int(total)) if isinstance(total, int) and total > 0 else str(spec.get("size") or "-")
    running = state not in ("Ready", "Available", "Failed")
    pct = progress.get("displayPercentage") or ("-" if not progress else f"{progress.get('percentage', 0)} %")
    rate = progress.get("displayRate") if running else None
    eta = progress.get("displayEta") if running else None
    storage = status.get("persistentVolumeClaim") or "-"
    return (
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        state,
        size,
        str(pct),
        str(rate or "-"),
        str(eta or "-"),
        str(storage),
        str(spec.get("sourceUri") or ""),
        _ready_reason(status),
    )


def render(rows: Iterable[Sequence[str]]) -> str:
    table = [HEADER, *(tuple(r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table)


def list_caches(kubeconfig: Path | None, namespace: str | None) -> list[dict[str, Any]]:
    where = ["-n", namespace] if namespace else ["-A"]
    items: list[dict[str, Any]] = []
    for kind in KINDS:
        done = binaries.run_kubectl("get", kind, *where, "-o", "json", kubeconfig=kubeconfig)
        if done.returncode != 0:
            raise SystemExit(f"kubectl get {kind}: {done.stderr.strip()}")
        items.extend(json.loads(done.stdout).get("items") or [])
    return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))


def cmd_caches(args: argparse.Namespace) -> int:
    kubeconfig = Path(kubeconfig_path(args.kubeconfig))
    items = list_caches(kubeconfig, None if args.all_namespaces else args.namespace)
    if args.output == "json":
        print(json.dumps([dict(zip(HEADER, cache_row(o), strict=True)) for o in items], indent=2))
    else:
        print(render(cache_row(o) for o in items) if items else "No model caches found.")
    return 0


def register(sub: Any) -> None:
    caches = sub.add_parser("caches", help="model caches with size, progress, rate and ETA")
    caches.add_argument("-n", "--namespace", default="default")
    caches.add_argument("-A", "--all-namespaces", action="store_true")
    caches.add_argument("-o", "--output", choices=["table", "json"], default="table")
    caches.add_argument("--kubeconfig", help="default: $AIM_KUBECONFIG, $KUBECONFIG, else aimctl up's")
    caches.set_defaults(func=cmd_caches)
