"""``dispatch``: one controller of several kind families hands each object to its family's
reconcile, and an object of no family to none."""

from __future__ import annotations

from typing import Any

from aimcore.api.kinds import LLMKUBE_MODEL, MODEL_KINDS, TEMPLATE_KINDS, KindRef
from aimcore.runtime import Request, Result, dispatch


def request(ref: KindRef) -> Request:
    obj = {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": {"name": "x", "namespace": "ns"}}
    none: Any = None
    return Request(ref, none, obj, none, none)


async def test_each_object_goes_to_its_familys_reconcile() -> None:
    seen: list[tuple[str, str]] = []

    def family(label: str) -> Any:
        async def reconcile(req: Request) -> Result | None:
            seen.append((label, req.ref.short))
            return Result(requeue_after=1.0) if label == "templates" else None

        return reconcile

    reconcile = dispatch((MODEL_KINDS, family("models")), (TEMPLATE_KINDS, family("templates")))
    assert await reconcile(request(MODEL_KINDS[-1])) is None
    assert await reconcile(request(TEMPLATE_KINDS[1])) == Result(requeue_after=1.0)
    assert await reconcile(request(LLMKUBE_MODEL)) is None  # no family: nothing runs
    assert seen == [("models", MODEL_KINDS[-1].short), ("templates", TEMPLATE_KINDS[1].short)]
