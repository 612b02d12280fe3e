"""The template reconciler (AIMServiceTemplate, AIMClusterServiceTemplate, both API groups): runtime
config, model lookup, GPU availability, model sources (inline or discovered by a dry-run Job),
profile, resolved hardware and the template's own cache.

One reconcile:

1. Runtime config (``RuntimeConfigReady``; a missing named config → ``ConfigValid=False``).
2. Model lookup (``ModelReady``/``ClusterModelReady``): a namespaced template looks in its
   namespace first, then at cluster models (the original documents the fallback but never uses it).
3. GPU (``GPUReady``) from the Node inventory: a template whose GPU no node has is
   ``NotAvailable`` and runs no Job; Node label changes re-check it.
4. Model sources: inline ``spec.modelSources`` (a legacy template of a custom model: the model's)
   are used as they are (``Discovered=True/InlineModelSources``); otherwise the discovery Job runs
   (``DiscoveryJobReady``, ``DiscoveryPodsReady``) and its log is parsed into ``status.modelSources``
   and ``status.profile``. Output that cannot be used fails the template
   (``InvalidDiscoveryOutput``): the original marks it Ready with no sources, which strands every
   service using it.
5. ``caching.enabled``: the template's AIMTemplateCache (named like the template, owned by it).

The discovery Jobs are :mod:`aim_discovery.template_jobs`, the cache :mod:`aim_discovery.template_cache`,
the conditions and the report :mod:`aim_discovery.template_status`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aim_discovery.catalog import model_condition
from aim_discovery.slots import Slots
from aim_discovery.template_cache import TemplateCache
from aim_discovery.template_jobs import DiscoveryJobs
from aim_discovery.template_status import (
    CONFIG_VALID,
    DISCOVERED,
    GPU_READY,
    INLINE_SOURCES,
    INLINE_SOURCES_MESSAGE,
    MODEL_FOUND,
    MODEL_NOT_FOUND,
    report,
    resolved_hardware,
)
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import GROUP_AIM, NODE, KindRef
from aimcore.domain import gpu as gpus
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import GPURequirement, Template
from aimcore.domain.outbound import ADDRESS_NOT_ALLOWED, OutboundPolicy, literal_env, source_refusal
from aimcore.domain.runtimeconfig import (
    CONFIG_NOT_FOUND,
    RUNTIME_CONFIG_READY,
    ConfigNotFound,
    resolve,
)
from aimcore.runtime.kube import Kube
from aimcore.runtime.reconciler import Request, Result
from aimcore.runtime.writes import Children


class TemplateReconciler:
    """Reconciles a template up to its model sources; its discovery Jobs (:attr:`jobs`) and its
    cache (:attr:`cache`) are written by the parts named for them."""

    def __init__(
        self,
        kube: Kube,
        system_namespace: str,
        slots: Slots,
        *,
        clock: Callable[[], float] = time.time,
        policy: OutboundPolicy | None = None,
    ) -> None:
        self.policy = policy or OutboundPolicy()
        children = Children(kube)  # writes Jobs and caches; keeps the bodies refused
        self.cache = TemplateCache(children)
        self.jobs = DiscoveryJobs(kube, system_namespace, slots, children, self.cache, clock)

    async def reconcile(self, request: Request) -> Result | None:
        template = Template.of_request(request)
        requirement = template.gpu
        conditions: list[ConditionReport] = []
        # what the spec asks for, until discovery says otherwise (every template has it, CPU-only too)
        fields: dict[str, Any] = {
            "resolvedHardware": resolved_hardware(template, requirement.model, requirement.requests)
        }
        try:
            wanted = {"runtimeConfigName": template.runtime_config_name}
            config = resolve(request.informer.get, request.ref.group, template.namespace, wanted)
        except ConfigNotFound as exc:
            message = str(exc)
            conditions = [
                ConditionReport(
                    type=RUNTIME_CONFIG_READY, status="False", reason=CONFIG_NOT_FOUND, message=message
                ),
                ConditionReport(
                    type=CONFIG_VALID, status="False", reason="ReferenceNotFound", message=message
                ),
            ]
            await report(request, conditions, fields, "reject", CONFIG_NOT_FOUND, message)
            return None
        reason, message = config.condition_reason()
        conditions.append(
            ConditionReport(type=RUNTIME_CONFIG_READY, status="True", reason=reason, message=message)
        )
        fields["resolvedRuntimeConfig"] = config.reference()
        sources = template.written_sources
        refused = source_refusal(sources, literal_env(template.written_env), self.policy)
        if refused is not None:  # the inference container would fetch them there (issue 24)
            conditions.append(
                ConditionReport(
                    type=CONFIG_VALID, status="False", reason=ADDRESS_NOT_ALLOWED, message=refused
                )
            )
            await report(request, conditions, fields, "reject", ADDRESS_NOT_ALLOWED, refused)
            return None
        conditions.append(ConditionReport(type=CONFIG_VALID, status="True", reason="ConfigurationValid"))

        found = self.find_model(template, request)
        model_cond = model_condition(request.ref)
        if found is None:
            where = " or ".join(
                f"{k.kind}" + (f" in namespace {template.namespace}" if k.namespaced else "")
                for k in Model.kinds_for(request.ref)
            )
            message = f"Model {template.model_name!r} not found (looked for {where})"
            # the original: a missing upstream object is ReferenceNotFound with ConfigValid=False (the
            # template fails until the model appears); the component keeps ModelNotFound
            conditions = [c for c in conditions if c.type != CONFIG_VALID]
            conditions += [
                ConditionReport(type=model_cond, status="False", reason=MODEL_NOT_FOUND, message=message),
                ConditionReport(
                    type=CONFIG_VALID, status="False", reason="ReferenceNotFound", message=message
                ),
            ]
            fields[_model_field(request.ref)] = None
            await report(request, conditions, fields, "resolve-model", MODEL_NOT_FOUND, message)
            return None
        model = found
        conditions.append(
            ConditionReport(
                type=model_cond,
                status="True",
                reason=MODEL_FOUND,
                message=f"Using {model.ref.kind} {model.name} (image {model.image})",
            )
        )
        fields[_model_field(request.ref)] = model.reference()

        inventory = gpus.inventory(request.informer.list(NODE))
        try:
            check = gpus.check_gpu(
                model=requirement.model,
                requests=requirement.requests,
                min_vram=requirement.min_vram,
                inventory=inventory,
            )
        except ValueError as exc:  # an unparsable minVram: the spec is wrong, not the cluster
            message = f"{template.gpu_field}: {exc}"
            conditions = [c for c in conditions if c.type != CONFIG_VALID]
            conditions += [
                ConditionReport(type=CONFIG_VALID, status="False", reason="InvalidSpec", message=message),
                ConditionReport(type=GPU_READY, status="False", reason="InvalidSpec", message=message),
            ]
            await report(request, conditions, fields, "reject", "InvalidSpec", message)
            return None
        conditions.append(
            ConditionReport(
                type=GPU_READY,
                status="True" if check.available else "False",
                reason=check.reason,
                message=check.message,
            )
        )
        if check.required and not check.available:
            await report(request, conditions, fields, "gpu", check.reason, check.message)
            return None

        sources = template.written_sources or (
            model.written_sources if request.ref.group != GROUP_AIM else []
        )
        if sources:
            fields["modelSources"] = sources
            fields["profile"] = _spec_profile(template, requirement)
            conditions.append(
                ConditionReport(
                    type=DISCOVERED,
                    status="True",
                    reason=INLINE_SOURCES,
                    # the original's message, exactly (automation matches it); how many sources and
                    # that no Job runs are status.modelSources and the audit decision below
                    message=INLINE_SOURCES_MESSAGE,
                )
            )
            await self.cache.ensure(request, template, sources, fields)
            await report(
                request,
                conditions,
                fields,
                "discovery",
                INLINE_SOURCES,
                f"{len(sources)} model source(s) given in the spec; no discovery job",
            )
            return None

        return await self.jobs.discover(request, template, model, config, conditions, fields)

    # -- model lookup ---------------------------------------------------------------------------

    def find_model(self, template: Template, request: Request) -> Model | None:
        for kind in Model.kinds_for(request.ref):
            found = Model.get(request.informer, kind, template.namespace, template.model_name)
            if found is not None:
                return found
        return None


# -- helpers ---------------------------------------------------------------------------------------


def _model_field(ref: KindRef) -> str:
    return "resolvedModel" if ref.group == GROUP_AIM else "resolvedImage"


def _spec_profile(template: Template, requirement: GPURequirement) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for key, value in (
        ("metric", template.metric),
        ("precision", template.precision),
        ("type", template.profile_type),
    ):
        if value:
            metadata[key] = value
    if requirement.model:
        metadata["gpu"] = requirement.model
    if requirement.requests is not None:
        metadata["gpuCount"] = requirement.requests
    return {"metadata": metadata} if metadata else {}
