"""The alerts on live metrics: a real Prometheus (Debian's, unpacked by bootstrap) scrapes the
services' /metrics, one job per service as the ServiceMonitor relabels them, and evaluates the rules
of deploy/components/monitoring. On a healthy stack none fires; when a service's consumer stops (the
deployer killed), AIMServiceDown fires for it. The rules' `for` durations are shortened here (to
seconds) so the test waits seconds, not minutes; the durations themselves are tested with promtool
(tests/cluster/test_monitoring.py). Nothing else of the rules is changed."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from aim_dev.local import binaries
from aim_dev.local.processes import ManagedProcess, free_port
from aim_dev.testing.plugin import LocalServers, connect_as
from tests.helpers import eventually
from tests.integration.conftest import Services, consumers_ready

REPO = Path(__file__).resolve().parents[2]
RULE = REPO / "deploy" / "components" / "monitoring" / "prometheusrule.yaml"
SHORT_FOR = "2s"
SERVICES = ("watcher", "status", "deployer", "discovery")


class Prometheus:
    """One Prometheus process on loopback scraping the given targets (job → host:port)."""

    def __init__(self, workdir: Path, targets: dict[str, str]) -> None:
        self.workdir = workdir
        self.port = free_port()
        spec = yaml.safe_load(RULE.read_text())["spec"]
        for group in spec["groups"]:
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = SHORT_FOR
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "rules.yaml").write_text(yaml.safe_dump(spec))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
            "rule_files": [str(workdir / "rules.yaml")],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": [target]}]}
                for job, target in targets.items()
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.process = ManagedProcess(
            "prometheus",
            [
                binaries.find("prometheus"),
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            workdir,
        )

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/{path}", timeout=5) as resp:
            return json.load(resp)["data"]

    def firing(self) -> list[dict[str, Any]]:
        return [a for a in self.api("alerts")["alerts"] if a["state"] == "firing"]

    def last_evaluation(self) -> float:
        """When every rule group was last evaluated (the oldest of them), in Unix seconds."""
        groups = self.api("rules")["groups"]
        stamps = [g["lastEvaluation"] for g in groups]
        if not stamps or any(s.startswith("0001-") for s in stamps):
            return 0.0
        return min(_unix(s) for s in stamps)


def _unix(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def stack(private_stack: LocalServers) -> Iterator[Services]:
    services = Services(private_stack, private_stack.workdir / "logs")
    for name in SERVICES:
        services.start(name)
    try:
        yield services
    finally:
        services.stop_all()


async def test_alerts_stay_quiet_on_a_healthy_stack_and_fire_when_a_consumer_stops(
    private_stack: LocalServers, stack: Services, tmp_path: Path
) -> None:
    nc = await connect_as(private_stack.nats)
    try:
        await consumers_ready(nc.jetstream(), stack)
    finally:
        await nc.close()
    targets = {f"aim-{label}": f"127.0.0.1:{port}" for label, port in stack.health_ports.items()}
    prometheus = Prometheus(tmp_path / "prometheus", targets)
    prometheus.process.start()
    try:

        async def all_up() -> bool:
            try:
                active = prometheus.api("targets")["activeTargets"]
            except OSError:
                return False
            return len(active) == len(targets) and all(t["health"] == "up" for t in active)

        await eventually(all_up, timeout=60, interval=0.5, what="Prometheus scraping every service")
        up_since = time.time()

        async def evaluated_past_for() -> bool:
            # every rule evaluated after its (shortened) `for` ran out on healthy data
            return prometheus.last_evaluation() > up_since + 2 * float(SHORT_FOR.removesuffix("s"))

        await eventually(
            evaluated_past_for, timeout=60, interval=0.5, what="rule evaluations on healthy data"
        )
        assert prometheus.firing() == []

        stack.kill("deployer")

        async def deployer_down() -> list[dict[str, Any]]:
            return [
                a
                for a in prometheus.firing()
                if a["labels"]["alertname"] == "AIMServiceDown" and a["labels"]["job"] == "aim-deployer"
            ]

        (alert,) = await eventually(deployer_down, timeout=60, interval=0.5, what="AIMServiceDown to fire")
        assert alert["labels"]["severity"] == "critical"
        assert alert["annotations"]["summary"] == "aim-deployer cannot be scraped"
        # nothing else is down
        assert {a["labels"].get("job") for a in prometheus.firing()} == {"aim-deployer"}
    finally:
        prometheus.process.stop()
