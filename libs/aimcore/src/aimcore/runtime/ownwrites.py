"""The children a replica's reconciles wrote, at the versions the API server returned, so the change
events of those writes do not run the same reconcile again (for the deployer: a second full
reconcile per new InferenceService); a reconcile that fails withdraws its own."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from aimcore.api.bus.messages import ChangeEvent, ChangeType
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj

_WriteKey = tuple[str, str, str | None, str]  # group, kind, namespace, name


class OwnWrites:
    """The children this replica wrote, at the resourceVersion the API server returned.

    A child's change event at exactly that version describes what the reconcile that wrote it
    already knew, so mapping it back to the owner would only repeat that reconcile (for the
    deployer: a second full reconcile per new InferenceService). Events at any other version (the
    child's status moving on, someone else's edit) are mapped as usual. Bounded: forgetting an
    entry only costs the repeat."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._versions: OrderedDict[_WriteKey, str] = OrderedDict()

    def record(self, ref: KindRef, obj: Obj) -> tuple[_WriteKey, str] | None:
        """Remember ``obj`` as written here; what was recorded (for :meth:`forget`)."""
        meta = obj.get("metadata") or {}
        version = meta.get("resourceVersion")
        if not version:
            return None
        key = (ref.group, ref.kind, meta.get("namespace"), str(meta.get("name")))
        self._versions[key] = str(version)
        self._versions.move_to_end(key)
        while len(self._versions) > self.LIMIT:
            self._versions.popitem(last=False)
        return key, str(version)

    def forget(self, recorded: Iterable[tuple[_WriteKey, str]]) -> None:
        """Forget writes recorded before, unless a later write of the same child replaced them."""
        for key, version in recorded:
            if self._versions.get(key) == version:
                del self._versions[key]

    def consume(self, event: ChangeEvent) -> bool:
        """True (once) if ``event`` is a child's change this replica wrote itself."""
        key = (event.object.group, event.object.kind, event.object.namespace, event.object.name)
        if event.change is ChangeType.DELETED or self._versions.get(key) != event.resource_version:
            return False
        del self._versions[key]
        return True


class RunWrites:
    """The children one reconcile writes, recorded in its replica's :class:`OwnWrites` at once
    (their change events may arrive before the reconcile ends) and forgotten if the reconcile
    fails: a child's event is only "already known" to a reconcile that completed. Before, the
    event of a child written by a reconcile that then failed was skipped by the replica that wrote
    it, while the failed reconcile's retry went to the other replica: nothing ran again."""

    def __init__(self, own: OwnWrites | None = None) -> None:
        self.own = own if own is not None else OwnWrites()
        self._recorded: list[tuple[_WriteKey, str]] = []

    def record(self, ref: KindRef, obj: Obj) -> None:
        recorded = self.own.record(ref, obj)
        if recorded is not None:
            self._recorded.append(recorded)

    def withdraw(self) -> None:
        """The reconcile failed: its writes are news to it after all."""
        self.own.forget(self._recorded)
        self._recorded.clear()
