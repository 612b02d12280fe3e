"""A template's discovery Jobs: the dry run that finds the model sources and the profile of a
template that has none in its spec (:mod:`aim_discovery.dryrun` builds the Job and reads its log).

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
from dataclasses import dataclass
from typing import Any

from aim_discovery import dryrun
from aim_discovery.catalog import TEMPLATE_CONTROLLER
from aim_discovery.slots import FINISHED, RUNNING, UNKNOWN, Slots
from aim_discovery.template_cache import TemplateCache
from aim_discovery.template_status import (
    AWAITING_DISCOVERY,
    DISCOVERED,
    DISCOVERY_COMPLETE,
    DISCOVERY_JOB_READY,
    DISCOVERY_PODS_READY,
    INVALID_OUTPUT,
    JOB_COMPLETE,
    JOB_CREATE_FAILED,
    LOG_UNAVAILABLE,
    WAITING_FOR_SLOT,
    report,
    resolved_hardware,
)
from aimcore.api.backoff import jitter_key
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import JOB, POD, KindRef, by_kind
from aimcore.domain import jobs
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template
from aimcore.domain.naming import label_value
from aimcore.domain.runtimeconfig import Resolved, merge_env, secret_names
from aimcore.runtime import (
    ApiException,
    Children,
    How,
    Kube,
    Refusal,
    Request,
    Result,
    child_labels,
    owner_reference,
)

log = logging.getLogger(__name__)

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


def awaiting(reason: str, message: str, waiting: str | None = None) -> list[ConditionReport]:
    """The discovery Job is not done (``reason``, ``message``): the template is not discovered yet
    (``waiting``: what to say there, the same message by default)."""
    return [
        ConditionReport(type=DISCOVERY_JOB_READY, status="False", reason=reason, message=message),
        ConditionReport(
            type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message=waiting or message
        ),
    ]


def invalid_output(message: str) -> list[ConditionReport]:
    """The discovery Job's output is unusable (``message`` says why): the template fails until its
    spec changes."""
    return [
        ConditionReport(type=DISCOVERED, status="False", reason=INVALID_OUTPUT, message=message),
        ConditionReport(type=DISCOVERY_JOB_READY, status="False", reason=INVALID_OUTPUT, message=message),
    ]


def running(job_name: str, attempt: int, pods: Sequence[Mapping[str, Any]]) -> list[ConditionReport]:
    """The discovery Job ``job_name`` (attempt ``attempt``) is running; its pods' progress."""
    progress = dryrun.pod_progress(pods) or (jobs.REASON_JOB_RUNNING, f"Job {job_name} created")
    return [
        ConditionReport(
            type=DISCOVERY_JOB_READY,
            status="False",
            reason=jobs.REASON_JOB_RUNNING,
            message=f"Job {job_name} (attempt {attempt}) is running",
        ),
        ConditionReport(type=DISCOVERY_PODS_READY, status="False", reason=progress[0], message=progress[1]),
        ConditionReport(
            type=DISCOVERED, status="False", reason=AWAITING_DISCOVERY, message="Discovery job running"
        ),
    ]


def discovery_hash(template: Template, model: Model) -> str:
    """The hash of what a discovery Job's outcome depends on: a new one starts again at attempt 1."""
    requirement = template.gpu
    return dryrun.spec_hash(
        template.model_name,
        model.image,
        template.metric,
        template.precision,
        requirement.model,
        requirement.requests,
        template.profile_id,
    )


@dataclass(eq=False)
class DiscoveryJobs:
    """Runs a template's discovery: the Job for its current spec (one at a time per spec, within the
    cluster-wide slots), its progress, its output read into the status, its retries."""

    kube: Kube
    system_namespace: str
    slots: Slots
    children: Children
    cache: TemplateCache
    clock: Callable[[], float] = time.time

    async def discover(  # noqa: PLR0917
        self,
        request: Request,
        template: Template,
        model: Model,
        config: Resolved,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        spec_hash = discovery_hash(template, model)
        recorded = str((template.discovery_job or {}).get("name") or "")
        namespace = template.namespace or self.system_namespace
        owned = self._jobs(request, template, namespace)
        current = [j for j in owned if _annotation(j, dryrun.ANNOTATION_SPEC_HASH) == spec_hash]
        for stale in (j for j in owned if j not in current):
            await self._delete_job(stale)

        discovered = template.condition(DISCOVERED)
        if f"-{spec_hash}-" in recorded and discovered is not None:
            if discovered.reason == DISCOVERY_COMPLETE and template.discovered_sources:
                for job in current:  # the output is in the status now: the Job has done its part
                    if jobs.job_state(job) == jobs.STATE_SUCCEEDED:
                        await self._delete_job(job)
                return await self._discovered(request, template, conditions, fields)
            if discovered.reason == INVALID_OUTPUT:
                conditions += invalid_output(discovered.message)
                fields["discoveryJob"] = template.discovery_job
                await report(request, conditions, fields, "discovery", INVALID_OUTPUT, discovered.message)
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
            conditions += running(job_name, attempt, pods)
            await report(request, conditions, fields, "discovery", jobs.REASON_JOB_RUNNING, job_name)
            return None
        if state == jobs.STATE_SUCCEEDED:
            return await self._read_output(request, template, namespace, latest, pods, conditions, fields)
        # failed: wait out the backoff, then the next attempt replaces this Job
        waiting = await self._backing_off(request, namespace, latest, attempt, pods, conditions, fields)
        if waiting is not None:
            return waiting
        return await self._start(
            request, template, model, config, namespace, spec_hash, attempt + 1, latest, conditions, fields
        )

    async def _backing_off(  # noqa: PLR0917
        self,
        request: Request,
        namespace: str,
        job: dict[str, Any],
        attempt: int,
        pods: Sequence[dict[str, Any]],
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        """A failed Job: while its backoff lasts, say why it failed and when the next attempt
        runs (the requeue); ``None`` once the next attempt, which replaces it, is due."""
        tail = await self._log(namespace, pods, tail_lines=LOG_TAIL_LINES)
        reason, message = dryrun.classify_failure(job, pods, tail)
        ended = jobs.finished_at(job)
        retry = dryrun.JOB_RETRY.delay(attempt, jitter=jitter_key(request.obj))
        due = (ended.timestamp() if ended else self.clock()) + retry
        wait = due - self.clock()
        if wait <= 0:
            return None
        note = jobs.retry_note(attempt, due)
        conditions += awaiting(reason, f"{message} ({note})", f"Waiting: {note}")
        await report(request, conditions, fields, "discovery-failed", reason, message, attempt=attempt)
        return Result(requeue_after=wait)

    async def _start(  # noqa: PLR0917
        self,
        request: Request,
        template: Template,
        model: Model,
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
        env = merge_env(merge_env(model.written_env, config.get("env") or []), template.written_env)
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
            profile_id=template.profile_id,
            metric=template.metric,
            precision=template.precision,
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
            conditions += awaiting(WAITING_FOR_SLOT, message)
            await report(request, conditions, fields, "discovery", WAITING_FOR_SLOT, message)
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
                conditions += awaiting(JOB_CREATE_FAILED, message)
                await report(request, conditions, fields, "discovery", JOB_CREATE_FAILED, message)
                return Result(requeue_after=dryrun.JOB_RETRY.delay(attempt, jitter=jitter_key(request.obj)))
            raise
        if isinstance(created, Refusal):
            await self.slots.release(f"{namespace}/{name}")
            return await self._job_refused(request, namespace, name, created, conditions, fields, attempt)
        fields["discoveryJob"] = {"name": name, "namespace": namespace, "kind": "Job"}
        message = f"Discovery Job {name} created (attempt {attempt})"
        conditions += awaiting(jobs.REASON_JOB_RUNNING, message)
        await report(request, conditions, fields, "create-discovery-job", jobs.REASON_JOB_RUNNING, message)
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
        conditions += awaiting(JOB_CREATE_FAILED, message)
        await report(request, conditions, fields, "discovery", JOB_CREATE_FAILED, message)
        if not found.forbidden:
            return None
        return Result(requeue_after=dryrun.JOB_RETRY.delay(attempt, jitter=jitter_key(request.obj)))

    async def _read_output(  # noqa: PLR0917
        self,
        request: Request,
        template: Template,
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
            conditions += awaiting(LOG_UNAVAILABLE, message)
            await report(request, conditions, fields, "discovery", LOG_UNAVAILABLE, message)
            return Result(requeue_after=LOG_RETRY)
        try:
            result = dryrun.parse_output(text)
        except dryrun.DiscoveryOutputError as exc:
            message = f"Discovery Job {job_name} output is unusable: {exc.message}"
            conditions += invalid_output(message)
            await report(request, conditions, fields, "discovery-failed", INVALID_OUTPUT, message)
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
        await self.cache.ensure(request, template, result.model_sources, fields)
        await report(
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
        template: Template,
        conditions: list[ConditionReport],
        fields: dict[str, Any],
    ) -> Result | None:
        """Discovery already done for this spec: keep what the status says (stable reports)."""
        fields.update(template.discovery_output())
        for kept_type in (DISCOVERED, DISCOVERY_JOB_READY, DISCOVERY_PODS_READY):
            cond = template.condition(kept_type)
            if cond is not None:
                conditions.append(
                    ConditionReport(
                        type=kept_type, status=cond.status, reason=cond.reason, message=cond.message
                    )
                )
        await self.cache.ensure(request, template, template.discovered_sources, fields)
        await report(request, conditions, fields, "discovery", DISCOVERY_COMPLETE, "discovered")
        return None

    # -- cluster reads --------------------------------------------------------------------------

    def _jobs(self, request: Request, template: Template, namespace: str) -> list[dict[str, Any]]:
        token = template_kind_token(request.ref)
        uid = template.uid
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


def _annotation(obj: Mapping[str, Any], key: str) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None
