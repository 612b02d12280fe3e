"""The discovery "dry-run" Job of a service template: its name and body, its state, its output and why
it failed, kept free of I/O so the template controller stays a thin loop around it.

The original operator ran the AIM image with ``dry-run --format=json`` to learn which runtime profile
and which model artifacts a template resolves to, and cached the answer in the template's status.
This module reproduces that Job and fixes the original's gaps:

- The Job name carries a hash of the spec fields discovery depends on plus an attempt number, so a
  relevant spec change or a retry never reuses a stale Job (:func:`spec_hash`, :func:`job_name`).
- The pod runs hardened (non-root, no privilege escalation, all capabilities dropped, default
  seccomp profile), with ``backoffLimit: 0`` and a deadline; retries are the operator's, with an
  exponential back-off (:data:`JOB_RETRY`), and finished Jobs are deleted by the operator (no TTL).
- The output is parsed defensively (:func:`parse_output`): log lines around the JSON are tolerated,
  and output the CRD would reject - or a template without model sources, which would strand every
  service using it - is a clear :class:`DiscoveryOutputError`, not a half-written status.
- Failures get a specific reason (:func:`classify_failure`, :func:`pod_progress`) whose message
  never leaks credentials: env values are never quoted, and log excerpts are short and redacted.

Reading a Job's state and classifying its failure is not discovery's alone: that lives in
:mod:`aimcore.domain.jobs` (shared with the cache's download Jobs) and is re-exported here with the
discovery wording.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any

from pydantic import ValidationError

from aimcore.api.crds.aim import MODEL_ID_PATTERN, SOURCE_URI_PATTERN, AIMModelSource, AIMProfile
from aimcore.api.errors import AimError
from aimcore.api.imageref import pull_policy
from aimcore.domain import jobs
from aimcore.domain.naming import DNS_LABEL_MAX, go_json, label_value, sanitize_part
from aimcore.runtime import child_labels

__all__ = [
    "ACTIVE_DEADLINE_SECONDS",
    "ANNOTATION_ATTEMPT",
    "ANNOTATION_SPEC_HASH",
    "ANNOTATION_TEMPLATE_NAMESPACE",
    "CONTAINER_NAME",
    "JOB_RETRY",
    "LABEL_TEMPLATE",
    "DiscoveryOutputError",
    "DiscoveryResult",
    "classify_failure",
    "job_body",
    "job_name",
    "parse_output",
    "pod_progress",
    "spec_hash",
]

# -- job shape -----------------------------------------------------------------------------------

ACTIVE_DEADLINE_SECONDS = 900
"""How long one discovery attempt may run before Kubernetes kills it."""

CONTAINER_NAME = "discovery"
JOB_NAME_PREFIX = "discover"
RUN_AS_USER = 65532

LABEL_TEMPLATE = "aim.eai.amd.com/template"
ANNOTATION_SPEC_HASH = "aim.eai.amd.com/discovery-spec-hash"
ANNOTATION_ATTEMPT = "aim.eai.amd.com/discovery-attempt"
ANNOTATION_TEMPLATE_NAMESPACE = "aim.eai.amd.com/template-namespace"

BASE_LABELS: Mapping[str, str] = {
    "app.kubernetes.io/name": "aim-discovery",
    "app.kubernetes.io/component": "discovery",
    **child_labels("aim-engine"),
}

# -- message hygiene -----------------------------------------------------------------------------

QUOTE_LIMIT = 120
"""Longest excerpt of offending discovery output quoted in a DiscoveryOutputError."""


# ---------------------------------------------------------------------------------------------
# Naming
# ---------------------------------------------------------------------------------------------


def spec_hash(  # noqa: PLR0917 - the documented positional signature
    model_name: str | None,
    image: str | None,
    metric: str | None,
    precision: str | None,
    gpu_model: str | None,
    gpu_count: int | None,
    profile_id: str | None,
) -> str:
    """8 hex characters identifying the spec fields discovery depends on; a change of any of them
    means the cached discovery result is stale. ``None`` hashes like ``""``."""
    values = [
        "" if v is None else str(v)
        for v in (model_name, image, metric, precision, gpu_model, gpu_count, profile_id)
    ]
    return hashlib.sha256(go_json(values).encode()).hexdigest()[:8]


def job_name(template_name: str, spec_hash: str, attempt: int) -> str:
    """``discover-<template>-<hash>-<attempt>``, a DNS-1123 label: the template part is sanitised
    and cut so the whole name stays within 63 characters."""
    if attempt < 0:
        raise ValueError(f"attempt must not be negative, got {attempt}")
    suffix = f"-{sanitize_part(spec_hash)}-{attempt}"
    budget = DNS_LABEL_MAX - len(JOB_NAME_PREFIX) - 1 - len(suffix)
    template = sanitize_part(template_name)[: max(budget, 0)].rstrip("-")
    middle = f"-{template}" if template else ""
    return f"{JOB_NAME_PREFIX}{middle}{suffix}"


# ---------------------------------------------------------------------------------------------
# Job body
# ---------------------------------------------------------------------------------------------


def job_labels(template_name: str, extra_labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels of the Job and its pod: ``extra_labels`` first, the fixed ones on top so a caller
    can never break the selectors the operator relies on."""
    labels = dict(extra_labels or {})
    labels.update(BASE_LABELS)
    labels[LABEL_TEMPLATE] = label_value(template_name)
    return labels


def _profile_env(
    profile_id: str | None,
    metric: str | None,
    precision: str | None,
    gpu_model: str | None,
    gpu_count: int | None,
) -> list[dict[str, Any]]:
    pairs = (
        ("AIM_PROFILE_ID", profile_id),
        ("AIM_METRIC", metric),
        ("AIM_PRECISION", precision),
        ("AIM_GPU_MODEL", gpu_model),
        ("AIM_GPU_COUNT", None if gpu_count is None else str(gpu_count)),
    )
    return [{"name": name, "value": value} for name, value in pairs if value is not None and value != ""]


def merge_env(first: Iterable[Mapping[str, Any]], then: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``first`` followed by the entries of ``then`` whose name ``first`` does not already use."""
    out = [dict(e) for e in first]
    names = {e.get("name") for e in out}
    out.extend(dict(e) for e in then if e.get("name") not in names)
    return out


def job_body(
    *,
    name: str,
    namespace: str,
    template_name: str,
    template_namespace: str | None,
    image: str,
    image_pull_secrets: Sequence[str],
    service_account: str | None,
    env: Sequence[Mapping[str, Any]],
    owner: Mapping[str, Any],
    spec_hash: str,
    attempt: int,
    extra_labels: Mapping[str, str] | None = None,
    profile_id: str | None = None,
    metric: str | None = None,
    precision: str | None = None,
    gpu_model: str | None = None,
    gpu_count: int | None = None,
) -> dict[str, Any]:
    """The batch/v1 Job running ``<image> dry-run --format=json`` for one template."""
    labels = job_labels(template_name, extra_labels)
    annotations = {ANNOTATION_SPEC_HASH: spec_hash, ANNOTATION_ATTEMPT: str(attempt)}
    if template_namespace is not None:
        annotations[ANNOTATION_TEMPLATE_NAMESPACE] = template_namespace

    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": pull_policy(image),
        "args": ["dry-run", "--format=json"],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    container_env = merge_env(env, _profile_env(profile_id, metric, precision, gpu_model, gpu_count))
    if container_env:
        container["env"] = container_env

    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
    }
    if image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in image_pull_secrets]
    if service_account:
        pod_spec["serviceAccountName"] = service_account
    else:
        # The default service account's API token is of no use to the dry-run; don't hand it over.
        pod_spec["automountServiceAccountToken"] = False

    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [copy.deepcopy(dict(owner))],
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
        },
    }


JOB_RETRY = jobs.JOB_RETRY
"""Seconds to wait before the next attempt: 60·2^(n-1), at most an hour (with jitter); 0 before any
failure."""


# ---------------------------------------------------------------------------------------------
# Output parsing
# ---------------------------------------------------------------------------------------------


class DiscoveryOutputError(AimError, ValueError):
    """The discovery container's output is unusable; ``str(error)`` is a short, status-safe message."""

    reason = "InvalidDiscoveryOutput"
    transient = False


@dataclass(frozen=True)
class DiscoveryResult:
    """What one discovery run found.

    ``profile`` is ``AIMProfile`` wire JSON (``engine_args``, ``env_vars``, ``metadata`` with
    ``gpuCount``, ``originalDiscoveryOutput``); ``model_sources`` are ``AIMModelSource`` wire dicts
    (``modelId``, ``sourceUri``, ``size``), never empty.
    """

    profile: dict[str, Any]
    model_sources: list[dict[str, Any]] = field(default_factory=list)
    gpu_model: str | None = None
    gpu_count: int = 0


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else _compact(value)
    text = jobs.redact(" ".join(text.split()))
    if len(text) > QUOTE_LIMIT:
        text = text[: QUOTE_LIMIT - 1] + "…"
    return repr(text)


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except ValueError:
        return str(value)


def _json_arrays(log: str) -> list[list[Any]]:
    """Every top-level JSON array in ``log``, in order (arrays nested in a found array are skipped)."""
    decoder = json.JSONDecoder()
    found: list[list[Any]] = []
    pos = log.find("[")
    while pos != -1:
        try:
            value, end = decoder.raw_decode(log, pos)
        except ValueError:
            end = pos + 1
        else:
            if isinstance(value, list):
                found.append(value)
            else:  # pragma: no cover - raw_decode at '[' only yields lists
                end = pos + 1
        pos = log.find("[", end)
    return found


def _looks_like_output(array: list[Any]) -> bool:
    return bool(array) and isinstance(array[0], dict) and "profile" in array[0]


def _find_array(log: str) -> list[Any]:
    text = log.strip()
    if not text:
        raise DiscoveryOutputError("discovery produced no output")
    try:
        whole: Any = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, list):
        return list(whole)
    arrays = _json_arrays(log)
    if not arrays:
        last = text.splitlines()[-1]
        raise DiscoveryOutputError(f"discovery output holds no JSON array (last line: {_quote(last)})")
    # The last array that looks like discovery output; otherwise the last array, reported as is.
    for array in arrays[::-1]:
        if _looks_like_output(array):
            return array
    return arrays[-1]


def _env_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return go_json(value)


def _gpu_count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DiscoveryOutputError(
            f"profile.metadata.gpu_count must be a non-negative integer, got {_quote(value)}"
        )
    return value


_BINARY_UNITS = (
    ("Ei", 1024**6),
    ("Pi", 1024**5),
    ("Ti", 1024**4),
    ("Gi", 1024**3),
    ("Mi", 1024**2),
    ("Ki", 1024),
)


def size_quantity(size_gb: float | int) -> str:
    """``size_gb`` GiB as a Kubernetes quantity in the largest binary unit that is exact (``0.5`` →
    ``512Mi``, ``1.5`` → ``1536Mi``), else plain bytes (rounded up)."""
    size = Decimal(str(size_gb)) * 1024**3
    n_bytes = int(size.to_integral_value(rounding=ROUND_CEILING))
    if n_bytes == 0:
        return "0"
    for suffix, factor in _BINARY_UNITS:
        if n_bytes % factor == 0:
            return f"{n_bytes // factor}{suffix}"
    return str(n_bytes)


def _size(index: int, value: Any) -> str:
    where = f"models[{index}].size_gb"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DiscoveryOutputError(f"{where} must be a number, got {_quote(value)}")
    if not math.isfinite(value) or value < 0:
        raise DiscoveryOutputError(f"{where} must be a non-negative number, got {_quote(value)}")
    try:
        return size_quantity(value)
    except (InvalidOperation, ValueError, OverflowError) as exc:  # pragma: no cover - finite floats convert
        raise DiscoveryOutputError(f"{where} is not a usable size: {_quote(value)}") from exc


def _model_source(index: int, entry: Any) -> dict[str, Any]:
    where = f"models[{index}]"
    if not isinstance(entry, dict):
        raise DiscoveryOutputError(f"{where} is not an object: {_quote(entry)}")
    name, source = entry.get("name"), entry.get("source")
    if not isinstance(name, str) or not name:
        raise DiscoveryOutputError(f"{where} has no name: {_quote(entry)}")
    if not isinstance(source, str) or not source:
        raise DiscoveryOutputError(f"{where} ({name}) has no source: {_quote(entry)}")
    if not re.fullmatch(r"(hf|s3|oci)://.*", source, re.DOTALL):
        raise DiscoveryOutputError(
            f"{where}.source must be an hf://, s3:// or oci:// URI, got {_quote(source)}"
        )
    if not re.fullmatch(SOURCE_URI_PATTERN, source):
        raise DiscoveryOutputError(f"{where}.source is not a valid URI: {_quote(source)}")
    if not re.fullmatch(MODEL_ID_PATTERN, name):
        raise DiscoveryOutputError(f"{where}.name is not a valid model id (org/name): {_quote(name)}")
    wire: dict[str, Any] = {"modelId": name, "sourceUri": source}
    if entry.get("size_gb") is not None:
        wire["size"] = _size(index, entry["size_gb"])
    try:
        return AIMModelSource.model_validate(wire).wire()
    except ValidationError as exc:  # the model's rules beyond the patterns (aimcore.api.sourcerules)
        raise DiscoveryOutputError(f"{where}: {_pydantic_message(exc, {})}") from exc


_PROFILE_PATHS = {
    "engine_args": "profile.engine_args",
    "env_vars": "profile.env_vars",
    "metadata": "profile.metadata",
    "gpuCount": "gpu_count",
    "originalDiscoveryOutput": "output",
}
_ENUM_REPR = re.compile(r"<\w+\.\w+: ('[^']*')>")


def _pydantic_message(exc: ValidationError, paths: Mapping[str, str]) -> str:
    first = exc.errors()[0]
    path = ".".join(paths.get(str(p), str(p)) for p in first["loc"])
    text = _ENUM_REPR.sub(r"\1", first["msg"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    got = f", got {_quote(first['input'])}" if "input" in first else ""
    return f"{path}: {text}{got}{more}"


def _profile(element: dict[str, Any], raw: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    wire_metadata = {
        "engine": metadata.get("engine"),
        "gpu": metadata.get("gpu"),
        "precision": metadata.get("precision"),
        "gpuCount": metadata.get("gpu_count"),
        "metric": metadata.get("metric"),
        "type": metadata.get("type"),
    }
    profile: dict[str, Any] = {
        "metadata": {k: v for k, v in wire_metadata.items() if v is not None},
        "originalDiscoveryOutput": element,
    }
    if raw.get("engine_args") is not None:
        profile["engine_args"] = raw["engine_args"]
    env_vars = raw.get("env_vars")
    if env_vars is not None:
        if not isinstance(env_vars, dict):
            raise DiscoveryOutputError(f"profile.env_vars is not an object: {_quote(env_vars)}")
        profile["env_vars"] = {str(k): _env_value(v) for k, v in env_vars.items()}
    try:
        return AIMProfile.model_validate(profile).wire()
    except ValidationError as exc:
        raise DiscoveryOutputError(
            f"discovery profile rejected: {_pydantic_message(exc, _PROFILE_PATHS)}"
        ) from exc


def parse_output(log: str) -> DiscoveryResult:
    """The discovery container's log turned into a :class:`DiscoveryResult`.

    The whole log is tried as a JSON array first; failing that, the last JSON array in it whose
    first element has a ``profile`` (or just the last array, to report what is wrong with it).
    Raises :class:`DiscoveryOutputError` with a short message quoting at most ~120 characters.
    """
    array = _find_array(log)
    if not array:
        raise DiscoveryOutputError("discovery output is an empty JSON array: no profile was found")
    element = array[0]
    if not isinstance(element, dict):
        raise DiscoveryOutputError(f"discovery output element 0 is not an object: {_quote(element)}")
    raw = element.get("profile")
    if raw is None:
        raise DiscoveryOutputError(f"discovery output has no profile: {_quote(element)}")
    if not isinstance(raw, dict):
        raise DiscoveryOutputError(f"discovery output profile is not an object: {_quote(raw)}")
    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise DiscoveryOutputError(f"profile.metadata is not an object: {_quote(metadata)}")
    gpu_count = _gpu_count(metadata.get("gpu_count"))
    gpu_model = metadata.get("gpu")
    if gpu_model is not None and not isinstance(gpu_model, str):
        raise DiscoveryOutputError(f"profile.metadata.gpu must be a string, got {_quote(gpu_model)}")

    models = element.get("models")
    if models is None or models == []:
        raise DiscoveryOutputError(
            "discovery output lists no models: a template without model sources cannot be served"
        )
    if not isinstance(models, list):
        raise DiscoveryOutputError(f"discovery output models is not a list: {_quote(models)}")
    sources = [_model_source(i, m) for i, m in enumerate(models)]

    profile = _profile(element, raw, metadata)
    return DiscoveryResult(
        profile=profile, model_sources=sources, gpu_model=gpu_model or None, gpu_count=gpu_count
    )


# ---------------------------------------------------------------------------------------------
# Failure classification and progress
# ---------------------------------------------------------------------------------------------


def classify_failure(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], log_tail: str | None
) -> tuple[str, str]:
    """``(reason, message)`` for a failed discovery Job (:func:`aimcore.domain.jobs.classify_failure`)."""
    return jobs.classify_failure(
        job,
        pods,
        log_tail,
        what="discovery",
        container=CONTAINER_NAME,
        default_deadline=ACTIVE_DEADLINE_SECONDS,
    )


def pod_progress(pods: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """``(reason, message)`` describing the newest pod of a still-active discovery Job; ``None``
    without pods (:func:`aimcore.domain.jobs.pod_progress`)."""
    return jobs.pod_progress(pods, what="discovery", container=CONTAINER_NAME)
