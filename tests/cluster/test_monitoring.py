"""The monitoring component (deploy/components/monitoring): its alert rules pass `promtool check
rules` and their unit tests (`promtool test rules`, tests.yaml beside them: each alert fires on the
series that mean trouble and stays quiet on healthy ones), the rules and the dashboard name only
metrics the services serve and docs/operations.md explains, and the production overlay renders both."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aim_dev.local import binaries
from aimcore.runtime import REGISTRY

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "deploy" / "components" / "monitoring"
PRODUCTION = REPO / "deploy" / "overlays" / "production"
SERVICES = ("watcher", "status", "deployer", "discovery", "registry_sync", "cache")
METRIC = re.compile(r"\b((?:aim|process)_[a-z_]+)")
HISTOGRAM_SERIES = ("_bucket", "_count", "_sum")


def rule_spec() -> dict[str, Any]:
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    assert rule["kind"] == "PrometheusRule"
    spec: dict[str, Any] = rule["spec"]
    return spec


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binaries.find("promtool"), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_spec()))
    shutil.copy(MONITORING / "tests.yaml", tmp_path / "tests.yaml")
    return tmp_path


def test_rules_are_valid(rules_dir: Path) -> None:
    done = promtool("check", "rules", "rules.yaml", cwd=rules_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    alerts = [r["alert"] for g in rule_spec()["groups"] for r in g["rules"]]
    assert f"SUCCESS: {len(alerts)} rules found" in done.stdout


def test_every_alert_has_a_unit_test_and_they_pass(rules_dir: Path) -> None:
    alerts = {r["alert"] for g in rule_spec()["groups"] for r in g["rules"]}
    tests = yaml.safe_load((rules_dir / "tests.yaml").read_text())["tests"]
    tested = {case["alertname"] for t in tests for case in t["alert_rule_test"] if case["exp_alerts"]}
    assert alerts == tested, f"alerts without a test that makes them fire: {sorted(alerts - tested)}"
    done = promtool("test", "rules", "tests.yaml", cwd=rules_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_a_wrong_threshold_fails_the_unit_tests(rules_dir: Path) -> None:
    """The unit tests can fail: with the lag alert's threshold ten times higher, they do."""
    rules = (rules_dir / "rules.yaml").read_text()
    assert "aim_consumer_pending_messages) > 1000" in rules
    (rules_dir / "rules.yaml").write_text(
        rules.replace("pending_messages) > 1000", "pending_messages) > 10000")
    )
    done = promtool("test", "rules", "tests.yaml", cwd=rules_dir)
    assert done.returncode != 0
    assert "AIMConsumerLagHigh" in done.stdout + done.stderr


def served_metrics() -> set[str]:
    """Every metric name the services' processes serve: the runtime's and each service's own."""
    for service in SERVICES:
        importlib.import_module(f"aim_{service}.app")
    names: set[str] = set()
    for family in REGISTRY.collect():
        names.add(family.name + ("_total" if family.type == "counter" else ""))
    return names


def named_metrics(text: str) -> set[str]:
    names = set()
    for series in METRIC.findall(text):
        name = series
        for suffix in HISTOGRAM_SERIES:
            name = name.removesuffix(suffix)
        names.add(name)
    return names


def test_rules_and_dashboard_name_only_served_and_documented_metrics() -> None:
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = named_metrics((MONITORING / "prometheusrule.yaml").read_text()) | named_metrics("\n".join(exprs))
    assert "aim_consumer_replicas_current" in used
    served = served_metrics()
    assert used - served == set(), f"metrics no service serves: {sorted(used - served)}"
    documented = set(re.findall(r"^\| `(aim_[a-z_]+)`", (REPO / "docs" / "operations.md").read_text(), re.M))
    aim_used = {n for n in used if n.startswith("aim_")}
    assert aim_used - documented == set(), f"not in docs/operations.md: {sorted(aim_used - documented)}"


def test_the_production_overlay_renders_the_rules_and_the_dashboard() -> None:
    docs = [d for d in yaml.safe_load_all(binaries.kustomize_build(PRODUCTION)) if d]
    rules = [d for d in docs if d["kind"] == "PrometheusRule"]
    assert [r["metadata"]["name"] for r in rules] == ["aim-engine"]
    assert rules[0]["spec"] == rule_spec()
    (dashboard,) = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "aim-engine-dashboard"
    ]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["namespace"] == "aim-system"
    panels = json.loads(dashboard["data"]["aim-engine.json"])["panels"]
    assert sum(1 for p in panels if p["type"] == "timeseries") >= 12
