"""Waiting for a CRD to be served reads the API server's answer fail-safe: a CRD just created may
have no status, or ``status.conditions: null`` (issue 24: ``aimctl up --node --demo --detach``
crashed in ``crdinstall.install`` iterating that ``None``). The real install path against a real
API server is ``tests/cluster/test_crd_install.py``."""

from __future__ import annotations

from typing import Any

import pytest

from aim_dev import crdinstall
from aimcore.api.kinds import KindRef


@pytest.mark.parametrize(
    "crd",
    [
        None,
        {},
        {"status": None},
        {"status": {}},
        {"status": {"conditions": None}},
        {"status": {"conditions": []}},
        {"status": {"conditions": [None, {"type": "Established"}]}},
        {"status": {"conditions": [{"type": "Established", "status": "False"}]}},
        {"status": {"conditions": [{"type": "NamesAccepted", "status": "True"}]}},
    ],
)
def test_a_crd_not_established_yet_is_not_an_error(crd: dict[str, Any] | None) -> None:
    assert crdinstall.established(crd) is False


def test_an_established_crd_is_established() -> None:
    conditions = [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]
    assert crdinstall.established({"status": {"conditions": conditions}}) is True


class _JustCreated:
    """The answers an API server gives for a CRD it has just created: no status, then conditions
    null, then Established (only ``apply``, ``get`` and ``/version`` are used by ``install``)."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = [
            {"metadata": {"name": "x"}},
            {"metadata": {"name": "x"}, "status": {"conditions": None, "acceptedNames": None}},
            {
                "metadata": {"name": "x"},
                "status": {"conditions": [{"type": "Established", "status": "True"}]},
            },
        ]
        self.gets = 0

    async def _call(self, method: str, path: str) -> dict[str, Any]:
        return {"major": "1", "minor": "20"}

    async def apply(self, ref: KindRef, body: dict[str, Any]) -> dict[str, Any]:
        return body

    async def get(self, ref: KindRef, namespace: str | None, name: str) -> dict[str, Any]:
        answer = self.answers[min(self.gets, len(self.answers) - 1)]
        self.gets += 1
        return answer


async def test_install_waits_through_a_null_condition_list() -> None:
    kube = _JustCreated()
    await crdinstall.install(kube, [{"metadata": {"name": "x"}}], timeout=10)  # type: ignore[arg-type]
    assert kube.gets == 3
