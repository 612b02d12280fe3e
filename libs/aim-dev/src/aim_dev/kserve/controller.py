"""The KServe stand-in's loop: every InferenceService in RawDeployment mode gets the Deployment and
Service KServe would create (and, for an autoscaled one, the HPA KEDA would), and the status
KServe would write (:mod:`aim_dev.kserve.raw`).

It runs beside a local control plane with a real node (``aimctl up --node``, the node test tier),
with the admin kubeconfig, as one process (``python -m aim_dev.kserve``). Level-triggered and
simple: every ``interval`` it lists InferenceServices, their Deployments and their pods (by
KServe's labels), writes a child only when what it would write changed (a hash in the child's
annotations), and patches an InferenceService's status only when it differs. Children are owned
by their InferenceService, so the garbage collector removes them with it.

The same process plays KEDA's decisions for ScaledObjects (:mod:`aim_dev.keda`): each pass runs the
KServe stand-in, then the KEDA stand-in (:class:`aim_dev.local.passes.Together`), so the node stack
gets both from one process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from aim_dev.keda.controller import KedaStandIn
from aim_dev.kserve import raw
from aim_dev.local.passes import Together, run_passes
from aimcore.api.kinds import DEPLOYMENT, HPA, INFERENCE_SERVICE, POD, KindRef
from aimcore.runtime import ApiException, Kube, describe_error

log = logging.getLogger("aim_dev.kserve")

SERVICE = KindRef("", "v1", "Service", "services", True)
FIELD_MANAGER = "kserve-standin"
WRITE_ATTEMPTS = 5


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace")), str(meta.get("name"))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _comparable(status: Mapping[str, Any]) -> Any:
    return {k: v for k, v in status.items() if k != "observedGeneration"}


class StandIn:
    """The KServe stand-in's passes over every namespace, or over ``namespace`` only (a test's, on a
    shared control plane)."""

    def __init__(self, kube: Kube, domain: str = raw.DEFAULT_DOMAIN, namespace: str | None = None) -> None:
        self.kube = kube
        self.domain = domain
        self.namespace = namespace
        self.scalers: dict[tuple[str, str], dict[str, Any]] = {}  # KEDA's HPAs, as last listed

    async def tick(self) -> None:
        ns = self.namespace
        isvcs, _ = await self.kube.list(INFERENCE_SERVICE, ns)
        if not isvcs:
            return
        deployments, _ = await self.kube.list(DEPLOYMENT, ns, label_selector=raw.ISVC_LABEL)
        services, _ = await self.kube.list(SERVICE, ns, label_selector=raw.ISVC_LABEL)
        pods, _ = await self.kube.list(POD, ns, label_selector=raw.ISVC_LABEL)
        scalers, _ = await self.kube.list(HPA, ns, label_selector=raw.ISVC_LABEL)
        by_name = {_key(d): d for d in deployments}
        svc_by_name = {_key(s): s for s in services}
        self.scalers = {_key(h): h for h in scalers}
        pods_by_isvc: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for pod in pods:
            meta = pod.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            owner = (str(meta.get("namespace")), str((meta.get("labels") or {}).get(raw.ISVC_LABEL)))
            pods_by_isvc.setdefault(owner, []).append(pod)
        for isvc in isvcs:
            if (isvc.get("metadata") or {}).get("deletionTimestamp") or not raw.raw_mode(isvc):
                continue  # Serverless (Knative) is not emulated: no children, no status
            try:
                await self.reconcile(isvc, by_name, svc_by_name, pods_by_isvc)
            except ApiException as exc:
                log.warning("InferenceService %s/%s: %s", *_key(isvc), describe_error(exc))

    async def reconcile(
        self,
        isvc: dict[str, Any],
        deployments: Mapping[tuple[str, str], dict[str, Any]],
        services: Mapping[tuple[str, str], dict[str, Any]],
        pods: Mapping[tuple[str, str], list[dict[str, Any]]],
    ) -> None:
        namespace, name = _key(isvc)
        child = (namespace, raw.predictor_name(name))
        deploy = deployments.get(child)
        try:
            wanted_deploy, wanted_service = raw.deployment(isvc, deploy), raw.service(isvc)
        except raw.Unsupported as exc:
            await self._status(isvc, raw.unsupported_status(isvc, str(exc), now=_now()))
            return
        if raw.spec_hash(deploy) != raw.spec_hash(wanted_deploy):
            written = await self._deployment(isvc, wanted_deploy)
            if written is None:
                return
            deploy = written
        if raw.spec_hash(services.get(child)) != raw.spec_hash(wanted_service):
            await self.kube.apply(SERVICE, wanted_service)
            log.info("applied Service %s/%s", *child)
        await self._scaler(isvc)
        status = raw.status(isvc, deploy, pods.get((namespace, name), []), now=_now(), domain=self.domain)
        await self._status(isvc, status)

    async def _deployment(self, isvc: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any] | None:
        """Write the predictor Deployment. One that keeps a scaler's replicas is written on the
        condition that it did not change since read (:func:`aim_dev.kserve.raw.deployment`): on a
        conflict (the Deployment controller's status writes change it too) it is read again and
        the write retried, :data:`WRITE_ATTEMPTS` times in all; None when it still conflicts (the
        next pass tries again)."""
        namespace, name = _key(wanted)
        for _ in range(WRITE_ATTEMPTS):
            try:
                written = await self.kube.apply(DEPLOYMENT, wanted)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                log.info("Deployment %s/%s changed since read; reading it again", namespace, name)
                wanted = raw.deployment(isvc, await self.kube.get(DEPLOYMENT, namespace, name))
                continue
            log.info("applied Deployment %s/%s", namespace, name)
            return written
        log.info("Deployment %s/%s kept changing; next pass", namespace, name)
        return None

    async def _scaler(self, isvc: dict[str, Any]) -> None:
        """KEDA's HPA for an autoscaled predictor (:func:`aim_dev.kserve.raw.scaler`); removed
        when the InferenceService stops autoscaling with class ``keda``, if it is this stand-in's
        (owned by the InferenceService: one a ScaledObject owns is KEDA's, :mod:`aim_dev.keda`)."""
        namespace, name = _key(isvc)
        key = (namespace, raw.scaler_name(name))
        wanted, live = raw.scaler(isvc), self.scalers.get(key)
        if wanted is None:
            if live is not None and _controlled_by(live, isvc):
                await self.kube.delete(HPA, *key)
                log.info("deleted HorizontalPodAutoscaler %s/%s", *key)
        elif raw.spec_hash(live) != raw.spec_hash(wanted):
            await self.kube.apply(HPA, wanted)
            log.info("applied HorizontalPodAutoscaler %s/%s", *key)

    async def _status(self, isvc: dict[str, Any], status: dict[str, Any]) -> None:
        if _comparable(isvc.get("status") or {}) == _comparable(status):
            return
        namespace, name = _key(isvc)
        patch = {"metadata": {"resourceVersion": isvc["metadata"]["resourceVersion"]}, "status": status}
        try:
            await self.kube.patch_status(INFERENCE_SERVICE, namespace, name, patch)
        except ApiException as exc:
            if exc.status not in (404, 409):  # gone, or changed since listed: the next tick
                raise
        else:
            ready: dict[str, Any] = next(
                (c for c in (status.get("conditions") or []) if c["type"] == "Ready"), {}
            )
            log.info(
                "InferenceService %s/%s: Ready=%s %s",
                namespace,
                name,
                ready.get("status"),
                ready.get("reason", ""),
            )


def _controlled_by(child: Mapping[str, Any], isvc: Mapping[str, Any]) -> bool:
    uid = (isvc.get("metadata") or {}).get("uid")
    refs = (child.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("controller") and r.get("uid") == uid for r in refs)


async def run(kubeconfig: str, interval: float = 1.0, domain: str = raw.DEFAULT_DOMAIN) -> None:
    """The KServe stand-in and then the KEDA stand-in, every ``interval`` seconds."""
    await run_passes(
        kubeconfig,
        FIELD_MANAGER,
        lambda kube: Together(StandIn(kube, domain), KedaStandIn(kube)),
        interval=interval,
        log=log,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aim_dev.kserve", description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between passes")
    parser.add_argument("--domain", default=raw.DEFAULT_DOMAIN, help="the ingress domain of status.url")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args.kubeconfig, args.interval, args.domain))
    return 0
