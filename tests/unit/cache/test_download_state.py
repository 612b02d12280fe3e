"""An AIMArtifact's download reporting (aim_cache_jobs.downloader.downloadstate): the released
original's ``DownloadComplete`` texts, ``status.download``, and which kinds get them; the download's
progress offers carry them for an AIMArtifact only, and the cache service relays such an offer."""

from __future__ import annotations

import pytest

from aim_cache_jobs.downloader import protocols
from aim_cache_jobs.downloader.downloadstate import (
    Attempt,
    Phase,
    download_complete,
    download_fields,
    reports_download,
)
from aim_cache_jobs.downloader.errors import DownloadError
from aim_cache_jobs.downloader.progress import Progress
from aim_cache_jobs.downloader.report import progress_report
from aimcore.api.bus import progress
from aimcore.api.bus.messages import ConditionReport, ObjectRef
from aimcore.api.errors import PermanentError
from aimcore.api.kinds import GROUP_AIM, GROUP_LEGACY

ARTIFACT = ObjectRef(group=GROUP_AIM, version="v1alpha1", kind="AIMArtifact", namespace="a", name="c")
MODEL_CACHE = ObjectRef(group=GROUP_AIM, version="v1alpha1", kind="AIMModelCache", namespace="a", name="c")
FIRST = protocols.first_attempt(protocols.DEFAULT)
KEY = progress.key_from_seed("SUAcacheserviceseed")


@pytest.mark.parametrize(
    ("phase", "bytes_in", "said"),
    [
        (Phase.DOWNLOADING, False, ("False", "Downloading", "Download in progress")),
        (Phase.VERIFYING, False, ("True", "Verifying", "Download complete, verifying integrity...")),
        (Phase.SUCCEEDED, False, ("True", "Verified", "Download and verification complete")),
        (Phase.FAILED, True, ("False", "VerificationFailed", "Download completed but verification failed")),
        (Phase.FAILED, False, ("False", "Downloading", "Download failed before completion")),
    ],
)
def test_download_complete_says_what_the_released_original_says(
    phase: Phase, bytes_in: bool, said: tuple[str, str, str]
) -> None:
    found = download_complete(phase, bytes_in=bytes_in)
    assert found.type == "DownloadComplete"
    assert (found.status, found.reason, found.message) == said


def test_status_download_names_the_attempt_and_the_sequence() -> None:
    assert download_fields(Phase.SUCCEEDED, FIRST) == {
        "protocol": "HF_TRANSFER",
        "attempt": 1,
        "totalAttempts": 2,
        "protocolSequence": "HF_TRANSFER,HTTP",
        "message": "Complete",
    }
    second = Attempt(protocol="HTTP", number=2, sequence=("XET", "HTTP"))
    assert download_fields(Phase.FAILED, second) == {
        "protocol": "HTTP",
        "attempt": 2,
        "totalAttempts": 2,
        "protocolSequence": "XET,HTTP",
        "message": "Failed",
    }
    assert download_fields(Phase.DOWNLOADING, FIRST)["message"] == "Downloading"
    assert download_fields(Phase.VERIFYING, FIRST)["message"] == "Verifying"


def test_an_attempt_survives_the_result_line_and_nonsense_does_not() -> None:
    second = Attempt(protocol="HTTP", number=2, sequence=("XET", "HTTP"))
    assert Attempt.from_record(second.record()) == second
    assert Attempt.from_record(None) is None
    assert Attempt.from_record({"protocol": "HTTP", "attempt": 3, "protocolSequence": "XET,HTTP"}) is None
    assert Attempt.from_record({"protocol": "XET", "attempt": 2, "protocolSequence": "XET,HTTP"}) is None
    assert Attempt.from_record({"protocol": "HTTP", "attempt": "2", "protocolSequence": "XET,HTTP"}) is None


def test_only_the_artifact_kind_reports_the_download() -> None:
    assert reports_download(GROUP_AIM, "AIMArtifact")
    assert not reports_download(GROUP_AIM, "AIMModelCache")  # the seed's schema has no status.download
    assert not reports_download(GROUP_LEGACY, "AIMModelCache")
    assert not reports_download("inference.llmkube.dev", "Model")


def test_an_artifacts_progress_offer_carries_download_complete_and_the_attempt() -> None:
    rep = progress_report(
        ARTIFACT, "uid-1", Progress(10, 100, 0, 1, "downloading"), None, now=1.0, attempt=FIRST
    )
    said = {c.type: (c.status, c.reason) for c in rep.conditions}
    assert said == {"DownloadReady": ("False", "Downloading"), "DownloadComplete": ("False", "Downloading")}
    assert rep.fields["download"]["message"] == "Downloading"
    assert rep.fields["progress"]["percentage"] == 10
    verifying = progress_report(
        ARTIFACT, "uid-1", Progress(100, 100, 0, 1, "verifying"), None, now=2.0, attempt=FIRST
    )
    said = {c.type: (c.status, c.reason) for c in verifying.conditions}
    assert said["DownloadComplete"] == ("True", "Verifying")
    assert verifying.fields["download"]["message"] == "Verifying"
    # the cache service relays it as it is
    token = progress.token(KEY, ARTIFACT, "uid-1")
    assert progress.vet(KEY, progress.subject(ARTIFACT), verifying.encode(), token) == verifying


def test_a_model_caches_progress_offer_stays_the_seeds() -> None:
    rep = progress_report(
        MODEL_CACHE, "uid-1", Progress(10, 100, 0, 1, "downloading"), None, now=1.0, attempt=FIRST
    )
    assert [c.type for c in rep.conditions] == ["DownloadReady"]
    assert set(rep.fields) == {"progress"}


@pytest.mark.parametrize(
    "condition",
    [
        # only the service that saw the Job end may say it ended
        ConditionReport(type="DownloadComplete", status="True", reason="Verified", message="forged"),
        ConditionReport(type="DownloadComplete", status="False", reason="VerificationFailed"),
        ConditionReport(type="DownloadComplete", status="True", reason="Downloading"),
    ],
)
def test_an_offer_may_not_say_how_the_download_ended(condition: ConditionReport) -> None:
    rep = progress_report(
        ARTIFACT, "uid-1", Progress(10, 100, 0, 1, "downloading"), None, now=1.0, attempt=FIRST
    )
    forged = rep.model_copy(update={"conditions": (*rep.conditions[:1], condition)})
    token = progress.token(KEY, ARTIFACT, "uid-1")
    with pytest.raises(PermanentError, match="other conditions"):
        progress.vet(KEY, progress.subject(ARTIFACT), forged.encode(), token)


@pytest.mark.parametrize(
    ("written", "sequence"),
    [
        (None, ("HF_TRANSFER", "HTTP")),
        ("  ", ("HF_TRANSFER", "HTTP")),
        ("HTTP", ("HTTP",)),
        ("xet, Hf_Transfer ,http", ("XET", "HF_TRANSFER", "HTTP")),
        ("XET,XET,HTTP", ("XET", "XET", "HTTP")),  # the released original's docs' own example
    ],
)
def test_the_protocol_sequence_is_read_as_the_released_original_writes_it(
    written: str | None, sequence: tuple[str, ...]
) -> None:
    assert protocols.parse(written) == sequence
    assert [a.number for a in protocols.attempts(sequence)] == list(range(1, len(sequence) + 1))


@pytest.mark.parametrize("written", ["FTP", "HTTP,", "HTTP,,XET", "HTTP;XET"])
def test_a_protocol_sequence_that_names_nothing_known_is_refused(written: str) -> None:
    with pytest.raises(DownloadError) as refused:
        protocols.parse(written)
    assert refused.value.reason == "InvalidDownloadProtocol"
    assert not refused.value.transient
    assert "XET, HF_TRANSFER, HTTP" in refused.value.message


def test_each_protocol_transfers_its_own_way_and_only_some_failures_go_on() -> None:
    assert protocols.transport("HF_TRANSFER", 8) == protocols.Transport(8, ranges=True)
    assert protocols.transport("HTTP", 8) == protocols.Transport(1, ranges=False)
    with pytest.raises(DownloadError) as unavailable:
        protocols.transport("XET", 8)
    assert protocols.goes_on(unavailable.value)
    assert protocols.goes_on(DownloadError("DownloadStalled", "no data for 120 s"))
    assert protocols.goes_on(DownloadError("ChecksumMismatch", "sha256 differs"))
    for final in ("SourceNotFound", "AuthError", "StorageFull", "AddressNotAllowed", "InvalidSource"):
        assert not protocols.goes_on(DownloadError(final, "no")), final
