"""Resolve a container ``env`` list the way the kubelet would, for work the operator does itself
(sizing a model source, the local download executor): literal values as they are, ``valueFrom``
secret and config-map keys read through the API. A missing Secret or key is a clear error naming
the reference, never the value; optional references that are missing are skipped, as the kubelet
does."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

from aimcore.api.errors import AimError
from aimcore.api.kinds import SECRET, KindRef
from aimcore.runtime import Kube

CONFIG_MAP = KindRef("", "v1", "ConfigMap", "configmaps", True)
SECRET_NOT_FOUND = "SecretNotFound"


class EnvReferenceMissing(AimError):
    """A ``valueFrom`` reference that cannot be resolved (reason ``SecretNotFound``): a user must
    create it (Secrets are not watched: the cache looks again after a while)."""

    reason = SECRET_NOT_FOUND
    transient = False


def _key_ref(value_from: Mapping[str, Any]) -> tuple[KindRef, Mapping[str, Any]] | None:
    for field, kind in (("secretKeyRef", SECRET), ("configMapKeyRef", CONFIG_MAP)):
        ref = value_from.get(field)
        if isinstance(ref, Mapping):
            return kind, ref
    return None


def _decode(kind: KindRef, obj: Mapping[str, Any], key: str) -> str | None:
    if kind is SECRET:
        raw = (obj.get("data") or {}).get(key)
        if raw is None:
            plain = (obj.get("stringData") or {}).get(key)
            return None if plain is None else str(plain)
        try:
            return base64.b64decode(str(raw)).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
    value = (obj.get("data") or {}).get(key)
    return None if value is None else str(value)


async def resolve_env(kube: Kube, namespace: str, env: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    """The environment ``env`` defines in ``namespace``; later entries win, as in a container."""
    resolved: dict[str, str] = {}
    fetched: dict[tuple[str, str], Mapping[str, Any] | None] = {}
    for entry in env or []:
        name = str(entry.get("name") or "")
        if not name:
            continue
        if "value" in entry or not entry.get("valueFrom"):
            resolved[name] = str(entry.get("value") or "")
            continue
        found = _key_ref(entry.get("valueFrom") or {})
        if found is None:
            continue  # fieldRef/resourceFieldRef: meaningless outside a pod
        kind, ref = found
        obj_name, key = str(ref.get("name") or ""), str(ref.get("key") or "")
        cache_key = (kind.kind, obj_name)
        if cache_key not in fetched:
            fetched[cache_key] = await kube.get(kind, namespace, obj_name) if obj_name else None
        obj = fetched[cache_key]
        value = _decode(kind, obj, key) if obj is not None else None
        if value is None:
            if ref.get("optional"):
                continue
            what = f"{kind.kind} {obj_name!r}" if obj is None else f"key {key!r} in {kind.kind} {obj_name!r}"
            raise EnvReferenceMissing(f"env {name}: {what} not found in namespace {namespace}")
        resolved[name] = value
    return resolved
