"""Typed models of the legacy ``aim.silogen.ai/v1alpha1`` API group (AIM as it lived in kaiwo).

Why this package exists: before AIM moved to ``aim.eai.amd.com`` (:mod:`aimcore.api.crds.aim`) its API was
served under ``aim.silogen.ai``, and users still hold manifests written for it. We serve that group
too, so those manifests apply unchanged; these classes are both the runtime type of such an object
and the source its CRD YAML is generated from (:mod:`aim_dev.crdgen`).

The legacy group went through two generations, and one CRD has to accept manifests of both:

- Generation 1 (the legacy API reference and the images and templates guide,
  docs/specification.md#the-legacy-api-reference): images as the catalog (``AIMImage`` /
  ``AIMClusterImage``), templates keyed by ``aimImageName`` with a ``gpuSelector``, ``AIMService``
  with ``aimImageName`` / ``templateRef`` / ``cacheModel``, runtime configs with ``routeTemplate``.
- Generation 2 (the models guide, docs/specification.md#the-models-guide): the catalog renamed to
  ``AIMModel`` / ``AIMClusterModel`` (same spec plus ``imagePullSecrets``, ``serviceAccountName``,
  ``modelSources`` and ``custom`` models), ``AIMService.spec.model.{ref|name|image|custom}`` and
  ``spec.template``, runtime configs with ``model.{creationScope,autoDiscovery}``.

So every kind here is the *union* of what either generation accepts (11 kinds: the legacy API
reference's nine plus the two model kinds). Where a generation-2 field is used but not described by
the legacy seeds, its type follows the current group's reference
(docs/specification.md#the-current-api-reference) unless the legacy examples contradict it:
legacy hardware lists GPU ``models`` (a list, and it may be combined with ``minVram``) where the
current API has a single ``model``, and custom templates live under ``custom.templates``, not
``customTemplates``.

Reuse of :mod:`aimcore.api.crds.aim`: types identical to the current group's are imported. Where a legacy
type is a current one plus fields (GPU requirements with ``models``, hardware and custom templates
using them, the custom-model spec with ``templates``, the runtime config's ``model`` with
``creationScope``) it subclasses the current type, so code written against the current types also
takes legacy objects. Statuses are written only by our own status service, so their nested types are
the current ones even where those are slightly wider than generation 1's (a resolved reference's
``scope`` may also be ``Merged``, ``imageMetadata`` may carry ``originalLabels``, profile metadata a
``type``); spec types, which users write, follow the legacy seeds.

Where the two generations name one thing twice, both names are accepted and a rule forbids
setting both: ``aimImageName`` vs ``model``, ``templateRef`` vs ``template.name``, ``routeTemplate``
vs ``pathTemplate`` (the later kaiwo name, whose failures the legacy suite reports as
``PathTemplateInvalid``).

Short names never clash with the current group's (``kubectl get aimsvc`` must stay unambiguous):
the legacy names are kept where they are free (``aimst``, ``aimclst``, ``aimrcfg``, ``aimcrcfg``,
``aimimg``, ``aimclimg``) and dropped where they clash (service, models, caches). The categories
are ``aim`` and ``all``, as the original's legacy CRDs had them, so a legacy user's ``kubectl get
aim`` finds their objects (listed with the current group's).

The classes live in one module per kind family, as the current group's do:
:mod:`~aimcore.api.crds.silogen.common` (the rules, field helpers and nested types the families
share), :mod:`~aimcore.api.crds.silogen.models` (``AIMImage``, ``AIMClusterImage``, ``AIMModel``,
``AIMClusterModel``), :mod:`~aimcore.api.crds.silogen.templates` (``AIMServiceTemplate``,
``AIMClusterServiceTemplate``), :mod:`~aimcore.api.crds.silogen.services` (``AIMService``),
:mod:`~aimcore.api.crds.silogen.caches` (``AIMTemplateCache``, ``AIMModelCache``) and
:mod:`~aimcore.api.crds.silogen.runtimeconfigs` (``AIMRuntimeConfig``, ``AIMClusterRuntimeConfig``).
This package re-exports every public name (and the current group's types the legacy kinds reuse, as
the single module did), so ``silogen.AIMService`` and ``from aimcore.api.crds.silogen import
AIMService`` are how code names them; :data:`KINDS` lists the kinds in the order their CRDs are
generated.
"""

from __future__ import annotations

# The current group's types the legacy kinds reuse, exported here as the single module did.
from aimcore.api.crds.aim import (
    GPU_MODEL_XOR_VRAM_MESSAGE,
    GPU_MODEL_XOR_VRAM_RULE,
    REPLICA_BOUNDS_MESSAGE,
    REPLICA_BOUNDS_RULE,
    SOURCE_URI_PATTERN,
    AIMDiscoveryProfileMetadata,
    AIMMetric,
    AIMModelSource,
    AIMModelSourceType,
    AIMPrecision,
    AIMResolvedReference,
    AIMRuntimeConfigStatus,
    AIMServiceAutoScaling,
    AIMServiceRoutingStatus,
    AIMServiceTemplateConfig,
    AIMTemplateCachingConfig,
    ImageMetadata,
    ParentReference,
    check_replica_bounds,
)
from aimcore.api.crds.base import Resource
from aimcore.api.crds.silogen.caches import (
    AIMCacheStatusEnum,
    AIMModelCache,
    AIMModelCacheSpec,
    AIMModelCacheStatus,
    AIMTemplateCache,
    AIMTemplateCacheSpec,
    AIMTemplateCacheStatus,
)
from aimcore.api.crds.silogen.common import (
    CATEGORIES,
    GPU_MODEL_XOR_MODELS_MESSAGE,
    GPU_MODEL_XOR_MODELS_RULE,
    GROUP,
    ROUTE_TEMPLATE_MESSAGE,
    ROUTE_TEMPLATE_RULE,
    AIMGpuRequirements,
    AimGpuSelector,
    AIMHardwareRequirements,
    AIMRuntimeParameters,
)
from aimcore.api.crds.silogen.models import (
    CUSTOM_HARDWARE_MESSAGE,
    CUSTOM_HARDWARE_RULE,
    IMAGE_LIMITS_MESSAGE,
    IMAGE_LIMITS_RULE,
    IMAGE_REQUESTS_MESSAGE,
    IMAGE_REQUESTS_RULE,
    AIMClusterImage,
    AIMClusterModel,
    AIMCustomModelSpec,
    AIMCustomTemplate,
    AIMImage,
    AIMImageDiscoverySpec,
    AIMImageSpec,
    AIMImageStatus,
    AIMImageStatusEnum,
    AIMModel,
    AIMModelSpec,
    AIMModelStatus,
)
from aimcore.api.crds.silogen.runtimeconfigs import (
    AIMClusterRuntimeConfig,
    AIMClusterRuntimeConfigSpec,
    AIMModelConfig,
    AIMModelCreationScope,
    AIMRuntimeConfig,
    AIMRuntimeConfigCommon,
    AIMRuntimeConfigSpec,
    AIMRuntimeRoutingConfig,
)
from aimcore.api.crds.silogen.services import (
    SERVICE_MODEL_MESSAGE,
    SERVICE_MODEL_RULE,
    SERVICE_TARGET_MESSAGE,
    SERVICE_TARGET_RULE,
    SERVICE_TEMPLATE_MESSAGE,
    SERVICE_TEMPLATE_RULE,
    AIMService,
    AIMServiceModel,
    AIMServiceModelCustom,
    AIMServiceOverrides,
    AIMServiceRouting,
    AIMServiceSpec,
    AIMServiceStatus,
    AIMServiceStatusEnum,
)
from aimcore.api.crds.silogen.templates import (
    IMAGE_NAME_IMMUTABLE_MESSAGE,
    AIMClusterServiceTemplate,
    AIMClusterServiceTemplateSpec,
    AIMDiscoveredModelSource,
    AIMProfile,
    AIMServiceTemplate,
    AIMServiceTemplateSpec,
    AIMServiceTemplateSpecCommon,
    AIMServiceTemplateStatus,
    AIMTemplateStatusEnum,
)

KINDS: tuple[type[Resource], ...] = (
    AIMClusterImage,
    AIMImage,
    AIMClusterModel,
    AIMModel,
    AIMClusterRuntimeConfig,
    AIMRuntimeConfig,
    AIMClusterServiceTemplate,
    AIMServiceTemplate,
    AIMService,
    AIMTemplateCache,
    AIMModelCache,
)

__all__ = [
    "CATEGORIES",
    "CUSTOM_HARDWARE_MESSAGE",
    "CUSTOM_HARDWARE_RULE",
    "GPU_MODEL_XOR_MODELS_MESSAGE",
    "GPU_MODEL_XOR_MODELS_RULE",
    "GPU_MODEL_XOR_VRAM_MESSAGE",
    "GPU_MODEL_XOR_VRAM_RULE",
    "GROUP",
    "IMAGE_LIMITS_MESSAGE",
    "IMAGE_LIMITS_RULE",
    "IMAGE_NAME_IMMUTABLE_MESSAGE",
    "IMAGE_REQUESTS_MESSAGE",
    "IMAGE_REQUESTS_RULE",
    "KINDS",
    "REPLICA_BOUNDS_MESSAGE",
    "REPLICA_BOUNDS_RULE",
    "ROUTE_TEMPLATE_MESSAGE",
    "ROUTE_TEMPLATE_RULE",
    "SERVICE_MODEL_MESSAGE",
    "SERVICE_MODEL_RULE",
    "SERVICE_TARGET_MESSAGE",
    "SERVICE_TARGET_RULE",
    "SERVICE_TEMPLATE_MESSAGE",
    "SERVICE_TEMPLATE_RULE",
    "SOURCE_URI_PATTERN",
    "AIMCacheStatusEnum",
    "AIMClusterImage",
    "AIMClusterModel",
    "AIMClusterRuntimeConfig",
    "AIMClusterRuntimeConfigSpec",
    "AIMClusterServiceTemplate",
    "AIMClusterServiceTemplateSpec",
    "AIMCustomModelSpec",
    "AIMCustomTemplate",
    "AIMDiscoveredModelSource",
    "AIMDiscoveryProfileMetadata",
    "AIMGpuRequirements",
    "AIMHardwareRequirements",
    "AIMImage",
    "AIMImageDiscoverySpec",
    "AIMImageSpec",
    "AIMImageStatus",
    "AIMImageStatusEnum",
    "AIMMetric",
    "AIMModel",
    "AIMModelCache",
    "AIMModelCacheSpec",
    "AIMModelCacheStatus",
    "AIMModelConfig",
    "AIMModelCreationScope",
    "AIMModelSource",
    "AIMModelSourceType",
    "AIMModelSpec",
    "AIMModelStatus",
    "AIMPrecision",
    "AIMProfile",
    "AIMResolvedReference",
    "AIMRuntimeConfig",
    "AIMRuntimeConfigCommon",
    "AIMRuntimeConfigSpec",
    "AIMRuntimeConfigStatus",
    "AIMRuntimeParameters",
    "AIMRuntimeRoutingConfig",
    "AIMService",
    "AIMServiceAutoScaling",
    "AIMServiceModel",
    "AIMServiceModelCustom",
    "AIMServiceOverrides",
    "AIMServiceRouting",
    "AIMServiceRoutingStatus",
    "AIMServiceSpec",
    "AIMServiceStatus",
    "AIMServiceStatusEnum",
    "AIMServiceTemplate",
    "AIMServiceTemplateConfig",
    "AIMServiceTemplateSpec",
    "AIMServiceTemplateSpecCommon",
    "AIMServiceTemplateStatus",
    "AIMTemplateCache",
    "AIMTemplateCacheSpec",
    "AIMTemplateCacheStatus",
    "AIMTemplateCachingConfig",
    "AIMTemplateStatusEnum",
    "AimGpuSelector",
    "ImageMetadata",
    "ParentReference",
    "check_replica_bounds",
]
