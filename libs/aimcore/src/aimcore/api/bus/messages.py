"""The messages services exchange: change events (metadata only), status reports and decision
records. One frozen pydantic family, versioned, so every producer and consumer agrees on the wire.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aimcore.api.kinds import KindRef


def utcnow() -> datetime:
    return datetime.now(UTC)


class ChangeType(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RESYNC = "resync"
    """A version the watcher has published before, again (its periodic relist): nothing new, the
    object is to be looked at once more (a version the watch missed comes as added or modified)."""
    REQUEUE = "requeue"


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_version: Literal[1] = 1

    def encode(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


class ObjectRef(BaseModel):
    """Which object a message is about."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    group: str
    version: str
    kind: str
    namespace: str | None = None
    name: str

    @classmethod
    def of(cls, ref: KindRef, namespace: str | None, name: str) -> ObjectRef:
        return cls(group=ref.group, version=ref.version, kind=ref.kind, namespace=namespace, name=name)

    @property
    def display(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}.{self.group} {where}{self.name}"


class ChangeEvent(Message):
    """One observed change of one object; never the object itself (that is in the KV mirror)."""

    type: Literal["change"] = "change"
    object: ObjectRef
    uid: str
    resource_version: str
    generation: int | None = None
    change: ChangeType
    observed_at: datetime = Field(default_factory=utcnow)

    @property
    def msg_id(self) -> str:
        """Deterministic ``Nats-Msg-Id``: the same change published twice is stored once."""
        return change_msg_id(self.uid, self.resource_version, self.change)


def change_msg_id(uid: str, resource_version: str, change: ChangeType) -> str:
    return f"{uid}:{resource_version}:{change.value}"


class ConditionReport(BaseModel):
    """A condition as a service reports it; the status service adds times and generations."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""


class StatusReport(Message):
    """What one service says about one object: the conditions and status fields it owns."""

    type: Literal["status"] = "status"
    object: ObjectRef
    uid: str | None = None
    source: str = Field(description="The reporting service (owner of the conditions and fields).")
    observed_generation: int | None = None
    based_on: str | None = Field(
        default=None, description="resourceVersion of the state the report was computed from."
    )
    conditions: tuple[ConditionReport, ...] = ()
    fields: dict[str, Any] = Field(
        default_factory=dict, description="Top-level status fields owned by the source; None removes one."
    )
    progress: bool = Field(default=False, description="True for high-rate progress that may be coalesced.")
    reported_at: datetime = Field(default_factory=utcnow)

    @property
    def msg_id(self) -> str:
        digest = hashlib.sha256(self.model_dump_json(exclude={"reported_at"}).encode()).hexdigest()[:24]
        return f"status:{self.source}:{self.uid or self.object.name}:{self.based_on}:{digest}"


class Decision(Message):
    """An explained outcome, for the audit trail ("template X selected because ...")."""

    type: Literal["decision"] = "decision"
    object: ObjectRef
    source: str
    action: str
    reason: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
    decided_at: datetime = Field(default_factory=utcnow)
