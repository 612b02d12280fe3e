"""What Kubernetes Events a status write produces, and when to record them, as pure functions
(no I/O: :mod:`aim_status.recorder` writes them), so the wording, the Normal/Warning choice, the
aggregation keys and the spam filter are testable without servers.

Users and their tools look at Events first (``kubectl describe``, ``kubectl get events``); the audit
stream (``aimctl events``/``describe``) stays the complete record. Like the original's controllers
(docs/original.md#events-per-condition-transition) there is **one Event per condition
transition**: a condition that appears, or whose ``status`` or ``reason`` changes, in a status
write; ``Ready`` included. A change of the message, ``lastTransitionTime`` or
``observedGeneration`` alone is no transition.

- ``reason`` = the condition's reason (so the original's reasons: ``AllComponentsReady``,
  ``ReferenceNotFound``, ``TemplateNotReady``, ...), ``message`` = the condition's message, else the
  original's ``<Component> is (not) ready: <reason>``; redacted (:func:`aimcore.domain.jobs.redact`)
  and cut to :data:`MAX_MESSAGE`.
- ``type`` = ``Warning`` when the condition conveys an error state of the status rules
  (Failed/Degraded/NotAvailable: :meth:`Rule.state_of`; for ``Ready``, the object's derived
  state), when a framework condition (``ConfigValid``, ``AuthValid``, ``DependenciesReachable``)
  is False, or when a condition that names a problem (``Degraded``, ``SourceDrifted``) is True;
  ``Normal`` otherwise. The original warned on *every reconcile* while an error lasted (a gap it
  lists); here only transitions are recorded, aggregated as below.

Aggregation and spam filtering follow client-go's ``EventCorrelator``:

- **Aggregation** (client-go's ``eventLogger``): Events with the same key (source, involved object
  without its resourceVersion, type, reason, message) within :data:`AGGREGATION_WINDOW` seconds of
  the last one are one Event whose ``count`` and ``lastTimestamp`` are patched; the key cache is an
  LRU of :data:`MAX_KEYS` keys.
- **Spam filter** (client-go's ``EventSourceObjectSpamFilter``): a token bucket per object,
  :data:`SPAM_BURST` tokens refilled at one per :data:`SPAM_REFILL_SECONDS`; every create or patch
  takes one, and an Event without a token is dropped. A condition flapping for hours therefore
  costs the API server at most 25 writes plus one per five minutes.

All of a replica's Event writes share one rate limit (:class:`RateLimit`, ``AIM_STATUS_EVENTS_QPS``
and ``AIM_STATUS_EVENTS_BURST``, 20 per second with bursts of 30 as a controller-runtime client).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from aimcore.api.events import NORMAL, WARNING, Involved, event_object, timestamp
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.domain.jobs import redact
from aimcore.domain.status import rules

COMPONENT = "aim-status"
"""``source.component``: what ``kubectl describe`` shows in its ``From`` column."""
REPORTING_CONTROLLER = "aim.eai.amd.com/aim-status"
"""``reportingComponent`` (events.k8s.io's ``reportingController``)."""

CLUSTER_SCOPED_NAMESPACE = "default"
"""Where Events about cluster-scoped objects go (as client-go puts them)."""

MAX_MESSAGE = 1024  # events.k8s.io's limit for ``note``; kept for core/v1 too
MAX_REASON = 128  # events.k8s.io's limit for ``reason``
MAX_NAME = 253

AGGREGATION_WINDOW = 600.0  # client-go's aggregation interval (10 minutes)
MAX_KEYS = 4096  # client-go's LRU size
SPAM_BURST = 25  # client-go's defaultSpamBurst
SPAM_REFILL_SECONDS = 300.0  # client-go's defaultSpamQPS = 1/300

FRAMEWORK_CHECKS = frozenset({rules.CONFIG_VALID, rules.AUTH_VALID, rules.DEPENDENCIES_REACHABLE})
PROBLEM_CONDITIONS = frozenset({"Degraded", "SourceDrifted"})
"""Conditions (LLMKube's vocabulary) that are bad news when True."""


@dataclass(frozen=True)
class EventSpec:
    """One Event to record: what a condition transition says."""

    involved: Involved
    type: str
    reason: str
    message: str
    condition: str  # the condition type it is about (for logs)

    @property
    def namespace(self) -> str:
        return self.involved.namespace or CLUSTER_SCOPED_NAMESPACE

    @property
    def key(self) -> tuple[str, ...]:
        """The aggregation key: client-go's ``getEventKey`` (the object without its resourceVersion)."""
        i = self.involved
        where = (COMPONENT, i.api_version, i.kind, i.namespace or "", i.name, i.uid)
        return (*where, self.type, self.reason, self.message)


# -- what a write produces -------------------------------------------------------------------------


def _conditions(status: Obj) -> list[Obj]:
    return [c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type")]


def transitions(old: Obj, new: Obj) -> list[Obj]:
    """The conditions of ``new`` (a status) that appeared or changed ``status`` or ``reason``."""
    before = {c["type"]: c for c in _conditions(old)}
    changed = []
    for cond in _conditions(new):
        prior = before.get(cond["type"]) or {}
        if (prior.get("status"), prior.get("reason")) != (cond.get("status"), cond.get("reason")):
            changed.append(cond)
    return changed


def event_type(ref: KindRef, cond: Obj, conditions: Iterable[Obj]) -> str:
    """``Warning`` for a condition that conveys a failure (see the module docstring), else ``Normal``."""
    kind, status = str(cond.get("type")), cond.get("status")
    if kind in PROBLEM_CONDITIONS:
        return WARNING if status == "True" else NORMAL
    if status == "True":
        return NORMAL
    if kind in FRAMEWORK_CHECKS:
        return WARNING if status == "False" else NORMAL
    rule = rules.rule_for(ref.group, ref.kind) or rules.RESOURCE
    if kind == rules.READY:
        derived = rules.derive(rule, conditions)
        if derived is not None:
            return WARNING if derived.state in rules.ERROR_STATES else NORMAL
    return WARNING if rule.state_of(cond) in rules.ERROR_STATES else NORMAL


def default_message(cond: Obj) -> str:
    """The original's message for a condition without one."""
    kind, reason = str(cond.get("type")), str(cond.get("reason") or "")
    if rules.is_component(kind):
        name = rules.component_name(kind)
        return f"{name} is ready" if cond.get("status") == "True" else f"{name} is not ready: {reason}"
    return f"{kind} is {cond.get('status')}: {reason}"


def clean_message(text: str) -> str:
    """One line, without anything that looks like a credential, at most :data:`MAX_MESSAGE` chars."""
    line = redact(" ".join(text.split()))
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def events_for(ref: KindRef, involved: Involved, old: Obj, new: Obj) -> list[EventSpec]:
    """The Events a status write from ``old`` to ``new`` (statuses) produces, ``Ready`` first."""
    conditions = _conditions(new)
    out = []
    for cond in sorted(transitions(old, new), key=lambda c: c["type"] != rules.READY):
        reason = str(cond.get("reason") or cond["type"])[:MAX_REASON]
        message = clean_message(str(cond.get("message") or "") or default_message(cond))
        out.append(EventSpec(involved, event_type(ref, cond, conditions), reason, message, str(cond["type"])))
    return out


# -- the Event objects -----------------------------------------------------------------------------


def event_name(spec: EventSpec, now: float) -> str:
    """``<object>.<hex>`` like client-go (whose suffix is the time in ns); the suffix here also
    hashes the key, so two Events made in the same nanosecond still differ. Long object names are
    cut to keep the name valid."""
    digest = hashlib.sha256("\0".join(spec.key).encode()).hexdigest()[:8]
    suffix = f".{int(now * 1e9):x}{digest}"
    return spec.involved.name[: MAX_NAME - len(suffix)] + suffix


def event_body(spec: EventSpec, name: str, now: float, instance: str) -> Obj:
    """A core/v1 Event, as client-go's legacy recorder makes it (what ``kubectl describe`` reads)."""
    return event_object(
        spec.involved,
        spec.namespace,
        spec.type,
        spec.reason,
        spec.message,
        name=name,
        now=now,
        component=COMPONENT,
        reporting_controller=REPORTING_CONTROLLER,
        instance=instance,
    )


def count_patch(count: int, now: float) -> Obj:
    """The merge patch that records one more occurrence of an aggregated Event."""
    return {"count": count, "lastTimestamp": timestamp(now)}


# -- aggregation and the spam filter -------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """An Event already written: its name, namespace, count and when it was last written."""

    name: str
    namespace: str
    count: int
    last: float


class Aggregates:
    """The recently written Events by key (an LRU, like client-go's), for patching their count."""

    def __init__(self, window: float = AGGREGATION_WINDOW, max_keys: int = MAX_KEYS) -> None:
        self.window = window
        self.max_keys = max_keys
        self._seen: OrderedDict[tuple[str, ...], Seen] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def lookup(self, key: tuple[str, ...], now: float) -> Seen | None:
        """The Event to patch for ``key``, or None: create a new one (never seen, or too long ago)."""
        seen = self._seen.get(key)
        if seen is None:
            return None
        if now - seen.last > self.window:
            del self._seen[key]
            return None
        self._seen.move_to_end(key)
        return seen

    def remember(self, key: tuple[str, ...], seen: Seen) -> None:
        self._seen[key] = seen
        self._seen.move_to_end(key)
        while len(self._seen) > self.max_keys:
            self._seen.popitem(last=False)

    def forget(self, key: tuple[str, ...]) -> None:
        self._seen.pop(key, None)


class RateLimit:
    """All of a replica's Event writes together: ``qps`` per second with bursts of ``burst``, like
    the client a Go controller's recorder writes through (controller-runtime's defaults: 20, 30).
    A burst of new objects then costs the API server a bounded rate of Event writes instead of as
    many as it can take while it is also serving the objects themselves; the Events wait in the
    recorder's queue (dropped and counted when it is full). ``qps`` 0 or less: no limit."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._at: float | None = None

    def delay(self, now: float) -> float:
        """Take a token: 0 if one is there now, else the seconds until it is (then it is taken)."""
        if self.qps <= 0:
            return 0.0
        if self._at is not None:
            self._tokens = min(float(self.burst), self._tokens + max(0.0, now - self._at) * self.qps)
        self._at = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps


class SpamFilter:
    """A token bucket per object (by uid): :data:`SPAM_BURST` tokens, one more every
    :data:`SPAM_REFILL_SECONDS`. Buckets are kept for the :data:`MAX_KEYS` most recent objects."""

    def __init__(
        self, burst: int = SPAM_BURST, refill_seconds: float = SPAM_REFILL_SECONDS, max_keys: int = MAX_KEYS
    ) -> None:
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # uid → (tokens, at)

    def allow(self, obj: str, now: float) -> bool:
        """Take a token for ``obj``; False (drop the Event) when it has none left."""
        tokens, at = self._buckets.get(obj, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + max(0.0, now - at) / self.refill_seconds)
        allowed = tokens >= 1.0
        self._buckets[obj] = (tokens - 1.0 if allowed else tokens, now)
        self._buckets.move_to_end(obj)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return allowed
