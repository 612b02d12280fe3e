"""Storage quotas for model caches (AIMModelCache, AIMArtifact), decided as pure functions of the
objects the cache service reads, so the rules can be tested without a cluster and the controller
only lists caches, holds its lock, deletes victims and writes the conditions.

The released original (AMD AIM Engine 0.2.2) checks ``AIMClusterRuntimeConfig.spec.
artifactStorageQuota`` (``clusterLimit``, ``defaultNamespaceLimit``; a namespace's
``aim.eai.amd.com/artifact-storage-quota`` annotation overrides the latter) before a cache's PVC
is made, and evicts low-priority Ready Shared caches to make room. Its rules are kept, with these
fixes:

- only caches that hold storage count (a PVC, an allocated size, or an imported ``pvc://`` volume):
  the original counted every cache with a size, so two blocked caches kept each other out forever;
- a cache being deleted still counts until its volume is gone, reported as *freeing*: a cache whose
  room is being made waits (``Evicting``) instead of evicting more or being admitted early;
- a negative limit is not a limit (a warning, as for an unparsable one); zero is (nothing fits);
- the namespace and the cluster are both settled in one decision (namespace victims count toward
  the cluster's deficit; the cluster's candidates cover what remains);
- the eviction order is total (priority, age, namespace, name), the reason names the scope the
  message names, and ``StorageQuotaReady`` is False while evicting.

Sizes are exact (integers and :class:`~fractions.Fraction`, never floats) and volumes are whole
GiB, as :func:`aim_cache.plan.pvc_size_bytes` makes them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from fractions import Fraction
from typing import Any, Literal

from aim_cache.plan import GIB
from aimcore.api.quantities import amount
from aimcore.api.sourcerules import PVC_SCHEME
from aimcore.domain.units import ceil_gib

__all__ = [
    "PROTECTED_ANNOTATION",
    "QUOTA_ANNOTATION",
    "Action",
    "Cache",
    "Condition",
    "Decision",
    "Limits",
    "decide",
    "effective_priority",
    "evicted_message",
    "format_quantity",
    "in_use_uids",
    "parse_limits",
    "usage_bytes",
]

QUOTA_ANNOTATION = "aim.eai.amd.com/artifact-storage-quota"
PROTECTED_ANNOTATION = "aim.eai.amd.com/eviction-protected"

QUOTA_EXCEEDED = "StorageQuotaExceeded"
QUOTA_READY = "StorageQuotaReady"
WITHIN_QUOTA = "WithinQuota"
EVICTING = "Evicting"
NAMESPACE_EXCEEDED = "NamespaceQuotaExceeded"
CLUSTER_EXCEEDED = "ClusterQuotaExceeded"

Condition = tuple[str, bool, str, str]
"""``(type, status, reason, message)``; ``status`` as :func:`aimcore.runtime.condition` takes it."""

Scope = Literal["namespace", "cluster"]


# -- quantities --------------------------------------------------------------------------------------


def _quantity(value: object) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return amount(value)


def _bytes_or_none(value: object) -> Fraction | None:
    """A positive size, or ``None`` for one that is unset, zero, negative or not a quantity."""
    if value is None or value == "":
        return None
    try:
        exact = _quantity(value)
    except ValueError:
        return None
    return exact if exact > 0 else None


def _ceil_gib(exact: Fraction) -> int:
    # ceil(ceil(x) / GiB) == ceil(x / GiB): rounding to whole bytes first changes nothing
    return ceil_gib(math.ceil(exact))


def _with_headroom(size: Fraction, headroom: int) -> int:
    return _ceil_gib(size * Fraction(100 + max(headroom, 0), 100))


_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def format_quantity(n: int) -> str:
    """``n`` bytes as Kubernetes writes ``resource.NewQuantity(n, BinarySI)``: ``0``, ``512Ki``,
    ``1Gi``, ``1536Mi``, and plain bytes (``1000000000``) for anything not a multiple of 1024."""
    if n < 0:
        return "-" + format_quantity(-n)
    if n == 0 or n % 1024:
        return str(n)
    step = 0
    while n % 1024 == 0 and step < len(_BINARY_SUFFIXES) - 1:
        n //= 1024
        step += 1
    return f"{n}{_BINARY_SUFFIXES[step]}"


# -- limits ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """The quotas that apply to one namespace, in bytes (``None``: no limit), and what was wrong
    with the settings that were ignored."""

    namespace: int | None = None
    cluster: int | None = None
    warning: str | None = None


def _limit(value: object) -> int:
    """A limit in bytes (a fractional byte cannot be used, so it is dropped); raises ValueError
    for a value that is not a quantity, or a negative one."""
    exact = _quantity(value)
    if exact < 0:
        raise ValueError("a negative quantity is not a limit")
    return math.floor(exact)


def parse_limits(
    cluster_config_spec: Mapping[str, Any] | None,
    namespace_annotations: Mapping[str, str] | None,
    *,
    namespace: str,
) -> Limits:
    """The limits for ``namespace``: ``spec.artifactStorageQuota`` of the AIMClusterRuntimeConfig
    (``cluster_config_spec``) and the namespace's :data:`QUOTA_ANNOTATION`, which overrides
    ``defaultNamespaceLimit``. An empty value is unset; a value that is not a quantity ≥ 0 is
    ignored with a warning (an annotation falls back to the default)."""
    quota = (cluster_config_spec or {}).get("artifactStorageQuota") or {}
    warnings: list[str] = []

    def configured(field: str) -> int | None:
        value = quota.get(field)
        if value is None or value == "":
            return None
        try:
            return _limit(value)
        except ValueError as exc:
            warnings.append(f'spec.artifactStorageQuota.{field} "{value}" is not a quantity ≥ 0: {exc}')
            return None

    cluster = configured("clusterLimit")
    default = configured("defaultNamespaceLimit")
    ns_limit = default
    annotation = (namespace_annotations or {}).get(QUOTA_ANNOTATION)
    if annotation:
        try:
            ns_limit = _limit(annotation)
        except ValueError as exc:
            warnings.append(
                f'invalid {QUOTA_ANNOTATION} annotation "{annotation}" on namespace {namespace}: {exc}'
            )
    return Limits(namespace=ns_limit, cluster=cluster, warning="; ".join(warnings) or None)


# -- caches ------------------------------------------------------------------------------------------


def effective_priority(cache_obj: Mapping[str, Any], default: int | None) -> int | None:
    """``spec.retentionPriority`` when it is an integer ≥ 0, else ``default`` (the runtime
    config's); ``None``: the cache is never evicted."""
    own = (cache_obj.get("spec") or {}).get("retentionPriority")
    if isinstance(own, int) and not isinstance(own, bool) and own >= 0:
        return own
    return default


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _timestamp(value: object) -> datetime | None:
    """An RFC 3339 time (``metadata.creationTimestamp``) in UTC, so any two compare."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Cache:
    """What the quota rules read of one model cache (:meth:`from_object` builds it from the wire
    form). Sizes are exact bytes, ``None`` when unset, zero or unreadable."""

    kind: str
    namespace: str
    name: str
    uid: str
    created: datetime | None = None
    deleting: bool = False
    protected: bool = False
    owned: bool = False
    ready: bool = False
    source_uri: str = ""
    claim: str | None = None
    allocated: Fraction | None = None
    discovered: Fraction | None = None
    size: Fraction | None = None
    priority: int | None = None

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Cache:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return cls(
            kind=str(obj.get("kind") or ""),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            created=_timestamp(meta.get("creationTimestamp")),
            deleting=bool(meta.get("deletionTimestamp")),
            protected=(meta.get("annotations") or {}).get(PROTECTED_ANNOTATION) == "true",
            owned=bool(meta.get("ownerReferences")),
            ready=status.get("status") == "Ready",
            source_uri=str(spec.get("sourceUri") or ""),
            claim=status.get("persistentVolumeClaim") or None,
            allocated=_bytes_or_none(status.get("allocatedSize")),
            discovered=_bytes_or_none(status.get("discoveredSizeBytes")),
            size=_bytes_or_none(spec.get("size")),
            priority=effective_priority(obj, None),
        )

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def imported(self) -> bool:
        """It points at a volume the user filled (``pvc://``): it counts, but is never evicted."""
        return self.source_uri.startswith(PVC_SCHEME)

    @property
    def holds_storage(self) -> bool:
        """Whether its volume exists (or is being made): only such caches count toward a quota."""
        return bool(self.claim) or self.allocated is not None or self.imported

    def same(self, other: Cache) -> bool:
        if self.uid and other.uid:
            return self.uid == other.uid
        return (self.kind, self.namespace, self.name) == (other.kind, other.namespace, other.name)


AnyCache = Cache | Mapping[str, Any]


def _cache(value: AnyCache) -> Cache:
    return value if isinstance(value, Cache) else Cache.from_object(value)


def usage_bytes(cache: AnyCache, headroom: int) -> int:
    """What ``cache`` takes of a quota: ``status.allocatedSize``; else the discovered size, else
    ``spec.size``, with ``headroom`` percent and rounded up to whole GiB; else 0."""
    c = _cache(cache)
    if c.allocated is not None:
        return math.ceil(c.allocated)
    for size in (c.discovered, c.size):
        if size is not None:
            return _with_headroom(size, headroom)
    return 0


def in_use_uids(template_cache_objs: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The uids of the model caches template caches resolved to (``status.modelCaches`` and the
    released original's ``status.artifacts``, maps of model name to entry): never evicted."""
    uids: set[str] = set()
    for obj in template_cache_objs:
        status = obj.get("status") or {}
        for field in ("modelCaches", "artifacts"):
            entries = status.get(field) or {}
            values = entries.values() if isinstance(entries, Mapping) else entries
            for entry in values:
                uid = entry.get("uid") if isinstance(entry, Mapping) else None
                if uid:
                    uids.add(str(uid))
    return frozenset(uids)


def evicted_message(subject_ns: str, subject_name: str) -> str:
    """The Event on an evicted cache (the released original's words)."""
    return f"Evicted to free storage quota for artifact {subject_ns}/{subject_name}"


# -- the decision ------------------------------------------------------------------------------------


class Action(StrEnum):
    ADMIT = "Admit"
    """Make the PVC."""
    EVICT = "Evict"
    """Delete :attr:`Decision.victims` and decide again (the PVC waits until they are gone)."""
    WAIT = "Wait"
    """Caches being deleted will make room: decide again when they are gone."""
    BLOCK = "Block"
    """Nothing that may be evicted makes room."""


@dataclass(frozen=True)
class Decision:
    """What to do about one cache's volume, the reason and message of its quota conditions, and
    (:attr:`Action.EVICT`) the caches to delete, in eviction order."""

    action: Action
    reason: str
    message: str
    need: int
    """The subject's projected volume, in bytes."""
    victims: tuple[Cache, ...] = ()
    scope: Scope | None = None
    """The scope that blocked, or the first that was exceeded."""

    @property
    def admitted(self) -> bool:
        return self.action is Action.ADMIT

    def conditions(self) -> tuple[Condition, Condition]:
        """``StorageQuotaExceeded`` and ``StorageQuotaReady`` as ``(type, status, reason, message)``."""
        if self.admitted:
            return (
                (QUOTA_EXCEEDED, False, self.reason, self.message),
                (QUOTA_READY, True, self.reason, self.message),
            )
        return (
            (QUOTA_EXCEEDED, True, self.reason, self.message),
            (QUOTA_READY, False, self.reason, self.message),
        )


SortKey = tuple[int, bool, datetime, str, str, str, str]


def _sort_key(cache: Cache, priority: int) -> SortKey:
    """Lowest priority first, then the oldest (a cache without a creation time last), then by
    namespace, name, kind and uid, so equal caches are always taken in the same order."""
    created = cache.created or _EPOCH
    return (priority, cache.created is None, created, cache.namespace, cache.name, cache.kind, cache.uid)


def decide(  # noqa: PLR0917 - the brief's positional order; callers name them
    subject: AnyCache,
    caches_in_namespace: Iterable[AnyCache],
    caches_in_cluster: Iterable[AnyCache],
    limits: Limits,
    in_use: Iterable[str],
    headroom: int,
    default_priority: int | None,
    *,
    size: int | None = None,
) -> Decision:
    """Admit ``subject``'s volume, evict caches first, wait for deletions, or block.

    ``size`` is the size the caller will make the volume from (its ``spec.size`` or the source
    just probed); without it, ``spec.size``, else ``status.discoveredSizeBytes``. ``headroom`` is
    the subject's runtime config's (:func:`aim_cache.plan.headroom_percent`), ``default_priority``
    its default retention priority (``None``: caches without their own are never evicted),
    ``in_use`` :func:`in_use_uids` of the template caches."""
    me = _cache(subject)
    known = Fraction(size) if size is not None and size > 0 else (me.size or me.discovered)
    need = _with_headroom(known, headroom) if known is not None else GIB
    warning = f" (warning: {limits.warning})" if limits.warning else ""
    if limits.namespace is None and limits.cluster is None:
        return Decision(Action.ADMIT, WITHIN_QUOTA, "No storage quota applies" + warning, need)

    protected_uids = frozenset(in_use)
    scopes: list[tuple[Scope, int, Iterable[AnyCache]]] = []
    if limits.namespace is not None:
        scopes.append(("namespace", limits.namespace, caches_in_namespace))
    if limits.cluster is not None:
        scopes.append(("cluster", limits.cluster, caches_in_cluster))

    victims: list[Cache] = []
    waiting: list[Cache] = []
    first: Scope | None = None
    for scope, limit, caches in scopes:
        counted = [c for c in map(_cache, caches) if c.holds_storage and not c.same(me)]
        usage = {id(c): usage_bytes(c, headroom) for c in counted}
        used = sum(usage.values())
        if used + need <= limit:
            continue
        first = first or scope
        deleting = [c for c in counted if c.deleting]
        freeing = sum(usage[id(c)] for c in deleting)
        planned = sum(usage[id(c)] for c in counted if any(c.same(v) for v in victims))
        deficit = used - freeing - planned + need - limit
        if deficit <= 0:  # what is being deleted (and chosen) makes room
            waiting += [c for c in deleting if not any(c.same(w) for w in waiting)]
            continue
        chosen = _evict(counted, usage, deficit, me, protected_uids, default_priority, victims)
        if chosen is None:
            label = "Namespace" if scope == "namespace" else "Cluster"
            reason = NAMESPACE_EXCEEDED if scope == "namespace" else CLUSTER_EXCEEDED
            message = (
                f"{label} quota exceeded: {format_quantity(used)} used + {format_quantity(need)} needed"
                f" > {format_quantity(limit)} limit"
            )
            return Decision(Action.BLOCK, reason, message + warning, need, scope=scope)
        victims += chosen

    if victims:
        names = ", ".join(v.ref for v in victims)
        message = f"Evicting {len(victims)} cache(s) to free storage quota: {names}"
        return Decision(Action.EVICT, EVICTING, message + warning, need, tuple(victims), first)
    if waiting:
        freeing_all = sum(usage_bytes(c, headroom) for c in waiting)
        message = f"Waiting for {len(waiting)} evicted cache(s) to release {format_quantity(freeing_all)}"
        return Decision(Action.WAIT, EVICTING, message + warning, need, scope=first)
    return Decision(Action.ADMIT, WITHIN_QUOTA, "Storage usage is within quota limits" + warning, need)


def _evict(  # noqa: PLR0917 - private, one call site
    counted: list[Cache],
    usage: Mapping[int, int],
    deficit: int,
    me: Cache,
    in_use: frozenset[str],
    default_priority: int | None,
    chosen: list[Cache],
) -> list[Cache] | None:
    """The shortest prefix of the candidates, in eviction order, that frees ``deficit`` bytes
    (``usage``: by ``id`` of each counted cache), or ``None`` when all of them together do not."""
    ranked: list[tuple[SortKey, Cache]] = []
    for c in counted:
        priority = c.priority if c.priority is not None else default_priority
        if priority is not None and _candidate(c, me, in_use, usage[id(c)], chosen):
            ranked.append((_sort_key(c, priority), c))
    ranked.sort(key=lambda pair: pair[0])
    victims: list[Cache] = []
    freed = 0
    for _, c in ranked:
        if freed >= deficit:
            break
        victims.append(c)
        freed += usage[id(c)]
    return victims if freed >= deficit else None


def _candidate(c: Cache, me: Cache, in_use: frozenset[str], usage: int, chosen: list[Cache]) -> bool:
    """Whether ``c`` may be evicted to make room for ``me`` (its priority is checked apart)."""
    return (
        not c.same(me)
        and not c.deleting
        and not c.protected
        and c.ready
        and not c.owned
        and c.uid not in in_use
        and not c.imported
        and c.holds_storage
        and usage > 0
        and not any(c.same(v) for v in chosen)
    )
