"""The AIMService family's adapter: a service of either API group, read through its parsed model
in one vocabulary, by the informer's indexes and by the reconcile alike.

Why: the runtime hands every reconcile the service parsed and validated (``request.resource``, an
``aim.AIMService`` or a legacy ``silogen.AIMService``), and the informer parses the services it
indexes the same way (:meth:`aimcore.runtime.informer.Informer.decoded`), so the deployer's
decisions read typed attributes, with the CRD defaults the models carry, and the index and the
reconcile cannot disagree. Where the groups spell one request differently this view answers once:

- the model: ``model.{name|image|custom}``; legacy ``model.ref`` (the earlier ``name``) and
  generation 1's ``aimImageName``;
- the template: ``template.name``; legacy also ``templateRef``;
- the caching mode: ``caching.mode`` when set, else the deprecated ``cacheModel`` tri-state (unset
  → Auto, true → Always, false → Never); the legacy group has no ``caching`` and its boolean
  ``cacheModel`` means Always when true and Auto when false (the released original's reading:
  :func:`aim_deployer.caching.service_mode`);
- the storage class: only the current group's ``storage.defaultStorageClassName``;
- the routing: ``routing`` with the legacy ``routeTemplate`` read as ``pathTemplate``;
- the model the service resolved before: ``status.resolvedModel``, legacy ``status.resolvedImage``.

A child gets the fragments it copies (env, pull secrets, overrides, the custom model) as the user
wrote them (:func:`~aimcore.domain.families.base.written`), not the model's re-serialisation; a
path template is evaluated over the object as stored (:attr:`obj`).
"""

from __future__ import annotations

from typing import Any

from aim_deployer.overrides import Overrides
from aimcore.api.crds import aim, silogen
from aimcore.api.crds.aim import AIMCachingMode
from aimcore.api.crds.base import EnvVar, LocalObjectReference, Resource
from aimcore.api.kinds import SERVICE_KINDS, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.base import Object, Reference, written
from aimcore.domain.families.runtimeconfigs import routing_value
from aimcore.domain.families.templates import with_cpu

AnyService = aim.AIMService | silogen.AIMService
AnyServiceSpec = aim.AIMServiceSpec | silogen.AIMServiceSpec
AnyServiceRouting = aim.AIMRuntimeRoutingConfig | silogen.AIMServiceRouting


class ServiceView(Object[AnyService]):
    """One AIMService: its kind, its parsed model and the object as stored."""

    kinds = SERVICE_KINDS

    @classmethod
    def of(cls, ref: KindRef, resource: Resource, obj: Obj) -> ServiceView:
        if not isinstance(resource, aim.AIMService | silogen.AIMService):
            raise TypeError(f"not an AIMService: {type(resource).__name__}")
        return cls(ref, obj, resource)

    # -- the spec, typed ---------------------------------------------------------------------------

    @property
    def spec(self) -> AnyServiceSpec:
        return self.resource.spec

    @property
    def model_name(self) -> str | None:
        """The model asked for by name (legacy: ``aimImageName``, ``model.ref`` or ``model.name``)."""
        spec = self.spec
        if isinstance(spec, silogen.AIMServiceSpec):
            if spec.aim_image_name:
                return spec.aim_image_name
            return (spec.model.name or spec.model.ref) if spec.model is not None else None
        return spec.model.name

    @property
    def model_image(self) -> str | None:
        """The model asked for by image (``model.image``)."""
        model = self._model
        return model.image if model is not None else None

    @property
    def model_custom(self) -> aim.AIMServiceModelCustom | None:
        """The inline custom model (``model.custom``)."""
        model = self._model
        return model.custom if model is not None else None

    @property
    def _model(self) -> aim.AIMServiceModel | silogen.AIMServiceModel | None:
        return self.spec.model  # None only in generation 1 (aimImageName), which names the model only

    @property
    def template_name(self) -> str | None:
        """The template asked for by name (``template.name``; legacy also ``templateRef``)."""
        spec = self.spec
        name = spec.template.name if spec.template is not None else None
        if not name and isinstance(spec, silogen.AIMServiceSpec):
            name = spec.template_ref
        return name or None

    @property
    def allow_unoptimized(self) -> bool:
        template = self.spec.template
        return template is not None and bool(template.allow_unoptimized)

    @property
    def caching_mode(self) -> AIMCachingMode:
        spec = self.spec
        if isinstance(spec, silogen.AIMServiceSpec):
            return AIMCachingMode.ALWAYS if spec.cache_model else AIMCachingMode.AUTO
        if spec.caching is not None and spec.caching.mode:
            return AIMCachingMode(spec.caching.mode)
        if spec.cache_model is None:
            return AIMCachingMode.AUTO
        return AIMCachingMode.ALWAYS if spec.cache_model else AIMCachingMode.NEVER

    @property
    def written_caching_mode(self) -> str | None:
        """``caching.mode`` as the object has it (the current group's; ``None`` when unset): the
        released original reads only this (``cacheModel`` ignored)."""
        spec = self.spec
        if isinstance(spec, aim.AIMServiceSpec) and spec.caching is not None and spec.caching.mode:
            return str(spec.caching.mode)
        return None

    @property
    def runtime_config_name(self) -> str | None:
        return self.spec.runtime_config_name

    @property
    def storage_class(self) -> str | None:
        """``storage.defaultStorageClassName`` (the current group only)."""
        spec = self.spec
        if isinstance(spec, aim.AIMServiceSpec) and spec.storage is not None:
            return spec.storage.default_storage_class_name or None
        return None

    @property
    def routing(self) -> AnyServiceRouting | None:
        """The service's own ``routing`` (merged field by field with the runtime config's)."""
        return self.spec.routing

    def routing_setting(self, name: str) -> Any:
        """A field of the service's own routing (:func:`routing_value`)."""
        return routing_value(self.routing, name)

    # -- fragments a child copies as written -------------------------------------------------------

    @property
    def env(self) -> list[EnvVar]:
        return list(self.spec.env or [])

    @property
    def caching_env(self) -> list[EnvVar]:
        """``spec.caching.env`` (the primary group's only): for the download, never the predictor."""
        spec = self.spec
        caching = spec.caching if isinstance(spec, aim.AIMServiceSpec) else None
        return list(caching.env or []) if caching is not None else []

    @property
    def pull_secrets(self) -> list[LocalObjectReference]:
        return list(self.spec.image_pull_secrets or [])

    @property
    def service_account(self) -> str | None:
        spec = self.spec
        return spec.service_account_name or None if isinstance(spec, aim.AIMServiceSpec) else None

    @property
    def priority_class(self) -> str | None:
        """``spec.priorityClassName`` (the primary group's only)."""
        spec = self.spec
        return spec.priority_class_name or None if isinstance(spec, aim.AIMServiceSpec) else None

    @property
    def resources(self) -> Obj | None:
        """``spec.resources`` as written, with the CPU of ``spec.overrides.hardware.cpu`` filled in
        where they give none (the service's own resources win, as they win over a template's)."""
        spec = self.spec
        overrides = spec.overrides if isinstance(spec, aim.AIMServiceSpec) else None
        hardware = overrides.hardware if overrides is not None else None
        return with_cpu(spec.resources, hardware.cpu if hardware is not None else None)

    @property
    def overrides(self) -> Overrides | None:
        """What ``spec.overrides`` asks of the template (``None``: nothing is overridden)."""
        return Overrides.of(self.spec.overrides)

    @property
    def wire_custom(self) -> Obj:
        """``model.custom`` as written (the custom model's spec is made of it)."""
        custom = self.model_custom
        return written(custom) if custom is not None else {}

    # -- status (as the status service wrote it) --------------------------------------------------

    @property
    def previous_model(self) -> Reference | None:
        """The model resolved before (``status.resolvedModel``; legacy ``resolvedImage``)."""
        return self.resolved(
            "resolvedImage" if isinstance(self.resource, silogen.AIMService) else "resolvedModel"
        )

    @property
    def previous_template(self) -> Reference | None:
        """The template resolved before (``status.resolvedTemplate``)."""
        return self.resolved("resolvedTemplate")
