"""The status service believes a report's subject, not its payload (issue 24, defect 2): the source
is the service the subject names, which must own the kind, and the payload must be about the object
the subject names."""

from __future__ import annotations

import pytest

from aim_status import authority
from aimcore.api.bus import subjects
from aimcore.api.bus.messages import ObjectRef, StatusReport
from aimcore.api.errors import PermanentError
from aimcore.api.kinds import STATUS_OWNERS, by_kind, crd_kinds, status_owner

SERVICE = by_kind("aim.eai.amd.com", "AIMService")


def _report(source: str = "deployer", name: str = "s") -> StatusReport:
    return StatusReport(object=ObjectRef.of(SERVICE, "ns", name), source=source)


def test_the_source_is_the_subjects() -> None:
    subject = subjects.status_subject("deployer", SERVICE, "ns", "s")
    assert authentic_source(subject, _report(source="someone-else")) == "deployer"
    assert authority.authentic(subject, _report()).source == "deployer"


def authentic_source(subject: str, report: StatusReport) -> str:
    return authority.authentic(subject, report).source


@pytest.mark.parametrize("service", sorted(set(STATUS_OWNERS) - {"deployer"}))
def test_another_services_report_on_a_kind_it_does_not_own_is_refused(service: str) -> None:
    subject = subjects.status_subject(service, SERVICE, "ns", "s")
    with pytest.raises(PermanentError, match="does not own the status of AIMService") as refused:
        authority.authentic(subject, _report(source="deployer"))
    assert refused.value.reason == authority.NOT_OWNER


@pytest.mark.parametrize(
    "subject",
    [
        "aim.status.aim.AIMService.ns.s",  # the layout before reports named their service
        subjects.status_subject("deployer", SERVICE, "ns", "other"),  # about another object
        subjects.status_subject("deployer", SERVICE, "other-ns", "s"),
        "aim.status.deployer.aim.AIMService.ns.s.extra",
    ],
)
def test_a_report_on_a_subject_that_does_not_name_it_is_refused(subject: str) -> None:
    with pytest.raises(PermanentError) as refused:
        authority.authentic(subject, _report())
    assert refused.value.reason == authority.WRONG_SUBJECT


def test_every_kind_with_a_status_has_exactly_one_owner() -> None:
    owned = [ref for refs in STATUS_OWNERS.values() for ref in refs]
    assert len(owned) == len(set(owned))
    assert set(owned) == set(crd_kinds())
    assert {status_owner(ref.group, ref.kind) for ref in owned} == set(STATUS_OWNERS)
