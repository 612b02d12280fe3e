"""Runtime-config resolution and merge, shared by every service whose objects name a runtime config
(models, templates, caches, services): one definition of "which config applies, and what it says".

Resolution (docs/original.md#runtime-config-resolution): the name is ``spec.runtimeConfigName``,
empty → ``default``. The namespace config (``AIMRuntimeConfig`` in the object's namespace; skipped
for cluster-scoped objects) and the cluster config (``AIMClusterRuntimeConfig``) of that name are
looked up:

- neither exists: the name ``default`` means "no config" (not an error); any other name is
  :class:`ConfigNotFound`, which the caller reports and which clears by itself when the config
  appears (runtime configs are watched);
- one exists: it is used as is (scope ``Namespace`` or ``Cluster``);
- both exist: the namespace config is merged over the cluster config (scope ``Merged``).

Merge (:func:`merge`), field by field on the wire (camelCase) form:

- objects merge key-wise, recursively (``routing.annotations``, ``storage``, ``gatewayRef``...);
- ``env`` merges by variable name, the namespace entry winning; ``AIM_ENGINE_ARGS`` values that are
  JSON objects on both sides are deep-merged;
- other lists are replaced (``labelPropagation.match``, ``imagePullSecrets``);
- ``storage.downloadFilter`` is replaced whole: a namespace's filter is the filter, so ``{}``
  (every file) or ``{include: [...]}`` alone is not merged with the cluster's ``exclude``;
- a field the namespace config **sets** wins, including ``false`` and ``0``. The original (mergo)
  silently ignores zero values, so a namespace could not switch cluster routing off or set a
  headroom of 0; that is the bug we do not copy. A field set to ``null`` counts as unset.

Deprecated top-level ``defaultStorageClassName`` / ``pvcHeadroomPercent`` are migrated into
``storage`` when the new field is unset (:func:`migrate_deprecated`), in each config before the
merge, so a namespace's deprecated field still overrides the cluster's new one.
"""

from __future__ import annotations

import copy
import fnmatch
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aimcore.api.bus.messages import ConditionReport
from aimcore.api.errors import AimError
from aimcore.api.kinds import RUNTIME_CONFIG_PAIRS, KindPair, KindRef
from aimcore.api.types import Obj

if TYPE_CHECKING:
    from aimcore.runtime.kube import Kube
Lookup = Callable[[KindRef, str | None, str], Obj | None]

DEFAULT_NAME = "default"
ENGINE_ARGS = "AIM_ENGINE_ARGS"

SCOPE_NAMESPACE = "Namespace"
SCOPE_CLUSTER = "Cluster"
SCOPE_MERGED = "Merged"

# Condition vocabulary (the original's RuntimeConfigReady reasons).
RUNTIME_CONFIG_READY = "RuntimeConfigReady"
CONFIG_FOUND = "ConfigFound"
DEFAULT_CONFIG_NOT_FOUND = "DefaultConfigNotFound"
CONFIG_NOT_FOUND = "ConfigNotFound"

_DEPRECATED_STORAGE = ("defaultStorageClassName", "pvcHeadroomPercent")
AIM_LABEL_PREFIX = "aim.eai.amd.com/"


def config_kinds(group: str) -> KindPair:
    """The namespace and cluster runtime-config kinds of one API group."""
    return RUNTIME_CONFIG_PAIRS[group]


class ConfigNotFound(AimError):
    """An explicitly named runtime config exists in neither scope (it clears by itself when the
    config is created: the services watch the config kinds, nothing is retried)."""

    reason = CONFIG_NOT_FOUND
    transient = False

    def __init__(self, name: str, namespace: str | None) -> None:
        if namespace:
            where = f"no AIMRuntimeConfig in namespace {namespace} or AIMClusterRuntimeConfig"
        else:
            where = "no AIMClusterRuntimeConfig"
        super().__init__(f"runtime config {name!r} not found ({where} of that name)")
        self.name = name
        self.namespace = namespace


@dataclass(frozen=True)
class Resolved:
    """The runtime config that applies to one object."""

    name: str
    spec: Obj
    namespace_config: Obj | None = None
    cluster_config: Obj | None = None

    @property
    def found(self) -> bool:
        return self.namespace_config is not None or self.cluster_config is not None

    @property
    def scope(self) -> str | None:
        if self.namespace_config is not None and self.cluster_config is not None:
            return SCOPE_MERGED
        if self.namespace_config is not None:
            return SCOPE_NAMESPACE
        if self.cluster_config is not None:
            return SCOPE_CLUSTER
        return None

    def reference(self) -> Obj | None:
        """``status.resolvedRuntimeConfig`` (``AIMResolvedReference``); ``None`` without a config.
        A merged config names the namespace config (the one on top) and its uid."""
        primary = self.namespace_config if self.namespace_config is not None else self.cluster_config
        if primary is None:
            return None
        meta = primary.get("metadata") or {}
        ref: Obj = {"name": self.name, "scope": self.scope, "kind": primary.get("kind")}
        if meta.get("namespace"):
            ref["namespace"] = meta["namespace"]
        if meta.get("uid"):
            ref["uid"] = meta["uid"]
        return ref

    def get(self, *path: str) -> Any:
        """A merged field by wire path, or ``None``."""
        node: Any = self.spec
        for part in path:
            if not isinstance(node, Mapping):
                return None
            node = node.get(part)
        return node

    def condition_reason(self) -> tuple[str, str]:
        """``RuntimeConfigReady`` (always True once resolution succeeded) reason and message."""
        if not self.found:
            return DEFAULT_CONFIG_NOT_FOUND, "No runtime config named 'default'; using built-in defaults"
        scope = self.scope or ""
        return CONFIG_FOUND, f"Using runtime config {self.name!r} ({scope.lower()} scope)"


def secret_names(refs: Any) -> list[str]:
    """The names of an ``imagePullSecrets`` list as written (a merged config's: entries without
    a name skipped)."""
    return [str(r["name"]) for r in refs or [] if isinstance(r, Mapping) and r.get("name")]


def config_name(spec: Mapping[str, Any] | None) -> str:
    name = (spec or {}).get("runtimeConfigName")
    return str(name) if name else DEFAULT_NAME


def resolve(lookup: Lookup, group: str, namespace: str | None, spec: Mapping[str, Any] | None) -> Resolved:
    """The runtime config for an object of ``group`` in ``namespace`` (``None``: cluster-scoped)
    whose spec is ``spec``. Raises :class:`ConfigNotFound` for a missing explicitly named config."""
    name = config_name(spec)
    kinds = config_kinds(group)
    ns_obj = lookup(kinds.namespaced, namespace, name) if namespace else None
    cluster_obj = lookup(kinds.cluster, None, name)
    if ns_obj is None and cluster_obj is None:
        if name != DEFAULT_NAME:
            raise ConfigNotFound(name, namespace)
        return Resolved(name, {})
    specs = [migrate_deprecated(o.get("spec") or {}) for o in (cluster_obj, ns_obj) if o is not None]
    merged = specs[0] if len(specs) == 1 else merge(specs[0], specs[1])
    return Resolved(name, merged, ns_obj, cluster_obj)


async def resolve_live(
    kube: Kube, group: str, namespace: str | None, spec: Mapping[str, Any] | None
) -> Resolved:
    """:func:`resolve` reading the configs from the API server rather than an informer cache: for
    decisions that cannot be taken back (a PVC's storage class), where a cache that has not seen a
    config created a moment earlier must not decide."""
    name = config_name(spec)
    kinds = config_kinds(group)
    found: dict[tuple[str, str | None], Obj | None] = {
        (kinds.cluster.kind, None): await kube.get(kinds.cluster, None, name)
    }
    if namespace:
        found[(kinds.namespaced.kind, namespace)] = await kube.get(kinds.namespaced, namespace, name)
    return resolve(lambda ref, ns, _name: found.get((ref.kind, ns)), group, namespace, spec)


def users_of(name: str) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate: does an object's spec resolve to the runtime config called ``name``?"""

    def uses(obj: Mapping[str, Any]) -> bool:
        return config_name(obj.get("spec")) == name

    return uses


def propagated_labels(parent_labels: Mapping[str, str] | None, resolved: Resolved | None) -> dict[str, str]:
    """The parent labels its children inherit (docs/original.md#labels-and-annotations-children-inherit):
    every ``aim.eai.amd.com/`` label, plus, when the runtime config's ``labelPropagation.enabled``,
    the keys matching one of its ``match`` shell globs. Callers let the child's own labels win."""
    labels = dict(parent_labels or {})
    out = {k: v for k, v in labels.items() if k.startswith(AIM_LABEL_PREFIX)}
    propagation = resolved.get("labelPropagation") if resolved is not None else None
    if isinstance(propagation, Mapping) and propagation.get("enabled"):
        patterns = [str(p) for p in propagation.get("match") or []]
        out.update({k: v for k, v in labels.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns)})
    return out


def glob_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a well-formed shell glob as the original reads one (Go's
    ``path.Match``: ``*``, ``?``, ``[...]`` classes with ``^`` negation and ranges, ``\\``
    escapes); ``None`` when it is. Python's ``fnmatch`` takes a malformed class such as ``team-[``
    literally, which no label key can match, so such a pattern would propagate nothing, silently."""
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            if i + 1 >= n:
                return f"pattern {pattern!r} ends with an escape '\\'"
            i += 2
        elif char == "[":
            end = _class_end(pattern, i + 1)
            if isinstance(end, str):
                return f"pattern {pattern!r}: {end}"
            i = end
        else:
            i += 1
    return None


def _class_end(pattern: str, start: int) -> int | str:
    """The index after the ``]`` closing the class opened before ``start``, or what is wrong."""
    i, n, ranges = start, len(pattern), 0
    if i < n and pattern[i] == "^":
        i += 1
    while True:
        if i < n and pattern[i] == "]" and ranges > 0:
            return i + 1
        low = _class_char(pattern, i)
        if isinstance(low, str):
            return low
        i, low_char = low
        if i < n and pattern[i] == "-":
            high = _class_char(pattern, i + 1)
            if isinstance(high, str):
                return high
            i, high_char = high
            if low_char > high_char:
                return f"range {low_char}-{high_char} in a character class is reversed (matches nothing)"
        ranges += 1


def _class_char(pattern: str, i: int) -> tuple[int, str] | str:
    n = len(pattern)
    if i >= n:
        return "character class '[' is not closed"
    if pattern[i] in "-]":
        return f"unexpected {pattern[i]!r} in a character class"
    if pattern[i] == "\\":
        i += 1
        if i >= n:
            return "character class '[' is not closed"
    if i + 1 >= n:
        return "character class '[' is not closed"
    return i + 1, pattern[i]


# -- pure merge --------------------------------------------------------------------------------


def migrate_deprecated(spec: Mapping[str, Any]) -> Obj:
    """``spec`` with deprecated top-level storage fields moved into ``storage`` (when unset there)."""
    out: Obj = copy.deepcopy(dict(spec))
    storage: Obj = dict(out.get("storage") or {})
    for field in _DEPRECATED_STORAGE:
        value = out.pop(field, None)
        if value is not None and storage.get(field) is None:
            storage[field] = value
    if storage:
        out["storage"] = storage
    return out


REPLACED_WHOLE = frozenset({"downloadFilter"})
"""Objects a config sets as a whole: the namespace's replaces the cluster's, never merged into it."""


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> Obj:
    """``over`` merged onto ``base`` (both wire-form specs); neither input is changed."""
    out: Obj = copy.deepcopy(dict(base))
    for key, value in over.items():
        if value is None:
            continue
        current = out.get(key)
        if key == "env" and isinstance(value, list) and isinstance(current, list):
            out[key] = merge_env(current, value)
        elif isinstance(value, Mapping) and isinstance(current, Mapping) and key not in REPLACED_WHOLE:
            out[key] = merge(current, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_env(base: list[Any], over: list[Any]) -> list[Any]:
    """Env lists merged by name, ``over`` winning; order: ``base`` order, then new names.
    ``AIM_ENGINE_ARGS`` JSON objects are deep-merged."""
    out: list[Any] = [copy.deepcopy(e) for e in base]
    index = {e.get("name"): i for i, e in enumerate(out) if isinstance(e, Mapping)}
    for entry in over:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        if name not in index:
            index[name] = len(out)
            out.append(copy.deepcopy(entry))
            continue
        i = index[name]
        if name == ENGINE_ARGS:
            out[i] = _merge_engine_args(out[i], entry)
        else:
            out[i] = copy.deepcopy(entry)
    return out


def _merge_engine_args(base: Mapping[str, Any], over: Mapping[str, Any]) -> Obj:
    try:
        left, right = json.loads(base.get("value") or ""), json.loads(over.get("value") or "")
    except (TypeError, ValueError):
        return copy.deepcopy(dict(over))
    if not isinstance(left, dict) or not isinstance(right, dict):
        return copy.deepcopy(dict(over))
    return {"name": ENGINE_ARGS, "value": json.dumps(merge(left, right), separators=(",", ":"))}


CONFIG_VALID = "ConfigValid"


def resolution_conditions(
    lookup: Lookup, group: str, namespace: str | None, spec: Mapping[str, Any] | None
) -> tuple[Resolved | None, list[ConditionReport]]:
    """Resolve the runtime config of an object and say so in conditions: ``RuntimeConfigReady`` and
    ``ConfigValid`` True with the config used, or both False (``ConfigNotFound`` /
    ``ReferenceNotFound``) and ``None`` when a named config is missing."""
    try:
        config = resolve(lookup, group, namespace, spec)
    except ConfigNotFound as exc:
        message = str(exc)
        return None, [
            ConditionReport(
                type=RUNTIME_CONFIG_READY, status="False", reason=CONFIG_NOT_FOUND, message=message
            ),
            ConditionReport(type=CONFIG_VALID, status="False", reason="ReferenceNotFound", message=message),
        ]
    reason, message = config.condition_reason()
    return config, [
        ConditionReport(type=RUNTIME_CONFIG_READY, status="True", reason=reason, message=message),
        ConditionReport(type=CONFIG_VALID, status="True", reason="ConfigurationValid"),
    ]
