"""The list of every served kind, in one place, for the generator, the watcher and the CLI."""

from __future__ import annotations

from aimcore.api.crds import aim, llmkube, silogen
from aimcore.api.crds.base import Resource

ALL_KINDS: tuple[type[Resource], ...] = (*aim.KINDS, *silogen.KINDS, *llmkube.KINDS)


def resource_class(group: str, kind: str) -> type[Resource]:
    for cls in ALL_KINDS:
        if cls.crd.group == group and cls.crd.kind == kind:
            return cls
    raise KeyError(f"no model for {kind}.{group}")
