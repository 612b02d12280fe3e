"""The reason table of docs/status.md: every condition reason the services report, per kind and
condition, with the state the status rules derive from it — computed from
:mod:`aimcore.domain.status.rules`, so the page cannot drift from the rules (a test compares).

The list of which kind reports which reason on which condition is kept here, by hand, next to the
code that reports them (the services); ``tests/unit/status/test_status_reasons.py`` checks that the rules
know every reason the sources can report, and ``tests/unit/status/test_reason_table.py`` that this table
names each of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from aimcore.api.kinds import GROUP_AIM
from aimcore.domain.status import rules

# (kind as users see it, rule kind, [(condition type, [reasons])])
Table = Sequence[tuple[str, str, Sequence[tuple[str, Sequence[str]]]]]

TABLE: Table = (
    (
        "AIMService",
        "AIMService",
        (
            ("RuntimeConfigReady", ("ConfigFound", "DefaultConfigNotFound", "ConfigNotFound")),
            (
                "ModelReady",
                (
                    "ModelResolved",
                    "CreatingModel",
                    "ModelNotReady",
                    "ModelNotFound",
                    "MultipleModelsFound",
                    "InvalidImageReference",
                    "ModelNameConflict",
                    "ModelCreateRejected",
                    "ModelCreateForbidden",
                    "AwaitingRuntimeConfig",
                ),
            ),
            (
                "TemplateReady",
                (
                    "Resolved",
                    "TemplateNotFound",
                    "TemplateNotReady",
                    "CreatingDerivedTemplate",
                    "TemplateSelectionAmbiguous",
                    "UnoptimizedTemplatesFiltered",
                    "ServiceOverridesNotMatched",
                    "RequiredGPUNotInCluster",
                    "GPUOverrideNotApplicable",
                    "TemplateCreateRejected",
                    "TemplateCreateForbidden",
                    "AwaitingModel",
                ),
            ),
            (
                "CacheReady",
                (
                    "CacheReady",
                    "CachingDisabled",
                    "CacheCreating",
                    "CacheNotReady",
                    "CacheRetrying",
                    "CacheFailed",
                    "CacheLost",
                    "CacheCreateRejected",
                    "CacheCreateForbidden",
                    "AwaitingTemplate",
                ),
            ),
            (
                "InferenceServiceReady",
                (
                    "RuntimeReady",
                    "RuntimeScaling",
                    "CreatingRuntime",
                    "RuntimeNotReady",
                    "ServerlessModeRejected",
                    "InferenceServiceFailed",
                    "InferenceServiceCreateRejected",
                    "InferenceServiceCreateForbidden",
                    "InvalidSpec",
                    "AwaitingCache",
                    "AwaitingValidSpec",
                ),
            ),
            (
                "InferenceServicePodsReady",
                (
                    "PodsReady",
                    "ScaledToZero",
                    "PodsStarting",
                    "WaitingForPods",
                    "PodsPending",
                    "FailedScheduling",
                    "Pulling",
                    "ImagePullBackOff",
                    "PodsNotCreated",
                    "ImageNotFound",
                    "ImagePullAuthFailure",
                    "CrashLoopBackOff",
                    "PodFailed",
                    "PodOOMKilled",
                    "AwaitingInferenceService",
                    "AwaitingValidSpec",
                ),
            ),
            (
                "HPAReady",
                (
                    "HPAOperational",
                    "ScaledToZero",
                    "HPANotFound",
                    "ScaleTargetNotReady",
                    "WaitingForMetrics",
                    "ScaledObjectCreateRejected",
                    "ScaledObjectCreateForbidden",
                ),
            ),
            (
                "HTTPRouteReady",
                (
                    "HTTPRouteAccepted",
                    "RoutingDisabled",
                    "HTTPRouteCreating",
                    "HTTPRoutePending",
                    "HTTPRouteRejected",
                    "GatewayNotConfigured",
                    "PathTemplateInvalid",
                    "RequestTimeoutInvalid",
                    "RouteHostnameRequired",
                    "HTTPRouteCreateRejected",
                    "HTTPRouteCreateForbidden",
                ),
            ),
        ),
    ),
    (
        "AIMModel / AIMClusterModel",
        "AIMModel",
        (
            ("RuntimeConfigReady", ("ConfigFound", "DefaultConfigNotFound", "ConfigNotFound")),
            (
                "ImageMetadataReady",
                (
                    "ImageMetadataFound",
                    "ImageFound",
                    "MetadataFromSpec",
                    "ExtractionDisabled",
                    "SecretNotFound",
                    "InvalidPullSecret",
                    "InvalidImageReference",
                    "ImageNotFound",
                    "BaseImageNotFound",
                    "ImagePullAuthFailure",
                    "RegistryError",
                    "MetadataExtractionFailed",
                    "AddressNotAllowed",
                    "InsecureTokenRealm",
                ),
            ),
            (
                "ServiceTemplatesReady",
                (
                    "AllTemplatesReady",
                    "SomeTemplatesReady",
                    "NoTemplatesExpected",
                    "CreatingTemplates",
                    "TemplatesProgressing",
                    "AwaitingMetadata",
                    "SomeTemplatesDegraded",
                    "SomeTemplatesRejected",
                    "DefaultTemplateNotFound",
                    "AllTemplatesFailed",
                    "NoTemplatesAvailable",
                    "TemplateCreateRejected",
                    "TemplateCreateForbidden",
                    "TemplateNameConflict",
                ),
            ),
        ),
    ),
    (
        "AIMServiceTemplate / AIMClusterServiceTemplate",
        "AIMServiceTemplate",
        (
            ("RuntimeConfigReady", ("ConfigFound", "DefaultConfigNotFound", "ConfigNotFound")),
            ("ModelReady", ("ModelFound", "ModelNotFound", "ModelFailed", "ClusterModelFailed")),
            (
                "GPUReady",
                ("GPUAvailable", "NoGPURequired", "GPUNotAvailable", "VRAMNotAvailable", "InvalidSpec"),
            ),
            (
                "DiscoveryJobReady",
                (
                    "JobComplete",
                    "JobNotCreated",
                    "WaitingForDiscoverySlot",
                    "JobRunning",
                    "JobCreateFailed",
                    "JobBackoffLimitExceeded",
                    "JobDeadlineExceeded",
                    "JobEvicted",
                    "DiscoveryLogUnavailable",
                    "InvalidDiscoveryOutput",
                    "AuthError",
                    "SourceNotFound",
                    "StorageFull",
                ),
            ),
        ),
    ),
    (
        "AIMTemplateCache",
        "AIMTemplateCache",
        (
            ("RuntimeConfigReady", ("ConfigFound", "DefaultConfigNotFound", "ConfigNotFound")),
            ("ServiceTemplateReady", ("TemplateReady", "TemplateNotReady", "ReferenceNotFound")),
            (
                "ModelCachesReady",
                (
                    "AllCachesReady",
                    "CreatingCaches",
                    "CachesNotReady",
                    "SourceNotFound",
                    "ModelCacheCreateRejected",
                    "ModelCacheCreateForbidden",
                ),
            ),
        ),
    ),
    (
        "AIMModelCache",
        "AIMModelCache",
        (
            (
                "StorageReady",
                (
                    "PvcBound",
                    "PvcPending",
                    "PvcLost",
                    "ProvisioningFailed",
                    "PvcCreateRejected",
                    "PvcCreateForbidden",
                    "ClaimBound",
                    "ClaimNotBound",
                    "ClaimNotFound",
                    "ClaimInOtherNamespace",
                ),
            ),
            (
                "StorageQuotaReady",
                (
                    "WithinQuota",
                    "Evicting",
                    "NamespaceQuotaExceeded",
                    "ClusterQuotaExceeded",
                ),
            ),
            (
                "DownloadReady",
                (
                    "Verified",
                    "WaitingForDownloadSlot",
                    "Downloading",
                    "Verifying",
                    "SourceNotFound",
                    "AuthError",
                    "InvalidSource",
                    "StorageFull",
                    "ChecksumMismatch",
                    "DownloadStalled",
                    "DownloadFailed",
                    "AddressNotAllowed",
                    "InvalidDownloadProtocol",
                    "ProtocolUnavailable",
                    "SourceUnreachable",
                    "JobBackoffLimitExceeded",
                    "JobDeadlineExceeded",
                    "JobEvicted",
                    "DownloadJobCreateRejected",
                    "DownloadJobCreateForbidden",
                    "Imported",
                    "MissingFiles",
                    "SizeMismatch",
                    "ImportJobCreateRejected",
                    "ImportJobCreateForbidden",
                ),
            ),
        ),
    ),
)


def _state(rule: rules.Rule, condition: str, reason: str) -> str:
    if reason in rules.DEPENDENCY_REASONS:
        return "the dependency's state if Failed/Degraded/NotAvailable (named in the message), else Pending"
    status = "True" if reason in _TRUE_REASONS else "False"
    state = rule.state_of({"type": condition, "status": status, "reason": reason})
    shown = rule.values[state] if rule.status_field else state.value
    return "Ready (True)" if status == "True" else shown


_TRUE_REASONS = frozenset(
    {
        "ClaimBound",
        "Imported",
        "WithinQuota",
        "ConfigFound",
        "DefaultConfigNotFound",
        "ModelResolved",
        "Resolved",
        "CacheReady",
        "CachingDisabled",
        "RuntimeReady",
        "RuntimeScaling",
        "ScaledToZero",
        "HPAOperational",
        "PodsReady",
        "HTTPRouteAccepted",
        "RoutingDisabled",
        "ImageMetadataFound",
        "ImageFound",
        "MetadataFromSpec",
        "ExtractionDisabled",
        "AllTemplatesReady",
        "SomeTemplatesReady",
        "NoTemplatesExpected",
        "ModelFound",
        "GPUAvailable",
        "NoGPURequired",
        "JobComplete",
        "TemplateReady",
        "AllCachesReady",
        "PvcBound",
        "Verified",
    }
)


def render() -> str:
    lines = [
        "| kind | condition | reason | state it derives |",
        "| --- | --- | --- | --- |",
    ]
    for shown, kind, conditions in TABLE:
        rule = rules.rule_for(GROUP_AIM, kind)
        assert rule is not None, kind
        for condition, reasons in conditions:
            for reason in reasons:
                lines.append(f"| {shown} | `{condition}` | `{reason}` | {_state(rule, condition, reason)} |")
    return "\n".join(lines) + "\n"


def reasons() -> frozenset[str]:
    return frozenset(r for _, _, conditions in TABLE for _, rs in conditions for r in rs)


BEGIN = "<!-- reason table: generated by `python -m aim_dev.reasontable`; do not edit -->"
END = "<!-- end of the reason table -->"


def update(page: str) -> str:
    """``page`` with the text between the markers replaced by the current table."""
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render()}{END}{tail}"


def main() -> int:
    from pathlib import Path  # noqa: PLC0415

    path = Path(__file__).resolve().parents[4] / "docs" / "status.md"
    path.write_text(update(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
