"""The watcher: the only process that watches the Kubernetes API (:mod:`aim_watcher.watching`:
the topology, the leader election, one list/watch loop per kind). It watches every kind of the
three API groups, the children the services create (selected by label), and Nodes; the history
it keeps is :class:`~aimcore.runtime.settings.history.HistorySettings`."""

from __future__ import annotations

import asyncio

from aim_watcher import watching
from aim_watcher.settings import SETTINGS
from aim_watcher.watching import WatchedKind
from aimcore.api.kinds import CHILD_KINDS, CHILD_SELECTOR, NODE, crd_kinds
from aimcore.runtime import ServiceContext, run_service
from aimcore.runtime.settings.history import HistorySettings


def watched() -> list[WatchedKind]:
    """Everything the watcher mirrors: the kinds the services reconcile, their children (by
    label) and Nodes."""
    return [
        *(WatchedKind(ref) for ref in crd_kinds()),
        *(WatchedKind(ref, CHILD_SELECTOR, reconciled=False) for ref in CHILD_KINDS),
        WatchedKind(NODE, reconciled=False),
    ]


async def main(ctx: ServiceContext) -> None:
    await watching.run(ctx, watched(), ctx.settings.get(HistorySettings).retention())


def run() -> None:
    asyncio.run(run_service("watcher", main, needs_kube=True, concerns=SETTINGS))
