"""The model reconciler (AIMModel, AIMClusterModel; legacy AIMImage, AIMClusterImage, AIMModel,
AIMClusterModel): runtime config, image metadata, templates, and a status aggregated from them.

One reconcile:

1. Resolve the runtime config (``RuntimeConfigReady``; a missing named config fails the model with
   ``ConfigValid=False/ReferenceNotFound`` and recovers when the config appears).
2. Image metadata (``ImageMetadataReady``): ``spec.imageMetadata`` wins (air-gapped clusters; it
   is copied into ``status.imageMetadata`` as the original does); else, unless extraction is off
   (``discovery.extractMetadata``, else the runtime config's ``model.autoDiscovery``), the labels
   are read from the registry (manifest and config blob only) with the model's
   ``imagePullSecrets`` and cached in ``status.imageMetadata``. The cache is keyed by the image
   named in the condition's message: a new ``spec.image`` reads again. A named pull secret that
   does not exist is ``ImageMetadataReady=False/SecretNotFound`` with ``ConfigValid=False`` and
   the original's ``ReferenceNotFound`` (the model is Failed until the secret appears). A custom
   model's base image is not read under the seeds' behaviour (``ExtractionDisabled``); under the
   released one (``AIM_BEHAVIOUR=released``) it is, as any model's: ``ImageFound`` without AIM
   labels, and a missing one ``BaseImageNotFound`` (the model Degraded, retried).
3. Templates: one per recommended deployment (when ``createServiceTemplates`` allows) plus
   ``customTemplates``; a custom model (``spec.modelSources``) gets only custom templates, or one
   from ``custom.hardware``. They are server-side applied with an owner reference to the model (so
   they are garbage-collected with it) and only when missing or different. A template the API
   server refuses for its content (400/422: e.g. image labels recommending a metric the template
   CRD does not allow) is reported, not awaited: ``TemplateCreateRejected`` (the model is Failed)
   when no usable template is left, ``SomeTemplatesRejected`` (Degraded) otherwise, both naming
   the template and the server's message; the same body is not sent again until it changes. A
   403 is ``TemplateCreateForbidden`` and is retried with the backoff below (RBAC can be fixed).
   A planned name taken by another model's template is ``TemplateNameConflict``.
4. ``ServiceTemplatesReady`` / ``ClusterServiceTemplatesReady`` aggregated from the model's
   templates (:func:`templates_state`); the status service derives ``status`` and ``Ready``.

Registry failures are retried with a per-model backoff (30 s doubling to 10 min); malformed labels,
invalid references, registries the outbound address policy refuses (``AddressNotAllowed``) and
token realms that would get the pull secret over plain HTTP (``InsecureTokenRealm``) are not
retried until the spec changes. Every outcome has a condition with a
specific reason, and each change of outcome a decision record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aim_discovery.catalog import (
    PlannedTemplate,
    custom_templates,
    recommended_template,
    template_body,
    template_kind,
    templates_condition,
)
from aim_discovery.template_status import MODEL_FAILED
from aimcore.api.backoff import Backoff, jitter_key
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.errors import AimError
from aimcore.api.kinds import SECRET, KindRef
from aimcore.domain.families.models import Model
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.families.templates import Template, template_kinds
from aimcore.domain.labels import MODEL_LABEL
from aimcore.domain.oci import (
    OCI_ERRORS,
    AddressNotAllowed,
    AuthFailed,
    CredentialsError,
    DockerConfig,
    ImageNotFound,
    InsecureTokenRealm,
    InvalidReference,
    LabelError,
    OCIError,
    RegistryClient,
    RegistryUnreachable,
    credentials_from_secrets,
)
from aimcore.domain.outbound import ADDRESS_NOT_ALLOWED, OutboundPolicy, literal_env, source_refusal
from aimcore.domain.runtimeconfig import (
    CONFIG_NOT_FOUND,
    RUNTIME_CONFIG_READY,
    ConfigNotFound,
    Resolved,
    propagated_labels,
    resolve,
)
from aimcore.runtime import (
    ApiException,
    Children,
    Informer,
    Kube,
    Refusal,
    Request,
    Result,
    differs,
    owned_by,
)
from aimcore.runtime.composer import has_status_field

log = logging.getLogger(__name__)

IMAGE_METADATA_READY = "ImageMetadataReady"
CONFIG_VALID = "ConfigValid"

IMAGE_METADATA_FOUND = "ImageMetadataFound"
IMAGE_FOUND = "ImageFound"
EXTRACTION_DISABLED = "ExtractionDisabled"
METADATA_FROM_SPEC = "MetadataFromSpec"
SECRET_NOT_FOUND = "SecretNotFound"
REFERENCE_NOT_FOUND = "ReferenceNotFound"
INVALID_SPEC = "InvalidSpec"
INVALID_PULL_SECRET = "InvalidPullSecret"
EXTRACTION_FAILED = "MetadataExtractionFailed"
INVALID_IMAGE_REFERENCE = "InvalidImageReference"
IMAGE_NOT_FOUND = "ImageNotFound"
BASE_IMAGE_NOT_FOUND = "BaseImageNotFound"  # a custom model's base image (released behaviour): Degraded
AUTH_FAILED = "ImagePullAuthFailure"
REGISTRY_ERROR = "RegistryError"

METADATA_RETRY = Backoff(base=30.0, cap=600.0)
"""A transient metadata failure (registry, credentials, a forbidden template write): 30 s doubling to
10 min, counted per model while its image stays the same."""

# Template-state aggregation reasons (docs/original.md#template-state-aggregation).
ALL_TEMPLATES_READY = "AllTemplatesReady"
SOME_TEMPLATES_READY = "SomeTemplatesReady"
NO_TEMPLATES_EXPECTED = "NoTemplatesExpected"
TEMPLATES_PROGRESSING = "TemplatesProgressing"
SOME_TEMPLATES_DEGRADED = "SomeTemplatesDegraded"
ALL_TEMPLATES_FAILED = "AllTemplatesFailed"
NO_TEMPLATES_AVAILABLE = "NoTemplatesAvailable"
AWAITING_METADATA = "AwaitingMetadata"
CREATING_TEMPLATES = "CreatingTemplates"
# The API server refused templates the model planned (issue 15): for their content, or for lack
# of permission; "some" when usable templates are left.
TEMPLATE_CREATE_REJECTED = "TemplateCreateRejected"
TEMPLATE_CREATE_FORBIDDEN = "TemplateCreateForbidden"
SOME_TEMPLATES_REJECTED = "SomeTemplatesRejected"
TEMPLATE_NAME_CONFLICT = "TemplateNameConflict"  # a template of another model has the name

# the model's defaultServiceTemplate names no template: services relying on it fail (issue 24)
DEFAULT_TEMPLATE_NOT_FOUND = "DefaultTemplateNotFound"
INHERITED_FAILURES = frozenset({MODEL_FAILED, f"Cluster{MODEL_FAILED}"})  # a template's, from its model

_READY_VALUES = {"Ready", "Available"}
_FAILED_VALUES = {"Failed", "Degraded"}


@dataclass(frozen=True)
class Metadata:
    """The outcome of the metadata step."""

    condition: ConditionReport
    metadata: Mapping[str, Any] | None = None
    retry: bool = False  # a transient failure: try again after a backoff
    failed: bool = False
    config_invalid: bool = False


@dataclass(frozen=True)
class RefusedTemplate:
    """A planned template that cannot be applied: the API server refused it, or its name is
    taken by a template of another model (``taken_by``)."""

    name: str
    refusal: Refusal | None = None
    update: bool = False
    taken_by: str = ""

    @property
    def forbidden(self) -> bool:
        return self.refusal is not None and self.refusal.forbidden

    def describe(self) -> str:
        if self.refusal is None:
            return f"{self.name}: the name is taken by a template of {self.taken_by or 'another model'}"
        verb = "update" if self.update else "create"
        return f"{self.name} ({verb}): {self.refusal.describe()}"


def templates_state(
    statuses: Sequence[str],
    expected: int,
    metadata_known: bool,
    refused: Sequence[RefusedTemplate] = (),
    *,
    none_expected: str = "The model defines no templates",
    metadata_failure: str = "",
) -> tuple[str, str, str]:
    """``(status, reason, message)`` of the templates condition from the templates' ``status``
    values (either group's vocabulary), how many templates the model means to have and those the
    API server refused. ``none_expected`` says why the model has no templates to make;
    ``metadata_failure`` why the image metadata the templates come from cannot be read."""
    if refused:
        return _refused_state(statuses, expected, refused)
    total = len(statuses)
    if total == 0:
        if metadata_failure and not expected:
            return (
                "False",
                AWAITING_METADATA,
                f"No templates until the image metadata can be read: {metadata_failure}",
            )
        if not metadata_known:
            return "False", AWAITING_METADATA, "Waiting for image metadata before creating templates"
        if expected:
            return "False", CREATING_TEMPLATES, f"Creating {expected} template(s)"
        return "True", NO_TEMPLATES_EXPECTED, none_expected
    ready = sum(s in _READY_VALUES for s in statuses)
    failed = sum(s in _FAILED_VALUES for s in statuses)
    unavailable = sum(s == "NotAvailable" for s in statuses)
    counts = f"{ready}/{total} ready, {failed} failed, {unavailable} not available"
    if ready == total:
        return "True", ALL_TEMPLATES_READY, f"All {total} template(s) are ready"
    if failed == total:
        return "False", ALL_TEMPLATES_FAILED, f"All {total} template(s) failed"
    if unavailable == total:
        return "False", NO_TEMPLATES_AVAILABLE, f"No template's GPU is available in the cluster ({counts})"
    if failed:
        return "False", SOME_TEMPLATES_DEGRADED, f"Some templates failed ({counts})"
    if ready + unavailable == total:
        return "True", SOME_TEMPLATES_READY, f"Some templates are ready ({counts})"
    return "False", TEMPLATES_PROGRESSING, f"Templates are progressing ({counts})"


def own_state(template: Template) -> str:
    """A template's state as its model counts it: one Failed or Degraded only through its model
    (``ModelFailed``: it took the model's state) waits on the model instead, so a model and its
    templates never hold each other failed (the model keeps the state of its own failure)."""
    if template.ready_reason in INHERITED_FAILURES:
        return "Progressing"
    return template.state


def default_template_missing(informer: Informer, ref: KindRef, model: Model) -> str | None:
    """What is wrong with the model's ``spec.defaultServiceTemplate``, if it names no template a
    service would find (the deployer looks in the service's namespace, then the cluster: for a
    namespaced model that is the model's namespace; a cluster model is judged by the cluster's
    templates alone). Before, services fell back to automatic selection without a word."""
    default = model.default_template
    if not default:
        return None
    namespaced, cluster = template_kinds(ref.group)
    found = Template.get(informer, cluster, None, default)
    if found is None and model.namespace:
        found = Template.get(informer, namespaced, model.namespace, default)
    if found is not None and not found.deleting:
        return None
    where = (
        f"{namespaced.kind} in namespace {model.namespace} or {cluster.kind}"
        if model.namespace
        else cluster.kind
    )
    return (
        f"spec.defaultServiceTemplate {default!r} names no {where}: services using this model "
        "without spec.template.name fail until it exists; create it, or correct or remove "
        "spec.defaultServiceTemplate"
    )


def with_default_template(state: tuple[str, str, str], missing: str | None) -> tuple[str, str, str]:
    """The templates condition ``state`` with what :func:`default_template_missing` found: a model
    whose templates are fine is ``DefaultTemplateNotFound`` (Degraded: services naming a template
    still use it); otherwise the problem is added to the message."""
    if not missing:
        return state
    if state[0] == "True":
        return "False", DEFAULT_TEMPLATE_NOT_FOUND, missing
    return state[0], state[1], f"{state[2]}; {missing}"


def _refused_state(
    statuses: Sequence[str], expected: int, refused: Sequence[RefusedTemplate]
) -> tuple[str, str, str]:
    """Refused templates are not awaited: with no usable template left the model fails, naming
    the refusal; with some left it is degraded (services can still use those)."""
    total = len(statuses)
    failed = sum(s in _FAILED_VALUES for s in statuses)
    details = "; ".join(r.describe() for r in refused)
    what = f"{len(refused)} of {max(expected, len(refused))} template(s) cannot be applied"
    if total - failed > 0:
        ready = sum(s in _READY_VALUES for s in statuses)
        unavailable = sum(s == "NotAvailable" for s in statuses)
        counts = f"{ready}/{total} ready, {failed} failed, {unavailable} not available"
        return "False", SOME_TEMPLATES_REJECTED, f"{what} ({counts}): {details}"
    if all(r.refusal is None for r in refused):
        reason = TEMPLATE_NAME_CONFLICT
    elif all(r.forbidden for r in refused if r.refusal is not None):
        reason = TEMPLATE_CREATE_FORBIDDEN
    else:
        reason = TEMPLATE_CREATE_REJECTED
    return "False", reason, f"{what}: {details}"


def config_valid(outcome: Metadata, refused_source: str | None) -> ConditionReport:
    """``ConfigValid`` of a model: False for a source on an address the outbound policy refuses
    (``refused_source`` says which; the inference container would fetch it there: Failed, as any
    refused address, until the spec or the policy changes) or for a spec the metadata step found
    wrong; True otherwise."""
    if refused_source is not None:
        return ConditionReport(
            type=CONFIG_VALID, status="False", reason=ADDRESS_NOT_ALLOWED, message=refused_source
        )
    if outcome.config_invalid:
        # the original's two ConfigValid reasons: a missing upstream object (a pull secret) is
        # ReferenceNotFound, anything else wrong in the spec InvalidSpec; the component keeps
        # the specific reason (SecretNotFound, InvalidImageReference)
        missing = outcome.condition.reason == SECRET_NOT_FOUND
        return ConditionReport(
            type=CONFIG_VALID,
            status="False",
            reason=REFERENCE_NOT_FOUND if missing else INVALID_SPEC,
            message=outcome.condition.message,
        )
    return ConditionReport(type=CONFIG_VALID, status="True", reason="ConfigurationValid")


def _oci_reason(exc: OCIError | InvalidReference) -> tuple[str, bool]:
    """Reason and whether to retry."""
    if isinstance(exc, InvalidReference):
        return INVALID_IMAGE_REFERENCE, False
    if isinstance(exc, AddressNotAllowed | InsecureTokenRealm):
        return exc.reason, False  # only a new spec (or operator setting) helps
    if isinstance(exc, LabelError):
        return EXTRACTION_FAILED, False
    if isinstance(exc, ImageNotFound):
        return IMAGE_NOT_FOUND, True
    if isinstance(exc, AuthFailed):
        return AUTH_FAILED, True
    if isinstance(exc, CredentialsError):
        return INVALID_PULL_SECRET, True
    if isinstance(exc, RegistryUnreachable):
        return REGISTRY_ERROR, True
    return REGISTRY_ERROR, exc.transient


class ModelReconciler:
    def __init__(
        self,
        kube: Kube,
        system_namespace: str,
        *,
        client_factory: Callable[[DockerConfig], RegistryClient] = RegistryClient,
        clock: Callable[[], float] = time.monotonic,
        policy: OutboundPolicy | None = None,
        behaviour: Behaviour = Behaviour.SEEDS,
    ) -> None:
        self.kube = kube
        self.system_namespace = system_namespace
        self.behaviour = behaviour  # AIM_BEHAVIOUR: which generation's templates and inspection
        self.client_factory = client_factory
        self.clock = clock
        self.policy = policy or OutboundPolicy()
        self.failures: dict[str, tuple[str, int]] = {}  # uid → (image, consecutive failures)
        self.children = Children(kube)  # writes the templates; keeps those refused

    async def reconcile(self, request: Request) -> Result | None:
        model = Model.of_request(request)
        fields: dict[str, Any] = {}
        try:
            config = resolve(
                request.informer.get,
                request.ref.group,
                model.namespace,
                {"runtimeConfigName": model.runtime_config_name},
            )
        except ConfigNotFound as exc:
            await self._config_missing(request, str(exc))
            return None
        reason, message = config.condition_reason()
        conditions = [
            ConditionReport(type=RUNTIME_CONFIG_READY, status="True", reason=reason, message=message)
        ]
        fields["resolvedRuntimeConfig"] = config.reference()
        fields["sourceType"] = "Custom" if model.is_custom else "Image"

        auto_discovery = RuntimeConfig.of(request.ref.group, config).auto_discovery
        outcome = await self._metadata(model, auto_discovery)
        conditions.append(outcome.condition)
        refused_source = source_refusal(model.written_sources, literal_env(model.written_env), self.policy)
        conditions.append(config_valid(outcome, refused_source))
        if outcome.metadata is not None:  # read from the registry, or given in spec.imageMetadata
            fields["imageMetadata"] = dict(outcome.metadata)

        planned = self.planned_templates(model, outcome.metadata, auto_discovery, image_failed=outcome.failed)
        kind = template_kind(request.ref)
        refused = await self._apply(kind, model, planned, config, request)
        templates = self._templates_condition(request, model, outcome, auto_discovery, planned, refused)
        conditions.append(templates)
        fields = {k: v for k, v in fields.items() if has_status_field(request.ref.group, request.ref.kind, k)}
        sent = await request.reporter.report(request.ref, request.obj, conditions, fields)
        if sent:
            await request.reporter.decide(
                request.ref,
                request.obj,
                "model",
                outcome.condition.reason,
                outcome.condition.message,
                templates=[p.name for p in planned],
                templatesState=templates.reason,
            )
        if any(r.forbidden for r in refused):
            return self._retry(model, outcome, failed=True)
        return self._retry(model, outcome)

    # -- steps -------------------------------------------------------------------------------

    def _templates_condition(  # noqa: PLR0917
        self,
        request: Request,
        model: Model,
        outcome: Metadata,
        auto_discovery: bool | None,
        planned: Sequence[PlannedTemplate],
        refused: Sequence[RefusedTemplate],
    ) -> ConditionReport:
        """``ServiceTemplatesReady`` / ``ClusterServiceTemplatesReady``: the model's templates as
        the informer has them, against those planned and those refused (:func:`templates_state`),
        and what its ``spec.defaultServiceTemplate`` names."""
        metadata_known = outcome.metadata is not None or outcome.failed or model.is_custom
        if not model.extract_metadata(auto_discovery):
            metadata_known = True
        state = templates_state(
            [own_state(t) for t in self.templates(request, model)],
            len(planned),
            metadata_known,
            refused,
            none_expected=_none_expected(model, outcome, auto_discovery),
            metadata_failure=_metadata_failure(model, outcome, auto_discovery),
        )
        status, reason, message = with_default_template(
            state, default_template_missing(request.informer, request.ref, model)
        )
        return ConditionReport(
            type=templates_condition(request.ref), status=status, reason=reason, message=message
        )

    def planned_templates(
        self,
        model: Model,
        metadata: Mapping[str, Any] | None,
        auto_discovery: bool | None,
        *,
        image_failed: bool = False,
    ) -> list[PlannedTemplate]:
        """The templates the model means to have: from its image's recommended deployments and its
        ``spec.customTemplates``. A custom model whose image could not be inspected (the released
        behaviour inspects it) gets none made yet, as the released original, whose templates wait
        for the image: one made now would be Ready for a moment, before it takes the model's
        failure, and a service could select it and start caching a model that cannot run. Those
        made before are kept."""
        if model.is_custom and image_failed:
            return []
        planned: list[PlannedTemplate] = []
        if not model.is_custom and metadata is not None and model.create_templates(auto_discovery):
            deployments = ((metadata.get("model") or {}).get("recommendedDeployments")) or []
            planned.extend(recommended_template(model, d) for d in deployments if isinstance(d, Mapping))
        planned.extend(custom_templates(model))
        unique: dict[str, PlannedTemplate] = {}
        for p in planned:
            unique.setdefault(p.name, p)
        return list(unique.values())

    def templates(self, request: Request, model: Model) -> list[Template]:
        """The model's templates: those it owns plus those of the same scope that name it."""
        kind = template_kind(request.ref)
        return [
            t
            for t in Template.each(request.informer, kind, model.namespace)
            if (model.uid or "") in t.owner_uids or t.model_name == model.name
        ]

    async def _metadata(self, model: Model, auto_discovery: bool | None) -> Metadata:
        if model.spec_metadata is not None:
            return Metadata(
                ConditionReport(
                    type=IMAGE_METADATA_READY,
                    status="True",
                    reason=METADATA_FROM_SPEC,
                    message="Using spec.imageMetadata; the registry is not contacted",
                ),
                model.spec_metadata,
            )
        if model.is_custom and not self.behaviour.released:
            return Metadata(
                ConditionReport(
                    type=IMAGE_METADATA_READY,
                    status="True",
                    reason=EXTRACTION_DISABLED,
                    message="Custom model: sources come from spec.modelSources, image labels are not read",
                )
            )
        if not model.extract_metadata(auto_discovery):
            return Metadata(
                ConditionReport(
                    type=IMAGE_METADATA_READY,
                    status="True",
                    reason=EXTRACTION_DISABLED,
                    message="Metadata extraction is disabled (discovery.extractMetadata or the runtime "
                    "config's model.autoDiscovery)",
                )
            )
        cached = self._cached(model)
        if cached is not None:
            return cached
        try:
            credentials = await self._credentials(model)
            async with self.client_factory(credentials) as client:
                metadata = await client.image_metadata(model.image)
        except _SecretMissing as exc:
            return Metadata(
                ConditionReport(
                    type=IMAGE_METADATA_READY, status="False", reason=SECRET_NOT_FOUND, message=str(exc)
                ),
                retry=True,
                failed=True,
                config_invalid=True,
            )
        except OCI_ERRORS as exc:
            reason, retry = _oci_reason(exc)
            if model.is_custom and reason == IMAGE_NOT_FOUND:
                # the released original: a custom model's missing base image degrades it (its
                # sources are its own; the image is only the runtime)
                reason = BASE_IMAGE_NOT_FOUND
            return Metadata(
                ConditionReport(type=IMAGE_METADATA_READY, status="False", reason=reason, message=str(exc)),
                retry=retry,
                failed=True,
                config_invalid=reason == INVALID_IMAGE_REFERENCE,
            )
        wire = metadata.model_dump(by_alias=True, exclude_none=True, mode="json")
        has_name = bool((wire.get("model") or {}).get("canonicalName"))
        return Metadata(
            ConditionReport(
                type=IMAGE_METADATA_READY,
                status="True",
                reason=IMAGE_METADATA_FOUND if has_name else IMAGE_FOUND,
                message=_read_message(model.image, has_name),
            ),
            wire,
        )

    def _cached(self, model: Model) -> Metadata | None:
        metadata = model.status_metadata
        condition = model.condition(IMAGE_METADATA_READY)
        if metadata is None or condition is None or condition.status != "True":
            return None
        for has_name in (True, False):
            if condition.message == _read_message(model.image, has_name):
                return Metadata(
                    ConditionReport(
                        type=IMAGE_METADATA_READY,
                        status="True",
                        reason=condition.reason,
                        message=condition.message,
                    ),
                    metadata,
                )
        return None

    async def _credentials(self, model: Model) -> DockerConfig:
        namespace = model.namespace or self.system_namespace
        secrets = []
        for name in model.pull_secrets:
            secret = await self.kube.get(SECRET, namespace, name)
            if secret is None:
                where = "the model's namespace" if model.namespace else "the operator namespace"
                raise _SecretMissing(f"imagePullSecret {namespace}/{name} not found (it must be in {where})")
            secrets.append(secret)
        return credentials_from_secrets(secrets)

    async def _apply(
        self,
        kind: KindRef,
        model: Model,
        planned: Sequence[PlannedTemplate],
        config: Resolved,
        request: Request,
    ) -> list[RefusedTemplate]:
        """Apply the planned templates; those the API server refused."""
        refused: list[RefusedTemplate] = []
        inherited = propagated_labels(model.labels, config)
        inherited.pop(MODEL_LABEL, None)
        for template in planned:
            body = template_body(template, kind, model, inherited)
            existing = request.informer.get(kind, model.namespace, template.name)
            if existing is not None:
                if not owned_by(existing, model.uid or ""):
                    log.info(
                        "template %s exists and is not owned by model %s; left alone",
                        template.name,
                        model.name,
                    )
                    found_template = Template.read(request.informer, kind, existing)
                    other = found_template.model_name if found_template is not None else ""
                    if other != model.name:  # not this model's: it will never count as one of them
                        refused.append(RefusedTemplate(template.name, taken_by=f"model {other!r}"))
                    continue
                if not differs(existing, body):
                    continue
            known = self.children.refused_before(kind, body)
            if known is not None:  # refused as it is: not sent again until it changes
                refused.append(RefusedTemplate(template.name, known, existing is not None))
                continue
            try:
                # (not recorded: the model counts its templates from the cache, woken by their events)
                found = await self.children.write(request, kind, body, record=False)
            except ApiException as exc:
                if exc.status is None or exc.status >= 500:
                    raise
                # a conflict or a namespace being deleted: the next reconcile sees the outcome
                log.warning("applying template %s failed: %s %s", template.name, exc.status, exc.reason)
                continue
            if isinstance(found, Refusal):
                refused.append(RefusedTemplate(template.name, found, existing is not None))
                reason = TEMPLATE_CREATE_FORBIDDEN if found.forbidden else TEMPLATE_CREATE_REJECTED
                await request.reporter.decide(
                    request.ref,
                    request.obj,
                    "create-template-failed",
                    reason,
                    f"template {template.name}: {found.describe()}",
                )
                continue
            await request.reporter.decide(
                request.ref,
                request.obj,
                "create-template",
                "TemplateCreated" if existing is None else "TemplateUpdated",
                f"{kind.kind} {template.name} applied",
                spec=template.spec,
            )
        return refused

    async def _config_missing(self, request: Request, message: str) -> None:
        conditions = [
            ConditionReport(
                type=RUNTIME_CONFIG_READY, status="False", reason=CONFIG_NOT_FOUND, message=message
            ),
            ConditionReport(type=CONFIG_VALID, status="False", reason="ReferenceNotFound", message=message),
        ]
        if await request.reporter.report(request.ref, request.obj, conditions, {}):
            await request.reporter.decide(request.ref, request.obj, "reject", CONFIG_NOT_FOUND, message)

    def _retry(self, model: Model, outcome: Metadata, *, failed: bool = False) -> Result | None:
        """The backoff of a transient failure (a registry error, a forbidden template write)."""
        uid = model.uid or ""
        if not (outcome.retry or failed):
            self.failures.pop(uid, None)
            return None
        image, count = self.failures.get(uid, (model.image, 0))
        count = count + 1 if image == model.image else 1
        self.failures[uid] = (model.image, count)
        return Result(requeue_after=METADATA_RETRY.delay(count, jitter=jitter_key(model.obj)))


def _none_expected(model: Model, outcome: Metadata, auto_discovery: bool | None) -> str:
    """Why a model has no templates to make: what a user would change to get some."""
    if model.is_custom:
        return "The model defines no templates"
    if not model.extract_metadata(auto_discovery) and outcome.condition.reason == EXTRACTION_DISABLED:
        where = "metadata extraction is off"
    elif not model.create_templates(auto_discovery):
        where = (
            "template creation from the image labels is off (discovery.createServiceTemplates or the "
            "runtime config's model.autoDiscovery)"
        )
    else:
        where = "the image metadata recommends no deployment (no model.recommendedDeployments label)"
    return (
        f"No templates: {where} and spec.customTemplates is empty; "
        "create an AIMServiceTemplate naming the model"
    )


def _metadata_failure(model: Model, outcome: Metadata, auto_discovery: bool | None) -> str:
    """``<reason>: <message>`` of a metadata failure that keeps the templates from being made."""
    if not outcome.failed:
        return ""
    if not model.is_custom and not model.create_templates(auto_discovery):
        return ""
    return f"{outcome.condition.reason}: {outcome.condition.message}"


class _SecretMissing(AimError):
    """A named imagePullSecret does not exist (Secrets are not watched: retried with the backoff)."""

    reason = SECRET_NOT_FOUND
    transient = True


def _read_message(image: str, has_name: bool) -> str:
    what = "AIM labels" if has_name else "labels (no AIM model name)"
    return f"Read {what} from {image}"
