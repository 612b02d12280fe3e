"""The benches' CPU split: reading /proc, and what a burst's figures say about its floor."""

from __future__ import annotations

import os
import time

import pytest

from aim_dev.bench.cpu import CLOCK_TICKS, Machine, Sample, Split, sample


def test_the_machine_line_counts_busy_time_and_what_the_hypervisor_took() -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice
    machine = Machine.read("cpu  1000 10 200 5000 300 0 40 25 0 0\n")
    assert machine.busy == pytest.approx((1000 + 10 + 200 + 40) / CLOCK_TICKS)
    assert machine.stolen == pytest.approx(25 / CLOCK_TICKS)
    with pytest.raises(ValueError, match="machine's line"):
        Machine.read("cpu0 1 2 3 4 5 6 7 8 9 10\n")


def test_a_split_names_who_spent_the_cpu_and_how_fast_the_rest_alone_would_go() -> None:
    first = Sample(10.0, {"deployer": 1.0, "kube-apiserver": 5.0, "bench": 0.5}, Machine(100.0, 1.0))
    last = Sample(14.0, {"deployer": 3.0, "kube-apiserver": 9.0, "bench": 1.0}, Machine(108.0, 1.2))
    split = Split.between(first, last, cores=2)
    assert split.processes == {"deployer": 2.0, "kube-apiserver": 4.0, "bench": 0.5}
    assert split.busy_cores == pytest.approx(2.0)
    # the machine was busy 8 core-seconds; without the deployer's 2, the rest spread over 2 cores
    assert split.seconds_without(["deployer"]) == pytest.approx(3.0)
    assert split.seconds_without(["deployer", "kube-apiserver", "bench"]) == pytest.approx(0.75)
    figures = split.figures()
    assert figures["other"] == pytest.approx(1.5)  # 8 busy - 6.5 named
    assert figures["busy_cores"] == pytest.approx(2.0)
    assert figures["stolen_cores"] == pytest.approx(0.05)


def test_a_process_that_exits_between_samples_is_left_out() -> None:
    first = Sample(0.0, {"a": 1.0, "gone": 2.0}, Machine(10.0, 0.0))
    last = Sample(1.0, {"a": 1.5}, Machine(11.0, 0.0))
    assert Split.between(first, last, cores=2).processes == {"a": 0.5}


def test_a_sample_reads_this_process_and_the_machine_from_proc() -> None:
    before = sample({"me": os.getpid()})
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass  # burn CPU that both counters must see
    split = Split.between(before, sample({"me": os.getpid()}))
    assert split.processes["me"] >= 0.2
    assert split.busy >= split.processes["me"] - 2 / CLOCK_TICKS  # the machine saw at least as much
    assert split.cores == os.cpu_count()
