"""Real servers come from the ``aimcore`` pytest plugin (aim_dev.testing.plugin); helpers are in
``tests.helpers``. Here: every test's tier (the folder it lives in) as its marker and its default
timeout, and the outbound policy of what the tests start."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from aimcore.domain.outbound import ALLOW_PRIVATE_ENV, ALLOWED_HOSTS_ENV
from tests.helpers import LOOPBACK_HOSTS, PATIENCE

TESTS = Path(__file__).resolve().parent

TIER_TIMEOUTS = {
    "unit": 30,
    "nats": 60,
    "oci": 30,
    "servers": 60,
    "cluster": 120,
    "integration": 180,
    "bus_cluster": 300,
    "multinode": 900,
    "node": 300,
}
"""Each tier's default timeout per test in seconds (pytest-timeout: setup and teardown included, so
the first test of a session also pays for its servers), about three times the slowest test
measured on a loaded two-core machine (``--durations``, load average 5 to 9): unit 9.6 s, nats
8.4 s, oci 2.2 s, servers 12 + 5.5 s (one test 30 s, marked), cluster 35 + 26 s, integration
21 + 43 s. bus_cluster and node keep the 300 s every test had (not measured here: they need a
three-node bus, and root; their long tests are marked); multinode's first test starts three
nodes and the production topology (about five minutes), and its fault tests mark their own. A
test that needs longer says so with ``@pytest.mark.timeout(N)`` and why. Each figure, a test's
own included, is multiplied by :data:`tests.helpers.PATIENCE` when the test runs."""


def tier_of(item: pytest.Item) -> str:
    """The folder under ``tests/`` that holds ``item``: its tier (pyproject declares each marker)."""
    parts = item.path.resolve().relative_to(TESTS).parts
    if len(parts) < 2 or parts[0] not in TIER_TIMEOUTS:
        tiers = ", ".join(TIER_TIMEOUTS)
        raise pytest.UsageError(f"{item.nodeid}: every test lives in a tier folder ({tiers})")
    return parts[0]


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier (``pytest -m unit`` selects exactly ``tests/unit``) and give it
    its own timeout, else the tier's, times :data:`~tests.helpers.PATIENCE`."""
    for item in items:
        tier = tier_of(item)
        item.add_marker(getattr(pytest.mark, tier))
        timeout = stated_timeout(item, TIER_TIMEOUTS[tier]) * PATIENCE
        item.add_marker(pytest.mark.timeout(timeout), append=False)


def stated_timeout(item: pytest.Item, default: float = 0.0) -> float:
    """The timeout ``item``'s closest ``timeout`` marker states, else ``default``."""
    marker = item.get_closest_marker("timeout")
    return float(marker.args[0]) if marker is not None and marker.args else default


SESSION_TEARDOWN = 300
"""Seconds the session's last test gets besides its own timeout: pytest-timeout counts a test's
teardown, and the last one's tears down every session-scoped server of every tier that ran (a node
stack took 58 s to stop on a loaded machine, a control plane up to 30 s), whatever its own tier."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Give the last selected test the session's teardown on top of its timeout."""
    if not session.items:
        return
    last = session.items[-1]
    last.add_marker(pytest.mark.timeout(stated_timeout(last) + SESSION_TEARDOWN * PATIENCE), append=False)


@pytest.fixture(autouse=True)
def outbound_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The operator-wide outbound policy of the processes the tests start (they inherit this
    environment and read it at start-up): the test servers' loopback hosts allow-listed, nothing
    else (the strict default otherwise). In-process code is handed its policy
    (:data:`tests.helpers.LOOPBACK`, the same allow-list); tests of the policy pass their own."""
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, LOOPBACK_HOSTS)
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)
    yield
