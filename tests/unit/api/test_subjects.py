"""Subject and key encoding: reversible, dot-free tokens valid for both subjects and KV keys."""

from __future__ import annotations

import re

import pytest

from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ChangeEvent, ChangeType, ObjectRef, change_msg_id
from aimcore.api.errors import NAK_BACKOFF, AckAction, PermanentError, TransientError, decide
from aimcore.api.kinds import KindRef

AIMSVC = KindRef("aim.eai.amd.com", "v1alpha1", "AIMService", "aimservices", True)
CLUSTER_MODEL = KindRef("aim.eai.amd.com", "v1alpha1", "AIMClusterModel", "aimclustermodels", False)
KV_KEY = re.compile(r"^[-/_=.a-zA-Z0-9]+$")


@pytest.mark.parametrize(
    "value", ["llama.3.1-8b", "a", "x=y", "weird name*>", "ümlaut.ü", "_", "a..b", "0-0"]
)
def test_escape_round_trips_and_has_no_separators(value: str) -> None:
    token = subjects.escape(value)
    assert subjects.unescape(token) == value
    assert "." not in token and "*" not in token and ">" not in token and " " not in token
    assert KV_KEY.match(token)


def test_distinct_names_never_share_a_subject() -> None:
    names = ["a.b", "a-b", "a=2Eb", "a_b", "a.b.c", "a-b-c"]
    built = {subjects.event_subject(AIMSVC, "ns", n) for n in names}
    assert len(built) == len(names)


def test_subject_layout_and_parse() -> None:
    subject = subjects.event_subject(AIMSVC, "team-a", "qwen.chat")
    assert subject == "aim.events.aim.AIMService.team-a.qwen=2Echat"
    tokens = subject.split(".")[2:]
    assert subjects.parse_object_tokens(tokens) == ("aim.eai.amd.com", "AIMService", "team-a", "qwen.chat")
    cluster = subjects.object_key(CLUSTER_MODEL, None, "m.1")
    assert cluster == "aim.AIMClusterModel._.m=2E1"
    assert KV_KEY.match(cluster)
    assert subjects.kind_filter(subjects.EVENTS_PREFIX, AIMSVC) == "aim.events.aim.AIMService.>"


def test_unknown_groups_are_escaped_reversibly() -> None:
    ref = KindRef("example.com", "v1", "Thing", "things", True)
    token = subjects.group_token(ref.group)
    assert "." not in token
    assert subjects.token_group(token) == "example.com"


def test_msg_id_is_deterministic_per_change() -> None:
    a = ChangeEvent(
        object=ObjectRef.of(AIMSVC, "ns", "x"), uid="u1", resource_version="7", change=ChangeType.ADDED
    )
    b = a.model_copy(update={"observed_at": a.observed_at.replace(year=2030)})
    assert a.msg_id == b.msg_id == "u1:7:added"
    assert change_msg_id("u1", "7", ChangeType.DELETED) != a.msg_id


def test_error_mapping() -> None:
    assert decide(None, 1).action is AckAction.ACK
    assert decide(PermanentError("InvalidSpec", "bad"), 4).action is AckAction.ACK
    nak = decide(TransientError("later", delay=7), 1)
    assert (nak.action, nak.delay) == (AckAction.NAK, 7)
    grows = [decide(RuntimeError("x"), n).delay for n in (1, 2, 3, 4)]
    assert grows == sorted(grows) and grows[0] < grows[-1]
    assert NAK_BACKOFF.delay(100, jitter=None) == 60.0
