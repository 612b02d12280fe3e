"""What a model source's identifiers may say beyond the seeds' patterns, checked where the spec is
parsed so every service agrees (a failure is an ``InvalidSpec`` message naming the field).

Why: the identifiers of a model source become paths and requests. ``modelId`` is the directory
``/workspace/model-cache/{modelId}`` of the cache volume and the inference container's
``AIM_MODEL_ID``; a template's ``profileId`` names a profile file in the image
(``AIM_PROFILE_ID``); ``sourceUri`` is what the downloader lists and fetches. The seeds' patterns
(``^[a-zA-Z0-9_-]+/[a-zA-Z0-9._-]+$`` and ``^(hf|s3)://[^ \\t\\r\\n]+$``) let through ``acme/..``,
``hf://org/../x`` and ``s3://bucket/../key``, which leave the directory they are meant for, an
``hf://@main`` without a repository, and ``profileId: ../../etc/passwd``, which waited for a node
before anyone noticed. A repository without an organisation (``hf://gpt2``, the Hub's older
top-level models, which the released original's own tests download) is a repository. Each
function here returns why a value is refused (a message that says what to write instead), or
``None``.

The rules are the downloader's own (``aim_cache_jobs.downloader.sources``: it refuses the same values
when it runs), stated once for the spec. They are Python checks, not schema patterns or CEL
rules: a regular expression over an unbounded string in a CEL rule can exceed the CEL cost budget
of newer API servers and make the CRD uninstallable.
"""

from __future__ import annotations

import re
from typing import Annotated

from aimcore.api.decoding import rule
from aimcore.api.imageref import InvalidReference, parse_reference

__all__ = [
    "PVC_SCHEME",
    "ModelId",
    "SourceUri",
    "check_model_id",
    "check_profile_id",
    "check_source_uri",
    "model_id_error",
    "profile_id_error",
    "pvc_error",
    "pvc_parts",
    "source_uri_error",
]

_HF_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$")
"""A Hugging Face organisation or repository name (``huggingface_hub``'s rule: letters, digits,
``.``, ``_`` and ``-``, at most 96 characters, not starting or ending with ``.`` or ``-``)."""
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


def _dots_only(part: str) -> bool:
    return bool(part) and set(part) == {"."}


def model_id_error(value: str) -> str | None:
    """``modelId`` (``{org}/{name}``, the seed's pattern checked by pydantic): its name must not
    be ``.``, ``..`` or any run of dots, which would name the org's directory or leave it."""
    _, _, name = value.partition("/")
    if _dots_only(name):
        return (
            f"modelId {value!r}: the name {name!r} is a relative path segment, not a model name (the "
            "model is cached under /workspace/model-cache/{modelId}); write {org}/{model}, e.g. "
            "meta-llama/Llama-3.1-8B"
        )
    return None


def source_uri_error(value: str) -> str | None:
    """``sourceUri``: ``hf://[{org}/]{model}[@revision]`` or ``s3://{bucket}[/{key prefix}]``,
    without ``.``/``..`` path segments, ``oci://{registry}/{repository}[:tag][@sha256:…]``, or
    ``pvc://{claim}[/{path}]``."""
    if value.startswith("hf://"):
        return _hf_error(value)
    if value.startswith("s3://"):
        return _s3_error(value)
    if value.startswith("oci://"):
        return _oci_error(value)
    if value.startswith(PVC_SCHEME):
        return pvc_error(value)
    return None  # another scheme: the seed's pattern refuses it


def _hf_error(value: str) -> str | None:
    repo, at, revision = value.removeprefix("hf://").partition("@")
    parts = repo.split("/")
    expected = "write hf://{org}/{model}[@revision], e.g. hf://meta-llama/Llama-3.1-8B"
    if not repo:
        return f"sourceUri {value!r} names no repository; {expected}"
    if len(parts) > 2:
        return (
            f"sourceUri {value!r} has {len(parts)} path segments, a Hugging Face repository has two; "
            f"{expected}"
        )
    for part in parts:
        if _dots_only(part) or not _HF_NAME.match(part) or ".." in part or "--" in part:
            return (
                f"sourceUri {value!r}: {part!r} is not a Hugging Face name (letters, digits, '.', '_' "
                f"and '-', no '..' or '--', not starting or ending with '.' or '-'); {expected}"
            )
    if at and (not revision or len(revision) > 255 or _CONTROL.search(revision) or ".." in revision):
        return f"sourceUri {value!r}: the revision after '@' must be a branch, tag or commit without '..'"
    return None


def _s3_error(value: str) -> str | None:
    bucket, _, prefix = value.removeprefix("s3://").partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        return (
            f"sourceUri {value!r}: {bucket!r} is not an S3 bucket name (3-63 lower-case letters, "
            "digits, '.', '_' and '-', starting and ending with a letter or digit); write "
            "s3://{bucket}/{key prefix}"
        )
    segments = [s for s in prefix.strip("/").split("/") if s]
    if any(s in (".", "..") for s in segments):
        return (
            f"sourceUri {value!r}: the key prefix has a '.' or '..' segment, which would leave the "
            "model's directory when the files are written; name the prefix as it is stored"
        )
    return None


def _oci_error(value: str) -> str | None:
    rest = value.removeprefix("oci://")
    first = rest.split("/", 1)[0]
    expected = "write oci://{registry}/{repository}:{tag} or oci://{registry}/{repository}@sha256:{digest}"
    if "/" not in rest or not ("." in first or ":" in first or first == "localhost"):
        return f"sourceUri {value!r} names no registry host; {expected}"
    try:
        ref = parse_reference(rest)
    except InvalidReference as exc:
        return f"sourceUri {value!r}: {exc.message}; {expected}"
    if ref.digest is not None and not ref.digest.startswith("sha256:"):
        return f"sourceUri {value!r}: only a sha256 digest can be verified; {expected}"
    return None


_CLAIM = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


PVC_SCHEME = "pvc://"


def pvc_parts(value: str) -> tuple[str, str]:
    """``pvc://{claim}[/{path}]`` as ``(claim, path)``, the path without empty segments (``""``: the
    claim's root). Read by the cache service (the import) and the deployer (the mount's subPath)."""
    claim, _, path = value.removeprefix(PVC_SCHEME).partition("/")
    return claim, "/".join(p for p in path.split("/") if p)


def pvc_error(value: str) -> str | None:
    """``pvc://{claim}[/{path}]``: a volume the user filled, imported in place (this operator's
    extension): the claim a DNS subdomain name (a claim of the cache's own namespace), the path
    relative, without ``.``/``..`` segments."""
    claim, path = pvc_parts(value)
    expected = "write pvc://{claim}/{directory}, e.g. pvc://models/llama-3-8b"
    if not claim or len(claim) > 253 or not _CLAIM.match(claim):
        return f"sourceUri {value!r}: {claim!r} is not a PersistentVolumeClaim name; {expected}"
    if any(_dots_only(p) for p in path.split("/")) or _CONTROL.search(path) or "\\" in path:
        return (
            f"sourceUri {value!r}: the path must stay inside the claim (no '.' or '..' segments); {expected}"
        )
    return None


def profile_id_error(value: str) -> str | None:
    """A template's ``profileId``: the name of a profile of the image (``AIM_PROFILE_ID``, a file
    name there), so no path separators, no leading ``.``, no whitespace or control characters."""
    if not value or "/" in value or "\\" in value or value.startswith(".") or _CONTROL.search(value):
        return (
            f"profileId {value!r} is not a profile name: it names one of the image's profiles (e.g. "
            "vllm-mi300x-fp8-tp1-latency), so it must not contain '/', '\\', whitespace or control "
            "characters, nor start with '.'"
        )
    return None


def _checked(error: str | None, value: str) -> str:
    if error:
        raise ValueError(error)
    return value


def check_model_id(value: str) -> str:
    """``value``, or ``ValueError`` with :func:`model_id_error`'s message (a pydantic validator)."""
    return _checked(model_id_error(value), value)


def check_source_uri(value: str) -> str:
    """``value``, or ``ValueError`` with :func:`source_uri_error`'s message."""
    return _checked(source_uri_error(value), value)


def check_profile_id(value: str | None) -> str | None:
    """``value`` (``None`` allowed), or ``ValueError`` with :func:`profile_id_error`'s message."""
    return None if value is None else _checked(profile_id_error(value), value)


SourceUri = Annotated[str, rule(check_source_uri)]
"""A model source's ``sourceUri``, held to :func:`check_source_uri` wherever a model declares one."""
ModelId = Annotated[str, rule(check_model_id)]
"""A model source's ``modelId``, held to :func:`check_model_id` wherever a model declares one."""
