"""The KEDA stand-in's loop: every ScaledObject gets the HPA KEDA would keep, KEDA's scaling of its
target Deployment by the stand-in's activity annotation, and the status KEDA would write
(:mod:`aim_dev.keda.scaledobject` says exactly what is emulated).

Why a loop of its own in no process of its own: it runs in the KServe stand-in's process
(``python -m aim_dev.kserve``, after the KServe pass: :class:`aim_dev.local.passes.Together`), so
the node stack gets it with no new process. Level-triggered: every pass it lists the ScaledObjects
(cluster-wide, or in one namespace for a test on a shared control plane) and KEDA's HPAs (by
``scaledobject.keda.sh/name``), reads each target Deployment, and writes only what changed: the HPA
when its hash differs (server-side apply as ``keda-standin``), the target's ``spec.replicas`` by a
merge patch conditional on the Deployment's ``resourceVersion`` as read (as KEDA's update of the
scale subresource is; on a conflict it reads the Deployment again and decides again), and the
ScaledObject's status when it differs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aim_dev.keda import scaledobject as keda
from aimcore.api.kinds import DEPLOYMENT, HPA, SCALED_OBJECT
from aimcore.runtime import ApiException, Kube, describe_error

log = logging.getLogger("aim_dev.keda")

FIELD_MANAGER = "keda-standin"
WRITE_ATTEMPTS = 5


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace")), str(meta.get("name"))


class KedaStandIn:
    """KEDA's part for every ScaledObject (or those of ``namespace``), one pass per :meth:`tick`.
    Shares ``kube``'s connection, writing under its own field manager."""

    def __init__(self, kube: Kube, namespace: str | None = None) -> None:
        self.kube = Kube(kube.api, field_manager=FIELD_MANAGER)
        self.namespace = namespace

    async def tick(self) -> None:
        scaled, _ = await self.kube.list(SCALED_OBJECT, self.namespace)
        if not scaled:
            return
        hpas, _ = await self.kube.list(HPA, self.namespace, label_selector=keda.SCALED_OBJECT_LABEL)
        by_name = {_key(h): h for h in hpas}
        for so in scaled:
            if (so.get("metadata") or {}).get("deletionTimestamp"):
                continue  # the garbage collector removes its HPA; the target keeps its replicas
            try:
                await self.reconcile(so, by_name)
            except ApiException as exc:
                log.warning("ScaledObject %s/%s: %s", *_key(so), describe_error(exc))

    async def reconcile(self, so: dict[str, Any], hpas: Mapping[tuple[str, str], dict[str, Any]]) -> None:
        namespace, name = _key(so)
        ref = (so.get("spec") or {}).get("scaleTargetRef") or {}
        target_name = ref.get("name")
        target = (
            await self.kube.get(DEPLOYMENT, namespace, target_name)
            if isinstance(target_name, str) and target_name
            else None
        )
        plan = keda.plan(so, target)
        if plan.hpa is not None:
            key = (namespace, plan.hpa["metadata"]["name"])
            if keda.spec_hash(hpas.get(key)) != keda.spec_hash(plan.hpa):
                await self.kube.apply(HPA, plan.hpa)
                log.info("applied HorizontalPodAutoscaler %s/%s", *key)
        if plan.replicas is not None and target is not None:
            await self._scale(so, target, plan.replicas)
        if keda.status_differs(so, plan.status):
            patch = {
                "metadata": {"resourceVersion": so["metadata"]["resourceVersion"]},
                "status": plan.status,
            }
            try:
                await self.kube.patch_status(SCALED_OBJECT, namespace, name, patch)
            except ApiException as exc:
                if exc.status not in (404, 409):  # gone, or changed since listed: the next pass
                    raise

    async def _scale(self, so: Mapping[str, Any], target: Mapping[str, Any], replicas: int) -> None:
        """Set the target's ``spec.replicas``, on the condition that it did not change since read (as
        KEDA's update of the scale subresource): on a conflict (the Deployment controller's status
        writes change it too) it is read again and the decision taken again,
        :data:`WRITE_ATTEMPTS` times in all; then the next pass."""
        namespace, name = _key(target)
        for _ in range(WRITE_ATTEMPTS):
            was = (target.get("spec") or {}).get("replicas")
            version = target["metadata"]["resourceVersion"]
            patch = {"metadata": {"resourceVersion": version}, "spec": {"replicas": replicas}}
            try:
                await self.kube.patch(DEPLOYMENT, namespace, name, patch)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                log.info("Deployment %s/%s changed since read; reading it again", namespace, name)
                fresh = await self.kube.get(DEPLOYMENT, namespace, name)
                decided = keda.plan(so, fresh).replicas
                if fresh is None or decided is None:
                    return
                target, replicas = fresh, decided
                continue
            log.info("scaled Deployment %s/%s from %s to %d replicas", namespace, name, was, replicas)
            return
        log.info("Deployment %s/%s kept changing; next pass", namespace, name)
