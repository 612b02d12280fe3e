"""A model URI as parsed (:class:`ParsedSource`, each scheme's parser in its source module), and what
every source reads from the model's env the same way: the TLS verification of the transfer and the
on/off variables. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aim_cache_jobs.downloader.errors import INVALID_SOURCE, DownloadError, redact_url


@dataclass(frozen=True)
class ParsedSource:
    uri: str
    scheme: str  # "hf" | "s3" | "oci" | "http" | "https" | "file"
    repo_id: str | None = None
    revision: str | None = None
    bucket: str | None = None
    prefix: str | None = None
    url: str | None = None
    path: str | None = None

    @property
    def display(self) -> str:
        """The URI safe to show (no query string or credentials)."""
        return redact_url(self.uri) if self.scheme in ("http", "https") else self.uri


def invalid_source(uri: str, why: str) -> DownloadError:
    shown = redact_url(uri) if uri.lower().startswith(("http://", "https://")) else uri
    return DownloadError(INVALID_SOURCE, f"invalid model source {shown!r}: {why}")


def truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def falsy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("0", "false", "no", "off")


def tls_verify(parsed: ParsedSource, env: Mapping[str, str]) -> bool | str:
    """TLS verification for the transfer: a CA bundle path, False, or True (system CAs)."""
    if parsed.scheme == "s3":
        if falsy(env.get("S3_VERIFY_SSL")) or falsy(env.get("AWS_S3_VERIFY_SSL")):
            return False
        if bundle := env.get("AWS_CA_BUNDLE"):
            return bundle
    if bundle := env.get("REQUESTS_CA_BUNDLE") or env.get("SSL_CERT_FILE"):
        return bundle
    return True
