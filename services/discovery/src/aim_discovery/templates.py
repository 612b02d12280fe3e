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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aim_discovery.catalog import model_condition, templates_condition
from aim_discovery.slots import Slots
from aim_discovery.template_cache import TemplateCache
from aim_discovery.template_jobs import DiscoveryJobs
from aim_discovery.template_status import (
    CONFIG_VALID,
    DISCOVERED,
    GPU_READY,
    INLINE_SOURCES,
    INLINE_SOURCES_MESSAGE,
    MODEL_FAILED,
    MODEL_FOUND,
    MODEL_NOT_FOUND,
    model_failure,
    report,
    resolved_hardware,
)
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import GROUP_AIM, NODE, KindRef
from aimcore.api.types import Obj
from aimcore.domain import gpu as gpus
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import GPURequirement, Template
from aimcore.domain.outbound import ADDRESS_NOT_ALLOWED, OutboundPolicy, literal_env, source_refusal
from aimcore.domain.runtimeconfig import (
    CONFIG_NOT_FOUND,
    RUNTIME_CONFIG_READY,
    ConfigNotFound,
    Resolved,
    resolve,
)
from aimcore.runtime import Children, Informer, Kube, Request, Result


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
        """The steps of the module docstring in order; a step that stops the reconcile says why,
        and that is reported (the writes are the template cache's and the discovery Jobs')."""
        run = _Pass.of(request)
        config = run.runtime_config()
        if config is None or not run.sources_allowed(self.policy):
            return await run.report()
        model = run.model()
        if model is None or not run.gpu_available():
            return await run.report()
        sources = run.inline_sources(model)
        if sources:
            await self.cache.ensure(request, run.template, sources, run.fields)
            return await run.report()
        return await self.jobs.discover(request, run.template, model, config, run.conditions, run.fields)


@dataclass
class _Pass:
    """One reconcile of a template up to its model sources: each step reads what it needs (the
    informer, the Node inventory), adds its conditions and status fields, and a step that ends
    the reconcile says why (``stopped``: the decision's action, reason and message)."""

    request: Request
    template: Template
    conditions: list[ConditionReport]
    fields: dict[str, Any]
    stopped: tuple[str, str, str] | None = None

    @classmethod
    def of(cls, request: Request) -> _Pass:
        template = Template.of_request(request)
        gpu = template.gpu
        # what the spec asks for, until discovery says otherwise (every template has it, CPU-only too)
        fields: dict[str, Any] = {"resolvedHardware": resolved_hardware(template, gpu.model, gpu.requests)}
        return cls(request, template, [], fields)

    async def report(self) -> Result | None:
        """Report where the reconcile stopped (nothing to requeue: a change of what it waits for
        wakes it)."""
        assert self.stopped is not None
        await report(self.request, self.conditions, self.fields, *self.stopped)
        return None

    def _invalid(self, *reports: ConditionReport) -> None:
        """``reports`` (a ``ConfigValid=False`` among them) in place of what was said of validity."""
        self.conditions = [c for c in self.conditions if c.type != CONFIG_VALID] + list(reports)

    def runtime_config(self) -> Resolved | None:
        """1. The runtime config; a named one that does not exist makes the spec invalid."""
        try:
            wanted = {"runtimeConfigName": self.template.runtime_config_name}
            config = resolve(
                self.request.informer.get, self.request.ref.group, self.template.namespace, wanted
            )
        except ConfigNotFound as exc:
            message = str(exc)
            self.conditions = [
                ConditionReport(
                    type=RUNTIME_CONFIG_READY, status="False", reason=CONFIG_NOT_FOUND, message=message
                ),
                _not_valid("ReferenceNotFound", message),
            ]
            self.stopped = ("reject", CONFIG_NOT_FOUND, message)
            return None
        reason, message = config.condition_reason()
        self.conditions.append(
            ConditionReport(type=RUNTIME_CONFIG_READY, status="True", reason=reason, message=message)
        )
        self.fields["resolvedRuntimeConfig"] = config.reference()
        return config

    def sources_allowed(self, policy: OutboundPolicy) -> bool:
        """Inline sources at an address the outbound policy refuses make the spec invalid: the
        inference container would fetch them there (issue 24)."""
        template = self.template
        refused = source_refusal(template.written_sources, literal_env(template.written_env), policy)
        if refused is not None:
            self.conditions.append(_not_valid(ADDRESS_NOT_ALLOWED, refused))
            self.stopped = ("reject", ADDRESS_NOT_ALLOWED, refused)
            return False
        self.conditions.append(ConditionReport(type=CONFIG_VALID, status="True", reason="ConfigurationValid"))
        return True

    def model(self) -> Model | None:
        """2. The model, the namespace's first; a missing one is ``ReferenceNotFound`` with
        ``ConfigValid=False``, as the original's missing upstream object (the template fails until
        the model appears); the component keeps ``ModelNotFound``."""
        ref, template = self.request.ref, self.template
        model_cond = model_condition(ref)
        kinds = Model.kinds_for(ref)
        model = _find_model(self.request.informer, kinds, template)
        if model is None:
            where = " or ".join(
                f"{k.kind}" + (f" in namespace {template.namespace}" if k.namespaced else "") for k in kinds
            )
            message = f"Model {template.model_name!r} not found (looked for {where})"
            missing = ConditionReport(
                type=model_cond, status="False", reason=MODEL_NOT_FOUND, message=message
            )
            self._invalid(missing, _not_valid("ReferenceNotFound", message))
            self.fields[_model_field(ref)] = None
            self.stopped = ("resolve-model", MODEL_NOT_FOUND, message)
            return None
        failed = model_failure(model, templates_condition(model.ref))
        if failed is not None:  # the template takes the model's Failed/Degraded (the original)
            reason = MODEL_FAILED if ref.namespaced else f"Cluster{MODEL_FAILED}"
            self.conditions.append(
                ConditionReport(type=model_cond, status="False", reason=reason, message=failed)
            )
        else:
            message = f"Using {model.ref.kind} {model.name} (image {model.image})"
            self.conditions.append(
                ConditionReport(type=model_cond, status="True", reason=MODEL_FOUND, message=message)
            )
        self.fields[_model_field(ref)] = model.reference()
        return model

    def gpu_available(self) -> bool:
        """3. The GPU it needs on some node (``NotAvailable`` without: no Job runs); an unparsable
        ``minVram`` is the spec's fault, not the cluster's."""
        requirement = self.template.gpu
        inventory = gpus.inventory(self.request.informer.list(NODE))
        try:
            check = gpus.check_gpu(
                model=requirement.model,
                requests=requirement.requests,
                min_vram=requirement.min_vram,
                inventory=inventory,
            )
        except ValueError as exc:
            message = f"{self.template.gpu_field}: {exc}"
            self._invalid(
                _not_valid("InvalidSpec", message),
                ConditionReport(type=GPU_READY, status="False", reason="InvalidSpec", message=message),
            )
            self.stopped = ("reject", "InvalidSpec", message)
            return False
        self.conditions.append(
            ConditionReport(
                type=GPU_READY,
                status="True" if check.available else "False",
                reason=check.reason,
                message=check.message,
            )
        )
        if check.required and not check.available:
            self.stopped = ("gpu", check.reason, check.message)
            return False
        return True

    def inline_sources(self, model: Model) -> list[Obj]:
        """4. Sources given in the spec (a legacy template of a custom model: the model's) are used
        as they are: no discovery Job."""
        template = self.template
        sources = template.written_sources or (
            model.written_sources if self.request.ref.group != GROUP_AIM else []
        )
        if not sources:
            return []
        self.fields["modelSources"] = sources
        self.fields["profile"] = _spec_profile(template, template.gpu)
        self.conditions.append(
            ConditionReport(
                type=DISCOVERED,
                status="True",
                reason=INLINE_SOURCES,
                # the original's message, exactly (automation matches it); how many sources and
                # that no Job runs are status.modelSources and the audit decision
                message=INLINE_SOURCES_MESSAGE,
            )
        )
        message = f"{len(sources)} model source(s) given in the spec; no discovery job"
        self.stopped = ("discovery", INLINE_SOURCES, message)
        return sources


# -- helpers ---------------------------------------------------------------------------------------


def _not_valid(reason: str, message: str) -> ConditionReport:
    return ConditionReport(type=CONFIG_VALID, status="False", reason=reason, message=message)


def _find_model(informer: Informer, kinds: Sequence[KindRef], template: Template) -> Model | None:
    """The model the template names, of the first of ``kinds`` that has it."""
    for kind in kinds:
        found = Model.get(informer, kind, template.namespace, template.model_name)
        if found is not None:
            return found
    return None


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
