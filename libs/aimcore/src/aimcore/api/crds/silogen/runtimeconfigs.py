"""Legacy runtime configs: ``AIMRuntimeConfig`` and ``AIMClusterRuntimeConfig``, with generation 1's
``routeTemplate`` and generation 2's ``model.{creationScope,autoDiscovery}``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from aimcore.api.crds import aim as current
from aimcore.api.crds.aim import AIMRuntimeConfigStatus
from aimcore.api.crds.base import (
    AGE,
    CRDInfo,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    Resource,
)
from aimcore.api.crds.silogen.common import _legacy_crd, _RoutingCommon

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------

AIMModelCreationScope = current.AIMModelCreationScope


# ---------------------------------------------------------------------------------------------
# Routing and runtime configs
# ---------------------------------------------------------------------------------------------


class AIMRuntimeRoutingConfig(_RoutingCommon):
    """Routing defaults applied to services using a runtime config."""

    enabled: bool | None = Field(
        default=None,
        description="Enabled toggles HTTP routing management for consumers of this runtime config.",
    )


class AIMModelConfig(current.AIMModelConfig):
    """The current group's model defaults; generation 2 declares creationScope with a default."""

    creation_scope: AIMModelCreationScope = Field(
        default=AIMModelCreationScope.NAMESPACE,
        description=(
            "CreationScope says whether auto-created models are AIMClusterModels or namespaced AIMModels."
        ),
    )


class AIMRuntimeConfigCommon(K8sModel):
    """Runtime-config fields shared by the cluster and namespace scopes."""

    default_storage_class_name: str | None = Field(
        default=None,
        description=(
            "DefaultStorageClassName is the storage class used for model caches when one is not\n"
            "specified directly on the consumer resource."
        ),
    )
    routing: AIMRuntimeRoutingConfig | None = Field(
        default=None, description="Routing controls HTTP routing defaults applied to AIM resources."
    )
    model: AIMModelConfig | None = Field(
        default=None, description="Model controls creation and discovery of auto-created models."
    )
    cache_base_images: bool | None = Field(
        default=None, description="CacheBaseImages asks the operator to pre-cache AIM base images."
    )


class AIMClusterRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """Cluster-wide defaults for AIM resources."""


class AIMRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """Namespace-scoped overrides for AIM resources, plus the namespace's credentials."""

    service_account_name: str | None = Field(
        default=None,
        description=(
            "ServiceAccountName is the service account used for discovery jobs, cache warmers and any\n"
            "other workloads spawned by the operator on behalf of this runtime config."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None,
        description=(
            "ImagePullSecrets are merged with controller defaults for pods that pull model or runtime images."
        ),
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------

_CACHE_BASE_IMAGES = PrinterColumn("CacheBaseImages", ".spec.cacheBaseImages", type="boolean")


class AIMClusterRuntimeConfig(Resource):
    """Cluster-scoped runtime defaults for AIM resources."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMClusterRuntimeConfig",
        "Cluster",
        "AIMClusterRuntimeConfig defines cluster-scoped runtime defaults for AIM resources.",
        (_CACHE_BASE_IMAGES, PrinterColumn("DefaultStorageClass", ".spec.defaultStorageClassName"), AGE),
        short_name="aimcrcfg",
    )
    spec: AIMClusterRuntimeConfigSpec
    status: AIMRuntimeConfigStatus | None = None


class AIMRuntimeConfig(Resource):
    """Namespace-scoped runtime overrides for AIM resources."""

    crd: ClassVar[CRDInfo] = _legacy_crd(
        "AIMRuntimeConfig",
        "Namespaced",
        "AIMRuntimeConfig defines namespace-scoped runtime overrides for AIM resources.",
        (PrinterColumn("ServiceAccount", ".spec.serviceAccountName"), _CACHE_BASE_IMAGES, AGE),
        short_name="aimrcfg",
    )
    spec: AIMRuntimeConfigSpec
    status: AIMRuntimeConfigStatus | None = None
