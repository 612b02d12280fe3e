"""Composition of reports into ``.status``: condition merge, generations, the kind's rule, patches."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from aimcore.api.bus.messages import ConditionReport, ObjectRef, StatusReport
from aimcore.domain.status.compose import (
    compose,
    compose_all,
    from_the_future,
    is_current,
    merge_conditions,
    rfc3339,
    status_change,
    status_patch,
)

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)
T2 = T0 + timedelta(minutes=2)

SERVICE = ObjectRef(group="aim.eai.amd.com", version="v1alpha1", kind="AIMService", namespace="ns", name="s")
CACHE = ObjectRef(group="aim.eai.amd.com", version="v1alpha1", kind="AIMModelCache", namespace="ns", name="c")
LLMKUBE = ObjectRef(group="inference.llmkube.dev", version="v1alpha1", kind="Model", namespace="ns", name="m")


def report(
    *conditions: tuple[str, str, str],
    obj: ObjectRef = SERVICE,
    source: str = "test",
    generation: int | None = 1,
    **fields: Any,
) -> StatusReport:
    return StatusReport(
        object=obj,
        source=source,
        observed_generation=generation,
        conditions=tuple(ConditionReport(type=t, status=s, reason=r) for t, s, r in conditions),
        fields=fields,
    )


def by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


def obj_with(status: dict[str, Any], rv: str = "7", generation: int | None = None) -> dict[str, Any]:
    """An object holding ``status``, at the generation its status says (or ``generation``)."""
    seen = status.get("observedGeneration")
    generation = generation or (seen if isinstance(seen, int) else 1)
    return {
        "metadata": {"name": "s", "namespace": "ns", "resourceVersion": rv, "generation": generation},
        "status": status,
    }


def test_merge_keeps_transition_time_unless_status_flips() -> None:
    first = merge_conditions([], [ConditionReport(type="A", status="False", reason="X")], 1, T0)
    same = merge_conditions(
        first, [ConditionReport(type="A", status="False", reason="Y", message="m")], 2, T1
    )
    assert same[0]["lastTransitionTime"] == "2025-01-01T12:00:00Z"
    assert (same[0]["reason"], same[0]["message"], same[0]["observedGeneration"]) == ("Y", "m", 2)
    flipped = merge_conditions(same, [ConditionReport(type="A", status="True", reason="Z")], 2, T2)
    assert flipped[0]["lastTransitionTime"] == "2025-01-01T12:02:00Z"
    assert "message" not in flipped[0]


def test_explicit_fields_stand_without_component_conditions() -> None:
    """Today's reporters (deployer, harness) set status and Ready themselves; no rule interferes."""
    out = compose(
        None,
        report(
            ("Ready", "False", "Reconciling"), ("ConfigValid", "True", "ConfigurationValid"), status="Pending"
        ),
        T0,
    )
    assert out["status"] == "Pending"
    assert by_type(out)["Ready"]["reason"] == "Reconciling"
    assert out["observedGeneration"] == 1
    assert all(c["observedGeneration"] == 1 for c in out["conditions"])


def test_component_conditions_drive_status_and_ready_across_reporters() -> None:
    status = compose(None, report(("Ready", "False", "Reconciling"), source="deployer", status="Pending"), T0)
    status = compose(status, report(("ModelReady", "True", "ModelResolved"), source="a"), T1)
    assert status["status"] == "Running"
    assert by_type(status)["Ready"]["status"] == "True"
    assert by_type(status)["Ready"]["reason"] == "AllComponentsReady"
    # A reporter's explicit status and Ready lose to the rule once components exist ...
    again = compose(
        status, report(("Ready", "False", "Reconciling"), source="deployer", status="Pending"), T2
    )
    assert again["status"] == "Running"
    ready = by_type(again)["Ready"]
    assert (ready["status"], ready["lastTransitionTime"]) == ("True", "2025-01-01T12:01:00Z")
    # ... so that report is current (reporters skip sending it) and the writer would not write.
    assert is_current(obj_with(status), report(("Ready", "False", "Reconciling"), status="Pending"))
    assert (
        status_patch(obj_with(status), report(("Ready", "False", "Reconciling"), status="Pending"), T2)
        is None
    )


def test_generation_change_updates_ready_generation_but_keeps_its_time() -> None:
    status = compose(None, report(("ModelReady", "False", "ModelNotReady")), T0)
    assert status["status"] == "Pending"  # an upstream dependency not ready: waiting (issue 18)
    later = compose(status, report(("ModelReady", "False", "ModelNotReady"), generation=2), T1)
    ready = by_type(later)["Ready"]
    assert ready["observedGeneration"] == 2 == later["observedGeneration"]
    assert ready["lastTransitionTime"] == "2025-01-01T12:00:00Z"


def test_compose_is_idempotent() -> None:
    rep = report(("ModelReady", "True", "ModelResolved"), ("TemplateReady", "False", "TemplateNotFound"))
    once = compose(None, rep, T0)
    assert compose(once, rep, T1) == once
    assert is_current(obj_with(once), rep)


def test_status_patch_is_conditional_and_removes_nested_keys() -> None:
    old = {
        "progress": {"totalBytes": 10, "downloadedBytes": 5, "displayPercentage": "50 %"},
        "status": "Pending",
    }
    rep = report(obj=CACHE, progress={"totalBytes": 10, "downloadedBytes": 7}, persistentVolumeClaim=None)
    patch = status_patch(obj_with({**old, "persistentVolumeClaim": "pvc"}), rep, T0)
    assert patch is not None
    assert patch["metadata"] == {"resourceVersion": "7"}
    assert patch["status"]["progress"] == {"totalBytes": 10, "downloadedBytes": 7, "displayPercentage": None}
    assert patch["status"]["persistentVolumeClaim"] is None


def test_status_change_is_the_composed_status_with_its_patch_and_leaves_the_object_alone() -> None:
    old = {"conditions": [{"type": "ConfigValid", "status": "True", "reason": "Valid"}], "status": "Pending"}
    obj = obj_with(old)
    before = copy.deepcopy(obj)
    reports = [report(("InferenceServiceReady", "False", "Creating")), report(status="Starting")]
    change = status_change(obj, reports, T1)
    assert change is not None
    new, patch = change
    assert new == compose_all(old, reports, T1)
    assert patch == status_patch(obj, reports, T1)
    assert obj == before  # nothing of the object (its nested conditions too) was modified
    assert status_change(obj_with(new), reports, T2) is None


def test_several_reports_apply_in_order_in_one_patch() -> None:
    progress = report(obj=CACHE, progress={"downloadedBytes": 9}, source="cache")
    final = report(("DownloadJobReady", "True", "Complete"), obj=CACHE, source="cache")
    patch = status_patch(obj_with({}), [progress, final], T0)
    assert patch is not None
    assert patch["status"]["progress"] == {"downloadedBytes": 9}
    assert patch["status"]["status"] == "Ready"
    assert compose_all({}, [progress, final], T0) == {
        k: v for k, v in patch["status"].items() if v is not None
    }


def test_llmkube_model_has_no_rule_and_no_top_level_generation() -> None:
    """Model's status schema has no observedGeneration (the server would prune it, and every report
    would then look like a change); its phase is the reporter's."""
    out = compose(None, report(("Available", "False", "Downloading"), obj=LLMKUBE, phase="Downloading"), T0)
    assert "observedGeneration" not in out
    assert out["phase"] == "Downloading"
    assert by_type(out)["Available"]["observedGeneration"] == 1
    assert "Ready" not in by_type(out)


def test_a_report_from_an_older_generation_changes_nothing() -> None:
    current = compose(None, report(("ModelReady", "True", "Found"), generation=3, status="Running"), T0)
    late = report(("ModelReady", "False", "NotFound"), generation=2, status="Pending")
    assert compose(current, late, T1) == current
    assert status_patch(obj_with(current), late, T1) is None
    # the owner's report for the same generation, or a newer one, still applies
    again = compose(current, report(("ModelReady", "False", "Gone"), generation=3), T1)
    assert by_type(again)["ModelReady"]["reason"] == "Gone"


def test_observed_generation_never_goes_backwards() -> None:
    current = compose(None, report(("ModelReady", "True", "Found"), generation=3), T0)
    # another source's report of another condition, computed from an older spec
    other = compose(current, report(("CacheReady", "True", "Cached"), source="cache", generation=2), T1)
    assert other["observedGeneration"] == 3
    assert by_type(other)["CacheReady"]["observedGeneration"] == 2  # its own generation, as reported
    newer = compose(other, report(("ModelReady", "True", "Found"), generation=4), T2)
    assert newer["observedGeneration"] == 4


def test_the_remainder_of_a_report_newer_ones_override() -> None:
    from aim_status.ordering import remainder  # noqa: PLC0415 - the status service's own logic

    old = report(("ImageReady", "False", "Pulling"), ("ConfigValid", "True", "Valid"), sourceType="Image")
    assert remainder(old, set(), set()) is old
    rest = remainder(old, {"ImageReady"}, set())
    assert rest is not None
    assert [c.type for c in rest.conditions] == ["ConfigValid"] and rest.fields == {"sourceType": "Image"}
    assert remainder(old, {"ImageReady", "ConfigValid"}, {"sourceType"}) is None


def test_progress_after_the_outcome_changes_nothing() -> None:
    done = compose(
        None, report(("DownloadReady", "True", "Verified"), obj=CACHE, source="cache", status="Ready"), T0
    )
    late = report(
        ("DownloadReady", "False", "Verifying"), obj=CACHE, source="cache", progress={"percentage": 99}
    )
    late = late.model_copy(update={"progress": True})
    assert compose(done, late, T1) == done
    # the same report before the outcome is progress as usual
    assert by_type(compose(None, late, T1))["DownloadReady"]["reason"] == "Verifying"


def test_a_report_claiming_a_generation_the_object_never_had_changes_nothing() -> None:
    current = compose(None, report(("ModelReady", "False", "ModelNotFound"), generation=1), T0)
    forged = report(("ModelReady", "True", "Forged"), generation=1000, status="Running")
    assert from_the_future(forged, 1) and not from_the_future(forged, 1000)
    at_1 = obj_with(current, generation=1)
    assert status_change(at_1, forged, T1) is None  # the object is at generation 1
    assert is_current(at_1, forged)  # so a reporter would not even send it
    assert status_patch(at_1, report(("ModelReady", "True", "Found")), T1) is not None


def test_a_status_locked_by_a_generation_from_the_future_is_unlocked() -> None:
    locked = compose(None, report(("ModelReady", "True", "Forged"), generation=1000, status="Running"), T0)
    assert locked["observedGeneration"] == 1000
    real = report(("ModelReady", "False", "ModelNotFound"), generation=1)
    assert not is_current(obj_with(locked, generation=1), real)
    change = status_change(obj_with(locked, generation=1), real, T1)
    assert change is not None
    new, _ = change
    assert new["observedGeneration"] == 1
    assert by_type(new)["ModelReady"] == {
        "type": "ModelReady",
        "status": "False",
        "reason": "ModelNotFound",
        "observedGeneration": 1,
        "lastTransitionTime": rfc3339(T1),
    }
