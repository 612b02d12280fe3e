"""What the cache service creates, as pure functions of the objects it reads: model-cache, PVC and
download-Job names, labels, the PVC's size and storage class, the download Job's body, and where a
model lives in the cache. Kept free of I/O so the controllers stay thin loops around it.

Names follow docs/original.md#derived-names: a model cache created for a template cache is named from
its source URI (dots → dashes) with a 10-character hash of the URI, the merged env and the storage
class (plus ``dedicated`` and the template cache's name in Dedicated mode), so Shared caches dedupe
per namespace; the PVC is ``<cache>-cache-<hash of the cache uid>``. The download Job carries the
attempt number in its name (``<cache>-download-<n>-<hash>``), so a retry never reuses a failed Job.

The Job runs ``modelDownloadImage`` as the seed defines it (default: KServe's storage initializer).
Images whose repository ends in ``storage-initializer`` get KServe's calling convention
(``<source> <destination>``); every other image is expected to carry this project's ``aim-download``
(the operator image does, and is the recommended value), which verifies every file and offers
progress on NATS with a token that binds it to its object (:class:`JobBus`).
"""

from __future__ import annotations

import hashlib
import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aim_cache_jobs.contract import (
    DOWNLOAD_COMMAND,
    DOWNLOAD_ROLE,
    LOG_FORMAT_ENV,
    NATS_ROLE_ENV,
    NATS_SEED_ENV,
    NATS_URL_ENV,
    PROGRESS_TOKEN_ENV,
    PROTOCOL_ENV,
    download_args,
    pull_secret_env,
)
from aim_cache_jobs.downloader import INVALID_SOURCE, DownloadError, model_id_for
from aim_cache_jobs.downloader.downloadstate import reports_download
from aim_cache_jobs.downloader.filters import NONE, SUBFOLDERS, DownloadFilter
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus import progress
from aimcore.api.bus.messages import ObjectRef
from aimcore.api.crds import aim
from aimcore.api.imageref import pull_policy
from aimcore.api.kinds import PART_OF_LABEL, PART_OF_VALUE
from aimcore.api.types import Obj
from aimcore.domain.families.base import written
from aimcore.domain.families.caches import ModelCache
from aimcore.domain.naming import derived_name, go_json, label_value
from aimcore.domain.outbound import POLICY_ENV
from aimcore.runtime import owner_reference

CACHE_ROOT = "/workspace/model-cache"
DEFAULT_HEADROOM_PERCENT = 10
GIB = 1024**3
CONTAINER = "download"
RUN_AS = 1000

LABEL_CACHE_NAME = "aim.eai.amd.com/cache.name"
LABEL_CACHE_TYPE = "aim.eai.amd.com/cache.type"
LABEL_COMPONENT = "aim.eai.amd.com/component"
LABEL_SOURCE_MODEL = "aim.eai.amd.com/source-model"
LABEL_TEMPLATE_CACHE = "aim.eai.amd.com/template-cache.name"
LABEL_TEMPLATE_NAME = "aim.eai.amd.com/template.name"
LABEL_TEMPLATE_SCOPE = "aim.eai.amd.com/template.scope"
LABEL_TEMPLATE_CREATED = "aim.eai.amd.com/template-created"
MANAGED_BY = "app.kubernetes.io/managed-by"
ANNOTATION_ATTEMPT = "aim.eai.amd.com/download-attempt"
ANNOTATION_SPEC_HASH = "aim.eai.amd.com/download-spec-hash"
ANNOTATION_HEADROOM = "aim.eai.amd.com/headroom-percent"
"""On a cache's PVC: the headroom it was sized with (the cache's ``status.headroomPercent``)."""


# -- names and places ----------------------------------------------------------------------------


def model_cache_name(
    source_uri: str, env: Sequence[Any], storage_class: str | None, dedicated_for: str | None
) -> str:
    inputs: list[Any] = [source_uri, list(env), storage_class or ""]
    if dedicated_for:
        inputs += ["dedicated", dedicated_for]
    return derived_name([source_uri.replace(".", "-")], inputs, hash_length=10)


def pvc_name(cache_name: str, uid: str) -> str:
    return derived_name([cache_name, "cache"], [uid])


def job_name(cache_name: str, uid: str, attempt: int) -> str:
    return derived_name([cache_name, "download", str(attempt)], [uid])


def model_id(uri: str, explicit: str | None = None) -> str:
    """``explicit`` (a ``modelId``), else ``org/name`` of an ``hf://`` source, else ``<bucket or
    host>/<last path element>`` (the seed asks S3 users to set ``modelId``; a stable fallback beats
    a failure)."""
    if explicit:
        return explicit
    derived = model_id_for(uri)
    if derived:
        return derived
    rest = uri.split("://", 1)[-1].strip("/")
    head, _, tail = rest.partition("/")
    last = posixpath.basename(tail.rstrip("/")) or "model"
    return f"{label_value(head) or 'source'}/{label_value(last) or 'model'}"


def mount_path(model: str) -> str:
    """``/workspace/model-cache/{modelId}`` with ``..`` and empty segments dropped."""
    parts = [p for p in model.split("/") if p not in ("", ".", "..")]
    return posixpath.join(CACHE_ROOT, *parts)


def source_label(source_uri: str) -> str:
    return label_value(source_uri.split("://", 1)[-1])


# -- storage --------------------------------------------------------------------------------------


def pvc_size_bytes(size_bytes: int, headroom_percent: int) -> int:
    """The model's size plus headroom, rounded up to whole GiB (at least 1 GiB)."""
    with_headroom = size_bytes * (100 + max(headroom_percent, 0)) / 100
    return max(1, math.ceil(with_headroom / GIB)) * GIB


def storage_class(own: str | None, config: Mapping[str, Any] | None) -> str | None:
    """The cache's own class, else the runtime config's default (``config``: the merged runtime
    config spec, :mod:`aimcore.domain.runtimeconfig`), else ``None`` (cluster default)."""
    if own:
        return own
    default = ((config or {}).get("storage") or {}).get("defaultStorageClassName")
    return str(default) if default else None


def headroom_percent(config: Mapping[str, Any] | None) -> int:
    value = ((config or {}).get("storage") or {}).get("pvcHeadroomPercent")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_HEADROOM_PERCENT


def cache_labels(cache: ModelCache) -> dict[str, str]:
    labels = {
        LABEL_CACHE_NAME: label_value(cache.name),
        LABEL_SOURCE_MODEL: source_label(cache.source_uri),
        PART_OF_LABEL: PART_OF_VALUE,
        MANAGED_BY: "aim-cache",
    }
    if cache.labels.get(LABEL_TEMPLATE_CREATED) == "true":
        labels[LABEL_CACHE_TYPE] = "template-cache"
    return labels


def pvc_body(cache: ModelCache, size_bytes: int, klass: str | None, headroom: int | None = None) -> Obj:
    spec: Obj = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": str(size_bytes)}},
    }
    if klass:
        spec["storageClassName"] = klass
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": pvc_name(cache.name, str(cache.uid)),
            "namespace": cache.namespace,
            "labels": cache_labels(cache),
            **({"annotations": {ANNOTATION_HEADROOM: str(headroom)}} if headroom is not None else {}),
            "ownerReferences": [owner_reference(cache.ref, cache.obj)],
        },
        "spec": spec,
    }


# -- the download Job ------------------------------------------------------------------------------


SCHEMA_DOWNLOAD_IMAGE: str = aim.AIMModelCacheSpec.model_fields["model_download_image"].default
"""What the aim group's schema writes when a model cache names no download image (the seeds' default,
KServe's storage initializer)."""


def download_image(cache: ModelCache, operators: str | None, behaviour: Behaviour) -> str:
    """The image of ``cache``'s download Job: the one it names, except under the released behaviour,
    where an ``AIMArtifact`` naming only the schema's default gets the operator's downloader
    (``AIM_CACHE_DOWNLOAD_IMAGE``) when one is set. The released original made its own downloader
    the kind's default, and that downloader's contract (the protocol sequence, ``status.download``,
    progress, the debug switches) is ``aim-download``'s; KServe's initializer has none of it."""
    image = cache.download_image
    artifact = reports_download(cache.ref.group, cache.ref.kind)
    if behaviour.released and artifact and operators and image == SCHEMA_DOWNLOAD_IMAGE:
        return operators
    return image


def uses_kserve_initializer(image: str) -> bool:
    repository = image.split("@", 1)[0]
    last = repository.rsplit("/", 1)[-1]
    return last.split(":", 1)[0].endswith("storage-initializer")


FILTER_UNSUPPORTED = "DownloadFilterUnsupported"
HF_DEFAULT_FILTER = DownloadFilter(exclude=(SUBFOLDERS,))
"""The filter of an ``hf://`` cache that sets none and whose runtime config sets none (the
released original's default)."""


def download_filter(cache: ModelCache, config: Mapping[str, Any] | None, image: str) -> DownloadFilter:
    """Which of the source's files ``cache``'s download keeps (:mod:`aim_cache_jobs.downloader.filters`):
    its own ``spec.downloadFilter``, else its runtime config's ``storage.downloadFilter``
    (``config``: the merged spec), else :data:`HF_DEFAULT_FILTER` for an ``hf://`` source and every
    file for others; ``{}`` at either level is every file. The size probe and the Job both use it.

    KServe's storage initializer (``image``) downloads every file and takes no filter: a cache that
    writes one itself is refused (``DownloadError(DownloadFilterUnsupported)``: a volume sized for the
    filtered files would not hold them all), and the defaults do not apply to it. A filter that is not
    lists of patterns (only possible past the CRDs' schema) is ``InvalidSource``."""
    own = cache.download_filter
    configured = ((config or {}).get("storage") or {}).get("downloadFilter")
    written_filter, where = (
        (own, "spec.downloadFilter") if own is not None else (configured, "storage.downloadFilter")
    )
    try:
        keep = DownloadFilter.from_spec(written_filter) if isinstance(written_filter, Mapping) else None
    except ValueError as exc:
        raise DownloadError(INVALID_SOURCE, f"{where}: {exc}") from None
    if written_filter is not None and keep is None:
        raise DownloadError(INVALID_SOURCE, f"{where} must be an object with include and exclude lists")
    if uses_kserve_initializer(image):
        if own is not None and keep is not None and not keep.off:
            raise DownloadError(
                FILTER_UNSUPPORTED,
                f"spec.downloadFilter ({keep.describe()}) needs the aim-download image: {image} (KServe's "
                "storage initializer) downloads every file; set spec.modelDownloadImage to the "
                "operator's downloader, or remove the filter",
            )
        return NONE
    if keep is not None:
        return keep
    return HF_DEFAULT_FILTER if cache.source_uri.lower().startswith("hf://") else NONE


def spec_hash(cache: ModelCache) -> str:
    """What a download depends on, as written; a change starts the attempts again."""
    spec = written(cache.resource.spec)
    relevant = {
        k: spec.get(k) for k in ("sourceUri", "env", "modelDownloadImage", "imagePullSecrets", "modelId")
    }
    if spec.get("downloadFilter") is not None:  # only when set: a cache without one keeps its hash
        relevant["downloadFilter"] = spec["downloadFilter"]
    return hashlib.sha256(go_json(relevant).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class JobBus:
    """How a download Job offers progress (:mod:`aimcore.api.bus.progress`): the bus URL, the ``download``
    role's seed, and the cache service's token key (the Job gets only its object's token)."""

    url: str
    seed: str | None
    token_key: bytes = field(repr=False)

    def env(self, cache: ModelCache) -> list[Obj]:
        target = ObjectRef.of(cache.ref, cache.namespace, cache.name)
        values = {
            NATS_URL_ENV: self.url,
            NATS_ROLE_ENV: DOWNLOAD_ROLE,
            NATS_SEED_ENV: self.seed,
            PROGRESS_TOKEN_ENV: progress.token(self.token_key, target, cache.uid),
        }
        return [{"name": k, "value": v} for k, v in values.items() if v]


def download_env(cache: ModelCache) -> list[Obj]:
    """The model's env for its download: ``spec.env`` as written, and for an ``oci://`` source
    each of ``imagePullSecrets`` as ``AIM_OCI_PULL_SECRET_<n>`` (its ``.dockerconfigjson``: the
    registry that holds the model is a container registry, and its pull secret the cluster's usual
    one)."""
    env = [written(e) for e in cache.env]
    if cache.source_uri.startswith("oci://"):
        env += [
            {
                "name": pull_secret_env(i),
                "valueFrom": {"secretKeyRef": {"name": name, "key": ".dockerconfigjson"}},
            }
            for i, name in enumerate(cache.pull_secrets)
        ]
    return env


DOWNLOAD_DEADLINE = 24 * 60 * 60
"""A download Job's ``activeDeadlineSeconds`` (the released AIM Engine's): a backstop for a download
wedged where no stall is seen (a filesystem that hangs). The Job then fails as
``JobDeadlineExceeded``, which is retried with back-off like any transient failure, and the next
Job resumes from the files already on the volume."""


def job_body(
    cache: ModelCache,
    *,
    attempt: int,
    bus: JobBus | None,
    stall_timeout: float,
    outbound: Mapping[str, str] | None = None,
    log_format: str = "text",
    protocol_sequence: Sequence[str] = (),
    image: str | None = None,
    keep: DownloadFilter = NONE,
) -> Obj:
    """The download Job, running ``image`` (by default the one the cache names), downloading the
    files ``keep`` keeps (:func:`download_filter`; written as arguments). ``outbound`` is
    the operator's outbound address policy as environment variables
    (:meth:`aimcore.domain.outbound.OutboundPolicy.env`): the downloader in the Job enforces it.
    The model cache's env may not set those variables (they are dropped from it and the operator's
    values added last). ``log_format`` is the cache service's own ``AIM_LOG_FORMAT``: aim-download
    logs as the operator does (JSON lines on request). ``protocol_sequence`` (the one resolved from the
    model cache's and its runtime config's env) is the Job's ``AIM_DOWNLOADER_PROTOCOL``, written
    out so that ``kubectl describe job`` shows what the download tries."""
    ref, name, uid = cache.ref, cache.name, str(cache.uid)
    labels = {**cache_labels(cache), LABEL_CACHE_TYPE: "artifact", LABEL_COMPONENT: "download"}
    pod_spec: Obj = {
        "restartPolicy": "Never",
        "securityContext": {"fsGroup": RUN_AS, "runAsNonRoot": True},
        "containers": [
            download_container(
                cache,
                bus,
                stall_timeout,
                outbound or {},
                log_format,
                protocol_sequence=protocol_sequence,
                image=image or cache.download_image,
                keep=keep,
            )
        ],
        "volumes": [
            {"name": "cache", "persistentVolumeClaim": {"claimName": pvc_name(name, uid)}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    secrets = [{"name": s} for s in cache.pull_secrets]
    if secrets:
        pod_spec["imagePullSecrets"] = secrets
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(name, uid, attempt),
            "namespace": cache.namespace,
            "labels": labels,
            "annotations": {ANNOTATION_ATTEMPT: str(attempt), ANNOTATION_SPEC_HASH: spec_hash(cache)},
            "ownerReferences": [owner_reference(ref, cache.obj)],
        },
        "spec": {
            "backoffLimit": 0,  # retries are the operator's, with back-off
            "activeDeadlineSeconds": DOWNLOAD_DEADLINE,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def download_container(
    cache: ModelCache,
    bus: JobBus | None,
    stall_timeout: float,
    outbound: Mapping[str, str],
    log_format: str,
    *,
    protocol_sequence: Sequence[str] = (),
    image: str,
    keep: DownloadFilter = NONE,
) -> Obj:
    """The download Job's container running ``image``: ``aim-download`` (:mod:`aim_cache_jobs.contract`:
    its arguments and the variables it reads), or KServe's storage initializer called its own way."""
    dest = mount_path(model_id(cache.source_uri, cache.model_id))
    source = cache.source_uri
    reserved = {*POLICY_ENV, LOG_FORMAT_ENV, *([PROTOCOL_ENV] if protocol_sequence else [])}
    env: list[Any] = [e for e in download_env(cache) if e.get("name") not in reserved]
    if protocol_sequence:
        env.append({"name": PROTOCOL_ENV, "value": ",".join(protocol_sequence)})
    if uses_kserve_initializer(image):
        command: list[str] | None = None
        args = [source, dest]
    else:
        command = [DOWNLOAD_COMMAND]
        target = ObjectRef.of(cache.ref, cache.namespace, cache.name)
        args = download_args(
            source, dest, stall_timeout=stall_timeout, obj=target, uid=str(cache.uid), keep=keep
        )
        if bus is not None:
            env.extend(bus.env(cache))
        env.append({"name": LOG_FORMAT_ENV, "value": log_format})
    env.append({"name": "HOME", "value": "/tmp"})
    env.extend({"name": k, "value": v} for k, v in sorted(outbound.items()))
    container: Obj = {
        "name": CONTAINER,
        "image": image,
        "imagePullPolicy": pull_policy(image),
        "args": args,
        "env": env,
        "volumeMounts": [{"name": "cache", "mountPath": dest}, {"name": "tmp", "mountPath": "/tmp"}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    if command:
        container["command"] = command
    return container
