"""How an informer indexes the objects it keeps: by owner (always), by a field of the stored object
(:func:`field_indexer`), or by what a kind family's adapter says of the parsed model
(:func:`resource_indexer`: ``spec.modelName``, ``spec.model.image``...)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj

if TYPE_CHECKING:  # the watcher loads no CRD model
    from aimcore.api.crds.base import Resource


@dataclass(frozen=True)
class ResourceIndexer:
    """An index over the parsed model of objects of ``kinds`` (:func:`resource_indexer`); objects
    of other kinds, or that do not read as their kind (a placeholder for one too large for the
    bus), are not indexed."""

    index: Callable[[KindRef, Obj, Resource], Iterable[str]]
    kinds: frozenset[KindRef]


Indexer = Callable[[Obj], Iterable[str]] | ResourceIndexer


def resource_indexer(
    index: Callable[[KindRef, Obj, Resource], Iterable[str]], kinds: Iterable[KindRef]
) -> ResourceIndexer:
    """Index objects of ``kinds`` (of our own) by what ``index(kind, obj, resource)`` says of them
    read into their model (through a family adapter: ``Template(kind, obj, resource)``)."""
    return ResourceIndexer(index, frozenset(kinds))


def owner_uids(obj: Obj) -> Iterable[str]:
    return [o["uid"] for o in (obj.get("metadata") or {}).get("ownerReferences") or [] if "uid" in o]


def field_indexer(*path: str) -> Indexer:
    """Index by the string value at ``path`` (for example ``field_indexer("spec", "modelName")``)."""

    def index(obj: Obj) -> Iterable[str]:
        node: Any = obj
        for part in path:
            if not isinstance(node, dict):
                return []
            node = node.get(part)
        return [node] if isinstance(node, str) and node else []

    return index
