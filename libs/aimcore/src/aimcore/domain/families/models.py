"""Models of both API groups in one vocabulary: AIMModel and AIMClusterModel, the legacy group's
generation-2 AIMModel/AIMClusterModel and generation-1 AIMImage/AIMClusterImage (whose spec has
the image, its default template and discovery settings, and nothing else)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from aimcore.api.crds import aim, silogen
from aimcore.api.crds.aim import AIMCustomTemplate, AIMModelSource
from aimcore.api.crds.base import EnvVar, ResourceRequirements
from aimcore.api.kinds import IMAGE_PAIRS, MODEL_KINDS, MODEL_PAIRS, KindRef
from aimcore.api.types import Obj
from aimcore.domain.families.base import Deployable, written

__all__ = ["AnyCustom", "AnyModel", "Model", "without_empty"]

AnyModel = (
    aim.AIMModel
    | aim.AIMClusterModel
    | silogen.AIMModel
    | silogen.AIMClusterModel
    | silogen.AIMImage
    | silogen.AIMClusterImage
)
AnyCustom = aim.AIMCustomModelSpec | silogen.AIMCustomModelSpec


class Model(Deployable[AnyModel]):
    """A model (or legacy image), whatever its group."""

    kinds = MODEL_KINDS

    @classmethod
    def kind(cls, group: str, *, cluster: bool = False) -> KindRef:
        """The model kind of ``group`` a service makes and names: ``AIMModel``, or with ``cluster``
        ``AIMClusterModel`` (the legacy group's generation-1 images are read, never made)."""
        return MODEL_PAIRS[group].scoped(cluster=cluster)

    @classmethod
    def kinds_for(cls, template: KindRef) -> list[KindRef]:
        """Where a template of kind ``template`` looks its model up, in order: the namespace first
        (namespaced templates), then the cluster. Legacy templates name a generation-2 model or a
        generation-1 image."""
        group = template.group
        pairs = [MODEL_PAIRS[group], *([IMAGE_PAIRS[group]] if group in IMAGE_PAIRS else [])]
        namespaced = [pair.namespaced for pair in pairs] if template.namespaced else []
        return [*namespaced, *(pair.cluster for pair in pairs)]

    @property
    def image(self) -> str:
        return self.resource.spec.image or ""

    @property
    def model_sources(self) -> list[AIMModelSource]:
        """``spec.modelSources`` (a custom model's; generation-1 images have none)."""
        spec = self.resource.spec
        return list(spec.model_sources or []) if not isinstance(spec, silogen.AIMImageSpec) else []

    @property
    def written_sources(self) -> list[Obj]:
        """``spec.modelSources`` as written: what a template copies and the outbound policy judges."""
        return [written(s) for s in self.model_sources]

    @property
    def is_custom(self) -> bool:
        return bool(self.model_sources)

    @property
    def env(self) -> list[EnvVar]:
        """``spec.env`` (the current group's only)."""
        spec = self.resource.spec
        return list(spec.env or []) if isinstance(spec, aim.AIMModelSpec) else []

    @property
    def written_env(self) -> list[Obj]:
        """``spec.env`` as written: the first layer of the env its templates and Jobs get."""
        return [written(e) for e in self.env]

    @property
    def resources(self) -> ResourceRequirements | None:
        return self.resource.spec.resources

    @property
    def default_template(self) -> str | None:
        """``spec.defaultServiceTemplate``: the template its services run unless they name one."""
        return self.resource.spec.default_service_template or None

    @property
    def custom(self) -> AnyCustom | None:
        """``spec.custom``: a custom model's default hardware and profile type."""
        return getattr(self.resource.spec, "custom", None)

    @property
    def custom_templates(self) -> list[AIMCustomTemplate]:
        """``spec.customTemplates`` (legacy: ``spec.custom.templates``)."""
        spec = self.resource.spec
        if isinstance(spec, aim.AIMModelSpec):
            return list(spec.custom_templates or [])
        custom = getattr(spec, "custom", None)
        return list(custom.templates or []) if isinstance(custom, silogen.AIMCustomModelSpec) else []

    @property
    def spec_metadata(self) -> Obj | None:
        """``spec.imageMetadata`` as written (the current group's): metadata given, not read."""
        spec = self.resource.spec
        metadata = spec.image_metadata if isinstance(spec, aim.AIMModelSpec) else None
        return written(metadata) if metadata is not None else None

    @property
    def status_metadata(self) -> Mapping[str, Any] | None:
        """``status.imageMetadata`` as discovery wrote it (the labels read before)."""
        metadata = self.status.get("imageMetadata")
        return metadata if isinstance(metadata, Mapping) and metadata else None

    def extract_metadata(self, auto_discovery: bool | None) -> bool:
        """Whether to read the image's labels: the model's ``discovery.extractMetadata`` (legacy
        ``enabled``) when written, else the runtime config's ``model.autoDiscovery``, else yes."""
        return _first(self._discovery("extract_metadata", "enabled"), auto_discovery)

    def create_templates(self, auto_discovery: bool | None) -> bool:
        """Whether to make templates from the labels: ``discovery.createServiceTemplates`` (legacy
        ``autoCreateTemplates``) when written, else the runtime config's, else yes."""
        return _first(self._discovery("create_service_templates", "auto_create_templates"), auto_discovery)

    def _discovery(self, current: str, legacy: str) -> bool | None:
        """A discovery setting the model's spec writes (a default the model fills in is not one)."""
        discovery = self.resource.spec.discovery
        if discovery is None:
            return None
        return _said(discovery, current if isinstance(discovery, aim.AIMModelDiscoveryConfig) else legacy)

    def identity(self) -> Obj:
        """The whole spec, defaults filled in and empty values dropped: what two custom models
        must agree on to be one (see ``aim_deployer.model_resolution.model_identity``)."""
        return dict(
            without_empty(self.resource.spec.model_dump(by_alias=True, exclude_none=True, mode="json"))
        )


def _said(model: BaseModel, field: str) -> bool | None:
    """``field`` of ``model`` when its input set it, else ``None``."""
    value = getattr(model, field) if field in model.model_fields_set else None
    return bool(value) if value is not None else None


def _first(own: bool | None, fallback: bool | None) -> bool:
    if own is not None:
        return bool(own)
    return fallback if fallback is not None else True


def without_empty(value: Any) -> Any:
    """``value`` with ``None``, ``""``, ``[]`` and ``{}`` left out of every mapping in it."""
    if isinstance(value, dict):
        kept = {str(k): without_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list | tuple):
        return [without_empty(v) for v in value]
    return value
