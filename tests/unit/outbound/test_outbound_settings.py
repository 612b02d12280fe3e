"""Where the outbound address policy comes from in each service: the operator-wide
``AIM_OUTBOUND_*`` settings, and the LLMKube path's ``AIM_LLMKUBE_*`` overrides (hosts added to the
operator's for that path only; the private switch, when set, replacing the operator's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aim_cache.llmkube.settings import ModelSettings
from aim_cache.settings import SETTINGS, CacheSettings
from aimcore.domain.outbound import OutboundPolicy
from aimcore.runtime.settings import Settings

KEYS = (
    "AIM_OUTBOUND_ALLOWED_HOSTS",
    "AIM_OUTBOUND_ALLOW_PRIVATE",
    "AIM_LLMKUBE_ALLOWED_HOSTS",
    "AIM_LLMKUBE_ALLOW_PRIVATE",
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def test_the_default_is_strict_everywhere(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert OutboundPolicy.from_env() == OutboundPolicy()
    assert CacheSettings.of(Settings.load(SETTINGS)).outbound == OutboundPolicy()
    policy = ModelSettings.of(Settings.load(SETTINGS), tmp_path).policy
    assert (policy.allowed_hosts, policy.allow_private) == (frozenset(), False)


def test_the_cache_service_reads_the_operator_wide_settings(env: pytest.MonkeyPatch) -> None:
    env.setenv("AIM_OUTBOUND_ALLOWED_HOSTS", "mirror.internal,10.0.0.7")
    env.setenv("AIM_OUTBOUND_ALLOW_PRIVATE", "true")
    assert CacheSettings.of(Settings.load(SETTINGS)).outbound == OutboundPolicy(
        frozenset({"mirror.internal", "10.0.0.7"}), True
    )


@pytest.mark.parametrize(
    ("outbound", "llmkube", "expected"),
    [
        (None, None, False),
        ("true", None, True),  # the operator-wide switch applies to LLMKube too
        ("true", "false", False),  # the per-path setting wins, both ways
        ("false", "true", True),
        (None, "true", True),
    ],
)
def test_llmkube_private_switch_overrides_the_operator_wide_one(
    env: pytest.MonkeyPatch, tmp_path: Path, outbound: str | None, llmkube: str | None, expected: bool
) -> None:
    if outbound is not None:
        env.setenv("AIM_OUTBOUND_ALLOW_PRIVATE", outbound)
    if llmkube is not None:
        env.setenv("AIM_LLMKUBE_ALLOW_PRIVATE", llmkube)
    assert ModelSettings.of(Settings.load(SETTINGS), tmp_path).policy.allow_private is expected


def test_llmkube_hosts_add_to_the_operator_wide_ones(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("AIM_OUTBOUND_ALLOWED_HOSTS", "mirror.internal")
    env.setenv("AIM_LLMKUBE_ALLOWED_HOSTS", "models.internal, Files.Internal")
    policy = ModelSettings.of(Settings.load(SETTINGS), tmp_path).policy
    assert policy.outbound.allowed_hosts == {"mirror.internal", "models.internal", "files.internal"}
    assert CacheSettings.of(Settings.load(SETTINGS)).outbound.allowed_hosts == {
        "mirror.internal"
    }  # this path only


def test_the_download_jobs_log_format_is_the_services(env: pytest.MonkeyPatch) -> None:
    env.delenv("AIM_LOG_FORMAT", raising=False)
    assert CacheSettings.of(Settings.load(SETTINGS)).log_format == "text"
    env.setenv("AIM_LOG_FORMAT", "json")
    assert CacheSettings.of(Settings.load(SETTINGS)).log_format == "json"
