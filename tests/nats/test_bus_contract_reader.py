"""An outside tool reads the audit stream as docs/audit.md shows: plain nats-py with the reader
role's seed, an ordered consumer over `aim.decisions.status.>`; what it reads is the record the
status service published, and it validates against the payload schema of docs/asyncapi.yaml."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import nats
import yaml
from nats.js.api import DeliverPolicy

from aim_dev.local.natsserver import NatsServer
from aim_dev.testing.plugin import connect_as
from aimcore.api.bus import contract, subjects, topology
from aimcore.api.bus.messages import Decision, ObjectRef
from aimcore.api.kinds import by_kind

MODEL = by_kind("aim.eai.amd.com", "AIMModel")


def decision_schema() -> dict[str, Any]:
    spec = yaml.safe_load(contract.yaml_text())
    schema: dict[str, Any] = dict(spec["components"]["schemas"]["Decision"])
    schema["components"] = spec["components"]
    return schema


async def test_the_reader_reads_the_audit_records_as_the_docs_show(
    nats_factory: Callable[[], NatsServer],
) -> None:
    server = nats_factory()
    admin = await connect_as(server)
    await topology.ensure_topology(admin.jetstream())
    await admin.close()
    status = await connect_as(server, "status")
    record = Decision(
        object=ObjectRef.of(MODEL, "team-a", "llama"),
        source="status",
        action="status-write",
        reason="StatusWritten",
        message="Ready: False -> True",
    )
    await status.jetstream().publish(
        subjects.decision_subject("status", MODEL, "team-a", "llama"), record.encode()
    )
    await status.close()

    # docs/audit.md's example, with this server's address and the reader's seed
    seed = server.credentials.seed_file("reader").read_text().strip()
    nc = await nats.connect(server.url, nkeys_seed_str=seed, inbox_prefix="_INBOX.reader", connect_timeout=5)
    try:
        js = nc.jetstream()
        sub = await js.subscribe(
            "aim.decisions.status.>",
            stream="AIM_DECISIONS",
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
        )
        msg = await sub.next_msg(timeout=10)
        read = json.loads(msg.data)
    finally:
        await nc.close()
    assert (read["object"]["kind"], read["object"]["name"], read["message"]) == (
        "AIMModel",
        "llama",
        "Ready: False -> True",
    )
    jsonschema.validate(read, decision_schema())
