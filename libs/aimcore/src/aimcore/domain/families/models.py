"""Models of both API groups in one vocabulary: AIMModel and AIMClusterModel, the legacy group's
generation-2 AIMModel/AIMClusterModel and generation-1 AIMImage/AIMClusterImage (whose spec has
the image, its default template and discovery settings, and nothing else)."""

from __future__ import annotations

from typing import Any

from aimcore.api.crds import aim, silogen
from aimcore.api.crds.aim import AIMModelSource
from aimcore.api.crds.base import EnvVar, ResourceRequirements
from aimcore.api.kinds import MODEL_KINDS
from aimcore.api.types import Obj
from aimcore.domain.families.base import Object

__all__ = ["AnyModel", "Model", "without_empty"]

AnyModel = (
    aim.AIMModel
    | aim.AIMClusterModel
    | silogen.AIMModel
    | silogen.AIMClusterModel
    | silogen.AIMImage
    | silogen.AIMClusterImage
)


class Model(Object[AnyModel]):
    """A model (or legacy image), whatever its group."""

    kinds = MODEL_KINDS

    @property
    def image(self) -> str:
        return self.resource.spec.image or ""

    @property
    def model_sources(self) -> list[AIMModelSource]:
        """``spec.modelSources`` (a custom model's; generation-1 images have none)."""
        spec = self.resource.spec
        return list(spec.model_sources or []) if not isinstance(spec, silogen.AIMImageSpec) else []

    @property
    def is_custom(self) -> bool:
        return bool(self.model_sources)

    @property
    def env(self) -> list[EnvVar]:
        """``spec.env`` (the current group's only)."""
        spec = self.resource.spec
        return list(spec.env or []) if isinstance(spec, aim.AIMModelSpec) else []

    @property
    def resources(self) -> ResourceRequirements | None:
        return self.resource.spec.resources

    @property
    def default_template(self) -> str | None:
        """``spec.defaultServiceTemplate``: the template its services run unless they name one."""
        return self.resource.spec.default_service_template or None

    def identity(self) -> Obj:
        """The whole spec, defaults filled in and empty values dropped: what two custom models
        must agree on to be one (see ``aim_deployer.model_resolution.model_identity``)."""
        return dict(
            without_empty(self.resource.spec.model_dump(by_alias=True, exclude_none=True, mode="json"))
        )


def without_empty(value: Any) -> Any:
    """``value`` with ``None``, ``""``, ``[]`` and ``{}`` left out of every mapping in it."""
    if isinstance(value, dict):
        kept = {str(k): without_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list | tuple):
        return [without_empty(v) for v in value]
    return value
