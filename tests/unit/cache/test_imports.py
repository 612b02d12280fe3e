"""Importing a filled volume (``pvc://CLAIM/PATH``), pure: what the spec accepts, what the check in
place finds (a manifest's files with their sizes and sha256, or weights at least), the Job that
reads the claim (read-only, never a volume of its own), and how a service mounts an import (its
directory, read-only)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from aim_cache import imports
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile
from aim_cache_jobs.downloader.manifest import ManifestFile, build, write_manifest
from aim_cache_jobs.inspect import inspect_dir
from aim_deployer.inference import CacheMount, cache_mount, cache_volume
from aimcore.api.kinds import by_kind
from aimcore.api.sourcerules import pvc_error, pvc_parts, source_uri_error
from aimcore.domain.families.caches import ModelCache

MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
FILES = {"config.json": b"{}", "model.safetensors": bytes(range(256)) * 16, "tok/tokenizer.json": b"[]"}


@pytest.mark.parametrize(
    ("uri", "parts"),
    [
        ("pvc://models/llama", ("models", "llama")),
        ("pvc://models", ("models", "")),
        ("pvc://models//a/b/", ("models", "a/b")),
        ("pvc://team.models/x", ("team.models", "x")),
    ],
)
def test_a_pvc_source_names_a_claim_and_a_directory(uri: str, parts: tuple[str, str]) -> None:
    assert pvc_error(uri) is None and source_uri_error(uri) is None
    assert pvc_parts(uri) == parts
    assert imports.parse(uri) == imports.Claim(*parts)


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("pvc://Models/x", "is not a PersistentVolumeClaim name"),
        ("pvc:///x", "is not a PersistentVolumeClaim name"),
        ("pvc://models/../other", "must stay inside the claim"),
        ("pvc://models/a/./b", "must stay inside the claim"),
    ],
)
def test_a_pvc_source_that_leaves_its_claim_is_refused(uri: str, says: str) -> None:
    error = source_uri_error(uri)
    assert error is not None and says in error and "pvc://{claim}/{directory}" in error


def filled(root: Path, files: dict[str, bytes] = FILES, *, manifest: bool = True) -> Path:
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    if manifest:
        listing = Listing(
            "hf://acme/tiny", "abc", tuple(RemoteFile(p, len(d), f"http://h/{p}") for p, d in files.items())
        )
        entries = (
            ManifestFile(p, len(d), (Digest("sha256", hashlib.sha256(d).hexdigest()),))
            for p, d in files.items()
        )
        write_manifest(root, build(listing, entries, completed_at=1.0))
    return root


def test_a_directory_an_earlier_download_filled_is_checked_against_its_manifest(tmp_path: Path) -> None:
    verdict = inspect_dir(str(filled(tmp_path)))
    assert verdict == {
        "result": "ok",
        "files": 3,
        "bytes": sum(len(d) for d in FILES.values()),
        "verified": ["size", "sha256"],
        "manifest": True,
    }


@pytest.mark.parametrize(
    ("damage", "reason", "says"),
    [
        (
            lambda root: (root / "tok/tokenizer.json").unlink(),
            "MissingFiles",
            "1 file(s) of the manifest are missing: tok/tokenizer.json",
        ),
        (
            lambda root: (root / "config.json").write_bytes(b"{ }"),
            "SizeMismatch",
            "config.json (3 bytes, the manifest says 2)",
        ),
        (
            lambda root: (root / "config.json").write_bytes(b"[]"),
            "ChecksumMismatch",
            "1 file(s) fail their sha256: config.json",
        ),
    ],
)
def test_a_damaged_directory_is_refused_naming_the_files(
    tmp_path: Path, damage: Any, reason: str, says: str
) -> None:
    root = filled(tmp_path)
    damage(root)
    verdict = inspect_dir(str(root))
    assert verdict["result"] == "error" and verdict["reason"] == reason
    assert says in verdict["message"]


def test_without_a_manifest_a_directory_must_hold_weights(tmp_path: Path) -> None:
    weights = filled(tmp_path / "w", manifest=False)
    assert inspect_dir(str(weights)) == {
        "result": "ok",
        "files": 3,
        "bytes": sum(len(d) for d in FILES.values()),
        "verified": ["present"],
        "manifest": False,
    }
    configs = filled(tmp_path / "c", {"config.json": b"{}"}, manifest=False)
    refused = inspect_dir(str(configs))
    assert refused["reason"] == "MissingFiles" and "holds no model weights" in refused["message"]
    missing = inspect_dir(str(tmp_path / "nowhere"))
    assert missing["reason"] == "SourceNotFound" and "does not exist in the claim" in missing["message"]


def cache(uri: str = "pvc://models/llama") -> ModelCache:
    obj = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModelCache",
        "metadata": {"name": "llama", "namespace": "ns", "uid": "uid-llama"},
        "spec": {"sourceUri": uri, "modelId": "meta/llama"},
    }
    return ModelCache(MODEL_CACHE, obj)


def test_the_import_job_reads_the_claim_read_only_and_makes_no_volume() -> None:
    job = imports.job_body(cache(), imports.parse("pvc://models/llama"), attempt=2, image="aim-cache:1")
    pod = job["spec"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "model-source", "persistentVolumeClaim": {"claimName": "models", "readOnly": True}}
    ]
    (container,) = pod["containers"]
    assert container["command"] == ["aim-model-inspect"] and container["args"] == [
        "--dir",
        "/model-source/llama",
    ]
    assert container["volumeMounts"] == [
        {"name": "model-source", "mountPath": "/model-source", "readOnly": True}
    ]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert job["metadata"]["ownerReferences"][0]["uid"] == "uid-llama"
    assert job["metadata"]["annotations"]["aim.eai.amd.com/download-attempt"] == "2"
    root = imports.job_body(cache("pvc://models"), imports.parse("pvc://models"), attempt=1, image="i")
    assert root["spec"]["template"]["spec"]["containers"][0]["args"] == ["--dir", "/model-source"]
    assert imports.job_name(cache(), 1) != imports.job_name(cache(), 2)


def test_a_claim_holds_its_bound_capacity_else_its_request() -> None:
    claim: dict[str, Any] = {"spec": {"resources": {"requests": {"storage": "10Gi"}}}}
    assert imports.capacity(claim) == "10Gi"
    assert imports.capacity({**claim, "status": {"capacity": {"storage": "16Gi"}}}) == "16Gi"
    assert imports.capacity({}) is None


def test_a_service_mounts_an_import_read_only_at_its_directory() -> None:
    mount = CacheMount(
        "llama", "models", "/workspace/model-cache/meta/llama", sub_path="llama", read_only=True
    )
    assert cache_mount("v", mount) == {
        "name": "v",
        "mountPath": "/workspace/model-cache/meta/llama",
        "subPath": "llama",
        "readOnly": True,
    }
    assert cache_volume("v", mount) == {
        "name": "v",
        "persistentVolumeClaim": {"claimName": "models", "readOnly": True},
    }
    own = CacheMount("llama", "llama-cache-1", "/workspace/model-cache/meta/llama")
    assert cache_mount("v", own) == {"name": "v", "mountPath": "/workspace/model-cache/meta/llama"}
    assert cache_volume("v", own) == {"name": "v", "persistentVolumeClaim": {"claimName": "llama-cache-1"}}
