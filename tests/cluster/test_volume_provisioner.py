"""The node stack's volume provisioner (:mod:`aim_dev.local.provisioner`) against the real
kube-apiserver and kube-controller-manager: the real PersistentVolume controller hands it a claim of
its class only when no existing volume fits, binds the volume it makes, and releases it when the
claim goes, and the provisioner then removes the volume and its directory. Passes are run by the
test (:meth:`Provisioner.tick`), one at a time; a second pass changes nothing."""

from __future__ import annotations

import asyncio
import secrets
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from aim_dev.local import provisioner
from aim_dev.local.deployed import PERSISTENT_VOLUME, host_path_volume
from aim_dev.local.provisioner import STORAGE_CLASS_KIND, Provisioner
from aimcore.api.kinds import PVC
from aimcore.runtime import Kube
from tests.helpers import eventually


def claim(name: str, klass: str, size: str = "1Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": klass,
            "resources": {"requests": {"storage": size}},
        },
    }


@pytest.fixture
async def klass(kube: Kube) -> AsyncIterator[str]:
    """A class of this provisioner's own for the test (not the default: the cluster is shared)."""
    body = provisioner.storage_class(default=False)
    name = body["metadata"]["name"] = f"hostpath-{secrets.token_hex(4)}"
    await kube.create(STORAGE_CLASS_KIND, body)
    yield name
    await kube.delete(STORAGE_CLASS_KIND, None, name)


async def test_a_claim_of_its_class_gets_a_bound_volume_that_goes_with_the_claim(
    kube: Kube, namespace: str, klass: str, tmp_path: Path
) -> None:
    passes = Provisioner(kube, tmp_path)
    made = await kube.create(PVC, claim("data", klass, "3Gi"), namespace)
    uid = made["metadata"]["uid"]

    async def bound() -> dict[str, Any] | None:
        await passes.tick()
        pvc = await kube.get(PVC, namespace, "data")
        return pvc if pvc and (pvc.get("status") or {}).get("phase") == "Bound" else None

    pvc = await eventually(bound, timeout=60, interval=0.5, what="the claim Bound")
    assert pvc["spec"]["volumeName"] == f"pvc-{uid}"
    volume = await kube.get(PERSISTENT_VOLUME, None, f"pvc-{uid}")
    assert volume is not None
    assert volume["spec"]["claimRef"]["uid"] == uid
    assert volume["spec"]["capacity"]["storage"] == "3Gi"
    assert volume["spec"]["accessModes"] == ["ReadWriteMany"]
    assert volume["spec"]["storageClassName"] == klass
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    directory = tmp_path / f"pvc-{uid}"
    assert volume["spec"]["hostPath"]["path"] == str(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o777  # a download Job's uid writes here

    # a second pass changes nothing
    await passes.tick()
    again = await kube.get(PERSISTENT_VOLUME, None, f"pvc-{uid}")
    assert again is not None and again["metadata"]["resourceVersion"] == volume["metadata"]["resourceVersion"]

    # the claim deleted: the controller releases the volume, the provisioner removes it and its directory
    await kube.delete(PVC, namespace, "data")

    async def gone() -> bool:
        await passes.tick()
        return await kube.get(PERSISTENT_VOLUME, None, f"pvc-{uid}") is None and not directory.exists()

    await eventually(gone, timeout=60, interval=0.5, what="the released volume and its directory gone")


async def test_a_volume_that_already_fits_is_bound_and_nothing_is_provisioned(
    kube: Kube, namespace: str, klass: str, tmp_path: Path
) -> None:
    passes = Provisioner(kube, tmp_path / "provisioned")
    static = f"static-{secrets.token_hex(4)}"
    (tmp_path / static).mkdir()
    await kube.create(
        PERSISTENT_VOLUME, host_path_volume(static, tmp_path / static, "2Gi", storage_class=klass)
    )

    async def available() -> bool:
        volume = await kube.get(PERSISTENT_VOLUME, None, static)
        return (volume or {}).get("status", {}).get("phase") == "Available"

    # "already" as the controller sees it: a claim that arrives before the controller has seen the
    # volume is provisioned for, as with any provisioner
    await eventually(available, timeout=30, interval=0.2, what="the static volume Available")
    try:
        await kube.create(PVC, claim("data", klass), namespace)

        async def bound() -> dict[str, Any] | None:
            await passes.tick()
            pvc = await kube.get(PVC, namespace, "data")
            return pvc if pvc and (pvc.get("status") or {}).get("phase") == "Bound" else None

        pvc = await eventually(bound, timeout=60, interval=0.5, what="the claim Bound")
        assert pvc["spec"]["volumeName"] == static
        annotations = pvc["metadata"].get("annotations") or {}
        assert not any(annotations.get(key) == provisioner.PROVISIONER for key in provisioner.WANTS)
        assert not (tmp_path / "provisioned").exists()
        await passes.tick()
        assert await kube.get(PERSISTENT_VOLUME, None, f"pvc-{pvc['metadata']['uid']}") is None
    finally:
        await kube.delete(PVC, namespace, "data")
        await kube.delete(PERSISTENT_VOLUME, None, static)


async def test_a_claim_of_another_class_is_left_alone(kube: Kube, namespace: str, tmp_path: Path) -> None:
    passes = Provisioner(kube, tmp_path)
    made = await kube.create(PVC, claim("other", f"elsewhere-{secrets.token_hex(4)}"), namespace)
    await passes.tick()
    pvc = await kube.get(PVC, namespace, "other")
    assert pvc is not None and (pvc.get("status") or {}).get("phase") == "Pending"
    assert await kube.get(PERSISTENT_VOLUME, None, f"pvc-{made['metadata']['uid']}") is None
    assert not await asyncio.to_thread(lambda: list(tmp_path.iterdir()))
