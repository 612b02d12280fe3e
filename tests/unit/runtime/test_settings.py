"""The settings classes (one per concern): every variable keeps the name, default and spellings it
had before the classes existed, bad values are refused with one line naming the variable, the
problem and the accepted form (never a secret's value), and a service refuses to start on one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BeforeValidator

from aim_cache.llmkube.settings import LLMKubeSettings, ModelSettings
from aim_cache.settings import SETTINGS as CACHE_SETTINGS
from aim_cache.settings import CacheServiceSettings, CacheSettings
from aim_cache_jobs.downloader.settings import DownloadJobSettings
from aim_deployer.settings import DeployerSettings
from aim_status.settings import StatusSettings
from aimcore.api.bus.topology import Retention
from aimcore.domain.outbound import OutboundPolicy
from aimcore.runtime.service import EXIT_BAD_SETTINGS, load_settings
from aimcore.runtime.settings import (
    AimSettings,
    BusSettings,
    ProcessSettings,
    ProxySettings,
    Settings,
    SettingsError,
    TracingSettings,
)
from aimcore.runtime.settings.base import setting, strict_flag
from aimcore.runtime.settings.history import HistorySettings
from aimcore.runtime.settings.outbound import OutboundSettings


def error(concern: type[AimSettings], env: dict[str, str]) -> str:
    with pytest.raises(SettingsError) as caught:
        concern.from_env(env)
    assert isinstance(caught.value, ValueError)  # callers that caught ValueError still do
    message = str(caught.value)
    assert "\n" not in message
    return message


# -- the process and the bus ---------------------------------------------------------------------


def test_process_defaults() -> None:
    s = ProcessSettings.from_env({})
    assert (s.kubeconfig, s.system_namespace, s.resync_seconds, s.log_level, s.reconcile_journal) == (
        None,
        "aim-system",
        1800.0,
        "INFO",
        None,
    )


def test_kubeconfig_prefers_aim_kubeconfig_and_an_empty_value_is_unset() -> None:
    assert ProcessSettings.from_env({"KUBECONFIG": "/k"}).kubeconfig == "/k"
    assert ProcessSettings.from_env({"AIM_KUBECONFIG": "/a", "KUBECONFIG": "/k"}).kubeconfig == "/a"
    assert ProcessSettings.from_env({"AIM_KUBECONFIG": "", "KUBECONFIG": "/k"}).kubeconfig == "/k"
    assert ProcessSettings.from_env({"AIM_SYSTEM_NAMESPACE": ""}).system_namespace == "aim-system"


def test_names_are_exact() -> None:
    assert ProcessSettings.from_env({"aim_system_namespace": "other"}).system_namespace == "aim-system"
    assert BusSettings.from_env({"aim_nats_url": "nats://x:1"}).url == "nats://127.0.0.1:4222"


def test_log_level_any_case_and_only_levels_logging_knows() -> None:
    assert ProcessSettings.from_env({"AIM_LOG_LEVEL": " debug "}).log_level == "DEBUG"
    assert ProcessSettings.from_env({"AIM_LOG_LEVEL": "warn"}).log_level == "WARN"
    logging.getLevelName(ProcessSettings.from_env({"AIM_LOG_LEVEL": "Critical"}).log_level)
    message = error(ProcessSettings, {"AIM_LOG_LEVEL": "loud"})
    assert message == (
        "AIM_LOG_LEVEL='loud': not a log level; expected DEBUG, INFO, WARNING, ERROR or CRITICAL (any case)"
    )


@pytest.mark.parametrize("value", ["abc", "0", "-5"])
def test_resync_must_be_a_positive_number(value: str) -> None:
    message = error(ProcessSettings, {"AIM_RESYNC_SECONDS": value})
    assert message.startswith(f"AIM_RESYNC_SECONDS={value!r}: ")
    assert message.endswith("; expected seconds, a number > 0")


def test_several_bad_values_are_all_named_on_one_line() -> None:
    message = error(ProcessSettings, {"AIM_RESYNC_SECONDS": "x", "AIM_LOG_LEVEL": "loud"})
    assert "AIM_RESYNC_SECONDS='x'" in message and "AIM_LOG_LEVEL='loud'" in message


def test_bus_settings_round_trip_through_a_child_environment() -> None:
    bus = BusSettings.from_env(
        {"AIM_NATS_URL": "tls://nats:4222", "AIM_NATS_SEED": "SUSECRET", "AIM_NATS_TLS_CA_FILE": "/ca"}
    )
    assert bus.env() == {
        "AIM_NATS_URL": "tls://nats:4222",
        "AIM_NATS_SEED": "SUSECRET",
        "AIM_NATS_TLS_CA_FILE": "/ca",
    }
    assert BusSettings.from_env(bus.env()) == bus
    assert "SUSECRET" not in repr(bus)
    assert bus.as_role("deployer").role == "deployer"
    assert bus.replace(role="reader").as_role("deployer").role == "reader"  # an explicit role stays


def test_keyword_arguments_override_single_fields_the_rest_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIM_NATS_URL", "nats://from-env:4222")
    monkeypatch.setenv("AIM_NATS_TLS_CA_FILE", "/env-ca")
    bus = BusSettings(url="nats://given:4222")
    assert (bus.url, bus.tls_ca_file) == ("nats://given:4222", "/env-ca")
    assert Settings.load().nats_url == "nats://from-env:4222"


def test_from_env_reads_the_mapping_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIM_NATS_URL", "nats://from-env:4222")
    assert BusSettings.from_env({}).url == "nats://127.0.0.1:4222"
    assert BusSettings.from_env().url == "nats://from-env:4222"
    assert BusSettings().url == "nats://from-env:4222"  # and after from_env, the process env again


def test_tracing_and_proxy() -> None:
    assert TracingSettings.from_env({}).traces_exporter == "none"
    assert TracingSettings.from_env({"OTEL_SERVICE_NAME": "x"}).service_name == "x"
    assert ProxySettings.from_env({}).proxy is None
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        assert ProxySettings.from_env({name: "http://user:pw@proxy:3128"}).proxy
    assert "pw@" not in repr(ProxySettings.from_env({"HTTPS_PROXY": "http://user:pw@proxy:3128"}))


# -- history, outbound ---------------------------------------------------------------------------


def test_history_defaults_and_spellings() -> None:
    assert HistorySettings.from_env({}).retention() == Retention()
    r = HistorySettings.from_env({"AIM_HISTORY_MAX_AGE": "3600", "AIM_HISTORY_MAX_BYTES": "1e9"}).retention()
    assert (r.max_age, r.max_bytes) == (3600.0, 1_000_000_000)
    assert HistorySettings.from_env({"AIM_HISTORY_MAX_BYTES": "1048576.7"}).max_bytes == 1048576
    assert HistorySettings.from_env({"AIM_HISTORY_MAX_AGE": "0"}).max_age == 0  # no age limit
    assert "AIM_HISTORY_MAX_AGE='-1'" in error(HistorySettings, {"AIM_HISTORY_MAX_AGE": "-1"})
    assert "AIM_HISTORY_MAX_BYTES='lots'" in error(HistorySettings, {"AIM_HISTORY_MAX_BYTES": "lots"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        ("Yes", True),
        (" 1 ", True),
        ("ON", True),
        ("false", False),
        ("0", False),
        ("off", False),
    ],
)
def test_outbound_flag_spellings(text: str, expected: bool) -> None:
    assert OutboundSettings.from_env({"AIM_OUTBOUND_ALLOW_PRIVATE": text}).allow_private is expected


def test_outbound_refuses_other_flags_and_splits_hosts_on_commas() -> None:
    message = error(OutboundSettings, {"AIM_OUTBOUND_ALLOW_PRIVATE": "maybe"})
    assert message == (
        "AIM_OUTBOUND_ALLOW_PRIVATE='maybe': not true or false; "
        "expected true or false (also 1/0, yes/no, on/off)"
    )
    hosts = OutboundSettings.from_env({"AIM_OUTBOUND_ALLOWED_HOSTS": " a.example, ,B.example,"})
    assert hosts.allowed_hosts == ("a.example", "B.example")
    assert OutboundPolicy.of(hosts).allowed_hosts == {"a.example", "b.example"}
    assert OutboundSettings.from_env({"AIM_OUTBOUND_ALLOW_PRIVATE": " "}).allow_private is False


# -- the services' own ---------------------------------------------------------------------------


def test_status_coalescing() -> None:
    assert StatusSettings.from_env({}).coalesce_seconds == 3.0
    assert StatusSettings.from_env({"AIM_STATUS_COALESCE_SECONDS": "0"}).coalesce_seconds == 0.0
    assert StatusSettings.from_env({"AIM_STATUS_COALESCE_SECONDS": "-5"}).coalesce_seconds == 0.0
    assert StatusSettings.from_env({"AIM_STATUS_COALESCE_SECONDS": "0.5"}).coalesce_seconds == 0.5
    assert error(StatusSettings, {"AIM_STATUS_COALESCE_SECONDS": "abc"}) == (
        "AIM_STATUS_COALESCE_SECONDS='abc': Input should be a valid number, unable to parse string as a "
        "number; expected seconds, a number (0 or less: no coalescing)"
    )


def test_deployer_mode() -> None:
    assert DeployerSettings.from_env({}).deployment_mode == "RawDeployment"
    assert (
        DeployerSettings.from_env({"AIM_KSERVE_DEPLOYMENT_MODE": " Standard "}).deployment_mode == "Standard"
    )
    message = error(DeployerSettings, {"AIM_KSERVE_DEPLOYMENT_MODE": "standard"})  # names are exact
    assert message.startswith("AIM_KSERVE_DEPLOYMENT_MODE='standard': ")
    assert message.endswith("; expected one of RawDeployment, Standard")


def test_cache_service_settings(tmp_path: Path) -> None:
    s = CacheServiceSettings.from_env({})
    assert (s.executor, s.cache_dir, s.stall_seconds, s.local_downloads) == (
        "job",
        Path("~/.cache/aim-engine/models").expanduser(),
        60.0,
        2,
    )
    assert CacheServiceSettings.from_env({"AIM_CACHE_EXECUTOR": " LOCAL "}).executor == "local"
    assert CacheServiceSettings.from_env({"AIM_CACHE_EXECUTOR": "  "}).executor == "job"
    assert "AIM_CACHE_EXECUTOR='docker'" in error(CacheServiceSettings, {"AIM_CACHE_EXECUTOR": "docker"})
    for name, bad in (("AIM_DOWNLOAD_STALL_SECONDS", "0"), ("AIM_LOCAL_DOWNLOADS", "0")):
        assert f"{name}={bad!r}" in error(CacheServiceSettings, {name: bad})
    local = CacheServiceSettings.from_env(
        {
            "HF_ENDPOINT": "http://hub",
            "AWS_REGION": "eu-1",
            "AWS_ACCESS_KEY_ID": "never-passed",
            "AIM_LOCAL_DOWNLOAD_ENV": "A=1, B = x=y ,junk,=dropped,AWS_REGION=us-2",
        }
    ).local_env()
    assert local == {"HF_ENDPOINT": "http://hub", "AWS_REGION": "us-2", "A": "1", "B": "x=y"}


def test_cache_settings_resolve_the_job_bus(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    seed.write_text("SUDOWNLOAD\n")
    bus = {"AIM_NATS_URL": "nats://svc:4222", "AIM_NATS_SEED": "SUCACHE"}

    def base(env: dict[str, str]) -> Settings:
        return Settings.load(CACHE_SETTINGS, {**bus, **env})

    unset = CacheSettings.of(
        base({"AIM_DOWNLOADER_NATS_SEED_FILE": str(seed), "AIM_DOWNLOADER_NATS_SEED": "x"})
    )
    assert (unset.job_nats_url, unset.job_nats_seed) == ("nats://svc:4222", "SUDOWNLOAD")
    assert unset.progress_key and unset.outbound == OutboundPolicy()
    # an empty AIM_DOWNLOADER_NATS_URL is a value: no progress from Jobs
    empty = CacheSettings.of(base({"AIM_DOWNLOADER_NATS_URL": ""}))
    assert empty.job_nats_url is None and empty.job_bus() is None
    other = CacheSettings.of(base({"AIM_DOWNLOADER_NATS_URL": "nats://pods:4222"}))
    assert other.job_nats_url == "nats://pods:4222"


def test_llmkube_settings(tmp_path: Path) -> None:
    s = ModelSettings.of(Settings.load(CACHE_SETTINGS, {}), tmp_path)
    assert s.cache_dir == tmp_path / "_llmkube" and s.policy.allowed_roots == ()
    assert (s.revalidate_seconds, s.retry_seconds, s.retry_max_seconds, s.downloads) == (
        3600.0,
        30.0,
        900.0,
        2,
    )
    roots = LLMKubeSettings.from_env({"AIM_LLMKUBE_ALLOWED_ROOTS": "/a:/b, /c,,"}).allowed_roots
    assert roots == ("/a", "/b", "/c")
    assert LLMKubeSettings.from_env({"AIM_LLMKUBE_DOWNLOADS": "0"}).downloads == 1
    assert LLMKubeSettings.from_env({"AIM_LLMKUBE_ALLOW_PRIVATE": "ture"}).allow_private is False  # as before
    assert LLMKubeSettings.from_env({"AIM_LLMKUBE_ALLOW_PRIVATE": " "}).allow_private is None
    assert (
        ModelSettings.of(Settings.load(CACHE_SETTINGS, {"AIM_LLMKUBE_CACHE_DIR": "~/x"}), tmp_path).cache_dir
        == Path("~/x").expanduser()
    )
    for name in (
        "AIM_LLMKUBE_REVALIDATE_SECONDS",
        "AIM_LLMKUBE_RETRY_SECONDS",
        "AIM_LLMKUBE_RETRY_MAX_SECONDS",
    ):
        assert error(LLMKubeSettings, {name: "-1"}).startswith(f"{name}='-1': ")
    assert "AIM_LLMKUBE_DOWNLOADS='two'" in error(LLMKubeSettings, {"AIM_LLMKUBE_DOWNLOADS": "two"})


def test_download_job_settings() -> None:
    job = DownloadJobSettings.from_env({})
    assert (job.nats_url, job.progress_token, job.nats_role) == (None, None, "download")
    job = DownloadJobSettings.from_env(
        {"AIM_NATS_URL": "nats://x:4222", "AIM_NATS_SEED": "SUJOB", "AIM_PROGRESS_TOKEN": "t0ken"}
    )
    bus = job.bus()
    assert (bus.url, bus.role, bus.seed, bus.tls_cert_file) == ("nats://x:4222", "download", "SUJOB", None)
    assert "t0ken" not in repr(job) and "SUJOB" not in repr(job)


# -- errors never show a secret ------------------------------------------------------------------


class _WithSecret(AimSettings):
    token: Annotated[bool, BeforeValidator(strict_flag)] = setting(
        False, env="TEST_SECRET_FLAG", secret=True, form="true or false", description="A secret."
    )


def test_an_error_about_a_secret_names_the_variable_but_not_the_value() -> None:
    message = error(_WithSecret, {"TEST_SECRET_FLAG": "hunter2"})
    assert message == "TEST_SECRET_FLAG: not true or false; expected true or false"


# -- start-up -------------------------------------------------------------------------------------


def test_a_service_with_a_bad_setting_exits_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AIM_STATUS_COALESCE_SECONDS", "abc")
    assert load_settings("aim-deployer").bus  # not the deployer's concern: it starts
    with pytest.raises(SystemExit) as exited:
        load_settings("aim-status", [StatusSettings])
    assert exited.value.code == EXIT_BAD_SETTINGS
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "aim-status: invalid setting AIM_STATUS_COALESCE_SECONDS='abc': Input should be a valid number, "
        "unable to parse string as a number; expected seconds, a number (0 or less: no coalescing)"
    ]


def test_every_common_concern_is_checked_at_start_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AIM_RESYNC_SECONDS", "soon")
    with pytest.raises(SystemExit):
        load_settings("aim-watcher")
    assert "AIM_RESYNC_SECONDS='soon'" in capsys.readouterr().err
