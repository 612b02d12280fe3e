"""How the Model reconciler and its parts say what they observed: an observation composed into
LLMKube's status (:func:`.state.compose`) and sent, with the decision it records when the report is
new; and how long a failed fetch or verify round waits before the next attempt."""

from __future__ import annotations

from aim_cache.llmkube import state
from aim_cache.llmkube.settings import ModelSettings
from aim_cache_jobs.downloader.errors import PERMANENT_REASONS
from aimcore.api.backoff import Backoff, jitter_key
from aimcore.api.crds.llmkube import Model
from aimcore.api.types import Obj
from aimcore.runtime import Request

Decision = tuple[str, str, str]
"""``(action, reason, message)`` of an audit decision."""

USER_FIXES = PERMANENT_REASONS | {state.INTEGRITY_CHECK_FAILED, "SourceNotAllowed"}
"""Reasons only a user can fix: retrying at the short delay would only repeat the failure."""


class ModelReports:
    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings

    async def report(
        self, request: Request[Model], obs: state.Observed, decision: Decision | None = None
    ) -> None:
        fields, conditions = state.compose(obs)
        sent = await request.reporter.report(request.ref, request.obj, conditions, fields)
        if sent and decision is not None:
            await request.reporter.decide(request.ref, request.obj, *decision)

    def backoff(self, attempt: int, reason: str, obj: Obj) -> float:
        """``AIM_LLMKUBE_RETRY_SECONDS`` doubling to ``..._RETRY_MAX_SECONDS`` (jitter keyed by the
        Model, so a deadline recomputed from a recorded failure stays put); a failure only a user can
        fix waits the maximum."""
        top = self.settings.retry_max_seconds
        if reason in USER_FIXES:
            return top
        schedule = Backoff(base=self.settings.retry_seconds, cap=top)
        return schedule.delay(max(attempt, 1), jitter=jitter_key(obj))
