"""The model's templates condition (``aim_discovery.model_reconciler.templates_state``,
docs/original.md#template-state-aggregation) and the template a discovery Job belongs to
(``aim_discovery.template_jobs.job_template``)."""

from __future__ import annotations

from typing import Any

import pytest

from aim_discovery.model_reconciler import (
    ALL_TEMPLATES_FAILED,
    ALL_TEMPLATES_READY,
    AWAITING_METADATA,
    CREATING_TEMPLATES,
    NO_TEMPLATES_AVAILABLE,
    NO_TEMPLATES_EXPECTED,
    SOME_TEMPLATES_DEGRADED,
    SOME_TEMPLATES_READY,
    SOME_TEMPLATES_REJECTED,
    TEMPLATE_CREATE_FORBIDDEN,
    TEMPLATE_CREATE_REJECTED,
    TEMPLATE_NAME_CONFLICT,
    TEMPLATES_PROGRESSING,
    RefusedTemplate,
    templates_state,
)
from aim_discovery.template_jobs import job_template, template_kind_token
from aimcore.api.kinds import by_kind
from aimcore.domain.status.rules import RESOURCE, State
from aimcore.runtime import Refusal

AIM = "aim.eai.amd.com"
LEGACY = "aim.silogen.ai"


@pytest.mark.parametrize(
    ("statuses", "expected", "metadata_known", "status", "reason"),
    [
        # no templates yet
        ([], 0, False, "False", AWAITING_METADATA),
        ([], 3, False, "False", AWAITING_METADATA),
        ([], 2, True, "False", CREATING_TEMPLATES),
        ([], 0, True, "True", NO_TEMPLATES_EXPECTED),
        # all ready (either group's vocabulary)
        (["Ready"], 1, True, "True", ALL_TEMPLATES_READY),
        (["Ready", "Ready", "Ready"], 3, True, "True", ALL_TEMPLATES_READY),
        (["Available"], 1, True, "True", ALL_TEMPLATES_READY),
        (["Ready", "Available"], 2, True, "True", ALL_TEMPLATES_READY),
        # existing templates decide, whatever the metadata step says
        (["Ready"], 1, False, "True", ALL_TEMPLATES_READY),
        # all failed
        (["Failed"], 1, True, "False", ALL_TEMPLATES_FAILED),
        (["Failed", "Degraded"], 2, True, "False", ALL_TEMPLATES_FAILED),
        (["Degraded", "Degraded"], 2, True, "False", ALL_TEMPLATES_FAILED),
        # none available
        (["NotAvailable"], 1, True, "False", NO_TEMPLATES_AVAILABLE),
        (["NotAvailable", "NotAvailable"], 2, True, "False", NO_TEMPLATES_AVAILABLE),
        # some failed
        (["Ready", "Failed"], 2, True, "False", SOME_TEMPLATES_DEGRADED),
        (["Ready", "Degraded"], 2, True, "False", SOME_TEMPLATES_DEGRADED),
        (["Progressing", "Failed"], 2, True, "False", SOME_TEMPLATES_DEGRADED),
        (["NotAvailable", "Degraded"], 2, True, "False", SOME_TEMPLATES_DEGRADED),
        (["Ready", "NotAvailable", "Pending", "Failed"], 4, True, "False", SOME_TEMPLATES_DEGRADED),
        # ready + not available: usable
        (["Ready", "NotAvailable"], 2, True, "True", SOME_TEMPLATES_READY),
        (["Available", "NotAvailable", "NotAvailable"], 3, True, "True", SOME_TEMPLATES_READY),
        # anything else is still progressing
        (["Ready", "Progressing"], 2, True, "False", TEMPLATES_PROGRESSING),
        (["Pending"], 1, True, "False", TEMPLATES_PROGRESSING),
        (["Progressing", "NotAvailable"], 2, True, "False", TEMPLATES_PROGRESSING),
        ([""], 1, True, "False", TEMPLATES_PROGRESSING),
        (["Unknown", "Ready"], 2, True, "False", TEMPLATES_PROGRESSING),
    ],
)
def test_templates_state(
    statuses: list[str], expected: int, metadata_known: bool, status: str, reason: str
) -> None:
    got_status, got_reason, message = templates_state(statuses, expected, metadata_known)
    assert (got_status, got_reason) == (status, reason)
    assert message


@pytest.mark.parametrize(
    ("statuses", "expected", "metadata_known", "want"),
    [
        ([], 2, True, "Creating 2 template(s)"),
        (["Ready", "Ready"], 2, True, "All 2 template(s) are ready"),
        (["Failed", "Degraded", "Failed"], 3, True, "All 3 template(s) failed"),
        (["Ready", "NotAvailable"], 2, True, "1/2 ready, 0 failed, 1 not available"),
        (["Ready", "Failed", "NotAvailable", "Pending"], 4, True, "1/4 ready, 1 failed, 1 not available"),
        (["Ready", "Progressing"], 2, True, "1/2 ready, 0 failed, 0 not available"),
    ],
)
def test_templates_state_messages(
    statuses: list[str], expected: int, metadata_known: bool, want: str
) -> None:
    assert want in templates_state(statuses, expected, metadata_known)[2]


def test_templates_state_accepts_any_sequence() -> None:
    assert templates_state(("Ready", "NotAvailable"), 2, True)[1] == SOME_TEMPLATES_READY


INVALID = Refusal(422, "Invalid", 'spec.metric: Unsupported value: "balanced"')
DENIED = Refusal(403, "Forbidden", "cannot create aimservicetemplates")


@pytest.mark.parametrize(
    ("statuses", "expected", "refused", "reason", "state"),
    [
        # nothing usable left: the model fails, naming the refusal
        ([], 1, [RefusedTemplate("t", INVALID)], TEMPLATE_CREATE_REJECTED, State.FAILED),
        (["Failed"], 2, [RefusedTemplate("t", INVALID)], TEMPLATE_CREATE_REJECTED, State.FAILED),
        ([], 1, [RefusedTemplate("t", DENIED)], TEMPLATE_CREATE_FORBIDDEN, State.FAILED),
        (
            [],
            2,
            [RefusedTemplate("a", DENIED), RefusedTemplate("b", INVALID)],
            TEMPLATE_CREATE_REJECTED,
            State.FAILED,
        ),
        # others are (or may become) usable: degraded
        (["Ready"], 2, [RefusedTemplate("t", INVALID)], SOME_TEMPLATES_REJECTED, State.DEGRADED),
        (["Pending"], 2, [RefusedTemplate("t", INVALID)], SOME_TEMPLATES_REJECTED, State.DEGRADED),
        # an update refused: the old template is still there
        (["Ready"], 1, [RefusedTemplate("t", INVALID, update=True)], SOME_TEMPLATES_REJECTED, State.DEGRADED),
    ],
)
def test_refused_templates_are_reported_not_awaited(
    statuses: list[str], expected: int, refused: list[RefusedTemplate], reason: str, state: State
) -> None:
    status, got, message = templates_state(statuses, expected, True, refused)
    assert (status, got) == ("False", reason)
    assert RESOURCE.state_of({"type": "ServiceTemplatesReady", "status": status, "reason": got}) is state
    for r in refused:
        assert r.refusal is not None
        assert r.name in message and str(r.refusal.status) in message and r.refusal.message in message
    assert f"{len(refused)} of {expected}" in message


def test_a_name_taken_by_another_models_template_is_a_conflict() -> None:
    taken = RefusedTemplate("t", taken_by="model 'other'")
    status, reason, message = templates_state([], 1, True, [taken])
    assert (status, reason) == ("False", TEMPLATE_NAME_CONFLICT)
    assert "t: the name is taken by a template of model 'other'" in message
    assert (
        RESOURCE.state_of({"type": "ServiceTemplatesReady", "status": status, "reason": reason})
        is State.FAILED
    )
    # mixed with a refusal: the refusal names the reason
    mixed = templates_state([], 2, True, [taken, RefusedTemplate("u", INVALID)])
    assert mixed[1] == TEMPLATE_CREATE_REJECTED
    assert templates_state(["Ready"], 2, True, [taken])[1] == SOME_TEMPLATES_REJECTED


def test_refused_update_says_update() -> None:
    message = templates_state(["Ready"], 1, True, [RefusedTemplate("t", INVALID, update=True)])[2]
    assert "t (update): HTTP 422 Invalid" in message


def test_no_templates_names_the_metadata_failure() -> None:
    status, reason, message = templates_state([], 0, True, metadata_failure="ImageNotFound: no such image")
    assert (status, reason) == ("False", AWAITING_METADATA)
    assert "ImageNotFound: no such image" in message
    # custom templates planned: those are awaited as usual
    assert templates_state([], 1, True, metadata_failure="ImageNotFound: x")[1] == CREATING_TEMPLATES


def test_no_templates_expected_says_why() -> None:
    assert templates_state([], 0, True, none_expected="No templates: because")[2] == "No templates: because"


# -- job_template -----------------------------------------------------------------------------------


def job(
    token: str | None = "AIMServiceTemplate.aim.eai.amd.com",
    namespace: str | None = "ns",
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if token is not None:
        annotations["aim.eai.amd.com/template-kind"] = token
    if namespace is not None:
        annotations["aim.eai.amd.com/template-namespace"] = namespace
    if owners is None:
        owners = [
            {
                "apiVersion": "aim.eai.amd.com/v1alpha1",
                "kind": "AIMServiceTemplate",
                "name": "tpl",
                "uid": "u1",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "discover-tpl-1234abcd",
            "namespace": "system",
            "annotations": annotations,
            "ownerReferences": owners,
        },
    }


def test_job_template_namespaced() -> None:
    assert job_template(job()) == (by_kind(AIM, "AIMServiceTemplate"), "ns", "tpl")


def test_job_template_cluster_kind_has_no_namespace() -> None:
    got = job_template(job("AIMClusterServiceTemplate.aim.eai.amd.com", namespace="ns"))
    assert got == (by_kind(AIM, "AIMClusterServiceTemplate"), None, "tpl")


def test_job_template_legacy_group() -> None:
    assert job_template(job("AIMServiceTemplate.aim.silogen.ai")) == (
        by_kind(LEGACY, "AIMServiceTemplate"),
        "ns",
        "tpl",
    )


def test_job_template_namespaced_kind_without_namespace_annotation() -> None:
    assert job_template(job(namespace=None)) == (by_kind(AIM, "AIMServiceTemplate"), None, "tpl")


def test_job_template_picks_the_controller_owner() -> None:
    owners: list[dict[str, Any]] = [
        {"kind": "Something", "name": "not-me", "uid": "x"},
        {"kind": "Other", "name": "nor-me", "uid": "y", "controller": False},
        {"kind": "AIMServiceTemplate", "name": "tpl", "uid": "u1", "controller": True},
    ]
    assert job_template(job(owners=owners)) == (by_kind(AIM, "AIMServiceTemplate"), "ns", "tpl")


@pytest.mark.parametrize(
    "obj",
    [
        job(token=None),
        job(token=""),
        job(owners=[]),
        job(owners=[{"kind": "AIMServiceTemplate", "name": "tpl", "uid": "u1"}]),
        job(owners=[{"kind": "AIMServiceTemplate", "name": "tpl", "uid": "u1", "controller": False}]),
        job(token="AIMServiceTemplate"),  # no group
        job(token="AIMServiceTemplate.example.com"),  # unknown group
        job(token="NoSuchKind.aim.eai.amd.com"),
        {"metadata": {}},
        {},
    ],
    ids=[
        "no-annotation",
        "empty-annotation",
        "no-owners",
        "owner-not-controller",
        "owner-controller-false",
        "token-without-group",
        "unknown-group",
        "unknown-kind",
        "empty-metadata",
        "no-metadata",
    ],
)
def test_job_template_none(obj: dict[str, Any]) -> None:
    assert job_template(obj) is None


@pytest.mark.parametrize(
    ("group", "kind"),
    [
        (AIM, "AIMServiceTemplate"),
        (AIM, "AIMClusterServiceTemplate"),
        (LEGACY, "AIMServiceTemplate"),
        (LEGACY, "AIMClusterServiceTemplate"),
    ],
)
def test_template_kind_token_round_trips(group: str, kind: str) -> None:
    ref = by_kind(group, kind)
    token = template_kind_token(ref)
    assert token == f"{kind}.{group}"
    got = job_template(job(token))
    assert got == (ref, "ns" if ref.namespaced else None, "tpl")
