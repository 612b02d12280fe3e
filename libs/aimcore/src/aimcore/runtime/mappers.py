"""Which primaries a dependency's change wakes, said with a few verbs instead of a function per
service and dependency (controller-runtime's ``EnqueueRequestForOwner`` and friends).

A :class:`~aimcore.runtime.controller.Watch` pairs a dependency kind with a :data:`Mapper`
``(event, obj, informer) -> targets``: ``obj`` is the changed object as the informer has it (its
last state if it was deleted), and each target a primary ``(kind, namespace, name)`` to reconcile.
The mappings every service needs:

- :func:`to_owners` — a child's change wakes its owners (``ownerReferences``) of the given kinds;
- :func:`through` — map to intermediate objects first, then from each as if it had changed
  (:func:`through_job_to_owner`: a Pod's change wakes the owner of the Job that runs it);
- :func:`by_index` — the users of a dependency, found by an informer index under its name (or
  another key): a template's change wakes the services naming it. The scope rules are the same
  everywhere: users of the dependency's own API group only (the current group and its legacy twin
  never mix), in the dependency's namespace if it is namespaced, in every namespace if it is
  cluster-scoped;
- :func:`every` — every cached object of some kinds (that satisfies a condition): a Node's change
  wakes whatever depends on the cluster's GPUs;
- :func:`any_of` — several mappings of one dependency; :data:`keep_cached` — none (the kind is
  watched only to have it in the informer cache).

Mapping that has no general form stays with its service, written with these verbs and
:func:`indexed`, in a module named for what it maps.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from aimcore.api.bus.messages import ChangeEvent, ObjectRef
from aimcore.api.kinds import JOB, KindRef, by_kind
from aimcore.api.types import Obj
from aimcore.runtime.informer import Informer

Target = tuple[KindRef, str | None, str]
Mapper = Callable[[ChangeEvent, Obj | None, Informer], Iterable[Target]]
Key = Callable[[ChangeEvent, Obj | None], Iterable[str]]
"""The values a dependency is looked up under in an index (by default its name)."""
Where = Callable[[KindRef, Obj], bool]


# -- the changed object ----------------------------------------------------------------------------


def changed(event: ChangeEvent) -> KindRef:
    """The kind of the object that changed."""
    return by_kind(event.object.group, event.object.kind)


def scope(event: ChangeEvent) -> str | None:
    """Where the users of the changed object live: its namespace if it is namespaced; ``None``
    (every namespace) if it is cluster-scoped."""
    return event.object.namespace if changed(event).namespaced else None


def group_of(obj: Mapping[str, Any]) -> str:
    """The API group of an object or owner reference (from its ``apiVersion``; ``""`` for the
    core group's ``v1``)."""
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def target_of(obj: Mapping[str, Any]) -> Target:
    """An object as a target."""
    meta = obj["metadata"]
    return by_kind(group_of(obj), str(obj["kind"])), meta.get("namespace"), str(meta["name"])


def name(event: ChangeEvent, obj: Obj | None) -> Iterable[str]:
    """The default :data:`Key`: the changed object's name."""
    return [event.object.name]


# -- verbs ------------------------------------------------------------------------------------------


def to_owners(*kinds: KindRef, same_group: bool = False) -> Mapper:
    """The changed object's owners (``ownerReferences``) of ``kinds``; with ``same_group``, only
    those of the changed object's own API group. A cluster-scoped object has no namespaced owner
    (Kubernetes does not allow it), so such a reference is ignored."""
    wanted = {(k.group, k.kind): k for k in kinds}

    def mapper(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        meta = (obj or {}).get("metadata") or {}
        namespace = meta.get("namespace")
        out: list[Target] = []
        for owner in meta.get("ownerReferences") or []:
            group = group_of(owner)
            kind = wanted.get((group, str(owner.get("kind"))))
            if kind is None or (same_group and group != event.object.group):
                continue
            if kind.namespaced and not namespace:
                continue
            out.append((kind, namespace if kind.namespaced else None, str(owner.get("name"))))
        return out

    return mapper


def through(first: Mapper, then: Mapper) -> Mapper:
    """Map with ``first`` to intermediate objects, then from each (as the informer has it; one it
    does not have is skipped) with ``then``, as if the intermediate object had changed."""

    def mapper(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        out: list[Target] = []
        for ref, namespace, middle_name in first(event, obj, informer):
            middle = informer.get(ref, namespace, middle_name)
            if middle is not None:
                as_changed = event.model_copy(update={"object": ObjectRef.of(ref, namespace, middle_name)})
                out.extend(then(as_changed, middle, informer))
        return out

    return mapper


def through_job_to_owner(*kinds: KindRef) -> Mapper:
    """A Pod's change wakes the owner (of ``kinds``) of the Job that runs it."""
    return through(to_owners(JOB), to_owners(*kinds))


def indexed(
    informer: Informer,
    index: str,
    value: str,
    *,
    group: str,
    namespace: str | None,
    kinds: Collection[KindRef] | None = None,
) -> list[Target]:
    """The objects of API group ``group`` (and of ``kinds``, if given) that ``index`` files under
    ``value``, in ``namespace`` (``None``: in any namespace)."""
    out: list[Target] = []
    for user in informer.by_index(index, value):
        if group_of(user) != group:
            continue
        ref, user_namespace, user_name = target_of(user)
        if kinds is not None and ref not in kinds:
            continue
        if namespace is None or user_namespace == namespace:
            out.append((ref, user_namespace, user_name))
    return out


def by_index(index: str, *, key: Key = name, kinds: Collection[KindRef] | None = None) -> Mapper:
    """The users of the changed object: the objects ``index`` files under its name (or under each
    value ``key`` gives), of its API group and scope (see the module docstring), and of ``kinds``
    if given (for an index that also files other kinds)."""

    def mapper(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        group, namespace = event.object.group, scope(event)
        out: list[Target] = []
        for value in key(event, obj):
            out.extend(indexed(informer, index, value, group=group, namespace=namespace, kinds=kinds))
        return out

    return mapper


def filed(index: str, value: str, *kinds: KindRef) -> Mapper:
    """Every cached object of ``kinds`` that ``index`` files under ``value``, whatever changed: what
    :func:`every` with a ``where`` finds, from an index kept as objects are stored instead of a
    scan of every object of the kinds at each change (a Node's status report read every AIMService:
    50,000 objects at each one, which the informer keeps as bytes)."""

    def mapper(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        out: list[Target] = []
        for item in informer.by_index(index, value):
            target = target_of(item)
            if target[0] in kinds:
                out.append(target)
        return out

    return mapper


def every(*kinds: KindRef, where: Where | None = None) -> Mapper:
    """Every cached object of ``kinds`` (for which ``where(kind, obj)`` holds, if given)."""

    def mapper(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        out: list[Target] = []
        for kind in kinds:
            for item in informer.list(kind):
                if where is None or where(kind, item):
                    out.append((kind, item["metadata"].get("namespace"), str(item["metadata"]["name"])))
        return out

    return mapper


def any_of(*mappers: Mapper) -> Mapper:
    """The targets of each of ``mappers``, in order (the runtime reconciles a target once)."""

    def mapper(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        out: list[Target] = []
        for each in mappers:
            out.extend(each(event, obj, informer))
        return out

    return mapper


def keep_cached(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """No targets: the kind is watched only to have it in the informer cache."""
    return ()
