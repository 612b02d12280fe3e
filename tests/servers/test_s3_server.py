"""The local S3 server (moto_server with IAM auth) against real boto3: uploads, listings, checksums,
multipart ETags, and auth/bucket errors with their distinct codes."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aim_dev.local.s3 import S3Server, multipart_etag, sha256_b64


def new_bucket() -> str:
    return f"aim-tests-{secrets.token_hex(4)}"


def error_of(call: Any, **kwargs: Any) -> tuple[int, str]:
    with pytest.raises(ClientError) as e:
        call(**kwargs)
    return e.value.response["ResponseMetadata"]["HTTPStatusCode"], e.value.response["Error"]["Code"]


def test_put_model_list_get_and_checksums(s3_server: S3Server) -> None:
    bucket = new_bucket()
    files = {"config.json": b'{"a": 1}', "weights/model.safetensors": secrets.token_bytes(2048)}
    etags = s3_server.put_model(bucket, "models/tiny/", files)
    s3 = s3_server.client()

    listed = s3.list_objects_v2(Bucket=bucket, Prefix="models/tiny/")["Contents"]
    assert {o["Key"]: o["Size"] for o in listed} == {f"models/tiny/{p}": len(d) for p, d in files.items()}
    for path, data in files.items():
        key = f"models/tiny/{path}"
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data
        head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        assert head["ChecksumSHA256"] == sha256_b64(data)
        assert head["ETag"] == etags[key] == f'"{hashlib.md5(data).hexdigest()}"'  # single part: MD5
        ranged = s3.get_object(Bucket=bucket, Key=key, Range="bytes=1-4")
        assert ranged["Body"].read() == data[1:5] and ranged["ContentRange"] == f"bytes 1-4/{len(data)}"

    s3_server.put_model(bucket, "plain", {"x.bin": b"x"}, checksum=False)
    assert "ChecksumSHA256" not in s3.head_object(Bucket=bucket, Key="plain/x.bin", ChecksumMode="ENABLED")


def test_multipart_upload_has_a_multipart_etag(s3_server: S3Server) -> None:
    bucket = new_bucket()
    part = s3_server.min_part_size
    data = secrets.token_bytes(part) + b"tail"
    etag = s3_server.put_multipart(bucket, "big.bin", data)
    assert etag == multipart_etag(data, part) and etag.endswith('-2"')
    s3 = s3_server.client()
    head = s3.head_object(Bucket=bucket, Key="big.bin")
    assert head["ETag"] == etag and head["ContentLength"] == len(data)
    assert s3.get_object(Bucket=bucket, Key="big.bin", Range=f"bytes={part}-")["Body"].read() == b"tail"


def test_wrong_secret_unknown_key_and_missing_bucket_are_distinct(s3_server: S3Server) -> None:
    bucket = new_bucket()
    s3_server.put_model(bucket, "", {"a": b"a"})
    wrong_secret = s3_server.client(secret_key="not-the-secret")
    unknown_key = s3_server.client(access_key="AKIA" + secrets.token_hex(8).upper(), secret_key="x")
    assert error_of(wrong_secret.list_objects_v2, Bucket=bucket) == (403, "SignatureDoesNotMatch")
    assert error_of(wrong_secret.get_object, Bucket=bucket, Key="a") == (403, "SignatureDoesNotMatch")
    assert error_of(unknown_key.list_objects_v2, Bucket=bucket) == (403, "InvalidAccessKeyId")
    assert error_of(unknown_key.get_object, Bucket=bucket, Key="a") == (403, "InvalidAccessKeyId")
    s3 = s3_server.client()
    assert error_of(s3.list_objects_v2, Bucket=new_bucket()) == (404, "NoSuchBucket")
    assert error_of(s3.get_object, Bucket=new_bucket(), Key="a") == (404, "NoSuchBucket")
    assert error_of(s3.get_object, Bucket=bucket, Key="missing") == (404, "NoSuchKey")
