"""Per-kind aggregation rules: top-level status and ``Ready`` from the component conditions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, get_args

import pytest

from aimcore.domain.status import rules
from aimcore.domain.status.rules import State

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
T0_TEXT = "2025-01-01T12:00:00Z"


def cond(type_: str, status: str, reason: str, message: str = "", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_, "status": status, "reason": reason, **extra}
    if message:
        out["message"] = message
    out.setdefault("lastTransitionTime", T0_TEXT)
    return out


def ready_of(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == "Ready")


def aggregate(
    kind: str, conditions: list[dict[str, Any]], group: str = "aim.eai.amd.com", **status: Any
) -> dict[str, Any]:
    rule = rules.rule_for(group, kind)
    assert rule is not None
    return rules.aggregate(rule, {"conditions": conditions, **status}, now=T1)


# -- the root status -----------------------------------------------------------------------------


def test_all_components_ready_is_ready_and_running_for_a_service() -> None:
    conditions = [
        cond("ModelReady", "True", "ModelResolved"),
        cond("TemplateReady", "True", "Resolved"),
        cond("InferenceServiceReady", "True", "RuntimeReady"),
    ]
    model = aggregate("AIMTemplateCache", conditions, observedGeneration=3)
    assert model["status"] == "Ready"
    ready = ready_of(model)
    assert (ready["status"], ready["reason"]) == ("True", "AllComponentsReady")
    assert ready["observedGeneration"] == 3

    service = aggregate("AIMService", conditions)
    assert service["status"] == "Running"
    assert ready_of(service)["reason"] == "AllComponentsReady"


def test_one_failed_component_fails_the_object_with_its_reason() -> None:
    status = aggregate(
        "AIMTemplateCache",
        [
            cond("ServiceTemplateReady", "True", "TemplateReady"),
            cond("ArtifactsReady", "False", "VerificationFailed", "sha256 mismatch for model.safetensors"),
            cond("RuntimeConfigReady", "False", "ConfigNotFound"),
        ],
    )
    assert status["status"] == "Failed"
    ready = ready_of(status)
    assert (ready["status"], ready["reason"]) == ("False", "VerificationFailed")
    assert ready["message"] == "Component Artifacts is not ready: sha256 mismatch for model.safetensors"


def test_invalid_spec_and_auth_fail_first() -> None:
    status = aggregate(
        "AIMService",
        [
            cond("ModelReady", "True", "ModelResolved"),
            cond("ConfigValid", "False", "ReferenceNotFound", "template llama not found"),
        ],
    )
    assert status["status"] == "Failed"
    ready = ready_of(status)
    assert (ready["reason"], ready["message"]) == ("ReferenceNotFound", "template llama not found")
    auth = aggregate(
        "AIMModel",
        [cond("ImageMetadataReady", "True", "ImageFound"), cond("AuthValid", "False", "AuthError")],
    )
    assert (auth["status"], ready_of(auth)["reason"]) == ("Failed", "AuthError")


def test_infrastructure_error_degrades() -> None:
    status = aggregate(
        "AIMModel",
        [
            cond("ImageMetadataReady", "False", "AwaitingMetadata"),
            cond("DependenciesReachable", "False", "InfrastructureError", "registry: connection refused"),
        ],
    )
    assert status["status"] == "Degraded"
    ready = ready_of(status)
    assert (ready["reason"], ready["message"]) == ("InfrastructureError", "registry: connection refused")
    # A component whose reason is an infrastructure error degrades too, and explains Ready.
    fetch = aggregate("AIMService", [cond("InferenceServiceReady", "False", "FetchError", "timeout")])
    assert (fetch["status"], ready_of(fetch)["reason"]) == ("Degraded", "FetchError")
    # Failed stays Failed even with infrastructure errors.
    failed = aggregate(
        "AIMModel",
        [
            cond("ImageMetadataReady", "False", "ImageNotFound"),
            cond("DependenciesReachable", "False", "InfrastructureError"),
        ],
    )
    assert failed["status"] == "Failed"


def test_upstream_pending_and_downstream_progressing() -> None:
    status = aggregate(
        "AIMService",
        [
            cond("TemplateReady", "False", "TemplateNotFound", "No template found"),
            cond("InferenceServiceReady", "False", "CreatingRuntime"),
        ],
    )
    assert status["status"] == "Pending"  # upstream Pending (3) is worse than downstream (5)
    ready = ready_of(status)
    assert (ready["status"], ready["reason"]) == ("False", "Progressing")
    assert ready["message"] == "Component Template is not ready: No template found"

    progressing = aggregate(
        "AIMTemplateCache",
        [cond("ServiceTemplateReady", "True", "Ready"), cond("ArtifactsReady", "False", "CreatingCaches")],
    )
    assert progressing["status"] == "Progressing"
    assert ready_of(progressing)["message"] == "Component Artifacts is not ready: CreatingCaches"


def test_service_maps_progressing_to_starting_and_never_writes_not_available() -> None:
    starting = aggregate(
        "AIMService",
        [cond("ModelReady", "True", "ModelResolved"), cond("InferenceServicePodsReady", "False", "Pulling")],
    )
    assert starting["status"] == "Starting"
    no_gpu = aggregate("AIMService", [cond("TemplateReady", "False", "GPUNotAvailable")])
    assert no_gpu["status"] == "Pending"  # AIMService's enum has no NotAvailable
    template = aggregate("AIMServiceTemplate", [cond("GPUReady", "False", "GPUNotAvailable")])
    assert template["status"] == "NotAvailable"
    assert ready_of(template)["reason"] == "GPUNotAvailable"


@pytest.mark.parametrize(
    ("group", "kind", "state", "expected"),
    [
        ("aim.silogen.ai", "AIMService", State.READY, "Running"),
        ("aim.silogen.ai", "AIMServiceTemplate", State.READY, "Available"),
        ("aim.silogen.ai", "AIMModelCache", State.DEGRADED, "Failed"),
        ("aim.silogen.ai", "AIMImage", State.NOT_AVAILABLE, "Pending"),
        ("aim.eai.amd.com", "AIMModelCache", State.STARTING, "Progressing"),
    ],
)
def test_every_value_fits_the_kinds_enum(group: str, kind: str, state: State, expected: str) -> None:
    rule = rules.rule_for(group, kind)
    assert rule is not None
    assert rule.values[state] == expected


def test_values_are_in_each_kinds_enum() -> None:
    from aimcore.api.crds import aim, silogen  # noqa: PLC0415

    enums = {
        ("aim.eai.amd.com", "AIMService"): {str(v) for v in get_args(aim.AIMServiceStatusValue)},
        ("aim.eai.amd.com", "AIMModel"): {str(v) for v in get_args(aim.AIMResourceStatusValue)},
        ("aim.silogen.ai", "AIMService"): {v.value for v in silogen.AIMServiceStatusEnum},
        ("aim.silogen.ai", "AIMModel"): {v.value for v in silogen.AIMImageStatusEnum},
        ("aim.silogen.ai", "AIMServiceTemplate"): {v.value for v in silogen.AIMTemplateStatusEnum},
        ("aim.silogen.ai", "AIMTemplateCache"): {v.value for v in silogen.AIMCacheStatusEnum},
    }
    for (group, kind), allowed in enums.items():
        rule = rules.rule_for(group, kind)
        assert rule is not None
        assert set(rule.values.values()) <= allowed, (kind, set(rule.values.values()) - allowed)


def test_kinds_without_a_rule_or_without_components_are_left_alone() -> None:
    assert rules.rule_for("inference.llmkube.dev", "Model") is None
    rule = rules.rule_for("aim.eai.amd.com", "AIMService")
    assert rule is not None
    explicit = {
        "status": "Pending",
        "conditions": [
            cond("Ready", "False", "Reconciling"),
            cond("ConfigValid", "True", "ConfigurationValid"),
        ],
    }
    assert rules.aggregate(rule, explicit, now=T1) == explicit
    # Runtime configs have no top-level status field: only Ready is derived.
    rc = aggregate("AIMRuntimeConfig", [cond("SecretsReady", "True", "Found")])
    assert "status" not in rc
    assert ready_of(rc)["status"] == "True"


def test_reason_table() -> None:
    rule = rules.RESOURCE
    assert rule.state_of(cond("XReady", "True", "InvalidSpec")) is State.READY
    assert rule.state_of(cond("XReady", "False", "InvalidSpec")) is State.FAILED
    assert rule.state_of(cond("XReady", "Unknown", "SomethingNotAvailable")) is State.NOT_AVAILABLE
    assert rule.state_of(cond("XReady", "False", "SomeTemplatesDegraded")) is State.DEGRADED
    assert rule.state_of(cond("XReady", "False", "PodsStarting")) is State.STARTING
    assert (
        rule.state_of(cond("ServiceTemplatesReady", "False", "NoTemplatesAvailable")) is State.NOT_AVAILABLE
    )
    assert rule.state_of(cond("XReady", "False", "AuthError")) is State.FAILED  # not an infra "...Error"
    assert rule.state_of(cond("XReady", "False", "HPAFetchError")) is State.DEGRADED
    assert rule.state_of(cond("ModelReady", "False", "Whatever")) is State.PENDING
    assert rule.state_of(cond("DownloadJobReady", "False", "Whatever")) is State.PROGRESSING


# -- idempotence and transition times ------------------------------------------------------------


def test_aggregating_twice_changes_nothing() -> None:
    once = aggregate(
        "AIMService",
        [cond("ModelReady", "False", "ModelNotReady"), cond("TemplateReady", "True", "Resolved")],
        observedGeneration=2,
    )
    rule = rules.rule_for("aim.eai.amd.com", "AIMService")
    assert rule is not None
    assert rules.aggregate(rule, once, now=T1 + timedelta(hours=1)) == once


def test_ready_keeps_its_transition_time_unless_it_flips() -> None:
    rule = rules.rule_for("aim.eai.amd.com", "AIMModel")
    assert rule is not None
    previous = {
        "status": "Progressing",
        "conditions": [
            cond("ImageMetadataReady", "False", "AwaitingMetadata"),
            cond("Ready", "False", "Progressing", lastTransitionTime=T0_TEXT),
        ],
    }
    # Still not ready (another reason): the time stays.
    later = {
        **previous,
        "conditions": [cond("ImageMetadataReady", "False", "ImageNotFound"), previous["conditions"][1]],
    }
    out = rules.aggregate(rule, later, now=T1, previous=previous)
    assert out["status"] == "Failed"
    assert ready_of(out)["lastTransitionTime"] == T0_TEXT
    assert ready_of(out)["reason"] == "ImageNotFound"

    # A reporter's own Ready=True merged in does not reset the time when the rule says False.
    reporter_said = {
        **previous,
        "conditions": [
            previous["conditions"][0],
            cond("Ready", "True", "Mine", lastTransitionTime="2030-01-01T00:00:00Z"),
        ],
    }
    out = rules.aggregate(rule, reporter_said, now=T1, previous=previous)
    assert (ready_of(out)["status"], ready_of(out)["lastTransitionTime"]) == ("False", T0_TEXT)

    # Flipping to True sets a new time.
    flipped = {
        **previous,
        "conditions": [cond("ImageMetadataReady", "True", "ImageFound"), previous["conditions"][1]],
    }
    out = rules.aggregate(rule, flipped, now=T1, previous=previous)
    assert ready_of(out)["status"] == "True"
    assert ready_of(out)["lastTransitionTime"] == "2025-01-01T12:05:00Z"


# -- parity with the original's derivation (issue 18) -------------------------------------------


def test_an_upstream_dependency_not_ready_makes_the_object_wait() -> None:
    """A service whose model is still in progress is Pending (not Starting), with no
    InferenceService yet; a template cache whose template is in progress is Pending."""
    model_progressing = rules.dependency_message("AIMModel m", "Progressing")
    svc = aggregate(
        "AIMService",
        [
            cond("ModelReady", "False", "ModelNotReady", model_progressing),
            cond("TemplateReady", "True", "Resolved"),
            cond("InferenceServiceReady", "False", "AwaitingModel"),
        ],
    )
    assert svc["status"] == "Pending"
    assert ready_of(svc)["reason"] == "Progressing"
    tc = aggregate(
        "AIMTemplateCache",
        [
            cond(
                "ServiceTemplateReady",
                "False",
                "TemplateNotReady",
                rules.dependency_message("t", "Progressing"),
            )
        ],
    )
    assert tc["status"] == "Pending"
    # an upstream reason that would say "work in progress" still only waits
    assert rules.RESOURCE.state_of(cond("ModelReady", "False", "Downloading")) is State.PENDING
    # its own work under way: Starting
    running = aggregate(
        "AIMService",
        [
            cond("ModelReady", "True", "ModelResolved"),
            cond("InferenceServicePodsReady", "False", "PodsStarting"),
        ],
    )
    assert running["status"] == "Starting"


def test_a_dependency_reason_takes_the_error_state_its_message_names() -> None:
    failed = rules.dependency_message("AIMModel m", "Failed", "ImageNotFound: no such image")
    svc = aggregate("AIMService", [cond("ModelReady", "False", "ModelNotReady", failed)])
    assert svc["status"] == "Failed"
    assert (ready_of(svc)["reason"], ready_of(svc)["message"]) == (
        "ModelNotReady",
        f"Component Model is not ready: {failed}",
    )
    degraded = rules.dependency_message("AIMModel m", "Degraded")
    assert rules.SERVICE.state_of(cond("ModelReady", "False", "ModelNotReady", degraded)) is State.DEGRADED
    # the first state named is the dependency's own: one nested in its detail does not count
    nested = rules.dependency_message("AIMServiceTemplate t", "Progressing", "its model is Failed")
    assert rules.SERVICE.state_of(cond("TemplateReady", "False", "TemplateNotReady", nested)) is State.PENDING
    # no state named (several templates, all failed): the service waits (it may still recover)
    every = "no template for this model is ready: all 2 templates failed: a (Failed), b (Failed)"
    assert rules.SERVICE.state_of(cond("TemplateReady", "False", "TemplateNotReady", every)) is State.PENDING


def test_a_rejected_route_degrades_the_service() -> None:
    svc = aggregate(
        "AIMService",
        [
            cond("ModelReady", "True", "ModelResolved"),
            cond("HTTPRouteReady", "False", "HTTPRouteRejected", "no"),
        ],
    )
    assert svc["status"] == "Degraded"
