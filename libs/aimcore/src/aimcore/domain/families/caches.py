"""Template caches and model caches of both API groups in one vocabulary: the template a template
cache is for (``templateName``/``templateRef``), its scope and mode, the model caches its status
lists (the current group's), what it gives the model caches it creates (:class:`CacheSource`: a
model source to cache, the same whether the template cache, its template's spec or discovery wrote
it), and what a model cache downloads, where to, with what (its source,
size, env, storage class, download image and pull secrets) and its volume."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aimcore.api.behaviour import Behaviour
from aimcore.api.crds import aim, silogen
from aimcore.api.crds.base import EnvVar
from aimcore.api.kinds import MODEL_CACHE_KINDS, MODEL_CACHE_NAMES, TEMPLATE_CACHE_KINDS, KindRef, in_group
from aimcore.api.types import Obj
from aimcore.domain.families.base import Object, written
from aimcore.runtime.informer import Informer

__all__ = ["AnyModelCache", "AnyTemplateCache", "CacheEntry", "CacheSource", "ModelCache", "TemplateCache"]

AnyTemplateCache = aim.AIMTemplateCache | silogen.AIMTemplateCache
AnyModelCache = aim.AIMModelCache | aim.AIMArtifact | silogen.AIMModelCache


class TemplateCache(Object[AnyTemplateCache]):
    """A template cache, whatever its group."""

    kinds = TEMPLATE_CACHE_KINDS

    @classmethod
    def kind(cls, group: str) -> KindRef:
        """The template cache kind of ``group`` (``AIMTemplateCache``)."""
        return in_group(cls.kinds, group)

    @property
    def template_name(self) -> str:
        """The template it caches: ``spec.templateName`` (legacy ``templateRef``)."""
        spec = self.resource.spec
        return spec.template_ref if isinstance(spec, silogen.AIMTemplateCacheSpec) else spec.template_name

    @property
    def template_scope(self) -> str | None:
        """``Namespace`` or ``Cluster`` (the current group's; ``None``: not said)."""
        spec = self.resource.spec
        scope = spec.template_scope if isinstance(spec, aim.AIMTemplateCacheSpec) else None
        return str(scope) if scope else None

    @property
    def dedicated(self) -> bool:
        """A cache made for one service only (``mode: Dedicated``); others share it."""
        spec = self.resource.spec
        return isinstance(spec, aim.AIMTemplateCacheSpec) and str(spec.mode) == "Dedicated"

    @property
    def model_sources(self) -> list[CacheSource]:
        """``spec.modelSources`` (the current group's): sources to cache instead of the template's."""
        spec = self.resource.spec
        sources = spec.model_sources or [] if isinstance(spec, aim.AIMTemplateCacheSpec) else []
        return [CacheSource.of(written(s)) for s in sources]

    @property
    def env(self) -> list[Obj]:
        """``spec.env`` as written: the first layer of each model cache's env (a source's own wins)."""
        return [written(e) for e in self.resource.spec.env or []]

    @property
    def pull_secrets(self) -> list[Obj]:
        """``spec.imagePullSecrets`` as written (each model cache it creates gets them)."""
        return [written(s) for s in self.resource.spec.image_pull_secrets or []]

    @property
    def storage_class(self) -> str | None:
        """``spec.storageClassName``: the class of the caches it creates, and of those it reuses."""
        return self.resource.spec.storage_class_name or None

    @property
    def download_image(self) -> str | None:
        """``spec.downloadImage`` (the current group's): its model caches' ``modelDownloadImage``."""
        spec = self.resource.spec
        return spec.download_image or None if isinstance(spec, aim.AIMTemplateCacheSpec) else None

    @property
    def runtime_config_name(self) -> str | None:
        """``spec.runtimeConfigName`` (``None``: the default config)."""
        return self.resource.spec.runtime_config_name or None

    @property
    def model_caches(self) -> dict[str, CacheEntry]:
        """``status.modelCaches`` (the current group's), by model (``status.artifacts``, the
        released name of the same entries, when only that is written)."""
        entries = self.status.get("modelCaches") or self.status.get("artifacts")
        if not isinstance(entries, Mapping):
            return {}
        return {str(k): CacheEntry.of(v) for k, v in entries.items() if isinstance(v, Mapping)}


class ModelCache(Object[AnyModelCache]):
    """A model cache, whatever its group."""

    kinds = MODEL_CACHE_KINDS

    @classmethod
    def kind(cls, group: str, behaviour: Behaviour = Behaviour.SEEDS) -> KindRef:
        """The model cache kind the operator creates in ``group``: ``AIMModelCache``, or under the
        released behaviour the current group's ``AIMArtifact``."""
        return MODEL_CACHE_NAMES[group].created(behaviour)

    @classmethod
    def each_in(cls, informer: Informer, group: str, namespace: str | None) -> list[ModelCache]:
        """Every model cache of ``group`` in ``namespace``, whatever its kind (``AIMModelCache``,
        ``AIMArtifact``: all are read)."""
        return [c for kind in cls.kinds_in(group) for c in cls.each(informer, kind, namespace)]

    @classmethod
    def get_in(cls, informer: Informer, group: str, namespace: str | None, name: str) -> ModelCache | None:
        """The model cache of ``group`` named ``name``, whatever its kind (the seeds' first)."""
        found = (cls.get(informer, kind, namespace, name) for kind in cls.kinds_in(group))
        return next((c for c in found if c is not None), None)

    @property
    def source_uri(self) -> str:
        """``spec.sourceUri``: what it downloads (``hf://``, ``s3://``, ``oci://``)."""
        return str(self.resource.spec.source_uri)

    @property
    def model_id(self) -> str | None:
        """``spec.modelId`` (the current group's only): where in the volume the model goes."""
        spec = self.resource.spec
        return spec.model_id or None if isinstance(spec, aim.AIMModelCacheSpec) else None

    @property
    def size(self) -> int | str | None:
        """``spec.size``: the volume asked for (a quantity), ``None`` to size it from the source."""
        return self.resource.spec.size or None

    @property
    def env(self) -> list[EnvVar]:
        """``spec.env``: the download's environment (credentials, endpoints)."""
        return list(self.resource.spec.env or [])

    @property
    def storage_class(self) -> str | None:
        """``spec.storageClassName`` (``None``: the runtime config's or the cluster's default)."""
        return self.resource.spec.storage_class_name or None

    @property
    def download_image(self) -> str:
        """``spec.modelDownloadImage``: the image of the download Job."""
        return str(self.resource.spec.model_download_image or "")

    @property
    def download_filter(self) -> Obj | None:
        """``spec.downloadFilter`` as written (the current group's only; ``None`` when unset, ``{}``
        for no filtering): which of the source's files are downloaded."""
        spec = self.resource.spec
        found = spec.download_filter if isinstance(spec, aim.AIMModelCacheSpec) else None
        return found.wire() if found is not None else None

    @property
    def pull_secrets(self) -> list[str]:
        """The names ``spec.imagePullSecrets`` gives (for the download image, and an ``oci://``
        source's registry)."""
        return [s.name for s in self.resource.spec.image_pull_secrets or [] if s.name]

    @property
    def runtime_config_name(self) -> str | None:
        """``spec.runtimeConfigName`` (the current group's; ``None``: the default config)."""
        spec = self.resource.spec
        return spec.runtime_config_name or None if isinstance(spec, aim.AIMModelCacheSpec) else None

    @property
    def mode(self) -> str:
        """``Dedicated`` when something owns it (it goes with its owners), else ``Shared``
        (``status.mode`` of the current group)."""
        return "Dedicated" if self.resource.metadata.owner_references else "Shared"

    @property
    def claim(self) -> str | None:
        """``status.persistentVolumeClaim``: the volume it filled."""
        claim = self.status.get("persistentVolumeClaim")
        return str(claim) if claim else None


@dataclass(frozen=True)
class CacheSource:
    """A model source a template cache caches, as written: an ``AIMModelSource`` of the template
    cache's or its template's spec, or one discovery wrote in the template's ``status.modelSources``
    (the legacy group's name it: ``name``). ``env`` and ``size`` are copied to the model cache."""

    uri: str = ""
    model_id: str | None = None
    name: str | None = None
    size: Any = None
    env: tuple[Any, ...] = ()

    @classmethod
    def of(cls, source: Mapping[str, Any]) -> CacheSource:
        return cls(
            uri=_text(source, "sourceUri") or "",
            model_id=_text(source, "modelId"),
            name=_text(source, "name"),
            size=source.get("size") or None,
            env=tuple(source.get("env") or ()),
        )


@dataclass(frozen=True)
class CacheEntry:
    """A model cache a template cache's status lists (``status.modelCaches[model]``), as written."""

    name: str | None = None
    model: str | None = None
    status: str | None = None
    claim: str | None = None
    mount_point: str | None = None

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> CacheEntry:
        return cls(
            name=_text(entry, "name"),
            model=_text(entry, "model"),
            status=_text(entry, "status"),
            claim=_text(entry, "persistentVolumeClaim"),
            mount_point=_text(entry, "mountPoint"),
        )


def _text(fragment: Mapping[str, Any], key: str) -> str | None:
    """A field of a fragment as written, as text (``None`` when unset or empty)."""
    value = fragment.get(key)
    return str(value) if value else None
