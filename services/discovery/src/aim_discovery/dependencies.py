"""What wakes discovery's objects: the informer indexes of the names they refer to, and the parts
of its dependency mapping that are discovery's own (the general ones are the runtime's verbs,
:mod:`aimcore.runtime.mappers`; :mod:`aim_discovery.app` puts them together).

- a template wakes the model it belongs to (its owner) or names (:func:`named_model`; the model's
  status aggregates its templates), and the models naming it as their ``defaultServiceTemplate``
  (:func:`default_template`: their status says whether it exists);
- a model wakes the templates naming it (namespace templates of a cluster model too);
- a runtime config wakes the models and templates resolving that name (a namespace config only in
  its namespace), and a cluster config the namespace configs of its name
  (:func:`namespace_configs_named_alike`: their status says what they merge over);
- a Node change that touches ``amd.com/`` labels or resources (:class:`GpuChanges`) wakes every
  template needing a GPU (filed under :data:`NEEDS_GPU` by :data:`needs_gpu`);
- a discovery Job, or its Pod, wakes the template that runs it (:func:`job_template_of`);
- a template's AIMTemplateCache wakes that template (``status.resolvedCache`` names its uid).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from aim_discovery.template_jobs import job_template
from aimcore.api.bus.messages import ChangeEvent, ChangeType
from aimcore.api.crds.base import Resource
from aimcore.api.kinds import MODEL_KINDS, TEMPLATE_KINDS, KindRef
from aimcore.api.types import Obj
from aimcore.domain import gpu as gpus
from aimcore.domain.families.models import AnyModel, Model
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.families.templates import AnyTemplate, Template
from aimcore.domain.runtimeconfig import DEFAULT_NAME
from aimcore.runtime import Informer, Mapper, ResourceIndexer, Target, changed, resource_indexer

MODEL_NAME_INDEX = "model-name"
RUNTIME_CONFIG_INDEX = "runtime-config"
DEFAULT_TEMPLATE_INDEX = "default-template"
GPU_INDEX = "needs-gpu"
NEEDS_GPU = "gpu"


# -- indexes ---------------------------------------------------------------------------------------


def _model_name(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    name = Template(ref, obj, cast(AnyTemplate, resource)).model_name
    return [name] if name else []


model_name: ResourceIndexer = resource_indexer(_model_name, TEMPLATE_KINDS)
"""Index: the model a template is for (``spec.modelName``, legacy ``aimImageName``)."""


def _default_template(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    name = Model(ref, obj, cast(AnyModel, resource)).default_template
    return [name] if name else []


default_template: ResourceIndexer = resource_indexer(_default_template, MODEL_KINDS)
"""Index: the template a model names as its ``spec.defaultServiceTemplate``."""


def _runtime_config(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    found: Model | Template = (
        Model(ref, obj, cast(AnyModel, resource))
        if ref in MODEL_KINDS
        else Template(ref, obj, cast(AnyTemplate, resource))
    )
    return [found.runtime_config_name or DEFAULT_NAME]


runtime_config: ResourceIndexer = resource_indexer(_runtime_config, (*MODEL_KINDS, *TEMPLATE_KINDS))
"""Index: the runtime config a model or template resolves (``default`` when it names none)."""


def _needs_gpu(ref: KindRef, obj: Obj, resource: Resource) -> Iterable[str]:
    return [NEEDS_GPU] if Template(ref, obj, cast(AnyTemplate, resource)).gpu.required else []


needs_gpu: ResourceIndexer = resource_indexer(_needs_gpu, TEMPLATE_KINDS)
"""Index: the templates that need a GPU, under :data:`NEEDS_GPU` (a Node's GPUs change whether
they can run), kept as templates are stored rather than read from each at every Node change."""


# -- mappers ---------------------------------------------------------------------------------------


def named_model(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The model a template names, of the template's scope, if it exists."""
    if obj is None:
        return []
    ref = changed(event)
    template = Template.read(informer, ref, obj)
    if template is None:
        return []
    name = template.model_name
    targets: list[Target] = []
    for kind in Model.kinds_for(ref):
        ns = event.object.namespace if kind.namespaced else None
        if kind.namespaced == ref.namespaced and informer.get(kind, ns, name) is not None:
            targets.append((kind, ns, name))
    return targets


def namespace_configs_named_alike(
    event: ChangeEvent, obj: Obj | None, informer: Informer
) -> Iterable[Target]:
    """A cluster config's namespace configs of the same name (they say whether they merge over it)."""
    ref = changed(event)
    if ref.namespaced:
        return []
    namespaced = RuntimeConfig.kind(ref.group)
    return [
        (namespaced, config["metadata"].get("namespace"), event.object.name)
        for config in informer.list(namespaced)
        if config["metadata"]["name"] == event.object.name
    ]


def job_template_of(event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
    """The template a discovery Job runs for."""
    found = job_template(obj) if obj is not None else None
    return [found] if found else []


class GpuChanges:
    """Passes on to ``then`` only the Node changes that matter to GPU availability (``amd.com/``
    labels and resources; not heartbeats)."""

    def __init__(self, then: Mapper) -> None:
        self.then = then
        self.seen: dict[str, dict[str, str]] = {}

    def __call__(self, event: ChangeEvent, obj: Obj | None, informer: Informer) -> Iterable[Target]:
        fingerprint = gpus.gpu_fingerprint(obj) if obj is not None else {}
        previous = self.seen.get(event.object.name)
        if event.change is ChangeType.DELETED:
            self.seen.pop(event.object.name, None)
        else:
            self.seen[event.object.name] = fingerprint
        if previous == fingerprint and event.change is not ChangeType.DELETED:
            return []
        if previous is None and not fingerprint and event.change is not ChangeType.ADDED:
            return []  # first sight of a node without GPUs (a resync): nothing to re-check
        return self.then(event, obj, informer)
