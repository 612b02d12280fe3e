"""The errors of the OCI client, each with the condition ``reason`` a service reports for it and
whether retrying may help (``transient``), as every :class:`aimcore.api.errors.AimError`.

Messages never contain credentials or the contents of a pull secret.
"""

from __future__ import annotations

from typing import Final

from aimcore.api.errors import AimError
from aimcore.api.imageref import InvalidReference


class OCIError(AimError):
    """Base of the registry client's errors. An image reference that cannot be parsed raises
    :class:`aimcore.api.imageref.InvalidReference` (the API layer's parser, which the CRD models
    validate with): catch :data:`OCI_ERRORS` for everything the client raises."""

    reason = "RegistryError"
    transient = False
    status: int | None = None
    """The HTTP status of the answer behind the error (the registry's or its token service's), when
    there is one."""

    def __init__(self, message: str = "", *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class CredentialsError(OCIError, ValueError):
    """A pull secret that is not a usable ``kubernetes.io/dockerconfigjson`` secret."""

    reason = "InvalidPullSecret"


class ImageNotFound(OCIError):
    """The registry says the manifest, tag or repository does not exist (404, ``*_UNKNOWN``)."""

    reason = "ImageNotFound"


class AuthFailed(OCIError):
    """Authentication or authorisation failed (401/403 after authenticating, or none possible)."""

    reason = "ImagePullAuthFailure"


class RegistryUnreachable(OCIError):
    """Connection refused, DNS failure, timeout, TLS failure, 5xx or 429."""

    reason = "RegistryUnreachable"
    transient = True


class RegistryError(OCIError):
    """The registry answered, but not in a way the client can use (unexpected status, bad JSON,
    digest mismatch, unsupported manifest type)."""

    reason = "RegistryError"


class InvalidDocument(RegistryError):
    """What the registry served is not a document the client can read: not JSON, not an object,
    larger than the limit."""


class DigestMismatch(RegistryError):
    """What the registry served does not have the digest it was asked for (a manifest pinned by
    digest, a blob)."""


class LabelError(OCIError, ValueError):
    """An AIM image label that cannot be parsed; ``label`` names it."""

    reason = "InvalidImageLabels"

    def __init__(self, label: str, problem: str) -> None:
        super().__init__(f"image label {label}: {problem}")
        self.label = label
        self.problem = problem


class AddressNotAllowed(OCIError):
    """The operator's outbound address policy refused a connection: the registry, its token realm or
    a redirect names a link-local, metadata or (unless allowed) private address. Only a change of the
    reference or of the operator's ``AIM_OUTBOUND_*`` settings helps."""

    reason = "AddressNotAllowed"


class InsecureTokenRealm(OCIError):
    """The registry sends its token requests to another host over plain HTTP: its credentials are not
    sent there (they would cross the network in the clear to a host they do not belong to)."""

    reason = "InsecureTokenRealm"


OCI_ERRORS: Final = (OCIError, InvalidReference)
"""Everything the registry client raises on purpose, for ``except OCI_ERRORS as exc``."""
