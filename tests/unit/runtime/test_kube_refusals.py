"""Which API errors are refusals (retrying the same write cannot help) and how refused bodies are
remembered so they are not sent again (``aimcore.runtime.refusals``)."""

from __future__ import annotations

import json

import aiohttp
import pytest

from aimcore.api.kinds import by_kind
from aimcore.runtime import ApiException, Refusal
from aimcore.runtime.refusals import MAX_MESSAGE, RefusedBodies, refusal

TEMPLATE = by_kind("aim.eai.amd.com", "AIMServiceTemplate")


def api_error(status: int, body: object = None, reason: str = "Whatever") -> ApiException:
    exc = ApiException(status=status, reason=reason)
    text = json.dumps(body) if isinstance(body, dict) else str(body or "")
    exc.body = text.encode()
    return exc


def test_a_422_is_a_refusal_with_the_servers_reason_and_message() -> None:
    body = {"kind": "Status", "reason": "Invalid", "message": 'spec.metric: Unsupported value: "balanced"'}
    found = refusal(api_error(422, body, reason="Unprocessable Entity"))
    assert found == Refusal(422, "Invalid", 'spec.metric: Unsupported value: "balanced"')
    assert not found.forbidden
    assert found.describe() == 'HTTP 422 Invalid: spec.metric: Unsupported value: "balanced"'


def test_a_403_is_a_forbidden_refusal() -> None:
    found = refusal(api_error(403, {"reason": "Forbidden", "message": "cannot create"}))
    assert found is not None and found.forbidden


def test_a_body_that_is_not_json_is_the_message() -> None:
    found = refusal(api_error(400, "bad request body", reason="Bad Request"))
    assert found == Refusal(400, "Bad Request", "bad request body")


def test_long_messages_are_cut() -> None:
    found = refusal(api_error(422, {"message": "x" * 5000}))
    assert found is not None and len(found.message) == MAX_MESSAGE and found.message.endswith("...")


@pytest.mark.parametrize("status", [404, 409, 429, 500, 503])
def test_errors_worth_retrying_are_not_refusals(status: int) -> None:
    assert refusal(api_error(status, {"message": "x"})) is None


def test_other_exceptions_are_not_refusals() -> None:
    assert refusal(aiohttp.ClientError("down")) is None
    assert refusal(ValueError("x")) is None


def body(metric: str, name: str = "t") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"metric": metric}}


def test_a_refused_body_is_remembered_until_it_changes() -> None:
    memo = RefusedBodies()
    refused = Refusal(422, "Invalid", "no")
    memo.remember(TEMPLATE, body("balanced"), refused)
    assert memo.get(TEMPLATE, body("balanced")) == refused
    assert memo.get(TEMPLATE, body("latency")) is None  # a changed body is sent again
    assert memo.get(TEMPLATE, body("balanced", name="other")) is None
    memo.forget(TEMPLATE, body("latency"))
    assert memo.get(TEMPLATE, body("balanced")) is None


def test_a_forbidden_body_is_not_remembered() -> None:
    memo = RefusedBodies()
    memo.remember(TEMPLATE, body("latency"), Refusal(403, "Forbidden", "no"))
    assert memo.get(TEMPLATE, body("latency")) is None


def test_the_memory_is_bounded() -> None:
    memo = RefusedBodies()
    memo.LIMIT = 2
    for name in ("a", "b", "c"):
        memo.remember(TEMPLATE, body("x", name), Refusal(422, "Invalid", name))
    assert memo.get(TEMPLATE, body("x", "a")) is None
    assert memo.get(TEMPLATE, body("x", "c")) is not None
