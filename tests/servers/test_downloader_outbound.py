"""The downloader under the outbound address policy, against real servers: a Hugging Face endpoint,
an S3 endpoint or a model URL that names a refused address (or redirects to one) is refused with
``AddressNotAllowed`` before anything connects, on every path that opens connections (the quick Hub
listing, the ``huggingface_hub`` fallback, boto3's listing, the transfer, the ``aim-download`` CLI
of download Jobs). "Another host" is a server on 127.0.0.2, which the tests' policy (127.0.0.1 and
localhost allow-listed) refuses as loopback; its request log shows whether anything reached it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from aim_cache_jobs.downloader import DownloadError, download, hfsource, list_source
from aim_dev.local.hub import HubServer
from aim_dev.local.s3 import S3Server
from aimcore.domain.outbound import OutboundPolicy
from tests.file_server import FileServer
from tests.helpers import LOOPBACK
from tests.servers.test_downloader import last_json, new_repo, run_cli

METADATA = "http://169.254.169.254"


@pytest.fixture
def other(tmp_path: Path) -> Iterator[FileServer]:
    """A server on another host (127.0.0.2): it answers anything (404 or a file) and logs it."""
    root = tmp_path / "other"
    root.mkdir()
    (root / "model.bin").write_bytes(b"\x00" * 1024)
    server = FileServer(root, host="127.0.0.2")
    yield server
    server.stop()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[FileServer]:
    """An allowed server (127.0.0.1) whose paths can redirect elsewhere."""
    root = tmp_path / "site"
    root.mkdir()
    server = FileServer(root)
    yield server
    server.stop()


def refused(error: DownloadError) -> None:
    assert error.reason == "AddressNotAllowed"
    assert error.transient is False
    assert "not allowed" in error.message


# -- Hugging Face -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "endpoint", [METADATA, "http://metadata.google.internal", "http://[fd00:ec2::254]", "http://2852039166"]
)
async def test_an_hf_endpoint_at_the_metadata_service_is_refused(endpoint: str) -> None:
    with pytest.raises(DownloadError) as err:
        await list_source(
            "hf://org/model", {"HF_ENDPOINT": endpoint}, policy=OutboundPolicy(allow_private=True)
        )
    refused(err.value)


async def test_an_hf_endpoint_on_a_refused_host_gets_no_request(other: FileServer) -> None:
    with pytest.raises(DownloadError) as err:
        await list_source("hf://org/model", {"HF_ENDPOINT": other.base}, policy=LOOPBACK)
    refused(err.value)
    assert "127.0.0.2 (loopback)" in err.value.message
    assert other.requests == []


async def test_a_hub_api_redirect_to_a_refused_host_is_not_followed(
    site: FileServer, other: FileServer
) -> None:
    """The quick listing refuses the redirect; the refusal is final (no fallback that would try again)."""
    site.redirects["/api/models/org/model"] = {"Location": f"{other.base}/api/models/org/model"}
    with pytest.raises(DownloadError) as err:
        await list_source("hf://org/model", {"HF_ENDPOINT": site.base}, policy=LOOPBACK)
    refused(err.value)
    assert site.requests == [("GET", "/api/models/org/model?blobs=True")]
    assert other.requests == []


async def test_the_huggingface_hub_fallback_is_guarded_too(
    other: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing through ``huggingface_hub`` (error mapping, repositories without sizes) opens its
    connections through the policy as well."""
    monkeypatch.setattr(hfsource, "_list_hf_direct", lambda *_: None)
    with pytest.raises(DownloadError) as err:
        await list_source("hf://org/model", {"HF_ENDPOINT": other.base}, policy=LOOPBACK)
    refused(err.value)
    assert other.requests == []


async def test_the_fallback_follows_redirects_only_where_allowed(
    site: FileServer, other: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hfsource, "_list_hf_direct", lambda *_: None)
    site.redirects["/api/models/org/model"] = {"Location": f"{other.base}/api/models/org/model"}
    with pytest.raises(DownloadError) as err:
        await list_source("hf://org/model", {"HF_ENDPOINT": site.base}, policy=LOOPBACK)
    refused(err.value)
    assert [path.split("?")[0] for _, path in site.requests] == ["/api/models/org/model"]
    assert other.requests == []


async def test_a_real_hub_is_listed_when_allowed(hub_server: HubServer) -> None:
    repo_id = new_repo(hub_server, {"config.json": b"{}"})
    env = {"HF_ENDPOINT": hub_server.endpoint}
    assert len((await list_source(f"hf://{repo_id}", env, policy=LOOPBACK)).files) == 1
    by_name = {"HF_ENDPOINT": hub_server.endpoint.replace("127.0.0.1", "localhost")}
    strict = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}))
    with pytest.raises(DownloadError) as err:  # the same hub by a name that resolves to loopback
        await list_source(f"hf://{repo_id}", by_name, policy=strict)
    refused(err.value)


# -- S3 ---------------------------------------------------------------------------------------------


async def test_an_s3_endpoint_on_a_refused_host_gets_no_request(other: FileServer) -> None:
    env = {"AWS_ENDPOINT_URL": other.base, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    with pytest.raises(DownloadError) as err:
        await list_source("s3://bucket/model", env, policy=LOOPBACK)
    refused(err.value)
    assert "s" not in err.value.message.split() and "k" not in err.value.message.split()
    assert other.requests == []


async def test_an_s3_endpoint_refused_by_name_at_connect_time(s3_server: S3Server) -> None:
    """``localhost`` resolves to loopback, which this policy refuses: boto3's connections judge the
    resolved address (the same endpoint by its allow-listed address works)."""
    bucket = f"outbound-{secrets.token_hex(3)}"
    s3_server.put_model(bucket, "org/model", {"config.json": b"{}"})
    strict = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}))
    env = s3_server.credentials_env()
    assert len((await list_source(f"s3://{bucket}/org/model", env, policy=strict)).files) == 1
    named = s3_server.endpoint.replace("127.0.0.1", "localhost")
    by_name = {**env, "AWS_ENDPOINT_URL": named, "AWS_ENDPOINT_URL_S3": named}
    with pytest.raises(DownloadError) as err:
        await list_source(f"s3://{bucket}/org/model", by_name, policy=strict)
    refused(err.value)
    assert "'localhost' resolves to" in err.value.message


async def test_an_s3_endpoint_at_the_metadata_service_is_refused() -> None:
    env = {"AWS_ENDPOINT_URL": METADATA}
    with pytest.raises(DownloadError) as err:
        await list_source("s3://bucket/model", env, policy=OutboundPolicy(allow_private=True))
    refused(err.value)


# -- URLs and the transfer -----------------------------------------------------------------------------


async def test_a_download_redirected_to_a_refused_host_is_refused(
    site: FileServer, other: FileServer, tmp_path: Path
) -> None:
    (site.root / "model.bin").write_bytes(b"\x00" * 1024)
    listing_url = f"{site.base}/model.bin"
    await list_source(listing_url, {}, policy=LOOPBACK)  # listed from the allowed host
    site.redirects["/model.bin"] = {"Location": f"{other.base}/model.bin"}
    with pytest.raises(DownloadError) as err:
        await download(listing_url, tmp_path / "dest", env={}, stall_timeout=5, policy=LOOPBACK)
    refused(err.value)
    assert other.requests == []


# -- the CLI of download Jobs ------------------------------------------------------------------------


async def test_the_cli_enforces_the_policy_its_job_env_carries(other: FileServer, tmp_path: Path) -> None:
    """The cache service puts its policy on the Job as AIM_OUTBOUND_*; the downloader obeys it."""
    env = {"HF_ENDPOINT": other.base}
    code, out, err = await run_cli(["hf://org/model", str(tmp_path / "a")], env)
    assert code == 1, err
    result = last_json(out)
    assert (result["result"], result["reason"]) == ("error", "AddressNotAllowed")
    assert other.requests == []
    allowed = {**env, "AIM_OUTBOUND_ALLOW_PRIVATE": "true"}
    code, out, _ = await run_cli(["hf://org/model", str(tmp_path / "b")], allowed)
    assert last_json(out)["reason"] == "SourceNotFound"  # it asked: the server has no such repository
    assert other.requests


async def test_the_cli_refuses_a_bad_policy_setting(tmp_path: Path) -> None:
    env = {"AIM_OUTBOUND_ALLOW_PRIVATE": "maybe"}
    code, out, _ = await run_cli(["hf://org/model", str(tmp_path / "a")], env)
    assert code == 2
    assert "AIM_OUTBOUND_ALLOW_PRIVATE" in last_json(out)["message"]
