"""Which model an AIMService deploys (docs/original.md#model-resolution; the specification's
docs/specification.md#model-lookup, docs/specification.md#auto-creation-from-services and
docs/specification.md#custom-models), decided from the informer cache without writing anything:
the controller applies what :class:`ModelPlan` asks for.

- ``model.name`` (legacy also ``model.ref`` and generation 1's ``aimImageName``): the namespace's
  model first, then the cluster's. Not found → ``ModelNotFound`` and ``ConfigValid=False``.
- ``model.image``: the model resolved before while it stays Ready (``status.resolvedModel``), else
  every model with exactly that image; models users made beat auto-created ones,
  a namespace match beats a cluster match, and two matches left are ambiguous
  (``MultipleModelsFound``, not a silent pick).
  None → a model is planned in the scope of the runtime config's ``model.creationScope``
  (Namespace by default) with the original's name (``<image name>-<tag>-<hash>``) and discovery as
  ``model.autoDiscovery`` says. An unparsable image → ``InvalidImageReference``.
- ``model.custom``: a namespaced model whose whole spec is what the service asks for (base image,
  sources, hardware, env, runtime config, pull secrets, service account: :func:`model_identity`)
  is shared; otherwise one is planned, its name hashing that spec after the original's inputs
  (the original shared by sources alone, so the first creator's hardware and env won). Every
  service using a custom model is one of its owners, so it goes with its last user, never before.
- A name to create held by another model → ``ModelNameConflict`` (not ``CreatingModel`` forever).

A model is usable when Ready, or Degraded (some of its templates are unusable, the others may be
fine: template selection decides). Otherwise ``ModelNotReady``, as in the original, whatever its
state, which the message names (``AIMModel x is Failed: ImageNotFound: …``,
:func:`aimcore.domain.status.rules.dependency_message`): a Failed model makes the service Failed,
a NotAvailable one Pending (nowhere to run it), one still coming Pending (waiting for it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from aim_deployer.service_view import ServiceView
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.crds.aim import AIMServiceModelCustom
from aimcore.api.crds.registry import resource_class
from aimcore.api.imageref import InvalidReference, parse_reference
from aimcore.api.kinds import GROUP_AIM, PART_OF_LABEL, PART_OF_VALUE, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.base import written
from aimcore.domain.families.models import Model, without_empty
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.families.templates import Template
from aimcore.domain.labels import AUTO_GENERATED, ORIGIN_LABEL
from aimcore.domain.naming import derived_name, label_value
from aimcore.domain.status.rules import dependency_message
from aimcore.runtime import Informer, condition, owner_reference

MODEL_READY = "ModelReady"
SERVICE_LABEL = "aim.eai.amd.com/service"
CUSTOM_LABEL = "aim.eai.amd.com/custom-model"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "aim-engine"
DEFAULT_BASE_IMAGE = "amdenterpriseai/aim-base:latest"

MODEL_RESOLVED = "ModelResolved"
MODEL_NOT_FOUND = "ModelNotFound"
MODEL_NOT_READY = "ModelNotReady"
CREATING_MODEL = "CreatingModel"
MULTIPLE_MODELS = "MultipleModelsFound"
INVALID_IMAGE = "InvalidImageReference"
MODEL_NAME_CONFLICT = "ModelNameConflict"  # the name to create is held by another model
NAMESPACED_MODEL = Model.kind(GROUP_AIM)  # custom models are namespaced (either group's kind)

_USABLE = ("Ready", "Degraded")


@dataclass(frozen=True)
class ModelPlan:
    """What model resolution found and what the controller should do about it."""

    condition: ConditionReport
    model: Model | None = None  # the model to use (usable or not)
    usable: bool = False
    create: tuple[KindRef, Obj] | None = None  # a model to apply
    join: Model | None = None  # a shared custom model this service must co-own
    invalid: str | None = None  # a spec/reference error: ConfigValid=False with this reason


def _lookup_kinds(group: str) -> list[KindRef]:
    """Where a service in a namespace looks models up, namespace first."""
    return Model.kinds_for(Template.kind(group))


def judge(model: Model, how: str) -> ModelPlan:
    """The plan for a model that exists: usable, failed or still coming."""
    state = model.state
    what = f"{model.ref.kind} {model.name}"
    if state in _USABLE:
        note = f" (model is {state}: {model.ready_message})" if state != "Ready" else ""
        message = f"{how} {what}{note}"
        return ModelPlan(condition(MODEL_READY, True, MODEL_RESOLVED, message), model, True)
    detail = model.ready_message
    cause = model.ready_reason
    if cause and cause not in ("Progressing", "NotReady"):  # name the model's own reason
        detail = f"{cause}: {detail}" if detail else cause
    message = dependency_message(what, state, detail)
    return ModelPlan(condition(MODEL_READY, False, MODEL_NOT_READY, message), model)


def by_name(informer: Informer, group: str, namespace: str | None, name: str) -> ModelPlan:
    kinds = _lookup_kinds(group)
    for kind in kinds:
        found = Model.get(informer, kind, namespace, name)
        if found is not None:
            return judge(found, "using")
    where = " or ".join(k.kind + (f" in namespace {namespace}" if k.namespaced else "") for k in kinds)
    message = f"no {where} named {name!r}"
    return ModelPlan(condition(MODEL_READY, False, MODEL_NOT_FOUND, message), invalid="ReferenceNotFound")


# -- model.image --------------------------------------------------------------------------------


def auto_model_name(image: str) -> str:
    """The original's name for a model auto-created from an image: ``<last path element>-<tag,
    first 6 hex of the digest, or latest>-<8 hex of the image>``."""
    parsed = parse_reference(image)
    image_name = parsed.repository.rsplit("/", 1)[-1]
    if parsed.tag:
        tag = parsed.tag
    elif parsed.digest:
        tag = parsed.digest.split(":", 1)[-1][:6]
    else:
        tag = "latest"
    return derived_name([image_name, tag], [image])


def _creation_kind(group: str, config: RuntimeConfig | None) -> KindRef:
    scope = config.creation_scope if config is not None else None
    return Model.kind(group, cluster=scope == "Cluster")


def _discovery(group: str, config: RuntimeConfig | None) -> Obj | None:
    auto = config.auto_discovery if config is not None else None
    if auto is None:
        return None
    if group == GROUP_AIM:
        return {"extractMetadata": bool(auto), "createServiceTemplates": bool(auto)}
    return {"enabled": bool(auto), "autoCreateTemplates": bool(auto)}


def _common_spec(kind: KindRef, service: ServiceView) -> Obj:
    """What a model made for a service takes from the service (its fragments as written)."""
    out: Obj = {}
    if service.runtime_config_name:
        out["runtimeConfigName"] = service.runtime_config_name
    if kind.namespaced:  # secrets and accounts of the service's namespace mean nothing cluster-wide
        if service.pull_secrets:
            out["imagePullSecrets"] = [written(s) for s in service.pull_secrets]
        if service.service_account:
            out["serviceAccountName"] = service.service_account
    return out


def _labels(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {ORIGIN_LABEL: AUTO_GENERATED, PART_OF_LABEL: PART_OF_VALUE, MANAGED_BY: MANAGER, **(extra or {})}


def by_image(informer: Informer, service: ServiceView, image: str, config: RuntimeConfig | None) -> ModelPlan:
    group, namespace = service.ref.group, service.namespace
    try:
        name = auto_model_name(image)
    except InvalidReference as exc:
        message = f"spec.model.image: {exc}"
        return ModelPlan(condition(MODEL_READY, False, INVALID_IMAGE, message), invalid="InvalidSpec")
    matches = [
        model
        for kind in _lookup_kinds(group)
        for model in Model.each(informer, kind, namespace if kind.namespaced else None)
        if model.image == image and not model.deleting
    ]
    sticky = service.previous_model
    if sticky is not None:  # resolved before, kept while Ready (docs/original.md#model-resolution)
        for model in matches:
            if model.uid == sticky.uid and model.state == "Ready":
                return judge(model, f"using (image {image})")
    # Models users made beat those a service auto-created: a service applied together with its
    # model may have created one before the model was seen, and must not be stuck with it.
    curated = [m for m in matches if m.labels.get(ORIGIN_LABEL) != AUTO_GENERATED]
    pool = curated or matches
    local = [m for m in pool if m.ref.namespaced] or pool
    if len(local) > 1:
        names = ", ".join(f"{m.ref.kind} {m.name}" for m in local)
        message = f"{len(local)} models have image {image}: {names}; reference one with spec.model.name"
        return ModelPlan(condition(MODEL_READY, False, MULTIPLE_MODELS, message))
    if local:
        return judge(local[0], f"using (image {image})")
    kind = _creation_kind(group, config)
    taken = name_taken(informer, kind, namespace, name, f"a model of image {image}")
    if taken is not None:
        return taken
    spec: Obj = {"image": image, **_common_spec(kind, service)}
    discovery = _discovery(group, config)
    if discovery is not None:
        spec["discovery"] = discovery
    meta: Obj = {"name": name, "labels": _labels()}
    if kind.namespaced:
        meta["namespace"] = namespace
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, "spec": spec}
    message = f"creating {kind.kind} {name} for image {image}"
    return ModelPlan(condition(MODEL_READY, False, CREATING_MODEL, message), create=(kind, body))


# -- model.custom -------------------------------------------------------------------------------


def _env_value(env: Any, name: str) -> str:
    for e in env or []:
        if isinstance(e, Mapping) and e.get("name") == name:
            return str(e.get("value") or "")
    return ""


def source_key(sources: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """What makes two custom models the same: each source's modelId, sourceUri and S3 endpoint
    (of sources as written: a planned model's, or a stored one's)."""
    return [
        (
            str(s.get("modelId") or ""),
            str(s.get("sourceUri") or ""),
            _env_value(s.get("env"), "AWS_ENDPOINT_URL"),
        )
        for s in sources
    ]


def custom_model_spec(service: ServiceView, custom: AIMServiceModelCustom) -> Obj:
    """The spec of the AIMModel a service's ``model.custom`` asks for: base image, sources,
    hardware, and the service's runtime config, pull secrets, service account and env (a child's
    body, made of the service's fragments as written)."""
    spec: Obj = {
        "image": custom.base_image or DEFAULT_BASE_IMAGE,
        "modelSources": [written(s) for s in custom.model_sources],
        **_common_spec(NAMESPACED_MODEL, service),
    }
    hardware = written(custom.hardware)
    if hardware:
        spec["custom"] = {"hardware": hardware}
    if service.env:
        spec["env"] = [written(e) for e in service.env]
    return spec


def model_identity(kind: KindRef, spec: Mapping[str, Any]) -> Obj:
    """What two custom models must agree on to be one: the whole spec, read as the models are
    (defaults filled in, as the API server fills them into a stored model) with empty values
    dropped (:meth:`Model.identity` of a stored one). Anything in it changes the model's templates
    (hardware, env, sources, pull secrets, service account, runtime config), so services asking
    for different ones must not share."""
    try:
        obj = {
            "apiVersion": kind.api_version,
            "kind": kind.kind,
            "metadata": {"name": "x"},
            "spec": dict(spec),
        }
        parsed = resource_class(kind.group, kind.kind).model_validate(obj)
        read: Any = parsed.model_dump(by_alias=True, exclude_none=True, mode="json").get("spec") or {}
    except (ValidationError, KeyError):
        read = dict(spec)
    return dict(without_empty(read) or {})


def custom_model_name(kind: KindRef, spec: Mapping[str, Any]) -> str:
    """``<first modelId>-<8 hex>``: the original's hash inputs (base image, then each source's
    modelId, sourceUri and ``AWS_ENDPOINT_URL`` if set) followed by the model's whole identity
    (:func:`model_identity`), so different requests never compete for one name."""
    sources = [s for s in spec.get("modelSources") or [] if isinstance(s, Mapping)]
    inputs: list[Any] = [str(spec.get("image") or "")]
    for model_id, uri, endpoint in source_key(sources):
        inputs += [model_id, uri]
        if endpoint:
            inputs.append(endpoint)
    inputs.append(model_identity(kind, spec))
    first = str(sources[0].get("modelId") or "custom") if sources else "custom"
    return derived_name([first], inputs)


def custom_model_of(service: ServiceView, custom: AIMServiceModelCustom) -> tuple[KindRef, Obj]:
    """The kind and spec of the custom model ``service`` asks for (the index names it too)."""
    return Model.kind(service.ref.group), custom_model_spec(service, custom)


def name_taken(
    informer: Informer, kind: KindRef, namespace: str | None, name: str, wanted: str
) -> ModelPlan | None:
    """A model of the name the deployer would create exists but is not the one it wants (a user's
    model of that name, a different image): creating it would fail forever, so say so. ``None``
    when the name is free, or its holder is being deleted (the create follows once it is gone)."""
    existing = Model.get(informer, kind, namespace, name)
    if existing is None or existing.deleting:
        return None
    message = (
        f"{kind.kind} {name} exists but is not {wanted}; delete or rename it, or reference a model "
        "with spec.model.name"
    )
    return ModelPlan(condition(MODEL_READY, False, MODEL_NAME_CONFLICT, message))


def by_custom(informer: Informer, service: ServiceView, custom: AIMServiceModelCustom) -> ModelPlan:
    namespace = service.namespace
    kind, spec = custom_model_of(service, custom)  # as the informer's index computes the same name
    identity = model_identity(kind, spec)
    key = source_key(spec["modelSources"])
    uid = service.uid
    matches = []
    for found in Model.each(informer, kind, namespace):
        if found.deleting:
            continue
        if found.image != spec["image"] or source_key([written(s) for s in found.model_sources]) != key:
            continue  # (cheap checks first)
        if found.identity() == identity:
            matches.append(found)
    if matches:
        # one this service already co-owns first (a model made under an older naming and one
        # made now may both match), then by name: every service picks the same
        model = min(matches, key=lambda m: (uid not in m.owner_uids, m.name))
        plan = judge(model, "using custom model")
        if uid not in model.owner_uids:
            return ModelPlan(plan.condition, plan.model, plan.usable, join=model)
        return plan
    name = custom_model_name(kind, spec)
    taken = name_taken(informer, kind, namespace, name, "the custom model this service asks for")
    if taken is not None:
        return taken
    labels = _labels({CUSTOM_LABEL: "true", SERVICE_LABEL: label_value(service.name)})
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        # not the controller: several services may share the model, each one an owner
        "ownerReferences": [owner_reference(service.ref, service.obj, controller=False)],
    }
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, "spec": spec}
    message = f"creating custom AIMModel {name} ({', '.join(u for _, u, _ in key)})"
    return ModelPlan(condition(MODEL_READY, False, CREATING_MODEL, message), create=(kind, body))


def resolve_model(informer: Informer, service: ServiceView, config: RuntimeConfig | None) -> ModelPlan:
    if service.model_name:
        return by_name(informer, service.ref.group, service.namespace, service.model_name)
    if service.model_image:
        return by_image(informer, service, service.model_image, config)
    if service.model_custom is not None:
        return by_custom(informer, service, service.model_custom)
    message = "spec.model must set exactly one of name, image or custom"
    return ModelPlan(condition(MODEL_READY, False, "InvalidSpec", message), invalid="InvalidSpec")
