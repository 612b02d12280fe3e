"""Runtime configs: ``AIMRuntimeConfig`` and ``AIMClusterRuntimeConfig``, the namespace and cluster
defaults (storage, routing, model creation, label propagation) every other kind's reconcile merges in.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from pydantic import Field

from aimcore.api.crds.aim.common import CATEGORIES, GROUP, AIMRuntimeStorageConfig, AIMServiceRuntimeConfig
from aimcore.api.crds.base import (
    Condition,
    CRDInfo,
    K8sModel,
    Quantity,
    Resource,
)

# ---------------------------------------------------------------------------------------------
# AIMRuntimeConfig / AIMClusterRuntimeConfig
# ---------------------------------------------------------------------------------------------


class AIMModelCreationScope(enum.StrEnum):
    """Scope of the model a service auto-creates from spec.model.image."""

    NAMESPACE = "Namespace"
    CLUSTER = "Cluster"


class AIMModelConfig(K8sModel):
    """AIMModelConfig controls model creation and discovery defaults of a runtime config."""

    creation_scope: AIMModelCreationScope | None = Field(
        default=None,
        description=(
            "CreationScope says whether models a service auto-creates from spec.model.image are\n"
            "namespaced AIMModels (Namespace, the default) or AIMClusterModels (Cluster).\n"
            "An extension of this project: the concept guide documents the field, the API\n"
            "reference omits it."
        ),
    )

    auto_discovery: bool | None = Field(
        default=None,
        description=(
            "AutoDiscovery controls whether models run discovery by default.\n"
            "When true, models run discovery jobs to extract metadata and auto-create templates.\n"
            "When false, discovery is skipped. Discovery failures are non-fatal and reported via "
            "conditions."
        ),
    )


class AIMRuntimeConfigLabelPropagationSpec(K8sModel):
    """AIMRuntimeConfigLabelPropagationSpec controls which labels of a parent AIM resource
    are copied to the child resources it creates.
    """

    enabled: bool = Field(
        default=False,
        description=(
            "Enabled, if true, allows propagating parent labels to all child resources it creates"
            " directly\n"
            "Only label keys that match the ones in Match are propagated."
        ),
    )
    match: list[str] | None = Field(
        default=None,
        description=(
            "Match is a list of label keys that will be propagated to any child resources "
            "created.\n"
            "Wildcards are supported, so for example `org.my/my-key-*` would match any label with"
            " that prefix."
        ),
    )


class AIMArtifactConfig(K8sModel):
    """AIMArtifactConfig holds model-cache defaults (the released original's ``artifact``)."""

    default_retention_priority: int | None = Field(
        default=None,
        ge=0,
        le=2147483647,
        description=(
            "DefaultRetentionPriority is the retention priority of model caches that set none.\n"
            "When unset, such caches are never evicted to make room under a storage quota."
        ),
    )


class AIMArtifactStorageQuota(K8sModel):
    """AIMArtifactStorageQuota limits the storage model caches claim (the released original's)."""

    cluster_limit: Quantity | None = Field(
        default=None,
        description="ClusterLimit caps the storage of all model caches of the cluster together.",
    )
    default_namespace_limit: Quantity | None = Field(
        default=None,
        description=(
            "DefaultNamespaceLimit caps the storage of each namespace's model caches; a namespace's\n"
            "aim.eai.amd.com/artifact-storage-quota annotation overrides it."
        ),
    )


class AIMRuntimeConfigCommon(AIMServiceRuntimeConfig):
    """AIMRuntimeConfigCommon captures configuration fields shared across cluster and namespace scopes.
    These settings apply to both AIMRuntimeConfig (namespace-scoped) and AIMClusterRuntimeConfig
    (cluster-scoped).
    It embeds AIMServiceRuntimeConfig which contains fields that can also be overridden at the service
    level.
    """

    storage: AIMRuntimeStorageConfig | None = Field(
        default=None,
        description=(
            "Storage configures storage defaults for this service's PVCs and caches.\n"
            "When set, these values override namespace/cluster runtime config defaults."
        ),
    )
    artifact: AIMArtifactConfig | None = Field(
        default=None, description="Artifact holds model-cache defaults (retention priority)."
    )
    model: AIMModelConfig | None = Field(
        default=None,
        description=(
            "Model controls model creation and discovery defaults.\n"
            "This field only applies to RuntimeConfig/ClusterRuntimeConfig and is not available "
            "for services."
        ),
    )
    label_propagation: AIMRuntimeConfigLabelPropagationSpec | None = Field(
        default=None,
        description=(
            "LabelPropagation controls how labels from parent AIM resources are propagated to "
            "child resources.\n"
            "When enabled, labels matching the specified patterns are automatically copied from "
            "parent resources\n"
            "(e.g., AIMService, AIMTemplateCache) to their child resources (e.g., Deployments, "
            "Services, PVCs).\n"
            "This is useful for propagating organizational metadata like cost centers, team "
            "identifiers,\n"
            "or compliance labels through the resource hierarchy."
        ),
    )
    default_storage_class_name: str | None = Field(
        default=None,
        description=(
            "DEPRECATED: Use Storage.DefaultStorageClassName instead. This field will be removed "
            "in a future version.\n"
            "For backward compatibility, if this field is set and Storage.DefaultStorageClassName"
            " is not set,\n"
            "the value will be automatically migrated."
        ),
    )
    pvc_headroom_percent: int | None = Field(
        default=None,
        ge=0,
        description=(
            "DEPRECATED: Use Storage.PVCHeadroomPercent instead. This field will be removed in a "
            "future version.\n"
            "For backward compatibility, if this field is set and Storage.PVCHeadroomPercent is "
            "not set,\n"
            "the value will be automatically migrated."
        ),
    )


class AIMRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """AIMRuntimeConfigSpec defines namespace-scoped overrides for AIM resources."""


class AIMClusterRuntimeConfigSpec(AIMRuntimeConfigCommon):
    """AIMClusterRuntimeConfigSpec defines cluster-wide defaults for AIM resources."""

    artifact_storage_quota: AIMArtifactStorageQuota | None = Field(
        default=None,
        description=(
            "ArtifactStorageQuota limits the storage model caches claim, per namespace and for the\n"
            "cluster; a cache over it evicts lower-priority Shared caches, or waits for room."
        ),
    )


class AIMRuntimeConfigStatus(K8sModel):
    """AIMRuntimeConfigStatus records the resolved config reference surfaced to consumers."""

    observed_generation: int | None = Field(
        default=None, description="ObservedGeneration is the last reconciled generation."
    )
    conditions: list[Condition] | None = Field(
        default=None, description="Conditions communicate reconciliation progress."
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------


class AIMRuntimeConfig(Resource):
    """AIMRuntimeConfig is the Schema for namespace-scoped AIM runtime configurations."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMRuntimeConfig",
        plural="aimruntimeconfigs",
        scope="Namespaced",
        short_names=("aimrc",),
        categories=CATEGORIES,
        description="AIMRuntimeConfig is the Schema for namespace-scoped AIM runtime configurations.",
    )

    spec: AIMRuntimeConfigSpec = Field(default_factory=AIMRuntimeConfigSpec)
    status: AIMRuntimeConfigStatus | None = None


class AIMClusterRuntimeConfig(Resource):
    """A cluster-scoped runtime configuration for AIM services, models, and templates."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMClusterRuntimeConfig",
        plural="aimclusterruntimeconfigs",
        scope="Cluster",
        short_names=("aimclrc",),
        categories=CATEGORIES,
        description=(
            "AIMClusterRuntimeConfig is a cluster-scoped runtime configuration for AIM services, "
            "models, and templates.\n"
            "\n"
            "Cluster-scoped runtime configs provide platform-wide defaults that apply to all "
            "namespaces,\n"
            "making them ideal for organization-level policies such as storage classes, discovery"
            " behavior,\n"
            "model creation scope, and routing configuration.\n"
            "\n"
            "When both cluster and namespace runtime configs exist with the same name, the "
            "configs are merged, and\n"
            "the namespace-scoped AIMRuntimeConfig takes precedence for any field that is set in "
            "both."
        ),
    )

    spec: AIMClusterRuntimeConfigSpec = Field(default_factory=AIMClusterRuntimeConfigSpec)
    status: AIMRuntimeConfigStatus | None = None
