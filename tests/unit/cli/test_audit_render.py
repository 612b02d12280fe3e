"""Audit output: the streaming table (columns, truncation to the width) and JSON lines (a fixed
set of keys, stable across runs), and the describe view."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aimcore.api.bus.messages import (
    ChangeEvent,
    ChangeType,
    ConditionReport,
    Decision,
    ObjectRef,
    StatusReport,
)
from aimctl.audit import render
from aimctl.audit.describe import ObjectHistory, render_json, render_text
from aimctl.audit.history import Record
from aimctl.audit.query import RecordType, resolve_kind

SVC = resolve_kind("aimsvc")
LEGACY = resolve_kind("aimservices.aim.silogen.ai")
T0 = datetime(2025, 3, 4, 12, 0, 1, 123456, tzinfo=UTC)


def rec(message: ChangeEvent | StatusReport | Decision, *, seq: int = 1, source: str = "") -> Record:
    record_type: RecordType = message.type  # type: ignore[assignment]
    payload: dict[str, Any] = json.loads(message.encode())
    obj = message.object
    return Record(
        time=T0,
        type=record_type,
        source=source or getattr(message, "source", "watcher"),
        group=obj.group,
        kind=obj.kind,
        namespace=obj.namespace,
        name=obj.name,
        stream={"change": "AIM_EVENTS", "status": "AIM_STATUS", "decision": "AIM_DECISIONS"}[record_type],
        seq=seq,
        subject="aim.x",
        payload=payload,
        message=message,
    )


def change(name: str = "llama.3", ref: Any = SVC) -> Record:
    return rec(
        ChangeEvent(
            object=ObjectRef.of(ref, "team-a", name),
            uid="u-1",
            resource_version="812",
            generation=3,
            change=ChangeType.MODIFIED,
            observed_at=T0,
        )
    )


def status() -> Record:
    return rec(
        StatusReport(
            object=ObjectRef.of(SVC, "team-a", "llama.3"),
            source="deployer",
            observed_generation=3,
            conditions=(
                ConditionReport(
                    type="Ready", status="False", reason="Pending", message="waiting\nfor template"
                ),
                ConditionReport(type="Progressing", status="True", reason="Resolving"),
            ),
            fields={"status": "Pending"},
            reported_at=T0,
        )
    )


def decision(message: str = "template x selected because it fits one MI300X", **kw: Any) -> Record:
    return rec(
        Decision(
            object=ObjectRef.of(SVC, "team-a", "llama.3"),
            source=kw.pop("source", "deployer"),
            action=kw.pop("action", "select-template"),
            reason=kw.pop("reason", "BestMatch"),
            message=message,
            details=kw.pop("details", {}),
            decided_at=T0,
        )
    )


def test_what_and_message_per_type() -> None:
    assert render.what(change()) == "modified"
    assert render.message(change()) == "resourceVersion 812, generation 3"
    assert render.what(status()) == "Ready=False Progressing=True"
    assert render.message(status()) == (
        "Ready: Pending - waiting for template; Progressing: Resolving; status=Pending; generation 3"
    )
    assert render.what(decision()) == "select-template (BestMatch)"
    assert render.message(decision()) == "template x selected because it fits one MI300X"


def test_table_columns_and_header() -> None:
    header = render.table_header()
    for title, _ in render.TABLE_COLUMNS:
        assert title in header
    assert header.endswith("MESSAGE")
    row = render.table_row(change())
    assert row.startswith("2025-03-04T12:00:01Z watcher")
    assert "AIMService" in row and "team-a/llama.3" in row and "change" in row and "modified" in row
    # Columns line up with the header.
    assert row.index("team-a/llama.3") == header.index("NAMESPACE/NAME")
    assert row.index("modified") == header.index("WHAT")
    legacy = render.table_row(change(ref=LEGACY))
    assert "AIMService.aim.silogen.ai" in legacy


def test_table_truncates_only_the_message_to_the_width() -> None:
    long = decision("word " * 100)
    row = render.table_row(long, width=150)
    assert len(row) == 150
    assert row.endswith(render.ELLIPSIS)
    assert "team-a/llama.3" in row
    assert len(render.table_row(long, width=None)) > 400
    short = render.table_row(decision("short"), width=150)
    assert short.endswith("short") and len(short) < 150


def test_table_never_cuts_names_and_keeps_some_message() -> None:
    long_name = "n" * 60
    rec_ = rec(
        Decision(
            object=ObjectRef.of(SVC, "team-a", long_name),
            source="deployer",
            action="reject",
            reason="InvalidSpec",
            message="m" * 200,
        )
    )
    row = render.table_row(rec_, width=100)
    assert long_name in row
    message = row.split("reject (InvalidSpec)")[1].strip()
    assert len(message) == render.MIN_MESSAGE and message.endswith(render.ELLIPSIS)


def test_table_rows_are_single_lines() -> None:
    row = render.table_row(decision("line one\nline two\r\n\tline three\x1b[31m"))
    assert "\n" not in row and "\r" not in row and "\x1b" not in row
    assert row.endswith("line one line two line three[31m")


def test_json_lines_have_stable_keys_and_values() -> None:
    for record in (change(), status(), decision()):
        line = render.json_line(record)
        assert "\n" not in line
        data = json.loads(line)
        assert tuple(data) == render.JSON_KEYS
        assert render.json_line(record) == line  # deterministic
    data = json.loads(render.json_line(decision()))
    assert data["time"] == "2025-03-04T12:00:01.123456Z"
    assert data["type"] == "decision"
    assert data["source"] == "deployer"
    assert (data["group"], data["kind"], data["namespace"], data["name"]) == (
        "aim.eai.amd.com",
        "AIMService",
        "team-a",
        "llama.3",
    )
    assert data["what"] == "select-template (BestMatch)"
    assert data["record"]["message"] == "template x selected because it fits one MI300X"
    assert data["stream"] == "AIM_DECISIONS" and data["seq"] == 1


def test_json_of_an_unreadable_record_keeps_every_key() -> None:
    odd = Record(
        time=T0,
        type="decision",
        source="future",
        group="aim.eai.amd.com",
        kind="AIMService",
        namespace=None,
        name="x",
        stream="AIM_DECISIONS",
        seq=7,
        subject="aim.decisions.future.aim.AIMService._.x",
        payload={"schema_version": 9},
        message=None,
    )
    data = json.loads(render.json_line(odd))
    assert tuple(data) == render.JSON_KEYS
    assert data["what"] == "?"
    assert "schema 9" in data["message"]
    assert data["namespace"] is None


def test_format_table_sizes_columns_and_truncates_the_last() -> None:
    lines = render.format_table(
        ("A", "BB", "MESSAGE"), [("x", "yyyy", "m" * 100), ("long-x", "y", "ok")], width=40
    )
    assert lines[0] == "  A       BB    MESSAGE"
    assert lines[1].startswith("  x       yyyy  mmm") and len(lines[1]) == 40
    assert lines[2] == "  long-x  y     ok"


WRITE = {
    "conditions": [
        {"type": "Ready", "status": "True", "reason": "AllComponentsReady", "message": "serving"},
        {"type": "Progressing", "status": "False", "reason": "Done", "message": ""},
    ],
    "fields": {"status": "Running"},
    "resourceVersion": "900",
}


def test_describe_text_has_every_section() -> None:
    obj = {
        "metadata": {"name": "llama.3", "namespace": "team-a", "generation": 3, "uid": "u-1"},
        "status": {
            "status": "Running",
            "observedGeneration": 3,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "AllComponentsReady", "message": "ok"}
            ],
        },
    }
    history = ObjectHistory(
        condition_writes=[
            decision(
                "Ready False→True (AllComponentsReady); status Pending→Running",
                source="status",
                action="write-status",
                reason="Running",
                details=WRITE,
            )
        ],
        decisions=[decision(), decision("spec.model is required", action="reject", reason="InvalidSpec")],
        changes=[change()],
    )
    text = render_text(SVC, "team-a", "llama.3", obj, history, width=120)
    for needle in (
        "Name:                llama.3",
        "Namespace:           team-a",
        "Kind:                AIMService (aim.eai.amd.com/v1alpha1)",
        "Generation:          3",
        "ObservedGeneration:  3",
        "Status:              Running",
        "Conditions:",
        "Condition history (status writes, oldest first):",
        "AllComponentsReady",
        "Done",
        "Recent decisions:",
        "select-template (BestMatch)",
        "reject (InvalidSpec)",
        "Recent change events:",
        "resourceVersion 812",
    ):
        assert needle in text, needle
    assert all(len(line) <= 120 for line in text.splitlines())

    view = render_json(SVC, "team-a", "llama.3", obj, history)
    assert list(view) == ["object", "conditions", "conditionHistory", "decisions", "changes"]
    assert view["object"]["found"] is True and view["object"]["status"] == "Running"
    assert view["conditionHistory"][0]["conditions"] == WRITE["conditions"]
    assert view["conditionHistory"][0]["resourceVersion"] == "900"
    json.dumps(view)


def test_describe_text_without_object_or_history() -> None:
    text = render_text(SVC, "team-a", "gone", None, ObjectHistory())
    assert "not found" in text
    assert text.count("<none>") == 4
