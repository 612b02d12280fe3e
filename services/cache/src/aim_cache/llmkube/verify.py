"""The verify Jobs of ``pvc://`` Models, as pure functions: names, bodies, and reading them back.

A ``pvc://`` Model is never copied (the workload mounts the claim), yet its ``status.sha256`` must
be computed and ``spec.sha256`` enforced like any other source's. Only a pod that mounts the claim
can read it, so the controller runs a Job per *round*: the claim mounted read-only at
``/model-source``, running ``aim-model-inspect`` (:mod:`aim_cache_jobs.inspect`) on the file,
which prints its size, mtime, sha256 and GGUF header as one JSON line. Rounds repeat on the
revalidation cadence, passing the previous result (``--known``) so an unchanged file is not read
again, and a changed one is re-hashed (``SourceDrifted``).

Each Job records in annotations what it was made for: the spec digest and the claim's uid (a new
spec or a re-created claim starts over), the round, the attempt (for back-off after failures) and
the previous result it was given. The newest Job and the newest successful one are kept; the Job
controller's record of them is the controller's memory, so a restart loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aim_cache_jobs.contract import INSPECT_COMMAND, KNOWN_OPTION, SHA256, Known
from aimcore.api.imageref import pull_policy
from aimcore.api.kinds import PART_OF_LABEL, PART_OF_VALUE, KindRef
from aimcore.api.types import Obj
from aimcore.domain.naming import derived_name, label_value
from aimcore.runtime import owned_by, owner_reference

CONTAINER = "verify"
COMMAND = INSPECT_COMMAND
MOUNT = "/model-source"
RUN_AS = 1000
LABEL_COMPONENT = "aim.eai.amd.com/component"
LABEL_MODEL = "inference.llmkube.dev/model"
COMPONENT = "llmkube-verify"
ANNOTATION_SPEC = "aim.eai.amd.com/verify-spec-hash"
ANNOTATION_CLAIM_UID = "aim.eai.amd.com/verify-claim-uid"
ANNOTATION_ROUND = "aim.eai.amd.com/verify-round"
ANNOTATION_ATTEMPT = "aim.eai.amd.com/verify-attempt"
ANNOTATION_KNOWN = "aim.eai.amd.com/verify-known"


@dataclass(frozen=True)
class Verdict:
    """What ``aim-model-inspect`` found: the file as the workload will read it."""

    size: int
    mtime: float
    sha256: str
    gguf: dict[str, Any] | None
    hashed: bool

    @property
    def known(self) -> Known:
        return Known(self.size, self.mtime, self.sha256)


@dataclass(frozen=True)
class Refusal:
    """Why ``aim-model-inspect`` could not describe the file (it exits 1)."""

    reason: str
    message: str


def job_name(model: str, uid: str, round_: int, spec_digest: str, claim_uid: str) -> str:
    """Distinct per round, spec and claim: a new spec's first round never meets the old one's Job
    while that is still being deleted."""
    return derived_name([model, "verify", str(round_)], [uid, round_, spec_digest, claim_uid])


def job_body(
    ref: KindRef,
    model: Mapping[str, Any],
    *,
    claim: str,
    claim_uid: str,
    path: str,
    spec_digest: str,
    round_: int,
    attempt: int,
    known: Known | None,
    image: str,
) -> Obj:
    """The Job of one verification round of ``model``'s ``pvc://claim/path``."""
    meta = model["metadata"]
    labels = {
        PART_OF_LABEL: PART_OF_VALUE,
        "app.kubernetes.io/managed-by": "aim-cache",
        LABEL_COMPONENT: COMPONENT,
        LABEL_MODEL: label_value(str(meta["name"])),
    }
    args = [f"{MOUNT}/{path}"]
    if known is not None:
        args.append(f"{KNOWN_OPTION}={known.render()}")
    annotations = {
        ANNOTATION_SPEC: spec_digest,
        ANNOTATION_CLAIM_UID: claim_uid,
        ANNOTATION_ROUND: str(round_),
        ANNOTATION_ATTEMPT: str(attempt),
    }
    if known is not None:
        annotations[ANNOTATION_KNOWN] = known.render()
    container = inspect_container(image, args)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(str(meta["name"]), str(meta["uid"]), round_, spec_digest, claim_uid),
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(ref, model)],
        },
        "spec": {
            "backoffLimit": 0,  # retries are the controller's, with back-off
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": {"runAsNonRoot": True},
                    "containers": [container],
                    "volumes": [claim_volume(claim)],
                },
            },
        },
    }


def inspect_container(image: str, args: list[str]) -> Obj:
    """``aim-model-inspect`` with ``args``, hardened, the claim mounted read-only at :data:`MOUNT`
    (:func:`claim_volume`): what every Job that reads a user's claim in place runs (these, and
    the import of a ``pvc://`` model cache, :mod:`aim_cache.imports`)."""
    return {
        "name": CONTAINER,
        "image": image,
        "imagePullPolicy": pull_policy(image),
        "command": [COMMAND],
        "args": args,
        "volumeMounts": [{"name": "model-source", "mountPath": MOUNT, "readOnly": True}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
    }


def claim_volume(claim: str) -> Obj:
    """The user's claim as the pod's volume, read-only."""
    return {"name": "model-source", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}


def annotation(job: Mapping[str, Any], key: str) -> str | None:
    value = ((job.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None


def _int(job: Mapping[str, Any], key: str) -> int:
    try:
        return max(1, int(annotation(job, key) or 1))
    except ValueError:
        return 1


def round_of(job: Mapping[str, Any]) -> int:
    return _int(job, ANNOTATION_ROUND)


def attempt_of(job: Mapping[str, Any]) -> int:
    return _int(job, ANNOTATION_ATTEMPT)


def known_of(job: Mapping[str, Any]) -> Known | None:
    """The previous result a round was given (None for a first round, or an unreadable value)."""
    text = annotation(job, ANNOTATION_KNOWN)
    if not text:
        return None
    try:
        return Known.parse(text)
    except ValueError:
        return None


def verify_jobs(jobs: Iterable[Obj], model_uid: str) -> list[Obj]:
    """The verify Jobs ``model_uid`` owns."""
    return [
        j
        for j in jobs
        if owned_by(j, model_uid)
        and ((j.get("metadata") or {}).get("labels") or {}).get(LABEL_COMPONENT) == COMPONENT
    ]


def split(jobs: Sequence[Obj], spec_digest: str, claim_uid: str) -> tuple[list[Obj], list[Obj]]:
    """``(current, stale)``: the rounds made for this spec and this claim, oldest first, and the
    others (a changed spec or a re-created claim), which are deleted."""
    current: list[Obj] = []
    stale: list[Obj] = []
    for job in jobs:
        fresh = (
            annotation(job, ANNOTATION_SPEC) == spec_digest
            and annotation(job, ANNOTATION_CLAIM_UID) == claim_uid
        )
        (current if fresh else stale).append(job)
    current.sort(key=round_of)
    return current, stale


def read_verdict(parsed: Mapping[str, Any] | None) -> Verdict | Refusal | None:
    """The verdict in the last JSON line of a verify pod's log; None if there is none or it is
    malformed (a log is untrusted input: every field is type-checked)."""
    if not parsed:
        return None
    result = parsed.get("result")
    if result == "error":
        reason, message = parsed.get("reason"), parsed.get("message")
        if isinstance(reason, str) and reason.isidentifier() and isinstance(message, str):
            return Refusal(reason, message[:500])
        return None
    if result != "ok":
        return None
    size, mtime, sha, header, hashed = (parsed.get(k) for k in ("size", "mtime", "sha256", "gguf", "hashed"))
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return None
    if not isinstance(mtime, (int, float)) or isinstance(mtime, bool):
        return None
    if not isinstance(sha, str) or not SHA256.fullmatch(sha):
        return None
    if (header is not None and not isinstance(header, dict)) or not isinstance(hashed, bool):
        return None
    return Verdict(size, float(mtime), sha, header, hashed)
