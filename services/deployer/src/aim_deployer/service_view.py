"""The AIMService being reconciled, read through its parsed model, in one vocabulary for both API
groups.

Why: the runtime hands every reconcile the service parsed and validated (``request.resource``, an
``aim.AIMService`` or a legacy ``silogen.AIMService``), so the deployer's decisions read typed
attributes, with the CRD defaults the models carry, instead of walking the stored dict. Where the
groups spell one request differently this view answers once:

- the model: ``model.{name|image|custom}``; legacy ``model.ref`` (the earlier ``name``) and
  generation 1's ``aimImageName``;
- the template: ``template.name``; legacy also ``templateRef``;
- the caching mode: ``caching.mode`` when set, else the deprecated ``cacheModel`` tri-state (unset
  → Auto, true → Always, false → Never); the legacy group has no ``caching`` and its boolean
  ``cacheModel`` means Always when true and Auto when false;
- the storage class: only the current group's ``storage.defaultStorageClassName``;
- the model the service resolved before: ``status.resolvedModel``, legacy ``status.resolvedImage``.

Two things stay as the API server stores them (:attr:`ServiceView.obj`): the status, which the
runtime does not parse (its own writer is the status service), and the fragments a child copies
verbatim (env entries, pull secrets, the routing block, overrides that name a derived template):
a child gets exactly what the user wrote, not the model's re-serialisation of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.crds import aim, silogen
from aimcore.api.crds.aim import AIMCachingMode
from aimcore.api.crds.base import Resource
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj

AnyService = aim.AIMService | silogen.AIMService
AnyServiceSpec = aim.AIMServiceSpec | silogen.AIMServiceSpec


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class ServiceView:
    """One AIMService: its kind, its parsed model and the object as stored."""

    ref: KindRef
    resource: AnyService
    obj: Obj

    @classmethod
    def of(cls, ref: KindRef, resource: Resource, obj: Obj) -> ServiceView:
        if not isinstance(resource, aim.AIMService | silogen.AIMService):
            raise TypeError(f"not an AIMService: {type(resource).__name__}")
        return cls(ref, resource, obj)

    # -- identity ----------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.resource.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.resource.metadata.namespace

    @property
    def uid(self) -> str | None:
        return self.resource.metadata.uid

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.resource.metadata.labels or {})

    @property
    def deleting(self) -> bool:
        return bool(self.resource.metadata.deletion_timestamp)

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
    def runtime_config_name(self) -> str | None:
        return self.spec.runtime_config_name

    @property
    def storage_class(self) -> str | None:
        """``storage.defaultStorageClassName`` (the current group only)."""
        spec = self.spec
        if isinstance(spec, aim.AIMServiceSpec) and spec.storage is not None:
            return spec.storage.default_storage_class_name or None
        return None

    # -- as stored ---------------------------------------------------------------------------------

    @property
    def wire_spec(self) -> Mapping[str, Any]:
        """The spec as stored: the fragments children copy verbatim."""
        return _mapping(self.obj.get("spec"))

    @property
    def wire_custom(self) -> Mapping[str, Any]:
        """``model.custom`` as stored (the custom model's spec is made of it)."""
        return _mapping(_mapping(self.wire_spec.get("model")).get("custom"))

    @property
    def wire_routing(self) -> Mapping[str, Any]:
        """The service's own ``routing`` block as stored (merged key by key with the runtime
        config's, which is a wire dict too)."""
        return _mapping(self.wire_spec.get("routing"))

    @property
    def status(self) -> Mapping[str, Any]:
        return _mapping(self.obj.get("status"))

    @property
    def conditions(self) -> list[Mapping[str, Any]]:
        return [c for c in self.status.get("conditions") or [] if isinstance(c, Mapping)]

    @property
    def resolved_model(self) -> Mapping[str, Any] | None:
        """The model resolved before (``status.resolvedModel``; legacy ``resolvedImage``)."""
        key = "resolvedImage" if isinstance(self.resource, silogen.AIMService) else "resolvedModel"
        resolved = self.status.get(key)
        return resolved if isinstance(resolved, Mapping) else None

    @property
    def resolved_template(self) -> Mapping[str, Any] | None:
        resolved = self.status.get("resolvedTemplate")
        return resolved if isinstance(resolved, Mapping) else None
