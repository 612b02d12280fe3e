"""Why a download failed, as the condition reasons users see, and the one rule for messages: they
never carry a secret (tokens, keys, a signed URL's query string), so any message may be logged,
reported in status or printed by the CLI."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from aimcore.api.errors import AimError

AUTH_ERROR = "AuthError"
SOURCE_NOT_FOUND = "SourceNotFound"
STORAGE_FULL = "StorageFull"
DOWNLOAD_STALLED = "DownloadStalled"
CHECKSUM_MISMATCH = "ChecksumMismatch"
SOURCE_UNREACHABLE = "SourceUnreachable"
INVALID_SOURCE = "InvalidSource"
DOWNLOAD_FAILED = "DownloadFailed"
ADDRESS_NOT_ALLOWED = "AddressNotAllowed"  # the outbound address policy refused a connection
UNSUPPORTED_MEDIA_TYPE = "UnsupportedMediaType"  # an oci:// artifact that is not a model's files
INVALID_PROTOCOL = "InvalidDownloadProtocol"  # AIM_DOWNLOADER_PROTOCOL names no known sequence
PROTOCOL_UNAVAILABLE = "ProtocolUnavailable"  # a protocol this downloader does not implement (XET)

# Failures a retry cannot fix: the user must change the spec or the credentials first.
PERMANENT_REASONS = frozenset(
    {
        AUTH_ERROR,
        SOURCE_NOT_FOUND,
        INVALID_SOURCE,
        ADDRESS_NOT_ALLOWED,
        UNSUPPORTED_MEDIA_TYPE,
        INVALID_PROTOCOL,
        PROTOCOL_UNAVAILABLE,
    }
)


class DownloadError(AimError):
    """A failed download: ``reason`` is a condition reason, ``message`` is safe to show anywhere;
    ``transient`` (a later attempt may succeed) defaults to the reason not being one of
    :data:`PERMANENT_REASONS`."""

    reason = DOWNLOAD_FAILED

    def __init__(self, reason: str, message: str, *, transient: bool | None = None) -> None:
        super().__init__(
            message,
            reason=reason,
            transient=reason not in PERMANENT_REASONS if transient is None else transient,
        )

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"

    def __repr__(self) -> str:
        return f"DownloadError({self.reason!r}, {self.message!r})"


def redact_url(url: str) -> str:
    """``url`` without credentials, query string or fragment (signed URLs carry secrets there)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if ":" in (parts.hostname or "") and not host.startswith("["):
        host = f"[{parts.hostname}]" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def host_of(url: str) -> str:
    """The host (and port) of ``url``, for messages such as "no data for 60 s from <host>"."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unknown host>"
    host = parts.hostname or "<unknown host>"
    return f"{host}:{parts.port}" if parts.port else host


def is_transport_error(error: BaseException) -> bool:
    """Whether ``error`` (of any HTTP client: httpx, requests, the stdlib) is about the connection,
    not an answer."""
    names = {cls.__name__ for cls in type(error).__mro__}
    transport = {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError", "TransportError"}
    return bool(names & transport) or isinstance(error, ConnectionError | TimeoutError)
