"""The cache service's pure planning: names, PVC sizing and storage class precedence, the download
Job's body for both image conventions, and how template caches pick and judge model caches."""

from __future__ import annotations

from typing import Any

import pytest

from aim_cache import plan
from aim_cache.modelcaches import backoff, describe_outcome
from aim_cache.templatecaches import best_of, caches_condition, template_kinds
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus import progress
from aimcore.api.bus.messages import ObjectRef
from aimcore.api.kinds import by_kind
from aimcore.domain.families.caches import CacheSource, ModelCache
from aimcore.domain.families.templates import Template
from aimcore.domain.outbound import OutboundPolicy

MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
GIB = 1024**3


def cache(
    name: str = "mc", status: str | None = None, created: str = "2026-01-01T00:00:00Z", **spec: Any
) -> dict:
    obj: dict[str, Any] = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModelCache",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": {"sourceUri": "hf://acme/tiny", "modelDownloadImage": "ghcr.io/acme/aim-engine:1", **spec},
    }
    if status is not None:
        obj["status"] = {
            "status": status,
            "conditions": [{"type": "Ready", "status": "False", "reason": f"{status}Reason", "message": "m"}],
        }
    return obj


def model_cache(
    name: str = "mc", status: str | None = None, created: str = "2026-01-01T00:00:00Z", **spec: Any
) -> ModelCache:
    return ModelCache(MODEL_CACHE, cache(name, status, created, **spec))


# -- names -------------------------------------------------------------------------------------


def test_model_cache_names_dedupe_shared_and_separate_dedicated() -> None:
    env = [{"name": "HF_ENDPOINT", "value": "http://mirror"}]
    shared = plan.model_cache_name("hf://acme/tiny-1.5b", env, None, None)
    assert shared == plan.model_cache_name("hf://acme/tiny-1.5b", env, None, None)
    assert shared.startswith("hf---acme-tiny-1-5b-")  # the original's sanitising: each of "://" → "-"
    assert len(shared.rsplit("-", 1)[1]) == 10
    assert plan.model_cache_name("hf://acme/tiny-1.5b", [], None, None) != shared
    assert plan.model_cache_name("hf://acme/tiny-1.5b", env, "fast", None) != shared
    dedicated = plan.model_cache_name("hf://acme/tiny-1.5b", env, None, "tc-a")
    assert dedicated not in (shared, plan.model_cache_name("hf://acme/tiny-1.5b", env, None, "tc-b"))


def test_long_source_names_stay_valid_dns_labels() -> None:
    name = plan.model_cache_name("s3://" + "very-long-bucket-name." * 6 + "/model", [], None, None)
    assert len(name) <= 63 and name == name.lower() and "." not in name
    assert len(plan.pvc_name(name, "uid")) <= 63
    assert len(plan.job_name(name, "uid", 12)) <= 63
    assert plan.job_name(name, "uid", 1) != plan.job_name(name, "uid", 2)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"sourceUri": "hf://meta-llama/Llama-3-8B", "modelId": "team/llama"}, "team/llama"),
        ({"sourceUri": "hf://meta-llama/Llama-3-8B"}, "meta-llama/Llama-3-8B"),
        ({"sourceUri": "hf://meta-llama/Llama-3-8B@main"}, "meta-llama/Llama-3-8B"),
        ({"sourceUri": "s3://bucket/teams/llama-ft/"}, "bucket/llama-ft"),
        ({"sourceUri": "s3://bucket"}, "bucket/model"),
    ],
)
def test_model_id(spec: dict[str, Any], expected: str) -> None:
    assert plan.model_id(spec["sourceUri"], spec.get("modelId")) == expected
    assert plan.model_id(model_cache(**spec).source_uri, model_cache(**spec).model_id) == expected


def test_mount_path_follows_the_seed_and_drops_traversal() -> None:
    assert plan.mount_path("acme/tiny") == "/workspace/model-cache/acme/tiny"
    assert plan.mount_path("../../etc/x") == "/workspace/model-cache/etc/x"


# -- storage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "headroom", "expected"),
    [
        (0, 10, 1 * GIB),
        (GIB, 10, 2 * GIB),
        (10 * GIB, 10, 11 * GIB),
        (10 * GIB, 0, 10 * GIB),
        (int(9.5 * GIB), 5, 10 * GIB),
    ],
)
def test_pvc_size_adds_headroom_and_rounds_up_to_gib(size: int, headroom: int, expected: int) -> None:
    assert plan.pvc_size_bytes(size, headroom) == expected


def test_storage_class_precedence_and_headroom_default() -> None:
    config = {"storage": {"defaultStorageClassName": "cfg", "pvcHeadroomPercent": 0}}
    assert plan.storage_class(model_cache(storageClassName="own").storage_class, config) == "own"
    assert plan.storage_class(model_cache().storage_class, config) == "cfg"
    assert plan.storage_class(None, {}) is None
    assert plan.headroom_percent(config) == 0  # a set 0 is honoured
    assert plan.headroom_percent({}) == plan.DEFAULT_HEADROOM_PERCENT


def test_pvc_body() -> None:
    body = plan.pvc_body(model_cache(), 2 * GIB, "fast")
    assert body["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": str(2 * GIB)}},
        "storageClassName": "fast",
    }
    assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-mc"
    assert body["metadata"]["labels"][plan.LABEL_CACHE_NAME] == "mc"
    assert body["metadata"]["labels"][plan.LABEL_SOURCE_MODEL] == "acme_tiny"
    assert "storageClassName" not in plan.pvc_body(model_cache(), GIB, None)["spec"]


# -- the download Job ----------------------------------------------------------------------------


def test_job_runs_the_aim_downloader_hardened_with_progress_to_nats() -> None:
    env = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]
    obj = model_cache(env=env, imagePullSecrets=[{"name": "regcred"}])
    bus = plan.JobBus("nats://aim-nats:4222", "SU-the-download-seed", progress.key_from_seed("cache-seed"))
    job = plan.job_body(obj, attempt=2, bus=bus, stall_timeout=60)
    assert job["metadata"]["name"] == plan.job_name("mc", "uid-mc", 2)
    assert job["metadata"]["annotations"][plan.ANNOTATION_ATTEMPT] == "2"
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 86400  # the released original's 24 h backstop
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["aim-download"]
    assert container["imagePullPolicy"] == "IfNotPresent"  # the downloader at a fixed tag
    moving = plan.job_body(obj, attempt=2, bus=bus, stall_timeout=60, image="ghcr.io/org/aim-download")
    assert moving["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert container["args"][:2] == ["hf://acme/tiny", "/workspace/model-cache/acme/tiny"]
    assert "--object=aim.eai.amd.com/v1alpha1/AIMModelCache/ns/mc" in container["args"]
    assert env[0] in container["env"]  # secret references pass through, resolved by the kubelet
    assert {"name": "AIM_NATS_URL", "value": "nats://aim-nats:4222"} in container["env"]
    # the Job offers progress as the download role, with the token of its own object only
    job_env = {e["name"]: e.get("value") for e in container["env"]}
    assert job_env["AIM_NATS_ROLE"] == "download" and job_env["AIM_NATS_SEED"] == "SU-the-download-seed"
    target = ObjectRef.of(MODEL_CACHE, "ns", "mc")
    assert job_env["AIM_PROGRESS_TOKEN"] == progress.token(bus.token_key, target, "uid-mc")
    assert job_env["AIM_PROGRESS_TOKEN"] != progress.token(bus.token_key, target, "another-uid")
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == plan.pvc_name("mc", "uid-mc")
    assert container["volumeMounts"][0]["mountPath"] == "/workspace/model-cache/acme/tiny"


def test_job_carries_the_operators_outbound_policy_and_the_spec_cannot_change_it() -> None:
    """The downloader in the Job enforces the operator's outbound address policy: the cache service
    passes it as env, after (and instead of) anything the model cache's env says."""
    sneaky = [
        {"name": "AIM_OUTBOUND_ALLOW_PRIVATE", "value": "true"},
        {"name": "AIM_OUTBOUND_ALLOWED_HOSTS", "value": "169.254.169.254"},
        {"name": "HF_ENDPOINT", "value": "https://mirror.example"},
    ]
    policy = OutboundPolicy(frozenset({"mirror.internal"}))
    job = plan.job_body(model_cache(env=sneaky), attempt=1, bus=None, stall_timeout=60, outbound=policy.env())
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    policy_env = [e for e in env if e["name"].startswith("AIM_OUTBOUND_")]
    assert policy_env == [
        {"name": "AIM_OUTBOUND_ALLOWED_HOSTS", "value": "mirror.internal"},
        {"name": "AIM_OUTBOUND_ALLOW_PRIVATE", "value": "false"},
    ]
    assert env[-2:] == policy_env  # after everything the spec gives
    assert {"name": "HF_ENDPOINT", "value": "https://mirror.example"} in env
    assert OutboundPolicy.from_env({e["name"]: e["value"] for e in policy_env}) == policy


def test_job_logs_in_the_cache_services_format_and_the_spec_cannot_change_it() -> None:
    sneaky = [{"name": "AIM_LOG_FORMAT", "value": "text"}]
    job = plan.job_body(model_cache(env=sneaky), attempt=1, bus=None, stall_timeout=60, log_format="json")
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e for e in env if e["name"] == "AIM_LOG_FORMAT"] == [{"name": "AIM_LOG_FORMAT", "value": "json"}]


def test_the_job_names_the_protocol_sequence_it_tries_once() -> None:
    """The sequence resolved from the cache's and its runtime config's env is written out; the
    cache's own entry is not repeated beside it."""
    written = [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "xet,http"}]
    job = plan.job_body(
        model_cache(env=written), attempt=1, bus=None, stall_timeout=60, protocol_sequence=("XET", "HTTP")
    )
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    said = [e for e in env if e["name"] == "AIM_DOWNLOADER_PROTOCOL"]
    assert said == [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "XET,HTTP"}]


def test_an_oci_sources_job_gets_the_caches_pull_secrets() -> None:
    secrets = [{"name": "regcred"}, {"name": "mirror"}]
    oci = model_cache(sourceUri="oci://registry.example.com/models/tiny:q4", imagePullSecrets=secrets)
    assert plan.download_env(oci) == [e for e in plan.download_env(oci) if e["name"].startswith("AIM_OCI_")]
    env = plan.job_body(oci, attempt=1, bus=None, stall_timeout=60)["spec"]["template"]["spec"]["containers"][
        0
    ]["env"]
    pulled = [e for e in env if e["name"].startswith("AIM_OCI_PULL_SECRET_")]
    assert pulled == [
        {
            "name": f"AIM_OCI_PULL_SECRET_{i}",
            "valueFrom": {"secretKeyRef": {"name": n, "key": ".dockerconfigjson"}},
        }
        for i, n in enumerate(["regcred", "mirror"])
    ]
    assert (
        plan.download_env(model_cache(imagePullSecrets=secrets)) == []
    )  # hf://: the secrets pull images only


def test_job_uses_kserves_convention_for_the_storage_initializer() -> None:
    obj = model_cache(modelDownloadImage="kserve/storage-initializer:v0.16.0")
    container = plan.job_body(obj, attempt=1, bus=None, stall_timeout=60)["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "command" not in container
    assert container["args"] == ["hf://acme/tiny", "/workspace/model-cache/acme/tiny"]
    assert plan.uses_kserve_initializer("docker.io/kserve/storage-initializer@sha256:abc")
    assert not plan.uses_kserve_initializer("ghcr.io/acme/aim-engine:1")


ARTIFACT = by_kind("aim.eai.amd.com", "AIMArtifact")
LEGACY_CACHE = by_kind("aim.silogen.ai", "AIMModelCache")


def test_an_artifact_naming_only_the_schemas_image_gets_the_operators_downloader_under_released() -> None:
    default = plan.SCHEMA_DOWNLOAD_IMAGE
    assert plan.uses_kserve_initializer(default)  # the seeds' default, KServe's initializer
    ours = "registry.example/aim-cache:0.1.0"

    def of(ref: Any, image: str) -> ModelCache:
        body = cache(modelDownloadImage=image)
        body["kind"] = ref.kind
        body["apiVersion"] = ref.api_version
        return ModelCache(ref, body)

    artifact = of(ARTIFACT, default)
    assert plan.download_image(artifact, ours, Behaviour.RELEASED) == ours
    container = plan.job_body(
        artifact,
        attempt=1,
        bus=None,
        stall_timeout=60,
        image=plan.download_image(artifact, ours, Behaviour.RELEASED),
    )["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == ours and container["command"] == ["aim-download"]
    # what a user wrote stays; the seeds' behaviour and the seeds' kinds keep the schema's default;
    # without an operator downloader there is nothing to put instead
    assert (
        plan.download_image(of(ARTIFACT, "ghcr.io/acme/dl:2"), ours, Behaviour.RELEASED)
        == "ghcr.io/acme/dl:2"
    )
    assert plan.download_image(artifact, ours, Behaviour.SEEDS) == default
    assert plan.download_image(of(MODEL_CACHE, default), ours, Behaviour.RELEASED) == default
    assert plan.download_image(of(LEGACY_CACHE, default), ours, Behaviour.RELEASED) == default
    assert plan.download_image(artifact, None, Behaviour.RELEASED) == default


def test_spec_hash_tracks_what_the_download_depends_on() -> None:
    base = plan.spec_hash(model_cache())
    assert plan.spec_hash(model_cache()) == base
    assert plan.spec_hash(model_cache(env=[{"name": "A", "value": "1"}])) != base
    assert plan.spec_hash(model_cache(size="10Gi")) == base
    assert plan.spec_hash(model_cache(imagePullSecrets=[{"name": "regcred"}])) != base


# -- retries and outcome -------------------------------------------------------------------------


def test_backoff_waits_the_cap_for_failures_only_a_user_can_fix() -> None:
    assert backoff(1, "ChecksumMismatch", jitter=None) == 60
    assert backoff(3, "DownloadStalled", jitter=None) == 240
    assert backoff(1, "AuthError", jitter=None) == backoff(1, "SourceNotFound", jitter=None) == 3600


def test_describe_outcome() -> None:
    text = describe_outcome(
        {
            "bytes": 3 * GIB // 2,
            "files": 3,
            "verified": ["sha256", "git-sha1"],
            "revision": "a" * 40,
            "seconds": 75,
        }
    )
    assert text == "1.5 GiB in 3 files; verified: sha256, git-sha1; revision aaaaaaaaaaaa; took 1m15s"


# -- template caches -----------------------------------------------------------------------------


def test_best_cache_is_ready_then_oldest() -> None:
    old = model_cache("old", "Progressing", "2026-01-01T00:00:00Z")
    new_ready = model_cache("new", "Ready", "2026-02-01T00:00:00Z")
    older_ready = model_cache("older", "Ready", "2025-12-01T00:00:00Z")
    assert best_of([old, new_ready]) is new_ready
    assert best_of([old, new_ready, older_ready]) is older_ready
    assert best_of([]) is None


def test_caches_condition() -> None:
    assert caches_condition([]).reason == "NoCaches"
    ready = caches_condition([("a", model_cache("a", "Ready")), ("b", model_cache("b", "Ready"))])
    assert (ready.status, ready.reason) == ("True", "AllCachesReady")
    failed = caches_condition([("a", model_cache("a", "Ready")), ("b", model_cache("b", "Failed"))])
    assert (failed.status, failed.reason) == ("False", "FailedReason")
    assert failed.message.startswith("model cache b:")
    assert caches_condition([("a", None)]).reason == "CreatingCaches"
    assert caches_condition([("a", model_cache("a"))]).reason == "CreatingCaches"  # no conditions yet
    waiting = caches_condition([("a", model_cache("a", "Progressing"))])
    assert (waiting.reason, waiting.message) == ("CachesNotReady", "waiting for a (Progressing)")


def test_template_scope_decides_where_to_look() -> None:
    group = "aim.eai.amd.com"
    assert [k.kind for k in template_kinds(group, "Namespace")] == ["AIMServiceTemplate"]
    assert [k.kind for k in template_kinds(group, "Cluster")] == ["AIMClusterServiceTemplate"]
    assert [k.kind for k in template_kinds(group, None)] == [
        "AIMServiceTemplate",
        "AIMClusterServiceTemplate",
    ]


def test_job_carries_the_operators_proxies_and_the_spec_cannot_set_its_own() -> None:
    """The proxy is exempt from the address checks (operator configuration), so a model cache's
    env cannot name one: the Job gets the cache service's ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``."""
    sneaky = [
        {"name": "HTTPS_PROXY", "value": "http://169.254.169.254:80"},
        {"name": "http_proxy", "value": "http://169.254.169.254:80"},
        {"name": "no_proxy", "value": "*"},
    ]
    policy = OutboundPolicy.from_env({"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": ".svc,10.0.0.0/8"})
    job = plan.job_body(model_cache(env=sneaky), attempt=1, bus=None, stall_timeout=60, outbound=policy.env())
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    proxies = [e for e in env if e["name"].lower().endswith("_proxy")]
    assert proxies == [
        {"name": "HTTPS_PROXY", "value": "http://proxy.corp:3128"},
        {"name": "NO_PROXY", "value": ".svc,10.0.0.0/8"},
    ]
    assert OutboundPolicy.from_env({e["name"]: e["value"] for e in env}).proxies == policy.proxies


def test_a_templates_sources_to_cache_are_discoverys_else_its_spec() -> None:
    """``status.modelSources`` as discovery wrote them (the legacy group's with a ``name``), else
    the template's ``spec.modelSources``; each read the same way whoever wrote it."""
    source = {"modelId": "acme/tiny", "sourceUri": "hf://acme/tiny", "size": "1Gi"}
    kind = by_kind("aim.eai.amd.com", "AIMServiceTemplate")
    obj: dict[str, Any] = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"modelName": "m", "modelSources": [source]},
    }
    (own,) = Template(kind, obj).cache_sources
    assert own == CacheSource(uri="hf://acme/tiny", model_id="acme/tiny", size="1Gi")
    obj["status"] = {
        "modelSources": [{"name": "llm", "sourceUri": "hf://acme/other", "env": [{"name": "A"}]}]
    }
    (found,) = Template(kind, obj).cache_sources
    assert found == CacheSource(uri="hf://acme/other", name="llm", env=({"name": "A"},))
