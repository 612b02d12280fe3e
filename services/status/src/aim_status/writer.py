"""Applies one status report to the cluster: fresh read, merge, conditional status patch, retry on
conflict, nothing written when nothing changes, and paused or replaced objects left alone."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from opentelemetry import trace

from aimcore.bus.errors import TransientError
from aimcore.bus.messages import StatusReport
from aimcore.kinds import by_kind
from aimcore.kube.client import ApiException, Kube
from aimcore.status.compose import is_paused, status_patch

log = logging.getLogger(__name__)
tracer = trace.get_tracer("aim.status")

MAX_CONFLICTS = 5


class StatusWriter:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.writes = 0
        self.noops = 0

    async def apply(self, report: StatusReport) -> bool:
        """Write the report; True if the API server was written to."""
        ref = by_kind(report.object.group, report.object.kind)
        ns, name = report.object.namespace, report.object.name
        with tracer.start_as_current_span(f"write status {ref.kind}") as span:
            span.set_attribute("k8s.object", report.object.display)
            for _ in range(MAX_CONFLICTS):
                obj = await self.kube.get(ref, ns, name)
                if obj is None or (report.uid and obj["metadata"].get("uid") != report.uid):
                    return False  # deleted, or a new object under the same name
                if is_paused(obj):
                    return False
                patch = status_patch(obj, report, datetime.now(UTC))
                if patch is None:
                    self.noops += 1
                    return False
                try:
                    await self.kube.patch_status(ref, ns, name, patch)
                except ApiException as exc:
                    if exc.status == 409:
                        continue
                    if exc.status == 404:
                        return False
                    raise
                self.writes += 1
                return True
        raise TransientError(f"status of {report.object.display}: {MAX_CONFLICTS} conflicts in a row")
