"""The discovery dry-run Job: names, body, state, output parsing and failure classification."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from aim_discovery.dryrun import (
    ACTIVE_DEADLINE_SECONDS,
    ANNOTATION_ATTEMPT,
    ANNOTATION_SPEC_HASH,
    ANNOTATION_TEMPLATE_NAMESPACE,
    JOB_RETRY,
    LABEL_TEMPLATE,
    DiscoveryOutputError,
    classify_failure,
    job_body,
    job_name,
    parse_output,
    pod_progress,
    size_quantity,
    spec_hash,
)
from aimcore.api.crds.aim import AIMModelSource, AIMProfile
from aimcore.domain.jobs import (
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
    redact,
)
from aimcore.domain.status.rules import REASON_STATES

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
HF_TOKEN = "hf_abcdefghijklmnopqrstuvwxyz012345"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"

# ---------------------------------------------------------------------------------------------
# spec_hash / job_name
# ---------------------------------------------------------------------------------------------

BASE_SPEC: dict[str, Any] = {
    "model_name": "llama-3-8b",
    "image": "amdenterpriseai/aim-llama:0.8.5",
    "metric": "latency",
    "precision": "fp8",
    "gpu_model": "MI300X",
    "gpu_count": 1,
    "profile_id": None,
}


def test_spec_hash_is_stable_hex() -> None:
    first = spec_hash(**BASE_SPEC)
    assert re.fullmatch(r"[0-9a-f]{8}", first)
    assert spec_hash(**BASE_SPEC) == first


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model_name", "llama-3-70b"),
        ("image", "amdenterpriseai/aim-llama:0.8.6"),
        ("metric", "throughput"),
        ("precision", "fp16"),
        ("gpu_model", "MI325X"),
        ("gpu_count", 2),
        ("profile_id", "vllm-mi300x-fp8-tp1-latency"),
    ],
)
def test_spec_hash_changes_with_every_field(field: str, value: Any) -> None:
    assert spec_hash(**{**BASE_SPEC, field: value}) != spec_hash(**BASE_SPEC)


def test_spec_hash_none_equals_empty_and_fields_do_not_bleed() -> None:
    assert spec_hash(**{**BASE_SPEC, "metric": None}) == spec_hash(**{**BASE_SPEC, "metric": ""})
    # moving text from one field to the next must change the hash
    a = spec_hash("ab", "c", None, None, None, None, None)
    b = spec_hash("a", "bc", None, None, None, None, None)
    assert a != b


@pytest.mark.parametrize(
    ("template", "attempt", "expected"),
    [
        ("llama-fp8", 0, "discover-llama-fp8-0123abcd-0"),
        ("Llama_3.1 FP8", 2, "discover-llama-3-1-fp8-0123abcd-2"),
        ("---", 1, "discover-part-0123abcd-1"),
    ],
)
def test_job_name_examples(template: str, attempt: int, expected: str) -> None:
    assert job_name(template, "0123abcd", attempt) == expected


@pytest.mark.parametrize("attempt", [0, 9, 10, 12345])
@pytest.mark.parametrize(
    "template", ["a" * 80, "x-" * 40, "Meta.Llama-3.1-405B-Instruct-FP8-KV-MI325X-throughput"]
)
def test_job_name_is_a_dns_label_of_at_most_63(template: str, attempt: int) -> None:
    name = job_name(template, "0123abcd", attempt)
    assert len(name) <= 63
    assert DNS_LABEL.match(name)
    assert name.startswith("discover-")
    assert name.endswith(f"-0123abcd-{attempt}")


def test_job_name_rejects_negative_attempt() -> None:
    with pytest.raises(ValueError, match="attempt"):
        job_name("t", "0123abcd", -1)


# ---------------------------------------------------------------------------------------------
# job_body
# ---------------------------------------------------------------------------------------------

OWNER = {
    "apiVersion": "aim.eai.amd.com/v1alpha1",
    "kind": "AIMServiceTemplate",
    "name": "llama-fp8",
    "uid": "1234",
    "controller": True,
    "blockOwnerDeletion": True,
}


def body(**overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "name": "discover-llama-fp8-0123abcd-0",
        "namespace": "team-a",
        "template_name": "Llama_FP8",
        "template_namespace": "team-a",
        "image": "amdenterpriseai/aim-llama:0.8.5",
        "image_pull_secrets": ["regcred"],
        "service_account": None,
        "env": [],
        "owner": OWNER,
        "spec_hash": "0123abcd",
        "attempt": 3,
        "extra_labels": {},
        "profile_id": None,
        "metric": None,
        "precision": None,
        "gpu_model": None,
        "gpu_count": None,
    }
    args.update(overrides)
    job: dict[str, Any] = job_body(**args)
    return job


def container_of(job: dict[str, Any]) -> dict[str, Any]:
    containers = job["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def test_job_body_shape() -> None:
    job = body()
    assert job["apiVersion"] == "batch/v1"
    assert job["kind"] == "Job"
    meta = job["metadata"]
    assert meta["name"] == "discover-llama-fp8-0123abcd-0"
    assert meta["namespace"] == "team-a"
    assert meta["ownerReferences"] == [OWNER]
    assert meta["labels"] == {
        "app.kubernetes.io/name": "aim-discovery",
        "app.kubernetes.io/component": "discovery",
        "app.kubernetes.io/managed-by": "aim-engine",
        "app.kubernetes.io/part-of": "aim-engine",
        LABEL_TEMPLATE: "llama_fp8",
    }
    assert meta["annotations"] == {
        ANNOTATION_SPEC_HASH: "0123abcd",
        ANNOTATION_ATTEMPT: "3",
        ANNOTATION_TEMPLATE_NAMESPACE: "team-a",
    }
    spec = job["spec"]
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == ACTIVE_DEADLINE_SECONDS == 900
    assert "ttlSecondsAfterFinished" not in spec
    assert spec["template"]["metadata"]["labels"] == meta["labels"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert "serviceAccountName" not in pod
    assert pod["automountServiceAccountToken"] is False
    container = container_of(job)
    assert container["name"] == "discovery"
    assert container["image"] == "amdenterpriseai/aim-llama:0.8.5"
    assert container["imagePullPolicy"] == "IfNotPresent"  # a fixed tag
    assert container["args"] == ["dry-run", "--format=json"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert "env" not in container
    json.dumps(job)  # plain JSON, ready for the API


def test_job_body_cluster_template_service_account_and_no_pull_secrets() -> None:
    job = body(template_namespace=None, service_account="aim-discovery", image_pull_secrets=[])
    assert ANNOTATION_TEMPLATE_NAMESPACE not in job["metadata"]["annotations"]
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "aim-discovery"
    assert "automountServiceAccountToken" not in pod
    assert "imagePullSecrets" not in pod


def test_a_moving_tag_is_pulled_each_time() -> None:
    assert container_of(body(image="ghcr.io/org/aim-llama:latest"))["imagePullPolicy"] == "Always"


def test_job_body_extra_labels_cannot_override_fixed_ones() -> None:
    job = body(extra_labels={"team": "a", "app.kubernetes.io/name": "evil", LABEL_TEMPLATE: "other"})
    labels = job["metadata"]["labels"]
    assert labels["team"] == "a"
    assert labels["app.kubernetes.io/name"] == "aim-discovery"
    assert labels[LABEL_TEMPLATE] == "llama_fp8"
    assert job["spec"]["template"]["metadata"]["labels"] == labels


def test_job_body_profile_env_after_caller_env_and_caller_wins() -> None:
    caller_env = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {"name": "AIM_METRIC", "value": "throughput"},
    ]
    job = body(
        env=caller_env, profile_id="p1", metric="latency", precision="fp8", gpu_model="MI300X", gpu_count=0
    )
    env = container_of(job)["env"]
    assert env == [
        caller_env[0],
        {"name": "AIM_METRIC", "value": "throughput"},
        {"name": "AIM_PROFILE_ID", "value": "p1"},
        {"name": "AIM_PRECISION", "value": "fp8"},
        {"name": "AIM_GPU_MODEL", "value": "MI300X"},
        {"name": "AIM_GPU_COUNT", "value": "0"},
    ]
    assert env[0] is not caller_env[0]  # the caller's dicts are not aliased


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({}, []),
        ({"metric": "latency"}, ["AIM_METRIC"]),
        ({"gpu_count": 2, "gpu_model": ""}, ["AIM_GPU_COUNT"]),
        ({"profile_id": "p", "precision": "bf16"}, ["AIM_PROFILE_ID", "AIM_PRECISION"]),
    ],
)
def test_job_body_only_set_profile_env(kwargs: dict[str, Any], names: list[str]) -> None:
    env = container_of(body(**kwargs)).get("env", [])
    assert [e["name"] for e in env] == names


def test_job_body_does_not_alias_owner() -> None:
    owner = copy.deepcopy(OWNER)
    job = body(owner=owner)
    job["metadata"]["ownerReferences"][0]["name"] = "changed"
    assert owner["name"] == "llama-fp8"


# ---------------------------------------------------------------------------------------------
# JOB_RETRY / job_state / finished_at
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failed", "delay"),
    [(-1, 0.0), (0, 0.0), (1, 60.0), (2, 120.0), (3, 240.0), (6, 1920.0), (7, 3600.0), (1000, 3600.0)],
)
def test_retry_delay(failed: int, delay: float) -> None:
    assert JOB_RETRY.delay(failed, jitter=None) == delay


def cond(
    type_: str, status: str = "True", reason: str = "", when: str = "2025-01-01T12:00:00Z"
) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "lastTransitionTime": when}


@pytest.mark.parametrize(
    ("job", "state"),
    [
        ({}, STATE_ACTIVE),
        ({"spec": {"backoffLimit": 0}, "status": {"active": 1}}, STATE_ACTIVE),
        ({"status": {"conditions": [cond("Complete")]}}, STATE_SUCCEEDED),
        ({"status": {"conditions": [cond("Complete", "False")]}}, STATE_ACTIVE),
        ({"status": {"succeeded": 1}}, STATE_SUCCEEDED),
        ({"status": {"conditions": [cond("Failed", reason="DeadlineExceeded")]}}, STATE_FAILED),
        ({"spec": {"backoffLimit": 0}, "status": {"failed": 1}}, STATE_FAILED),
        ({"spec": {"backoffLimit": 2}, "status": {"failed": 1}}, STATE_ACTIVE),
        ({"status": {"failed": 1}}, STATE_ACTIVE),  # Kubernetes' default backoffLimit is 6
        ({"status": {"conditions": [cond("Failed", "False")], "active": 1}}, STATE_ACTIVE),
    ],
)
def test_job_state(job: dict[str, Any], state: str) -> None:
    assert job_state(job) == state


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        ({}, None),
        (
            {"status": {"completionTime": "2025-01-01T12:05:00Z", "conditions": [cond("Complete")]}},
            datetime(2025, 1, 1, 12, 5, tzinfo=UTC),
        ),
        ({"status": {"conditions": [cond("Complete")]}}, datetime(2025, 1, 1, 12, 0, tzinfo=UTC)),
        (
            {"status": {"conditions": [cond("Failed", when="2025-01-02T00:00:00Z")]}},
            datetime(2025, 1, 2, tzinfo=UTC),
        ),
        ({"status": {"conditions": [cond("Failed", "False")]}}, None),
        ({"status": {"completionTime": "garbage"}}, None),
    ],
)
def test_finished_at(job: dict[str, Any], expected: datetime | None) -> None:
    assert finished_at(job) == expected


# ---------------------------------------------------------------------------------------------
# parse_output
# ---------------------------------------------------------------------------------------------


def element(**overrides: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "filename": "vllm-mi300x-fp8-tp1-latency.yaml",
        "profile": {
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "quantized_model": "amd/Llama-3.1-8B-Instruct-FP8-KV",
            "metadata": {
                "engine": "vllm",
                "gpu": "MI300X",
                "precision": "fp8",
                "gpu_count": 1,
                "metric": "latency",
                "type": "optimized",
            },
            "engine_args": {"max-model-len": 8192, "kv-cache-dtype": "fp8", "enforce-eager": None},
            "env_vars": {"HIP_FORCE_DEV_KERNARG": "1", "VLLM_USE_TRITON_FLASH_ATTN": 0, "FLAG": True},
        },
        "models": [
            {
                "name": "amd/Llama-3.1-8B-Instruct-FP8-KV",
                "source": "hf://amd/Llama-3.1-8B-Instruct-FP8-KV",
                "size_gb": 8.5,
            }
        ],
    }
    out.update(overrides)
    return out


def with_profile(**changes: Any) -> dict[str, Any]:
    el = element()
    el["profile"].update(changes)
    return el


def with_metadata(**changes: Any) -> dict[str, Any]:
    el = element()
    el["profile"]["metadata"].update(changes)
    return el


def test_parse_output_happy_path() -> None:
    el = element()
    result = parse_output(json.dumps([el]))
    assert result.gpu_model == "MI300X"
    assert result.gpu_count == 1
    assert result.profile == {
        "engine_args": {"max-model-len": 8192, "kv-cache-dtype": "fp8", "enforce-eager": None},
        "env_vars": {"HIP_FORCE_DEV_KERNARG": "1", "VLLM_USE_TRITON_FLASH_ATTN": "0", "FLAG": "true"},
        "metadata": {
            "engine": "vllm",
            "gpu": "MI300X",
            "precision": "fp8",
            "gpuCount": 1,
            "metric": "latency",
            "type": "optimized",
        },
        "originalDiscoveryOutput": el,
    }
    assert result.model_sources == [
        {
            "modelId": "amd/Llama-3.1-8B-Instruct-FP8-KV",
            "sourceUri": "hf://amd/Llama-3.1-8B-Instruct-FP8-KV",
            "size": "8704Mi",
        }
    ]
    # both validate against the CRD models and survive a wire round trip unchanged
    assert AIMProfile.model_validate(result.profile).wire() == result.profile
    for source in result.model_sources:
        assert AIMModelSource.model_validate(source).wire() == source


def test_parse_output_finds_last_array_among_log_lines() -> None:
    stale = element(filename="old.yaml")
    fresh = element(filename="new.yaml")
    log = "\n".join(
        [
            "[INFO] 2025-01-01 starting dry run",
            json.dumps([stale]),
            "[WARN] selected profile [1/3]",
            json.dumps([fresh], indent=2),
            "[INFO] done; warnings: []",
            '{"level": "info", "tags": ["x"]}',
        ]
    )
    result = parse_output(log)
    assert result.profile["originalDiscoveryOutput"]["filename"] == "new.yaml"
    # the nested models array of the output is not mistaken for the output itself
    assert result.model_sources[0]["modelId"] == "amd/Llama-3.1-8B-Instruct-FP8-KV"


def test_parse_output_minimal_profile() -> None:
    el = {"profile": {}, "models": [{"name": "org/m", "source": "s3://bucket/org/m"}]}
    result = parse_output(json.dumps([el]))
    assert result.gpu_count == 0
    assert result.gpu_model is None
    assert result.profile == {"metadata": {}, "originalDiscoveryOutput": el}
    assert result.model_sources == [{"modelId": "org/m", "sourceUri": "s3://bucket/org/m"}]


@pytest.mark.parametrize(
    ("size_gb", "quantity"),
    [
        (0, "0"),
        (0.5, "512Mi"),
        (1, "1Gi"),
        (1.5, "1536Mi"),
        (16, "16Gi"),
        (1024, "1Ti"),
        (0.001, "1073742"),  # 1073741.824 bytes, rounded up, not a whole KiB
        (1 / 1024, "1Mi"),
    ],
)
def test_size_quantity(size_gb: float, quantity: str) -> None:
    assert size_quantity(size_gb) == quantity
    assert AIMModelSource.model_validate({"modelId": "a/b", "sourceUri": "hf://a/b", "size": quantity})


@pytest.mark.parametrize(
    ("log", "fragment"),
    [
        ("", "no output"),
        ("loading...\nerror: no profile matches the GPU", "no JSON array"),
        ("[]", "empty JSON array"),
        ('["text"]', "element 0 is not an object"),
        (json.dumps([{"models": []}]), "has no profile"),
        (json.dumps([{"profile": "x"}]), "profile is not an object"),
        (json.dumps([element(models=None)]), "lists no models"),
        (json.dumps([element(models=[])]), "lists no models"),
        (json.dumps([{k: v for k, v in element().items() if k != "models"}]), "lists no models"),
        (json.dumps([element(models="hf://a/b")]), "models is not a list"),
        (json.dumps([element(models=[{"source": "hf://a/b"}])]), "models[0] has no name"),
        (json.dumps([element(models=[{"name": "a/b", "source": ""}])]), "models[0] (a/b) has no source"),
        (json.dumps([element(models=["a/b"])]), "models[0] is not an object"),
        (
            json.dumps([element(models=[{"name": "a/b", "source": "https://hf.co/a/b"}])]),
            "models[0].source must be an hf://, s3:// or oci:// URI",
        ),
        (
            json.dumps([element(models=[{"name": "a/b", "source": "hf://a/b c"}])]),
            "models[0].source is not a valid URI",
        ),
        (
            json.dumps([element(models=[{"name": "llama", "source": "hf://llama"}])]),
            "models[0].name is not a valid model id",
        ),
        (  # the model's own rules (issue 24): a discovery Job's output cannot name a '..' either
            json.dumps([element(models=[{"name": "a/..", "source": "hf://a/b"}])]),
            "modelId 'a/..': the name '..' is a relative path segment",
        ),
        (
            json.dumps([element(models=[{"name": "a/b", "source": "s3://bucket/../x"}])]),
            "the key prefix has a '.' or '..' segment",
        ),
        (
            json.dumps([element(models=[{"name": "a/b", "source": "hf://a/b", "size_gb": -1}])]),
            "models[0].size_gb must be a non-negative number",
        ),
        (
            json.dumps([element(models=[{"name": "a/b", "source": "hf://a/b", "size_gb": "16"}])]),
            "models[0].size_gb must be a number",
        ),
        (
            json.dumps([element(models=[{"name": "a/b", "source": "hf://a/b", "size_gb": True}])]),
            "models[0].size_gb must be a number",
        ),
        (
            '[{"profile": {}, "models": [{"name": "a/b", "source": "hf://a/b", "size_gb": NaN}]}]',
            "non-negative",
        ),
        (json.dumps([with_metadata(precision="fp4")]), "profile.metadata.precision"),
        (json.dumps([with_metadata(metric="fastest")]), "profile.metadata.metric"),
        (json.dumps([with_metadata(gpu_count=-1)]), "gpu_count must be a non-negative integer"),
        (json.dumps([with_metadata(gpu_count="two")]), "gpu_count must be a non-negative integer"),
        (json.dumps([with_metadata(gpu=3)]), "profile.metadata.gpu must be a string"),
        (json.dumps([with_profile(metadata=[1])]), "profile.metadata is not an object"),
        (json.dumps([with_profile(env_vars=["A=1"])]), "profile.env_vars is not an object"),
    ],
)
def test_parse_output_errors(log: str, fragment: str) -> None:
    with pytest.raises(DiscoveryOutputError) as info:
        parse_output(log)
    assert fragment in str(info.value)
    assert info.value.message == str(info.value)


def test_parse_output_precision_error_is_readable() -> None:
    with pytest.raises(DiscoveryOutputError) as info:
        parse_output(json.dumps([with_metadata(precision="fp4")]))
    message = str(info.value)
    assert "'bf16'" in message
    assert "'fp4'" in message
    assert "AIMPrecision" not in message


def test_parse_output_errors_quote_little_and_redact() -> None:
    huge = "x" * 10_000
    with pytest.raises(DiscoveryOutputError) as info:
        parse_output(f"noise\nfatal: {huge} token={HF_TOKEN}")
    assert len(str(info.value)) < 250
    with pytest.raises(DiscoveryOutputError) as info:
        parse_output(json.dumps([{"models": [], "blob": huge, "auth": HF_TOKEN}]))
    assert len(str(info.value)) < 250
    with pytest.raises(DiscoveryOutputError) as info:
        parse_output(f"error: {HF_TOKEN}")
    assert HF_TOKEN not in str(info.value)


# ---------------------------------------------------------------------------------------------
# redaction, classify_failure, pod_progress
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"using {HF_TOKEN} for download", HF_TOKEN),
        (f"aws key {AWS_KEY_ID}", AWS_KEY_ID),
        ("HF_TOKEN=s3cr3tvalue", "s3cr3tvalue"),
        ("password=hunter2!", "hunter2!"),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI/K7MDENG"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", "eyJhbGciOiJIUzI1NiJ9.abc"),
    ],
)
def test_redact(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert "***" in redacted


def pod(
    name: str = "discover-x-0-abcde",
    *,
    phase: str = "Failed",
    created: str = "2025-01-01T12:00:00Z",
    waiting: tuple[str, str] | None = None,
    terminated: dict[str, Any] | None = None,
    node: str | None = "node-1",
    reason: str | None = None,
    message: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if waiting is not None:
        state["waiting"] = {"reason": waiting[0], "message": waiting[1]}
    if terminated is not None:
        state["terminated"] = terminated
    status: dict[str, Any] = {"phase": phase}
    if state:
        status["containerStatuses"] = [{"name": "discovery", "state": state}]
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if conditions:
        status["conditions"] = conditions
    spec: dict[str, Any] = {"nodeName": node} if node else {}
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec, "status": status}


FAILED_JOB = {
    "spec": {"backoffLimit": 0},
    "status": {"failed": 1, "conditions": [cond("Failed", reason="BackoffLimitExceeded")]},
}
DEADLINE_JOB = {
    "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 900},
    "status": {"conditions": [cond("Failed", reason="DeadlineExceeded")]},
}
EXIT_1 = {"exitCode": 1, "reason": "Error"}


@pytest.mark.parametrize(
    ("job", "pods", "log", "reason", "fragment"),
    [
        (
            FAILED_JOB,
            [pod(waiting=("ErrImagePull", 'pulling "x": unauthorized: authentication required'))],
            None,
            REASON_IMAGE_PULL_AUTH_FAILURE,
            "authentication required",
        ),
        (
            FAILED_JOB,
            [pod(waiting=("ErrImagePull", "failed to resolve reference: denied: access forbidden"))],
            None,
            REASON_IMAGE_PULL_AUTH_FAILURE,
            "denied",
        ),
        (
            FAILED_JOB,
            [pod(waiting=("ErrImagePull", "docker.io/amd/aim:9.9: not found"))],
            None,
            REASON_IMAGE_NOT_FOUND,
            "not found",
        ),
        (
            FAILED_JOB,
            [pod(waiting=("ErrImagePull", "manifest unknown: manifest unknown"))],
            None,
            REASON_IMAGE_NOT_FOUND,
            "manifest unknown",
        ),
        (
            FAILED_JOB,
            [pod(waiting=("ImagePullBackOff", 'Back-off pulling image "x"'))],
            None,
            REASON_IMAGE_PULL_BACK_OFF,
            "Back-off pulling image",
        ),
        (
            DEADLINE_JOB,
            [pod(waiting=("InvalidImageName", 'couldn\'t parse image reference "A:B:C"'))],
            None,
            REASON_INVALID_IMAGE_REFERENCE,
            "couldn't parse",
        ),
        (
            DEADLINE_JOB,
            [pod(waiting=("CreateContainerConfigError", 'secret "hf-token" not found'))],
            None,
            REASON_SECRET_NOT_FOUND,
            'secret "hf-token" not found',
        ),
        (
            FAILED_JOB,
            [pod(terminated={"exitCode": 137, "reason": "OOMKilled"})],
            "loading weights",
            REASON_POD_OOM_KILLED,
            "OOMKilled",
        ),
        (
            FAILED_JOB,
            [pod(terminated=EXIT_1)],
            "huggingface_hub.errors.GatedRepoError: 401 Client Error\nCannot access gated repo",
            REASON_AUTH_ERROR,
            "gated repo",
        ),
        (
            FAILED_JOB,
            [pod(terminated=EXIT_1)],
            "botocore.exceptions.ClientError: An error occurred (InvalidAccessKeyId)",
            REASON_AUTH_ERROR,
            "InvalidAccessKeyId",
        ),
        (
            FAILED_JOB,
            [pod(terminated=EXIT_1)],
            "RepositoryNotFoundError: Repository Not Found for url: https://huggingface.co/api/models/a/b",
            REASON_SOURCE_NOT_FOUND,
            "could not find the model source",
        ),
        (
            FAILED_JOB,
            [pod(terminated=EXIT_1)],
            "An error occurred (NoSuchBucket)",
            REASON_SOURCE_NOT_FOUND,
            "NoSuchBucket",
        ),
        (
            FAILED_JOB,
            [pod(terminated=EXIT_1)],
            "OSError: [Errno 28] No space left on device",
            REASON_STORAGE_FULL,
            "disk space",
        ),
        (DEADLINE_JOB, [pod(phase="Running")], "still downloading", REASON_JOB_DEADLINE_EXCEEDED, "900s"),
        (
            FAILED_JOB,
            [pod(reason="Evicted", message="The node was low on resource: ephemeral-storage.")],
            None,
            REASON_JOB_EVICTED,
            "low on resource",
        ),
        (
            FAILED_JOB,
            [pod(terminated={"exitCode": 2, "reason": "Error", "message": "no profile for MI210"})],
            "selecting profile\nerror: no profile for MI210",
            REASON_JOB_BACKOFF_LIMIT_EXCEEDED,
            "exited with code 2 (Error): no profile for MI210; last log lines:",
        ),
        (FAILED_JOB, [], None, REASON_JOB_BACKOFF_LIMIT_EXCEEDED, "discovery job failed"),
    ],
)
def test_classify_failure(
    job: dict[str, Any], pods: list[dict[str, Any]], log: str | None, reason: str, fragment: str
) -> None:
    got_reason, message = classify_failure(job, pods, log)
    assert (got_reason, fragment in message) == (reason, True), message
    assert reason in REASON_STATES  # the status service knows every reason


def test_classify_failure_404_is_a_word_not_a_substring() -> None:
    reason, _ = classify_failure(FAILED_JOB, [pod(terminated=EXIT_1)], "downloaded 14045 bytes then crashed")
    assert reason == REASON_JOB_BACKOFF_LIMIT_EXCEEDED


def test_classify_failure_prefers_the_newest_pod() -> None:
    old = pod("old", created="2025-01-01T12:00:00Z", terminated={"exitCode": 137, "reason": "OOMKilled"})
    new = pod("new", created="2025-01-01T12:10:00Z", waiting=("ErrImagePull", "manifest unknown"))
    assert classify_failure(FAILED_JOB, [old, new], None)[0] == REASON_IMAGE_NOT_FOUND


def test_classify_failure_message_is_short_and_redacted() -> None:
    log = "\n".join(
        [f"line {i}" for i in range(50)]
        + [
            f"HF_TOKEN={HF_TOKEN} downloading",
            f"aws {AWS_KEY_ID} " + "y" * 1000,
            "",
            f"401 Unauthorized with {HF_TOKEN}",
        ]
    )
    term = {"exitCode": 1, "reason": "Error", "message": f"password=hunter2 {HF_TOKEN}"}
    for job in (FAILED_JOB, DEADLINE_JOB):
        _, message = classify_failure(job, [pod(terminated=term)], log)
        for secret in (HF_TOKEN, AWS_KEY_ID, "hunter2"):
            assert secret not in message
        assert "line 49" not in message  # only the last three non-blank lines
        assert len(message) < 3 * 200 + 200
    _, message = classify_failure(FAILED_JOB, [pod(terminated=term)], "plain failure\n")
    assert "hunter2" not in message
    assert message.endswith("last log lines: plain failure")


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([], None),
        (
            [pod(phase="Pending", waiting=("ErrImagePull", "unauthorized"))],
            (REASON_IMAGE_PULL_AUTH_FAILURE, "discovery image pull not authorized: unauthorized"),
        ),
        (
            [pod(phase="Pending", waiting=("ImagePullBackOff", 'Back-off pulling image "x"'))],
            (REASON_IMAGE_PULL_BACK_OFF, 'cannot pull the discovery image: Back-off pulling image "x"'),
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
                            "message": "0/3 nodes are available: 3 Insufficient memory.",
                        }
                    ],
                )
            ],
            (REASON_PODS_PENDING, "waiting for a node: 0/3 nodes are available: 3 Insufficient memory."),
        ),
        (
            [pod("p", phase="Pending", node=None)],
            (REASON_PODS_PENDING, "waiting for a node: pod p is not scheduled yet"),
        ),
        (
            [pod("p", phase="Pending", waiting=("ContainerCreating", ""))],
            (REASON_JOB_RUNNING, "discovery pod p starting (ContainerCreating)"),
        ),
        ([pod("p", phase="Pending")], (REASON_JOB_RUNNING, "discovery pod p starting")),
        ([pod("p", phase="Running")], (REASON_JOB_RUNNING, "discovery pod p running")),
        (
            [pod("old", phase="Running"), pod("new", phase="Running", created="2025-01-01T13:00:00Z")],
            (REASON_JOB_RUNNING, "discovery pod new running"),
        ),
    ],
)
def test_pod_progress(pods: list[dict[str, Any]], expected: tuple[str, str] | None) -> None:
    assert pod_progress(pods) == expected
