"""The reason table in docs/status.md is what the status rules derive (generated, drift-tested), and
names every reason the AIM kinds' reconcilers report."""

from __future__ import annotations

from pathlib import Path

from aim_dev import reasontable
from tests.unit.status import test_status_reasons

DOCS = Path(__file__).resolve().parents[3] / "docs" / "status.md"
# component-condition reporters of the AIM kinds (sources and LLMKube Models have no components)
REPORTERS = (
    "services/deployer/",
    "services/discovery/src/aim_discovery/templates.py",
    "services/discovery/src/aim_discovery/template_jobs.py",
    "services/discovery/src/aim_discovery/template_cache.py",
    "services/discovery/src/aim_discovery/template_status.py",
    "services/discovery/src/aim_discovery/model_reconciler.py",
    "services/cache/src/aim_cache/templatecaches.py",
    "services/cache/src/aim_cache/modelcaches.py",
)
# reported on the framework conditions, Ready or a non-component condition (Discovered) only
FRAMEWORK_ONLY = {
    "ReferenceNotFound",
    "InvalidConfig",
    "ObjectTooLarge",
    "Reconciling",
    "AwaitingDiscovery",
    "ImmutableFieldChanged",  # the deployer: ConfigValid only
    "RoutingRequiredForScaleToZero",  # the deployer: ConfigValid only
}


def test_the_page_shows_the_current_table() -> None:
    page = DOCS.read_text()
    assert reasontable.update(page) == page, "run `python -m aim_dev.reasontable`"


def test_every_reported_component_reason_is_in_the_table() -> None:
    collected = test_status_reasons.collect()
    reported = {
        reason
        for reason, places in collected.reasons.items()
        if any(place.startswith(REPORTERS) for place in places)
    }
    assert reported, "the collector found nothing: the paths changed?"
    missing = sorted(reported - reasontable.reasons() - FRAMEWORK_ONLY)
    assert missing == [], "add them to aim_dev.reasontable.TABLE"
