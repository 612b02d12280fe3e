"""When a finalizer skips its cleanup because the namespace is going away
(``aimcore.runtime.finalizers.namespace_terminating``): being deleted, gone, or unreadable
(Forbidden); any other error is the reconcile's to retry."""

from __future__ import annotations

from typing import Any

import pytest

from aimcore.api.kinds import NAMESPACE, KindRef
from aimcore.runtime import ApiException
from aimcore.runtime.finalizers import namespace_terminating


class _Namespaces:
    """Answers a namespace read with ``answer`` (an object, None for NotFound, or an error)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.read: list[tuple[KindRef, str | None, str]] = []

    async def get(self, ref: KindRef, namespace: str | None, name: str) -> Any:
        self.read.append((ref, namespace, name))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _ns(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "team", **meta}}


@pytest.mark.parametrize(
    ("answer", "terminating"),
    [
        (_ns(), False),
        (_ns(deletionTimestamp="2026-11-29T05:00:00Z"), True),
        (None, True),  # NotFound: already gone
        (ApiException(status=403, reason="Forbidden"), True),
    ],
)
async def test_a_namespace_is_terminating_when_deleted_gone_or_forbidden(
    answer: Any, terminating: bool
) -> None:
    kube = _Namespaces(answer)
    assert await namespace_terminating(kube, "team") is terminating  # type: ignore[arg-type]
    assert kube.read == [(NAMESPACE, None, "team")]


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_other_errors_are_raised_for_the_reconcile_to_retry(status: int) -> None:
    with pytest.raises(ApiException):
        await namespace_terminating(_Namespaces(ApiException(status=status, reason="x")), "team")  # type: ignore[arg-type]


async def test_a_cluster_scoped_object_reads_nothing() -> None:
    kube = _Namespaces(None)
    assert await namespace_terminating(kube, None) is False  # type: ignore[arg-type]
    assert kube.read == []
