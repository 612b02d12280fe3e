"""``pvc://`` Models: the claim must exist (``PVCNotFound``, checked again in 15 s) and be bound
(``PVCNotBound``, Pending, 10 s). Nothing is copied: rounds of verify Jobs (:mod:`.verify`) mount
the claim read-only and report the file's size, mtime, sha256 and GGUF header; the Model is Ready at
``/model-source/<path>`` once a round succeeded and its sha256 equals ``spec.sha256`` when given
(``IntegrityCheckFailed`` otherwise). Rounds repeat every ``AIM_LLMKUBE_REVALIDATE_SECONDS`` (an
unchanged file is not re-read; a changed one is re-hashed and flagged ``SourceDrifted``); a failed
round is retried with the reconciler's backoff. The Jobs are the record: the newest round and the
newest that described the file are kept, the others deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from aim_cache.joblog import JobLogs
from aim_cache.llmkube import drift, state, verify
from aim_cache.llmkube.reporting import ModelReports
from aim_cache.llmkube.runs import spec_hash
from aim_cache.llmkube.settings import ModelSettings
from aim_cache.llmkube.sources import Source
from aim_cache_jobs.contract import Known
from aimcore.api.crds.llmkube import Model
from aimcore.api.kinds import JOB, POD, PVC
from aimcore.api.types import Obj
from aimcore.domain import jobs
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.runtime import (
    ApiException,
    Children,
    How,
    Kube,
    Refusal,
    Request,
    Result,
    describe_error,
    owned_by,
    refused_message,
    refused_reason,
)

PVC_NOT_FOUND = "PVCNotFound"
PVC_NOT_BOUND = "PVCNotBound"
PVC_MOUNT = verify.MOUNT
PVC_NOT_FOUND_SECONDS = 15.0


@dataclass(frozen=True)
class _Claim:
    """What one reconcile verifies: the Model's file in a bound claim, for one spec."""

    request: Request[Model]
    model: LLMKubeModel
    source: Source
    claim_uid: str
    digest: str  # the spec's (a new spec starts the rounds over)

    @property
    def path(self) -> str:
        return f"{PVC_MOUNT}/{self.source.path}"


class ClaimVerification:
    def __init__(
        self, kube: Kube, settings: ModelSettings, reports: ModelReports, clock: Callable[[], float]
    ) -> None:
        self.kube, self.settings, self.reports, self.clock = kube, settings, reports, clock
        self.logs = JobLogs(kube)
        self.children = Children(kube)  # writes the verify Jobs; keeps those refused

    async def reconcile(
        self, request: Request[Model], model: LLMKubeModel, base: state.Observed, source: Source
    ) -> Result | None:
        """The claim's state, then its verify rounds."""
        assert source.claim is not None and source.path is not None
        try:
            pvc = await self.kube.get(PVC, request.namespace, source.claim)
        except ApiException as exc:
            if exc.status != 404:
                message = f"cannot read claim {source.claim}: {describe_error(exc)}"
                await self.reports.report(request, replace(base, pending=(PVC_NOT_BOUND, message)))
                return Result(requeue_after=10.0)
            pvc = None
        if pvc is None:
            message = f"PersistentVolumeClaim {source.claim} does not exist in {request.namespace}"
            obs = replace(base, failure=state.Failure(PVC_NOT_FOUND, message, PVC_NOT_FOUND_SECONDS))
            await self.reports.report(request, obs, ("reject", PVC_NOT_FOUND, message))
            return Result(requeue_after=PVC_NOT_FOUND_SECONDS)
        phase = (pvc.get("status") or {}).get("phase")
        if phase != "Bound":
            message = f"PersistentVolumeClaim {source.claim} is {phase or 'not bound yet'}"
            await self.reports.report(request, replace(base, pending=(PVC_NOT_BOUND, message)))
            return Result(requeue_after=10.0)
        claim = _Claim(request, model, source, str(pvc["metadata"].get("uid", "")), spec_hash(model))
        return await self._verify(claim, base)

    async def _verify(self, claim: _Claim, base: state.Observed) -> Result | None:
        """Rounds of verify Jobs that read the claim's file in place (:mod:`.verify`)."""
        request, ns = claim.request, str(claim.request.namespace)
        now = self.clock()
        owned = verify.verify_jobs(request.informer.list(JOB, ns), claim.model.uid or "")
        current, stale = verify.split(owned, claim.digest, claim.claim_uid)
        latest = current[-1] if current else None
        record: Obj | None = None  # the newest round that described the file
        verdict: verify.Verdict | None = None
        for job in reversed(current):
            if jobs.job_state(job) == jobs.STATE_SUCCEEDED:
                found = await self._verdict(request, job)
                if isinstance(found, verify.Verdict):
                    record, verdict = job, found
                    break
        for job in [*stale, *(j for j in current if j is not latest and j is not record)]:
            await self.kube.delete(JOB, ns, job["metadata"]["name"])
        obs, next_round = self._observed(claim, base, record, verdict, now)
        known = verdict.known if verdict is not None else None

        if latest is None:
            return await self._new_round(claim, obs, 1, 1, known)
        phase = jobs.job_state(latest)
        if phase == jobs.STATE_ACTIVE:
            pods = self._pods(request, latest)
            progress = jobs.pod_progress(pods, what="verify", container=verify.CONTAINER)
            summary = (
                progress[1] if progress else f"verify Job {latest['metadata']['name']} reads {claim.path}"
            )
            fetching = state.Fetching("verify", False, summary, verify.attempt_of(latest))
            await self.reports.report(request, replace(obs, fetching=fetching))
            return None
        if latest is record:
            if now >= next_round:
                return await self._new_round(claim, obs, verify.round_of(latest) + 1, 1, known)
            decision = None
            if obs.failure is not None:
                decision = ("verify-failed", obs.failure.reason, obs.failure.message)
            await self.reports.report(request, obs, decision)
            return Result(requeue_after=max(1.0, next_round - now))
        return await self._failed_round(claim, obs, latest, known, now)

    def _observed(
        self,
        claim: _Claim,
        base: state.Observed,
        record: Obj | None,
        verdict: verify.Verdict | None,
        now: float,
    ) -> tuple[state.Observed, float]:
        """What the newest round that described the file says (nothing yet: ``base``), and when
        the next round is due."""
        if record is None or verdict is None:
            return base, now
        source, expected = claim.source, claim.model.expected_sha256
        verified_at = _finished(record, now)
        next_round = verified_at + self.settings.revalidate_seconds
        obs = replace(
            base,
            gguf=verdict.gguf,
            fingerprint=drift.Fingerprint(length=verdict.size, mtime=verdict.mtime),
            last_revalidated=state.stamp(verified_at),
            drift=_pvc_drift(verify.known_of(record), verdict),
        )
        if expected is not None and verdict.sha256 != expected:
            message = (
                f"sha256 of {claim.path} in claim {source.claim} is {verdict.sha256}, spec.sha256 is "
                f"{expected}; the file is the claim owner's and was left as it is"
            )
            failure = state.Failure(state.INTEGRITY_CHECK_FAILED, message, next_round - now)
            return replace(obs, failure=failure), next_round
        cached = state.Cached(
            path=claim.path,
            size=verdict.size,
            sha256=verdict.sha256,
            verified=expected is not None,
            completed_at=state.stamp(verified_at),
            mounted=f"claim {source.claim} is mounted read-only at {PVC_MOUNT} by the workload",
        )
        return replace(obs, cached=cached), next_round

    async def _failed_round(
        self, claim: _Claim, obs: state.Observed, latest: Obj, known: Known | None, now: float
    ) -> Result | None:
        """The newest round failed (or left no verdict): why, and a new round once its backoff is
        over."""
        request, ns, name = claim.request, str(claim.request.namespace), latest["metadata"]["name"]
        pods = self._pods(request, latest)
        outcome = await self.logs.outcome(ns, latest, pods, verify.CONTAINER)
        found = verify.read_verdict(outcome)
        if isinstance(found, verify.Refusal):  # the tool ran and says what is wrong with the file
            reason, message = found.reason, f"{found.message} (claim {claim.source.claim})"
            obs = replace(obs, cached=None)  # the last verification no longer describes the file
        elif jobs.job_state(latest) == jobs.STATE_SUCCEEDED:
            reason, message = "VerifyFailed", f"verify Job {name} succeeded but left no verdict in its log"
        else:
            reason, message = jobs.classify_failure(
                latest, pods, outcome.get("_log"), what="verify", container=verify.CONTAINER
            )
        attempt = verify.attempt_of(latest)
        due = _finished(latest, now) + self.reports.backoff(attempt, reason, request.obj)
        if now >= due:
            return await self._new_round(claim, obs, verify.round_of(latest) + 1, attempt + 1, known)
        obs = replace(obs, failure=state.Failure(reason, message, due - now))
        await self.reports.report(request, obs, ("verify-failed", reason, message))
        return Result(requeue_after=due - now)

    async def _new_round(
        self, claim: _Claim, obs: state.Observed, round_: int, attempt: int, known: Known | None
    ) -> Result | None:
        request, source = claim.request, claim.source
        assert source.claim is not None and source.path is not None
        body = verify.job_body(
            request.ref,
            request.obj,
            claim=source.claim,
            claim_uid=claim.claim_uid,
            path=source.path,
            spec_digest=claim.digest,
            round_=round_,
            attempt=attempt,
            known=known,
            image=self.settings.verify_image,
        )
        # one already there was made by an earlier run whose event has not reached the cache yet;
        # not recorded: the Job is read back from the cache
        written = await self.children.write(request, JOB, body, how=How.CREATE, record=False)
        if isinstance(written, Refusal):
            reason = refused_reason("VerifyJob", written)
            message = refused_message(JOB, body, written, update=False)
            retry = self.reports.backoff(attempt, reason, request.obj) if written.forbidden else None
            failure = state.Failure(reason, message, retry)
            await self.reports.report(
                request, replace(obs, failure=failure), ("verify-failed", reason, message)
            )
            return None if retry is None else Result(requeue_after=retry)
        name = body["metadata"]["name"]
        what = "re-verifies" if known is not None else "verifies"
        summary = f"verify Job {name} {what} {claim.path} (attempt {attempt})"
        decision = ("verify", state.VERIFYING, summary) if known is None or attempt > 1 else None
        fetching = state.Fetching("verify", False, summary, attempt)
        await self.reports.report(request, replace(obs, failure=None, fetching=fetching), decision)
        return None

    async def _verdict(self, request: Request[Model], job: Obj) -> verify.Verdict | verify.Refusal | None:
        namespace = str(request.namespace)
        outcome = await self.logs.outcome(namespace, job, self._pods(request, job), verify.CONTAINER)
        return verify.read_verdict(outcome)

    @staticmethod
    def _pods(request: Request[Model], job: Obj) -> list[Obj]:
        job_uid = str(job["metadata"].get("uid", ""))
        return [p for p in request.informer.list(POD, request.namespace) if owned_by(p, job_uid)]


def _finished(job: Obj, default: float) -> float:
    ended = jobs.finished_at(job)
    return ended.timestamp() if ended is not None else default


def _pvc_drift(known: Known | None, verdict: verify.Verdict) -> tuple[str, str, str]:
    """``SourceDrifted`` for a claim's file: compared with the round before (whose result the
    newest round was given as ``--known``)."""
    now = drift.Fingerprint(length=verdict.size, mtime=verdict.mtime)
    if known is None:
        return ("False", drift.REASON_IN_SYNC, f"verified {drift.shown(now)}")
    before = drift.Fingerprint(length=known.size, mtime=known.mtime)
    if drift.compare(before, now) == "drifted":
        detail = drift.describe(before, now)
        return (
            "True",
            drift.REASON_DRIFTED,
            f"the file in the claim changed since the previous verification ({detail}); sha256 is now "
            f"{verdict.sha256}",
        )
    return ("False", drift.REASON_IN_SYNC, f"unchanged since the previous verification ({drift.shown(now)})")
