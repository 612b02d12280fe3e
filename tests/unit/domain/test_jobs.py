"""Job state and failure classification shared by the services that run Jobs (``aimcore.domain.jobs``),
worded here as the cache's model download Job would be."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from aimcore.api.types import Obj
from aimcore.domain import jobs
from aimcore.domain.jobs import (
    JOB_RETRY,
    REASON_AUTH_ERROR,
    REASON_IMAGE_NOT_FOUND,
    REASON_IMAGE_PULL_AUTH_FAILURE,
    REASON_IMAGE_PULL_BACK_OFF,
    REASON_INVALID_IMAGE_REFERENCE,
    REASON_JOB_BACKOFF_LIMIT_EXCEEDED,
    REASON_JOB_DEADLINE_EXCEEDED,
    REASON_JOB_EVICTED,
    REASON_JOB_RUNNING,
    REASON_POD_OOM_KILLED,
    REASON_PODS_PENDING,
    REASON_SECRET_NOT_FOUND,
    REASON_SOURCE_NOT_FOUND,
    REASON_STORAGE_FULL,
    STATE_ACTIVE,
    STATE_FAILED,
    STATE_SUCCEEDED,
    finished_at,
    job_state,
    last_json_line,
    log_excerpt,
    redact,
)
from aimcore.domain.status.rules import REASON_STATES

WHAT = "download"
CONTAINER = "downloader"
HF_TOKEN = "hf_abcdefghijklmnopqrstuvwxyz012345"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"


def classify(job: Obj, pods: list[Obj], log: str | None, **kwargs: Any) -> tuple[str, str]:
    return jobs.classify_failure(job, pods, log, what=WHAT, container=CONTAINER, **kwargs)


def progress(pods: list[Obj]) -> tuple[str, str] | None:
    return jobs.pod_progress(pods, what=WHAT, container=CONTAINER)


def cond(type_: str, status: str = "True", reason: str = "", when: str = "2025-01-01T12:00:00Z") -> Obj:
    return {"type": type_, "status": status, "reason": reason, "lastTransitionTime": when}


def pod(
    name: str = "download-x-abcde",
    *,
    phase: str = "Failed",
    created: str = "2025-01-01T12:00:00Z",
    statuses: list[Obj] | None = None,
    init_statuses: list[Obj] | None = None,
    node: str | None = "node-1",
    reason: str | None = None,
    message: str | None = None,
    conditions: list[Obj] | None = None,
) -> Obj:
    status: Obj = {"phase": phase}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if conditions:
        status["conditions"] = conditions
    spec: Obj = {"nodeName": node} if node else {}
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec, "status": status}


def waiting(reason: str, message: str = "", name: str = CONTAINER) -> Obj:
    return {"name": name, "state": {"waiting": {"reason": reason, "message": message}}}


def terminated(name: str = CONTAINER, *, last: bool = False, **term: Any) -> Obj:
    return {"name": name, "lastState" if last else "state": {"terminated": term}}


FAILED_JOB: Obj = {
    "spec": {"backoffLimit": 0},
    "status": {"failed": 1, "conditions": [cond("Failed", reason="BackoffLimitExceeded")]},
}
EXIT_1 = terminated(exitCode=1, reason="Error")


def deadline_job(seconds: int | None) -> Obj:
    spec: Obj = {"backoffLimit": 0}
    if seconds is not None:
        spec["activeDeadlineSeconds"] = seconds
    return {"spec": spec, "status": {"conditions": [cond("Failed", reason="DeadlineExceeded")]}}


# ---------------------------------------------------------------------------------------------
# job_state / finished_at / JOB_RETRY
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "state"),
    [
        ({}, STATE_ACTIVE),
        ({"status": {"active": 1}}, STATE_ACTIVE),
        ({"status": {"conditions": [cond("Complete")]}}, STATE_SUCCEEDED),
        ({"status": {"conditions": [cond("Complete", "False")], "active": 1}}, STATE_ACTIVE),
        ({"status": {"succeeded": 1}}, STATE_SUCCEEDED),
        ({"status": {"succeeded": True}}, STATE_ACTIVE),  # not a count
        ({"status": {"conditions": [cond("Failed", reason="DeadlineExceeded")]}}, STATE_FAILED),
        ({"status": {"conditions": [cond("Complete"), cond("Failed")]}}, STATE_SUCCEEDED),
        ({"spec": {"backoffLimit": 3}, "status": {"failed": 4}}, STATE_FAILED),
        ({"spec": {"backoffLimit": 3}, "status": {"failed": 3}}, STATE_ACTIVE),
        ({"status": {"failed": 6}}, STATE_ACTIVE),  # Kubernetes' default backoffLimit is 6
        ({"status": {"failed": 7}}, STATE_FAILED),
        ({"status": {"conditions": ["junk", None]}}, STATE_ACTIVE),
    ],
)
def test_job_state(job: Obj, state: str) -> None:
    assert job_state(job) == state


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        ({}, None),
        ({"status": {"active": 1}}, None),
        (
            {"status": {"completionTime": "2025-03-04T05:06:07Z", "conditions": [cond("Complete")]}},
            datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC),
        ),
        (
            {"status": {"completionTime": "2025-03-04T05:06:07+02:00"}},
            datetime(2025, 3, 4, 5, 6, 7, tzinfo=timezone(timedelta(hours=2))),
        ),
        ({"status": {"conditions": [cond("Complete")]}}, datetime(2025, 1, 1, 12, tzinfo=UTC)),
        (
            {"status": {"conditions": [cond("Failed", when="2025-01-02T00:00:00Z")]}},
            datetime(2025, 1, 2, tzinfo=UTC),
        ),
        ({"status": {"conditions": [cond("Failed", "False")]}}, None),
        ({"status": {"conditions": [cond("Failed", when="")]}}, None),
        (
            {"status": {"completionTime": "garbage", "conditions": [cond("Failed")]}},
            datetime(2025, 1, 1, 12, tzinfo=UTC),
        ),
        ({"status": {"completionTime": 12345}}, None),
    ],
)
def test_finished_at(job: Obj, expected: datetime | None) -> None:
    assert finished_at(job) == expected


@pytest.mark.parametrize(
    ("failed", "delay"),
    [(-1, 0.0), (0, 0.0), (1, 60.0), (2, 120.0), (3, 240.0), (6, 1920.0), (7, 3600.0), (10**6, 3600.0)],
)
def test_retry_delay_defaults(failed: int, delay: float) -> None:
    assert JOB_RETRY.delay(failed, jitter=None) == delay


# ---------------------------------------------------------------------------------------------
# classify_failure
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "pods", "log", "reason", "message"),
    [
        (
            FAILED_JOB,
            [pod(statuses=[waiting("ErrImagePull", 'pulling "x": unauthorized: authentication required')])],
            None,
            REASON_IMAGE_PULL_AUTH_FAILURE,
            'download image pull not authorized: pulling "x": unauthorized: authentication required',
        ),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("ImagePullBackOff", "pull access denied for x")])],
            None,
            REASON_IMAGE_PULL_AUTH_FAILURE,
            "download image pull not authorized: pull access denied for x",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("ErrImagePull", "docker.io/amd/dl:9.9: not found")])],
            None,
            REASON_IMAGE_NOT_FOUND,
            "download image not found: docker.io/amd/dl:9.9: not found",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("ErrImagePull", "manifest unknown")])],
            None,
            REASON_IMAGE_NOT_FOUND,
            "download image not found: manifest unknown",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("ImagePullBackOff", 'Back-off pulling image "x"')])],
            None,
            REASON_IMAGE_PULL_BACK_OFF,
            'cannot pull the download image: Back-off pulling image "x"',
        ),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("ErrImagePull")])],
            None,
            REASON_IMAGE_PULL_BACK_OFF,
            "cannot pull the download image: ErrImagePull",  # no message: the reason stands in
        ),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("InvalidImageName", 'couldn\'t parse image reference "A:B"')])],
            None,
            REASON_INVALID_IMAGE_REFERENCE,
            'invalid download image: couldn\'t parse image reference "A:B"',
        ),
        (
            deadline_job(600),
            [pod("p1", statuses=[waiting("CreateContainerConfigError", 'secret "hf-token" not found')])],
            None,
            REASON_SECRET_NOT_FOUND,
            'download pod p1 cannot start: secret "hf-token" not found',
        ),
        (
            FAILED_JOB,
            [pod("p1", statuses=[terminated(exitCode=137, reason="OOMKilled")])],
            "fetching shard 3/8",
            REASON_POD_OOM_KILLED,
            f"download container {CONTAINER} in pod p1 was killed for running out of memory (OOMKilled)",
        ),
        (
            FAILED_JOB,
            [pod("p1", statuses=[terminated(exitCode=137, reason="OOMKilled", last=True)])],
            None,
            REASON_POD_OOM_KILLED,
            f"download container {CONTAINER} in pod p1 was killed for running out of memory (OOMKilled)",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[EXIT_1])],
            "huggingface_hub.errors.GatedRepoError: 401 Client Error\nCannot access gated repo",
            REASON_AUTH_ERROR,
            "download could not authenticate to the model source; last log lines: "
            "huggingface_hub.errors.GatedRepoError: 401 Client Error | Cannot access gated repo",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[EXIT_1])],
            "An error occurred (AccessDenied) when calling the GetObject operation",
            REASON_AUTH_ERROR,
            "download could not authenticate to the model source; last log lines: "
            "An error occurred (AccessDenied) when calling the GetObject operation",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[EXIT_1])],
            "RepositoryNotFoundError: Repository Not Found for url: https://huggingface.co/api/models/a/b",
            REASON_SOURCE_NOT_FOUND,
            "download could not find the model source; last log lines: RepositoryNotFoundError: "
            "Repository Not Found for url: https://huggingface.co/api/models/a/b",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[EXIT_1])],
            "An error occurred (NoSuchKey)",
            REASON_SOURCE_NOT_FOUND,
            "download could not find the model source; last log lines: An error occurred (NoSuchKey)",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[EXIT_1])],
            "writing shard\nOSError: [Errno 28] No space left on device\n\n",
            REASON_STORAGE_FULL,
            "download ran out of disk space; last log lines: writing shard | "
            "OSError: [Errno 28] No space left on device",
        ),
        (
            deadline_job(7200),
            [pod(phase="Running")],
            "still downloading",
            REASON_JOB_DEADLINE_EXCEEDED,
            "download did not finish within 7200s; last log lines: still downloading",
        ),
        (
            FAILED_JOB,
            [pod("p1", reason="Evicted", message="The node was low on resource: ephemeral-storage.")],
            None,
            REASON_JOB_EVICTED,
            "download pod p1 was evicted: The node was low on resource: ephemeral-storage.",
        ),
        (
            FAILED_JOB,
            [pod("p1", reason="Evicted")],
            None,
            REASON_JOB_EVICTED,
            "download pod p1 was evicted: no details",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[terminated(exitCode=3, reason="Error", message="checksum mismatch")])],
            "verifying\nerror: checksum mismatch",
            REASON_JOB_BACKOFF_LIMIT_EXCEEDED,
            "download container exited with code 3 (Error): checksum mismatch; "
            "last log lines: verifying | error: checksum mismatch",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[terminated(exitCode=1)])],
            None,
            REASON_JOB_BACKOFF_LIMIT_EXCEEDED,
            "download container exited with code 1",
        ),
        (
            FAILED_JOB,
            [pod(statuses=[terminated()])],
            None,
            REASON_JOB_BACKOFF_LIMIT_EXCEEDED,
            "download container exited with code ?",
        ),
        (FAILED_JOB, [], None, REASON_JOB_BACKOFF_LIMIT_EXCEEDED, "download job failed"),
        (
            FAILED_JOB,
            [],
            "boom",
            REASON_JOB_BACKOFF_LIMIT_EXCEEDED,
            "download job failed; last log lines: boom",
        ),
    ],
)
def test_classify_failure(job: Obj, pods: list[Obj], log: str | None, reason: str, message: str) -> None:
    assert classify(job, pods, log) == (reason, message)
    assert reason in REASON_STATES  # the status service knows every reason


@pytest.mark.parametrize(
    ("seconds", "default", "message"),
    [
        (7200, None, "download did not finish within 7200s"),
        (7200, 900, "download did not finish within 7200s"),  # the Job's own deadline wins
        (None, 900, "download did not finish within 900s"),
        (None, None, "download did not finish within its deadline"),
    ],
)
def test_classify_failure_deadline(seconds: int | None, default: int | None, message: str) -> None:
    assert classify(deadline_job(seconds), [], None, default_deadline=default) == (
        REASON_JOB_DEADLINE_EXCEEDED,
        message,
    )


# What containerd 1.6 tells the kubelet when a tag does not exist (seen on the real node): the words
# that say so come last, after more characters than a message keeps.
CONTAINERD_NOT_FOUND = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "127.0.0.1:5000/aim/missing:0.1.0": '
    'failed to resolve reference "127.0.0.1:5000/aim/missing:0.1.0": 127.0.0.1:5000/aim/missing:0.1.0: '
    "not found"
)


def test_a_long_pull_error_is_classified_by_its_whole_message_and_quoted_clipped() -> None:
    found = jobs.pod_problem(
        pod(statuses=[waiting("ErrImagePull", CONTAINERD_NOT_FOUND)]), what="inference", container="main"
    )
    assert found is not None
    reason, message = found
    assert reason == REASON_IMAGE_NOT_FOUND
    assert message.startswith("inference image not found: rpc error: code = NotFound")
    assert len(message) <= len("inference image not found: ") + 200 and message.endswith("…")


def test_classify_failure_checks_the_main_container_first() -> None:
    statuses = [
        terminated("sidecar", exitCode=2, reason="Error"),
        terminated(CONTAINER, exitCode=5, reason="Error"),
    ]
    _, message = classify(FAILED_JOB, [pod(statuses=statuses)], None)
    assert message == "download container exited with code 5 (Error)"


def test_classify_failure_looks_at_init_containers_last() -> None:
    p = pod(
        "p1",
        statuses=[waiting("PodInitializing")],
        init_statuses=[terminated("fetch-token", exitCode=137, reason="OOMKilled")],
    )
    assert classify(FAILED_JOB, [p], None) == (
        REASON_POD_OOM_KILLED,
        "download container fetch-token in pod p1 was killed for running out of memory (OOMKilled)",
    )


def test_classify_failure_prefers_the_newest_pod() -> None:
    old = pod("old", created="2025-01-01T12:00:00Z", statuses=[terminated(exitCode=137, reason="OOMKilled")])
    new = pod("new", created="2025-01-01T12:10:00Z", statuses=[waiting("ErrImagePull", "manifest unknown")])
    assert classify(FAILED_JOB, [old, new], None)[0] == REASON_IMAGE_NOT_FOUND
    assert classify(FAILED_JOB, [new, old], None)[0] == REASON_IMAGE_NOT_FOUND


def test_classify_failure_log_order_auth_before_not_found_before_storage() -> None:
    log = "No space left on device\n404 Not Found\n401 Unauthorized"
    assert classify(FAILED_JOB, [], log)[0] == REASON_AUTH_ERROR
    assert classify(FAILED_JOB, [], "No space left on device\n404")[0] == REASON_SOURCE_NOT_FOUND


def test_classify_failure_404_is_a_word_not_a_substring() -> None:
    reason, _ = classify(FAILED_JOB, [pod(statuses=[EXIT_1])], "downloaded 14045 bytes then crashed")
    assert reason == REASON_JOB_BACKOFF_LIMIT_EXCEEDED


def test_classify_failure_quotes_little_of_a_long_log() -> None:
    log = "\n".join([*(f"shard {i} done" for i in range(40)), "x" * 5000, "", "\t", "Killed"])
    _, message = classify(FAILED_JOB, [pod(statuses=[terminated(exitCode=137)])], log)
    assert message == (
        f"download container exited with code 137; last log lines: shard 39 done | {'x' * 199}… | Killed"
    )


@pytest.mark.parametrize(
    ("job", "pods", "log"),
    [
        (FAILED_JOB, [pod(statuses=[terminated(exitCode=1, message=f"HF_TOKEN={HF_TOKEN}")])], None),
        (FAILED_JOB, [pod(statuses=[EXIT_1])], f"GET https://hf.co/x?token={HF_TOKEN} -> 401"),
        (FAILED_JOB, [pod(statuses=[EXIT_1])], f"s3 key {AWS_KEY_ID}: NoSuchBucket"),
        (
            FAILED_JOB,
            [pod(statuses=[EXIT_1])],
            f"disk: No space left on device (aws_secret_key={AWS_KEY_ID}x)",
        ),
        (deadline_job(60), [], f"retrying with Authorization: Bearer {HF_TOKEN}"),
        (FAILED_JOB, [pod(reason="Evicted", message=f"evicted while using {HF_TOKEN}")], None),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("ErrImagePull", f"pull x: unauthorized (token={HF_TOKEN})")])],
            None,
        ),
        (
            FAILED_JOB,
            [pod(statuses=[waiting("CreateContainerConfigError", f"secret {AWS_KEY_ID} missing")])],
            None,
        ),
    ],
    ids=["exit", "auth-log", "not-found-log", "storage-log", "deadline-log", "evicted", "pull", "secret"],
)
def test_classify_failure_messages_are_redacted(job: Obj, pods: list[Obj], log: str | None) -> None:
    _, message = classify(job, pods, log)
    assert HF_TOKEN not in message
    assert AWS_KEY_ID not in message
    assert "***" in message


def test_classify_failure_redacts_pull_messages() -> None:
    p = pod(statuses=[waiting("ErrImagePull", "unauthorized: Bearer abcdefghijklmnop rejected")])
    assert classify(FAILED_JOB, [p], None) == (
        REASON_IMAGE_PULL_AUTH_FAILURE,
        "download image pull not authorized: unauthorized: Bearer *** rejected",
    )


# ---------------------------------------------------------------------------------------------
# pod_progress
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([], None),
        (
            [pod(phase="Pending", statuses=[waiting("ErrImagePull", "unauthorized")])],
            (REASON_IMAGE_PULL_AUTH_FAILURE, "download image pull not authorized: unauthorized"),
        ),
        (
            [
                pod(
                    "p",
                    phase="Pending",
                    statuses=[waiting("CreateContainerConfigError", 'secret "s3" not found')],
                )
            ],
            (REASON_SECRET_NOT_FOUND, 'download pod p cannot start: secret "s3" not found'),
        ),
        (
            [
                pod(
                    "p",
                    phase="Pending",
                    node=None,
                    conditions=[
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": "0/3 nodes are available: unbound immediate PersistentVolumeClaims.",
                        }
                    ],
                )
            ],
            (
                REASON_PODS_PENDING,
                "waiting for a node: 0/3 nodes are available: unbound immediate PersistentVolumeClaims.",
            ),
        ),
        (
            [pod("p", phase="Pending", node=None)],
            (REASON_PODS_PENDING, "waiting for a node: pod p is not scheduled yet"),
        ),
        (
            [pod("p", phase="Pending", statuses=[waiting("ContainerCreating")])],
            (REASON_JOB_RUNNING, "download pod p starting (ContainerCreating)"),
        ),
        (
            [pod("p", phase="Pending", statuses=[{"name": CONTAINER, "state": {"waiting": {}}}])],
            (REASON_JOB_RUNNING, "download pod p starting (waiting)"),
        ),
        ([pod("p", phase="Pending")], (REASON_JOB_RUNNING, "download pod p starting")),
        ([pod("p", phase="Running")], (REASON_JOB_RUNNING, "download pod p running")),
        ([pod("p", phase="Succeeded")], (REASON_JOB_RUNNING, "download pod p succeeded")),
        ([{"metadata": {}, "status": {}}], (REASON_JOB_RUNNING, "download pod <unnamed> unknown")),
        (
            [pod("old", phase="Running"), pod("new", phase="Pending", created="2025-01-01T13:00:00Z")],
            (REASON_JOB_RUNNING, "download pod new starting"),
        ),
    ],
)
def test_pod_progress(pods: list[Obj], expected: tuple[str, str] | None) -> None:
    assert progress(pods) == expected


def test_pod_progress_names_the_main_container_wait_first() -> None:
    statuses = [waiting("PodInitializing", name="sidecar"), waiting("ContainerCreating")]
    assert progress([pod("p", phase="Pending", statuses=statuses)]) == (
        REASON_JOB_RUNNING,
        "download pod p starting (ContainerCreating)",
    )


# ---------------------------------------------------------------------------------------------
# redact / log_excerpt
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            f"GET https://huggingface.co/org/m?x=1 with {HF_TOKEN}.",
            "GET https://huggingface.co/org/m?x=1 with ***.",
        ),
        (f"id={AWS_KEY_ID}", "id=***"),
        (f"{AWS_KEY_ID}{AWS_KEY_ID}", "******"),
        ("api_key=abc123 next", "api_key=*** next"),
        ("S3_SECRET=abc/def+ghi= tail", "S3_SECRET=*** tail"),
        ("Password=x", "Password=***"),
        ("authorization: BEARER abcdefgh12", "authorization: BEARER ***"),
        ("Basic dXNlcjpwYXNzd29yZA==", "Basic ***"),
        ("bearer short", "bearer short"),  # too short to be a credential
        ("hf_short", "hf_short"),
    ],
)
def test_redact(text: str, redacted: str) -> None:
    assert redact(text) == redacted


def test_redact_keeps_ordinary_text() -> None:
    assert (
        redact("downloaded 3 of 8 shards from hf://org/model")
        == "downloaded 3 of 8 shards from hf://org/model"
    )
    assert redact("token=abc key=def") == "token=*** key=***"
    assert redact("") == ""


@pytest.mark.parametrize(
    ("log", "excerpt"),
    [
        (None, ""),
        ("", ""),
        ("\n  \n", ""),
        ("one", "one"),
        ("a\n\nb\n c \n\nd\n\n", "b | c | d"),
        ("x   y\tz", "x y z"),
        ("y" * 300, "y" * 199 + "…"),
        (f"token={HF_TOKEN}", "token=***"),
    ],
)
def test_log_excerpt(log: str | None, excerpt: str) -> None:
    assert log_excerpt(log) == excerpt


# ---------------------------------------------------------------------------------------------
# last_json_line
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (None, None),
        ("", None),
        ("\n\n", None),
        ("no json here\nat all", None),
        ('{"ok": true}', {"ok": True}),
        ('fetching\n{"ok": true, "bytes": 12}\n', {"ok": True, "bytes": 12}),
        ('{"ok": true}\n\n   \n', {"ok": True}),  # trailing blank lines
        ('  {"ok": true}  \r\n', {"ok": True}),  # surrounding white space, CRLF
        ('{"n": 1}\nprogress 50%\n{"n": 2}\n', {"n": 2}),  # the last one wins
        ('{"n": 1}\nTraceback (most recent call last):\n', {"n": 1}),  # non-JSON lines are passed over
        ('{"n": 1}\n[1, 2]\n"text"\n42\nnull\n', {"n": 1}),  # JSON that is not an object is too
        ('{"n": 1}\n{"broken": \n', {"n": 1}),
        ('{"nested": {"a": [1, {"b": null}]}}', {"nested": {"a": [1, {"b": None}]}}),
        ("{}", {}),
        ('log: {"n": 1}', None),  # only whole lines count
        ('{"a": 1,\n "b": 2}', None),  # an object across lines is not a JSON line
    ],
)
def test_last_json_line(log: str | None, expected: Obj | None) -> None:
    assert last_json_line(log) == expected
