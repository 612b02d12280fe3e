"""``AIMClusterModelSource``: a container registry whose repositories registry-sync turns into
``AIMClusterModel`` entries, by filters. Only registry-sync reads it, so it stands alone.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from aimcore.api.crds.aim.common import CATEGORIES, GROUP, AIMStatus
from aimcore.api.crds.base import (
    AGE,
    STATUS,
    Condition,
    CRDInfo,
    Duration,
    K8sModel,
    LocalObjectReference,
    PrinterColumn,
    Resource,
    Time,
)

# ---------------------------------------------------------------------------------------------
# AIMClusterModelSource
# ---------------------------------------------------------------------------------------------


class ModelSourceFilter(K8sModel):
    """ModelSourceFilter defines a pattern for discovering images.
    Supports multiple formats:
    - Repository patterns: "org/repo*" - matches repositories with wildcards
    - Repository with tag: "org/repo:1.0.0" - exact tag match
    - Full URI: "ghcr.io/org/repo:1.0.0" - overrides registry and tag
    - Full URI with wildcard: "ghcr.io/org/repo*" - overrides registry, matches pattern
    """

    image: str = Field(
        max_length=512,
        description=(
            "Image pattern with wildcard and full URI support.\n"
            "Supported formats:\n"
            '- Repository pattern: "amdenterpriseai/aim-*"\n'
            '- Repository with tag: "silogen/aim-llama:1.0.0" (overrides versions field)\n'
            '- Full URI: "ghcr.io/silogen/aim-google-gemma-3-1b-it:0.8.1-rc1" (overrides '
            "spec.registry and versions)\n"
            '- Full URI with wildcard: "ghcr.io/silogen/aim-*" (overrides spec.registry)\n'
            "When a full URI is specified (including registry like ghcr.io), only images from "
            "that\n"
            "registry will match. When a tag is included, it takes precedence over the versions "
            "field.\n"
            "Wildcard: * matches any sequence of characters."
        ),
    )
    exclude: list[str] | None = Field(
        default=None,
        description=(
            "Exclude lists specific repository names to skip (exact match on repository name "
            "only, not registry).\n"
            "Useful for excluding base images or experimental versions.\n"
            "Examples:\n"
            '- ["amdenterpriseai/aim-base", "amdenterpriseai/aim-experimental"]\n'
            '- ["silogen/aim-base"] - works with "ghcr.io/silogen/aim-*" (registry is not checked'
            " in exclusion)\n"
            'Note: Exclusions match against repository names (e.g., "silogen/aim-base"), not full'
            " URIs."
        ),
    )
    versions: list[str] | None = Field(
        default=None,
        description=(
            "Versions specifies semantic version constraints for this filter.\n"
            "If specified, overrides the global Versions field.\n"
            "Only tags that parse as valid semver are considered (including prereleases like "
            "0.8.1-rc1).\n"
            'Ignored if the Image field includes an explicit tag (e.g., "repo:1.0.0").\n'
            'Examples: ">=1.0.0", "<2.0.0", "~1.2.0" (patch updates), "^1.0.0" (minor updates)\n'
            "Prerelease versions (e.g., 0.8.1-rc1) are supported and follow semver rules:\n"
            '- 0.8.1-rc1 matches ">=0.8.0" (prerelease is part of version 0.8.1)\n'
            '- Use ">=0.8.1-rc1" to match only that prerelease or higher\n'
            "- Leave empty to match all tags (including prereleases and non-semver tags)"
        ),
    )


class AIMClusterModelSourceSpec(K8sModel):
    """AIMClusterModelSourceSpec defines the desired state of AIMClusterModelSource."""

    registry: str = Field(
        default="docker.io",
        description=(
            "Registry to sync from (e.g., docker.io, ghcr.io, gcr.io).\n"
            "Defaults to docker.io if not specified."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] | None = Field(
        default=None,
        description=(
            "ImagePullSecrets contains references to secrets for authenticating to private "
            "registries.\n"
            "Secrets must exist in the operator namespace (typically aim-engine-system).\n"
            "Used for both registry catalog listing and image metadata extraction."
        ),
    )
    filters: list[ModelSourceFilter] = Field(
        min_length=1,
        max_length=100,
        description=(
            "Filters define which images to discover and sync.\n"
            "Each filter specifies an image pattern with optional version constraints and "
            "exclusions.\n"
            "Multiple filters are combined with OR logic (any match includes the image)."
        ),
    )
    sync_interval: Duration = Field(
        default="1h",
        description=(
            "SyncInterval defines how often to sync with the registry.\n"
            "Defaults to 1h. Minimum recommended interval is 15m to avoid rate limiting.\n"
            'Format: duration string (e.g., "30m", "1h", "2h30m").'
        ),
    )
    versions: list[str] | None = Field(
        default=None,
        description=(
            "Versions specifies global semantic version constraints applied to all filters.\n"
            "Individual filters can override this with their own version constraints.\n"
            "Constraints use semver syntax: >=1.0.0, <2.0.0, ~1.2.0, ^1.0.0, etc.\n"
            'Non-semver tags (e.g., "latest", "dev") are silently skipped.\n'
            "Version ranges work on all registries (including ghcr.io, gcr.io) when combined with\n"
            "exact repository names (no wildcards). The controller uses the Tags List API to "
            "fetch\n"
            "all tags for the repository and filters them by the semver constraint.\n"
            'Example: registry=ghcr.io, filters=[{image: "silogen/aim-llama"}], '
            'versions=[">=1.0.0"]\n'
            "will fetch all tags from ghcr.io/silogen/aim-llama and include only those >=1.0.0."
        ),
    )
    max_models: int = Field(
        default=100,
        ge=1,
        le=10000,
        description=(
            "MaxModels is the maximum number of AIMClusterModel resources to create from this "
            "source.\n"
            "Once this limit is reached, no new models will be created, even if more matching "
            "images are discovered.\n"
            "Existing models are never deleted.\n"
            "This prevents runaway model creation from overly broad filters."
        ),
    )


class AIMClusterModelSourceStatus(K8sModel):
    """AIMClusterModelSourceStatus defines the observed state of AIMClusterModelSource."""

    status: AIMStatus | None = Field(
        default=None, description="Status represents the overall state of the model source."
    )
    last_sync_time: Time | None = Field(
        default=None,
        description=(
            "LastSyncTime is the timestamp of the last successful registry sync.\n"
            "Updated after each successful sync operation."
        ),
    )
    discovered_models: int | None = Field(
        default=None,
        description=(
            "DiscoveredModels is the count of AIMClusterModel resources managed by this source.\n"
            "Includes both existing and newly created models."
        ),
    )
    available_models: int | None = Field(
        default=None,
        description=(
            "AvailableModels is the total count of images discovered in the registry that match "
            "the filters.\n"
            "This may be higher than DiscoveredModels if maxModels limit was reached."
        ),
    )
    models_limit_reached: bool | None = Field(
        default=None,
        description=(
            "ModelsLimitReached indicates whether the maxModels limit has been reached.\n"
            "When true, no new models will be created even if more matching images are "
            "discovered."
        ),
    )
    conditions: list[Condition] | None = Field(
        default=None,
        description=(
            "Conditions represent the latest available observations of the source's state.\n"
            "Standard conditions: Ready, Syncing, RegistryReachable."
        ),
    )
    observed_generation: int | None = Field(
        default=None,
        description="ObservedGeneration reflects the generation of the most recently observed spec.",
    )


# ---------------------------------------------------------------------------------------------
# Top-level kinds
# ---------------------------------------------------------------------------------------------


class AIMClusterModelSource(Resource):
    """AIMClusterModelSource automatically discovers and syncs AI model images from container registries."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        group=GROUP,
        kind="AIMClusterModelSource",
        plural="aimclustermodelsources",
        scope="Cluster",
        short_names=("aimclsrc",),
        categories=CATEGORIES,
        printer_columns=(
            STATUS,
            PrinterColumn("Models", ".status.discoveredModels", type="integer"),
            PrinterColumn("LastSync", ".status.lastSyncTime", type="date"),
            AGE,
        ),
        description=(
            "AIMClusterModelSource automatically discovers and syncs AI model images from "
            "container registries."
        ),
    )

    spec: AIMClusterModelSourceSpec
    status: AIMClusterModelSourceStatus | None = None
