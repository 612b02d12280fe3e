"""A status too large for the API server is written without its largest fields and says why; a new
generation tries the full status again (:mod:`aim_status.oversize`)."""

from __future__ import annotations

import json
from typing import Any

from aim_status.oversize import CONDITION, REASON, Oversize, too_large
from aimcore.runtime import ApiException


def refused(status: int = 500, message: str = "etcdserver: request is too large") -> ApiException:
    exc = ApiException(status=status, reason="Internal Server Error")
    exc.body = json.dumps({"message": message})
    return exc


def model(generation: int, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"uid": "u1", "generation": generation, "resourceVersion": "5"},
        "spec": {"image": "x"},
        "status": status or {},
    }


def test_what_counts_as_too_large() -> None:
    assert too_large(refused())
    assert too_large(refused(413, "Request entity too large: limit is 3145728"))
    assert too_large(refused(500, "rpc error: trying to send message larger than max (2200000 vs. 2097152)"))
    assert not too_large(refused(500, "etcdserver: leader changed"))
    assert not too_large(refused(409, "the object has been modified"))


def test_the_largest_field_is_left_out_with_a_condition_then_remembered_for_the_generation() -> None:
    oversize = Oversize()
    new = {"status": "Ready", "imageMetadata": {"labels": "x" * 5000}, "small": "y" * 2000, "conditions": []}
    fitted = oversize.shrink(model(1), new, refused())
    assert fitted is not None and "imageMetadata" not in fitted and fitted["small"] == new["small"]
    (why,) = [c for c in fitted["conditions"] if c["type"] == CONDITION]
    assert (why["status"], why["reason"], why["observedGeneration"]) == ("False", REASON, 1)
    assert "status.imageMetadata (5,0" in why["message"] and "request is too large" in why["message"]
    again = oversize.known(model(1, fitted), new)  # the next report: nothing sent that must fail
    assert again == fitted
    # the next largest goes next, then nothing large is left
    smaller = oversize.shrink(model(1), new, refused())
    assert smaller is not None and "small" not in smaller
    assert oversize.shrink(model(1), new, refused()) is None


def test_a_new_generation_gets_the_full_status_and_loses_the_condition() -> None:
    oversize = Oversize()
    new = {"imageMetadata": {"labels": "x" * 5000}, "conditions": []}
    fitted = oversize.shrink(model(1), new, refused())
    assert fitted is not None
    full = {**new, "conditions": fitted["conditions"]}  # what composes on the current status
    assert oversize.known(model(2, fitted), full) == {**new, "conditions": []}
