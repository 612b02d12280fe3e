"""Automatic template selection for an AIMService (docs/original.md#template-selection), with every
outcome surfaced.

The original operator computes the right answer and then throws most of it away: when every Ready
template was filtered for being unoptimized, or when several templates tie for the best rank, it
builds a precise reason and message and then reports a generic ``TemplateNotFound`` "No template
found" instead; the per-candidate reasons (why each template was chosen or rejected) are computed
and never written anywhere. This module keeps the same six stages (availability, optimization,
overrides, GPU presence, scope, ranking) but returns a service-level reason and a message a
``kubectl describe`` reader can act on (``UnoptimizedTemplatesFiltered``,
``TemplateSelectionAmbiguous``, ``RequiredGPUNotInCluster``...), plus one :class:`Verdict` per
candidate for the audit trail. Both API groups are read through
:class:`aimcore.domain.families.templates.Template` (``gpu`` vs ``gpuSelector``, ``Ready`` vs the
legacy ``Available``). Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aim_deployer.overrides import Overrides
from aimcore.api.kinds import GROUP_LEGACY
from aimcore.api.types import Obj
from aimcore.domain.families.templates import Template
from aimcore.domain.gpu import GPU_RESOURCE, normalize_model

__all__ = [
    "AMBIGUOUS",
    "BEST_MATCH",
    "CLUSTER_SCOPE_SHADOWED",
    "LOWER_PREFERENCE_RANK",
    "OUTCOME_AMBIGUOUS",
    "OUTCOME_GPU_NOT_IN_CLUSTER",
    "OUTCOME_NOT_FOUND",
    "OUTCOME_NOT_READY",
    "OUTCOME_OVERRIDES_NOT_MATCHED",
    "OUTCOME_SELECTED",
    "OUTCOME_UNOPTIMIZED_FILTERED",
    "REQUIRED_GPU_NOT_IN_CLUSTER",
    "SERVICE_OVERRIDES_NOT_MATCHED",
    "UNOPTIMIZED_TEMPLATE_FILTERED",
    "Candidate",
    "Obj",
    "Selection",
    "Traits",
    "Verdict",
    "overrides_match",
    "rank_key",
    "select_template",
    "template_traits",
]


# Per-candidate verdict reasons.
BEST_MATCH = "BestMatch"
LOWER_PREFERENCE_RANK = "LowerPreferenceRank"
UNOPTIMIZED_TEMPLATE_FILTERED = "UnoptimizedTemplateFiltered"
SERVICE_OVERRIDES_NOT_MATCHED = "ServiceOverridesNotMatched"
REQUIRED_GPU_NOT_IN_CLUSTER = "RequiredGPUNotInCluster"
CLUSTER_SCOPE_SHADOWED = "ClusterScopeShadowed"
AMBIGUOUS = "Ambiguous"
# Not-ready verdicts are "Template" + the template's status (TemplatePending, TemplateFailed...).

# Service-level outcomes (Selection.reason).
OUTCOME_SELECTED = "TemplateSelected"
OUTCOME_NOT_FOUND = "TemplateNotFound"
OUTCOME_NOT_READY = "TemplateNotReady"
OUTCOME_UNOPTIMIZED_FILTERED = "UnoptimizedTemplatesFiltered"
OUTCOME_OVERRIDES_NOT_MATCHED = "ServiceOverridesNotMatched"
OUTCOME_GPU_NOT_IN_CLUSTER = "RequiredGPUNotInCluster"
OUTCOME_AMBIGUOUS = "TemplateSelectionAmbiguous"

OPTIMIZED = "optimized"
PREVIEW = "preview"
UNOPTIMIZED = "unoptimized"

_NOT_READY_STATES = ("Pending", "Progressing", "NotAvailable", "Degraded", "Failed")
_TYPE_ORDER = (OPTIMIZED, PREVIEW, UNOPTIMIZED)
_GPU_ORDER = ("MI325X", "MI300X", "MI250X", "MI210")
_METRIC_ORDER = ("latency", "throughput")
_PRECISION_ORDER = ("fp4", "int4", "fp8", "int8", "fp16", "bf16", "fp32")
_LISTED = 3  # how many templates a message names before "and N more"


Candidate = Template
"""One template the service could use (either scope, either group)."""


@dataclass(frozen=True)
class Verdict:
    """Why one candidate was chosen or rejected."""

    name: str
    kind: str
    namespace: str | None
    reason: str
    message: str


@dataclass(frozen=True)
class Selection:
    """The outcome for the service: the chosen template (if any), a reason and message for its
    ``TemplateReady`` condition, and one verdict per candidate, in candidate order."""

    chosen: Candidate | None
    reason: str
    message: str
    verdicts: tuple[Verdict, ...]


@dataclass(frozen=True)
class Traits:
    """What selection looks at, normalized: profile type, metric and precision lower case, the GPU
    model through :func:`aimcore.domain.gpu.normalize_model`, the GPU count 0 when unknown."""

    profile_type: str
    metric: str | None
    precision: str | None
    gpu_model: str | None
    gpu_count: int
    gpu_resource: str = GPU_RESOURCE

    def describe(self) -> str:
        """``optimized, MI300X, latency, fp8`` (absent values left out)."""
        return ", ".join(v for v in (self.profile_type, self.gpu_model, self.metric, self.precision) if v)


# --- reading templates and overrides ----------------------------------------------------------------


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, Mapping | list):
        return None
    text = str(value).strip()
    return text or None


def _lower(value: Any) -> str | None:
    text = _text(value)
    return text.lower() if text else None


def _count(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return 0


def _gpu_name(value: Any) -> str | None:
    text = _text(value)
    return normalize_model(text) if text else None


def template_traits(c: Candidate) -> Traits:
    """The candidate's traits: profile metadata in its status first (what discovery found), the
    spec as fallback; the GPU model from the spec first (what the template asks for), the profile's
    GPU as fallback. A template without any profile type counts as unoptimized."""
    profile = c.profile
    gpu = c.gpu
    return Traits(
        profile_type=_lower(profile.type) or _lower(c.profile_type) or UNOPTIMIZED,
        metric=_lower(profile.metric) or _lower(c.metric),
        precision=_lower(profile.precision) or _lower(c.precision),
        gpu_model=_gpu_name(gpu.model) or _gpu_name(profile.gpu),
        gpu_count=_count(profile.gpu_count) or _count(gpu.requests),
        gpu_resource=gpu.resource_name,
    )


@dataclass(frozen=True)
class _Wanted:
    metric: str | None
    precision: str | None
    gpu_model: str | None
    gpu_count: int | None  # None: not asked; 0 is asked for (GPU nodes, no GPU resources)
    gpu_resource: str | None = None

    @property
    def empty(self) -> bool:
        return not (
            self.metric or self.precision or self.gpu_model or self.gpu_count is not None or self.gpu_resource
        )

    def describe(self) -> str:
        parts = []
        if self.metric:
            parts.append(f"metric {self.metric}")
        if self.precision:
            parts.append(f"precision {self.precision}")
        if self.gpu_model or self.gpu_count is not None:
            count = f"{self.gpu_count} x " if self.gpu_count is not None else ""
            parts.append(f"GPU {count}{self.gpu_model or 'any model'}")
        if self.gpu_resource:
            parts.append(f"GPU resource {self.gpu_resource}")
        return ", ".join(parts)


def _wanted(overrides: Overrides | None) -> _Wanted:
    """What ``spec.overrides`` asks for, normalised for comparing with templates' traits."""
    if overrides is None:
        return _Wanted(None, None, None, None)
    return _Wanted(
        metric=_lower(overrides.metric),
        precision=_lower(overrides.precision),
        gpu_model=_gpu_name(overrides.gpu_model),
        gpu_count=None if overrides.gpu_count is None else max(overrides.gpu_count, 0),
        gpu_resource=_text(overrides.gpu_resource),
    )


def overrides_match(traits: Traits, overrides: Overrides | None) -> bool:
    """Whether a template with ``traits`` satisfies the service's ``spec.overrides``: metric,
    precision, GPU model and GPU count equal (case-insensitive; a template without the value does
    not match). No overrides match everything.

    Unlike the original, a template that names no GPU model or count does not match an override
    that does: there a CPU template (or one for any GPU) satisfied ``gpu: {model: MI300X,
    requests: 2}`` and the service deployed without the GPUs asked for, and ``requests: 0`` was
    not an override at all. Here the override makes a derived template that asks for them."""
    return not _mismatches(traits, _wanted(overrides))


def _mismatches(traits: Traits, wanted: _Wanted) -> list[str]:
    out = []
    if wanted.metric and traits.metric != wanted.metric:
        out.append(f"metric {traits.metric or 'unset'} is not {wanted.metric}")
    if wanted.precision and traits.precision != wanted.precision:
        out.append(f"precision {traits.precision or 'unset'} is not {wanted.precision}")
    if wanted.gpu_model and traits.gpu_model != wanted.gpu_model:
        out.append(f"GPU {traits.gpu_model or 'none'} is not {wanted.gpu_model}")
    if wanted.gpu_count is not None and traits.gpu_count != wanted.gpu_count:
        out.append(f"GPU count {traits.gpu_count} is not {wanted.gpu_count}")
    if wanted.gpu_resource and traits.gpu_resource != wanted.gpu_resource:
        out.append(f"GPU resource {traits.gpu_resource} is not {wanted.gpu_resource}")
    return out


# --- ranking ----------------------------------------------------------------------------------------


def _position(order: Sequence[str], value: str | None) -> int:
    return order.index(value) if value in order else len(order)


def rank_key(traits: Traits) -> tuple[int, int, int, int]:
    """Lexicographic rank, lower is better: profile type, GPU model, metric, precision."""
    return (
        _position(_TYPE_ORDER, traits.profile_type),
        _position(_GPU_ORDER, traits.gpu_model),
        _position(_METRIC_ORDER, traits.metric),
        _position(_PRECISION_ORDER, traits.precision),
    )


_CRITERIA: tuple[tuple[str, Callable[[Traits], str]], ...] = (
    ("profile type", lambda t: t.profile_type),
    ("GPU", lambda t: t.gpu_model or "none"),
    ("metric", lambda t: t.metric or "none"),
    ("precision", lambda t: t.precision or "none"),
)


def _lost_on(loser: Traits, best: Traits) -> str:
    """``precision fp16 ranks after fp8``: the first criterion on which ``loser`` ranks worse."""
    for index, (name, value) in enumerate(_CRITERIA):
        if rank_key(loser)[index] != rank_key(best)[index]:
            return f"{name} {value(loser)} ranks after {value(best)}"
    return "ranks the same"  # pragma: no cover - only called for strictly worse keys


# --- selection --------------------------------------------------------------------------------------


def _ready(c: Candidate) -> tuple[bool, str]:
    """(ready, the template's status as written, ``Pending`` when unset)."""
    state = c.state
    ready = "Available" if c.ref.group == GROUP_LEGACY else "Ready"
    return state == ready, state


def _not_ready_reason(state: str) -> str:
    # Statuses outside the documented set (none today) read as pending: the template is not usable yet.
    return f"Template{state}" if state in _NOT_READY_STATES else "TemplatePending"


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    rest = len(items) - _LISTED
    return f"{shown} and {rest} more" if rest > 0 else shown


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def select_template(
    candidates: Sequence[Candidate],
    *,
    overrides: Overrides | None,
    allow_unoptimized: bool,
    cluster_gpus: Collection[str],
) -> Selection:
    """Pick the template for a service among ``candidates`` (the caller restricted them to the
    resolved model's templates). ``cluster_gpus`` are the GPU models present on at least one node.
    See the module docstring and docs/original.md#template-selection for the stages: each keeps the
    candidates it lets through (a verdict for each one it rejects), or ends the selection with the
    service's outcome."""
    if not candidates:
        return Selection(None, OUTCOME_NOT_FOUND, "no templates exist for this model", ())
    run = _Run(list(candidates))
    stages: tuple[Callable[[list[int]], list[int] | Selection], ...] = (
        run.available,
        functools.partial(run.optimized, allow_unoptimized=allow_unoptimized),
        functools.partial(run.matching, wanted=_wanted(overrides)),
        functools.partial(run.placeable, cluster_gpus=cluster_gpus),
        run.in_scope,
    )
    survivors = list(range(len(run.cs)))
    for stage in stages:
        outcome = stage(survivors)
        if isinstance(outcome, Selection):
            return outcome
        survivors = outcome
    return run.ranked(survivors)


@dataclass
class _Run:
    """One selection under way: the candidates (by index), their traits, the verdicts given so far,
    and why unoptimized templates were filtered (said again in later outcomes' messages)."""

    cs: list[Candidate]
    traits: list[Traits] = field(init=False)
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    hint: str = ""

    def __post_init__(self) -> None:
        self.traits = [template_traits(c) for c in self.cs]

    def reject(self, i: int, reason: str, message: str) -> None:
        c = self.cs[i]
        self.verdicts[i] = Verdict(c.name, c.ref.kind, c.namespace, reason, message)

    def done(self, chosen: Candidate | None, reason: str, message: str) -> Selection:
        return Selection(chosen, reason, message, tuple(self.verdicts[i] for i in range(len(self.cs))))

    def ordered(self, indices: Iterable[int]) -> list[int]:
        """Indices in a stable order for messages, independent of the caller's order."""
        cs = self.cs
        return sorted(
            indices, key=lambda i: (cs[i].name, cs[i].namespace or "", cs[i].ref.kind, cs[i].ref.group, i)
        )

    def with_hint(self, message: str) -> str:
        return f"{message} ({self.hint})" if self.hint else message

    # -- the stages, in order -------------------------------------------------------------------

    def available(self, survivors: list[int]) -> list[int] | Selection:
        """1. Only ready templates; none ready: the service waits (a template may still recover)."""
        ready: list[int] = []
        states: dict[int, str] = {}
        for i in survivors:
            ok, state = _ready(self.cs[i])
            states[i] = state
            if ok:
                ready.append(i)
            else:
                self.reject(i, _not_ready_reason(state), f"template status is {state}, not ready")
        if ready:
            return ready
        listed = [f"{self.cs[i].name} ({states[i]})" for i in self.ordered(survivors)]
        if all(state == "Failed" for state in states.values()):
            every = _plural(len(self.cs), "template", "templates")
            message = f"no template for this model is ready: all {every} failed: {_listing(listed)}"
            return self.done(None, OUTCOME_NOT_READY, message)
        message = f"no template for this model is ready yet: {_listing(listed)}"
        return self.done(None, OUTCOME_NOT_READY, message)

    def optimized(self, survivors: list[int], *, allow_unoptimized: bool) -> list[int] | Selection:
        """2. Only optimized templates, unless the service allows the others."""
        kept: list[int] = []
        for i in survivors:
            kind = self.traits[i].profile_type
            if kind == OPTIMIZED or allow_unoptimized:
                kept.append(i)
            else:
                message = f"profile type is {kind}; set spec.template.allowUnoptimized: true to allow it"
                self.reject(i, UNOPTIMIZED_TEMPLATE_FILTERED, message)
        n = len(survivors) - len(kept)
        if n:
            self.hint = (
                f"{_plural(n, 'ready template is', 'ready templates are')} unoptimized or preview and "
                f"{'was' if n == 1 else 'were'} filtered; set spec.template.allowUnoptimized: true to use "
                f"{'it' if n == 1 else 'them'}"
            )
        return kept or self.done(None, OUTCOME_UNOPTIMIZED_FILTERED, self.hint)

    def matching(self, survivors: list[int], *, wanted: _Wanted) -> list[int] | Selection:
        """3. Only templates matching ``spec.overrides`` (all of them when it asks for nothing)."""
        if wanted.empty:
            return survivors
        kept: list[int] = []
        for i in survivors:
            problems = _mismatches(self.traits[i], wanted)
            if problems:
                self.reject(i, SERVICE_OVERRIDES_NOT_MATCHED, "; ".join(problems))
            else:
                kept.append(i)
        if kept:
            return kept
        offered = [f"{self.cs[i].name} ({self.traits[i].describe()})" for i in self.ordered(survivors)]
        message = (
            f"no ready template matches the overrides ({wanted.describe()}); available: {_listing(offered)}"
        )
        return self.done(None, OUTCOME_OVERRIDES_NOT_MATCHED, self.with_hint(message))

    def placeable(self, survivors: list[int], *, cluster_gpus: Collection[str]) -> list[int] | Selection:
        """4. Only templates whose GPU model some node has (or that name none)."""
        present = sorted({normalize_model(g) for g in cluster_gpus if g and g.strip()})
        have = ", ".join(present) if present else "none"
        kept: list[int] = []
        for i in survivors:
            gpu = self.traits[i].gpu_model
            if gpu is None or gpu in present:
                kept.append(i)
            else:
                self.reject(i, REQUIRED_GPU_NOT_IN_CLUSTER, f"needs GPU {gpu}; GPUs in the cluster: {have}")
        if kept:
            return kept
        needed = sorted({g for i in survivors if (g := self.traits[i].gpu_model)})
        has = f"the cluster has {have}" if present else "there are no AMD GPUs in the cluster"
        message = f"the eligible templates need GPU {' or '.join(needed)} but {has}"
        return self.done(None, OUTCOME_GPU_NOT_IN_CLUSTER, self.with_hint(message))

    def in_scope(self, survivors: list[int]) -> list[int]:
        """5. Namespace-scoped templates shadow the cluster's."""
        namespaced = [i for i in survivors if self.cs[i].ref.namespaced]
        if not namespaced:
            return survivors
        shadowing = _listing([self.cs[i].name for i in self.ordered(namespaced)])
        for i in survivors:
            if not self.cs[i].ref.namespaced:
                self.reject(
                    i, CLUSTER_SCOPE_SHADOWED, f"namespace-scoped templates take precedence: {shadowing}"
                )
        return namespaced

    def ranked(self, survivors: list[int]) -> Selection:
        """6. The best ranked template; several ranking the same are ambiguous, not a silent pick."""
        traits, cs = self.traits, self.cs
        best_key = min(rank_key(traits[i]) for i in survivors)
        best = self.ordered([i for i in survivors if rank_key(traits[i]) == best_key])
        best_traits = traits[best[0]]
        tied = len(best) > 1
        best_names = _listing([cs[i].name for i in best])
        for i in survivors:
            if rank_key(traits[i]) != best_key:
                self.reject(
                    i, LOWER_PREFERENCE_RANK, f"{_lost_on(traits[i], best_traits)} (best: {best_names})"
                )
            elif tied:
                others = _listing([cs[o].name for o in best if o != i])
                self.reject(i, AMBIGUOUS, f"ranks the same as {others} ({best_traits.describe()})")
            else:
                self.reject(i, BEST_MATCH, f"best match ({best_traits.describe()})")
        if tied:
            message = (
                f"{len(best)} templates rank equally ({best_traits.describe()}): "
                f"{_listing([cs[i].label for i in best])}; set spec.template.name to choose one"
            )
            return self.done(None, OUTCOME_AMBIGUOUS, message)
        chosen = cs[best[0]]
        why = "the only eligible one" if len(survivors) == 1 else f"ranked best of {len(survivors)} eligible"
        message = (
            f"selected {chosen.label} ({best_traits.describe()}) from "
            f"{_plural(len(cs), 'candidate', 'candidates')}: {why}"
        )
        return self.done(chosen, OUTCOME_SELECTED, message)
