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

Discovery Jobs: the Job is the record. Its name carries the relevant-spec hash and the attempt
number, its annotations the same; a failed Job is kept until the next attempt replaces it (so its
log can be read), and the next attempt waits ``60 s·2^(n-1)`` (at most an hour; with jitter,
between half and all of that) after attempt ``n`` failed. A spec change (new hash) starts again at
attempt 1. A successful Job is deleted once its output is in the status. Creating a Job takes one of
the cluster-wide slots (:mod:`aim_discovery.slots`); nothing else is serialised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aim_discovery import dryrun
from aim_discovery.catalog import (
    TEMPLATE_CONTROLLER,
    model_condition,
)
from aim_discovery.slots import FINISHED, RUNNING, UNKNOWN, Slots
from aimcore.api.backoff import jitter_key
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import JOB, NODE, POD, KindRef, by_kind
from aimcore.domain import gpu as gpus
from aimcore.domain import jobs
from aimcore.domain.naming import label_value
from aimcore.domain.outbound import ADDRESS_NOT_ALLOWED, OutboundPolicy, literal_env, source_refusal
from aimcore.domain.runtimeconfig import (
    CONFIG_NOT_FOUND,
    RUNTIME_CONFIG_READY,
    ConfigNotFound,
    Resolved,
    merge_env,
    resolve,
)
from aimcore.domain.views import (
    AIM,
    GPURequirement,
    ModelView,
    TemplateView,
    model_kinds,
    resolved_reference,
    secret_names,
)
from aimcore.runtime.children import child_labels, contains, owner_reference
from aimcore.runtime.composer import has_status_field
from aimcore.runtime.kube import ApiException, Kube
from aimcore.runtime.reconciler import Request, Result
from aimcore.runtime.refusals import Refusal
from aimcore.runtime.writes import Children, How

log = logging.getLogger(__name__)

CONFIG_VALID = "ConfigValid"
GPU_READY = "GPUReady"
DISCOVERY_JOB_READY = "DiscoveryJobReady"
DISCOVERY_PODS_READY = "DiscoveryPodsReady"
DISCOVERED = "Discovered"

MODEL_FOUND = "ModelFound"
MODEL_NOT_FOUND = "ModelNotFound"
REFERENCE_NOT_FOUND = "ReferenceNotFound"
INLINE_SOURCES = "InlineModelSources"
DISCOVERY_COMPLETE = "DiscoveryComplete"
AWAITING_DISCOVERY = "AwaitingDiscovery"
INVALID_OUTPUT = "InvalidDiscoveryOutput"
JOB_COMPLETE = "JobComplete"
JOB_NOT_CREATED = "JobNotCreated"
WAITING_FOR_SLOT = "WaitingForDiscoverySlot"
LOG_UNAVAILABLE = "DiscoveryLogUnavailable"
JOB_CREATE_FAILED = "JobCreateFailed"

ANNOTATION_TEMPLATE_KIND = "aim.eai.amd.com/template-kind"
SLOT_RETRY = 5.0
LOG_RETRY = 30.0
LOG_TAIL_LINES = 50


def template_kind_token(ref: KindRef) -> str:
    return f"{ref.kind}.{ref.group}"


def job_template(job: Mapping[str, Any]) -> tuple[KindRef, str | None, str] | None:
    """The template a discovery Job belongs to (from its owner reference and annotations)."""
    meta = job.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    token = annotations.get(ANNOTATION_TEMPLATE_KIND)
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if not token or owner is None:
        return None
    kind, _, group = str(token).partition(".")
    try:
        ref = by_kind(group, kind)
    except KeyError:
        return None
    namespace = annotations.get(dryrun.ANNOTATION_TEMPLATE_NAMESPACE) if ref.namespaced else None
    return ref, namespace, str(owner.get("name"))


class TemplateReconciler:
    def __init__(
        self,
        kube: Kube,
        system_namespace: str,
        slots: Slots,
        *,
        clock: Callable[[], float] = time.time,
        policy: OutboundPolicy | None = None,
    ) -> None:
        self.kube = kube
        self.system_namespace = system_namespace
        self.slots = slots
        self.clock = clock
        self.policy = policy or OutboundPolicy()
        self.children = Children(kube)  # writes Jobs and caches; keeps the bodies refused

    async def reconcile(self, request: Request) -> Result | None:
        template = TemplateView(request.ref, request.obj)
        requirement = template.gpu
        conditions: list[ConditionReport] = []
        # what the spec asks for, until discovery says otherwise (every template has it, CPU-only too)
        fields: dict[str, Any] = {
            "resolvedHardware": resolved_hardware(template, requirement.model, requirement.requests)
        }
        try:
            config = resolve(request.informer.get, request.ref.group, template.namespace, template.spec)
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
            await self._report(request, conditions, fields, "reject", CONFIG_NOT_FOUND, message)
            return None
        reason, message = config.condition_reason()
        conditions.append(
            ConditionReport(type=RUNTIME_CONFIG_READY, status="True", reason=reason, message=message)
        )
        fields["resolvedRuntimeConfig"] = config.reference()
        sources = template.spec.get("modelSources") or []
        refused = source_refusal(sources, literal_env(template.spec.get("env")), self.policy)
        if refused is not None:  # the inference container would fetch them there (issue 24)
            conditions.append(
                ConditionReport(
                    type=CONFIG_VALID, status="False", reason=ADDRESS_NOT_ALLOWED, message=refused
                )
            )
            await self._report(request, conditions, fields, "reject", ADDRESS_NOT_ALLOWED, refused)
            return None
        conditions.append(ConditionReport(type=CONFIG_VALID, status="True", reason="ConfigurationValid"))

        found = self.find_model(template, request)
        model_cond = model_condition(request.ref)
        if found is None:
            where = " or ".join(
                f"{k.kind}" + (f" in namespace {template.namespace}" if k.namespaced else "")
                for k in model_kinds(request.ref)
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
            await self._report(request, conditions, fields, "resolve-model", MODEL_NOT_FOUND, message)
            return None
        model_ref, model_obj = found
        model = ModelView(model_ref, model_obj)
        conditions.append(
            ConditionReport(
                type=model_cond,
                status="True",
                reason=MODEL_FOUND,
                message=f"Using {model_ref.kind} {model.name} (image {model.image})",
            )
        )
        fields[_model_field(request.ref)] = resolved_reference(model_ref, model_obj)

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
            await self._report(request, conditions, fields, "reject", "InvalidSpec", message)
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
            await self._report(request, conditions, fields, "gpu", check.reason, check.message)
            return None

        sources = template.inline_sources or (model.model_sources if request.ref.group != AIM else [])
        if sources:
            fields["modelSources"] = sources
            fields["profile"] = _spec_profile(template, requirement)
            conditions.append(
                ConditionReport(
                    type=DISCOVERED,
                    status="True",
                    reason=INLINE_SOURCES,
                    # the original's message first (users match on it), then ours
                    message=f"Model sources provided in-line in spec ({len(sources)}; no discovery job)",
                )
            )
            await self._cache(request, template, sources, fields)
            await self._report(
                request, conditions, fields, "discovery", INLINE_SOURCES, "inline model sources"
            )
            return None

        return await self._discover(request, template, model, config, conditions, fields)

    # -- model lookup ---------------------------------------------------------------------------

    def find_model(self, template: TemplateView, request: Request) -> tuple[KindRef, dict[str, Any]] | None:
        for kind in model_kinds(request.ref):
            obj = request.informer.get(
                kind, template.namespace if kind.namespaced else None, template.model_name
            )
            if obj is not None:
                return kind, obj
        return None

    # -- discovery ----------------------------------------------------------------------------

    async def _discover(  # noqa: PLR0917
        self,
        request: Request,
        template: TemplateView,
        model: ModelView,
        config: Resolved,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        requirement = template.gpu
        profile_id = str(template.spec.get("profileId") or "") or None
        metric = str(template.spec.get("metric") or "") or None
        precision = str(template.spec.get("precision") or "") or None
        spec_hash = dryrun.spec_hash(
            template.model_name,
            model.image,
            metric,
            precision,
            requirement.model,
            requirement.requests,
            profile_id,
        )
        status = request.obj.get("status") or {}
        recorded = (status.get("discoveryJob") or {}).get("name") or ""
        namespace = template.namespace or self.system_namespace
        owned = self._jobs(request, template, namespace)
        current = [j for j in owned if _annotation(j, dryrun.ANNOTATION_SPEC_HASH) == spec_hash]
        for stale in (j for j in owned if j not in current):
            await self._delete_job(stale)

        discovered = _condition(status, DISCOVERED)
        if f"-{spec_hash}-" in recorded and discovered is not None:
            if discovered.get("reason") == DISCOVERY_COMPLETE and status.get("modelSources"):
                for job in current:  # the output is in the status now: the Job has done its part
                    if jobs.job_state(job) == jobs.STATE_SUCCEEDED:
                        await self._delete_job(job)
                return await self._discovered(request, template, status, conditions, fields)
            if discovered.get("reason") == INVALID_OUTPUT:
                message = str(discovered.get("message") or "")
                conditions += [
                    ConditionReport(type=DISCOVERED, status="False", reason=INVALID_OUTPUT, message=message),
                    ConditionReport(
                        type=DISCOVERY_JOB_READY, status="False", reason=INVALID_OUTPUT, message=message
                    ),
                ]
                fields["discoveryJob"] = status.get("discoveryJob")
                await self._report(request, conditions, fields, "discovery", INVALID_OUTPUT, message)
                return None

        latest = max(current, key=lambda j: int(_annotation(j, dryrun.ANNOTATION_ATTEMPT) or 0), default=None)
        if latest is None:
            return await self._start(
                request, template, model, config, namespace, spec_hash, 1, None, conditions, fields
            )
        attempt = int(_annotation(latest, dryrun.ANNOTATION_ATTEMPT) or 1)
        state = jobs.job_state(latest)
        job_name = latest["metadata"]["name"]
        fields["discoveryJob"] = {"name": job_name, "namespace": namespace, "kind": "Job"}
        pods = self._pods(request, namespace, job_name)
        if state == jobs.STATE_ACTIVE:
            progress = dryrun.pod_progress(pods) or (jobs.REASON_JOB_RUNNING, f"Job {job_name} created")
            conditions += [
                ConditionReport(
                    type=DISCOVERY_JOB_READY,
                    status="False",
                    reason=jobs.REASON_JOB_RUNNING,
                    message=f"Job {job_name} (attempt {attempt}) is running",
                ),
                ConditionReport(
                    type=DISCOVERY_PODS_READY, status="False", reason=progress[0], message=progress[1]
                ),
                ConditionReport(
                    type=DISCOVERED,
                    status="False",
                    reason=AWAITING_DISCOVERY,
                    message="Discovery job running",
                ),
            ]
            await self._report(request, conditions, fields, "discovery", jobs.REASON_JOB_RUNNING, job_name)
            return None
        if state == jobs.STATE_SUCCEEDED:
            return await self._read_output(request, template, namespace, latest, pods, conditions, fields)

        # failed: wait out the backoff, then the next attempt replaces this Job
        tail = await self._log(namespace, pods, tail_lines=LOG_TAIL_LINES)
        reason, message = dryrun.classify_failure(latest, pods, tail)
        ended = jobs.finished_at(latest)
        retry = dryrun.JOB_RETRY.delay(attempt, jitter=jitter_key(request.obj))
        due = (ended.timestamp() if ended else self.clock()) + retry
        wait = due - self.clock()
        if wait > 0:
            note = jobs.retry_note(attempt, due)
            conditions += [
                ConditionReport(
                    type=DISCOVERY_JOB_READY, status="False", reason=reason, message=f"{message} ({note})"
                ),
                ConditionReport(
                    type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message=f"Waiting: {note}"
                ),
            ]
            await self._report(
                request, conditions, fields, "discovery-failed", reason, message, attempt=attempt
            )
            return Result(requeue_after=wait)
        return await self._start(
            request, template, model, config, namespace, spec_hash, attempt + 1, latest, conditions, fields
        )

    async def _start(  # noqa: PLR0917
        self,
        request: Request,
        template: TemplateView,
        model: ModelView,
        config: Resolved,
        namespace: str,
        spec_hash: str,
        attempt: int,
        previous: dict[str, Any] | None,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        name = dryrun.job_name(template.name, spec_hash, attempt)
        requirement = template.gpu
        env = merge_env(merge_env(model.env, config.get("env") or []), template.spec.get("env") or [])
        secrets = [*model.pull_secrets, *template.pull_secrets, *secret_names(config.get("imagePullSecrets"))]
        body = dryrun.job_body(
            name=name,
            namespace=namespace,
            template_name=template.name,
            template_namespace=template.namespace,
            image=model.image,
            image_pull_secrets=list(dict.fromkeys(secrets)),
            service_account=template.service_account
            or model.service_account
            or config.get("serviceAccountName"),
            env=env,
            owner=owner_reference(request.ref, request.obj),
            spec_hash=spec_hash,
            attempt=attempt,
            extra_labels=child_labels(TEMPLATE_CONTROLLER),
            profile_id=str(template.spec.get("profileId") or "") or None,
            metric=str(template.spec.get("metric") or "") or None,
            precision=str(template.spec.get("precision") or "") or None,
            gpu_model=requirement.model,
            gpu_count=requirement.requests,
        )
        body["metadata"]["annotations"][ANNOTATION_TEMPLATE_KIND] = template_kind_token(request.ref)
        known = self.children.refused_before(JOB, body)
        if known is not None:  # refused as it is: not sent again until the spec changes
            return await self._job_refused(request, namespace, name, known, conditions, fields, attempt)
        claimed = await self.slots.claim(f"{namespace}/{name}", lambda key: self._job_state(request, key))
        if not claimed:
            message = f"All {self.slots.cap} cluster-wide discovery slots are in use; waiting"
            conditions += [
                ConditionReport(
                    type=DISCOVERY_JOB_READY, status="False", reason=WAITING_FOR_SLOT, message=message
                ),
                ConditionReport(type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message=message),
            ]
            await self._report(request, conditions, fields, "discovery", WAITING_FOR_SLOT, message)
            return Result(requeue_after=SLOT_RETRY)
        if previous is not None:
            await self._delete_job(previous)
        try:
            # one already there was created by an earlier run whose event has not reached the
            # cache yet; not recorded: the template reads its Job from the cache
            created = await self.children.write(request, JOB, body, how=How.CREATE, record=False)
        except ApiException as exc:
            if exc.status is not None and exc.status < 500:
                await self.slots.release(f"{namespace}/{name}")
                message = f"Cannot create discovery Job {namespace}/{name}: HTTP {exc.status} {exc.reason}"
                conditions += [
                    ConditionReport(
                        type=DISCOVERY_JOB_READY, status="False", reason=JOB_CREATE_FAILED, message=message
                    ),
                    ConditionReport(
                        type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message=message
                    ),
                ]
                await self._report(request, conditions, fields, "discovery", JOB_CREATE_FAILED, message)
                return Result(requeue_after=dryrun.JOB_RETRY.delay(attempt, jitter=jitter_key(request.obj)))
            raise
        if isinstance(created, Refusal):
            await self.slots.release(f"{namespace}/{name}")
            return await self._job_refused(request, namespace, name, created, conditions, fields, attempt)
        fields["discoveryJob"] = {"name": name, "namespace": namespace, "kind": "Job"}
        message = f"Discovery Job {name} created (attempt {attempt})"
        conditions += [
            ConditionReport(
                type=DISCOVERY_JOB_READY, status="False", reason=jobs.REASON_JOB_RUNNING, message=message
            ),
            ConditionReport(type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message=message),
        ]
        await self._report(
            request, conditions, fields, "create-discovery-job", jobs.REASON_JOB_RUNNING, message
        )
        return None

    async def _job_refused(  # noqa: PLR0917
        self,
        request: Request,
        namespace: str,
        name: str,
        found: Refusal,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
        attempt: int,
    ) -> Result | None:
        """The API server will not create the discovery Job: say why (its message names the
        field, e.g. an invalid environment variable name). A body refused for its content is not
        sent again until the spec changes; a permission problem is retried with the backoff."""
        message = f"Cannot create discovery Job {namespace}/{name}: {found.describe()}"
        conditions += [
            ConditionReport(
                type=DISCOVERY_JOB_READY, status="False", reason=JOB_CREATE_FAILED, message=message
            ),
            ConditionReport(type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message=message),
        ]
        await self._report(request, conditions, fields, "discovery", JOB_CREATE_FAILED, message)
        if not found.forbidden:
            return None
        return Result(requeue_after=dryrun.JOB_RETRY.delay(attempt, jitter=jitter_key(request.obj)))

    async def _read_output(  # noqa: PLR0917
        self,
        request: Request,
        template: TemplateView,
        namespace: str,
        job: dict[str, Any],
        pods: Sequence[dict[str, Any]],
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        job_name = job["metadata"]["name"]
        succeeded = [p for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"] or list(pods)
        text = await self._log(namespace, succeeded, tail_lines=None)
        if text is None:
            message = f"Job {job_name} succeeded but its pod log cannot be read yet"
            conditions += [
                ConditionReport(
                    type=DISCOVERY_JOB_READY, status="False", reason=LOG_UNAVAILABLE, message=message
                ),
                ConditionReport(type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message=message),
            ]
            await self._report(request, conditions, fields, "discovery", LOG_UNAVAILABLE, message)
            return Result(requeue_after=LOG_RETRY)
        try:
            result = dryrun.parse_output(text)
        except dryrun.DiscoveryOutputError as exc:
            message = f"Discovery Job {job_name} output is unusable: {exc.message}"
            conditions += [
                ConditionReport(type=DISCOVERED, status="False", reason=INVALID_OUTPUT, message=message),
                ConditionReport(
                    type=DISCOVERY_JOB_READY, status="False", reason=INVALID_OUTPUT, message=message
                ),
            ]
            await self._report(request, conditions, fields, "discovery-failed", INVALID_OUTPUT, message)
            return None
        requirement = template.gpu
        fields["modelSources"] = result.model_sources
        fields["profile"] = result.profile
        fields["resolvedHardware"] = resolved_hardware(
            template, result.gpu_model or requirement.model, result.gpu_count
        )
        message = f"Discovery Job {job_name} found {len(result.model_sources)} model source(s)"
        conditions += [
            ConditionReport(type=DISCOVERED, status="True", reason=DISCOVERY_COMPLETE, message=message),
            ConditionReport(type=DISCOVERY_JOB_READY, status="True", reason=JOB_COMPLETE, message=message),
            ConditionReport(
                type=DISCOVERY_PODS_READY, status="True", reason="PodsSucceeded", message=message
            ),
        ]
        await self._cache(request, template, result.model_sources, fields)
        await self._report(
            request,
            conditions,
            fields,
            "discovery",
            DISCOVERY_COMPLETE,
            message,
            modelSources=[s["sourceUri"] for s in result.model_sources],
        )
        return None

    async def _discovered(
        self,
        request: Request,
        template: TemplateView,
        status: Mapping[str, Any],
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        """Discovery already done for this spec: keep what the status says (stable reports)."""
        for kept in ("modelSources", "profile", "resolvedHardware", "discoveryJob"):
            if status.get(kept) is not None:
                fields[kept] = status[kept]
        for kept_type in (DISCOVERED, DISCOVERY_JOB_READY, DISCOVERY_PODS_READY):
            cond = _condition(status, kept_type)
            if cond is not None:
                conditions.append(
                    ConditionReport(
                        type=kept_type,
                        status=str(cond.get("status")),
                        reason=str(cond.get("reason")),
                        message=str(cond.get("message") or ""),
                    )
                )
        await self._cache(request, template, list(status.get("modelSources") or []), fields)
        await self._report(request, conditions, fields, "discovery", DISCOVERY_COMPLETE, "discovered")
        return None

    # -- cache ----------------------------------------------------------------------------------

    async def _cache(
        self,
        request: Request,
        template: TemplateView,
        sources: Sequence[Mapping[str, Any]],
        fields: dict[str, Any],
    ) -> None:
        """``caching.enabled`` on a namespaced template: its AIMTemplateCache, named like it."""
        if not (request.ref.namespaced and template.caching_enabled):
            return
        kind = by_kind(request.ref.group, "AIMTemplateCache")
        caching = template.spec.get("caching") or {}
        spec: dict[str, Any]
        if request.ref.group == AIM:
            spec = {"templateName": template.name, "templateScope": "Namespace", "mode": "Shared"}
            if sources:
                spec["modelSources"] = [dict(s) for s in sources]
        else:
            spec = {"templateRef": template.name}
        env = caching.get("env") if isinstance(caching, Mapping) else None
        if env:
            spec["env"] = env
        if template.pull_secrets:
            spec["imagePullSecrets"] = [{"name": s} for s in template.pull_secrets]
        if template.spec.get("runtimeConfigName"):
            spec["runtimeConfigName"] = template.spec["runtimeConfigName"]
        body = {
            "apiVersion": kind.api_version,
            "kind": kind.kind,
            "metadata": {
                "name": template.name,
                "namespace": template.namespace,
                "labels": {
                    "aim.eai.amd.com/template": label_value(template.name),
                    **child_labels(TEMPLATE_CONTROLLER),
                },
                "ownerReferences": [owner_reference(request.ref, request.obj)],
            },
            "spec": spec,
        }
        existing = request.informer.get(kind, template.namespace, template.name)
        if existing is None or not contains(existing.get("spec"), spec):
            # a refused cache is left out (the template is usable without it): the audit stream
            # says why, and the same body is not sent again
            if self.children.refused_before(kind, body) is not None:
                return
            # not recorded: the template reads its cache (and its uid) back from the cache
            found = await self.children.write(request, kind, body, record=False)
            if isinstance(found, Refusal):
                await request.reporter.decide(
                    request.ref,
                    request.obj,
                    "create-cache-failed",
                    "CacheCreateForbidden" if found.forbidden else "CacheCreateRejected",
                    f"AIMTemplateCache {template.name}: {found.describe()}",
                )
                return
            await request.reporter.decide(
                request.ref,
                request.obj,
                "create-cache",
                "TemplateCacheApplied",
                f"AIMTemplateCache {template.name}",
            )
            existing = request.informer.get(kind, template.namespace, template.name)
        ref: dict[str, Any] = {"name": template.name, "namespace": template.namespace, "kind": kind.kind}
        if existing is not None and existing["metadata"].get("uid"):
            ref["uid"] = existing["metadata"]["uid"]
        fields["resolvedCache"] = ref

    # -- cluster reads --------------------------------------------------------------------------

    def _jobs(self, request: Request, template: TemplateView, namespace: str) -> list[dict[str, Any]]:
        token = template_kind_token(request.ref)
        uid = request.obj["metadata"].get("uid")
        out = []
        for job in request.informer.list(
            JOB, namespace, labels={dryrun.LABEL_TEMPLATE: label_value(template.name)}
        ):
            owners = job["metadata"].get("ownerReferences") or []
            if _annotation(job, ANNOTATION_TEMPLATE_KIND) == token and any(
                o.get("uid") == uid for o in owners
            ):
                out.append(job)
        return out

    def _pods(self, request: Request, namespace: str, job_name: str) -> list[dict[str, Any]]:
        return request.informer.list(POD, namespace, labels={"job-name": job_name})

    def _job_state(self, request: Request, key: str) -> str:
        namespace, _, name = key.partition("/")
        job = request.informer.get(JOB, namespace, name)
        if job is None:
            return UNKNOWN
        return RUNNING if jobs.job_state(job) == jobs.STATE_ACTIVE else FINISHED

    async def _log(
        self, namespace: str, pods: Sequence[Mapping[str, Any]], *, tail_lines: int | None
    ) -> str | None:
        for pod in pods:
            name = pod["metadata"]["name"]
            if not (pod.get("spec") or {}).get("nodeName"):
                continue
            try:
                return await self.kube.pod_log(
                    namespace, name, container=dryrun.CONTAINER_NAME, tail_lines=tail_lines
                )
            except ApiException as exc:
                log.info("log of pod %s/%s unavailable: %s %s", namespace, name, exc.status, exc.reason)
        return None

    async def _delete_job(self, job: Mapping[str, Any]) -> None:
        meta = job["metadata"]
        try:
            await self.kube.delete(JOB, meta.get("namespace"), meta["name"])
        except ApiException as exc:
            if exc.status != 404:
                raise

    async def _report(  # noqa: PLR0917
        self,
        request: Request,
        conditions: Sequence[ConditionReport],
        fields: dict[str, Any],
        action: str,
        reason: str,
        message: str,
        **details: Any,
    ) -> None:
        if isinstance(fields.get("resolvedHardware"), Mapping):
            fields["hardwareSummary"] = hardware_summary(fields["resolvedHardware"])
        kept = {k: v for k, v in fields.items() if has_status_field(request.ref.group, request.ref.kind, k)}
        if await request.reporter.report(request.ref, request.obj, conditions, kept):
            await request.reporter.decide(request.ref, request.obj, action, reason, message, **details)


# -- helpers ---------------------------------------------------------------------------------------


def _model_field(ref: KindRef) -> str:
    return "resolvedModel" if ref.group == AIM else "resolvedImage"


def _annotation(obj: Mapping[str, Any], key: str) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None


def _condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def resolved_hardware(template: TemplateView, model: str | None, requests: int | None) -> dict[str, Any]:
    """``status.resolvedHardware``, for every template: the GPU it runs on (discovery's output over
    the spec; ``requests: 0`` when it needs none) and its CPU when the spec gives one (from
    ``spec.resources`` or ``spec.hardware.cpu``; a limit alone is also the request, as in a Pod)."""
    requirement = template.gpu
    gpu: dict[str, Any] = {"resourceName": requirement.resource_name}
    if requests is not None:
        gpu["requests"] = requests
    if model:
        gpu["model"] = model
    elif requirement.min_vram is not None:
        gpu["minVram"] = requirement.min_vram
    resolved: dict[str, Any] = {}
    if requirement.required or model or requests:
        resolved["gpu"] = gpu
    cpu = template.cpu
    if cpu is not None:
        resolved["cpu"] = {"requests": cpu.get("requests", cpu.get("limits")), **cpu}
    if not resolved:  # CPU-only, nothing said about CPU: no GPU is the one thing known
        resolved["gpu"] = {"requests": 0, "resourceName": requirement.resource_name}
    return resolved


def hardware_summary(resolved: Mapping[str, Any]) -> str:
    """``status.hardwareSummary`` from ``status.resolvedHardware``: ``2 x MI300X``, ``MI300X`` (no
    GPU resources), ``2 x GPU`` (any model) or ``CPU``."""
    gpu = resolved.get("gpu")
    gpu = gpu if isinstance(gpu, Mapping) else {}
    requests = gpu.get("requests")
    return gpus.hardware_summary(
        str(gpu.get("model") or "") or None, requests if isinstance(requests, int) else None
    )


def _spec_profile(template: TemplateView, requirement: GPURequirement) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for key in ("metric", "precision", "type"):
        if template.spec.get(key):
            metadata[key] = template.spec[key]
    if requirement.model:
        metadata["gpu"] = requirement.model
    if requirement.requests is not None:
        metadata["gpuCount"] = requirement.requests
    return {"metadata": metadata} if metadata else {}
