"""Every ``AIM_*`` read goes through a settings class, and the reference page says what they say.

- Only the settings modules of the runtime library and the services read the environment (the
  download Job's among them, which also hands the model cache's env, the user's, to the sources:
  not configuration).
- Every ``AIM_*`` name in the sources is a variable of a settings class or one of the few names that
  are not operator settings (stream names, variables the operator sets inside model containers).
- ``docs/settings.md`` is what ``aimctl settings docs`` renders from the classes (the drift check).
"""

from __future__ import annotations

import re
from pathlib import Path

from aim_dev import settingsdoc

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [ROOT / "libs" / "aimcore" / "src", *sorted((ROOT / "services").glob("*/src"))]

READS_ENVIRONMENT = re.compile(r"\bos\.environ\b|\bos\.getenv\b|\bgetenv\(|\bfrom os import .*\benviron\b")

USERS_ENV: set[str] = set()
"""Modules besides the settings modules that read the environment: none. (aim-download's
environment, the model cache's env plus the Job's settings, is read by its settings module.)"""

NOT_SETTINGS = {
    # streams of the bus contract
    "AIM_EVENTS",
    "AIM_STATUS",
    "AIM_DECISIONS",
    # set by the operator inside the model containers it deploys (the inference engine's settings)
    "AIM_ENGINE_ARGS",
    "AIM_GPU_COUNT",
    "AIM_GPU_MODEL",
    "AIM_PRECISION",
    "AIM_PROFILE_ID",
    "AIM_METRIC",
    "AIM_MODEL_ID",
    "AIM_CACHE_PATH",
    # a source's credentials the cache service puts in a download's environment (an oci:// source's
    # pull secrets, numbered), read with the source's other variables (HF_TOKEN, AWS_*), not settings
    "AIM_OCI_PULL_SECRET_",
    # a download's protocol sequence: the model cache's own env (or its runtime config's), as the
    # released original reads it, not the operator's configuration
    "AIM_DOWNLOADER_PROTOCOL",
    # the released original's debug switches: the model cache's own env (an AIMArtifact's spec.env),
    # read by aim-download's simulation (docs/caching.md), not the operator's configuration
    "AIM_DEBUG_SIMULATE_DOWNLOAD",
    "AIM_DEBUG_SIMULATE_HF_DOWNLOAD",
    "AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS",
    "AIM_DEBUG_SIMULATE_HF_DURATION",
    "AIM_DEBUG_DOWNLOAD_DURATION",
    "AIM_DEBUG_VERIFY_DURATION",
    "AIM_DEBUG_VERIFY_FAIL",
    "AIM_DEBUG_CAUSE_HANG",
    "AIM_DEBUG_CAUSE_FAILURE",
    # variables of nats-server's configuration (each role's accepted keys), not the services'
    "AIM_NKEY_",
    # Python names, not variables
    "AIM_GROUPS",
    "AIM_LABEL_PREFIX",
    "AIM_PREFIXES",
    # prose about families of settings ("AIM_OUTBOUND_*")
    "AIM_",
    "AIM_NATS_",
    "AIM_OUTBOUND_",
    "AIM_DEBUG_",
}


def python_files() -> list[Path]:
    return [p for source in SOURCES for p in sorted(source.rglob("*.py"))]


def is_settings_module(path: Path) -> bool:
    return path.name == "settings.py" or path.parent.name == "settings"


def test_only_settings_modules_read_the_environment() -> None:
    readers = {
        str(p.relative_to(ROOT))
        for p in python_files()
        if READS_ENVIRONMENT.search(p.read_text()) and not is_settings_module(p)
    }
    assert readers == USERS_ENV


def test_every_aim_name_in_the_sources_is_a_setting_or_known_not_to_be_one() -> None:
    settings = {name for concern in settingsdoc.readers() for v in concern.variables() for name in v.names}
    used = {m for p in python_files() for m in re.findall(r"\bAIM_[A-Z0-9_]*", p.read_text())}
    assert used - settings - NOT_SETTINGS == set()
    assert NOT_SETTINGS & settings == set()


def test_every_setting_is_described() -> None:
    for concern in settingsdoc.readers():
        assert concern.title and concern.__doc__, concern
        for v in concern.variables():
            assert v.description and v.form, v.names


def test_the_reference_page_is_generated_from_the_classes() -> None:
    page = ROOT / settingsdoc.PAGE
    assert not settingsdoc.stale(page), "docs/settings.md is stale: run `aimctl settings docs`"
    text = page.read_text()
    for concern in settingsdoc.readers():
        for v in concern.variables():
            for name in v.names:
                assert f"`{name}`" in text
