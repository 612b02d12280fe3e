"""The audit record of a status write survives a bus that cannot store it for a moment (a stream
electing a new leader after a NATS server died): it is published again, with the same
``Nats-Msg-Id``, until stored; past the auditor's patience it is logged and dropped, never raised
(the write has happened)."""

from __future__ import annotations

from typing import Any

from nats.js.errors import NoStreamResponseError

from aim_status.audit import Auditor
from aim_status.writer import Written
from aimcore.api.bus.messages import ObjectRef
from aimcore.api.kinds import by_kind

SERVICE = by_kind("aim.eai.amd.com", "AIMService")


class Bus:
    """A JetStream publisher that answers no stream for its first ``failures`` publishes."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[str] = []
        self.stored: list[str] = []

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str]) -> None:
        self.attempts.append(headers["Nats-Msg-Id"])
        if len(self.attempts) <= self.failures:
            raise NoStreamResponseError
        self.stored.append(headers["Nats-Msg-Id"])


def written() -> Written:
    ref = ObjectRef.of(SERVICE, "ns", "svc")
    new = {"status": "Running", "conditions": []}
    return Written(ref=SERVICE, object=ref, uid="uid-1", old={}, new=new, resource_version="7")


async def test_a_record_the_bus_cannot_store_yet_is_published_again_until_stored() -> None:
    bus = Bus(failures=2)
    auditor = Auditor(bus)  # type: ignore[arg-type]
    await auditor(written())
    assert bus.stored == ["status:write:uid-1:7"]
    assert bus.attempts == ["status:write:uid-1:7"] * 3  # one id: a stored retry is deduplicated
    assert (auditor.published, auditor.failed) == (1, 0)


async def test_past_its_patience_a_record_is_dropped_and_counted_not_raised() -> None:
    bus = Bus(failures=1_000)
    auditor: Any = Auditor(bus, patience=0.0)  # type: ignore[arg-type]
    await auditor(written())
    assert bus.stored == [] and len(bus.attempts) == 1
    assert (auditor.published, auditor.failed) == (0, 1)
