"""Sources nothing answers for, or that may not be reached, without any server: a Hub or an OCI
registry nothing listens for is named as unreachable (transient) by the downloader, and a registry
at the metadata address refused before connecting; the registry client names an unreachable
registry; a remote GGUF header read names a refused connection and refuses a bad URL (the same
clients against real servers: ``tests/servers``, ``tests/oci``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aim_cache_jobs.downloader import DownloadError, download, list_source
from aim_cache_jobs.gguf import GGUFError, read_remote
from aim_dev.local.processes import free_port
from aimcore.domain.oci import RegistryClient, RegistryUnreachable
from aimcore.domain.outbound import OutboundPolicy
from tests.helpers import LOOPBACK


async def test_unreachable_hub(tmp_path: Path) -> None:
    with pytest.raises(DownloadError) as info:
        await download("hf://org/model", tmp_path, env={"HF_ENDPOINT": "http://127.0.0.1:9"}, policy=LOOPBACK)
    assert info.value.reason == "SourceUnreachable" and info.value.transient


async def test_a_registry_at_the_metadata_address_is_refused() -> None:
    with pytest.raises(DownloadError) as err:
        await list_source("oci://169.254.169.254/models/x:v1", {}, policy=OutboundPolicy(allow_private=True))
    assert err.value.reason == "AddressNotAllowed"


async def test_an_unreachable_registry_is_named() -> None:
    with pytest.raises(DownloadError) as err:
        await list_source(f"oci://127.0.0.1:{free_port()}/models/x:v1", {}, policy=LOOPBACK)
    assert err.value.reason == "SourceUnreachable" and err.value.transient is True


async def test_unreachable_registry() -> None:
    port = free_port()  # nothing listens there
    async with RegistryClient(timeout=5, policy=LOOPBACK) as client:
        with pytest.raises(RegistryUnreachable) as info:
            await client.labels(f"127.0.0.1:{port}/aim/x:1.0")
        with pytest.raises(RegistryUnreachable):
            await client.catalog(f"localhost:{port}")
    assert info.value.transient
    assert f"127.0.0.1:{port}" in str(info.value)


def test_connection_refused_and_bad_urls() -> None:
    with pytest.raises(GGUFError, match="failed"):
        read_remote("http://127.0.0.1:9/model.gguf", timeout=2, policy=LOOPBACK)
    with pytest.raises(GGUFError, match="only http"):
        read_remote("ftp://example.com/model.gguf", policy=LOOPBACK)
    with pytest.raises(GGUFError, match="invalid characters"):
        read_remote(
            "http://127.0.0.1:9/model.gguf",
            headers={"Authorization": "Bearer x\r\nX-Evil: 1"},
            policy=LOOPBACK,
        )
