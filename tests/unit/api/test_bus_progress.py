"""Download progress offers (aimcore.api.bus.progress): what the cache service relays and what not."""

from __future__ import annotations

import pytest

from aimcore.api.bus import progress
from aimcore.api.bus.messages import ConditionReport, ObjectRef, StatusReport
from aimcore.api.errors import PermanentError

CACHE = ObjectRef(group="aim.eai.amd.com", version="v1alpha1", kind="AIMModelCache", namespace="a", name="c")
OTHER = ObjectRef(group="aim.eai.amd.com", version="v1alpha1", kind="AIMModelCache", namespace="b", name="c")
KEY = progress.key_from_seed("SUAcacheserviceseed")


def offer(obj: ObjectRef = CACHE, **changes: object) -> StatusReport:
    base = StatusReport(
        object=obj,
        uid="uid-1",
        source="cache",
        conditions=(
            ConditionReport(type="DownloadReady", status="False", reason="Downloading", message="1 %"),
        ),
        fields={"progress": {"percentage": 1}},
        progress=True,
    )
    return base.model_copy(update=changes)


def test_an_offer_with_its_objects_token_is_relayed_as_is() -> None:
    rep = offer()
    token = progress.token(KEY, CACHE, "uid-1")
    assert progress.vet(KEY, progress.subject(CACHE), rep.encode(), token) == rep


@pytest.mark.parametrize(
    ("subject", "body", "token", "why"),
    [
        (progress.subject(CACHE), offer().encode(), None, "no valid token"),
        (progress.subject(CACHE), offer().encode(), "0" * 64, "no valid token"),
        # a Job's token, used for another object (another namespace's cache of the same name)
        (
            progress.subject(OTHER),
            offer(OTHER).encode(),
            progress.token(KEY, CACHE, "uid-1"),
            "no valid token",
        ),
        # the token of a deleted object of the same name (another uid)
        (
            progress.subject(CACHE),
            offer(uid="uid-2").encode(),
            progress.token(KEY, CACHE, "uid-1"),
            "no valid",
        ),
        # a token made with another key (another installation)
        (
            progress.subject(CACHE),
            offer().encode(),
            progress.token(progress.key_from_seed("elsewhere"), CACHE, "uid-1"),
            "no valid token",
        ),
        (progress.subject(OTHER), offer().encode(), progress.token(KEY, CACHE, "uid-1"), "another object"),
        (progress.subject(CACHE), b"{not json", "x", "unreadable"),
    ],
)
def test_offers_that_are_refused(subject: str, body: bytes, token: str | None, why: str) -> None:
    with pytest.raises(PermanentError, match=why) as refused:
        progress.vet(KEY, subject, body, token)
    assert refused.value.reason == "ProgressRejected"


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"progress": False}, "not a progress report"),
        ({"source": "deployer"}, "not a progress report"),
        (
            {"conditions": (ConditionReport(type="DownloadReady", status="True", reason="Verified"),)},
            "other conditions",
        ),
        ({"conditions": (ConditionReport(type="Ready", status="True", reason="Done"),)}, "other conditions"),
        ({"fields": {"status": "Ready"}}, "other status fields"),
    ],
)
def test_a_token_holder_can_offer_progress_and_nothing_else(changes: dict[str, object], why: str) -> None:
    token = progress.token(KEY, CACHE, "uid-1")
    with pytest.raises(PermanentError, match=why):
        progress.vet(KEY, progress.subject(CACHE), offer(**changes).encode(), token)


def test_the_key_is_not_the_seed() -> None:
    assert b"SUAcacheserviceseed" not in KEY and len(KEY) == 32
