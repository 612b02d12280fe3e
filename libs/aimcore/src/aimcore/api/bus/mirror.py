"""What the object mirror (KV ``aim-objects``) holds for an object, shared by its one writer (the
watcher) and its readers (every service's informer, the status service).

- **Trimmed objects.** ``metadata.managedFields`` and kubectl's ``last-applied-configuration``
  annotation are left out: nothing in the operator reads them, and the latter repeats the whole
  object (half the size of an object applied with ``kubectl apply``).
- **Objects too large for the bus.** A mirror entry is one NATS message, and a server refuses
  messages over its ``max_payload`` (8 MiB as the operator ships NATS, 1 MiB in a stock server). An
  object still larger than that after trimming is written as a *placeholder*: its identity
  (name, namespace, uid, resourceVersion, generation, owners, finalizers, deletion, the pause
  annotation) and a :data:`TOO_LARGE` record of its size and the limit. Readers thus never wait for
  a version that cannot arrive, the object's own controller reports ``ObjectTooLarge``
  (:mod:`aimcore.runtime.engine`), and no object ever holds back another.
- **Identity in headers.** Each entry carries the object's uid, resourceVersion and generation as
  message headers (:func:`identity_headers`), so a reader that needs only those (a new watcher
  leader seeding what it knows: 100,000 objects at 50,000 AIMServices) reads the bucket's headers
  alone and parses no object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from aimcore.api.types import Obj

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
PAUSE_ANNOTATION = "aim.eai.amd.com/reconciliation-paused"
TOO_LARGE = "aimTooLarge"
OBJECT_TOO_LARGE = "ObjectTooLarge"
HEADROOM = 4096
"""Bytes of a message kept for its subject and headers (a KV update carries a few)."""

_IDENTITY = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "ownerReferences",
    "finalizers",
)


UID_HEADER = "Aim-Uid"
VERSION_HEADER = "Aim-Resource-Version"
GENERATION_HEADER = "Aim-Generation"


@dataclass(frozen=True)
class Identity:
    """What an entry's headers say of its object."""

    uid: str
    resource_version: str
    generation: int | None


def identity_headers(obj: Obj) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    headers = {UID_HEADER: str(meta.get("uid", "")), VERSION_HEADER: str(meta.get("resourceVersion", ""))}
    if isinstance(meta.get("generation"), int):
        headers[GENERATION_HEADER] = str(meta["generation"])
    return headers


def identity(headers: dict[str, str] | None) -> Identity | None:
    """The identity an entry's headers carry; ``None`` for an entry written without them."""
    if not headers or VERSION_HEADER not in headers:
        return None
    generation = headers.get(GENERATION_HEADER, "")
    return Identity(
        headers.get(UID_HEADER, ""),
        headers[VERSION_HEADER],
        int(generation) if generation.isdigit() else None,
    )


@dataclass(frozen=True)
class TooLarge:
    size: int
    limit: int

    @property
    def message(self) -> str:
        return (
            f"The object is {_kib(self.size)} without managedFields and kubectl's last-applied "
            f"annotation; the operator's bus carries objects up to {_kib(self.limit)} "
            "(NATS max_payload). Make the object smaller, or raise the server's max_payload."
        )


def _kib(n: int) -> str:
    return f"{n / 1024:,.0f} KiB"


def trim(obj: Obj) -> Obj:
    """``obj`` without what no reader needs (a shallow copy where something is dropped)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    annotations = meta.get("annotations")
    drop_annotation = isinstance(annotations, dict) and LAST_APPLIED in annotations
    if "managedFields" not in meta and not drop_annotation:
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    if drop_annotation:
        assert isinstance(annotations, dict)
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": meta}


def encode(obj: Obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def placeholder(obj: Obj, size: int, limit: int) -> Obj:
    """The entry that stands for an object too large to mirror."""
    meta = obj.get("metadata") or {}
    kept: Obj = {k: meta[k] for k in _IDENTITY if k in meta}
    annotations = meta.get("annotations") or {}
    if PAUSE_ANNOTATION in annotations:
        kept["annotations"] = {PAUSE_ANNOTATION: annotations[PAUSE_ANNOTATION]}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": kept,
        TOO_LARGE: {"bytes": size, "limit": limit},
    }


def entry(obj: Obj, limit: int) -> tuple[bytes, TooLarge | None]:
    """The mirror entry for ``obj`` under a message limit of ``limit`` bytes."""
    value = encode(trim(obj))
    room = limit - HEADROOM
    if len(value) <= room:
        return value, None
    return encode(placeholder(obj, len(value), room)), TooLarge(len(value), room)


def too_large(obj: Obj) -> TooLarge | None:
    """The size record of a placeholder entry, ``None`` for a real object."""
    record = obj.get(TOO_LARGE)
    if not isinstance(record, dict):
        return None
    return TooLarge(int(record.get("bytes", 0)), int(record.get("limit", 0)))
