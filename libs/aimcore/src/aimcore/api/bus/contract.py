"""The bus contract as an AsyncAPI document, for the people and tools outside this project that read
the bus (the audit stream above all): every stream, subject pattern and payload, declared from the
same pydantic models and constants the services use, so the document cannot drift from the code.

It is a FastStream app that only declares: a NATS broker that never connects, one publisher per
subject pattern, with its JetStream stream and its payload model. FastStream turns that into AsyncAPI
3.0 (``aimctl bus spec``; ``docs/asyncapi.yaml`` is generated from it and a test fails when the
committed file differs). The services do not run on FastStream: their consumers need per-message
control (leases, acknowledgement timing, handing back on shutdown) that the runtime does itself
(docs/design-notes.md).
"""

from __future__ import annotations

from typing import Any

import yaml
from faststream.nats import JStream, NatsBroker
from faststream.specification import AsyncAPI

from aimcore.api.bus import subjects, topology
from aimcore.api.bus.auth import PROGRESS_PREFIX
from aimcore.api.bus.messages import ChangeEvent, Decision, StatusReport

TITLE = "AIM Engine bus"
VERSION = "v1alpha1"
SERVER = "nats://aim-nats.aim-system:4222"
OBJECT = "{group}.{kind}.{namespace}.{name}"
GROUPS = ("aim.eai.amd.com", "aim.silogen.ai", "inference.llmkube.dev", "serving.kserve.io")
TOKENS = (
    "Subject tokens: `{group}` is the API group's alias ("
    + ", ".join(f"`{subjects.group_token(g)}` for {g}" for g in GROUPS)
    + "; any other group escaped), `{kind}` the kind, `{namespace}` the namespace or "
    f"`{subjects.CLUSTER_SCOPE}` for cluster-scoped objects, `{{name}}` the name; a user-controlled token "
    "has every byte outside `[-_a-zA-Z0-9]` escaped as `=XX` (upper-case hex), reversibly. `{service}` "
    "is the publishing service (watcher, status, deployer, discovery, registry-sync, cache)."
)
DESCRIPTION = (
    "The messages the AIM Engine operator's services exchange over NATS JetStream. Three streams "
    f"record them, for replay and audit: `{topology.EVENTS_STREAM}` (change events and requeues), "
    f"`{topology.STATUS_STREAM}` (status reports) and `{topology.DECISIONS_STREAM}` (explained decisions, "
    "and an audit record of every status write). Payloads are JSON with a `schema_version`; a consumer "
    "must ignore fields it does not know. Each role may publish only the subjects shown for it "
    "(nats-server enforces it); the `reader` role reads every stream and publishes nothing. Retention "
    "is 7 days and 1 GiB per stream by default (`AIM_HISTORY_MAX_AGE`, `AIM_HISTORY_MAX_BYTES`).\n\n" + TOKENS
)


def broker() -> NatsBroker:
    """The declaring broker: one publisher per subject pattern (it never connects)."""
    nats = NatsBroker(
        SERVER, description="The operator's NATS (JetStream): NKey authentication, TLS in production."
    )
    events = JStream(topology.EVENTS_STREAM, declare=False)
    status = JStream(topology.STATUS_STREAM, declare=False)
    decisions = JStream(topology.DECISIONS_STREAM, declare=False)
    nats.publisher(
        f"{subjects.EVENTS_PREFIX}.{OBJECT}",
        stream=events,
        title="ChangeEvents",
        description=(
            "The watcher (role `watcher`, the leading replica) publishes one event per change it observes "
            "on an AIM object or a child the services watch, after writing the object to the KV mirror "
            f"`{topology.OBJECTS_BUCKET}`; the event carries the object's identity and resourceVersion, "
            "the mirror its content. Deduplicated by `Nats-Msg-Id` (uid and resourceVersion)."
        ),
        schema=ChangeEvent,
    )
    nats.publisher(
        f"{subjects.REQUEUE_PREFIX}.{{service}}.{OBJECT}",
        stream=events,
        title="Requeues",
        description=(
            "A service asks itself to reconcile an object again (work that finished outside a reconcile, "
            "or a schedule that came due). `change` is `requeue`."
        ),
        schema=ChangeEvent,
    )
    nats.publisher(
        f"{subjects.SCHEDULE_PREFIX}.{{service}}.{OBJECT}",
        stream=events,
        title="Schedules",
        description=(
            "A requeue to be published later: a `Nats-Schedule: @at <time>` message whose "
            f"`Nats-Schedule-Target` is the `{subjects.REQUEUE_PREFIX}.{{service}}.…` subject; JetStream "
            "keeps one per object and service (a newer one replaces it) and publishes it when due."
        ),
        schema=ChangeEvent,
    )
    nats.publisher(
        f"{subjects.STATUS_PREFIX}.{{service}}.{OBJECT}",
        stream=status,
        title="StatusReports",
        description=(
            "A service reports the conditions and status fields it owns for an object; the status service "
            "(the only writer of `.status`) merges them and writes. The source is the subject's "
            "`{service}`, never the payload's: nats-server lets each service publish only under its own "
            "name and only for the kinds it owns."
        ),
        schema=StatusReport,
    )
    nats.publisher(
        f"{subjects.DECISIONS_PREFIX}.{{service}}.{OBJECT}",
        stream=decisions,
        title="Decisions",
        description=(
            "An explained outcome (`template X selected because …`), and from the status service "
            "(`{service}` = status, `action` = `write-status`) an audit record of every status write: "
            "what changed, from which reports (`aimctl events --type decision` replays them; `aimctl "
            "describe` shows them as an object's condition history)."
        ),
        schema=Decision,
    )
    nats.publisher(
        f"{PROGRESS_PREFIX}.{OBJECT}",
        title="ProgressOffers",
        description=(
            "A download Job (role `download`) offers its progress; no stream records it. The cache "
            "service relays an offer as its own status report only when its `Aim-Progress-Token` header "
            "matches the object and it says nothing but progress."
        ),
        schema=StatusReport,
    )
    return nats


def document() -> AsyncAPI:
    return AsyncAPI(broker(), title=TITLE, version=VERSION, description=DESCRIPTION)


def yaml_text() -> str:
    """The AsyncAPI document, YAML (what ``docs/asyncapi.yaml`` holds), its channels, operations,
    messages and schemas in name order (FastStream's order varies between processes)."""
    spec: dict[str, Any] = document().to_specification().to_jsonable()
    for path in (("channels",), ("operations",), ("components", "messages"), ("components", "schemas")):
        *parents, last = path
        holder = spec
        for key in parents:
            holder = holder[key]
        holder[last] = dict(sorted(holder[last].items()))
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100)
