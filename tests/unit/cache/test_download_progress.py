"""Download progress as users see it: the sliding-window rate, ETA, stall time, the percentage that
never says 100 before the download is verified, and the status/report shapes."""

from __future__ import annotations

from aim_cache_jobs.downloader import protocols
from aim_cache_jobs.downloader.progress import Progress, RateMeter, percentage, progress_fields, summary
from aim_cache_jobs.downloader.report import progress_report
from aimcore.api.bus.messages import ObjectRef

MIB = 1024 * 1024
GIB = 1024 * MIB

FIRST = protocols.first_attempt(protocols.DEFAULT)


def meter_at(rate: float, seconds: int, start: int = 0) -> RateMeter:
    m = RateMeter(window=10.0)
    for t in range(seconds + 1):
        m.add(float(t), start + int(rate * t))
    return m


def test_rate_needs_a_minimum_span() -> None:
    m = RateMeter(window=10.0, min_span=1.0)
    assert m.rate() is None
    m.add(0.0, 0)
    m.add(0.5, 100)
    assert m.rate() is None
    m.add(1.0, 200)
    assert m.rate() == 200.0


def test_rate_follows_the_recent_window_not_the_whole_history() -> None:
    m = RateMeter(window=10.0)
    for t in range(0, 31):  # 30 s at 1 MiB/s ...
        m.add(float(t), t * MIB)
    for t in range(31, 61):  # ... then 30 s at 10 MiB/s
        m.add(float(t), 30 * MIB + (t - 30) * 10 * MIB)
    rate = m.rate()
    assert rate is not None
    assert abs(rate - 10 * MIB) < 1


def test_eta_and_stall() -> None:
    m = meter_at(100 * MIB, 5)
    eta = m.eta(1000 * MIB)
    assert eta is not None and abs(eta - 5.0) < 1e-6  # 500 MiB done, 500 MiB left at 100 MiB/s
    assert m.stalled_for(5.0) == 0.0
    m.add(6.0, 500 * MIB)
    m.add(9.0, 500 * MIB)
    assert m.stalled_for(12.0) == 7.0  # last growth at t=5
    assert RateMeter().eta(100) is None


def test_a_drop_in_bytes_restarts_the_window() -> None:
    m = meter_at(100 * MIB, 5)
    m.add(6.0, 10)  # a file started over
    assert m.rate() is None
    m.add(7.5, 10 + 150 * MIB)
    rate = m.rate()
    assert rate is not None and abs(rate - 100 * MIB) < 1


def test_zero_rate_has_no_eta() -> None:
    m = RateMeter()
    m.add(0.0, 50)
    m.add(5.0, 50)
    assert m.rate() == 0.0
    assert m.eta(100) is None


def test_percentage_is_capped_until_every_byte_is_in() -> None:
    assert percentage(Progress(0, 0, 0, 0, "listing")) == 0
    assert percentage(Progress(45, 100, 0, 1, "downloading")) == 45
    assert percentage(Progress(999, 1000, 0, 1, "downloading")) == 99
    assert percentage(Progress(100, 100, 0, 1, "verifying")) == 100  # every byte in (the original's)
    assert percentage(Progress(90, 100, 0, 1, "verifying")) == 90
    assert percentage(Progress(150, 100, 0, 1, "downloading")) == 99
    assert percentage(Progress(100, 100, 1, 1, "done")) == 100
    assert percentage(Progress(0, 0, 0, 0, "done")) == 100


def test_progress_fields_while_downloading() -> None:
    m = meter_at(310 * MIB, 4)
    p = Progress(int(1.2 * GIB), int(2.6 * GIB), 3, 10, "downloading")
    fields = progress_fields(p, m, now=4.0)
    assert fields["totalBytes"] == int(2.6 * GIB)
    assert fields["downloadedBytes"] == int(1.2 * GIB)
    assert fields["percentage"] == 46
    assert fields["displayPercentage"] == "46 %"
    assert fields["bytesPerSecond"] == 310 * MIB
    assert fields["displayRate"] == "310 MiB/s"
    assert isinstance(fields["etaSeconds"], int) and fields["etaSeconds"] > 0
    assert fields["displayEta"].endswith("s")


def test_progress_fields_without_a_rate_omit_it() -> None:
    fields = progress_fields(Progress(10, 100, 0, 1, "downloading"), None, now=0.0)
    assert set(fields) == {"totalBytes", "downloadedBytes", "percentage", "displayPercentage"}
    done = progress_fields(Progress(100, 100, 1, 1, "done"), meter_at(10, 3), now=3.0)
    assert done["percentage"] == 100 and "bytesPerSecond" not in done


def test_summary_lines() -> None:
    m = meter_at(310 * MIB, 4, start=int(1.2 * GIB) - 4 * 310 * MIB)
    p = Progress(int(1.2 * GIB), int(2.6 * GIB), 0, 2, "downloading")
    line = summary(p, m, now=4.0)
    assert line.startswith("46 % · 1.2 GiB of 2.6 GiB · 310 MiB/s · ETA ")
    assert summary(Progress(0, 0, 0, 0, "listing"), None, now=0) == "listing the source"
    assert summary(Progress(5, 5, 0, 1, "verifying"), None, now=0) == "100 % · 5 B of 5 B · verifying"
    assert summary(Progress(GIB, GIB, 1, 1, "done"), None, now=0) == "100 % · 1 GiB · 1 file · done"


def test_summary_mentions_a_stall() -> None:
    m = RateMeter()
    m.add(0.0, 10)
    m.add(1.0, 20)
    assert "no data for 30s" in summary(Progress(20, 100, 0, 1, "downloading"), m, now=31.0)


def test_progress_report_carries_condition_and_fields() -> None:
    obj = ObjectRef(
        group="aim.eai.amd.com", version="v1alpha1", kind="AIMModelCache", namespace="ns", name="m"
    )
    p = Progress(50, 100, 0, 1, "downloading")
    report = progress_report(obj, "uid-1", p, None, now=0.0, attempt=FIRST)
    assert report.source == "cache" and report.progress and report.uid == "uid-1"
    (cond,) = report.conditions
    assert (cond.type, cond.status, cond.reason) == ("DownloadReady", "False", "Downloading")
    assert cond.message == "50 % · 50 B of 100 B"
    assert report.fields == {"progress": progress_fields(p, None, now=0.0)}
    verifying = progress_report(
        obj, None, Progress(100, 100, 0, 1, "verifying"), None, now=0.0, attempt=FIRST
    )
    assert verifying.conditions[0].reason == "Verifying"


def test_progress_report_for_the_legacy_group_has_no_fields() -> None:
    obj = ObjectRef(
        group="aim.silogen.ai", version="v1alpha1", kind="AIMModelCache", namespace="ns", name="m"
    )
    report = progress_report(obj, None, Progress(50, 100, 0, 1, "downloading"), None, now=0.0, attempt=FIRST)
    assert report.fields == {}
    assert report.conditions[0].message.startswith("50 %")
