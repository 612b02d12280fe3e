"""The status service's coalescer (``aim_status.coalesce``) and audit summary
(``aim_status.audit``) in-process, without servers (the service as a real process:
``tests/integration/test_status_service.py``): a burst of progress is one leading write and the
latest value trailing, a non-progress report is written at once with what is pending, each source
keeps its latest value, a value the stream has superseded is dropped, a failed trailing write is
retried, a close writes what is pending."""

from __future__ import annotations

from collections.abc import Sequence

from aim_status.audit import changed_conditions, changed_fields, summary, top_level_status
from aim_status.coalesce import Coalescer
from aim_status.ordering import Sequenced
from aimcore.api.bus.messages import ConditionReport, ObjectRef, StatusReport
from tests.helpers import eventually

WINDOW = 0.2
SUBJECT = "aim.status.cache.aim.AIMModelCache.ns.c"
REF = ObjectRef(group="aim.eai.amd.com", version="v1alpha1", kind="AIMModelCache", namespace="ns", name="c")


def progress(value: int, source: str = "cache") -> StatusReport:
    return StatusReport(
        object=REF, source=source, fields={"progress": {"downloadedBytes": value}}, progress=True
    )


def final(source: str = "cache") -> StatusReport:
    cond = ConditionReport(type="DownloadJobReady", status="True", reason="JobComplete")
    return StatusReport(object=REF, source=source, conditions=(cond,))


class FakeWriter:
    def __init__(self) -> None:
        self.calls: list[list[StatusReport]] = []
        self.fail = 0

    async def __call__(self, reports: Sequence[Sequenced]) -> bool:
        if self.fail:
            self.fail -= 1
            raise RuntimeError("API server unavailable")
        self.calls.append([r.report for r in reports])
        return True

    def values(self) -> list[list[int | None]]:
        return [
            [(r.fields.get("progress") or {}).get("downloadedBytes") for r in call] for call in self.calls
        ]


async def test_coalescer_leading_write_then_latest_value_trails() -> None:
    write = FakeWriter()
    co = Coalescer(write, WINDOW)
    for i, seq in zip(range(1, 51), range(100, 150), strict=True):
        await co.submit(SUBJECT, progress(i), seq)
    assert write.values() == [[1]]  # the leading write; 49 buffered, 48 of them replaced
    await eventually(lambda: _at_least(write, 2), what="the trailing write")
    assert write.values() == [[1], [50]]
    assert (co.stats.immediate, co.stats.buffered, co.stats.replaced, co.pending) == (1, 49, 48, 0)


async def test_coalescer_non_progress_is_immediate_and_flushes_pending_in_the_same_write() -> None:
    write = FakeWriter()
    co = Coalescer(write, WINDOW)
    await co.submit(SUBJECT, progress(1), 1)
    await co.submit(SUBJECT, progress(2), 2)
    await co.submit(SUBJECT, final(), 3)
    assert [[r.progress for r in call] for call in write.calls] == [[True], [True, False]]
    assert write.values()[1][0] == 2
    assert co.pending == 0  # no trailing write can land after the final report
    await co.close()
    assert len(write.calls) == 2


async def test_coalescer_keeps_each_sources_latest_value() -> None:
    write = FakeWriter()
    co = Coalescer(write, WINDOW)
    await co.submit(SUBJECT, progress(1, "a"), 1)
    await co.submit(SUBJECT, progress(2, "a"), 2)
    await co.submit(SUBJECT, progress(7, "b"), 3)
    await co.submit(SUBJECT, progress(3, "a"), 4)
    await eventually(lambda: _at_least(write, 2), what="the trailing write")
    assert [(r.source, r.fields["progress"]["downloadedBytes"]) for r in write.calls[1]] == [
        ("b", 7),
        ("a", 3),
    ]


async def test_coalescer_drops_a_value_the_stream_has_superseded() -> None:
    write = FakeWriter()
    asked: list[tuple[str, int, str]] = []

    async def superseded(subject: str, seq: int, source: str) -> bool:
        asked.append((subject, seq, source))
        return True  # another replica holds a newer report from the same source

    co = Coalescer(write, WINDOW, superseded=superseded)
    await co.submit(SUBJECT, progress(1), 10)
    await co.submit(SUBJECT, progress(2), 11)
    await eventually(lambda: _true(co.stats.stale == 1), what="the stale value to be dropped")
    assert write.values() == [[1]]
    assert asked == [(SUBJECT, 11, "cache")]


async def test_coalescer_retries_a_failed_trailing_write() -> None:
    write = FakeWriter()
    co = Coalescer(write, WINDOW)
    await co.submit(SUBJECT, progress(1), 1)
    write.fail = 1
    await co.submit(SUBJECT, progress(2), 2)
    await eventually(lambda: _at_least(write, 2), what="the retried trailing write")
    assert write.values() == [[1], [2]]
    assert co.stats.retries == 1


async def test_coalescer_close_writes_what_is_pending() -> None:
    write = FakeWriter()
    co = Coalescer(write, 3600)
    await co.submit(SUBJECT, progress(1), 1)
    await co.submit(SUBJECT, progress(2), 2)
    assert co.pending == 1
    await co.close()  # a clean shutdown does not wait for the window
    assert write.values() == [[1], [2]]
    assert co.pending == 0


async def test_coalescing_off_writes_everything() -> None:
    write = FakeWriter()
    co = Coalescer(write, 0)
    for i in range(5):
        await co.submit(SUBJECT, progress(i), i + 1)
    assert len(write.calls) == 5


async def _at_least(write: FakeWriter, n: int) -> bool:
    return len(write.calls) >= n


async def _true(value: bool) -> bool:
    return value


# -- the audit summary ------------------------------------------------------------------------------


def test_audit_summary_and_details() -> None:
    old = {
        "status": "Pending",
        "observedGeneration": 1,
        "progress": {"downloadedBytes": 1},
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Progressing", "lastTransitionTime": "t0"},
            {
                "type": "ArtifactsReady",
                "status": "False",
                "reason": "CreatingCaches",
                "lastTransitionTime": "t0",
            },
        ],
    }
    new = {
        "status": "Running",
        "observedGeneration": 2,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "AllComponentsReady", "lastTransitionTime": "t1"},
            {
                "type": "ArtifactsReady",
                "status": "True",
                "reason": "AllCachesReady",
                "lastTransitionTime": "t1",
            },
        ],
    }
    assert summary(old, new) == (
        "Ready False→True (AllComponentsReady); status Pending→Running; "
        "ArtifactsReady False→True (AllCachesReady); observedGeneration 1→2; progress removed"
    )
    assert [c["type"] for c in changed_conditions(old, new)] == ["Ready", "ArtifactsReady"]
    assert changed_fields(old, new) == {"status": "Running", "observedGeneration": 2, "progress": None}
    assert top_level_status(new) == "Running"
    assert top_level_status({"phase": "Downloading"}) == "Downloading"
    assert top_level_status({}) == "Updated"
