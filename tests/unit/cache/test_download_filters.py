"""Download filters, pure: fnmatch semantics on repository-relative paths (include, then exclude),
a filter that keeps nothing refused, how a cache's filter is resolved (its own, its runtime
config's, the ``hf://`` default, ``{}`` for none; KServe's initializer takes none), that the Job's
arguments carry it to ``aim-download`` whatever the patterns hold, that a namespace config's filter
replaces the cluster's whole, and that a cache without a filter keeps its spec hash."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from aim_cache import plan
from aim_cache_jobs.downloader import DownloadError, Listing, RemoteFile
from aim_cache_jobs.downloader.cli import build_parser
from aim_cache_jobs.downloader.filters import NONE, DownloadFilter
from aimcore.api.kinds import by_kind
from aimcore.domain import immutability
from aimcore.domain.families.caches import ModelCache
from aimcore.domain.naming import go_json
from aimcore.domain.runtimeconfig import merge

MODEL_CACHE = by_kind("aim.eai.amd.com", "AIMModelCache")
DOWNLOADER = "ghcr.io/acme/aim-engine:1"
KSERVE = "kserve/storage-initializer:v0.16.0"
PATHS = ("config.json", "model-00001.safetensors", "tokenizer/tokenizer.json", "original/consolidated.pth")


def listing(*paths: str) -> Listing:
    files = tuple(RemoteFile(p, 10 * (i + 1), f"http://hub/{p}") for i, p in enumerate(paths))
    return Listing("hf://acme/tiny", "abc", files)


def cache(**spec: Any) -> ModelCache:
    body = {"sourceUri": "hf://acme/tiny", "modelDownloadImage": DOWNLOADER, **spec}
    obj = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModelCache",
        "metadata": {"name": "mc", "namespace": "ns", "uid": "uid-mc"},
        "spec": body,
    }
    return ModelCache(MODEL_CACHE, obj)


# -- matching ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keep", "kept"),
    [
        (NONE, set(PATHS)),
        (DownloadFilter.of(exclude=["*/*"]), {"config.json", "model-00001.safetensors"}),
        # * matches / (fnmatch): a pattern for a suffix reaches into subfolders
        (DownloadFilter.of(include=["*.json"]), {"config.json", "tokenizer/tokenizer.json"}),
        (DownloadFilter.of(include=["*.json"], exclude=["*/*"]), {"config.json"}),
        (
            DownloadFilter.of(include=["model-0000[0-9].safetensors", "config.json"]),
            {"config.json", "model-00001.safetensors"},
        ),
        (
            DownloadFilter.of(exclude=["original/*", "?onfig.json"]),
            {"model-00001.safetensors", "tokenizer/tokenizer.json"},
        ),
        # case matters, as on the Hub
        (DownloadFilter.of(exclude=["*.JSON"]), set(PATHS)),
    ],
)
def test_a_filter_keeps_what_fnmatch_says(keep: DownloadFilter, kept: set[str]) -> None:
    assert {p for p in PATHS if keep.keeps(p)} == kept
    filtered = keep.apply(listing(*PATHS))
    assert {f.path for f in filtered.files} == kept
    assert filtered.total_bytes == sum(f.size for f in listing(*PATHS).files if f.path in kept)


def test_a_filter_that_keeps_nothing_is_refused_naming_it() -> None:
    with pytest.raises(DownloadError) as refused:
        DownloadFilter.of(include=["*.gguf"]).apply(listing(*PATHS))
    assert refused.value.reason == "InvalidSource"
    assert "(include *.gguf) keeps none of the 4 files of hf://acme/tiny" in refused.value.message
    assert DownloadFilter.of(include=["*.gguf"]).apply(listing()).files == ()  # an empty source stays empty


def test_a_written_filter_must_be_lists_of_patterns() -> None:
    assert DownloadFilter.from_spec({}) == NONE and NONE.off
    assert DownloadFilter.from_spec({"include": ["a"], "exclude": ["b", "c"]}) == DownloadFilter(
        ("a",), ("b", "c")
    )
    for bad in ({"include": "*.json"}, {"exclude": [42]}, {"exclude": [""]}):
        with pytest.raises(ValueError, match="downloadFilter"):
            DownloadFilter.from_spec(bad)


# -- resolution --------------------------------------------------------------------------------


def config(keep: Any) -> dict[str, Any]:
    return {"storage": {"downloadFilter": keep}}


def test_the_caches_filter_then_the_configs_then_the_hf_default() -> None:
    own = {"include": ["*.safetensors"]}
    assert plan.download_filter(cache(downloadFilter=own), config({"exclude": ["x"]}), DOWNLOADER) == (
        DownloadFilter(("*.safetensors",))
    )
    assert plan.download_filter(cache(), config({"exclude": ["original/*"]}), DOWNLOADER) == DownloadFilter(
        exclude=("original/*",)
    )
    assert (
        plan.download_filter(cache(), {}, DOWNLOADER)
        == plan.HF_DEFAULT_FILTER
        == DownloadFilter(exclude=("*/*",))
    )
    # {} is no filtering, at either level
    assert plan.download_filter(cache(downloadFilter={}), {}, DOWNLOADER) == NONE
    assert plan.download_filter(cache(), config({}), DOWNLOADER) == NONE
    # the default is for hf:// only
    s3 = cache(sourceUri="s3://bucket/acme/tiny", modelId="acme/tiny")
    assert plan.download_filter(s3, {}, DOWNLOADER) == NONE


def test_kserves_initializer_takes_no_filter() -> None:
    # the defaults do not apply to it: it downloads every file, and the size probe must count them
    assert plan.download_filter(cache(), config({"exclude": ["*/*"]}), KSERVE) == NONE
    assert plan.download_filter(cache(downloadFilter={}), {}, KSERVE) == NONE
    with pytest.raises(DownloadError) as refused:
        plan.download_filter(cache(downloadFilter={"exclude": ["*/*"]}), {}, KSERVE)
    assert refused.value.reason == plan.FILTER_UNSUPPORTED
    assert "exclude */*" in refused.value.message and "storage initializer" in refused.value.message


def test_a_config_filter_that_is_not_lists_is_invalid_source() -> None:
    with pytest.raises(DownloadError) as refused:
        plan.download_filter(cache(), config({"include": "*.json"}), DOWNLOADER)
    assert refused.value.reason == "InvalidSource"
    assert refused.value.message.startswith("storage.downloadFilter: ")
    with pytest.raises(DownloadError, match="must be an object"):
        plan.download_filter(cache(), config(["*.json"]), DOWNLOADER)


def test_a_namespace_configs_filter_replaces_the_clusters_whole() -> None:
    cluster = {"storage": {"downloadFilter": {"exclude": ["*/*"]}, "pvcHeadroomPercent": 20}}
    assert merge(cluster, config({}))["storage"] == {"downloadFilter": {}, "pvcHeadroomPercent": 20}
    only = merge(cluster, config({"include": ["*.json"]}))["storage"]["downloadFilter"]
    assert only == {"include": ["*.json"]}


# -- the Job and the spec hash -----------------------------------------------------------------


def test_the_job_carries_the_filter_to_aim_download() -> None:
    keep = DownloadFilter.of(include=["*.json", "a,b", "-dash"], exclude=["*/*"])
    job = plan.job_body(cache(), attempt=1, bus=None, stall_timeout=60, keep=keep)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert DownloadFilter.of(args.include, args.exclude) == keep
    plain = plan.job_body(cache(), attempt=1, bus=None, stall_timeout=60)
    (container,) = plain["spec"]["template"]["spec"]["containers"]
    assert not any(a.startswith(("--include", "--exclude")) for a in container["args"])


def test_a_cache_without_a_filter_keeps_its_spec_hash() -> None:
    # the hash of the five fields it was made of before filters existed: no cache downloads again
    before = {
        k: cache().obj["spec"].get(k)
        for k in ("sourceUri", "env", "modelDownloadImage", "imagePullSecrets", "modelId")
    }
    without = plan.spec_hash(cache())
    assert without == hashlib.sha256(go_json(before).encode()).hexdigest()[:12]
    assert plan.spec_hash(cache(downloadFilter={})) != without
    assert plan.spec_hash(cache(downloadFilter={"include": ["a"]})) != plan.spec_hash(
        cache(downloadFilter={})
    )


def test_a_changed_filter_is_refused_once_recorded() -> None:
    fields = ("downloadFilter",)
    first = cache(downloadFilter={"include": ["a"]}).obj
    record = immutability.check(first, fields).record
    assert record == '{"downloadFilter":{"include":["a"]}}'
    changed = cache(downloadFilter={"include": ["b"]}).obj
    changed["metadata"]["annotations"] = {immutability.ANNOTATION: record}
    refused = immutability.check(changed, fields).refused
    assert refused is not None and "spec.downloadFilter is immutable once set" in refused
