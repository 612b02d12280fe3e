"""What a finished Job's pod said last: the JSON line its command printed, read once per Job.

The cache service's Jobs (model-cache downloads, the verify Jobs of ``pvc://`` Models) end by
printing one JSON object; the controllers read it back through the API server (``pods/log``, the
only thing they read outside the watcher's mirror) and keep it per Job uid, since a finished Job's
log never changes. The raw tail travels along (``"_log"``) for failure classification.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from aim_cache.memo import remember
from aimcore.domain import jobs
from aimcore.runtime import ApiException, Kube, describe_error

log = logging.getLogger(__name__)


class JobLogs:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._outcomes: OrderedDict[str, dict[str, Any]] = OrderedDict()  # job uid → last log JSON

    async def outcome(
        self, namespace: str, job: dict[str, Any], pods: Sequence[dict[str, Any]], container: str
    ) -> dict[str, Any]:
        """The last JSON line of the newest pod's ``container`` log (``{}`` if none), with the tail
        under ``"_log"``; cached per Job."""
        job_uid = str(job["metadata"].get("uid"))
        if job_uid in self._outcomes:
            return self._outcomes[job_uid]
        outcome: dict[str, Any] = {}
        newest = max(pods, key=lambda p: str(p["metadata"].get("creationTimestamp", "")), default=None)
        if newest is not None:
            try:
                text = await self.kube.pod_log(
                    namespace, newest["metadata"]["name"], container=container, tail_lines=20
                )
            except ApiException as exc:
                log.info("no log for %s: %s", newest["metadata"]["name"], describe_error(exc))
                text = None
            parsed = jobs.last_json_line(text)
            outcome = dict(parsed) if parsed else {}
            outcome["_log"] = text
            if text is None:
                return outcome  # not remembered: the log may be readable on the next reconcile
        remember(self._outcomes, job_uid, outcome)
        return outcome
