"""Per-kind aggregation: the top-level ``status.status`` and the ``Ready`` condition, derived from
the component conditions (docs/design.md#status-ownership, docs/original.md#root-status-derivation).

Vocabulary
----------
- **Component conditions** are the condition types ending in ``Ready`` other than ``Ready`` itself
  (``ModelReady``, ``TemplateReady``, ``InferenceServicePodsReady``, ...). Each is owned by one
  service, which reports it as ``True``/``False``/``Unknown`` with a reason.
- **Framework conditions** are ``ConfigValid``, ``AuthValid`` and ``DependenciesReachable``.
- A :class:`State` is a component's (or the object's) lifecycle state. Priorities, best first:
  Running 7 > Ready 6 > Progressing 5 > Starting 4 > Pending 3 > Degraded 2 > NotAvailable 1 >
  Failed 0. The object's state is the *worst* of its components'.

How a report conveys a component's state
----------------------------------------
A condition on the wire (and in the CRD, which prunes anything else) has only type, status,
reason and message, so the state is read from the **reason**:

1. ``status=True`` → Ready, whatever the reason.
2. otherwise the reason decides, first match wins:
   a. the kind's own table (:attr:`Rule.reasons`), then the shared :data:`REASON_STATES`
      (``InvalidSpec``/``ReferenceNotFound``/``AuthError``/``ImageNotFound``/``AddressNotAllowed``/... and
      ``<Child>CreateRejected``/``<Child>CreateForbidden``, a child the API server refused → Failed,
      ``Downloading``/... → Progressing, ``PodsStarting`` → Starting,
      ``PodsPending``/``FailedScheduling``/... → Pending, ``CacheLost``/``ImagePullBackOff`` →
      Degraded, ``GPUNotAvailable``/``VRAMNotAvailable`` → NotAvailable);
   b. suffixes: ``…NotAvailable`` → NotAvailable; ``…Degraded`` and ``…Error`` (infrastructure:
      ``FetchError``, ``InternalError``, ``InfrastructureError``) → Degraded; ``…Failed``/``…Failure``
      → Failed;
   c. a dependency reason (:data:`DEPENDENCY_REASONS`: ``ModelNotReady``, ``TemplateNotReady``, the
      original's one reason for a dependency in any state; a template's ``ModelFailed``) takes the
      state its message names (:func:`dependency_message`) when that is an error state;
   d. anything else → Pending for an *upstream* component (something the object waits for but does
      not make: model, template, runtime config, GPU) and Progressing for a *downstream* one
      (something the object makes or drives: InferenceService, pods, caches, jobs).
   e. As in the original, an upstream component that is not in an error state always makes the
      object wait: Pending, whatever its reason says (a model still Progressing keeps a service
      Pending, not Starting; only its own work under way makes it Starting). The reasons
      the services report for waiting are listed (:data:`WAITING_REASONS`), as are those only ever
      reported where no state is read (:data:`UNREAD_REASONS`): a test keeps every reason a
      service reports known to these tables.
   A reporter that wants a specific state therefore picks a reason from these tables; unknown
   reasons degrade gracefully to "waiting" (Pending/Progressing), never to Failed.

Derivation (:func:`derive`), fixing the original's gaps
--------------------------------------------------------
1. ``ConfigValid=False`` or ``AuthValid=False`` → Failed; ``Ready=False`` with that condition's
   reason (``InvalidSpec``, ``ReferenceNotFound``, ``AuthError``) and message.
2. Otherwise the worst component state. All components True → ``Ready=True/AllComponentsReady``.
   Else ``Ready=False`` with the worst error component's (Failed/Degraded/NotAvailable; ties: the
   first in the list) reason and message ``Component X is not ready: …``; without an error
   component but with ``DependenciesReachable=False`` → ``InfrastructureError``; otherwise reason
   ``Progressing`` and the message of the worst not-ready component.
3. ``DependenciesReachable=False`` while not Ready → Degraded (Failed stays Failed).
4. The state becomes the kind's enum value through :attr:`Rule.values` (AIMService: Progressing →
   Starting, Ready → Running; values a kind's enum lacks are mapped, never written raw — the
   original could write ``NotAvailable`` into an AIMService).
5. ``Ready`` carries ``observedGeneration`` (the original never set it) and keeps its
   ``lastTransitionTime`` unless its status flips; it is recomputed on every report, so it is never
   left stale by a component that changed.

Precedence over reporters' explicit values
------------------------------------------
Derived values win whenever the kind has a rule **and** the status holds at least one component
condition: then ``status.status`` (or the kind's field) and ``Ready`` are a pure function of the
conditions, whichever service reported last, so the result is deterministic, idempotent and the
same in :meth:`aimcore.runtime.composer.Composer.is_current` (what reporters check) as in what the status
service writes. Without component conditions nothing is derived and the explicit ``fields`` and
``Ready`` the reporters send stand (today's services: the deployer's ``Pending``/``Reconciling``,
the harness's ``Failed``/``InvalidSpec``), so existing reporters keep working unchanged.

Kinds
-----
- ``aim.eai.amd.com``: AIMService (Pending|Starting|Running|Degraded|Failed; NotAvailable →
  Pending: the service waits for resources), models, templates, caches and the model source
  (Pending|Progressing|Ready|Degraded|Failed|NotAvailable). Runtime configs have no status field:
  only ``Ready`` is derived.
- ``aim.silogen.ai`` (legacy): AIMService as above; images/models without NotAvailable (→ Pending);
  templates with ``Available`` for Ready (NotAvailable → Pending); caches
  (Pending|Progressing|Available|Failed: Degraded → Failed, NotAvailable → Pending).
- ``inference.llmkube.dev`` ``Model``: **no rule**. Its ``phase`` (Pending|Downloading|Copying|
  Ready|Failed) and its Available/Progressing/Degraded conditions are LLMKube's own vocabulary,
  not component conditions; the reporting service (cache) sets them directly.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from aimcore.api.kinds import GROUP_AIM, GROUP_LEGACY, GROUP_LLMKUBE
from aimcore.api.types import Obj
from aimcore.runtime.composer import rfc3339

READY = "Ready"
CONFIG_VALID = "ConfigValid"
AUTH_VALID = "AuthValid"
DEPENDENCIES_REACHABLE = "DependenciesReachable"
FRAMEWORK_CONDITIONS = frozenset({READY, CONFIG_VALID, AUTH_VALID, DEPENDENCIES_REACHABLE})

ALL_COMPONENTS_READY = "AllComponentsReady"
PROGRESSING_REASON = "Progressing"
INFRASTRUCTURE_ERROR = "InfrastructureError"


class State(enum.StrEnum):
    """Lifecycle state of a component or an object, before the kind's enum mapping."""

    RUNNING = "Running"
    READY = "Ready"
    PROGRESSING = "Progressing"
    STARTING = "Starting"
    PENDING = "Pending"
    DEGRADED = "Degraded"
    NOT_AVAILABLE = "NotAvailable"
    FAILED = "Failed"


PRIORITY: Mapping[State, int] = {
    State.RUNNING: 7,
    State.READY: 6,
    State.PROGRESSING: 5,
    State.STARTING: 4,
    State.PENDING: 3,
    State.DEGRADED: 2,
    State.NOT_AVAILABLE: 1,
    State.FAILED: 0,
}
ERROR_STATES = frozenset({State.FAILED, State.DEGRADED, State.NOT_AVAILABLE})

# Components the object waits for but does not make. Everything else is downstream.
UPSTREAM_COMPONENTS = frozenset(
    {
        "ModelReady",
        "ClusterModelReady",
        "TemplateReady",
        "ServiceTemplateReady",
        "ClusterServiceTemplateReady",
        "RuntimeConfigReady",
        "GPUReady",
        "StorageQuotaReady",  # a model cache waits for room under its storage quota
    }
)

# Reasons whose state is not what their suffix (or the component's direction) suggests, from the
# original's controllers (docs/original.md#conditions-and-reasons).
REASON_STATES: Mapping[str, State] = {
    # framework categories and hard failures
    "InvalidSpec": State.FAILED,
    "ReferenceNotFound": State.FAILED,
    "AuthError": State.FAILED,
    "InvalidImageReference": State.FAILED,
    "ServerlessModeRejected": State.FAILED,
    "GatewayNotConfigured": State.FAILED,
    "MultipleModelsFound": State.FAILED,
    "TemplateSelectionAmbiguous": State.FAILED,
    "UnoptimizedTemplatesFiltered": State.FAILED,
    "ImagePullAuthFailure": State.FAILED,
    "ImageNotFound": State.FAILED,
    "SecretNotFound": State.FAILED,
    "SourceNotFound": State.FAILED,
    "PodOOMKilled": State.FAILED,
    "JobBackoffLimitExceeded": State.FAILED,
    "JobDeadlineExceeded": State.FAILED,
    "InvalidSizeOutput": State.FAILED,
    "IntegrityCheckFailed": State.FAILED,
    "StorageFull": State.FAILED,
    "InvalidDiscoveryOutput": State.FAILED,
    "InvalidPullSecret": State.FAILED,
    "ChecksumMismatch": State.FAILED,
    "DownloadStalled": State.FAILED,
    "InvalidSource": State.FAILED,
    "UnsupportedMediaType": State.FAILED,
    "InvalidDownloadProtocol": State.FAILED,
    "DownloadFilterUnsupported": State.FAILED,
    # an imported claim (pvc://) that is not the cache's to import, or whose files are wrong
    "ClaimInOtherNamespace": State.FAILED,
    "MissingFiles": State.FAILED,
    "SizeMismatch": State.FAILED,
    # a spec field changed after it was set (a model cache's SourceReady; the deployer reports it
    # under ConfigValid, which fails the service whatever the reason)
    "ImmutableFieldChanged": State.FAILED,
    "ProtocolUnavailable": State.FAILED,
    "ProvisioningFailed": State.FAILED,
    # the API server refused a child the object writes (400/422: its content; 403: permission);
    # only a user or an administrator can change that (issue 15)
    "ModelHasNoTemplates": State.FAILED,
    "ModelNameConflict": State.FAILED,
    # a GPU override of 0 on a template without a GPU model: only the user can say which GPU
    "GPUOverrideNotApplicable": State.FAILED,
    "TemplateNameConflict": State.FAILED,
    **{
        f"{child}Create{how}": State.FAILED
        for child in (
            "Template",
            "Model",
            "Cache",
            "InferenceService",
            "HTTPRoute",
            "ScaledObject",  # a service's own KEDA ScaledObject (scale to zero)
            "ModelCache",  # a template cache's model cache
            "Pvc",  # a model cache's PVC
            "DownloadJob",  # a model cache's download Job
            "ImportJob",  # an imported (pvc://) model cache's check in place
            "VerifyJob",  # an LLMKube Model's verify Job
        )
        for how in ("Rejected", "Forbidden")
    },
    # the outbound address policy refused the spec's host (or its redirect / token realm), or a
    # token realm would get the pull secret in the clear: only the user (or the operator's
    # AIM_OUTBOUND_* settings) can fix it
    "AddressNotAllowed": State.FAILED,
    "SourceNotAllowed": State.FAILED,
    "InsecureTokenRealm": State.FAILED,
    # infrastructure-like: degraded, retried
    "GPUCheckFailed": State.DEGRADED,
    # a custom model's base image the registry does not have (the released original: Degraded; its
    # sources are its own, the image only the runtime)
    "BaseImageNotFound": State.DEGRADED,
    "SomeFiltersFailed": State.DEGRADED,
    "SomeTemplatesDegraded": State.DEGRADED,
    "ImagePullBackOff": State.DEGRADED,
    # the API server refuses the predictor's pods (no such PriorityClass, a ResourceQuota, admission)
    "PodsNotCreated": State.DEGRADED,
    "CacheLost": State.DEGRADED,
    "PathTemplateInvalid": State.DEGRADED,
    "RequestTimeoutInvalid": State.DEGRADED,
    # a route without hostnames on a gateway with several listeners: the spec must name them
    "RouteHostnameRequired": State.FAILED,
    # the Gateway refused the route: the service runs, unreachable through it, until the user fixes
    # it (the original never surfaced a rejection: its route stayed HTTPRoutePending)
    "HTTPRouteRejected": State.DEGRADED,
    "CrashLoopBackOff": State.DEGRADED,
    "PvcLost": State.DEGRADED,
    "JobEvicted": State.DEGRADED,
    "SourceUnreachable": State.DEGRADED,
    "SomeTemplatesRejected": State.DEGRADED,
    # the model's defaultServiceTemplate names no template: services relying on it fail, the others
    # (naming a template) can still use the model
    "DefaultTemplateNotFound": State.DEGRADED,
    # nowhere to run (the original's "all templates NotAvailable")
    "NoTemplatesAvailable": State.NOT_AVAILABLE,
    "RequiredGPUNotInCluster": State.NOT_AVAILABLE,
    # waiting for something to happen elsewhere
    "PodsPending": State.PENDING,
    "FailedScheduling": State.PENDING,
    "FailedMount": State.PENDING,
    "FailedAttachVolume": State.PENDING,
    "FailedCreatePodSandBox": State.PENDING,
    "PvcPending": State.PENDING,
    "CreatingModel": State.PENDING,
    "JobNotCreated": State.PENDING,
    "WaitingForDiscoverySlot": State.PENDING,
    "WaitingForDownloadSlot": State.PENDING,
    # work in progress
    "PodsStarting": State.STARTING,
    "CacheNotReady": State.PROGRESSING,
    "CacheCreating": State.PROGRESSING,
    "CreatingRuntime": State.PROGRESSING,
    "CreatingCaches": State.PROGRESSING,
    "CreatingTemplates": State.PROGRESSING,
    "TemplatesProgressing": State.PROGRESSING,
    "AwaitingMetadata": State.PROGRESSING,
    "Pulling": State.PROGRESSING,
    "JobRunning": State.PROGRESSING,
    "Downloading": State.PROGRESSING,
    "Verifying": State.PROGRESSING,
    "WaitingForMetrics": State.PROGRESSING,
    "HTTPRoutePending": State.PROGRESSING,
}

# Reasons the services report while waiting (for something upstream, or on work under way
# downstream). Listed so that the rules know every reason a service reports
# (tests/unit/status/test_status_reasons.py), and left to the direction default: Pending on an upstream
# component, Progressing on a downstream one.
WAITING_REASONS: frozenset[str] = frozenset(
    {
        "AwaitingDiscovery",  # discovery: Discovered, until the Job has run
        "AwaitingInferenceService",  # deployer: InferenceServicePodsReady before the InferenceService
        "CacheRetrying",  # deployer: CacheReady while a failed template cache is retried once
        "CachesNotReady",  # cache: ModelCachesReady of a template cache
        "ConfigNotFound",  # RuntimeConfigReady: a named runtime config, until it is created
        "CreatingDerivedTemplate",  # deployer: TemplateReady while a template with overrides is made
        "DiscoveryLogUnavailable",  # discovery: DiscoveryJobReady, the log of a finished Job not readable yet
        "HTTPRouteCreating",  # deployer: HTTPRouteReady
        "HPANotFound",  # deployer: HPAReady, until KEDA makes the HPA of the service's ScaledObject
        "ScaleTargetNotReady",  # deployer: HPAReady, the HPA cannot scale the predictor yet
        # deployer: InferenceServiceReady/PodsReady of a service whose spec is refused (ConfigValid)
        "AwaitingValidSpec",
        "ModelNotFound",  # TemplateReady/ModelReady: the named model does not exist (yet)
        # deployer: TemplateReady, no template for the model (yet); a named one that does not
        # exist is ConfigValid=False/ReferenceNotFound besides
        "TemplateNotFound",
        "ModelPending",  # deployer: ModelReady of a model nobody has started on
        "RuntimeNotReady",  # deployer: InferenceServiceReady while the model server starts
        "ServiceOverridesNotMatched",  # deployer: TemplateReady, until a template with overrides exists
        "WaitingForPods",  # deployer: InferenceServicePodsReady before any predictor pod
        # cache: StorageQuotaReady of a model cache with no room (yet), or room being made
        "NamespaceQuotaExceeded",
        "ClusterQuotaExceeded",
        "Evicting",
        "StorageQuotaBusy",  # cache: the quota lock is taken (never reported: the reconcile comes back)
        "ClaimNotFound",  # cache: SourceReady/StorageReady of an import, until the user makes the claim
        "ClaimNotBound",  # cache: StorageReady of an import, until the claim is bound
    }
)

# Reasons reported only where the rules read no state: framework conditions and Ready (ConfigValid
# of runtime configs and model sources, the runtime's own verdicts), conditions that are not
# components (MaxModelsLimitReached), or an error's own reason its callers report under another
# (RegistryUnreachable, InvalidImageLabels). Listed for the same test; on a component they would
# get the direction default.
UNREAD_REASONS: frozenset[str] = frozenset(
    {
        "InvalidConfig",  # runtime configs: ConfigValid/Ready
        "InvalidFilter",  # model sources: ConfigValid/Ready
        "ObjectTooLarge",  # the runtime: ConfigValid/Ready
        "RoutingRequiredForScaleToZero",  # deployer: ConfigValid, minReplicas 0 with routing off
        "StatusTooLarge",  # the status service: StatusComplete=False, no component condition
        "Reconciling",  # the runtime: Ready, once a spec is valid again
        "WithinLimit",  # model sources: MaxModelsLimitReached=False
        "WithinQuota",  # cache: StorageQuotaReady=True, StorageQuotaExceeded=False
        "ClaimBound",  # cache: StorageReady=True of an import
        "Imported",  # cache: DownloadReady=True of an import
        "Evicted",  # cache: the Warning Event on a cache a storage quota deleted (no condition)
        # the registry client (registry-sync reports it on RegistryReachable; discovery as RegistryError)
        "RegistryUnreachable",
        "InvalidImageLabels",  # the label parser (discovery reports MetadataExtractionFailed)
        "InvalidSetting",  # settings: a service with a bad setting exits at start, reporting nothing
    }
)


# A dependency that is not Ready, whatever its state (the original's vocabulary: one reason, the
# state its own): the reporter names the dependency's state in the message, written with
# :func:`dependency_message`, and only an error state (Failed, Degraded, NotAvailable) is taken from
# it; otherwise the dependency's direction decides (an upstream one makes the object wait: Pending).
DEPENDENCY_REASONS: frozenset[str] = frozenset(
    # ModelFailed/ClusterModelFailed: a template's model Failed or Degraded (the original's reasons)
    {"ModelNotReady", "TemplateNotReady", "ModelFailed", "ClusterModelFailed"}
)
_NAMED_STATE = re.compile(r"\bis (" + "|".join(s.value for s in State) + r")\b")


def dependency_message(what: str, state: str, detail: str = "") -> str:
    """``<what> is <state>[: detail]``: the message of a :data:`DEPENDENCY_REASONS` condition (``what``
    names the dependency, e.g. ``AIMModel llama``)."""
    return f"{what} is {state}" + (f": {detail}" if detail else "")


def dependency_state(message: str) -> State | None:
    """The error state a dependency message names first, if any."""
    found = _NAMED_STATE.search(message)
    state = State(found.group(1)) if found else None
    return state if state in ERROR_STATES else None


def _by_suffix(reason: str) -> State | None:
    if reason.endswith("NotAvailable"):
        return State.NOT_AVAILABLE
    if reason.endswith(("Degraded", "Error")):
        return State.DEGRADED
    if reason.endswith(("Failed", "Failure")):
        return State.FAILED
    return None


# -- per-kind enum mappings -------------------------------------------------------------------

_IDENTITY: Mapping[State, str] = {s: s.value for s in State}
RESOURCE_VALUES: Mapping[State, str] = {**_IDENTITY, State.RUNNING: "Ready", State.STARTING: "Progressing"}
SERVICE_VALUES: Mapping[State, str] = {
    **_IDENTITY,
    State.READY: "Running",
    State.PROGRESSING: "Starting",
    State.NOT_AVAILABLE: "Pending",
}
LEGACY_IMAGE_VALUES: Mapping[State, str] = {**RESOURCE_VALUES, State.NOT_AVAILABLE: "Pending"}
LEGACY_TEMPLATE_VALUES: Mapping[State, str] = {
    **LEGACY_IMAGE_VALUES,
    State.READY: "Available",
    State.RUNNING: "Available",
}
LEGACY_CACHE_VALUES: Mapping[State, str] = {
    **LEGACY_TEMPLATE_VALUES,
    State.DEGRADED: "Failed",
    State.NOT_AVAILABLE: "Pending",
}


@dataclass(frozen=True)
class Rule:
    """How one kind aggregates. ``status_field`` is ``None`` for kinds whose status has no
    top-level state (runtime configs): only ``Ready`` is derived."""

    values: Mapping[State, str] = field(default_factory=lambda: RESOURCE_VALUES)
    status_field: str | None = "status"
    upstream: frozenset[str] = UPSTREAM_COMPONENTS
    reasons: Mapping[str, State] = field(default_factory=dict)

    def state_of(self, condition: Obj) -> State:
        """The state a component condition conveys (see the module docstring)."""
        if condition.get("status") == "True":
            return State.READY
        reason = str(condition.get("reason") or "")
        if reason in DEPENDENCY_REASONS:
            state = dependency_state(str(condition.get("message") or ""))
        else:
            state = self.reasons.get(reason) or REASON_STATES.get(reason) or _by_suffix(reason)
        upstream = condition.get("type") in self.upstream
        if state is None or (upstream and state not in ERROR_STATES):
            # the original: a dependency that is not ready makes the object wait (Pending); only
            # its own work under way makes it Progressing (a service: Starting)
            return State.PENDING if upstream else State.PROGRESSING
        return state


RESOURCE = Rule()
# A template cache names one template: its absence is a failure of the cache (the original's e2e
# ``fails-if-*``; reported as ReferenceNotFound with ConfigValid=False), where a service waits for
# templates that may still be derived.
TEMPLATE_CACHE = Rule()
# A service whose cache failed its one retry runs without it: degraded, not failed
# (``status.cache.retryAttempts``, docs/specification.md#service-caching).
# The steps after a blocked one report ``Awaiting<step>``: as far along as the blocker at most, so
# the blocker (first in the list) explains ``Ready``.
SERVICE = Rule(
    values=SERVICE_VALUES,
    reasons={
        "CacheFailed": State.DEGRADED,
        **{f"Awaiting{step}": State.PROGRESSING for step in ("RuntimeConfig", "Model", "Template", "Cache")},
    },
)
RUNTIME_CONFIG = Rule(status_field=None)


RULES: Mapping[tuple[str, str], Rule] = {
    (GROUP_AIM, "AIMService"): SERVICE,
    (GROUP_AIM, "AIMModel"): RESOURCE,
    (GROUP_AIM, "AIMClusterModel"): RESOURCE,
    (GROUP_AIM, "AIMServiceTemplate"): RESOURCE,
    (GROUP_AIM, "AIMClusterServiceTemplate"): RESOURCE,
    (GROUP_AIM, "AIMTemplateCache"): TEMPLATE_CACHE,
    (GROUP_AIM, "AIMModelCache"): RESOURCE,
    (GROUP_AIM, "AIMArtifact"): RESOURCE,
    (GROUP_AIM, "AIMClusterModelSource"): RESOURCE,
    (GROUP_AIM, "AIMRuntimeConfig"): RUNTIME_CONFIG,
    (GROUP_AIM, "AIMClusterRuntimeConfig"): RUNTIME_CONFIG,
    (GROUP_LEGACY, "AIMService"): SERVICE,
    (GROUP_LEGACY, "AIMImage"): Rule(values=LEGACY_IMAGE_VALUES),
    (GROUP_LEGACY, "AIMClusterImage"): Rule(values=LEGACY_IMAGE_VALUES),
    (GROUP_LEGACY, "AIMModel"): Rule(values=LEGACY_IMAGE_VALUES),
    (GROUP_LEGACY, "AIMClusterModel"): Rule(values=LEGACY_IMAGE_VALUES),
    (GROUP_LEGACY, "AIMServiceTemplate"): Rule(values=LEGACY_TEMPLATE_VALUES),
    (GROUP_LEGACY, "AIMClusterServiceTemplate"): Rule(values=LEGACY_TEMPLATE_VALUES),
    (GROUP_LEGACY, "AIMTemplateCache"): Rule(values=LEGACY_CACHE_VALUES, reasons=TEMPLATE_CACHE.reasons),
    (GROUP_LEGACY, "AIMModelCache"): Rule(values=LEGACY_CACHE_VALUES),
    (GROUP_LEGACY, "AIMRuntimeConfig"): RUNTIME_CONFIG,
    (GROUP_LEGACY, "AIMClusterRuntimeConfig"): RUNTIME_CONFIG,
    # inference.llmkube.dev Model: deliberately absent (see the module docstring).
}


def rule_for(group: str, kind: str) -> Rule | None:
    return RULES.get((group, kind))


# -- derivation -------------------------------------------------------------------------------


def is_component(condition_type: str) -> bool:
    return condition_type.endswith(READY) and condition_type not in FRAMEWORK_CONDITIONS


def component_name(condition_type: str) -> str:
    return condition_type[: -len(READY)] or condition_type


def worst(states: Iterable[State]) -> State:
    return min(states, key=PRIORITY.__getitem__, default=State.READY)


@dataclass(frozen=True)
class Derived:
    """The outcome of :func:`derive`: the object's state, its kind's value and ``Ready``."""

    state: State
    value: str
    ready_status: str
    reason: str
    message: str


def _is_false(cond: Obj | None) -> bool:
    return cond is not None and cond.get("status") == "False"


def _not_ready_message(cond: Obj) -> str:
    detail = str(cond.get("message") or "") or str(cond.get("reason") or "")
    return f"Component {component_name(str(cond['type']))} is not ready: {detail}"


def derive(rule: Rule, conditions: Iterable[Obj]) -> Derived | None:
    """The derived state and ``Ready``, or ``None`` when there is no component condition."""
    conds = [c for c in conditions if isinstance(c, dict) and c.get("type")]
    by_type = {str(c["type"]): c for c in conds}
    components = [(c, rule.state_of(c)) for c in conds if is_component(str(c["type"]))]
    if not components:
        return None

    for framework in (CONFIG_VALID, AUTH_VALID):
        cond = by_type.get(framework)
        if _is_false(cond):
            assert cond is not None
            reason = str(cond.get("reason") or framework)
            return Derived(
                State.FAILED, rule.values[State.FAILED], "False", reason, str(cond.get("message") or "")
            )

    state = worst(s for _, s in components)
    infra = by_type.get(DEPENDENCIES_REACHABLE)
    infra_down = _is_false(infra)
    if state is State.READY:
        return Derived(state, rule.values[state], "True", ALL_COMPONENTS_READY, "All components are ready")
    if infra_down and state is not State.FAILED:
        state = State.DEGRADED

    # The worst component explains Ready; ties go to the first in the list (stable min).
    culprit, culprit_state = min(components, key=lambda cs: PRIORITY[cs[1]])
    if culprit_state in ERROR_STATES:
        reason, message = str(culprit.get("reason") or "NotReady"), _not_ready_message(culprit)
    elif infra_down:
        assert infra is not None
        reason = INFRASTRUCTURE_ERROR
        message = str(infra.get("message") or "") or _not_ready_message(culprit)
    else:
        reason, message = PROGRESSING_REASON, _not_ready_message(culprit)
    return Derived(state, rule.values[state], "False", reason, message)


def aggregate(
    rule: Rule,
    status: Obj,
    *,
    now: datetime,
    previous: Obj | None = None,
    generation: int | None = None,
) -> Obj:
    """``status`` with the derived top-level state and ``Ready`` condition (a new dict).

    ``previous`` is the status before this change (default: ``status`` itself): ``Ready`` keeps its
    ``lastTransitionTime`` from there unless its status flips, even if a reporter's own ``Ready``
    was merged in between. ``generation`` (default: ``status.observedGeneration``) is set on
    ``Ready``. Without component conditions ``status`` is returned unchanged (as a shallow copy;
    nothing of ``status`` is modified).
    """
    # a shallow copy is enough: only top-level keys and entries of the (new) conditions list are
    # replaced, nothing nested is modified
    out: Obj = dict(status)
    conditions: list[Obj] = list(out.get("conditions") or [])
    derived = derive(rule, conditions)
    if derived is None:
        return out
    if rule.status_field:
        out[rule.status_field] = derived.value

    gen = generation if generation is not None else out.get("observedGeneration")
    before = previous if previous is not None else status
    old_ready = next(
        (c for c in (before.get("conditions") or []) if isinstance(c, dict) and c.get("type") == READY),
        None,
    )
    ready: Obj = {"type": READY, "status": derived.ready_status, "reason": derived.reason}
    if derived.message:
        ready["message"] = derived.message
    if gen is not None:
        ready["observedGeneration"] = gen
    kept = old_ready.get("lastTransitionTime") if old_ready else None
    same_status = old_ready is not None and old_ready.get("status") == derived.ready_status
    ready["lastTransitionTime"] = kept if same_status and kept else rfc3339(now)
    for i, cond in enumerate(conditions):
        if isinstance(cond, dict) and cond.get("type") == READY:
            conditions[i] = ready
            break
    else:
        conditions.append(ready)
    out["conditions"] = conditions
    return out


class AimRules:
    """The rules above as the runtime's composition takes them
    (:class:`aimcore.runtime.composer.KindRules`)."""

    def aggregate(self, group: str, kind: str, status: Obj, *, now: datetime, previous: Obj) -> Obj:
        rule = rule_for(group, kind)
        return status if rule is None else aggregate(rule, status, now=now, previous=previous)

    def state_field(self, group: str, kind: str) -> str:
        """``status``; LLMKube's ``Model`` names its state ``phase``."""
        return "phase" if group == GROUP_LLMKUBE else "status"
