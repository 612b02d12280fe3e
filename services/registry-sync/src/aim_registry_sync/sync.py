"""The AIMClusterModelSource reconciler: list the registry, match the filters, create the missing
AIMClusterModels (never delete), report status and a decision per sync, schedule the next sync.

When a sync runs: the first time this replica sees the source, when its generation, labels or
annotations change (touch an annotation to force a sync), and when the next sync is due:
``syncInterval`` after a successful sync, a backoff after a failed one (a requeue is scheduled).
Status-only changes (our own status writes) do not start a sync, so writing ``lastSyncTime`` does
not loop. Transient failures (registry unreachable, secret missing: Secrets are not watched) are
retried with a growing backoff (30 s doubling, at most 10 min or ``syncInterval``).

A ``syncInterval`` below 30 s is clamped to 30 s (a registry listing every few milliseconds is a
rate-limit ban, not a feature) and the clamp is said, not silent: ``ConfigValid`` stays True with
reason ``SyncIntervalClamped`` and a message naming the interval asked for and the one used.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aim_registry_sync.filters import (
    INVALID_FILTER,
    SOURCE_LABEL,
    Filter,
    Image,
    InvalidFilter,
    Plan,
    model_body,
    parse_duration,
    parse_filters,
    plan,
)
from aimcore.api.backoff import Backoff, Jitter, jitter_key
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.crds.aim import AIMClusterModelSource
from aimcore.api.errors import AimError
from aimcore.api.kinds import GROUP_AIM, SECRET
from aimcore.domain.families.models import Model
from aimcore.domain.naming import label_value
from aimcore.domain.oci import (
    OCI_ERRORS,
    AuthFailed,
    CredentialsError,
    DockerConfig,
    ImageNotFound,
    InvalidReference,
    OCIError,
    RegistryClient,
    RegistryUnreachable,
    credentials_from_secrets,
)
from aimcore.runtime import Children, How, Kube, Refusal, Request, Result
from aimcore.runtime.composer import rfc3339

log = logging.getLogger(__name__)

AIMCLUSTERMODEL = Model.kind(GROUP_AIM, cluster=True)

MIN_INTERVAL = 30.0
FAILURE_RETRY = Backoff(base=30.0, cap=600.0)
"""A failed sync is retried after 30 s doubling to 10 min, and never later than the next regular sync."""
MAX_LISTED_IN_MESSAGE = 10

# condition types and reasons
READY = "Ready"
CONFIG_VALID = "ConfigValid"
REGISTRY_REACHABLE = "RegistryReachable"
LIMIT_REACHED = "MaxModelsLimitReached"

SYNCED = "Synced"
SECRET_NOT_FOUND = "SecretNotFound"
INVALID_PULL_SECRET = "InvalidPullSecret"
SOME_FILTERS_FAILED = "SomeFiltersFailed"
CONFIGURATION_VALID = "ConfigurationValid"
SYNC_INTERVAL_CLAMPED = "SyncIntervalClamped"

_OCI_REASONS: dict[type[OCIError], str] = {
    AuthFailed: "AuthFailed",
    RegistryUnreachable: "RegistryUnreachable",
    ImageNotFound: "RepositoryNotFound",
    CredentialsError: INVALID_PULL_SECRET,
}


def oci_reason(exc: OCIError | InvalidReference) -> str:
    for cls, reason in _OCI_REASONS.items():
        if isinstance(exc, cls):
            return reason
    return exc.reason


class SyncFailed(AimError):
    """A failure of the whole sync (before any filter ran)."""

    def __init__(self, reason: str, message: str, *, transient: bool) -> None:
        super().__init__(message, reason=reason, transient=transient)


@dataclass(frozen=True)
class FilterError:
    filter: Filter
    reason: str
    message: str
    transient: bool


@dataclass
class Listing:
    """What the registry listing found, in the documented order."""

    matched: list[Image] = field(default_factory=list)
    errors: list[FilterError] = field(default_factory=list)
    skipped_repositories: list[str] = field(default_factory=list)
    succeeded: set[int] = field(default_factory=set)  # indexes of the filters listed without error


@dataclass
class Created:
    created: list[Image] = field(default_factory=list)
    adopted: list[Image] = field(default_factory=list)
    present: list[Image] = field(default_factory=list)  # ours already, its image spelled otherwise
    foreign: list[Image] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class _Memo:
    """This replica's last sync of a source: what it looked like and when the next is due."""

    fingerprint: str
    due: float
    failures: int = 0


def fingerprint(source: AIMClusterModelSource) -> str:
    """What, besides time, makes a new sync due: the object's identity, spec and metadata."""
    meta = source.metadata
    return json.dumps([meta.uid, meta.generation, meta.labels, meta.annotations], sort_keys=True)


@dataclass(frozen=True)
class Interval:
    """The sync interval used, and what ``ConfigValid`` says about it."""

    seconds: float
    asked: str | None = None  # the spec's value, when it was clamped

    @property
    def condition(self) -> ConditionReport:
        if self.asked is None:
            return ConditionReport(type=CONFIG_VALID, status="True", reason=CONFIGURATION_VALID)
        return ConditionReport(
            type=CONFIG_VALID,
            status="True",
            reason=SYNC_INTERVAL_CLAMPED,
            message=f"syncInterval {self.asked} is below the minimum of {MIN_INTERVAL:g}s; "
            f"syncing every {MIN_INTERVAL:g}s",
        )


def sync_interval(text: str | None) -> Interval:
    """``spec.syncInterval`` in seconds, at least :data:`MIN_INTERVAL` (clamping said in the
    condition). Raises :class:`InvalidFilter` for what is not a duration."""
    seconds = parse_duration(text)
    if seconds < MIN_INTERVAL:
        return Interval(MIN_INTERVAL, text)
    return Interval(seconds)


def backoff(failures: int, interval: float, *, jitter: Jitter) -> float:
    """:data:`FAILURE_RETRY`, capped at the sync interval (at least :data:`MIN_INTERVAL`)."""
    cap = min(FAILURE_RETRY.cap, max(interval, MIN_INTERVAL))
    return Backoff(FAILURE_RETRY.base, cap).delay(max(failures, 1), jitter=jitter)


async def list_filter(
    client: RegistryClient, flt: Filter, catalogs: dict[str, list[str]]
) -> tuple[list[Image], list[str]]:
    """The images one filter matches (and repositories skipped because their tags could not be
    listed). Raises one of :data:`OCI_ERRORS` when the filter as a whole cannot be evaluated."""
    if not flt.wildcard:
        if flt.repository in flt.exclude:
            return [], []
        if flt.tag is not None:  # an exact image: no registry call (as the original)
            return [Image(flt.registry, flt.repository, flt.tag)], []
        tags = await client.tags(f"{flt.registry}/{flt.repository}")
        return [Image(flt.registry, flt.repository, t) for t in flt.select_tags(tags)], []
    if flt.registry not in catalogs:
        catalogs[flt.registry] = await client.catalog(flt.registry)
    images: list[Image] = []
    skipped: list[str] = []
    for repository in sorted(r for r in catalogs[flt.registry] if flt.matches_repository(r)):
        try:
            tags = await client.tags(f"{flt.registry}/{repository}")
        except (ImageNotFound, AuthFailed) as exc:  # listed but not readable: skip this repository
            log.info("skipping %s/%s: %s", flt.registry, repository, exc)
            skipped.append(f"{flt.registry}/{repository}")
            continue
        images.extend(Image(flt.registry, repository, t) for t in flt.select_tags(tags))
    return images, skipped


class SourceReconciler:
    """Reconciles AIMClusterModelSources. ``clock`` and ``client_factory`` are seams for tests."""

    def __init__(
        self,
        kube: Kube,
        system_namespace: str,
        *,
        clock: Callable[[], float] = time.time,
        client_factory: Callable[[DockerConfig], RegistryClient] = RegistryClient,
    ) -> None:
        self.kube = kube
        self.system_namespace = system_namespace
        self.clock = clock
        self.client_factory = client_factory
        self.memo: dict[str, _Memo] = {}
        self.children = Children(kube)  # creates the models; keeps those refused

    async def reconcile(self, request: Request) -> Result | None:
        source = request.resource
        assert isinstance(source, AIMClusterModelSource)
        spec = source.spec
        name = request.name
        try:
            every = sync_interval(spec.sync_interval)
            filters = parse_filters(spec)
        except InvalidFilter as exc:
            self.memo.pop(name, None)
            await self._invalid(request, str(exc))
            return None  # nothing to retry: a spec change brings the source back

        now = self.clock()
        fp = fingerprint(source)
        memo = self.memo.get(name)
        if memo is not None and memo.fingerprint == fp and now < memo.due:
            return Result(requeue_after=memo.due - now)

        source_label = label_value(name)
        existing = request.informer.list(AIMCLUSTERMODEL, labels={SOURCE_LABEL: source_label})
        models = (Model.read(request.informer, AIMCLUSTERMODEL, obj) for obj in existing)
        existing_images = {m.image for m in models if m is not None}
        secrets = [s.name for s in spec.image_pull_secrets or [] if s.name]

        try:
            credentials = await self._credentials(secrets)
        except SyncFailed as failed:
            return await self._failed(request, fp, memo, every, failed, len(existing))

        listing = Listing()
        catalogs: dict[str, list[str]] = {}
        async with self.client_factory(credentials) as client:
            for flt in filters:
                try:
                    images, skipped = await list_filter(client, flt, catalogs)
                except OCI_ERRORS as exc:
                    listing.errors.append(FilterError(flt, oci_reason(exc), str(exc), exc.transient))
                    continue
                listing.succeeded.add(flt.index)
                listing.matched.extend(images)
                listing.skipped_repositories.extend(skipped)

        if not listing.succeeded:
            first = listing.errors[0]
            message = "; ".join(
                f"filters[{e.filter.index}] ({e.filter.image}): {e.message}" for e in listing.errors
            )
            everything = SyncFailed(first.reason, message, transient=any(e.transient for e in listing.errors))
            return await self._failed(request, fp, memo, every, everything, len(existing))

        the_plan = plan(listing.matched, existing_images, len(existing), spec.max_models)
        outcome = await self._create(request, the_plan, source_label, secrets)
        await self._synced(request, listing, the_plan, outcome, len(existing), every=every)

        ok = not listing.errors and not outcome.errors
        failures = 0 if ok else (memo.failures + 1 if memo else 1)
        delay = every.seconds if ok else backoff(failures, every.seconds, jitter=jitter_key(request.obj))
        self.memo[name] = _Memo(fp, now + delay, failures)
        return Result(requeue_after=delay)

    # -- steps ---------------------------------------------------------------------------------

    async def _credentials(self, names: Sequence[str]) -> DockerConfig:
        secrets = []
        for secret_name in names:
            secret = await self.kube.get(SECRET, self.system_namespace, secret_name)
            if secret is None:
                raise SyncFailed(
                    SECRET_NOT_FOUND,
                    f"imagePullSecret {self.system_namespace}/{secret_name} not found "
                    f"(pull secrets must be in the operator namespace {self.system_namespace})",
                    transient=True,
                )
            secrets.append(secret)
        try:
            return credentials_from_secrets(secrets)
        except CredentialsError as exc:  # its message names the secret, never its contents
            raise SyncFailed(INVALID_PULL_SECRET, str(exc), transient=True) from None

    async def _create(
        self, request: Request, the_plan: Plan, source_label: str, secrets: Sequence[str]
    ) -> Created:
        """Create the planned models whose name no model holds. A name held by one of ours (its
        image spelled otherwise) is ``adopted``; by anything else (another source's, a user's),
        ``foreign`` and left alone. Both are read from the informer cache, not learnt from a 409:
        before, every sync re-POSTed each such model (issue 24: 8 refused creates a minute on an
        idle system). A name taken after the cache was read still answers 409 and is sorted the
        same way."""
        out = Created()
        for image in the_plan.create:
            held = Model.get(request.informer, AIMCLUSTERMODEL, None, image.model_name)
            if held is not None:
                ours = held.labels.get(SOURCE_LABEL) == source_label
                (out.present if ours else out.foreign).append(image)  # ours: counted among existing
                continue
            # (a server error or a conflict other than "already there" raises: the runtime retries
            # the whole reconcile with backoff)
            written = await self.children.write(
                request, AIMCLUSTERMODEL, model_body(image, source_label, secrets), how=How.CREATE
            )
            if isinstance(written, Refusal):
                out.errors.append(f"{image.uri}: {written.describe()}")
            elif written.created:
                out.created.append(image)
            else:
                # (taken after the cache was read: asked of the API server, which the cache has not
                # heard from yet)
                current = await self.kube.get(AIMCLUSTERMODEL, None, image.model_name)
                found = Model(AIMCLUSTERMODEL, current) if current is not None else None
                ours = found is not None and found.labels.get(SOURCE_LABEL) == source_label
                (out.adopted if ours else out.foreign).append(image)
        return out

    # -- reports -------------------------------------------------------------------------------

    async def _invalid(self, request: Request, message: str) -> None:
        conditions = [
            ConditionReport(type=CONFIG_VALID, status="False", reason=INVALID_FILTER, message=message),
            ConditionReport(type=READY, status="False", reason=INVALID_FILTER, message=message),
        ]
        if await request.reporter.report(request.ref, request.obj, conditions, {"status": "Failed"}):
            await request.reporter.decide(request.ref, request.obj, "reject", INVALID_FILTER, message)

    async def _failed(  # noqa: PLR0917
        self,
        request: Request,
        fp: str,
        memo: _Memo | None,
        every: Interval,
        failed: SyncFailed,
        existing: int,
    ) -> Result:
        failures = (memo.failures if memo else 0) + 1
        delay = backoff(failures, every.seconds, jitter=jitter_key(request.obj))
        self.memo[request.name] = _Memo(fp, self.clock() + delay, failures)
        registry_state = "Unknown" if failed.reason in (SECRET_NOT_FOUND, INVALID_PULL_SECRET) else "False"
        conditions = [
            every.condition,
            ConditionReport(
                type=REGISTRY_REACHABLE, status=registry_state, reason=failed.reason, message=failed.message
            ),
            ConditionReport(type=READY, status="False", reason=failed.reason, message=failed.message),
        ]
        fields = {"status": "Failed", "discoveredModels": existing}
        if await request.reporter.report(request.ref, request.obj, conditions, fields):
            await request.reporter.decide(
                request.ref, request.obj, "sync-failed", failed.reason, failed.message, created=[]
            )
        log.warning("sync of %s failed: %s: %s", request.name, failed.reason, failed.message)
        return Result(requeue_after=delay)

    async def _synced(
        self,
        request: Request,
        listing: Listing,
        the_plan: Plan,
        outcome: Created,
        existing: int,
        *,
        every: Interval,
    ) -> None:
        source = request.resource
        assert isinstance(source, AIMClusterModelSource)
        synced = sync_report(
            listing,
            the_plan,
            outcome,
            existing,
            every=every,
            max_models=source.spec.max_models,
            at=datetime.fromtimestamp(self.clock(), UTC),
        )
        await request.reporter.report(request.ref, request.obj, synced.conditions, synced.fields)
        await request.reporter.decide(
            request.ref,
            request.obj,
            "sync",
            SYNCED if not synced.problems else SOME_FILTERS_FAILED,
            synced.summary,
            created=[i.uri for i in outcome.created],
            present=[i.uri for i in (*the_plan.present, *outcome.present)],
            overLimit=[i.uri for i in the_plan.over_limit],
            ownedByAnotherSource=[i.uri for i in outcome.foreign],
            skippedRepositories=listing.skipped_repositories,
            errors=synced.problems,
        )
        log.info("synced %s: %s", request.name, synced.summary)


@dataclass(frozen=True)
class SyncReport:
    """What a sync that listed the registry reports: its conditions and status fields, a summary
    in a few words, and what went wrong (filters that failed, models not created)."""

    conditions: list[ConditionReport]
    fields: dict[str, Any]
    summary: str
    problems: list[str]


def sync_report(
    listing: Listing,
    the_plan: Plan,
    outcome: Created,
    existing: int,
    *,
    every: Interval,
    max_models: int,
    at: datetime,
) -> SyncReport:
    """The report of a sync at ``at`` that found ``listing``, planned ``the_plan`` and created
    ``outcome``, with ``existing`` models of the source before it."""
    available = len(the_plan.create) + len(the_plan.present) + len(the_plan.over_limit)
    discovered = existing + len(outcome.created) + len(outcome.adopted)
    problems = [f"filters[{e.filter.index}] ({e.filter.image}): {e.message}" for e in listing.errors]
    problems += [f"create {e}" for e in outcome.errors]
    conditions = [
        every.condition,
        registry_condition(listing, problems),
        limit_condition(the_plan, max_models, discovered),
    ]
    summary = (
        f"{available} matching image(s); created {len(outcome.created)}, "
        f"{len(the_plan.present) + len(outcome.present)} already "
        f"present, {len(the_plan.over_limit)} over maxModels, {len(outcome.foreign)} owned by another source"
    )
    if problems:
        status = "Degraded"
        conditions.append(
            ConditionReport(
                type=READY, status="False", reason=SOME_FILTERS_FAILED, message="; ".join(problems)
            )
        )
    else:
        status = "Ready"
        conditions.append(ConditionReport(type=READY, status="True", reason=SYNCED, message=summary))
    fields = {
        "status": status,
        "lastSyncTime": rfc3339(at),
        "discoveredModels": discovered,
        "availableModels": available,
        "modelsLimitReached": bool(the_plan.over_limit),
    }
    return SyncReport(conditions, fields, summary, problems)


def registry_condition(listing: Listing, problems: Sequence[str]) -> ConditionReport:
    """``RegistryReachable``: False, with every problem, when a filter could not be listed."""
    if listing.errors:
        first = listing.errors[0]
        return ConditionReport(
            type=REGISTRY_REACHABLE, status="False", reason=first.reason, message="; ".join(problems)
        )
    return ConditionReport(type=REGISTRY_REACHABLE, status="True", reason="Reachable")


def limit_condition(the_plan: Plan, max_models: int, discovered: int) -> ConditionReport:
    """``MaxModelsLimitReached``: True, naming the images left without a model, when ``maxModels``
    kept the sync from creating every model it matched."""
    if the_plan.over_limit:
        over = _names(the_plan.over_limit)
        return ConditionReport(
            type=LIMIT_REACHED,
            status="True",
            reason="LimitReached",
            message=f"maxModels {max_models} reached: {len(the_plan.over_limit)} matching "
            f"image(s) have no model ({over})",
        )
    return ConditionReport(
        type=LIMIT_REACHED,
        status="False",
        reason="WithinLimit",
        message=f"{discovered} of at most {max_models} models",
    )


def _names(images: Sequence[Image]) -> str:
    shown = ", ".join(i.uri for i in images[:MAX_LISTED_IN_MESSAGE])
    more = len(images) - MAX_LISTED_IN_MESSAGE
    return shown + (f" and {more} more" if more > 0 else "")
