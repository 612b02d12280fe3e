"""The cache service and its Job programs agree (``aim_cache_jobs.contract``): the download Job the
service writes is what ``aim-download`` parses and reads, and a verify round's ``--known`` is what
``aim-model-inspect`` reuses."""

from __future__ import annotations

from pathlib import Path

from aim_cache import plan
from aim_cache.llmkube import verify
from aim_cache_jobs.contract import Known, object_arg, parse_object
from aim_cache_jobs.downloader.cli import build_parser
from aim_cache_jobs.downloader.settings import load_job
from aim_cache_jobs.inspect import inspect
from aimcore.api.bus import progress
from aimcore.api.bus.messages import ObjectRef
from aimcore.api.kinds import by_kind
from aimcore.domain.families.caches import ModelCache

MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
MODEL = by_kind("inference.llmkube.dev", "Model")


def test_the_download_job_the_service_writes_is_what_aim_download_reads() -> None:
    cache = ModelCache(
        MODEL_CACHE,
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMModelCache",
            "metadata": {"name": "mc", "namespace": "ns", "uid": "uid-mc"},
            "spec": {"sourceUri": "hf://acme/tiny", "modelDownloadImage": "ghcr.io/acme/aim-engine:1"},
        },
    )
    bus = plan.JobBus("nats://aim-nats:4222", "SU-seed", progress.key_from_seed("cache-seed"))
    job = plan.job_body(cache, attempt=1, bus=bus, stall_timeout=42, log_format="json")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert (args.source, args.dest, args.stall_timeout, args.uid) == (
        "hf://acme/tiny",
        Path("/workspace/model-cache/acme/tiny"),
        42.0,
        "uid-mc",
    )
    target = ObjectRef.of(MODEL_CACHE, "ns", "mc")
    assert parse_object(args.object) == target
    start = load_job({e["name"]: e["value"] for e in container["env"] if "value" in e})
    assert start.job.bus().url == "nats://aim-nats:4222" and start.job.bus().role == "download"
    assert start.job.progress_token == progress.token(bus.token_key, target, "uid-mc")
    assert start.job.log_format == "json"


def test_an_object_argument_round_trips() -> None:
    namespaced = ObjectRef.of(MODEL_CACHE, "team-a", "m.1")
    assert parse_object(object_arg(namespaced)) == namespaced
    cluster = ObjectRef(group="", version="v1", kind="Node", namespace=None, name="n1")
    assert object_arg(cluster) == "/v1/Node//n1" and parse_object(object_arg(cluster)) == cluster


def test_a_verify_rounds_known_result_is_what_aim_model_inspect_reuses(tmp_path: Path) -> None:
    model_file = tmp_path / "model.gguf"
    model_file.write_bytes(b"not a gguf")
    first = inspect(str(model_file), None)
    known = Known(first["size"], first["mtime"], first["sha256"])
    model = {"metadata": {"name": "m", "namespace": "ns", "uid": "uid-m"}}
    body = verify.job_body(
        MODEL,
        model,
        claim="c",
        claim_uid="uid-c",
        path="model.gguf",
        spec_digest="d",
        round_=2,
        attempt=1,
        known=known,
        image="aim-cache:0.1.0",
    )
    (container,) = body["spec"]["template"]["spec"]["containers"]
    assert container["imagePullPolicy"] == "IfNotPresent"  # the cache's own image, at its version
    (option,) = (a for a in container["args"] if a.startswith("--known="))
    again = inspect(str(model_file), Known.parse(option.removeprefix("--known=")))
    assert again["hashed"] is False and again["sha256"] == first["sha256"]
