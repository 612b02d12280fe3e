"""The error root (aimcore.api.errors.AimError): reason and transient as class defaults an instance
may override, and the acknowledgement that follows from ``transient``."""

from __future__ import annotations

import importlib
import inspect

import pytest

from aimcore.api.errors import AckAction, AimError, PermanentError, TransientError, decide, is_permanent
from aimcore.domain.oci import ImageNotFound, RegistryUnreachable
from aimcore.domain.outbound import OutboundRefused
from aimcore.domain.outbound.policy import UnresolvedHost
from tests.sources import module_files


class _Quota(AimError):
    reason = "QuotaExceeded"


def test_class_defaults_and_instance_overrides() -> None:
    plain = _Quota("over quota")
    assert (plain.reason, plain.transient, plain.message, str(plain)) == (
        "QuotaExceeded",
        False,
        "over quota",
        "over quota",
    )
    retried = _Quota("over quota for now", transient=True, reason="QuotaBusy")
    assert (retried.reason, retried.transient) == ("QuotaBusy", True)
    assert (_Quota.reason, _Quota.transient) == ("QuotaExceeded", False)  # the class is untouched
    assert AimError("x").reason == "InternalError"


def test_the_existing_errors_say_the_same_as_before() -> None:
    permanent = PermanentError("InvalidSpec", "spec.model: exactly one of name, image, custom")
    assert (permanent.reason, permanent.message, permanent.transient) == (
        "InvalidSpec",
        "spec.model: exactly one of name, image, custom",
        False,
    )
    transient = TransientError("not yet", delay=7)
    assert (transient.transient, transient.delay, str(transient)) == (True, 7, "not yet")
    assert (ImageNotFound("gone").reason, ImageNotFound("gone").transient) == ("ImageNotFound", False)
    assert (RegistryUnreachable("down").reason, RegistryUnreachable("down").transient) == (
        "RegistryUnreachable",
        True,
    )
    refused = OutboundRefused(
        "169.254.169.254 is a metadata address", host="metadata", address="169.254.169.254"
    )
    assert (refused.reason, refused.transient, refused.message) == (
        "AddressNotAllowed",
        False,
        "169.254.169.254 is a metadata address",
    )
    unresolved = UnresolvedHost("nowhere.example has no addresses")
    assert isinstance(unresolved, OSError) and unresolved.transient  # transport handlers still see an OSError
    assert str(unresolved) == "nowhere.example has no addresses"


@pytest.mark.parametrize(
    ("error", "action"),
    [
        (None, AckAction.ACK),
        (PermanentError("InvalidSpec", "bad"), AckAction.ACK),
        (ImageNotFound("no such tag"), AckAction.ACK),  # permanent: acknowledged, reported, not redelivered
        (_Quota("over", transient=True), AckAction.NAK),
        (RegistryUnreachable("503"), AckAction.NAK),
        (TransientError("later"), AckAction.NAK),
        (RuntimeError("a bug"), AckAction.NAK),  # unexpected: retried
    ],
)
def test_the_acknowledgement_follows_transient(error: BaseException | None, action: AckAction) -> None:
    assert decide(error, 1).action is action
    if error is not None:
        assert is_permanent(error) is (action is AckAction.ACK)


def test_every_error_of_the_runtime_and_the_services_has_the_root() -> None:
    errors = [
        obj
        for name, _ in module_files()
        for obj in vars(importlib.import_module(name)).values()
        if inspect.isclass(obj) and obj.__module__ == name and issubclass(obj, BaseException)
    ]
    assert len(errors) > 25  # the walk found them (32 when written)
    assert [e.__qualname__ for e in errors if not issubclass(e, AimError)] == []
    for error in errors:
        assert issubclass(error, AimError)
        assert isinstance(error.reason, str) and error.reason, error
        assert isinstance(error.transient, bool), error
