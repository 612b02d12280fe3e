"""Which Kubernetes Events a status write produces, their aggregation keys and the spam filter
(``aim_status.events``), without servers."""

from __future__ import annotations

from typing import Any

from aim_status import events
from aim_status.events import (
    Aggregates,
    RateLimit,
    Seen,
    SpamFilter,
    event_body,
    event_name,
    events_for,
)
from aim_status.recorder import EventRecorder
from aim_status.writer import Written
from aimcore.api.bus.messages import ObjectRef
from aimcore.api.events import NORMAL, WARNING, Involved
from aimcore.api.kinds import by_kind
from aimcore.api.types import Obj

SERVICE = by_kind("aim.eai.amd.com", "AIMService")
TEMPLATE_CACHE = by_kind("aim.eai.amd.com", "AIMTemplateCache")
CLUSTER_MODEL = by_kind("aim.eai.amd.com", "AIMClusterModel")
LLMKUBE_MODEL = by_kind("inference.llmkube.dev", "Model")
OBJ = Involved("aim.eai.amd.com/v1alpha1", "AIMService", "ns", "svc", "uid-1", "42")


def cond(type_: str, status: str, reason: str, message: str = "", **extra: Any) -> Obj:
    return {"type": type_, "status": status, "reason": reason, "message": message, **extra}


def status(*conditions: Obj, **fields: Any) -> Obj:
    return {**fields, "conditions": list(conditions)}


def summary(specs: list[events.EventSpec]) -> list[tuple[str, str, str, str]]:
    return [(s.condition, s.type, s.reason, s.message) for s in specs]


def test_a_failure_is_a_warning_with_the_conditions_reason_and_message() -> None:
    old = status()
    new = status(
        cond("Ready", "False", "ReferenceNotFound", "Component Template is not ready: template t not found"),
        cond("TemplateReady", "False", "ReferenceNotFound", "template t not found"),
        status="Failed",
    )
    assert summary(events_for(SERVICE, OBJ, old, new)) == [
        ("Ready", WARNING, "ReferenceNotFound", "Component Template is not ready: template t not found"),
        ("TemplateReady", WARNING, "ReferenceNotFound", "template t not found"),
    ]


def test_progress_and_success_are_normal() -> None:
    waiting = status(
        cond("Ready", "False", "Progressing", "Component InferenceService is not ready: creating"),
        cond("InferenceServiceReady", "False", "CreatingRuntime", "creating"),
    )
    assert [(s.type, s.reason) for s in events_for(SERVICE, OBJ, status(), waiting)] == [
        (NORMAL, "Progressing"),
        (NORMAL, "CreatingRuntime"),
    ]
    done = status(
        cond("Ready", "True", "AllComponentsReady", "All components are ready"),
        cond("InferenceServiceReady", "True", "RuntimeReady"),
    )
    assert summary(events_for(SERVICE, OBJ, waiting, done)) == [
        ("Ready", NORMAL, "AllComponentsReady", "All components are ready"),
        # no message: the original's "<Component> is ready"
        ("InferenceServiceReady", NORMAL, "RuntimeReady", "InferenceService is ready"),
    ]


def test_only_status_or_reason_changes_are_transitions() -> None:
    old = status(cond("CacheReady", "False", "CacheCreating", "1 of 3", lastTransitionTime="t0"))
    new = status(cond("CacheReady", "False", "CacheCreating", "2 of 3", lastTransitionTime="t1"))
    assert events_for(SERVICE, OBJ, old, new) == []
    assert events_for(SERVICE, OBJ, new, new) == []
    gone = status()
    assert events_for(SERVICE, OBJ, old, gone) == []  # a removed condition records nothing


def test_each_error_state_of_the_rules_is_a_warning() -> None:
    for reason, expected in [
        ("CacheFailed", WARNING),  # AIMService: Degraded
        ("ImagePullBackOff", WARNING),  # Degraded
        ("RequiredGPUNotInCluster", WARNING),  # NotAvailable
        ("FetchError", WARNING),  # Degraded by suffix
        ("PodsPending", NORMAL),  # Pending: waiting
        ("SomethingNew", NORMAL),  # unknown reasons wait, never fail
    ]:
        new = status(cond("InferenceServicePodsReady", "False", reason))
        (spec,) = events_for(SERVICE, OBJ, status(), new)
        assert spec.type == expected, reason
        assert spec.message == f"InferenceServicePods is not ready: {reason}"


def test_ready_takes_the_objects_derived_state() -> None:
    # A dependency reason: its state is in the message (here an error state).
    old = status(cond("ModelReady", "False", "ModelNotReady", "model m is Progressing"))
    new = status(
        cond("Ready", "False", "ModelNotReady", "Component Model is not ready: model m is Failed"),
        cond("ModelReady", "False", "ModelNotReady", "model m is Failed"),
    )
    (ready,) = events_for(SERVICE, OBJ, old, new)  # ModelReady's reason did not change
    assert (ready.condition, ready.type) == ("Ready", WARNING)


def test_framework_and_problem_conditions() -> None:
    new = status(
        cond("ConfigValid", "False", "InvalidSpec", "spec.x is wrong"),
        cond("DependenciesReachable", "False", "ApiUnavailable", "no"),
    )
    assert [s.type for s in events_for(SERVICE, OBJ, status(), new)] == [WARNING, WARNING]
    valid = status(cond("ConfigValid", "True", "Valid"))
    assert [s.type for s in events_for(SERVICE, OBJ, new, valid)] == [NORMAL]
    # LLMKube's Model: no rule; Degraded=True is the bad news
    model = Involved("inference.llmkube.dev/v1alpha1", "Model", "ns", "m", "u")
    flags = status(
        cond("Degraded", "True", "IntegrityCheckFailed", "sha256 mismatch"),
        cond("Available", "False", "IntegrityCheckFailed", "sha256 mismatch"),
        cond("Progressing", "True", "Downloading", "10%"),
    )
    assert [s.type for s in events_for(LLMKUBE_MODEL, model, status(), flags)] == [WARNING, WARNING, NORMAL]


def test_messages_are_redacted_one_line_and_bounded() -> None:
    new = status(
        cond("TemplateReady", "False", "AuthError", "pull failed:\n token=hf_abcdefghijklmnopqrstuv rejected")
    )
    (spec,) = events_for(SERVICE, OBJ, status(), new)
    assert spec.message == "pull failed: token=*** rejected"
    long = status(cond("TemplateReady", "False", "AuthError", "x" * 5000))
    (spec,) = events_for(SERVICE, OBJ, status(), long)
    assert len(spec.message) == events.MAX_MESSAGE


def test_the_event_object() -> None:
    (spec,) = events_for(SERVICE, OBJ, status(), status(cond("TemplateReady", "False", "AuthError", "no")))
    name = event_name(spec, 1_700_000_000.5)
    assert name.startswith("svc.")
    body = event_body(spec, name, 1_700_000_000.5, "aim-status-abc")
    assert body["metadata"] == {"name": name, "namespace": "ns"}
    assert body["involvedObject"] == {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "namespace": "ns",
        "name": "svc",
        "uid": "uid-1",
        "resourceVersion": "42",
    }
    assert (body["type"], body["reason"], body["message"], body["count"]) == (WARNING, "AuthError", "no", 1)
    assert body["source"] == {"component": "aim-status"}
    assert body["reportingComponent"] == "aim.eai.amd.com/aim-status"
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2023-11-14T22:13:20Z"
    # long object names still make valid Event names
    longer = Involved("v1", "AIMService", "ns", "n" * 253, "u")
    assert len(event_name(events.EventSpec(longer, NORMAL, "R", "m", "Ready"), 1.0)) == 253


def test_cluster_scoped_objects_have_their_events_in_default() -> None:
    obj = Involved("aim.eai.amd.com/v1alpha1", "AIMClusterModel", None, "m", "u")
    (spec,) = events_for(CLUSTER_MODEL, obj, status(), status(cond("Ready", "True", "AllComponentsReady")))
    assert spec.namespace == "default"
    assert "namespace" not in event_body(spec, "m.1", 0.0, "i")["involvedObject"]


def test_the_aggregation_key_ignores_the_resource_version() -> None:
    new = status(cond("TemplateReady", "False", "AuthError", "no"))
    (a,) = events_for(SERVICE, OBJ, status(), new)
    (b,) = events_for(SERVICE, Involved(**{**OBJ.__dict__, "resource_version": "43"}), status(), new)
    assert a.key == b.key
    (c,) = events_for(SERVICE, OBJ, status(), status(cond("TemplateReady", "False", "AuthError", "other")))
    assert c.key != a.key  # another message: another Event (as in client-go)
    (d,) = events_for(SERVICE, Involved(**{**OBJ.__dict__, "uid": "uid-2"}), status(), new)
    assert d.key != a.key  # a new object under the same name


def test_aggregates_patch_within_the_window_and_forget_the_oldest() -> None:
    agg = Aggregates(window=600, max_keys=2)
    key = ("k",)
    assert agg.lookup(key, 0.0) is None
    agg.remember(key, Seen("e1", "ns", 1, 0.0))
    assert agg.lookup(key, 599.0) == Seen("e1", "ns", 1, 0.0)
    agg.remember(key, Seen("e1", "ns", 2, 599.0))
    assert agg.lookup(key, 1198.0) == Seen("e1", "ns", 2, 599.0)  # the window counts from the last one
    assert agg.lookup(key, 1200.0) is None  # too long ago: a new Event
    for i in range(3):
        agg.remember((str(i),), Seen(f"e{i}", "ns", 1, 0.0))
    assert len(agg) == 2 and agg.lookup(("0",), 0.0) is None


def test_spam_filter_is_a_token_bucket_per_object() -> None:
    spam = SpamFilter(burst=25, refill_seconds=300)
    allowed = sum(spam.allow("a", 0.0) for _ in range(100))
    assert allowed == 25
    assert spam.allow("b", 0.0)  # another object has its own bucket
    assert not spam.allow("a", 299.0)
    assert spam.allow("a", 300.0)  # one token per five minutes
    assert not spam.allow("a", 301.0)
    # Flapping for an hour at one transition a second costs 25 + 11 writes, not 3600.
    spam = SpamFilter()
    assert sum(spam.allow("c", float(t)) for t in range(3600)) == 25 + 3600 // 300 - 1


def test_the_replicas_event_writes_share_one_rate_limit() -> None:
    rate = RateLimit(qps=20, burst=30)
    delays = [rate.delay(0.0) for _ in range(40)]
    assert delays[:30] == [0.0] * 30  # the burst goes at once
    # then one every 1/20 s: the 31st waits 0.05 s, the 40th 0.5 s
    assert [round(d, 3) for d in delays[30:]] == [round(0.05 * i, 3) for i in range(1, 11)]
    # after a quiet second the bucket holds 20 - 10 owed = 10 again
    assert sum(rate.delay(1.0) == 0.0 for _ in range(15)) == 10
    unlimited = RateLimit(qps=0, burst=1)
    assert all(unlimited.delay(0.0) == 0.0 for _ in range(1000))


def test_a_full_queue_counts_each_dropped_event_without_composing_it() -> None:
    recorder = EventRecorder(kube=None, queue_size=2)  # type: ignore[arg-type]  # record() writes nothing
    new = status(
        cond("ModelReady", "True", "Ready"),
        cond("TemplateReady", "True", "Ready"),
        cond("Ready", "False", "Pending"),
    )

    def written(name: str) -> Written:
        ref = ObjectRef.of(SERVICE, "ns", name)
        return Written(ref=SERVICE, object=ref, uid=f"uid-{name}", old={}, new=new, resource_version="1")

    recorder.record(written("a"))  # three transitions: two fit, one is dropped
    assert recorder.pending == 2 and recorder.stats.dropped == 1
    recorder.record(written("b"))  # the queue is full: counted by transitions, nothing composed
    assert recorder.pending == 2 and recorder.stats.dropped == 4
