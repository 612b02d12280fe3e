"""The AIMService reconciler (both API groups): runtime config → model → template → cache →
KServe InferenceService → HTTPRoute, each step a condition, every resolved reference in status.

One reconcile reads the informer cache, decides with the pure planners (:mod:`aim_deployer.model_resolution`,
:mod:`~aim_deployer.templates`, :mod:`~aim_deployer.caching`, :mod:`~aim_deployer.inference`,
:mod:`~aim_deployer.routing`, :mod:`~aim_deployer.readiness`) and writes only what differs from
the cluster, so a second run changes nothing. Once the InferenceService exists, every change of
what it is built from (replicas, autoscaling bounds, env, resources; the service's, its template's
or its runtime config's) is applied to it in place, also while the cache is not ready, and the
volumes it mounts are kept (:mod:`aim_deployer.live_volumes`). Conditions the service owns:

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

from aim_deployer import caching, inference, readiness, routing, scaled_object, sharing
from aim_deployer.live_volumes import keep_live_volumes
from aim_deployer.model_resolution import MODEL_READY, ModelPlan, resolve_model
from aim_deployer.replica_status import hpa_name, runtime_status
from aim_deployer.service_view import AnyService, ServiceView
from aim_deployer.settings import DeployerSettings
from aim_deployer.templates import TEMPLATE_READY, TemplatePlan, resolve_template
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import (
    DEPLOYMENT,
    GATEWAY,
    GROUP_AIM,
    HPA,
    HTTP_ROUTE,
    INFERENCE_SERVICE,
    NODE,
    POD,
    SCALED_OBJECT,
)
from aimcore.api.types import Obj
from aimcore.domain import gpu as gpus
from aimcore.domain import immutability
from aimcore.domain.cleanup import NotReadyCleanup
from aimcore.domain.families.base import is_ready, state_of, written
from aimcore.domain.families.caches import ModelCache, TemplateCache
from aimcore.domain.families.models import Model
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.families.templates import Template
from aimcore.domain.runtimeconfig import propagated_labels, resolution_conditions
from aimcore.runtime import (
    ApiException,
    Children,
    How,
    Kube,
    Refusal,
    Request,
    Result,
    add_finalizer,
    condition,
    controlled_by,
    differs,
    has_finalizer,
    refused_condition,
)

log = logging.getLogger(__name__)


FINALIZER = "aim.eai.amd.com/template-cache-cleanup"
IMMUTABLE = ("caching", "template")
"""The spec fields of an AIMService that are immutable once set (:mod:`aimcore.domain.immutability`)."""
CONFIG_VALID = "ConfigValid"
ISVC_READY = "InferenceServiceReady"
PODS_READY = "InferenceServicePodsReady"
ROUTE_READY = routing.ROUTE_READY
HPA_READY = "HPAReady"
ROUTING_REQUIRED = "RoutingRequiredForScaleToZero"
ISVC_LABEL = "serving.kserve.io/inferenceservice"
PODS_INDEX = "isvc-pods"

DOWNSTREAM = (TEMPLATE_READY, caching.CACHE_READY, ISVC_READY, PODS_READY)
FORBIDDEN_RETRY = 60.0  # a write refused for lack of permission is tried again after this long

__all__ = [
    "PODS_INDEX",
    "ServiceReconciler",
    "isvc_label",
    "live_mounts",
    "pod_isvc",
    "refused_condition",
    "waiting_for",
]


def waiting_for(what: str, after: str) -> list[ConditionReport]:
    """The conditions after ``after`` in the chain, each waiting for ``what``."""
    chain = DOWNSTREAM[DOWNSTREAM.index(after) + 1 :] if after in DOWNSTREAM else DOWNSTREAM
    return [
        ConditionReport(
            type=t, status="Unknown", reason=f"Awaiting{what}", message=f"waiting for the {what.lower()}"
        )
        for t in chain
    ]


def isvc_label(obj: Mapping[str, Any]) -> list[str]:
    """The InferenceService KServe's label names on one of its children (pods, Deployment)."""
    name = ((obj.get("metadata") or {}).get("labels") or {}).get(ISVC_LABEL)
    return [str(name)] if name else []


def pod_isvc(obj: Mapping[str, Any]) -> list[str]:
    """Index: the InferenceService a predictor pod belongs to (its Deployment and HPA carry the
    same label, and are not pods)."""
    return isvc_label(obj) if obj.get("kind") in (None, POD.kind) else []


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

    config: RuntimeConfig
    model: Model
    template: Template
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


Req = Request[AnyService]


class ServiceReconciler:
    """Reconciles AIMServices of both API groups (see the module docstring for the steps)."""

    def __init__(
        self, kube: Kube, settings: DeployerSettings, behaviour: Behaviour = Behaviour.SEEDS
    ) -> None:
        self.kube = kube
        self.settings = settings
        self.behaviour = behaviour  # AIM_BEHAVIOUR: caching modes, the mount path, the env order
        self.children = Children(kube)  # writes them; keeps the bodies refused for their content

    async def reconcile(self, request: Req) -> Result | None:
        ref = request.ref
        service = ServiceView.of(ref, request.resource, request.obj)
        if service.deleting:
            await self._finalize(request)
            return None
        if ref.group == GROUP_AIM and (refused := await self._immutable(request)) is not None:
            return await self._report(request, refused)
        resolved, conditions = resolution_conditions(
            request.informer.get,
            ref.group,
            request.namespace,
            {"runtimeConfigName": service.runtime_config_name},
        )
        state = Pass(conditions, {})
        if ref.group == GROUP_AIM:  # the legacy group's API has no status.runtime
            state.fields["runtime"] = self._runtime(request, service)
        if resolved is None:
            state.conditions += [
                condition(MODEL_READY, False, "AwaitingRuntimeConfig", "waiting for the runtime config")
            ]
            state.conditions += waiting_for("RuntimeConfig", "")
            return await self._report(request, state)
        config = RuntimeConfig.of(ref.group, resolved)
        if ref.group == GROUP_AIM:
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
        if plan.wait and live is None:  # once it runs, updates reach it while the cache fills
            state.conditions += waiting_for("Cache", caching.CACHE_READY)
            return await self._report(request, state)

        chosen = Chosen(config, model, template, plan, isvc_name)
        if self._needs_routing(service, config):
            state.invalid(
                ROUTING_REQUIRED,
                "minReplicas 0 needs routing (spec.routing.enabled or the runtime config's): the "
                "gateway's request counter is what wakes a service scaled to zero",
            )
            if live is None:  # nothing is made for it; a running one is left as it is
                state.conditions += waiting_for("ValidSpec", caching.CACHE_READY)
                return await self._report(request, state)
        inputs = self._inputs(service, state, chosen)
        if (
            await self._inference_service(request, service, state, chosen, inputs, live=live)
            and service.model_custom
        ):
            await sharing.release_custom_models(self.kube, request, model)
        await self._scaler(request, service, state, chosen, inputs)
        await self._route(request, service, state, config, isvc_name)
        return await self._report(request, state)

    # -- steps ---------------------------------------------------------------------------------

    async def _immutable(self, request: Req) -> Pass | None:
        """``spec.caching``/``spec.template`` changed after they were set: refused, nothing else
        done (:mod:`aimcore.domain.immutability`); otherwise what is set now is recorded."""
        found = immutability.check(request.obj, IMMUTABLE)
        if found.refused is not None:
            state = Pass([], {})
            state.invalid(immutability.REASON, found.refused)
            return state
        if found.record is not None:
            annotations = {immutability.ANNOTATION: found.record}
            await self.kube.patch(
                request.ref, request.namespace, request.name, {"metadata": {"annotations": annotations}}
            )
        return None

    async def _model(
        self, request: Req, service: ServiceView, state: Pass, config: RuntimeConfig
    ) -> Model | None:
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
            await sharing.co_own(self.kube, request, plan.join)
        field = "resolvedModel" if request.ref.group == GROUP_AIM else "resolvedImage"
        if plan.model is not None and plan.usable:
            state.fields[field] = plan.model.reference()
            return plan.model
        return None

    async def _template(
        self, request: Req, service: ServiceView, state: Pass, model: Model
    ) -> Template | None:
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
            await sharing.co_own(self.kube, request, plan.join)
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
        state.fields["resolvedTemplate"] = plan.template.reference()
        return plan.template

    def _isvc_name(self, request: Req, state: Pass) -> str | None:
        try:
            return inference.isvc_name(request.name, request.namespace or "")
        except inference.NameTooLong as exc:
            state.invalid("InvalidSpec", str(exc))
            state.set(condition(ISVC_READY, False, "InvalidSpec", str(exc)))
            return None

    async def _cache(
        self, request: Req, service: ServiceView, state: Pass, template: Template, live: Obj | None
    ) -> caching.CachePlan:
        plan = caching.plan_cache(request.informer, service, template, live_mounts(live), self.behaviour)
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
            await self._retry_cache(request, plan)
        if request.ref.group == GROUP_AIM:
            cache: dict[str, Any] = {}
            if plan.reference is not None:
                cache["templateCacheRef"] = plan.reference
            if plan.retry_attempts is not None:
                cache["retryAttempts"] = plan.retry_attempts
            state.fields["cache"] = cache or None
        return plan

    async def _retry_cache(self, request: Req, plan: caching.CachePlan) -> None:
        """The one retry of a failed template cache: its failed model caches are deleted, and the
        retry is recorded on the template cache itself, so no stale read of this service's status
        can grant a second one."""
        assert plan.retry_of is not None
        found = [
            mc
            for name in plan.retry
            if (mc := ModelCache.get_in(request.informer, request.ref.group, request.namespace, name))
        ]
        uids = sorted(mc.uid or "" for mc in found)
        retried = {
            caching.RETRIED_ANNOTATION: "1",
            caching.RETRIED_UIDS_ANNOTATION: ",".join(u for u in uids if u),
        }
        await self.kube.patch(
            TemplateCache.kind(request.ref.group),
            request.namespace,
            plan.retry_of,
            {"metadata": {"annotations": retried}},
        )
        for mc in found:
            await self.kube.delete(mc.ref, request.namespace, mc.name)
        await request.decide("retry-cache", plan.condition.reason, plan.condition.message)

    def _inputs(self, service: ServiceView, state: Pass, chosen: Chosen) -> inference.Inputs:
        return inference.Inputs(
            service=service,
            model=chosen.model,
            template=chosen.template,
            config_env=[written(e) for e in chosen.config.env],
            propagated_labels=propagated_labels(service.labels, chosen.config.resolved),
            caches=chosen.cache.mounts,
            deployment_mode=self.settings.deployment_mode,
            annotation_globs=self.settings.propagate_annotations,
            node_affinity=self._affinity(chosen.template, state.inventory),
            behaviour=self.behaviour,
            cache_root=caching.cache_root(self.behaviour),
        )

    def _needs_routing(self, service: ServiceView, config: RuntimeConfig) -> bool:
        """A service that scales to zero with routing off: nothing could wake it."""
        return (
            inference.owns_scaler(service, self.behaviour)
            and inference.replica_bounds(service.spec)[0] == 0
            and not routing.enabled(service, config)
        )

    async def _inference_service(
        self,
        request: Req,
        service: ServiceView,
        state: Pass,
        chosen: Chosen,
        inputs: inference.Inputs,
        *,
        live: Obj | None,
    ) -> bool:
        """Apply the InferenceService; whether the one in the cluster is now built from ``chosen``."""
        body = keep_live_volumes(inference.build(inputs), live)
        if live is None or differs(live, body):
            exists = live is not None
            # a new one is created (a plain create costs the API server less than an apply), an
            # existing one applied over
            written_isvc = await self.children.write(
                request, INFERENCE_SERVICE, body, how=How.CREATE_OR_APPLY, seen=exists
            )
            if isinstance(written_isvc, Refusal):
                refused = refused_condition(
                    ISVC_READY, "InferenceService", INFERENCE_SERVICE, body, written_isvc, update=exists
                )
                state.refused(refused, written_isvc)
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
                self._pods(request, service, state, live, chosen.isvc_name)
                state.set(refused)  # the running one is outdated: the refusal explains the step
                return False
            assert written_isvc.obj is not None  # (only a plain create leaves one there as it is)
            live = written_isvc.obj
            if not (live.get("status") or {}):
                await request.decide(
                    "apply-inference-service",
                    "CreatingRuntime",
                    f"InferenceService {chosen.isvc_name} applied",
                )
        self._pods(request, service, state, live, chosen.isvc_name)
        return True

    def _pods(self, request: Req, service: ServiceView, state: Pass, live: Obj, isvc_name: str) -> None:
        """The InferenceService's and its predictor pods' conditions (a service scaled to zero has
        no pods to wait for: ``ScaledToZero``)."""
        pods = [
            p
            for p in request.informer.by_index(PODS_INDEX, isvc_name)
            if p["metadata"].get("namespace") == request.namespace
        ]
        # RuntimeScaling only for a service that has served: on a first start the pod is ready a
        # moment before KServe calls the InferenceService Ready, and Running must not come first
        served = service.condition(ISVC_READY)
        ready_pods = readiness.ready_pod_count(pods) if served is not None and served.status == "True" else 0
        health = readiness.inference_service_health(live, ready_pods=ready_pods)
        state.set(condition(ISVC_READY, health.ok, health.reason, health.message))
        expected = int((((live or {}).get("spec") or {}).get("predictor") or {}).get("minReplicas") or 1)
        deployment = request.informer.get(DEPLOYMENT, request.namespace, inference.predictor_name(isvc_name))
        pods_health = readiness.pods_health(pods, expected=expected, deployment=deployment)
        if not pods_health.ok and self._idle(request, service, isvc_name, deployment) and not pods:
            pods_health = readiness.Health(
                True, scaled_object.REASON_SCALED_TO_ZERO, scaled_object.SCALED_TO_ZERO_MESSAGE
            )
        state.set(condition(PODS_READY, pods_health.ok, pods_health.reason, pods_health.message))

    def _idle(self, request: Req, service: ServiceView, isvc_name: str, deployment: Obj | None) -> bool:
        """Whether the service is scaled to zero by its own ScaledObject (:func:`scaled_object.idle`)."""
        if not inference.owns_scaler(service, self.behaviour):
            return False
        low, _ = inference.replica_bounds(service.spec)
        hpa = request.informer.get(HPA, request.namespace, hpa_name(inference.predictor_name(isvc_name)))
        return scaled_object.idle(low, deployment, hpa)

    async def _scaler(
        self, request: Req, service: ServiceView, state: Pass, chosen: Chosen, inputs: inference.Inputs
    ) -> None:
        """The ScaledObject of a service that scales itself (:mod:`aim_deployer.scaled_object`),
        applied when it differs, deleted when no longer wanted; ``HPAReady`` from KEDA's HPA."""
        name = scaled_object.scaler_name(chosen.isvc_name)
        existing = request.informer.get(SCALED_OBJECT, request.namespace, name)
        body = None
        if inference.owns_scaler(service, self.behaviour):
            body = scaled_object.build(
                service,
                chosen.isvc_name,
                inference.container_resources(inputs),
                address=self.settings.keda_otel_scaler_address,
                seconds_per_gib=self.settings.cooldown_seconds_per_gi_memory,
            )
        if body is None:
            if existing is not None and controlled_by(existing, request.obj["metadata"].get("uid")):
                await self.kube.delete(SCALED_OBJECT, request.namespace, name)
            return
        if existing is None or differs(existing, body):
            applied = await self.children.write(request, SCALED_OBJECT, body)
            if isinstance(applied, Refusal):
                state.refused(
                    refused_condition(
                        HPA_READY, "ScaledObject", SCALED_OBJECT, body, applied, update=existing is not None
                    ),
                    applied,
                )
                return
        predictor = inference.predictor_name(chosen.isvc_name)
        scaler = hpa_name(predictor)
        health = scaled_object.hpa_health(
            scaler,
            request.informer.get(HPA, request.namespace, scaler),
            request.informer.get(DEPLOYMENT, request.namespace, predictor),
            inference.replica_bounds(service.spec)[0],
        )
        state.set(condition(HPA_READY, health.ok, health.reason, health.message))

    async def _route(
        self, request: Req, service: ServiceView, state: Pass, config: RuntimeConfig, isvc_name: str
    ) -> None:
        name = inference.route_name(request.name, request.namespace or "")
        existing = request.informer.get(HTTP_ROUTE, request.namespace, name)
        listeners = await self._gateway_listeners(routing.gateway_to_read(service, config))
        plan = routing.plan_route(service, config, name, inference.predictor_name(isvc_name), listeners)
        if plan.invalid and plan.condition is not None:
            state.invalid(plan.condition.reason, plan.condition.message)
        if plan.delete and existing is not None:
            await self.kube.delete(HTTP_ROUTE, request.namespace, name)
        if plan.condition is not None:
            state.set(plan.condition)
        if plan.clear:
            state.fields["routing"] = None
        if plan.body is None:
            return
        body = plan.body
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
        state.fields["routing"] = {"path": plan.path}

    # -- helpers -------------------------------------------------------------------------------

    async def _gateway_listeners(self, gateway: tuple[str, str] | None) -> int | None:
        """How many listeners the route's parent Gateway has, read from the API server (a Gateway
        is no child of ours, so the watcher does not mirror it); ``None`` when there is none to
        read, it does not exist, or the deployer may not read it: the route is then made, and the
        gateway's answer on it (accepted, rejected, pending) says the rest."""
        if gateway is None:
            return None
        namespace, name = gateway
        try:
            found = await self.kube.get(GATEWAY, namespace, name)
        except ApiException as exc:
            log.warning(
                "cannot read gateway %s/%s to count its listeners (%s %s); routing without that check",
                namespace,
                name,
                exc.status,
                exc.reason,
            )
            return None
        if found is None:
            return None
        return len((found.get("spec") or {}).get("listeners") or [])

    @staticmethod
    def _runtime(request: Req, service: ServiceView) -> Obj:
        """``status.runtime`` from the predictor's Deployment and HPA (:mod:`aim_deployer.replica_status`)."""
        deployment = hpa = None
        try:
            predictor = inference.predictor_name(inference.isvc_name(request.name, request.namespace or ""))
        except inference.NameTooLong:  # reported on InferenceServiceReady; nothing runs
            predictor = None
        scaled = inference.scales(service.spec)
        if predictor is not None:
            deployment = request.informer.get(DEPLOYMENT, request.namespace, predictor)
            if scaled:
                hpa = request.informer.get(HPA, request.namespace, hpa_name(predictor))
        bounds = inference.replica_bounds(service.spec)
        return runtime_status(bounds, scaled=scaled, deployment=deployment, hpa=hpa).wire()

    @staticmethod
    def _affinity(template: Template, inventory: gpus.Inventory) -> Obj | None:
        """Node affinity pinning the predictor to nodes with the template's GPU
        (docs/original.md#gpu-detection-and-node-affinity), from the inventory template selection
        read."""
        need = template.gpu
        if not need.model and need.min_vram is None:
            return None
        try:
            check = gpus.check_gpu(
                model=need.model, requests=need.requests, min_vram=need.min_vram, inventory=inventory
            )
        except ValueError:
            return None
        return check.node_affinity

    async def _report(self, request: Req, state: Pass) -> Result | None:
        fields = dict(state.fields)
        if request.ref.group != GROUP_AIM:
            fields = {
                k: v for k, v in fields.items() if k in ("resolvedImage", "resolvedTemplate", "routing")
            }
        await request.report(state.conditions, fields)
        return Result(requeue_after=state.retry_after) if state.retry_after is not None else None

    async def _finalize(self, request: Req) -> None:
        cleanup = NotReadyCleanup(
            FINALIZER,
            TemplateCache.kinds_in,
            routing.SERVICE_LABEL,
            ready=is_ready,
            state=state_of,
            noun="template cache",
            along="the service",
        )
        await cleanup.finalize(self.kube, request)


def _same_condition(service: ServiceView, report: ConditionReport) -> bool:
    """Whether the service's status already says ``report`` (a decision is not recorded twice)."""
    found = service.condition(report.type)
    return found is not None and (found.status, found.reason, found.message) == (
        report.status,
        report.reason,
        report.message,
    )
