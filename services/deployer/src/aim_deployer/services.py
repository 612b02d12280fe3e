"""The AIMService reconciler (both API groups): runtime config → model → template → cache →
KServe InferenceService → HTTPRoute, each step a condition, every resolved reference in status.

One reconcile reads the informer cache, decides with the pure planners (:mod:`aim_deployer.model_resolution`,
:mod:`~aim_deployer.templates`, :mod:`~aim_deployer.caching`, :mod:`~aim_deployer.inference`,
:mod:`~aim_deployer.routing`, :mod:`~aim_deployer.readiness`) and writes only what differs from
the cluster, so a second run changes nothing. Conditions the service owns:

``RuntimeConfigReady``, ``ConfigValid``, ``ModelReady``, ``TemplateReady``, ``CacheReady``,
``InferenceServiceReady``, ``InferenceServicePodsReady`` and, when routing is on, ``HTTPRouteReady``.
When a step cannot go on, the later ones are reported as waiting for it, so no condition is left
over from an earlier state. A child the API server refuses (400/422: its content; 403: the
operator's permissions) is reported on its step's condition as ``<Child>CreateRejected`` /
``<Child>CreateForbidden`` with the server's message (status ``Failed``), not retried in a loop:
the same body is not sent again until it changes, and a 403 is tried again after a minute. The
status service derives ``status.status`` (Pending, Starting, Running, Degraded, Failed) and
``Ready`` from them.

The finalizer (``aim.eai.amd.com/template-cache-cleanup``, the original's) is added only when the
service creates a template cache; on delete it removes the service's template caches that never
became Ready, and never blocks a terminating namespace.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aim_deployer import caching, inference, readiness, routing
from aim_deployer.model_resolution import (
    CUSTOM_LABEL,
    MODEL_READY,
    SERVICE_LABEL,
    ModelPlan,
    resolve_model,
)
from aim_deployer.service_view import ServiceView
from aim_deployer.settings import DeployerSettings
from aim_deployer.templates import TEMPLATE_READY, TemplatePlan, resolve_template
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import HTTP_ROUTE, INFERENCE_SERVICE, NODE, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.domain import gpu as gpus
from aimcore.domain.cleanup import NotReadyCleanup
from aimcore.domain.naming import label_value
from aimcore.domain.pathtemplate import DEFAULT_PATH_TEMPLATE, quote_template
from aimcore.domain.runtimeconfig import Resolved, propagated_labels, resolution_conditions
from aimcore.domain.views import AIM, READY_STATES, TemplateView, resolved_reference, state_of
from aimcore.runtime.children import differs, owner_reference
from aimcore.runtime.conditions import condition, refused_condition
from aimcore.runtime.finalizers import add_finalizer, has_finalizer
from aimcore.runtime.kube import ApiException, Kube
from aimcore.runtime.reconciler import Request, Result
from aimcore.runtime.refusals import Refusal
from aimcore.runtime.writes import Children, How

log = logging.getLogger(__name__)


FINALIZER = "aim.eai.amd.com/template-cache-cleanup"
CONFIG_VALID = "ConfigValid"
ISVC_READY = "InferenceServiceReady"
PODS_READY = "InferenceServicePodsReady"
ROUTE_READY = "HTTPRouteReady"
ISVC_LABEL = "serving.kserve.io/inferenceservice"
PODS_INDEX = "isvc-pods"

DOWNSTREAM = (TEMPLATE_READY, caching.CACHE_READY, ISVC_READY, PODS_READY)
FORBIDDEN_RETRY = 60.0  # a write refused for lack of permission is tried again after this long

__all__ = ["PODS_INDEX", "ServiceReconciler", "live_mounts", "pod_isvc", "refused_condition", "waiting_for"]


def waiting_for(what: str, after: str) -> list[ConditionReport]:
    """The conditions after ``after`` in the chain, each waiting for ``what``."""
    chain = DOWNSTREAM[DOWNSTREAM.index(after) + 1 :] if after in DOWNSTREAM else DOWNSTREAM
    return [
        ConditionReport(
            type=t, status="Unknown", reason=f"Awaiting{what}", message=f"waiting for the {what.lower()}"
        )
        for t in chain
    ]


def pod_isvc(obj: Mapping[str, Any]) -> list[str]:
    """Index: the InferenceService a predictor pod belongs to."""
    name = ((obj.get("metadata") or {}).get("labels") or {}).get(ISVC_LABEL)
    return [str(name)] if name else []


def live_mounts(isvc: Mapping[str, Any] | None) -> tuple[inference.CacheMount, ...]:
    """The cache volumes the running InferenceService mounts."""
    if not isvc:
        return ()
    predictor = (isvc.get("spec") or {}).get("predictor") or {}
    claims = {
        v.get("name"): (v.get("persistentVolumeClaim") or {}).get("claimName")
        for v in predictor.get("volumes") or []
        if isinstance(v, Mapping) and v.get("persistentVolumeClaim")
    }
    out = []
    for container in predictor.get("containers") or []:
        for m in container.get("volumeMounts") or []:
            claim = claims.get(m.get("name"))
            if claim:
                out.append(inference.CacheMount(str(m["name"]), str(claim), str(m.get("mountPath"))))
    return tuple(out)


@dataclass(frozen=True)
class Chosen:
    """What the InferenceService is made of."""

    config: Resolved
    model: tuple[KindRef, Obj]
    template: tuple[KindRef, Obj]
    cache: caching.CachePlan
    isvc_name: str


@dataclass
class Pass:
    """What one reconcile has concluded so far."""

    conditions: list[ConditionReport]
    fields: dict[str, Any]
    inventory: gpus.Inventory = field(default_factory=gpus.Inventory)  # the nodes' GPUs
    retry_after: float | None = None  # a write refused for lack of permission: try again

    def set(self, condition: ConditionReport) -> None:
        self.conditions = [c for c in self.conditions if c.type != condition.type] + [condition]

    def invalid(self, reason: str, message: str) -> None:
        self.set(ConditionReport(type=CONFIG_VALID, status="False", reason=reason, message=message))

    def refused(self, condition: ConditionReport, found: Refusal) -> None:
        self.set(condition)
        if found.forbidden:
            self.retry_after = FORBIDDEN_RETRY


class ServiceReconciler:
    """Reconciles AIMServices of both API groups (see the module docstring for the steps)."""

    def __init__(self, kube: Kube, settings: DeployerSettings) -> None:
        self.kube = kube
        self.settings = settings
        self.children = Children(kube)  # writes them; keeps the bodies refused for their content

    async def reconcile(self, request: Request) -> Result | None:
        ref = request.ref
        service = ServiceView.of(ref, request.resource, request.obj)
        if service.deleting:
            await self._finalize(request)
            return None
        config, conditions = resolution_conditions(
            request.informer.get, ref.group, request.namespace, service.wire_spec
        )
        state = Pass(conditions, {})
        if config is None:
            state.conditions += [
                condition("ModelReady", False, "AwaitingRuntimeConfig", "waiting for the runtime config")
            ]
            state.conditions += waiting_for("RuntimeConfig", "")
            return await self._report(request, state)
        if ref.group == AIM:
            state.fields["resolvedRuntimeConfig"] = config.reference()

        model = await self._model(request, service, state, config)
        if model is None:
            state.conditions += waiting_for("Model", "")
            return await self._report(request, state)

        template = await self._template(request, service, state, model)
        if template is None:
            state.conditions += waiting_for("Template", TEMPLATE_READY)
            return await self._report(request, state)

        isvc_name = self._isvc_name(request, state)
        if isvc_name is None:
            return await self._report(request, state)
        live = request.informer.get(INFERENCE_SERVICE, request.namespace, isvc_name)
        plan = await self._cache(request, service, state, template, live)
        if plan.wait:
            state.conditions += waiting_for("Cache", caching.CACHE_READY)
            return await self._report(request, state)

        chosen = Chosen(config, model, template, plan, isvc_name)
        if await self._inference_service(request, service, state, chosen, live):
            await self._release_custom_models(request, service, model)
        await self._route(request, service, state, config, isvc_name)
        return await self._report(request, state)

    # -- steps ---------------------------------------------------------------------------------

    async def _model(
        self, request: Request, service: ServiceView, state: Pass, config: Resolved
    ) -> tuple[KindRef, Obj] | None:
        plan: ModelPlan = resolve_model(request.informer, service, config)
        state.set(plan.condition)
        if plan.invalid:
            state.invalid(plan.invalid, plan.condition.message)
        if plan.create is not None:
            kind, body = plan.create
            # a model others may share: one a concurrent reconcile created first is left as it is
            # (this service joins it as an owner next time)
            created = await self.children.write(request, kind, body, how=How.CREATE)
            if isinstance(created, Refusal):
                state.refused(
                    refused_condition(MODEL_READY, "Model", kind, body, created, update=False), created
                )
                return None
            if created.created:
                await request.decide("create-model", plan.condition.reason, plan.condition.message)
        if plan.join is not None:
            await self._co_own(request, *plan.join)
        field = "resolvedModel" if request.ref.group == AIM else "resolvedImage"
        if plan.model is not None and plan.usable:
            state.fields[field] = resolved_reference(*plan.model)
            return plan.model
        return None

    async def _template(
        self, request: Request, service: ServiceView, state: Pass, model: tuple[KindRef, Obj]
    ) -> tuple[KindRef, Obj] | None:
        state.inventory = gpus.inventory(request.informer.list(NODE))
        cluster_gpus = set(state.inventory.models())
        plan: TemplatePlan = resolve_template(request.informer, service, model, cluster_gpus)
        state.set(plan.condition)
        if plan.invalid:
            state.invalid(plan.invalid, plan.condition.message)
        if plan.create is not None:
            kind, body = plan.create
            created = await self.children.write(request, kind, body, how=How.CREATE)  # shared, as a model
            if isinstance(created, Refusal):
                refused = refused_condition(TEMPLATE_READY, "Template", kind, body, created, update=False)
                state.refused(refused, created)
                return None
            if created.created:
                await request.decide("create-derived-template", plan.condition.reason, plan.condition.message)
        if plan.join is not None:
            await self._co_own(request, *plan.join)
        if plan.selection is not None and not _same_condition(service, plan.condition):
            await request.decide(
                "select-template",
                plan.selection.reason,
                plan.selection.message,
                candidates=[
                    {
                        "name": v.name,
                        "kind": v.kind,
                        "namespace": v.namespace,
                        "reason": v.reason,
                        "message": v.message,
                    }
                    for v in plan.verdicts
                ],
            )
        if plan.template is None or plan.condition.status != "True":
            return None
        state.fields["resolvedTemplate"] = resolved_reference(*plan.template)
        return plan.template

    def _isvc_name(self, request: Request, state: Pass) -> str | None:
        try:
            return inference.isvc_name(request.name, request.namespace or "")
        except inference.NameTooLong as exc:
            state.invalid("InvalidSpec", str(exc))
            state.set(condition(ISVC_READY, False, "InvalidSpec", str(exc)))
            return None

    async def _cache(
        self,
        request: Request,
        service: ServiceView,
        state: Pass,
        template: tuple[KindRef, Obj],
        live: Obj | None,
    ) -> caching.CachePlan:
        plan = caching.plan_cache(request.informer, service, template, live_mounts(live))
        state.set(plan.condition)
        if plan.create is not None:
            if not has_finalizer(request.obj, FINALIZER):
                await add_finalizer(self.kube, request.ref, request.obj, FINALIZER)
            kind, body = plan.create
            applied = await self.children.write(request, kind, body)
            if isinstance(applied, Refusal):
                exists = request.informer.get(kind, request.namespace, body["metadata"]["name"]) is not None
                refused = refused_condition(caching.CACHE_READY, "Cache", kind, body, applied, update=exists)
                state.refused(refused, applied)
                return dataclasses.replace(plan, condition=refused, wait=True)
            await request.decide("create-template-cache", plan.condition.reason, plan.condition.message)
        if plan.retry:
            tc = plan.retry_of
            assert tc is not None
            # the one retry is recorded on the template cache itself, so no stale read of this
            # service's status can grant a second one
            kind = by_kind(request.ref.group, "AIMModelCache")
            uids = sorted(
                str(((mc or {}).get("metadata") or {}).get("uid") or "")
                for mc in (request.informer.get(kind, request.namespace, name) for name in plan.retry)
            )
            await self.kube.patch(
                by_kind(request.ref.group, "AIMTemplateCache"),
                request.namespace,
                tc,
                {
                    "metadata": {
                        "annotations": {
                            caching.RETRIED_ANNOTATION: "1",
                            caching.RETRIED_UIDS_ANNOTATION: ",".join(u for u in uids if u),
                        }
                    }
                },
            )
            for name in plan.retry:
                await self.kube.delete(kind, request.namespace, name)
            await request.decide("retry-cache", plan.condition.reason, plan.condition.message)
        if request.ref.group == AIM:
            cache: dict[str, Any] = {}
            if plan.reference is not None:
                cache["templateCacheRef"] = plan.reference
            if plan.retry_attempts is not None:
                cache["retryAttempts"] = plan.retry_attempts
            state.fields["cache"] = cache or None
        return plan

    async def _inference_service(
        self, request: Request, service: ServiceView, state: Pass, chosen: Chosen, live: Obj | None
    ) -> bool:
        """Apply the InferenceService; whether the one in the cluster is now built from ``chosen``."""
        config, model, template, plan, isvc_name = (
            chosen.config,
            chosen.model,
            chosen.template,
            chosen.cache,
            chosen.isvc_name,
        )
        inputs = inference.Inputs(
            service_ref=request.ref,
            service=request.obj,
            model_ref=model[0],
            model=model[1],
            template_ref=template[0],
            template=template[1],
            config_env=list(config.get("env") or []),
            propagated_labels=propagated_labels(service.labels, config),
            caches=plan.mounts,
            deployment_mode=self.settings.deployment_mode,
            node_affinity=self._affinity(template, state.inventory),
        )
        body = inference.build(inputs)
        if live is None or differs(live, body):
            exists = live is not None
            # a new one is created (a plain create costs the API server less than an apply), an
            # existing one applied over
            written = await self.children.write(
                request, INFERENCE_SERVICE, body, how=How.CREATE_OR_APPLY, seen=exists
            )
            if isinstance(written, Refusal):
                refused = refused_condition(
                    ISVC_READY, "InferenceService", INFERENCE_SERVICE, body, written, update=exists
                )
                state.refused(refused, written)
                if live is None:
                    state.set(
                        ConditionReport(
                            type=PODS_READY,
                            status="Unknown",
                            reason="AwaitingInferenceService",
                            message="waiting for the inference service",
                        )
                    )
                    return False
                self._pods(request, state, live, isvc_name)
                state.set(refused)  # the running one is outdated: the refusal explains the step
                return False
            assert written.obj is not None  # (only a plain create leaves one there as it is)
            live = written.obj
            if not (live.get("status") or {}):
                await request.decide(
                    "apply-inference-service",
                    "CreatingRuntime",
                    f"InferenceService {isvc_name} applied",
                )
        self._pods(request, state, live, isvc_name)
        return True

    def _pods(self, request: Request, state: Pass, live: Obj, isvc_name: str) -> None:
        """The InferenceService's and its predictor pods' conditions."""
        health = readiness.inference_service_health(live)
        state.set(condition(ISVC_READY, health.ok, health.reason, health.message))
        pods = [
            p
            for p in request.informer.by_index(PODS_INDEX, isvc_name)
            if p["metadata"].get("namespace") == request.namespace
        ]
        expected = int((((live or {}).get("spec") or {}).get("predictor") or {}).get("minReplicas") or 1)
        pods_health = readiness.pods_health(pods, expected=expected)
        state.set(condition(PODS_READY, pods_health.ok, pods_health.reason, pods_health.message))

    async def _route(
        self, request: Request, service: ServiceView, state: Pass, config: Resolved, isvc_name: str
    ) -> None:
        own = service.wire_routing  # merged key by key with the runtime config's routing

        def setting(key: str, *legacy: str) -> Any:
            for k in (key, *legacy):
                if own.get(k) not in (None, ""):
                    return own[k]
            for k in (key, *legacy):
                value = config.get("routing", k)
                if value not in (None, ""):
                    return value
            return None

        enabled = bool(setting("enabled"))
        name = inference.route_name(request.name, request.namespace or "")
        existing = request.informer.get(HTTP_ROUTE, request.namespace, name)
        had_condition = any(c.get("type") == ROUTE_READY for c in service.conditions)
        if not enabled:
            if existing is not None:
                await self.kube.delete(HTTP_ROUTE, request.namespace, name)
            if had_condition:
                state.set(condition(ROUTE_READY, True, "RoutingDisabled", "routing is disabled"))
            state.fields["routing"] = None
            return
        gateway = setting("gatewayRef")
        if not isinstance(gateway, Mapping) or not gateway.get("name"):
            message = (
                "routing is enabled but no gateway is configured "
                "(spec.routing.gatewayRef or the runtime config's)"
            )
            state.set(condition(ROUTE_READY, False, "GatewayNotConfigured", message))
            return
        template = setting("pathTemplate", "routeTemplate")
        try:
            path = (
                routing.render_path(str(template), request.obj)
                if template
                else routing.default_path(request.obj)
            )
        except routing.PathTemplateError as exc:
            if existing is not None:
                await self.kube.delete(HTTP_ROUTE, request.namespace, name)
            shown = quote_template(str(template or DEFAULT_PATH_TEMPLATE))
            state.set(condition(ROUTE_READY, False, "PathTemplateInvalid", f"path template {shown}: {exc}"))
            state.fields["routing"] = None
            return
        timeout = setting("requestTimeout")
        try:
            request_timeout = routing.gateway_duration(str(timeout)) if timeout else None
        except routing.RequestTimeoutError as exc:
            if existing is not None:
                await self.kube.delete(HTTP_ROUTE, request.namespace, name)
            state.set(condition(ROUTE_READY, False, routing.REASON_TIMEOUT_INVALID, str(exc)))
            state.fields["routing"] = None
            return
        annotations = {
            **(config.get("routing", "annotations") or {}),
            **(own.get("annotations") or {}),
        }
        labels = {
            "app.kubernetes.io/component": "routing",
            "app.kubernetes.io/managed-by": "aim-engine",
            "app.kubernetes.io/part-of": "aim-engine",
            SERVICE_LABEL: label_value(request.name),
        }
        body = routing.route_body(
            name=name,
            namespace=request.namespace or "",
            path=path,
            gateway=gateway,
            backend_service=f"{isvc_name}-predictor",
            request_timeout=request_timeout,
            annotations=annotations,
            labels=labels,
            owner=owner_reference(request.ref, request.obj),
        )
        if existing is None or differs(existing, body):
            update = existing is not None
            applied = await self.children.write(request, HTTP_ROUTE, body)
            if isinstance(applied, Refusal):
                state.refused(
                    refused_condition(ROUTE_READY, "HTTPRoute", HTTP_ROUTE, body, applied, update=update),
                    applied,
                )
                if existing is None:
                    state.fields["routing"] = None
                return
            existing = applied.obj
        ok, reason, message = routing.route_condition(existing)
        state.set(condition(ROUTE_READY, ok, reason, message))
        state.fields["routing"] = {"path": path}

    # -- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _affinity(template: tuple[KindRef, Obj], inventory: gpus.Inventory) -> Obj | None:
        """Node affinity pinning the predictor to nodes with the template's GPU (reference §2.9),
        from the inventory template selection read."""
        need = TemplateView(*template).gpu
        if not need.model and need.min_vram is None:
            return None
        try:
            check = gpus.check_gpu(
                model=need.model, requests=need.requests, min_vram=need.min_vram, inventory=inventory
            )
        except ValueError:
            return None
        return check.node_affinity

    async def _release_custom_models(
        self, request: Request, service: ServiceView, model: tuple[KindRef, Obj]
    ) -> None:
        """Stop co-owning the custom models this service no longer runs: its request changed
        (new env, hardware...), or it shared a model made for a different request before custom
        models were told apart by their whole spec. Called once the InferenceService is built
        from ``model``; a model left without owners is deleted (with its templates), one still
        used by others only loses this owner reference."""
        if service.model_custom is None:
            return
        uid = service.uid
        keep = model[1]["metadata"].get("uid")
        kind = by_kind(request.ref.group, "AIMModel")
        for obj in request.informer.list(kind, request.namespace):
            meta = obj["metadata"]
            owners = meta.get("ownerReferences") or []
            index = next((i for i, o in enumerate(owners) if o.get("uid") == uid), None)
            if index is None or meta.get("uid") == keep or meta.get("deletionTimestamp"):
                continue
            if (meta.get("labels") or {}).get(CUSTOM_LABEL) != "true":
                continue
            path = f"/metadata/ownerReferences/{index}"
            ops: list[Obj] = [
                {"op": "test", "path": f"{path}/uid", "value": uid},
                {"op": "remove", "path": path},
            ]
            try:
                if len(owners) == 1:
                    await self.kube.delete(kind, request.namespace, meta["name"])
                else:
                    await self.kube.patch_json(kind, request.namespace, meta["name"], ops)
            except ApiException as exc:
                if exc.status not in (404, 409, 422):
                    raise
                continue  # changed meanwhile: the next reconcile looks again
            await request.decide(
                "release-model",
                "ModelReleased",
                f"custom AIMModel {meta['name']} is no longer used by this service"
                + (" and was deleted" if len(owners) == 1 else ""),
            )

    async def _co_own(self, request: Request, kind: KindRef, obj: Obj) -> None:
        """Make this service one more owner of a shared child (a custom model, a derived
        template): it is garbage-collected with its last user."""
        meta = obj["metadata"]
        owner = owner_reference(request.ref, request.obj, controller=False)
        path = "/metadata/ownerReferences"
        ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": meta["uid"]}]
        if meta.get("ownerReferences"):
            ops.append({"op": "add", "path": f"{path}/-", "value": owner})
        else:
            ops.append({"op": "add", "path": path, "value": [owner]})
        try:
            await self.kube.patch_json(kind, meta.get("namespace"), meta["name"], ops)
        except ApiException as exc:
            if exc.status not in (404, 409, 422):
                raise

    async def _report(self, request: Request, state: Pass) -> Result | None:
        fields = dict(state.fields)
        if request.ref.group != AIM:
            fields = {
                k: v for k, v in fields.items() if k in ("resolvedImage", "resolvedTemplate", "routing")
            }
        await request.report(state.conditions, fields)
        return Result(requeue_after=state.retry_after) if state.retry_after is not None else None

    async def _finalize(self, request: Request) -> None:
        cleanup = NotReadyCleanup(
            FINALIZER,
            "AIMTemplateCache",
            SERVICE_LABEL,
            ready=lambda tc: state_of(tc) in READY_STATES,
            state=state_of,
            noun="template cache",
            along="the service",
        )
        await cleanup.finalize(self.kube, request)


def _same_condition(service: ServiceView, condition: ConditionReport) -> bool:
    for c in service.conditions:
        if c.get("type") == condition.type:
            return bool(
                c.get("status") == condition.status
                and c.get("reason") == condition.reason
                and (c.get("message") or "") == condition.message
            )
    return False
