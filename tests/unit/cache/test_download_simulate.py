"""The released original's debug simulation switches as ``aim-download`` reads them
(:mod:`aim_cache_jobs.downloader.simulate`): what each asks for, the defaults, and that a bad
value is refused naming the variable."""

from __future__ import annotations

import pytest

from aim_cache_jobs.downloader.simulate import Simulation, SimulationSettingError, parse


def test_no_switch_is_no_simulation_whatever_the_tuning() -> None:
    assert parse({}) == Simulation()
    tuning = {"AIM_DEBUG_DOWNLOAD_DURATION": "x", "EXPECTED_SIZE_BYTES": "-1", "AIM_DEBUG_VERIFY_FAIL": "?"}
    assert not parse(tuning).active
    assert not parse({"AIM_DEBUG_SIMULATE_DOWNLOAD": "false", "AIM_DEBUG_CAUSE_HANG": ""}).active


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes", "on", " True "])
def test_true_like_values_switch_on(value: str) -> None:
    assert parse({"AIM_DEBUG_CAUSE_FAILURE": value}).cause_failure


def test_the_general_simulation_with_its_defaults_and_settings() -> None:
    sim = parse({"AIM_DEBUG_SIMULATE_DOWNLOAD": "true"})
    assert sim.simulate and sim.active and not sim.verify_fail
    assert (sim.download_duration, sim.verify_duration, sim.size) == (10.0, 10.0, None)
    sim = parse(
        {
            "AIM_DEBUG_SIMULATE_DOWNLOAD": "true",
            "AIM_DEBUG_DOWNLOAD_DURATION": "0.2",
            "AIM_DEBUG_VERIFY_DURATION": "15",
            "AIM_DEBUG_VERIFY_FAIL": "true",
            "EXPECTED_SIZE_BYTES": "1048576",
        }
    )
    assert (sim.download_duration, sim.verify_duration, sim.verify_fail, sim.size) == (
        0.2,
        15.0,
        True,
        1048576,
    )
    assert sim.applies_to("s3://bucket/model") and sim.applies_to("hf://gpt2")


def test_the_hf_simulation_names_failing_protocols_and_applies_to_hf_only() -> None:
    sim = parse(
        {
            "AIM_DEBUG_SIMULATE_HF_DOWNLOAD": "true",
            "AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS": "xet, HTTP,",
            "AIM_DEBUG_SIMULATE_HF_DURATION": "1",
        }
    )
    assert sim.simulate_hf and sim.hf_fail == {"XET", "HTTP"} and sim.hf_duration == 1.0
    assert parse({"AIM_DEBUG_SIMULATE_HF_DOWNLOAD": "true"}).hf_duration == 2.0
    assert sim.applies_to("hf://test-org/test-model") and sim.applies_to("HF://a/b")
    assert not sim.applies_to("s3://bucket/model")  # the original simulates hf:// only


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"AIM_DEBUG_SIMULATE_DOWNLOAD": "maybe"}, "AIM_DEBUG_SIMULATE_DOWNLOAD"),
        ({"AIM_DEBUG_CAUSE_HANG": "2"}, "AIM_DEBUG_CAUSE_HANG"),
        ({"AIM_DEBUG_SIMULATE_DOWNLOAD": "1", "AIM_DEBUG_VERIFY_FAIL": "sure"}, "AIM_DEBUG_VERIFY_FAIL"),
        (
            {"AIM_DEBUG_SIMULATE_DOWNLOAD": "1", "AIM_DEBUG_DOWNLOAD_DURATION": "ten"},
            "AIM_DEBUG_DOWNLOAD_DURATION",
        ),
        (
            {"AIM_DEBUG_SIMULATE_DOWNLOAD": "1", "AIM_DEBUG_VERIFY_DURATION": "-1"},
            "AIM_DEBUG_VERIFY_DURATION",
        ),
        (
            {"AIM_DEBUG_SIMULATE_HF_DOWNLOAD": "1", "AIM_DEBUG_SIMULATE_HF_DURATION": "inf"},
            "AIM_DEBUG_SIMULATE_HF_DURATION",
        ),
        ({"AIM_DEBUG_SIMULATE_HF_DOWNLOAD": "1", "AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS": "XET,FTP"}, "FTP"),
        ({"AIM_DEBUG_SIMULATE_DOWNLOAD": "1", "EXPECTED_SIZE_BYTES": "1e6"}, "EXPECTED_SIZE_BYTES"),
        ({"AIM_DEBUG_SIMULATE_DOWNLOAD": "1", "EXPECTED_SIZE_BYTES": str(2**31)}, "EXPECTED_SIZE_BYTES"),
    ],
)
def test_a_bad_value_names_the_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(SimulationSettingError, match=variable):
        parse(env)
