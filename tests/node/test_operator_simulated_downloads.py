"""The released original's own end-to-end scenarios of download reporting, on the real node: its
``aimartifact/protocol-switching`` and ``aimartifact/progress-and-verification`` tests create
AIMArtifacts whose ``spec.env`` sets the downloader's debug switches (``AIM_DEBUG_SIMULATE_*``,
docs/caching.md#debug-simulation-the-released-originals-switches) and assert what their status
says while a real download Job runs on the node. The same objects here, the same assertions.

Under the released behaviour the artifacts name no download image, as the original's do (the
operator's downloader runs them); under the seeds' they name it (the schema's default there is
KServe's storage initializer, which has no switches). Their claims use the stack's provisioner."""

from __future__ import annotations

from typing import Any

import pytest

from aim_dev.local.provisioner import STORAGE_CLASS
from aimcore.api.kinds import JOB
from aimcore.runtime import Kube
from tests.node.helpers import (
    BEHAVIOUR,
    NODE_TIMEOUT,
    aim,
    conditions,
    ran_on_the_node,
    state,
    summary,
    wait_for,
)

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

ARTIFACT = aim("AIMArtifact")
DOWNLOADER = "aim-cache:0.1.0"  # the overlay's AIM_CACHE_DOWNLOAD_IMAGE


def artifact(name: str, source: str, size: str, **env: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "sourceUri": source,
        "size": size,
        "storageClassName": STORAGE_CLASS,
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    if not BEHAVIOUR.released:
        spec["modelDownloadImage"] = DOWNLOADER
    return {
        "apiVersion": ARTIFACT.api_version,
        "kind": ARTIFACT.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


def download_complete(obj: dict[str, Any]) -> tuple[str, str]:
    cond = conditions(obj).get("DownloadComplete") or {}
    return cond.get("status", ""), cond.get("reason", "")


async def test_the_originals_protocol_switching_scenario(api: Kube, namespace: str) -> None:
    """XET fails and HTTP succeeds: Ready, ``status.download`` HTTP 2/2; both fail: Failed on HTTP 2/2."""
    switches = {
        "AIM_DOWNLOADER_PROTOCOL": "XET,HTTP",
        "AIM_DEBUG_SIMULATE_HF_DOWNLOAD": "true",
        "AIM_DEBUG_SIMULATE_HF_DURATION": "2",
        "EXPECTED_SIZE_BYTES": "102400",
        "PROGRESS_INTERVAL": "3",
        "STALL_TIMEOUT": "120",
    }
    fallback = artifact(
        "protocol-fallback",
        "hf://test-org/test-model",
        "10Mi",
        **switches,
        AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS="XET",
    )
    await api.create(ARTIFACT, fallback, namespace)
    done = await wait_for(
        api,
        ARTIFACT,
        namespace,
        "protocol-fallback",
        lambda a: state(a) == "Ready",
        timeout=120,
        what="Ready",
    )
    assert done["status"]["download"] == {
        "protocol": "HTTP",
        "attempt": 2,
        "totalAttempts": 2,
        "protocolSequence": "XET,HTTP",
        "message": "Complete",
    }, summary(done)
    [job] = (await api.list(JOB, namespace, label_selector="aim.eai.amd.com/component=download"))[0]
    await ran_on_the_node(api, namespace, job["metadata"]["name"], DOWNLOADER)

    all_fail = artifact(
        "protocol-all-fail",
        "hf://test-org/test-model",
        "10Mi",
        **switches,
        AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS="XET,HTTP",
    )
    await api.create(ARTIFACT, all_fail, namespace)

    def failed_on_http(obj: dict[str, Any]) -> bool:
        download = (obj.get("status") or {}).get("download") or {}
        on_last = (download.get("protocol"), download.get("attempt")) == ("HTTP", 2)
        return state(obj) == "Failed" and on_last

    failed = await wait_for(
        api, ARTIFACT, namespace, "protocol-all-fail", failed_on_http, timeout=240, what="Failed on HTTP 2/2"
    )
    download = failed["status"]["download"]
    assert (download["totalAttempts"], download["protocolSequence"]) == (2, "XET,HTTP"), summary(failed)


async def test_the_originals_progress_and_verification_scenario(api: Kube, namespace: str) -> None:
    """Downloading below 100 %, then 100 % and Verifying, then Ready and Verified; a verification
    that fails after 100 %: Failed, ``VerificationFailed``, progress N/A."""
    phases = {
        "AIM_DEBUG_SIMULATE_DOWNLOAD": "true",
        "AIM_DEBUG_DOWNLOAD_DURATION": "6",
        "AIM_DEBUG_VERIFY_DURATION": "6",
        "EXPECTED_SIZE_BYTES": "1048576",
        "PROGRESS_INTERVAL": "3",
        "STALL_TIMEOUT": "120",
    }
    await api.create(ARTIFACT, artifact("progress-success", "hf://gpt2", "10Mi", **phases), namespace)
    seen: list[tuple[str | None, int | None, tuple[str, str]]] = []

    def ready(obj: dict[str, Any]) -> bool:
        percentage = ((obj.get("status") or {}).get("progress") or {}).get("percentage")
        seen.append((state(obj), percentage, download_complete(obj)))
        return state(obj) == "Ready"

    done = await wait_for(api, ARTIFACT, namespace, "progress-success", ready, timeout=120, what="Ready")
    downloading = [
        p for s, p, c in seen if s == "Progressing" and c == ("False", "Downloading") and p is not None
    ]
    verifying = [p for s, p, c in seen if s == "Progressing" and c == ("True", "Verifying")]
    assert downloading and max(downloading) <= 99, seen
    assert verifying and set(verifying) == {100}, seen
    assert done["status"]["progress"]["percentage"] == 100, summary(done)
    assert done["status"]["progress"]["displayPercentage"] == "100 %", summary(done)
    assert download_complete(done) == ("True", "Verified"), summary(done)
    assert conditions(done)["Ready"]["status"] == "True", summary(done)

    verify_fail = artifact(
        "progress-verify-fail", "hf://gpt2", "10Mi", **{**phases, "AIM_DEBUG_VERIFY_FAIL": "true"}
    )
    verify_fail["spec"]["env"] = [
        e
        if e["name"] not in ("AIM_DEBUG_DOWNLOAD_DURATION", "AIM_DEBUG_VERIFY_DURATION")
        else {**e, "value": "5"}
        for e in verify_fail["spec"]["env"]
    ]
    await api.create(ARTIFACT, verify_fail, namespace)

    def verification_failed(obj: dict[str, Any]) -> bool:
        return state(obj) == "Failed" and download_complete(obj) == ("False", "VerificationFailed")

    failed = await wait_for(
        api,
        ARTIFACT,
        namespace,
        "progress-verify-fail",
        verification_failed,
        timeout=240,
        what="VerificationFailed",
    )
    assert failed["status"]["progress"]["displayPercentage"] == "N/A", summary(failed)
    assert conditions(failed)["Ready"]["status"] == "False", summary(failed)
