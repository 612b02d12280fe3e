"""A hostPath volume provisioner for the embedded stack on a real node (``aimctl up --node``, the
node tier): what a cluster's storage driver does for claims, so that an operator which creates
claims of its own (every service caches under the released behaviour) finds them bound.

It is a development stand-in, never part of the product (docs/node.md says what it emulates). It
speaks Kubernetes' external-provisioner protocol and nothing more: the claim's binding and its
release are the real PersistentVolume controller's (kube-controller-manager), which marks a claim
of the class for :data:`PROVISIONER` once no existing volume fits it
(``volume.kubernetes.io/storage-provisioner``). For such a claim this creates a directory of the
host, writable by any uid (download Jobs run as an unprivileged user), and a PersistentVolume on it
pre-bound to the claim (``claimRef`` with its uid), named ``pvc-<claim uid>`` as provisioners name
theirs; when a volume it made is ``Released`` (its claim deleted, reclaim policy ``Delete``), it
removes the directory and the volume. Level-triggered: every pass lists claims and volumes and
does what is missing, so a restart or a pass run twice changes nothing more.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aim_dev.local.passes import run_passes
from aimcore.api.kinds import PVC, KindRef
from aimcore.runtime import Kube

log = logging.getLogger("aim_dev.provisioner")

PROVISIONER = "aim.dev/hostpath"
STORAGE_CLASS = "aim-local-hostpath"
FIELD_MANAGER = "aim-hostpath-provisioner"
PERSISTENT_VOLUME = KindRef("", "v1", "PersistentVolume", "persistentvolumes", False)
STORAGE_CLASS_KIND = KindRef("storage.k8s.io", "v1", "StorageClass", "storageclasses", False)
WANTS = ("volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner")
"""The annotations by which the PersistentVolume controller hands a claim to a provisioner."""
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


def storage_class(*, default: bool) -> dict[str, Any]:
    """The class whose claims this provisions (``default``: claims that name no class get it)."""
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS, "annotations": annotations},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }


def volume_name(claim: Mapping[str, Any]) -> str:
    return f"pvc-{claim['metadata']['uid']}"


def wants_volume(claim: Mapping[str, Any]) -> bool:
    """Whether the PersistentVolume controller handed ``claim`` to this provisioner and it is
    still unbound."""
    meta = claim.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if meta.get("deletionTimestamp") or (claim.get("spec") or {}).get("volumeName"):
        return False
    if (claim.get("status") or {}).get("phase", "Pending") != "Pending":
        return False
    return any(annotations.get(key) == PROVISIONER for key in WANTS)


def volume_for(claim: Mapping[str, Any], root: Path, reclaim: str = "Delete") -> dict[str, Any]:
    """The PersistentVolume that satisfies ``claim``: its size, access modes, volume mode and
    class, on ``root/<volume name>``, pre-bound to exactly this claim (its uid)."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    name = volume_name(claim)
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {PROVISIONED_BY: PROVISIONER},
            "labels": {"app.kubernetes.io/part-of": "aim-local"},
        },
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "persistentVolumeReclaimPolicy": reclaim,
            "storageClassName": spec.get("storageClassName") or "",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "hostPath": {"path": str(root / name), "type": "Directory"},
        },
    }


def to_remove(volume: Mapping[str, Any], root: Path) -> Path | None:
    """The directory of a volume this provisioner made whose claim is gone (``Released`` under
    ``Delete``), or None. A path outside ``root`` is never one."""
    meta, spec = volume.get("metadata") or {}, volume.get("spec") or {}
    if (meta.get("annotations") or {}).get(PROVISIONED_BY) != PROVISIONER:
        return None
    if spec.get("persistentVolumeReclaimPolicy") != "Delete":
        return None
    if (volume.get("status") or {}).get("phase") not in ("Released", "Failed"):
        return None
    path = Path((spec.get("hostPath") or {}).get("path") or "/")
    return path if path.parent == root and path.name == meta.get("name") else None


def _make_directory(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)  # the download Job's user writes here, the predictor's reads


class Provisioner:
    """One pass at a time (:meth:`tick`) over claims and the volumes it made, under ``root``."""

    def __init__(self, kube: Kube, root: Path) -> None:
        self.kube = kube
        self.root = root

    async def tick(self) -> None:
        claims, _ = await self.kube.list(PVC)
        for claim in claims:
            if wants_volume(claim):
                await self._provision(claim)
        volumes, _ = await self.kube.list(PERSISTENT_VOLUME)
        for volume in volumes:
            path = to_remove(volume, self.root)
            if path is not None:
                await asyncio.to_thread(shutil.rmtree, path, ignore_errors=True)
                await self.kube.delete(PERSISTENT_VOLUME, None, volume["metadata"]["name"])
                log.info("deleted volume %s (its claim is gone)", volume["metadata"]["name"])

    async def _provision(self, claim: Mapping[str, Any]) -> None:
        class_name = (claim.get("spec") or {}).get("storageClassName") or ""
        klass = await self.kube.get(STORAGE_CLASS_KIND, None, class_name) if class_name else None
        reclaim = str((klass or {}).get("reclaimPolicy") or "Delete")
        volume = volume_for(claim, self.root, reclaim)
        await asyncio.to_thread(_make_directory, Path(volume["spec"]["hostPath"]["path"]))
        if await self.kube.create_if_absent(PERSISTENT_VOLUME, volume) is not None:
            meta = claim["metadata"]
            where = volume["spec"]["hostPath"]["path"]
            log.info(
                "provisioned %s at %s for %s/%s",
                volume["metadata"]["name"],
                where,
                meta["namespace"],
                meta["name"],
            )


async def run(kubeconfig: str, root: Path, interval: float = 1.0) -> None:
    await run_passes(
        kubeconfig, FIELD_MANAGER, lambda kube: Provisioner(kube, root), interval=interval, log=log
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aim_dev.local.provisioner", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--root", required=True, type=Path, help="the directory volumes are made under")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between passes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args.root.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args.kubeconfig, args.root.resolve(), args.interval))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
