"""What the watcher mirrors, and of which kinds a resync republishes every object."""

from __future__ import annotations

from aim_watcher.app import watched
from aimcore.api.kinds import CHILD_KINDS, CHILD_SELECTOR, NODE, crd_kinds


def test_a_resync_republishes_the_kinds_services_reconcile_and_not_children_or_nodes() -> None:
    kinds = {kind.ref: kind for kind in watched()}
    assert set(kinds) == {*crd_kinds(), *CHILD_KINDS, NODE}
    assert all(kinds[ref].reconciled and kinds[ref].selector is None for ref in crd_kinds())
    assert all(not kinds[ref].reconciled and kinds[ref].selector == CHILD_SELECTOR for ref in CHILD_KINDS)
    assert not kinds[NODE].reconciled
