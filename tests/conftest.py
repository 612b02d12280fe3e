"""Real servers come from the ``aimcore`` pytest plugin (aim_dev.testing.plugin); helpers are in
``tests.helpers``."""

from collections.abc import Iterator

import pytest

from aimcore.domain.outbound import ALLOW_PRIVATE_ENV, ALLOWED_HOSTS_ENV
from tests.helpers import LOOPBACK_HOSTS


@pytest.fixture(autouse=True)
def outbound_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The operator-wide outbound policy of the processes the tests start (they inherit this
    environment and read it at start-up): the test servers' loopback hosts allow-listed, nothing
    else (the strict default otherwise). In-process code is handed its policy
    (:data:`tests.helpers.LOOPBACK`, the same allow-list); tests of the policy pass their own."""
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, LOOPBACK_HOSTS)
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)
    yield
