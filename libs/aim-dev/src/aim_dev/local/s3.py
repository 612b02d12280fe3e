"""An S3-compatible server on loopback for tests and the laptop demo: moto's ``moto_server`` as a process.

Real HTTP, real SigV4: with ``auth=True`` moto enforces IAM. moto counts authenticated actions and
lets the first ``INITIAL_NO_AUTH_ACTION_COUNT`` of them through unchecked (``moto/settings.py``,
``moto/core/authorization.py``); we set it to exactly the number of IAM calls it takes to create a
user with an S3 full-access inline policy and an access key, so every request after that bootstrap
must be signed with that key: a wrong secret gets 403 ``SignatureDoesNotMatch`` and an unknown key id
403 ``InvalidAccessKeyId``. Without auth any credentials work; fixed dummy ones are exposed.

moto keeps everything in memory: :meth:`restart` loses the buckets and, with auth, issues new keys.
``boto3`` is imported lazily (it comes with the dev dependency ``moto[server]``, not with aimcore).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aim_dev.local.binaries import MissingBinary
from aim_dev.local.processes import (
    ManagedProcess,
    ProcessFailed,
    SingleProcessServer,
    free_port,
    start_with_retries,
)

DUMMY_ACCESS_KEY = "aim-local-access-key"
DUMMY_SECRET_KEY = "aim-local-secret-key"
DEFAULT_REGION = "us-east-1"
S3_MIN_PART_SIZE = 5 * 1024 * 1024
"""What real S3 (and moto, by default) requires of every multipart part but the last."""

_IAM_USER = "aim-local-s3"
_S3_FULL_ACCESS = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}
_BOOTSTRAP_ACTIONS = 3  # iam:CreateUser, iam:PutUserPolicy, iam:CreateAccessKey


def moto_server_binary() -> str:
    """``moto_server`` from the running interpreter's environment (the ``moto[server]`` extra)."""
    candidate = Path(sys.executable).parent / "moto_server"
    if candidate.is_file():
        return str(candidate)
    raise MissingBinary(
        f"moto_server not found next to {sys.executable}; install the dev dependencies "
        "(`uv sync`, which brings moto[server])"
    )


def sha256_b64(data: bytes) -> str:
    """The form S3 uses for ``ChecksumSHA256`` (base64 of the raw digest)."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


@dataclass
class S3Server(SingleProcessServer):
    workdir: Path
    auth: bool = field(default=False, kw_only=True)
    port: int = field(default_factory=free_port, kw_only=True)
    region: str = field(default=DEFAULT_REGION, kw_only=True)
    min_part_size: int = field(default=S3_MIN_PART_SIZE, kw_only=True)
    process: ManagedProcess | None = field(default=None, kw_only=True)
    die_with_parent: bool = field(default=True, kw_only=True)
    access_key: str = field(default=DUMMY_ACCESS_KEY, init=False)
    secret_key: str = field(default=DUMMY_SECRET_KEY, init=False, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path | None:
        return self.process.log_path if self.process else None

    def start(self, timeout: float = 30.0, attempts: int = 3) -> S3Server:
        """Start moto_server; a port taken between choosing and binding it is retried on a new one."""

        def new_port() -> None:
            self.port = free_port()

        return start_with_retries(lambda: self._start(timeout), self.stop, new_port, attempts)

    def _start(self, timeout: float) -> S3Server:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {"S3_UPLOAD_PART_MIN_SIZE": str(self.min_part_size)}
        if self.auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(_BOOTSTRAP_ACTIONS)
        self.process = ManagedProcess(
            "moto_server",
            [moto_server_binary(), "-H", "127.0.0.1", "-p", str(self.port)],
            self.workdir / "logs",
            env=env,
            die_with_parent=self.die_with_parent,
        ).start()
        self.process.wait_until(self._healthy, timeout, "moto_server /moto-api/config")
        self.access_key, self.secret_key = DUMMY_ACCESS_KEY, DUMMY_SECRET_KEY
        if self.auth:
            self._bootstrap_iam()
        return self

    def _healthy(self) -> bool:
        # moto's own API is not an AWS action: it does not use up the unauthenticated allowance
        try:
            with urllib.request.urlopen(f"{self.endpoint}/moto-api/config", timeout=1) as resp:
                json.loads(resp.read())
                return True
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _bootstrap_iam(self) -> None:
        iam = self._boto3_client("iam", DUMMY_ACCESS_KEY, DUMMY_SECRET_KEY)
        try:
            iam.create_user(UserName=_IAM_USER)
            iam.put_user_policy(
                UserName=_IAM_USER, PolicyName="s3-full-access", PolicyDocument=json.dumps(_S3_FULL_ACCESS)
            )
            key = iam.create_access_key(UserName=_IAM_USER)["AccessKey"]
        except Exception as e:  # botocore errors are not importable without boto3
            raise ProcessFailed(f"moto IAM bootstrap failed: {e}") from e
        self.access_key, self.secret_key = str(key["AccessKeyId"]), str(key["SecretAccessKey"])

    def _boto3_client(self, service: str, access_key: str, secret_key: str, **kwargs: Any) -> Any:
        import boto3  # noqa: PLC0415 - optional: comes with moto[server]
        from botocore.config import Config  # noqa: PLC0415

        config = Config(
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1, "mode": "standard"},
            connect_timeout=5,
            read_timeout=30,
        )
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            config=config,
            **kwargs,
        )

    # -- clients and content ----------------------------------------------------------------

    def client(self, *, access_key: str | None = None, secret_key: str | None = None, **kwargs: Any) -> Any:
        """A boto3 S3 client for this server (path-style addressing, no retries), signed with the
        server's credentials unless others are given (to provoke auth errors)."""
        return self._boto3_client(
            "s3",
            self.access_key if access_key is None else access_key,
            self.secret_key if secret_key is None else secret_key,
            **kwargs,
        )

    def credentials_env(self) -> dict[str, str]:
        """Environment variables that point an AWS SDK (or the services) at this server."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }

    def ensure_bucket(self, bucket: str, s3: Any = None) -> None:
        s3 = s3 or self.client()
        try:
            s3.head_bucket(Bucket=bucket)
        except Exception as e:
            if _error_code(e) not in ("404", "NoSuchBucket", "NotFound"):
                raise
            s3.create_bucket(Bucket=bucket)

    def put_model(
        self, bucket: str, prefix: str, files: Mapping[str, bytes], *, checksum: bool = True
    ) -> dict[str, str]:
        """Upload ``files`` (relative path -> bytes) under ``prefix`` in ``bucket`` (created if
        needed); with ``checksum`` each object stores a SHA256 checksum (``head_object(...,
        ChecksumMode="ENABLED")`` returns ``ChecksumSHA256``). Returns key -> ETag (quoted)."""
        s3 = self.client()
        self.ensure_bucket(bucket, s3)
        base = prefix.strip("/")
        etags: dict[str, str] = {}
        for path, data in files.items():
            key = f"{base}/{path}" if base else path
            extra = {"ChecksumAlgorithm": "SHA256"} if checksum else {}
            resp = s3.put_object(Bucket=bucket, Key=key, Body=data, **extra)
            etags[key] = str(resp["ETag"])
        return etags

    def put_multipart(
        self, bucket: str, key: str, data: bytes, *, part_size: int | None = None, checksum: bool = False
    ) -> str:
        """Upload ``data`` as a multipart object (bucket created if needed), so its ETag has the
        multipart form ``"<md5 of the parts' md5s>-<parts>"``; returns that ETag (quoted). Parts are
        ``part_size`` bytes (default: the server's minimum part size) except the last."""
        size = part_size or self.min_part_size
        if size < self.min_part_size:
            raise ValueError(f"part_size {size} is below the server's minimum {self.min_part_size}")
        s3 = self.client()
        self.ensure_bucket(bucket, s3)
        extra = {"ChecksumAlgorithm": "SHA256"} if checksum else {}
        upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key, **extra)["UploadId"]
        parts: list[dict[str, Any]] = []
        try:
            for number, offset in enumerate(range(0, max(len(data), 1), size), start=1):
                body = data[offset : offset + size]
                resp = s3.upload_part(
                    Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body, **extra
                )
                part = {"PartNumber": number, "ETag": resp["ETag"]}
                if checksum:
                    part["ChecksumSHA256"] = resp["ChecksumSHA256"]
                parts.append(part)
            done = s3.complete_multipart_upload(
                Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except Exception:
            s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
            raise
        return str(done["ETag"])


def multipart_etag(data: bytes, part_size: int) -> str:
    """The ETag S3 gives a multipart object uploaded in ``part_size`` parts (quoted)."""
    digests = [
        hashlib.md5(data[i : i + part_size], usedforsecurity=False).digest()
        for i in range(0, max(len(data), 1), part_size)
    ]
    combined = hashlib.md5(b"".join(digests), usedforsecurity=False).hexdigest()
    return f'"{combined}-{len(digests)}"'


def _error_code(error: BaseException) -> str | None:
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return None if code is None else str(code)
    return None
