"""Importing a volume the user already filled: a model cache whose ``sourceUri`` is
``pvc://CLAIM/PATH`` (this operator's extension; LLMKube's ``Model`` spells a volume source the
same way). Nothing is downloaded and no volume is made: a Job mounts the claim read-only and checks
the directory in place (``aim-model-inspect --dir``: the files an earlier download's manifest lists,
with their sizes and sha256, or model weights at least), and the cache is Ready on its verdict.
The claim is never written, resized or deleted: the cache does not own it, so deleting the cache
leaves it, and a storage quota counts it but never evicts it. Pure: names, parsing, the Job."""

from __future__ import annotations

from dataclasses import dataclass

from aim_cache import plan
from aim_cache.llmkube.verify import MOUNT, claim_volume, inspect_container
from aimcore.api.sourcerules import PVC_SCHEME, pvc_parts
from aimcore.api.types import Obj
from aimcore.domain.families.caches import ModelCache
from aimcore.domain.naming import derived_name
from aimcore.runtime import owner_reference

COMPONENT = "import"
CLAIM_NOT_FOUND = "ClaimNotFound"
CLAIM_IN_OTHER_NAMESPACE = "ClaimInOtherNamespace"
CLAIM_NOT_BOUND = "ClaimNotBound"
CLAIM_BOUND = "ClaimBound"
IMPORTED = "Imported"


@dataclass(frozen=True)
class Claim:
    """Where an imported model is: the claim (of the cache's namespace) and the directory in it
    (``""``: the claim's root)."""

    name: str
    path: str

    @property
    def inside(self) -> str:
        """The directory as the verify Job sees it."""
        return f"{MOUNT}/{self.path}" if self.path else MOUNT


def imports(source_uri: str) -> bool:
    return source_uri.startswith(PVC_SCHEME)


def parse(source_uri: str) -> Claim:
    """``pvc://CLAIM[/PATH]`` (checked by the spec's rules: :func:`aimcore.api.sourcerules.pvc_error`)."""
    return Claim(*pvc_parts(source_uri))


def job_name(cache: ModelCache, attempt: int) -> str:
    return derived_name([cache.name, "import", str(attempt)], [str(cache.uid), plan.spec_hash(cache)])


def job_body(cache: ModelCache, claim: Claim, *, attempt: int, image: str) -> Obj:
    """The Job that checks ``claim`` in place for ``cache`` (attempt ``attempt``), running
    ``image`` (the cache service's own: it carries ``aim-model-inspect``)."""
    labels = {**plan.cache_labels(cache), plan.LABEL_CACHE_TYPE: "artifact", plan.LABEL_COMPONENT: COMPONENT}
    container = inspect_container(image, ["--dir", claim.inside])
    container["name"] = plan.CONTAINER  # the name the Job's outcome is read from
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(cache, attempt),
            "namespace": cache.namespace,
            "labels": labels,
            "annotations": {
                plan.ANNOTATION_ATTEMPT: str(attempt),
                plan.ANNOTATION_SPEC_HASH: plan.spec_hash(cache),
            },
            "ownerReferences": [owner_reference(cache.ref, cache.obj)],
        },
        "spec": {
            "backoffLimit": 0,  # retries are the operator's, with back-off
            "activeDeadlineSeconds": plan.DOWNLOAD_DEADLINE,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": {"fsGroup": plan.RUN_AS, "runAsNonRoot": True},
                    "containers": [container],
                    "volumes": [claim_volume(claim.name)],
                },
            },
        },
    }


def capacity(pvc: Obj) -> str | None:
    """What the claim holds: its bound capacity, else its request."""
    status = (pvc.get("status") or {}).get("capacity") or {}
    requested = ((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}
    found = status.get("storage") or requested.get("storage")
    return str(found) if found is not None else None
