"""``s3://bucket/prefix``: every object under the prefix (or the one object the prefix names), listed
with boto3 from the model's env only (``AWS_*``, ``S3_*``; with no keys, anonymous), and fetched by
the transfer engine with a SigV4 signature on each request (:class:`S3Signer`), verified against a
full-object ``ChecksumSHA256`` and an md5 ETag where the object has them. Blocking: run in a
thread."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aim_cache_jobs.downloader import fetch
from aim_cache_jobs.downloader.errors import (
    AUTH_ERROR,
    DOWNLOAD_FAILED,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    DownloadError,
    is_transport_error,
)
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile
from aim_cache_jobs.downloader.sourceuri import ParsedSource, falsy, invalid_source, tls_verify, truthy
from aimcore.domain.outbound import STRICT, OutboundPolicy, refusal_in

PRESIGN_SECONDS = 12 * 3600
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")


def parse_s3(uri: str) -> ParsedSource:
    rest = uri[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise invalid_source(uri, "invalid bucket name")
    prefix = prefix.strip("/")
    if prefix and any(part in (".", "..") for part in prefix.split("/")):
        raise invalid_source(uri, "prefix must not contain '.' or '..' segments")
    return ParsedSource(uri=uri, scheme="s3", bucket=bucket, prefix=prefix)


@dataclass(frozen=True)
class S3Signer:
    """SigV4 ``Authorization`` headers for one S3 GET at a time (the Range header included), so every
    range request is signed when it is sent and never expires mid-download. Signing headers
    rather than presigning URLs also works with S3 servers that refuse query-string auth."""

    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    token: str | None = field(repr=False)
    region: str

    def __call__(self, method: str, url: str, headers: Mapping[str, str]) -> dict[str, str]:
        from botocore.auth import S3SigV4Auth  # noqa: PLC0415
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415
        from botocore.credentials import Credentials  # noqa: PLC0415

        request = AWSRequest(method=method, url=url, headers=dict(headers))
        S3SigV4Auth(Credentials(self.access_key, self.secret_key, self.token), "s3", self.region).add_auth(
            request
        )
        return dict(request.headers.items())


def s3_signer(env: Mapping[str, str]) -> S3Signer | None:
    """The signer for ``env``'s credentials; None for anonymous access."""
    access_key = env.get("AWS_ACCESS_KEY_ID") or None
    secret_key = env.get("AWS_SECRET_ACCESS_KEY") or None
    if not (access_key and secret_key):
        return None
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    return S3Signer(access_key, secret_key, env.get("AWS_SESSION_TOKEN") or None, region)


def s3_client(env: Mapping[str, str], policy: OutboundPolicy = STRICT) -> Any:
    """A boto3 S3 client configured only from ``env`` (never the process environment's endpoint
    settings; with no keys it is anonymous rather than searching instance metadata), whose every
    connection applies ``policy`` (default: the strict one)."""
    import boto3  # noqa: PLC0415 - heavy import, only for s3
    from botocore import UNSIGNED  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    no_ssl = truthy(env.get("S3_NO_SSL"))
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip() or None
    if endpoint and "://" not in endpoint:
        endpoint = ("http://" if no_ssl else "https://") + endpoint
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    access_key = env.get("AWS_ACCESS_KEY_ID") or None
    secret_key = env.get("AWS_SECRET_ACCESS_KEY") or None
    anonymous = not (access_key and secret_key)
    style = env.get("S3_ADDRESSING_STYLE") or ("path" if endpoint else "auto")
    config = Config(
        signature_version=UNSIGNED if anonymous else "s3v4",
        s3={"addressing_style": style},
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=10,
        read_timeout=60,
        ignore_configured_endpoint_urls=True,
    )
    verify: bool | str = True
    if falsy(env.get("S3_VERIFY_SSL")) or falsy(env.get("AWS_S3_VERIFY_SSL")):
        verify = False
    elif env.get("AWS_CA_BUNDLE"):
        verify = env["AWS_CA_BUNDLE"]
    session = boto3.session.Session(
        # Explicit (placeholder) keys stop botocore from probing instance metadata when anonymous.
        aws_access_key_id=access_key or "anonymous",
        aws_secret_access_key=secret_key or "anonymous",
        aws_session_token=None if anonymous else (env.get("AWS_SESSION_TOKEN") or None),
        region_name=region,
    )
    client = session.client("s3", endpoint_url=endpoint, config=config, use_ssl=not no_ssl, verify=verify)
    from aim_cache_jobs.downloader.s3connect import guard_client  # noqa: PLC0415 - imports botocore

    guard_client(client, policy)
    return client


_S3_NOT_FOUND = {"NoSuchBucket", "NoSuchKey", "NotFound", "404"}
_S3_AUTH = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AccessDenied",
    "403",
    "401",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AllAccessDisabled",
    "AccountProblem",
    "Forbidden",
}


def s3_error(error: BaseException, parsed: ParsedSource, endpoint: str | None) -> DownloadError:
    refusal = refusal_in(error)
    if refusal is not None:
        return fetch.refused(refusal)
    where = parsed.display
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = str(response.get("Error", {}).get("Code", ""))
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _S3_NOT_FOUND or status == 404:
            what = "bucket" if code == "NoSuchBucket" else "object"
            return DownloadError(SOURCE_NOT_FOUND, f"{where}: {what} not found ({code or status})")
        if code in _S3_AUTH or status in (401, 403):
            return DownloadError(
                AUTH_ERROR, f"{where}: access refused ({code or status}); check the S3 credentials"
            )
        if isinstance(status, int) and (status >= 500 or status == 429):
            return DownloadError(SOURCE_UNREACHABLE, f"{where}: S3 answered {code or status}")
        return DownloadError(DOWNLOAD_FAILED, f"{where}: S3 error {code or status}")
    names = {cls.__name__ for cls in type(error).__mro__}
    if names & {"NoCredentialsError", "PartialCredentialsError"}:
        return DownloadError(AUTH_ERROR, f"{where}: incomplete S3 credentials")
    if names & {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ConnectionClosedError",
        "ReadTimeoutError",
    }:
        return DownloadError(SOURCE_UNREACHABLE, f"cannot reach S3 endpoint {endpoint or 'AWS'} for {where}")
    if is_transport_error(error):
        return DownloadError(SOURCE_UNREACHABLE, f"cannot reach S3 endpoint {endpoint or 'AWS'} for {where}")
    return DownloadError(DOWNLOAD_FAILED, f"listing {where} failed: {type(error).__name__}")


def s3_digests(head: Mapping[str, Any]) -> tuple[tuple[Digest, ...], str | None]:
    """Digests from a HEAD: a full-object ChecksumSHA256, and the ETag as md5 when it is one."""
    digests: list[Digest] = []
    checksum = head.get("ChecksumSHA256")
    if (
        isinstance(checksum, str)
        and "-" not in checksum
        and head.get("ChecksumType", "FULL_OBJECT") == "FULL_OBJECT"
    ):
        try:
            raw = base64.b64decode(checksum, validate=True)
            if len(raw) == 32:
                digests.append(Digest("sha256", raw.hex()))
        except (binascii.Error, ValueError):
            pass
    etag = str(head.get("ETag", "")).strip('"') or None
    encrypted = head.get("SSECustomerAlgorithm") or head.get("ServerSideEncryption") == "aws:kms"
    if etag and not encrypted and re.fullmatch(r"[0-9a-fA-F]{32}", etag):
        digests.append(Digest("md5", etag))
    return tuple(digests), etag


def list_s3(parsed: ParsedSource, env: Mapping[str, str], policy: OutboundPolicy) -> Listing:
    assert parsed.bucket is not None and parsed.prefix is not None
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip() or None
    bucket, prefix = parsed.bucket, parsed.prefix
    try:
        client = s3_client(env, policy)
        signer = s3_signer(env)
        objects: dict[str, int] = {}
        exact: int | None = None
        paginator = client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket, Prefix=f"{prefix}/" if prefix else ""):
            for obj in page.get("Contents", ()):
                key = str(obj["Key"])
                if not key.endswith("/"):
                    objects[key] = int(obj["Size"])
        if prefix and not objects:
            try:
                exact = int(client.head_object(Bucket=bucket, Key=prefix)["ContentLength"])
                objects[prefix] = exact
            except Exception as e:
                if s3_error(e, parsed, endpoint).reason != SOURCE_NOT_FOUND:
                    raise
        if not objects:
            raise DownloadError(SOURCE_NOT_FOUND, f"no objects under {parsed.display}")

        def describe(key: str) -> RemoteFile:
            head = client.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
            digests, etag = s3_digests(head)
            rel = key.rsplit("/", 1)[-1] if exact is not None else key[len(prefix) + 1 :] if prefix else key
            # The object's plain URL as the client addresses it (endpoint, addressing style, key
            # quoting); each request is signed with headers by the signer, or anonymous.
            url = client.generate_presigned_url(
                "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=PRESIGN_SECONDS
            ).split("?", 1)[0]
            return RemoteFile(rel, int(head["ContentLength"]), url, {}, digests, etag, signer=signer)

        with ThreadPoolExecutor(max_workers=min(8, len(objects))) as pool:
            files = sorted(pool.map(describe, sorted(objects)), key=lambda f: f.path)
    except DownloadError:
        raise
    except Exception as e:
        raise s3_error(e, parsed, endpoint) from e
    return Listing(
        source=parsed.display, revision=None, files=tuple(files), tls_verify=tls_verify(parsed, env)
    )
