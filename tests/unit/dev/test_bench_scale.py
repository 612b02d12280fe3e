"""The scale bench's pure parts: where each AIMService lives, how growth is judged, the table."""

from __future__ import annotations

import math

import pytest

from aim_dev.bench import scale


def test_services_fill_namespaces_of_a_thousand_with_a_group_per_hundred() -> None:
    first, last_of_ns, next_ns = scale.Slot(0), scale.Slot(999), scale.Slot(1000)
    assert (first.namespace, first.group) == ("bench-scale-000", "g00")
    assert (last_of_ns.namespace, last_of_ns.group) == ("bench-scale-000", "g09")
    assert (next_ns.namespace, next_ns.group) == ("bench-scale-001", "g00")
    grown = scale.groups_between(1000, 1300)
    assert [(s.namespace, s.group) for s in grown] == [("bench-scale-001", f"g0{i}") for i in range(3)]
    assert scale.namespaces_between(500, 2500) == ["bench-scale-001", "bench-scale-002"]
    body = scale.service_body(scale.Slot(1234))
    assert body["metadata"] == {"name": "svc-01234", "namespace": "bench-scale-001"}
    assert body["spec"] == {"model": {"name": "g02-model"}, "template": {"name": "g02-template"}}
    kinds = [b["kind"] for b in scale.group_bodies(scale.Slot(1200), "http://hub")]
    assert kinds == ["AIMModel", "AIMServiceTemplate", "AIMTemplateCache"]


def test_growth_is_the_exponent_between_successive_sizes() -> None:
    assert scale.growth([1000, 10000, 50000], [2.0, 20.0, 100.0]) == [1.0, 1.0]
    squared = scale.growth([1000, 10000], [1.0, 100.0])
    assert squared == [2.0]
    flat = scale.growth([1000, 10000], [5.0, 5.0])
    assert flat == [0.0]
    assert scale.growth([1000, 10000], [0.0, 3.0]) == [None]
    assert math.isclose(scale.growth([10, 20], [1.0, 1.5])[0] or 0, math.log(1.5) / math.log(2), abs_tol=0.01)


def figures(services: int, factor: float) -> dict[str, object]:
    return {
        "services": services,
        "objects": services * 3,
        "idle_cpu_cores": {"deployer": 0.01 * factor, "total": 0.02 * factor},
        "rss_mib": {"deployer": 100 * factor, "total": 150 * factor},
        "nats_storage_mib": 10 * factor,
        "resync": {
            "cpu_seconds": {"total": 3 * factor},
            "core_share": 0.005 * factor,
            "api_requests": 20,
            "seconds": 4 * factor,
        },
        "ready_seconds": {"deployer": 2 * factor, "nats-server": 1.0, "max": 2 * factor},
        "converge_after_restart_seconds": 9 * factor,
    }


def test_budgets_are_judged_at_the_largest_size_and_on_growth() -> None:
    linear = [figures(1000, 1), figures(10000, 10)]
    assert all(scale.budgets(linear).values())
    faster = [figures(1000, 1), figures(10000, 10)]
    faster[1]["nats_storage_mib"] = 10 * 30  # x30 for x10 objects
    verdict = scale.budgets(faster)
    assert verdict["no_figure_grows_faster_than_linearly"] is False
    assert verdict["total_rss_within_2_gib"] is True
    heavy = [figures(1000, 1), figures(10000, 10)]
    heavy[1]["rss_mib"] = {"total": 4096.0}
    heavy[1]["ready_seconds"] = {"max": 61.0}
    verdict = scale.budgets(heavy)
    assert (verdict["total_rss_within_2_gib"], verdict["ready_within_60_s"]) == (False, False)


def test_the_table_has_a_column_per_size_and_a_row_per_process() -> None:
    text = scale.table([figures(1000, 1), figures(10000, 10)])
    lines = text.splitlines()
    assert lines[0] == "| figure | 1,000 services | 10,000 services |"
    assert "| restart to ready: deployer (s) | 2.0 | 20.0 |" in lines
    assert "| restart to ready: nats-server (s) | 1.0 | 1.0 |" in lines
    assert "| RSS: deployer (MiB) | 100 | 1000 |" in lines
    assert any(line.startswith("| one full resync: API requests | 20 | 20 |") for line in lines)


def test_numbers_in_the_table_read_as_numbers() -> None:
    assert [scale.number(v) for v in (102050.0, 1978.7, 25.29, 0.04221, 3.0)] == [
        "102,050",
        "1,979",
        "25.3",
        "0.0422",
        "3",
    ]


def test_every_round_at_the_largest_size_is_judged_on_its_own() -> None:
    """Three rounds on one grown stack: a budget holds only if each round meets it, so a round
    that misses shows in its own verdict while the others pass."""
    sizes = [figures(1000, 1), figures(10000, 10)]
    good = scale.headline(sizes[1])
    slow = {**good, "ready_seconds.max": 75.0, "ready_seconds.deployer": 75.0}
    sizes[1]["rounds"] = [good, slow, good]
    verdicts = scale.budgets_each_round(sizes)
    assert [v["ready_within_60_s"] for v in verdicts] == [True, False, True]
    assert all(v["total_rss_within_2_gib"] for v in verdicts)
    assert "ready_seconds.deployer" in good and "rss_mib.deployer" in good  # which process holds it
    assert scale.with_figures(sizes[1], {"rss_mib.total": 1.0})["rss_mib"] == {"deployer": 1000, "total": 1.0}


def test_repeat_reaches_each_bench_as_asked_and_each_default_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--repeat 3`` once meant "the default" to every bench (a sentinel), so a scale run asked for
    three rounds measured one."""
    from aimctl import main as cli  # noqa: PLC0415 - the command line, not the bench module

    seen: list[int] = []
    monkeypatch.setattr(scale, "main", lambda *args: seen.append(args[-1]) or 0)
    for argv, want in ((["bench", "scale", "--repeat", "3"], 3), (["bench", "scale"], 1)):
        assert cli.cmd_bench(cli.parser().parse_args(argv)) == 0
        assert seen.pop() == want


def test_the_memory_a_resync_leaves_behind_counts_against_the_budget() -> None:
    sizes = [figures(1000, 1), figures(10000, 10)]
    assert scale.budgets(sizes)["total_rss_within_2_gib"]
    sizes[1]["rss_mib_after_resync"] = {"total": 2600.0}  # a relist's peak, kept by the process
    assert not scale.budgets(sizes)["total_rss_within_2_gib"]
